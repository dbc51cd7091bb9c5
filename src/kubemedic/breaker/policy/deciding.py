"""One round of the breaker: ``decide(state, ...) -> Plan``.

Per owner in a storm (``detecting.track``), or with a predicted one (``observing.predict``):

- ``alert``: one ``KubemedicBreakerStorm`` Event per storm (``KubemedicBreakerPredicted`` once per
  predicted pin), however many pods fail.
- ``revert-out-of-band``: remove the owner's *live-only* fields under ``revert_pointers`` that an
  imperative manager wrote (``kubectl-edit``...): the drift engine's revert patch restricted to
  them, guarded by ``resourceVersion``. Never fights GitOps: a field the drift result marks
  ``in_git`` is not out-of-band (``KubemedicBreakerInGit``, once), nor one a controller or the
  GitOps tool owns. Loop guard: an owner reverted less than ``revert_guard_seconds`` ago is not
  reverted again; ``KubemedicBreakerLoopGuard`` is raised instead, once.
- ``scale-to-fit``: scale to the replicas the pinned node admits, when no revert was decided in
  the round and at least one fits (``KubemedicBreakerCannotFit`` otherwise, once).
- ``prune-failed``: delete the owner's rejected Failed pods beyond the newest ``keep_failed``,
  oldest first, at most ``prune_batch`` a round.

In dry run (the default) every would-be action is a ``dry-run`` decision, announced once per key,
and nothing is recorded as done: no decision is ``act``. Alerts are Events and are emitted in
dry run too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from kubemedic.breaker.policy.detecting import track
from kubemedic.breaker.policy.records import (
    BreakerState,
    Decision,
    DecisionKind,
    Plan,
    PodObservation,
    Prediction,
    StormState,
    owner_key,
)
from kubemedic.breaker.policy.settings import BreakerAction, BreakerSettings
from kubemedic.drift.engine import FieldDrift, ObjectDrift
from kubemedic.drift.rules import ManagerClass
from kubemedic.model.objects import ObjectRef

__all__ = ["decide", "forget_revert", "out_of_band", "prune_candidates"]

_REASON = {
    BreakerAction.REVERT_OUT_OF_BAND: "KubemedicBreakerRevertOutOfBand",
    BreakerAction.SCALE_TO_FIT: "KubemedicBreakerScaleToFit",
    BreakerAction.PRUNE_FAILED: "KubemedicBreakerPruneFailed",
}


def _covers(pointers: Iterable[str], pointer: str) -> bool:
    return any(pointer == p or pointer.startswith(p.rstrip("/") + "/") for p in pointers)


def out_of_band(
    drift: ObjectDrift, pointers: Iterable[str]
) -> tuple[list[FieldDrift], list[FieldDrift]]:
    """``(revertible, in_git)`` among ``drift``'s fields under ``pointers``: revertible are
    live-only fields, not in Git, whose owner is an imperative manager; ``in_git`` are the
    fields Git itself sets (not out-of-band: the fix belongs in Git)."""
    wanted = tuple(pointers)
    revertible: list[FieldDrift] = []
    in_git: list[FieldDrift] = []
    for item in drift.drifts:
        if not _covers(wanted, item.pointer):
            continue
        if item.in_git:
            in_git.append(item)
            continue
        owner = item.owner
        if (
            item.kind == "live-only"
            and owner is not None
            and owner.manager_class is ManagerClass.IMPERATIVE
        ):
            revertible.append(item)
    return revertible, in_git


def prune_candidates(
    pods: Iterable[PodObservation], owner: ObjectRef, *, keep: int, batch: int
) -> tuple[str, ...]:
    """The owner's rejected Failed pods beyond the newest ``keep``, oldest first, at most
    ``batch`` of them (pods without a creation time count as the oldest)."""
    key = owner_key(owner)
    failed = [p for p in pods if p.rejected and p.phase == "Failed" and owner_key(p.owner) == key]
    failed.sort(key=lambda p: (p.created is not None, p.created or datetime.min, p.name))
    extra = failed[: max(len(failed) - keep, 0)]
    return tuple(p.name for p in extra[:batch])


def forget_revert(state: BreakerState, owner: ObjectRef) -> BreakerState:
    """The state after a revert the executor could not apply (a resourceVersion conflict): it
    does not count for the loop guard."""
    reverted = dict(state.reverted)
    reverted.pop(owner_key(owner), None)
    return replace(state, reverted=reverted)


@dataclass(slots=True)
class _Round:
    settings: BreakerSettings
    now: datetime
    state: BreakerState
    reverted: dict[str, datetime]
    announced: set[str]
    decisions: list[Decision] = field(default_factory=list)

    def once(self, decision: Decision) -> bool:
        """Add ``decision`` unless its key was announced already."""
        if decision.key in self.announced:
            return False
        self.announced.add(decision.key)
        self.decisions.append(decision)
        return True

    def act(
        self,
        action: BreakerAction,
        owner: ObjectRef,
        *,
        message: str,
        key: str,
        patch: tuple[Mapping[str, object], ...] = (),
        replicas: int | None = None,
        resource_version: str | None = None,
        pods: tuple[str, ...] = (),
    ) -> bool:
        """Decide ``action`` on ``owner`` with what the executor needs for it (``records.
        Decision``): ``act`` (always added), or in dry run ``dry-run`` (added once per key)."""
        decision = Decision(
            kind=DecisionKind.ACT,
            owner=owner,
            reason=_REASON[action],
            message=message,
            key=key,
            action=action,
            patch=patch,
            replicas=replicas,
            resource_version=resource_version,
            pods=pods,
        )
        if self.settings.dry_run:
            return self.once(
                replace(decision, kind=DecisionKind.DRY_RUN, message="dry run: " + decision.message)
            )
        self.decisions.append(decision)
        return True


def decide(
    state: BreakerState,
    *,
    now: datetime,
    pods: Iterable[PodObservation],
    predictions: Iterable[Prediction] = (),
    drifts: Mapping[str, ObjectDrift | None] | None = None,
    settings: BreakerSettings | None = None,
) -> Plan:
    """One round. ``drifts`` maps owner keys (``records.owner_key``) to the drift engine's result
    for that owner against Git (None, or absent, when its desired state is unknown)."""
    settings = settings or BreakerSettings()
    pods = tuple(pods)
    tracked = track(state.storms, pods, now=now, settings=settings)
    run = _Round(settings, now, state, dict(state.reverted), set(state.announced))
    storms = dict(tracked.storms)
    for over in tracked.ended:
        run.once(
            Decision(
                kind=DecisionKind.STORM_ENDED,
                owner=over.owner,
                reason="KubemedicBreakerStormEnded",
                message=f"{over.owner}: the Failed-pod storm that started at "
                f"{over.started.isoformat()} has ended",
                key=f"ended:{over.key}",
            )
        )
    predicted = {owner_key(p.owner): p for p in predictions}
    for key in sorted(set(storms) | set(predicted)):
        storm = storms.get(key)
        prediction = predicted.get(key)
        if storm is not None:
            storms[key] = _storm_alert(run, storm, tracked.rates.get(key, 0))
            owner, episode = storm.owner, storm.key
        elif prediction is not None:
            _predicted_alert(run, prediction)
            if not settings.act_on_prediction:
                continue
            owner, episode = prediction.owner, f"predicted:{key}"
        else:  # pragma: no cover - every key is a storm's or a prediction's
            continue
        reverted = False
        if settings.enabled(BreakerAction.REVERT_OUT_OF_BAND):
            reverted = _revert(run, owner, episode, (drifts or {}).get(key))
        if settings.enabled(BreakerAction.SCALE_TO_FIT) and not reverted and prediction:
            _scale(run, prediction)
    if settings.enabled(BreakerAction.PRUNE_FAILED):
        for storm in [*storms.values(), *tracked.ended]:
            _prune(run, storm.owner, pods)
    guard = timedelta(seconds=settings.revert_guard_seconds)
    kept = {k: at for k, at in run.reverted.items() if now - at < guard}
    next_state = BreakerState(
        storms=storms,
        reverted=kept,
        announced=_still_live(run.announced, [*storms, *predicted, *kept]),
    )
    return Plan(tuple(run.decisions), next_state)


def _still_live(announced: Iterable[str], owners: Iterable[str]) -> frozenset[str]:
    """The announced keys worth remembering: those about an owner still storming, still
    predicted or still under the loop guard. Every key names its owner (``owner_key``), and a
    key of an ended storm or a gone prediction can never be decided again, so the set stays as
    small as what is going on."""
    live = tuple(set(owners))
    return frozenset(key for key in announced if any(owner in key for owner in live))


def _storm_alert(run: _Round, storm: StormState, rate: int) -> StormState:
    if storm.alerted or not run.settings.enabled(BreakerAction.ALERT):
        return storm
    run.once(
        Decision(
            kind=DecisionKind.ALERT,
            owner=storm.owner,
            reason="KubemedicBreakerStorm",
            message=f"{storm.owner}: {rate} pods rejected by the kubelet at admission in the last "
            f"{run.settings.window_seconds:g}s (Failed-pod storm)",
            key=f"storm:{storm.key}",
        )
    )
    return replace(storm, alerted=True)


def _predicted_alert(run: _Round, prediction: Prediction) -> None:
    if not run.settings.enabled(BreakerAction.ALERT):
        return
    why = f"OutOf{prediction.limiting}" if prediction.limiting else "admission"
    if prediction.blockers:
        why = ", ".join(prediction.blockers)
    run.once(
        Decision(
            kind=DecisionKind.ALERT,
            owner=prediction.owner,
            reason="KubemedicBreakerPredicted",
            message=f"{prediction.owner} pins {prediction.replicas} replicas to node "
            f"{prediction.node}, which admits {prediction.fits}: the kubelet will reject "
            f"{prediction.excess} ({why}) and the controller will replace them without backoff",
            key=f"predicted:{owner_key(prediction.owner)}:{prediction.node}:{prediction.replicas}",
        )
    )


def _revert(run: _Round, owner: ObjectRef, episode: str, drift: ObjectDrift | None) -> bool:
    """Decide a revert; True when one was decided (``act`` or ``dry-run``) this round."""
    key = owner_key(owner)
    if drift is None:
        run.once(
            Decision(
                kind=DecisionKind.HOLD,
                owner=owner,
                reason="KubemedicBreakerNoDesiredState",
                message=f"{owner}: its desired state in Git is unknown, so nothing is out-of-band "
                "for certain; not reverted",
                key=f"no-desired:{episode}",
            )
        )
        return False
    revertible, in_git = out_of_band(drift, run.settings.revert_pointers)
    if in_git:
        paths = ", ".join(item.pointer for item in in_git)
        run.once(
            Decision(
                kind=DecisionKind.HOLD,
                owner=owner,
                reason="KubemedicBreakerInGit",
                message=f"{owner}: {paths} is set in Git, so it is not out-of-band; fix it in Git",
                key=f"in-git:{episode}:{paths}",
            )
        )
    if not revertible:
        return False
    last = run.reverted.get(key)
    guard = timedelta(seconds=run.settings.revert_guard_seconds)
    if last is not None and run.now - last < guard:
        run.once(
            Decision(
                kind=DecisionKind.ALERT,
                owner=owner,
                reason="KubemedicBreakerLoopGuard",
                message=f"{owner} was reverted at {last.isoformat()} and drifted again; not "
                f"reverted twice within {run.settings.revert_guard_seconds:g}s (someone or "
                "something keeps re-applying it)",
                key=f"loop-guard:{key}:{last.isoformat()}",
            )
        )
        return False
    paths = ", ".join(item.pointer for item in revertible)
    who = sorted({item.owner.manager for item in revertible if item.owner is not None})
    patch = replace(drift, drifts=tuple(revertible)).patch
    decided = run.act(
        BreakerAction.REVERT_OUT_OF_BAND,
        owner,
        message=f"{owner}: remove {paths}, added out-of-band by {', '.join(who)} and absent "
        "from Git",
        key=f"revert:{episode}:{drift.resource_version}",
        patch=tuple(patch),
        resource_version=drift.resource_version,
    )
    if not run.settings.dry_run:
        run.reverted[key] = run.now
    return decided or run.settings.dry_run


def _scale(run: _Round, prediction: Prediction) -> None:
    owner = prediction.owner
    if prediction.fits < 1:
        run.once(
            Decision(
                kind=DecisionKind.HOLD,
                owner=owner,
                reason="KubemedicBreakerCannotFit",
                message=f"{owner}: node {prediction.node} admits no replica; not scaled to 0",
                key=f"cannot-fit:{owner_key(owner)}:{prediction.node}",
            )
        )
        return
    run.act(
        BreakerAction.SCALE_TO_FIT,
        owner,
        message=f"{owner}: scale from {prediction.replicas} to {prediction.fits} replicas, "
        f"what node {prediction.node} admits",
        key=f"scale:{owner_key(owner)}:{prediction.replicas}->{prediction.fits}",
        replicas=prediction.fits,
        resource_version=prediction.resource_version,
    )


def _prune(run: _Round, owner: ObjectRef, pods: tuple[PodObservation, ...]) -> None:
    names = prune_candidates(
        pods, owner, keep=run.settings.keep_failed, batch=run.settings.prune_batch
    )
    if not names:
        return
    run.act(
        BreakerAction.PRUNE_FAILED,
        owner,
        message=f"{owner}: delete {len(names)} Failed pods rejected at admission, keeping "
        f"the newest {run.settings.keep_failed}",
        key=f"prune:{owner_key(owner)}:{names[0]}:{len(names)}",
        pods=names,
    )
