"""What holds repairs back: correlated failures, unhealthy budgets, repairs in flight, flapping.

**Correlated failure.** Nodes do not fail together by chance: many nodes, or a large part of one
zone, going NotReady within a short window is a control-plane, network or zone fault, and
rebooting the nodes cures nothing (it loses their pods' state and adds load when the fault ends).
Such a group is found with a sliding window over the times the nodes' Ready stopped being True:
at least ``correlation.nodes`` nodes of the cluster, or at least ``correlation.zone_percent`` of a
zone and ``correlation.zone_min_nodes`` nodes, within ``correlation.window``. Repairs of those
nodes are held (with one alert per group) while the group is still that large; a cluster-wide
group holds every repair.

**Unhealthy budget.** No repair starts in a pool while more of it than ``max_unhealthy`` (a count
or a percentage, the larger) is unhealthy: Cluster API's ``maxUnhealthy`` and Karpenter's 20 %
rule, with a floor so a three-node pool can still repair one node.

**In flight.** At most ``max_in_flight`` repairs at once per pool.

**Flapping.** ``flapping.transitions`` or more Ready -> NotReady transitions within
``flapping.window`` (counted after the node's last release) means the node fails again faster
than a repair can prove anything: it is quarantined rather than repaired, and never repaired
automatically again until a person releases it (the rule that answers "what about nodes that
never recover or keep flapping"). A transition during a step of kubemedic's own that takes the
node down (a reboot, a power-on, a daemon restart, from its request until its verification) is
the repair's doing, not the node's, and does not count.

**Ledger.** A node repaired ``ledger.max_repairs`` times within ``ledger.window`` (after its last
release) that needs another repair is quarantined too.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from kubemedic.repair.policy import health
from kubemedic.repair.policy.records import LedgerEntry, NodeObservation
from kubemedic.repair.policy.settings import CorrelationSettings, RepairSettings

__all__ = [
    "Group",
    "Transitions",
    "correlated",
    "flapping",
    "ledger_full",
    "max_in_flight",
    "unhealthy_budget",
]

#: Steps that take the node down themselves: a NotReady while one runs is not a flap.
DISRUPTIVE = frozenset({"reboot", "power-on", "restart-kubelet", "restart-runtime"})

#: Outcomes that count as a repair in the ledger (a dry run or a release does not).
COUNTED = frozenset({"repaired", "replaced", "abandoned", "quarantined"})


@dataclass(frozen=True, slots=True)
class Group:
    """Nodes that went NotReady together; ``zone`` is "" for a cluster-wide group."""

    key: str
    zone: str
    nodes: frozenset[str]
    first: datetime
    last: datetime
    zone_size: int

    def short(self) -> str:
        """Stable while the group lasts (its size may change): for the holds' messages."""
        where = f" in zone {self.zone}" if self.zone else " across the cluster"
        return f"correlated failure{where} since {self.first:%Y-%m-%dT%H:%M:%SZ}"

    def describe(self) -> str:
        where = f"{len(self.nodes)} of the {self.zone_size} nodes of zone {self.zone}"
        if not self.zone:
            where = f"{len(self.nodes)} nodes"
        span = int((self.last - self.first).total_seconds())
        return (
            f"{where} went NotReady within {span}s ({', '.join(sorted(self.nodes)[:8])}"
            f"{', ...' if len(self.nodes) > 8 else ''}): a control-plane, network or zone "
            "fault, not a node fault"
        )


def correlated(
    nodes: Sequence[NodeObservation],
    not_ready: Mapping[str, datetime],
    settings: CorrelationSettings,
) -> list[Group]:
    """The correlated groups among the nodes NotReady now (``not_ready``: since when): every
    window holding enough of them is a group (windows that share a node are one group), so a
    second burst in the same zone, or one overlapping a larger one, is held too; a zone's group
    inside a cluster-wide one is not a group of its own."""
    groups: list[Group] = []
    everyone = _bursts(not_ready, settings, need=settings.nodes)
    for names, first, last in everyone:
        groups.append(Group(f"correlated:*:{first:%Y%m%dT%H%M%S}", "", names, first, last, 0))
    zones: dict[str, list[str]] = {}
    for node in nodes:
        if node.zone:
            zones.setdefault(node.zone, []).append(node.name)
    for zone, members in sorted(zones.items()):
        need = max(settings.zone_min_nodes, math.ceil(len(members) * settings.zone_percent / 100))
        found = _bursts({n: not_ready[n] for n in members if n in not_ready}, settings, need=need)
        for names, first, last in found:
            if any(names <= wide for wide, _, _ in everyone):
                continue  # the cluster-wide group holds (and names) them already
            key = f"correlated:{zone}:{first:%Y%m%dT%H%M%S}"
            groups.append(Group(key, zone, names, first, last, len(members)))
    return groups


