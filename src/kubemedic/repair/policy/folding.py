"""The executor's answers folded into the repair they belong to.

:func:`fold` takes an :class:`~kubemedic.repair.policy.records.Outcome` of an ``act`` decision
and returns the repair after it: the step recorded in the repair's ledger steps, and the phase
moved on (a cordon done: on to the power check; a reboot asked: booting, with the bootID to beat).
A failed action whose step cannot work without it (an agent request, a reboot, a power-on, a
replacement) sends the repair to the ``failed`` phase, which the next round escalates; other
failures (a cordon, a taint, a label) are tried again next round.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from kubemedic.repair.policy.records import Action, Decision, Outcome, Repair, StepRecord

__all__ = ["close_step", "fold", "open_step", "phase_at"]

#: Actions whose failure means the step cannot work (others are tried again next round).
_ESCALATE_ON_FAILURE = frozenset(
    {Action.RESTART_KUBELET, Action.RESTART_RUNTIME, Action.REBOOT, Action.POWER_ON, Action.REPLACE}
)


#: Actions whose step is verified later: their ledger step ends with the verification.
_VERIFIED = frozenset(
    {Action.RESTART_KUBELET, Action.RESTART_RUNTIME, Action.REBOOT, Action.POWER_ON, Action.REPLACE}
)


def fold(repair: Repair, decision: Decision, outcome: Outcome, now: datetime) -> Repair:
    """``repair`` after the executor did (or failed to do) ``decision``."""
    action = outcome.action
    if repair.dry_run:
        return phase_at(
            close_step(open_step(repair, action, now), now, "dry-run", outcome.detail),
            "dry-run",
            now,
        )
    repair = open_step(repair, action, now)
    if action is Action.DRAIN:
        if outcome.ok:
            return phase_at(close_step(repair, now, "done", outcome.detail), "reboot", now)
        blocking = outcome.data.get("blocking", "")
        return replace(repair, detail=f"blocked by {blocking}" if blocking else outcome.detail)
    if action is Action.ALERT:
        return repair
    if not outcome.ok:
        failed = close_step(repair, now, "failed", outcome.detail)
        if action in _ESCALATE_ON_FAILURE:
            # The next round escalates: the step cannot be verified when it was not done.
            return replace(failed, phase="failed", detail=outcome.detail)
        return replace(failed, detail=outcome.detail)  # tried again next round
    if action in _VERIFIED:
        # The step stays open until its verification ends it (cured, or escalated).
        done = replace(
            repair,
            steps=(*repair.steps[:-1], replace(repair.steps[-1], detail=outcome.detail[:500])),
        )
    else:
        done = close_step(repair, now, "done", outcome.detail)
    if action in (Action.RESTART_KUBELET, Action.RESTART_RUNTIME):
        return replace(phase_at(done, "verify", now), request=decision.args.get("id", ""))
    if action is Action.CORDON:
        return replace(phase_at(done, "power", now), cordoned=True)
    if action is Action.FENCE:
        return replace(done, fenced=True)
    if action in (Action.REBOOT, Action.POWER_ON):
        boot_id = outcome.data.get("boot_id") or decision.args.get("boot_id", "")
        return replace(phase_at(done, "booting", now), boot_id=boot_id, ready_since=None)
    if action is Action.UNFENCE:
        return replace(done, fenced=False)
    if action is Action.UNCORDON:
        return replace(done, cordoned=False)
    if action is Action.REPLACE:
        return replace(
            phase_at(done, "replacing", now),
            machine=decision.args.get("machine", ""),
            owner=decision.args.get("owner", ""),
        )
    if action is Action.QUARANTINE:
        return phase_at(done, "verify", now)
    return done


def phase_at(repair: Repair, phase: str, now: datetime) -> Repair:
    return replace(repair, phase=phase, phase_started=now)


def open_step(repair: Repair, action: Action, now: datetime) -> Repair:
    """``repair`` with a step of ``action`` open: the last one when it is that action and still
    open (a drain asked again each round while a budget blocks it is one step), else a new one."""
    if (
        repair.steps
        and repair.steps[-1].action == action.value
        and repair.steps[-1].finished is None
    ):
        return repair
    return replace(repair, steps=(*repair.steps, StepRecord(action.value, now)))


def close_step(repair: Repair, now: datetime, outcome: str, detail: str) -> Repair:
    if not repair.steps or repair.steps[-1].finished is not None:
        return repair
    last = replace(repair.steps[-1], finished=now, outcome=outcome, detail=detail[:500])
    return replace(repair, steps=(*repair.steps[:-1], last))
