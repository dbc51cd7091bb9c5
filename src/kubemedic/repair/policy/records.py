"""What the policy reads and writes: observed nodes, repairs in flight, the ledger, decisions.

Everything here is a frozen value. The controller builds a :class:`ClusterState` from the API
(and the archive), the policy returns a :class:`Plan`, the executor carries out the plan's
``act`` decisions and hands each :class:`Outcome` back to the policy, which folds it into the
:class:`Repair` it belongs to. A :class:`Repair` is stored in the archive while it is in flight,
so another replica (or a restarted one) resumes it where it stood.

Times are aware UTC datetimes of the cluster's clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

__all__ = [
    "Action",
    "Brake",
    "ClusterState",
    "Condition",
    "Decision",
    "Hold",
    "Kind",
    "LedgerEntry",
    "MachineRef",
    "NodeObservation",
    "NodeState",
    "Outcome",
    "Plan",
    "Power",
    "Repair",
    "Step",
    "StepRecord",
]


class Step(StrEnum):
    """The rungs of the ladder, in order."""

    RESTART = "restart"
    REBOOT = "reboot"
    REPLACE = "replace"
    QUARANTINE = "quarantine"


class Action(StrEnum):
    """What the executor can be asked to do (each an Event reason ``KubemedicRepair<Action>``)."""

    RESTART_KUBELET = "restart-kubelet"  # through the node agent
    RESTART_RUNTIME = "restart-runtime"  # through the node agent
    CORDON = "cordon"
    DRAIN = "drain"
    REBOOT = "reboot"  # through the provider
    POWER_ON = "power-on"  # through the provider, for a machine found powered off
    FENCE = "fence"  # the out-of-service taint, once the machine is known to be off
    UNFENCE = "unfence"
    UNCORDON = "uncordon"
    REPLACE = "replace"  # delete the Cluster API Machine
    QUARANTINE = "quarantine"  # cordon, label, annotate
    ALERT = "alert"  # tell a person (one Event, one notification)


class Kind(StrEnum):
    """What a decision is."""

    START = "start"  # a repair begins (with its trigger)
    ACT = "act"  # the executor must do ``action``
    WAIT = "wait"  # a step is under way; nothing to do yet
    ESCALATE = "escalate"  # a step's verification failed: the next rung
    FINISH = "finish"  # a repair ended (``outcome``)
    HOLD = "hold"  # a brake stopped a repair from starting or going on
    SKIP = "skip"  # the node is not repaired, on purpose (annotation, quarantine, pause)


class Brake(StrEnum):
    """What holds a repair back: a ``hold`` decision's (and a held node's) ``brake``."""

    CORRELATED = "correlated"  # a correlated failure: a zone, the network, the control plane
    MAX_UNHEALTHY = "max-unhealthy"  # the pool's unhealthy budget
    MAX_IN_FLIGHT = "max-in-flight"  # the pool's repair slots
    PAUSED = "paused"  # repair.paused
    QUARANTINED = "quarantined"  # the node's label, until released
    DO_NOT_REPAIR = "do-not-repair"  # the node's annotation


@dataclass(frozen=True, slots=True)
class Hold:
    """What holds a repair back, and the sentence that says why."""

    brake: Brake
    why: str


class Power(StrEnum):
    """A machine's power as its provider reports it."""

    ON = "on"
    OFF = "off"
    REBOOTING = "rebooting"
    ABSENT = "absent"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class Condition:
    """One node condition: its status since ``since`` (lastTransitionTime)."""

    type: str
    status: str
    since: datetime | None = None
    heartbeat: datetime | None = None
    reason: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class MachineRef:
    """The Cluster API Machine behind a node, and whether deleting it is a replacement: an owner
    (a MachineSet) will create another, and the node group stays at or above its autoscaler
    minimum while it does."""

    namespace: str
    name: str
    owner: str = ""  # "MachineSet/workers-abc12", "" when nothing will recreate it
    group: str = ""  # the MachineDeployment or MachineSet the autoscaler scales
    group_min: int | None = None  # cluster-api-autoscaler-node-group-min-size
    group_ready: int = 0  # Ready nodes of the group now


