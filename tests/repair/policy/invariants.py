"""The rules every round of the repair policy must keep, computed from docs/repair.md rather
than from the policy's helpers (except ``health.judge`` for "unhealthy", which has its own unit
tests): :func:`violations` lists what one round's plan breaks."""

from __future__ import annotations

import bisect
import math
from collections import Counter
from datetime import datetime, timedelta

from kubemedic.repair.policy import health
from kubemedic.repair.policy.records import (
    Action,
    ClusterState,
    Kind,
    NodeObservation,
    Plan,
    Step,
)
from kubemedic.repair.policy.settings import CorrelationSettings, RepairSettings

GRACE = timedelta(seconds=50)  # the node lifecycle controller's grace period
QUARANTINED = "kubemedic.io/quarantined"
DO_NOT_REPAIR = "kubemedic.io/do-not-repair"

#: Acts that change a node or its machine (an undo, a quarantine or an alert does not).
DISRUPTIVE = frozenset(
    {
        Action.RESTART_KUBELET,
        Action.RESTART_RUNTIME,
        Action.CORDON,
        Action.DRAIN,
        Action.REBOOT,
        Action.POWER_ON,
        Action.FENCE,
        Action.REPLACE,
    }
)
#: What a correlated failure must never lead to.
NOT_IN_A_GROUP = frozenset(
    {Action.REBOOT, Action.POWER_ON, Action.REPLACE, Action.CORDON, Action.DRAIN}
)
#: What a pause still allows.
WHILE_PAUSED = frozenset({Action.UNCORDON, Action.UNFENCE, Action.ALERT, Action.QUARANTINE})
#: Ledger outcomes that count as a repair (docs/repair.md, the ledger rule).
COUNTED = frozenset({"repaired", "replaced", "abandoned", "quarantined"})


# -- the rules -------------------------------------------------------------------------


def not_ready_since(node: NodeObservation, now: datetime) -> datetime | None:
    """When the node stopped being Ready, read as the node lifecycle controller does."""
    ready = node.conditions.get("Ready")
    if ready is None:
        return None
    if ready.status != "True":
        return ready.since or node.created or now
    heard = [t for t in (ready.heartbeat, node.lease_renewed) if t is not None]
    if heard and now - max(heard) > GRACE:
        return max(heard) + GRACE
    return None


def in_correlated_groups(
    state: ClusterState, settings: CorrelationSettings
) -> tuple[set[str], set[str]]:
    """By brute force over every window: the nodes NotReady within a window that holds a
    cluster-wide group (any such group holds every repair), and those within a window that
    holds a zone's group."""
    since = {
        n.name: t
        for n in state.nodes
        if n.labels.get(QUARANTINED) != "true" and (t := not_ready_since(n, state.now)) is not None
    }

    def windows(members: dict[str, datetime], need: int) -> set[str]:
        found: set[str] = set()
        ordered = sorted(members.values())
        for start in ordered:
            end = bisect.bisect_right(ordered, start + settings.window)
            low = bisect.bisect_left(ordered, start)
            if end - low >= need:
                found |= {n for n, t in members.items() if start <= t <= start + settings.window}
        return found

    cluster = windows(since, settings.nodes)
    zones: dict[str, list[str]] = {}
    for node in state.nodes:
        if node.zone:
            zones.setdefault(node.zone, []).append(node.name)
    held: set[str] = set()
    for members in zones.values():
        need = max(settings.zone_min_nodes, math.ceil(len(members) * settings.zone_percent / 100))
        held |= windows({n: since[n] for n in members if n in since}, need)
    return cluster, held


def budget(pool: str, size: int, settings: RepairSettings) -> int:
    chosen = settings.max_unhealthy
    for configured in settings.pools:
        if configured.name == pool and configured.max_unhealthy is not None:
            chosen = configured.max_unhealthy
    by_percent = int(size * chosen.percent / 100) if chosen.percent is not None else 0
    return max(chosen.count or 0, by_percent)


def in_flight_limit(pool: str, settings: RepairSettings) -> int:
    for configured in settings.pools:
        if configured.name == pool and configured.max_in_flight is not None:
            return configured.max_in_flight
    return settings.max_in_flight


