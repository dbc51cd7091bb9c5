"""The ladder: each repair's steps, their verification, and escalation.

A :class:`~kubemedic.repair.policy.records.Repair` stands on a step (``restart``, ``reboot``,
``replace``, ``quarantine``) and in a phase of it. :func:`advance` looks at the node and returns
what to do now (an ``act`` for the executor, a ``wait`` for a verification still running, an
``escalate`` or a ``finish``); :func:`fold` takes the executor's outcome of an ``act`` into the
repair. Phases, in order:

* ``restart``: ``request`` (ask the node agent to restart the kubelet or the runtime) ->
  ``verify`` (the agent did not refuse, and Ready=True held for ``ladder.stable`` within
  ``ladder.restart_timeout``).
* ``reboot``: ``cordon`` -> ``power`` (a machine the provider reports off is fenced with the
  out-of-service taint, then powered on) -> ``drain`` -> ``reboot`` -> ``booting`` (a new bootID
  and Ready=True held for ``ladder.stable`` within ``ladder.reboot_timeout``) -> ``restore``
  (unfence, uncordon what this repair cordoned).
* ``replace``: ``check`` (a MachineSet owns the Machine and the node group stays at its
  autoscaler minimum) -> ``replacing`` (a new node of the same owner is Ready within
  ``ladder.replace_timeout``).
* ``quarantine``: ``request`` (cordon, label, annotate; alert a person) -> ``verify`` (the label
  is seen).

Only a failed verification escalates. A node that becomes healthy before anything disruptive
was done ends its repair as ``recovered`` (uncordoned if the repair cordoned it). A dry run
decides the first action of its step, then waits for the node to recover or the step's timeout,
and ends as ``dry-run``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from kubemedic.model import timing
from kubemedic.repair.policy import health
from kubemedic.repair.policy.folding import close_step as _close_step
from kubemedic.repair.policy.folding import fold
from kubemedic.repair.policy.folding import phase_at as _phase_at
from kubemedic.repair.policy.records import (
    Action,
    Brake,
    Decision,
    Hold,
    Kind,
    LedgerEntry,
    NodeObservation,
    Power,
    Repair,
    Step,
)
from kubemedic.repair.policy.settings import RepairSettings

__all__ = ["Context", "Move", "advance", "dry_text", "first_step", "fold", "reason_for"]

ACK = "kubemedic.io/agent-ack"
QUARANTINED = "kubemedic.io/quarantined"
_EARLY = frozenset({"request", "cordon", "power", "drain"})
#: Actions taken even while repairs are held: they undo, or they only make a node safer.
_ALWAYS = frozenset({Action.UNFENCE, Action.UNCORDON, Action.ALERT, Action.QUARANTINE})


@dataclass(frozen=True, slots=True)
class Context:
    """What a repair is advanced against."""

    settings: RepairSettings
    now: datetime
    nodes: Mapping[str, NodeObservation]
    abilities: frozenset[Action]
    power_known: bool
    #: Why the repair may not take a new action now (None when nothing holds it).
    held: Hold | None = None


@dataclass(frozen=True, slots=True)
class Move:
    repair: Repair | None
    decisions: tuple[Decision, ...] = ()
    finished: LedgerEntry | None = None
    wake_at: datetime | None = None


def reason_for(action: Action) -> str:
    """The Event reason of an action: ``KubemedicRepairRestartKubelet``..."""
    return "KubemedicRepair" + "".join(part.title() for part in action.value.split("-"))


def dry_text(action: Action, message: str) -> str:
    """An act's message in a dry run, as the executor's Event says it: ``dry run: would
    <action>: <message>`` (unchanged when it says so already)."""
    if message.startswith("dry run"):
        return message
    return f"dry run: would {action.value}: {message}"


def first_step(cause: str, *, reachable: bool, ctx: Context) -> Step:
    """Where a repair starts: a restart through the agent for a hang it can reach, else a
    reboot when the provider can, else a replacement."""
    steps = ctx.settings.ladder.steps
    if "restart" in steps and cause in ("kubelet", "runtime") and reachable:
        return Step.RESTART
    return _next_after(None, ctx)


def _next_after(step: Step | None, ctx: Context) -> Step:
    order = [Step.RESTART, Step.REBOOT, Step.REPLACE]
    start = order.index(step) + 1 if step in order else 0
    for candidate in order[start:]:
        if candidate.value not in ctx.settings.ladder.steps:
            continue
        if candidate is Step.RESTART:
            continue  # only ever first, for a hang the agent can reach
        if candidate is Step.REBOOT and Action.REBOOT not in ctx.abilities:
            continue
        return candidate
    return Step.QUARANTINE


def advance(repair: Repair, ctx: Context) -> Move:
    """What to do for ``repair`` now."""
    node = ctx.nodes.get(repair.node)
    if node is None and repair.step is not Step.REPLACE:
        return _finish(repair, ctx, "abandoned", "the node was deleted", alert=False)
    if repair.dry_run and repair.phase == "dry-run":
        return _dry_waiting(repair, node, ctx)
    if repair.phase == "failed":
        return _escalate(repair, ctx, repair.detail or f"{repair.step.value} failed")
    if (
        node is not None
        and repair.phase in _EARLY
        and repair.step is not Step.QUARANTINE
        and _healthy(node, ctx)
    ):
        return _recovered(repair, ctx)
    if repair.step is Step.RESTART:
        assert node is not None
        return _restart(repair, node, ctx)
    if repair.step is Step.REBOOT:
        assert node is not None
        return _reboot(repair, node, ctx)
    if repair.step is Step.REPLACE:
        return _replace(repair, node, ctx)
    return _quarantine(repair, node, ctx)


# -- the steps --------------------------------------------------------------------------------


def _restart(repair: Repair, node: NodeObservation, ctx: Context) -> Move:
    if repair.phase == "request":
        if ctx.held:
            return _hold(repair, ctx.held)
        action = Action.RESTART_RUNTIME if repair.cause == "runtime" else Action.RESTART_KUBELET
        what = "container runtime" if action is Action.RESTART_RUNTIME else "kubelet"
        request = f"{repair.id}-{len(repair.steps) + 1}"
        return _act(
            repair,
            action,
            f"restart the {what} through the node agent ({repair.trigger})",
            ctx,
            args={"id": request},
        )
    ack = _ack(node, repair.request)
    if ack.get("state") in ("failed", "refused"):
        return _escalate(
            repair,
            ctx,
            f"the node agent answered {ack.get('state')}: {ack.get('message', '')}".rstrip(": "),
        )
    return _verify_ready(repair, node, ctx, timeout=ctx.settings.ladder.restart_timeout)


def _reboot(repair: Repair, node: NodeObservation, ctx: Context) -> Move:
    phase = repair.phase
    if phase == "cordon":
        if ctx.held:
            return _hold(repair, ctx.held)
        if node.unschedulable:
            return advance(_phase(repair, "power", ctx), ctx)
        return _act(repair, Action.CORDON, f"cordon {repair.node} before its reboot", ctx)
    if phase == "power":
        if ctx.power_known and node.power is None:
            return Move(repair, (_wait(repair, "asking the provider for the machine's power"),))
        if node.power is Power.OFF and Action.POWER_ON in ctx.abilities:
            if not repair.fenced:
                return _act(
                    repair,
                    Action.FENCE,
                    "the provider reports the machine powered off: taint the node "
                    "out-of-service so its pods are removed and restarted elsewhere",
                    ctx,
                )
            if ctx.held:
                return _hold(repair, ctx.held)
            return _act(
                repair,
                Action.POWER_ON,
                "power the machine back on",
                ctx,
                args={"boot_id": node.boot_id},
            )
        return advance(_phase(repair, "drain", ctx), ctx)
    if phase == "drain":
        return _drain(repair, node, ctx)
    if phase == "reboot":
        if ctx.held:
            return _hold(repair, ctx.held)
        return _act(
            repair,
            Action.REBOOT,
            f"reboot {repair.node} through the provider ({repair.trigger})",
            ctx,
            args={"boot_id": node.boot_id},
        )
    if phase == "booting":
        rebooted = bool(node.boot_id) and node.boot_id != repair.boot_id
        if not rebooted:
            deadline = repair.phase_started + ctx.settings.ladder.reboot_timeout
            if ctx.now >= deadline:
                return _escalate(
                    repair,
                    ctx,
                    "no new bootID within " + _human(ctx.settings.ladder.reboot_timeout),
                )
            return Move(repair, (_wait(repair, "waiting for a new bootID"),), wake_at=deadline)
        return _verify_ready(repair, node, ctx, timeout=ctx.settings.ladder.reboot_timeout)
    # restore
    if repair.fenced:
        return _act(
            repair, Action.UNFENCE, "the node is back: remove the out-of-service taint", ctx
        )
    if repair.cordoned:
        return _act(repair, Action.UNCORDON, "the node is back and Ready: uncordon it", ctx)
    return _finish(repair, ctx, "repaired", _cured(repair, ctx))


def _drain(repair: Repair, node: NodeObservation, ctx: Context) -> Move:
    drain = ctx.settings.drain
    overdue = ctx.now >= repair.phase_started + drain.timeout
    args = {"unreachable": "false" if _posting(node, ctx) else "true"}
    if overdue and drain.delete_after_timeout:
        args["delete_classes"] = ";".join(drain.delete_after_timeout)
    move = _act(
        repair, Action.DRAIN, f"drain {repair.node} through the Eviction API", ctx, args=args
    )
    if not overdue or not repair.detail:
        return move
    rounds = int((ctx.now - repair.phase_started) / drain.report_every)
    blocked = Decision(
        kind=Kind.HOLD,
        node=repair.node,
        reason="KubemedicRepairDrainBlocked",
        message=f"the drain has not finished after {_human(ctx.now - repair.phase_started)}: "
        f"{repair.detail}; waiting (PodDisruptionBudgets are honoured)",
        repair=repair.id,
        key=f"{repair.id}:drain-blocked:{rounds}",
        dry_run=repair.dry_run,
    )
    return Move(repair, (*move.decisions, blocked), wake_at=ctx.now + drain.report_every)


def _replace(repair: Repair, node: NodeObservation | None, ctx: Context) -> Move:
    if repair.phase == "check":
        machine = node.machine if node is not None else None
        if machine is None:
            return _escalate(
                repair,
                ctx,
                "no Cluster API Machine behind the node: nothing would replace it",
                to=Step.QUARANTINE,
            )
        if not machine.owner.startswith("MachineSet/"):
            return _escalate(
                repair,
                ctx,
                f"Machine {machine.name} has no MachineSet owner: nothing would recreate it",
                to=Step.QUARANTINE,
            )
        if machine.group_min is not None and machine.group_ready < machine.group_min:
            return _escalate(
                repair,
                ctx,
                f"node group {machine.group} has {machine.group_ready} Ready nodes, below its "
                f"autoscaler minimum of {machine.group_min}",
                to=Step.QUARANTINE,
            )
        if ctx.held:
            return _hold(repair, ctx.held)
        return _act(
            repair,
            Action.REPLACE,
            f"delete Machine {machine.namespace}/{machine.name} so that {machine.owner} "
            "replaces it",
            ctx,
            args={"machine": f"{machine.namespace}/{machine.name}", "owner": machine.owner},
        )
    new = [
        n
        for n in ctx.nodes.values()
        if n.machine is not None
        and n.machine.owner == repair.owner
        and n.name != repair.node
        and n.created is not None
        and n.created >= repair.phase_started
        and _ready(n, ctx)
    ]
    if new:
        names = ", ".join(sorted(n.name for n in new))
        return _finish(repair, ctx, "replaced", f"replaced by {names}")
    deadline = repair.phase_started + ctx.settings.ladder.replace_timeout
    if ctx.now >= deadline:
        return _finish(
            repair,
            ctx,
            "abandoned",
            "no Ready replacement within " + _human(ctx.settings.ladder.replace_timeout),
            alert=True,
        )
    return Move(
        repair,
        (_wait(repair, f"waiting for {repair.owner} to replace the machine"),),
        wake_at=deadline,
    )


def _quarantine(repair: Repair, node: NodeObservation | None, ctx: Context) -> Move:
    if node is None or node.labels.get(QUARANTINED) == "true":
        return _finish(repair, ctx, "quarantined", repair.detail or repair.trigger)
    if repair.phase == "request" or ctx.now >= repair.phase_started + timedelta(minutes=2):
        message = (
            f"quarantine {repair.node}: {repair.detail or repair.trigger}; it is not "
            "repaired automatically again until `kubemedic nodes release` clears it"
        )
        act = _act(
            repair,
            Action.QUARANTINE,
            message,
            ctx,
            args={"reason": repair.detail or repair.trigger},
        )
        alert = _decision(
            repair,
            Kind.ACT,
            "KubemedicRepairAlert",
            f"{repair.node} needs a person: {repair.detail or repair.trigger}",
            action=Action.ALERT,
            key=f"{repair.id}:alert",
        )
        return Move(act.repair, (*act.decisions, alert))
    return Move(repair, (_wait(repair, "waiting for the quarantine to show"),))


# -- verification, escalation, endings ----------------------------------------------------------


def _verify_ready(
    repair: Repair, node: NodeObservation, ctx: Context, *, timeout: timedelta
) -> Move:
    stable = ctx.settings.ladder.stable
    if _ready(node, ctx):
        ready = health.ready(node, ctx.now)
        since = max(ready.since or ctx.now, repair.phase_started) if ready else ctx.now
        if ctx.now - since >= stable:
            if repair.step is Step.REBOOT:
                proven = _close_step(repair, ctx.now, "done", _cured(repair, ctx))
                return advance(_phase(proven, "restore", ctx), ctx)
            return _finish(repair, ctx, "repaired", _cured(repair, ctx))
        waiting = replace(repair, ready_since=since)
        return Move(
            waiting,
            (_wait(waiting, "Ready again; waiting for it to hold"),),
            wake_at=since + stable,
        )
    if repair.ready_since is not None:
        return _escalate(repair, ctx, "Ready again, then NotReady within " + _human(stable))
    deadline = repair.phase_started + timeout
    if ctx.now >= deadline:
        return _escalate(repair, ctx, f"not Ready within {_human(timeout)}")
    return Move(repair, (_wait(repair, "waiting for Ready"),), wake_at=deadline)


def _escalate(repair: Repair, ctx: Context, why: str, *, to: Step | None = None) -> Move:
    step = to or _next_after(repair.step, ctx)
    closed = _close_step(repair, ctx.now, "failed", why)
    moved = replace(
        closed,
        step=step,
        phase="check" if step is Step.REPLACE else "cordon" if step is Step.REBOOT else "request",
        phase_started=ctx.now,
        step_started=ctx.now,
        ready_since=None,
        detail=why if step is Step.QUARANTINE else "",
    )
    note = _decision(
        repair,
        Kind.ESCALATE,
        "KubemedicRepairEscalated",
        f"{repair.step.value} did not cure {repair.node}: {why}; next: {step.value}",
        key=f"{repair.id}:escalate:{step.value}",
    )
    after = advance(moved, ctx)
    return Move(after.repair, (note, *after.decisions), after.finished, after.wake_at)


def _recovered(repair: Repair, ctx: Context) -> Move:
    if repair.fenced or repair.cordoned:
        restored = _phase(repair, "restore", ctx)
        restored = replace(restored, step=Step.REBOOT, detail="recovered")
        return advance(restored, ctx)
    return _finish(repair, ctx, "recovered", "the node became healthy before anything was done")


def _finish(repair: Repair, ctx: Context, outcome: str, why: str, *, alert: bool = False) -> Move:
    if repair.detail == "recovered" and outcome == "repaired":
        outcome, why = "recovered", "the node became healthy before it was rebooted"
    closed = _close_step(repair, ctx.now, outcome if outcome != "abandoned" else "failed", why)
    entry = LedgerEntry(
        id=repair.id,
        node=repair.node,
        trigger=repair.trigger,
        started=repair.started,
        finished=ctx.now,
        outcome=outcome,
        steps=closed.steps,
        dry_run=repair.dry_run,
    )
    reason = {
        "repaired": "KubemedicRepairSucceeded",
        "replaced": "KubemedicRepairSucceeded",
        "quarantined": "KubemedicRepairQuarantined",
        "recovered": "KubemedicRepairRecovered",
        "dry-run": "KubemedicRepairDryRun",
    }.get(outcome, "KubemedicRepairAbandoned")
    took = _human(ctx.now - repair.started)
    decisions = [
        _decision(
            repair,
            Kind.FINISH,
            reason,
            f"{outcome} after {took}: {why}",
            key=f"{repair.id}:finish",
            outcome=outcome,
        )
    ]
    if alert:
        decisions.append(
            _decision(
                repair,
                Kind.ACT,
                "KubemedicRepairAlert",
                f"{repair.node} needs a person: {why}",
                action=Action.ALERT,
                key=f"{repair.id}:alert",
            )
        )
    return Move(None, tuple(decisions), entry)


def _dry_waiting(repair: Repair, node: NodeObservation | None, ctx: Context) -> Move:
    if node is None or (
        _ready(node, ctx) and not health.judge(node, ctx.settings, ctx.now).unhealthy
    ):
        return _finish(repair, ctx, "dry-run", "dry run: the node became healthy")
    timeout = {
        Step.RESTART: ctx.settings.ladder.restart_timeout,
        Step.REBOOT: ctx.settings.ladder.reboot_timeout,
        Step.REPLACE: ctx.settings.ladder.replace_timeout,
    }.get(repair.step, timedelta(minutes=10))
    deadline = repair.step_started + timeout
    if ctx.now >= deadline:
        return _finish(
            repair, ctx, "dry-run", f"dry run: would have gone on after {_human(timeout)}"
        )
    return Move(repair, (_wait(repair, "dry run"),), wake_at=deadline)


def _hold(repair: Repair, held: Hold) -> Move:
    return Move(
        repair,
        (
            _decision(
                repair,
                Kind.HOLD,
                "KubemedicRepairHeld",
                f"{repair.step.value} of {repair.node} held: {held.why}",
                key=f"{repair.id}:held:{held.why}",
                brake=held.brake,
            ),
        ),
    )


# -- small pieces ---------------------------------------------------------------------------------


def _act(
    repair: Repair,
    action: Action,
    message: str,
    ctx: Context,
    *,
    args: Mapping[str, str] | None = None,
) -> Move:
    if ctx.held and action not in _ALWAYS:
        return _hold(repair, ctx.held)
    text = f"dry run: would {message}" if repair.dry_run else message
    decision = _decision(
        repair,
        Kind.ACT,
        reason_for(action),
        text,
        action=action,
        key=f"{repair.id}:{action.value}",
        args=args or {},
    )
    return Move(repair, (decision,))


def _decision(
    repair: Repair,
    kind: Kind,
    reason: str,
    message: str,
    *,
    key: str,
    action: Action | None = None,
    args: Mapping[str, str] | None = None,
    outcome: str = "",
    brake: Brake | None = None,
) -> Decision:
    if repair.dry_run and kind is Kind.ACT and action is not None:
        message = dry_text(action, message)
    return Decision(
        kind=kind,
        node=repair.node,
        reason=reason,
        message=message,
        action=action,
        repair=repair.id,
        key=key,
        args=dict(args or {}),
        outcome=outcome,
        dry_run=repair.dry_run,
        brake=brake,
    )


def _wait(repair: Repair, why: str) -> Decision:
    return _decision(
        repair,
        Kind.WAIT,
        "KubemedicRepairWaiting",
        f"{repair.step.value}: {why}",
        key=f"{repair.id}:wait:{repair.phase}",
    )


def _phase(repair: Repair, phase: str, ctx: Context) -> Repair:
    return _phase_at(repair, phase, ctx.now)


def _ack(node: NodeObservation, request: str) -> dict[str, str]:
    raw = node.annotations.get(ACK)
    if not raw or not request:
        return {}
    try:
        loaded = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(loaded, dict) or loaded.get("id") != request:
        return {}
    return {str(k): str(v) for k, v in loaded.items()}


def _ready(node: NodeObservation, ctx: Context) -> bool:
    ready = health.ready(node, ctx.now)
    return ready is not None and ready.status == "True"


def _healthy(node: NodeObservation, ctx: Context) -> bool:
    return _ready(node, ctx) and not health.judge(node, ctx.settings, ctx.now).unhealthy


def _posting(node: NodeObservation, ctx: Context) -> bool:
    ready = health.ready(node, ctx.now)
    return ready is not None and ready.status != "Unknown"


def _cured(repair: Repair, ctx: Context) -> str:
    return f"{repair.step.value} cured it: Ready held for {_human(ctx.settings.ladder.stable)}"


def _human(delta: timedelta) -> str:
    return timing.human_duration(delta.total_seconds())
