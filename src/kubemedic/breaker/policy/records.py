"""What the breaker policy reads and writes. Every record is a frozen value; times are aware
UTC datetimes of the cluster's clock.

The caller builds :class:`PodObservation` values (``observing.observe`` does it from a
``ClusterView``), :class:`Prediction` values (``predicting.predict``) and, per owner, the drift
engine's :class:`~kubemedic.drift.engine.ObjectDrift` against Git; ``deciding.decide`` returns a
:class:`Plan` (its decisions and the next :class:`BreakerState`), which the caller keeps for the
next round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from kubemedic.breaker.policy.settings import BreakerAction
from kubemedic.model.objects import ObjectRef

__all__ = [
    "BreakerState",
    "Decision",
    "DecisionKind",
    "Plan",
    "PodObservation",
    "Prediction",
    "StormState",
    "owner_key",
]


def owner_key(owner: ObjectRef) -> str:
    """``<namespace>/<Kind>/<name>``: how the breaker names an owner in its state and keys."""
    return f"{owner.namespace or ''}/{owner.kind}/{owner.name}"


@dataclass(frozen=True, slots=True)
class PodObservation:
    """One pod as the breaker sees it. ``owner`` is its outermost controller (Pod -> ReplicaSet
    -> Deployment, a missing ReplicaSet's Deployment recovered); ``rejected`` says the kubelet
    refused it at admission (``phase: Failed`` with an ``OutOf<resource>`` or predicate reason)."""

    namespace: str
    name: str
    owner: ObjectRef
    phase: str
    reason: str
    created: datetime | None
    rejected: bool
    node: str = ""
    message: str = ""


@dataclass(frozen=True, slots=True)
class Prediction:
    """A pinned template ``nodeName`` whose node cannot hold the replicas (the
    ``pinned-node-name`` check's arithmetic): ``fits`` of ``replicas`` are admitted, the rest
    will be rejected with ``OutOf<limiting>`` (or every one, for an admission blocker)."""

    owner: ObjectRef
    node: str
    replicas: int
    fits: int
    limiting: str | None = None
    blockers: tuple[str, ...] = ()
    resource_version: str | None = None

    @property
    def excess(self) -> int:
        return max(self.replicas - self.fits, 0)


@dataclass(frozen=True, slots=True)
class StormState:
    """A storm in progress: since when, whether it was announced, since when it has been calm
    (at or below ``end_pods`` in the window; None while it rages)."""

    owner: ObjectRef
    started: datetime
    alerted: bool = False
    calm_since: datetime | None = None

    @property
    def key(self) -> str:
        return f"{owner_key(self.owner)}@{self.started.isoformat()}"


@dataclass(frozen=True, slots=True)
class BreakerState:
    """What the breaker remembers between rounds: storms in progress (by owner key), when each
    owner was last reverted (the loop guard), and the keys already announced (alert once)."""

    storms: Mapping[str, StormState] = field(default_factory=dict)
    reverted: Mapping[str, datetime] = field(default_factory=dict)
    announced: frozenset[str] = frozenset()


class DecisionKind(StrEnum):
    """What a decision is."""

    ACT = "act"  # the executor must do ``action``
    DRY_RUN = "dry-run"  # what ``act`` would have been; nothing is changed
    ALERT = "alert"  # one Event (and notification) for a person; never changes the cluster
    HOLD = "hold"  # a guard stopped an action (loop guard, GitOps, nothing to fit)
    STORM_ENDED = "storm-ended"


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision with its reason. ``reason`` is the Event reason (``KubemedicBreaker...``),
    ``message`` the sentence a person reads; ``key`` is stable while the same decision repeats,
    so it is announced once.

    For ``act`` (and ``dry-run``): ``revert-out-of-band`` carries ``patch`` (RFC 6902, its first
    operation a ``test`` of ``/metadata/resourceVersion``; apply it as field manager
    ``kubemedic``); ``scale-to-fit`` carries ``replicas`` and ``resource_version``;
    ``prune-failed`` carries ``pods`` (names in the owner's namespace, oldest first)."""

    kind: DecisionKind
    owner: ObjectRef
    reason: str
    message: str
    key: str
    action: BreakerAction | None = None
    patch: tuple[Mapping[str, object], ...] = ()
    replicas: int | None = None
    resource_version: str | None = None
    pods: tuple[str, ...] = ()

    @property
    def dry_run(self) -> bool:
        return self.kind is DecisionKind.DRY_RUN


@dataclass(frozen=True, slots=True)
class Plan:
    """One round's decisions, in order, and the state for the next round."""

    decisions: tuple[Decision, ...]
    state: BreakerState

    def of(self, kind: DecisionKind) -> list[Decision]:
        return [decision for decision in self.decisions if decision.kind is kind]