def _bursts(
    since: Mapping[str, datetime], settings: CorrelationSettings, *, need: int
) -> list[tuple[frozenset[str], datetime, datetime]]:
    """The nodes of every window holding at least ``need`` of the times, windows that share a
    node merged into one burst, oldest first."""
    if need <= 0 or len(since) < need:
        return []
    ordered = sorted(since.items(), key=lambda item: (item[1], item[0]))
    runs: list[list[int]] = []  # [first index, last index] of each merged burst
    end = 0
    for start in range(len(ordered)):
        end = max(end, start)
        while end + 1 < len(ordered) and ordered[end + 1][1] - ordered[start][1] <= settings.window:
            end += 1
        if end - start + 1 < need:
            continue
        if runs and start <= runs[-1][1]:
            runs[-1][1] = end
        else:
            runs.append([start, end])
    bursts = []
    for first, last in runs:
        chosen = ordered[first : last + 1]
        bursts.append((frozenset(n for n, _ in chosen), chosen[0][1], chosen[-1][1]))
    return bursts


def unhealthy_budget(pool_size: int, settings: RepairSettings, pool: str) -> int:
    """How many unhealthy nodes a pool of ``pool_size`` may have and still start a repair."""
    configured = next((p for p in settings.pools if p.name == pool), None)
    budget = settings.max_unhealthy
    if configured is not None and configured.max_unhealthy is not None:
        budget = configured.max_unhealthy
    return budget.allowed(pool_size)


def max_in_flight(settings: RepairSettings, pool: str) -> int:
    configured = next((p for p in settings.pools if p.name == pool), None)
    if configured is not None and configured.max_in_flight is not None:
        return configured.max_in_flight
    return settings.max_in_flight


def _after_release(entries: Iterable[LedgerEntry]) -> datetime | None:
    released = [e.finished for e in entries if e.outcome == "released"]
    return max(released) if released else None


@dataclass
class Transitions:
    """The Ready -> NotReady transitions seen per node, for the flapping rule: one per outage.

    A silent node is first read as down from its last heartbeat plus the grace period, then the
    node lifecycle controller writes ``Ready=Unknown`` with a transition time of its own, seconds
    or minutes later; a kubelet's ``Ready=False`` may turn ``Unknown`` when it goes silent too.
    Each of those is the same outage, so a transition is recorded on the edge from Ready only,
    and on first sight (a restarted daemon) only when none recorded (``at``, from the archive)
    lies within ``near`` of it."""

    at: dict[str, list[datetime]] = field(default_factory=dict)
    _sighted: set[str] = field(default_factory=set, init=False, repr=False)
    _down: set[str] = field(default_factory=set, init=False, repr=False)

    def observe(
        self, nodes: Iterable[NodeObservation], now: datetime, settings: RepairSettings
    ) -> None:
        """Fold one observation of the nodes in; forget transitions older than the window."""
        horizon = now - settings.flapping.window
        near = settings.correlation.window
        for node in nodes:
            since = health.not_ready_since(node, now)
            seen = self.at.setdefault(node.name, [])
            if since is None:
                self._down.discard(node.name)
            elif node.name not in self._down:
                self._down.add(node.name)
                recorded = node.name not in self._sighted and any(
                    abs(since - t) <= near for t in seen
                )
                if not recorded:
                    seen.append(since)
                    seen.sort()
            self._sighted.add(node.name)
            seen[:] = [t for t in seen if t >= horizon]

    def snapshot(self) -> dict[str, tuple[datetime, ...]]:
        return {name: tuple(times) for name, times in self.at.items()}


def flapping(
    transitions: Sequence[datetime],
    entries: Sequence[LedgerEntry],
    settings: RepairSettings,
    now: datetime,
) -> int:
    """How many Ready -> NotReady transitions count against the node (quarantine at
    ``flapping.transitions``)."""
    start = now - settings.flapping.window
    released = _after_release(entries)
    if released is not None:
        start = max(start, released)
    ours = [
        (step.started, step.finished or now)
        for entry in entries
        if not entry.dry_run
        for step in entry.steps
        if step.action in DISRUPTIVE
    ]
    return sum(
        1
        for at in transitions
        if at >= start and not any(begun <= at <= ended for begun, ended in ours)
    )


def ledger_full(entries: Sequence[LedgerEntry], settings: RepairSettings, now: datetime) -> int:
    """How many repairs count against the node in the ledger window (after its last
    release); another repair is refused at ``ledger.max_repairs``."""
    start = now - settings.ledger.window
    released = _after_release(entries)
    if released is not None:
        start = max(start, released)
    return sum(1 for e in entries if e.outcome in COUNTED and not e.dry_run and e.finished >= start)