def must_quarantine(
    node: NodeObservation, state: ClusterState, plan: Plan, settings: RepairSettings
) -> bool:
    """The flap rule or the ledger rule applies to ``node`` (docs/repair.md)."""
    now = state.now
    entries = [*state.ledger.get(node.name, ()), *(e for e in plan.finished if e.node == node.name)]
    released = max((e.finished for e in entries if e.outcome == "released"), default=None)
    flaps_from = now - settings.flapping.window
    ledger_from = now - settings.ledger.window
    if released is not None:
        flaps_from, ledger_from = max(flaps_from, released), max(ledger_from, released)
    # A NotReady while one of kubemedic's own disruptive steps ran is the repair's doing.
    ours = [
        (s.started, s.finished or now)
        for e in entries
        if not e.dry_run
        for s in e.steps
        if s.action in ("reboot", "power-on", "restart-kubelet", "restart-runtime")
    ]
    flaps = sum(
        1
        for t in state.not_ready_at.get(node.name, ())
        if t >= flaps_from and not any(a <= t <= b for a, b in ours)
    )
    if flaps >= settings.flapping.transitions:
        return True
    repaired = sum(
        1 for e in entries if e.outcome in COUNTED and not e.dry_run and e.finished >= ledger_from
    )
    return repaired >= settings.ledger.max_repairs and health.judge(node, settings, now).unhealthy


def violations(state: ClusterState, plan: Plan, settings: RepairSettings) -> list[str]:
    """Every rule of one round ``plan`` breaks (empty when it keeps them all)."""
    found: list[str] = []
    now = state.now
    nodes = {n.name: n for n in state.nodes}
    acts = [d for d in plan.decisions if d.kind is Kind.ACT and d.action is not None]

    for d in plan.decisions:
        if not d.reason.startswith("KubemedicRepair") or not d.message or not d.key:
            found.append(f"malformed decision {d.kind} {d.node}: {d.reason!r} {d.message!r}")
    if plan.wake_at is not None and plan.wake_at <= now:
        found.append(f"wake_at {plan.wake_at} is not after now {now}")

    if settings.dry_run:
        for d in acts:
            if not d.dry_run or not d.message.startswith("dry run"):
                found.append(f"dry run: {d.action} on {d.node} says {d.message[:80]!r}")
    if settings.paused:
        for d in acts:
            if d.action not in WHILE_PAUSED:
                found.append(f"paused: {d.action} on {d.node}")

    for d in acts:
        node = nodes.get(d.node or "")
        if node is None or d.action not in DISRUPTIVE:
            continue
        if node.labels.get(QUARANTINED) == "true":
            found.append(f"quarantined node {node.name} got {d.action}")
        flag = node.annotations.get(DO_NOT_REPAIR)
        if flag is not None and flag.strip().lower() != "false":
            found.append(f"do-not-repair node {node.name} ({flag!r}) got {d.action}")

    wide, grouped = in_correlated_groups(state, settings.correlation)
    cluster_wide = bool(wide)
    for d in acts:
        if d.action in NOT_IN_A_GROUP and (cluster_wide or d.node in grouped):
            where = "a cluster-wide" if cluster_wide else "a zone's"
            found.append(f"{d.action} on {d.node} within {where} correlated failure")

    repairs_after = Counter(r.pool for r in plan.repairs.values() if r.step is not Step.QUARANTINE)
    for pool, count in repairs_after.items():
        limit = in_flight_limit(pool, settings)
        if count > limit:
            found.append(f"pool {pool}: {count} repairs in flight, more than {limit}")

    sizes = Counter(n.pool for n in state.nodes)
    sick = Counter(n.pool for n in state.nodes if health.judge(n, settings, now).unhealthy)
    starts = [d for d in plan.decisions if d.kind is Kind.START]
    if settings.paused and starts:
        found.append(f"paused: {len(starts)} repairs started")
    for d in starts:
        node = nodes[d.node or ""]
        acted = {a.action for a in acts if a.repair == d.repair}
        if must_quarantine(node, state, plan, settings):
            if acted - {Action.QUARANTINE, Action.ALERT}:
                found.append(f"{node.name} must be quarantined, got {sorted(map(str, acted))}")
            after = plan.repairs.get(node.name)
            if after is not None and after.id == d.repair and after.step is not Step.QUARANTINE:
                found.append(f"{node.name} must be quarantined, started on {after.step}")
            continue
        allowed = budget(node.pool, sizes[node.pool], settings)
        if sick[node.pool] > allowed:
            found.append(
                f"{node.name} started with {sick[node.pool]} of {sizes[node.pool]} unhealthy in "
                f"pool {node.pool} (budget {allowed})"
            )
        if cluster_wide or node.name in grouped:
            found.append(f"{node.name} started within a correlated failure")
    return found
