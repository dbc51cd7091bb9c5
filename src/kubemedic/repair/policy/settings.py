"""What the repair policy is told: thresholds, the ladder's timeouts, brakes and ledger limits.

Every field has the default an operator gets without a configuration file (``kubemedic config
show-defaults`` prints them, docs/repair.md explains each). The file's ``repair:`` section is read
and validated by :mod:`kubemedic.repair.settings`; these classes only hold the values.

Durations are :class:`datetime.timedelta`; ``max_unhealthy`` is a :class:`Budget` (a count or a
percentage of the pool, with a floor).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from kubemedic.checks.settings import number
from kubemedic.model.selectors import LabelSelector

__all__ = [
    "Budget",
    "ConditionRule",
    "CorrelationSettings",
    "DrainSettings",
    "ExecSettings",
    "FlapSettings",
    "LadderSettings",
    "LedgerSettings",
    "OpenStackSettings",
    "PoolSettings",
    "RepairSettings",
]

PROVIDERS = ("openstack", "clusterapi", "exec", "agent")
"""The providers kubemedic ships (others register through the ``kubemedic.repair.providers``
entry point group)."""


@dataclass(frozen=True, slots=True)
class ConditionRule:
    """A node is unhealthy when condition ``type`` has had one of ``statuses`` for ``after``."""

    type: str
    statuses: tuple[str, ...]
    after: timedelta

    def matches(self, status: str) -> bool:
        return status in self.statuses


DEFAULT_CONDITIONS = (
    ConditionRule("Ready", ("False", "Unknown"), timedelta(minutes=10)),
    # node-problem-detector's permanent problems, and the node agent's own reports.
    ConditionRule("KernelDeadlock", ("True",), timedelta(minutes=5)),
    ConditionRule("ReadonlyFilesystem", ("True",), timedelta(minutes=5)),
    ConditionRule("KubeletUnhealthy", ("True",), timedelta(minutes=10)),
    ConditionRule("ContainerRuntimeUnhealthy", ("True",), timedelta(minutes=10)),
)


@dataclass(frozen=True, slots=True)
class Budget:
    """At most ``count`` nodes, or ``percent`` of the pool, whichever is larger (either may be
    absent). ``Budget(percent=40, count=2)``: 2 of a 3-node pool, 4 of a 10-node pool."""

    count: int | None = None
    percent: float | None = None

    def allowed(self, pool_size: int) -> int:
        by_percent = int(pool_size * self.percent / 100) if self.percent is not None else 0
        return max(self.count or 0, by_percent)


@dataclass(frozen=True, slots=True)
class DrainSettings:
    """Draining before a reboot: evictions through the Eviction API, PodDisruptionBudgets
    honoured. After ``timeout`` the pods still there are named in an Event; those matching
    ``delete_after_timeout`` (label selectors, or the classes ``daemonset``, ``standalone``,
    ``best-effort``) are deleted instead of evicted, and the drain waits for the rest."""

    timeout: timedelta = timedelta(minutes=10)
    delete_after_timeout: tuple[str, ...] = ()
    #: How long an Event naming the blocking pods is repeated (and the ledger row refreshed).
    report_every: timedelta = timedelta(minutes=5)


@dataclass(frozen=True, slots=True)
class LadderSettings:
    """Each step's timeout; verification failing within it escalates to the next step."""

    #: Step 1: the node agent restarts the kubelet or the container runtime; Ready must come
    #: back (and hold for ``stable``) within this.
    restart_timeout: timedelta = timedelta(minutes=5)
    #: Step 2: from the reboot request to a new bootID with Ready held for ``stable``.
    reboot_timeout: timedelta = timedelta(minutes=15)
    #: Step 3: from deleting the Machine to its replacement's node being Ready.
    replace_timeout: timedelta = timedelta(minutes=30)
    #: How long Ready=True must hold before a step counts as a cure.
    stable: timedelta = timedelta(minutes=5)
    #: Steps the ladder may use, in order; removing one skips it.
    steps: tuple[str, ...] = ("restart", "reboot", "replace")


