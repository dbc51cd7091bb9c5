"""One round of the policy: ``decide(state, settings) -> Plan``.

For every node, in this order (the first rule that applies decides, and says why):

1. **paused** (``repair.paused``): nothing starts and nothing in flight takes a new action;
2. **quarantined** (label ``kubemedic.io/quarantined=true``) or **do-not-repair** (annotation
   ``kubemedic.io/do-not-repair``, any value but ``false``): skipped, the decision recorded;
   a repair in flight on such a node is held like a paused one (it only undoes);
3. **flapping** (``flapping.transitions`` Ready -> NotReady transitions in ``flapping.window``):
   quarantined, whether or not it is down right now;
4. for an unhealthy node (:mod:`kubemedic.repair.policy.health`) with no repair in flight:
   the **ledger** (another repair past ``ledger.max_repairs`` in ``ledger.window``: quarantine),
   then the **brakes** (:mod:`kubemedic.repair.policy.brakes`: a correlated failure, the pool's
   unhealthy budget, its repairs in flight) hold it, else a repair **starts** on the ladder
   (:mod:`kubemedic.repair.policy.ladder`);
5. a repair in flight is advanced (held by a correlated failure or the pause, like a new one).

Unhealthy nodes start in the order they became unhealthy, so when the in-flight limit queues
them the oldest goes first. ``Plan.wake_at`` is the earliest time a decision could change
without anything in the cluster changing (a rule's duration running out, a step's timeout, a
stable period ending), so the controller looks again exactly then: the first action follows
the threshold within one round.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta

from kubemedic.model import timing
from kubemedic.repair.policy import brakes, health, ladder
from kubemedic.repair.policy.records import (
    Action,
    Brake,
    ClusterState,
    Decision,
    Hold,
    Kind,
    LedgerEntry,
    NodeObservation,
    NodeState,
    Plan,
    Repair,
    Step,
)
from kubemedic.repair.policy.settings import RepairSettings

__all__ = ["DO_NOT_REPAIR", "decide", "repair_id"]

DO_NOT_REPAIR = "kubemedic.io/do-not-repair"
#: ``Plan.alerted`` also holds one key per node of an announced group (its outage).
_OUTAGE = "correlated-node:"
_PAUSED = Hold(Brake.PAUSED, "repairs are paused")


def repair_id(node: str, started: datetime) -> str:
    """A stable id for the repair of ``node`` started at ``started``."""
    digest = hashlib.sha256(f"{node}@{started.isoformat()}".encode()).hexdigest()[:10]
    return f"{node}-{started:%Y%m%d%H%M%S}-{digest[:6]}"


def decide(state: ClusterState, settings: RepairSettings) -> Plan:
    """The decisions of one round, with the repairs in flight after them."""
    now = state.now
    nodes = {n.name: n for n in state.nodes}
    verdicts = {n.name: health.judge(n, settings, now) for n in state.nodes}
    # A quarantined node is known to be bad on its own: its transitions are no evidence of a
    # fault many nodes share.
    not_ready = {
        n.name: since
        for n in state.nodes
        if (since := health.not_ready_since(n, now)) is not None
        and n.labels.get(ladder.QUARANTINED) != "true"
    }
    groups = brakes.correlated(state.nodes, not_ready, settings.correlation)
    held_by: dict[str, brakes.Group] = {}
    for group in groups:
        members = set(nodes) if not group.zone else group.nodes
        for name in members:
            held_by.setdefault(name, group)
    # Membership sticks until the node is Ready again: a partition healing node by node leaves
    # the last nodes of the group below the threshold, and they are no more a node fault then.
    sticky = {name: why for name, why in state.correlated.items() if name in not_ready}
    for group in groups:
        for name in group.nodes:
            sticky[name] = group.short()

    decisions: list[Decision] = []
    # A fault is announced once: a group holding a node whose outage was announced already is
    # the same fault, whatever its first node, window or key has become since.
    announced_down = _still_down(state.alerted, not_ready, settings.correlation.window)
    alerted = {key for key in state.alerted if not key.startswith(_OUTAGE)}
    for group in groups:
        announced = group.key in alerted or bool(group.nodes & announced_down.keys())
        for name in group.nodes:  # a group overlapping this one, this round or later, is the same
            announced_down.setdefault(name, _outage_key(name, not_ready[name]))
        if not announced:
            alerted.add(group.key)
            first = sorted(group.nodes)[0]
            message = f"correlated failure: {group.describe()}; no node is rebooted while it lasts"
            decisions.append(
                Decision(
                    kind=Kind.ACT,
                    node=first,
                    reason="KubemedicRepairAlert",
                    message=ladder.dry_text(Action.ALERT, message) if settings.dry_run else message,
                    action=Action.ALERT,
                    key=group.key,
                    dry_run=settings.dry_run,
                )
            )
    # Remembered while the node stays down.
    alerted |= set(announced_down.values())

    repairs: dict[str, Repair] = {}
    finished: list[LedgerEntry] = []
    wakes: list[datetime] = []
    states: dict[str, NodeState] = {}

    def holding(name: str) -> Hold | None:
        if settings.paused:
            return _PAUSED
        # An operator's opt-out or quarantine stops a repair in flight too: it only undoes.
        node = nodes.get(name)
        skip = _skip(node, settings) if node is not None else None
        if skip is not None:
            return skip
        group = held_by.get(name)
        if group is not None:
            return Hold(
                Brake.CORRELATED,
                f"{group.short()}: a control-plane, network or zone fault, not a node fault",
            )
        if name in sticky:
            return Hold(
                Brake.CORRELATED,
                f"part of a correlated failure ({sticky[name]}); held until it is Ready again",
            )
        return None

    # Repairs in flight first: they hold the pools' slots.
    ctx_base = ladder.Context(
        settings=settings,
        now=now,
        nodes=nodes,
        abilities=state.abilities,
        power_known=state.power_known,
    )
    for name, repair in sorted(state.repairs.items()):
        move = ladder.advance(repair, replace(ctx_base, held=holding(name)))
        decisions.extend(d for d in move.decisions)
        if move.repair is not None:
            repairs[name] = move.repair
            states[name] = _state_of(move.repair, move.decisions)
        if move.finished is not None:
            finished.append(move.finished)
            if move.finished.outcome == "quarantined":
                states[name] = NodeState(name, "quarantined", "", move.finished.trigger)
            elif name not in nodes:
                last = move.finished.steps[-1].detail if move.finished.steps else ""
                states[name] = NodeState(name, "gone", "", f"{move.finished.outcome}: {last}")
        if move.wake_at is not None:
            wakes.append(move.wake_at)

    in_flight = Counter(r.pool for r in repairs.values() if r.step is not Step.QUARANTINE)
    pool_sizes = Counter(n.pool for n in state.nodes)
    pool_unhealthy = Counter(n.pool for n in state.nodes if verdicts[n.name].unhealthy)
    ledger_now = {
        name: (*state.ledger.get(name, ()), *(e for e in finished if e.node == name))
        for name in nodes
    }

    waiting = sorted(
        (n for n in state.nodes if n.name not in repairs and n.name not in states),
        key=lambda n: (verdicts[n.name].since or now, n.name),
    )
    for node in waiting:
        name = node.name
        verdict = verdicts[name]
        entries = ledger_now.get(name, ())
        if verdict.due is not None:
            wakes.append(verdict.due)
        skip = _skip(node, settings)
        if skip is not None:
            state_name = "quarantined" if node.labels.get(ladder.QUARANTINED) == "true" else ""
            if verdict.unhealthy:
                decisions.append(
                    _note(node, Kind.SKIP, "KubemedicRepairSkipped", skip.why, settings)
                )
            states[name] = NodeState(
                name, state_name or ("unhealthy" if verdict.unhealthy else "healthy"), "", skip.why
            )
            continue
        flaps = brakes.flapping(state.not_ready_at.get(name, ()), entries, settings, now)
        quarantine_why = ""
        if flaps >= settings.flapping.transitions:
            quarantine_why = (
                f"flapping: {flaps} Ready -> NotReady transitions within "
                f"{_human(settings.flapping.window)} (limit {settings.flapping.transitions})"
            )
        elif verdict.unhealthy:
            done = brakes.ledger_full(entries, settings, now)
            if done >= settings.ledger.max_repairs:
                quarantine_why = (
                    f"{done} repairs within {_human(settings.ledger.window)} and unhealthy "
                    f"again ({verdict.trigger}): the ledger's limit is "
                    f"{settings.ledger.max_repairs}"
                )
        if quarantine_why and settings.dry_run and _dry_quarantined(entries):
            states[name] = NodeState(
                name,
                "unhealthy" if verdict.unhealthy else "healthy",
                "",
                f"dry run: would be quarantined ({quarantine_why})",
            )
            continue
        if quarantine_why:
            repair = _new(
                node, quarantine_why, cause="node", step=Step.QUARANTINE, now=now, settings=settings
            )
            repair = replace(repair, detail=quarantine_why)
            decisions.append(_started(repair, f"quarantine {name}: {quarantine_why}"))
            move = ladder.advance(repair, ctx_base)
            decisions.extend(move.decisions)
            if move.repair is not None:
                repairs[name] = move.repair
            states[name] = NodeState(name, "quarantined", "quarantine", quarantine_why)
            continue
        if not verdict.unhealthy:
            pending = verdict.due is not None and not verdict.starting
            text = f"unhealthy at {verdict.due:%H:%M:%SZ} if it stays so" if pending else ""
            states[name] = NodeState(name, "unhealthy" if pending else "healthy", "", text)
            continue
        decided = _dry_run_decided(entries, verdict.since)
        if settings.dry_run and decided is not None:
            # A dry run decides once per unhealthy spell: nothing was done, so deciding again
            # would only hold the pool's slot from the nodes behind it.
            states[name] = NodeState(
                name, "unhealthy", "", f"dry run: decided at {decided:%H:%M:%SZ}; nothing done"
            )
            continue
        held = holding(name) or _brake(node, settings, pool_sizes, pool_unhealthy, in_flight)
        if held is not None:
            decisions.append(
                _note(
                    node,
                    Kind.HOLD,
                    "KubemedicRepairHeld",
                    f"repair of {name} held ({verdict.trigger}): {held.why}",
                    settings,
                    brake=held.brake,
                )
            )
            states[name] = NodeState(name, "held", "", held.why, held.brake)
            continue
        reachable = health.agent_reachable(node, settings, now)
        step = ladder.first_step(verdict.cause, reachable=reachable, ctx=ctx_base)
        repair = _new(
            node, verdict.trigger, cause=verdict.cause, step=step, now=now, settings=settings
        )
        plan = _plan_text(step, verdict.cause, reachable, settings)
        decisions.append(_started(repair, f"{name} is unhealthy ({verdict.trigger}): {plan}"))
        move = ladder.advance(repair, ctx_base)
        decisions.extend(move.decisions)
        if move.repair is not None:
            repairs[name] = move.repair
            in_flight[node.pool] += 1
            states[name] = _state_of(move.repair, move.decisions)
        if move.finished is not None:
            finished.append(move.finished)
        if move.wake_at is not None:
            wakes.append(move.wake_at)

    future = [w for w in wakes if w > now]
    return Plan(
        decisions=tuple(decisions),
        repairs=repairs,
        finished=tuple(finished),
        wake_at=min(future) if future else None,
        alerted=frozenset(alerted),
        states=tuple(states[n] for n in sorted(states)),
        correlated=sticky,
    )


def _outage_key(node: str, since: datetime) -> str:
    return f"{_OUTAGE}{node}:{since.isoformat()}"


def _still_down(
    alerted: frozenset[str], not_ready: Mapping[str, datetime], window: timedelta
) -> dict[str, str]:
    """The nodes of an announced group still down in the same outage, with its key.

    An outage is known by when its node went down, give or take ``window``: the policy first
    reads a silent node as ``Unknown`` from its last heartbeat plus the grace period, and the node
    lifecycle controller then writes a transition time of its own, seconds later. A node seen
    Ready in between is forgotten: its next outage is a new one."""
    down: dict[str, str] = {}
    for key in sorted(alerted):
        if not key.startswith(_OUTAGE):
            continue
        node, _, when = key.removeprefix(_OUTAGE).partition(":")  # node names hold no colon
        try:
            since = datetime.fromisoformat(when)
        except ValueError:
            continue  # a key of another format: forgotten, at worst one alert more
        now_since = not_ready.get(node)
        if now_since is not None and abs(now_since - since) <= window:
            down.setdefault(node, key)
    return down


def _dry_run_decided(entries: tuple[LedgerEntry, ...], since: datetime | None) -> datetime | None:
    """When a dry-run repair of this unhealthy spell (since ``since``) ended, if one did."""
    for entry in reversed(entries):
        if entry.dry_run and since is not None and entry.started >= since:
            return entry.finished
    return None


def _dry_quarantined(entries: tuple[LedgerEntry, ...]) -> bool:
    """A dry run decided to quarantine this node already (since its last release): once is
    enough, as a real quarantine would have stopped every later decision."""
    for entry in reversed(entries):
        if entry.outcome == "released":
            return False
        if entry.dry_run and any(step.action == "quarantine" for step in entry.steps):
            return True
    return False


def _skip(node: NodeObservation, settings: RepairSettings) -> Hold | None:
    """Why ``node`` is not repaired on purpose (None: it may be)."""
    if node.labels.get(ladder.QUARANTINED) == "true":
        why = node.annotations.get("kubemedic.io/quarantine-reason", "")
        return Hold(
            Brake.QUARANTINED,
            "quarantined" + (f": {why}" if why else "") + "; `kubemedic nodes release` clears it",
        )
    flag = node.annotations.get(DO_NOT_REPAIR)
    if flag is not None and flag.strip().lower() != "false":
        return Hold(Brake.DO_NOT_REPAIR, f"annotated {DO_NOT_REPAIR}")
    if settings.paused:
        return _PAUSED
    return None


def _brake(
    node: NodeObservation,
    settings: RepairSettings,
    sizes: Mapping[str, int],
    unhealthy: Mapping[str, int],
    in_flight: Mapping[str, int],
) -> Hold | None:
    pool = node.pool
    allowed = brakes.unhealthy_budget(sizes[pool], settings, pool)
    if unhealthy[pool] > allowed:
        return Hold(
            Brake.MAX_UNHEALTHY,
            f"{unhealthy[pool]} of the {sizes[pool]} nodes of pool {pool} are unhealthy, more "
            f"than maxUnhealthy ({allowed}): a fault this wide is not repaired node by node",
        )
    limit = brakes.max_in_flight(settings, pool)
    if in_flight.get(pool, 0) >= limit:
        return Hold(
            Brake.MAX_IN_FLIGHT,
            f"{in_flight[pool]} repair(s) in flight in pool {pool} (maxInFlight {limit})",
        )
    return None


def _new(
    node: NodeObservation,
    trigger: str,
    *,
    cause: str,
    step: Step,
    now: datetime,
    settings: RepairSettings,
) -> Repair:
    phase = {Step.REBOOT: "cordon", Step.REPLACE: "check"}.get(step, "request")
    return Repair(
        id=repair_id(node.name, now),
        node=node.name,
        pool=node.pool,
        trigger=trigger,
        started=now,
        step=step,
        phase=phase,
        phase_started=now,
        step_started=now,
        cause=cause,
        dry_run=settings.dry_run,
    )


def _plan_text(step: Step, cause: str, reachable: bool, settings: RepairSettings) -> str:
    rungs = [s for s in ("restart", "reboot", "replace") if s in settings.ladder.steps]
    start = rungs.index(step.value) if step.value in rungs else len(rungs)
    ladder_text = " -> ".join([*rungs[start:], "quarantine"])
    why = ""
    if step is not Step.RESTART and cause in ("kubelet", "runtime"):
        why = " (the node agent cannot be reached)" if not reachable else ""
    text = f"repair by {ladder_text}{why}"
    return f"dry run: would {text}" if settings.dry_run else text


def _started(repair: Repair, message: str) -> Decision:
    return Decision(
        kind=Kind.START,
        node=repair.node,
        reason="KubemedicRepairStarted",
        message=message,
        repair=repair.id,
        key=f"{repair.id}:start",
        dry_run=repair.dry_run,
    )


def _note(
    node: NodeObservation,
    kind: Kind,
    reason: str,
    message: str,
    settings: RepairSettings,
    *,
    brake: Brake | None = None,
) -> Decision:
    return Decision(
        kind=kind,
        node=node.name,
        reason=reason,
        message=message,
        key=f"{node.name}:{kind.value}:{message}",
        dry_run=settings.dry_run,
        brake=brake,
    )


def _state_of(repair: Repair, decisions: tuple[Decision, ...]) -> NodeState:
    if repair.step is Step.QUARANTINE:
        return NodeState(repair.node, "quarantined", "quarantine", repair.detail or repair.trigger)
    held = next((d for d in decisions if d.kind is Kind.HOLD), None)
    if held is not None:
        return NodeState(repair.node, "held", repair.step.value, held.message, held.brake)
    return NodeState(
        repair.node, "repairing", repair.step.value, f"{repair.phase}: {repair.trigger}"
    )


def _human(delta: timedelta) -> str:
    return timing.human_duration(delta.total_seconds())