@dataclass(frozen=True, slots=True)
class NodeObservation:
    """A node as the policy sees it."""

    name: str
    created: datetime | None
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    taints: tuple[tuple[str, str, str], ...] = ()  # (key, value, effect)
    provider_id: str = ""
    boot_id: str = ""
    conditions: Mapping[str, Condition] = field(default_factory=dict)
    #: The node's Lease in kube-node-lease: its renewTime (the kubelet's heartbeat).
    lease_renewed: datetime | None = None
    zone: str = ""
    pool: str = ""
    machine: MachineRef | None = None
    #: The provider's answer, asked only for nodes whose repair needs it.
    power: Power | None = None
    uid: str = ""

    def condition(self, type_: str) -> Condition | None:
        return self.conditions.get(type_)


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One action of a repair, as the ledger keeps it."""

    action: str
    started: datetime
    finished: datetime | None = None
    outcome: str = ""  # "done", "failed", "timeout", "blocked", "dry-run"
    detail: str = ""


@dataclass(frozen=True, slots=True)
class Repair:
    """A repair in flight (stored in the archive until it finishes)."""

    id: str
    node: str
    pool: str
    trigger: str
    started: datetime
    step: Step
    phase: str
    phase_started: datetime
    step_started: datetime
    #: What the node was doing wrong: "kubelet", "runtime", "node" (anything else), "startup".
    cause: str = "node"
    #: The bootID when the reboot was asked for: a different one proves it happened.
    boot_id: str = ""
    #: The id of the node agent request in flight.
    request: str = ""
    fenced: bool = False
    cordoned: bool = False  # by this repair (so it uncordons only what it cordoned)
    machine: str = ""
    #: The Machine's owner when it was deleted: its replacement has the same owner.
    owner: str = ""
    ready_since: datetime | None = None
    detail: str = ""
    dry_run: bool = False
    steps: tuple[StepRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """A finished repair."""

    id: str
    node: str
    trigger: str
    started: datetime
    finished: datetime
    outcome: str  # "repaired", "replaced", "quarantined", "recovered", "abandoned", "dry-run"
    steps: tuple[StepRecord, ...] = ()
    dry_run: bool = False


@dataclass(frozen=True, slots=True)
class ClusterState:
    """Everything one round of the policy looks at."""

    now: datetime
    nodes: tuple[NodeObservation, ...]
    repairs: Mapping[str, Repair] = field(default_factory=dict)
    #: Finished repairs per node (the ledger), oldest first.
    ledger: Mapping[str, tuple[LedgerEntry, ...]] = field(default_factory=dict)
    #: When each node's Ready went from True to False or Unknown, oldest first.
    not_ready_at: Mapping[str, tuple[datetime, ...]] = field(default_factory=dict)
    #: Keys of the alerts already sent (a correlated failure is announced once).
    alerted: frozenset[str] = frozenset()
    #: Nodes once part of a correlated failure, with its description: held until Ready again,
    #: even when the rest of the group has recovered and it is no longer that large.
    correlated: Mapping[str, str] = field(default_factory=dict)
    #: What the provider can do (``Provider.actions``) and whether it can tell power states.
    abilities: frozenset[Action] = frozenset({Action.REBOOT, Action.POWER_ON})
    power_known: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision with its reason. ``reason`` is the Event reason (``KubemedicRepair...``),
    ``message`` the sentence a person reads; ``key`` is stable while the same decision repeats,
    so it is announced once."""

    kind: Kind
    node: str | None
    reason: str
    message: str
    action: Action | None = None
    repair: str = ""  # the Repair's id
    key: str = ""
    #: For ``act``: what the executor needs beyond the node (pods to delete, the request id).
    args: Mapping[str, str] = field(default_factory=dict)
    outcome: str = ""  # for ``finish``
    dry_run: bool = False
    #: For ``hold``: the brake that holds it (None for a hold no brake makes: a blocked drain).
    brake: Brake | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the executor reports back for one ``act`` decision."""

    action: Action
    ok: bool
    detail: str = ""
    #: Action-specific facts: ``blocking`` (pods a drain could not evict), ``boot_id``...
    data: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NodeState:
    """One node as ``kubemedic nodes`` shows it: ``state`` is ``healthy``, ``unhealthy``,
    ``repairing``, ``held`` or ``quarantined``; ``step`` the ladder's rung ("" when none);
    ``brake`` what holds a ``held`` node (its hold decision's)."""

    name: str
    state: str
    step: str = ""
    reason: str = ""
    brake: Brake | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    """The policy's answer: decisions, the repairs in flight after them, the repairs that
    finished, and when to look again at the latest (a threshold about to be crossed)."""

    decisions: tuple[Decision, ...]
    repairs: Mapping[str, Repair]
    finished: tuple[LedgerEntry, ...] = ()
    wake_at: datetime | None = None
    alerted: frozenset[str] = frozenset()
    states: tuple[NodeState, ...] = ()
    correlated: Mapping[str, str] = field(default_factory=dict)