@dataclass(frozen=True, slots=True)
class LedgerSettings:
    """More than ``max_repairs`` repairs of one node within ``window`` quarantines it."""

    max_repairs: int = number(3, low=1)
    window: timedelta = timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class FlapSettings:
    """``transitions`` or more Ready -> NotReady transitions within ``window`` quarantine a
    node (it fails again faster than a repair could prove anything)."""

    transitions: int = number(3, low=2)
    window: timedelta = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class CorrelationSettings:
    """Many nodes going NotReady together is a control-plane or network fault, not a node
    fault: at least ``nodes`` nodes of the cluster, or at least ``zone_percent`` of one zone
    (and at least ``zone_min_nodes`` nodes), within ``window``. Their repairs are held."""

    window: timedelta = timedelta(minutes=2)
    nodes: int = number(5, low=2)
    zone_percent: float = number(30.0, low=0, above=True, high=100)
    zone_min_nodes: int = number(3, low=2)


@dataclass(frozen=True, slots=True)
class PoolSettings:
    """A pool: the nodes ``selector`` matches (the first pool that matches wins), with its own
    brakes and, when given, its own conditions and startup timeout."""

    name: str
    selector: LabelSelector
    max_in_flight: int | None = number(None, low=1)
    max_unhealthy: Budget | None = None
    conditions: tuple[ConditionRule, ...] | None = None
    startup_timeout: timedelta | None = None


@dataclass(frozen=True, slots=True)
class OpenStackSettings:
    """The ``openstack`` provider: a cloud of ``clouds.yaml`` (found where openstacksdk looks:
    ``OS_CLIENT_CONFIG_FILE``, ``./clouds.yaml``, ``~/.config/openstack/``, ``/etc/openstack/``,
    or ``cloudsFile`` when given)."""

    cloud: str = ""
    clouds_file: str = ""


@dataclass(frozen=True, slots=True)
class ExecSettings:
    """The ``exec`` provider: a command run with ``--node``, ``--provider-id`` and ``--action``
    as separate arguments (never through a shell); exit 0 means done."""

    command: tuple[str, ...] = ()
    timeout: timedelta = timedelta(minutes=2)


@dataclass(frozen=True, slots=True)
class RepairSettings:
    """The ``repair:`` section of the configuration file."""

    #: Decide, record and report, but change nothing in the cluster or the cloud.
    dry_run: bool = True
    provider: str = "agent"
    openstack: OpenStackSettings = field(default_factory=OpenStackSettings)
    exec: ExecSettings = field(default_factory=ExecSettings)
    #: Repairs at once per pool.
    max_in_flight: int = number(1, low=1)
    #: No repair starts in a pool while more of it than this is unhealthy.
    max_unhealthy: Budget = field(default_factory=lambda: Budget(count=2, percent=40.0))
    conditions: tuple[ConditionRule, ...] = DEFAULT_CONDITIONS
    #: A node that has never been Ready gets this long after its creation.
    startup_timeout: timedelta = timedelta(minutes=10)
    pools: tuple[PoolSettings, ...] = ()
    ladder: LadderSettings = field(default_factory=LadderSettings)
    drain: DrainSettings = field(default_factory=DrainSettings)
    ledger: LedgerSettings = field(default_factory=LedgerSettings)
    flapping: FlapSettings = field(default_factory=FlapSettings)
    correlation: CorrelationSettings = field(default_factory=CorrelationSettings)
    #: The node agent counts as reachable while its KubemedicAgentReady heartbeat is this fresh.
    agent_heartbeat: timedelta = timedelta(minutes=2)
    #: Stop every repair (new and in flight) until unpaused.
    paused: bool = False

    def pool_for(self, labels: dict[str, str]) -> PoolSettings | None:
        for pool in self.pools:
            if pool.selector.matches(labels):
                return pool
        return None
