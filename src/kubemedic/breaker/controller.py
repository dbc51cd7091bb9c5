"""The storm breaker inside ``kubemedic run`` (leader only): observe, predict, decide, act,
announce, record.

Each round, every ``intervalSeconds`` of the cluster's clock (the run's clock, as node repair):

1. **observe**: a ``ClusterView`` of the run's caches gives the pods with their outermost owner
   (``policy.observe``) and the pinned templates that cannot fit (``policy.predict``);
2. **desired state**: for each owner storming, about to storm (churn at ``startPods``) or
   predicted with ``actOnPrediction``, when ``revert-out-of-band`` is on, its drift against Git
   (:class:`kubemedic.breaker.desired.DesiredStates`: the Argo CD Application or Flux
   Kustomization in the cluster, the source read once per revision);
3. **decide**: ``policy.decide`` (pure);
4. **act and announce**: each ``act`` decision goes to the executor; a revert refused because the
   object changed (``conflict``) is forgotten, so the loop guard does not count it and the next
   round decides again on the new object; every decision is an Event on its owner;
5. **record**: the state and the decisions with their outcomes, in one archive transaction.

The state lives in the archive (``breaker_state``), so a restarted or newly elected replica
neither announces a storm again nor reverts an owner twice within the loop guard.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.breaker import codec
from kubemedic.breaker.desired import DesiredStates
from kubemedic.breaker.executing import Executor, Outcome
from kubemedic.breaker.policy import (
    BreakerAction,
    BreakerState,
    Decision,
    DecisionKind,
    Plan,
    decide,
    forget_revert,
    observe,
    owner_key,
    predict,
)
from kubemedic.breaker.policy.detecting import churn
from kubemedic.breaker.settings import BreakerRun
from kubemedic.drift.engine import ObjectDrift
from kubemedic.drift.rules import DriftRules
from kubemedic.kube.api import Api, ApiError, ConnectionLost
from kubemedic.kube.clock import Clock, sleep_or_stop
from kubemedic.kube.events import involved
from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView
from kubemedic.store.db import Archive

__all__ = ["Controller", "Round", "build"]

log = logging.getLogger("kubemedic.breaker")


@dataclass
class Round:
    """What one round did (for logs and tests)."""

    at: datetime
    plan: Plan
    outcomes: list[tuple[Decision, Outcome]] = field(default_factory=list)


class Controller:
    """One cluster's storm breaker."""

    def __init__(
        self,
        *,
        run: BreakerRun,
        cluster: str,
        clock: Clock,
        bodies: Callable[[], Iterable[Mapping[str, Any]]],
        hands: Executor,
        desired: DesiredStates,
        archive: Archive,
    ) -> None:
        self.run_settings = run
        self.settings = run.settings
        self.cluster = cluster
        self.clock = clock
        self.bodies = bodies
        self.hands = hands
        self.desired = desired
        self.archive = archive
        self.state = BreakerState()
        self.rounds = 0
        self._saved = ""
        #: Called with each finished round (the daemon's metrics); must not raise or block.
        self.observers: list[Callable[[Round], None]] = []

    async def load(self) -> None:
        body = await asyncio.to_thread(self.archive.load_breaker, self.cluster)
        self.state = codec.state_from_json(body)
        self._saved = json.dumps(codec.state_to_json(self.state), sort_keys=True)
        if self.state.storms:
            log.info("resuming %d storms: %s", len(self.state.storms), ", ".join(self.state.storms))

    async def run(self, stop: asyncio.Event) -> None:
        await self.load()
        s = self.settings
        mode = (
            "dry run" if s.dry_run else "acting: " + ", ".join(sorted(a.value for a in s.actions))
        )
        log.info("storm breaker on (%s)", mode)
        while not stop.is_set():
            try:
                await self.round()
            except (ApiError, ConnectionLost) as error:
                log.warning("breaker round failed: %s", error)
            await sleep_or_stop(self.clock.sleep(self.run_settings.interval_seconds), stop)

    def _wanted(self, view: ClusterView, pods: Iterable[Any], now: datetime) -> list[ObjectRef]:
        """The owners whose drift the round needs (see the module docstring)."""
        s = self.settings
        if not s.enabled(BreakerAction.REVERT_OUT_OF_BAND):
            return []
        owners = [storm.owner for storm in self.state.storms.values()]
        rates = churn(pods, now=now, window_seconds=s.window_seconds)
        owners += [owner for owner, count in rates.values() if count >= s.start_pods]
        if s.act_on_prediction:
            owners += [p.owner for p in predict(view)]
        return list(dict.fromkeys(owners))

    async def round(self) -> Round:
        """Observe, decide, act, announce and record once."""
        now = self.clock.now()
        view = ClusterView.build(list(self.bodies()), at=now)
        pods = observe(view, extra_reasons=self.settings.extra_reasons)
        predictions = predict(view)
        wanted = self._wanted(view, pods, now)
        drifts: dict[str, ObjectDrift | None] = {}
        if wanted:
            live = {str(o): body for o in wanted if (body := _body(view, o)) is not None}
            found = await self.desired.drifts(wanted, live, now=now)
            drifts = {owner_key(o): d for o, d in found.items()}
        plan = decide(
            self.state,
            now=now,
            pods=pods,
            predictions=predictions,
            drifts=drifts,
            settings=self.settings,
        )
        done = Round(now, plan)
        state = plan.state
        uids = {
            (str(p["metadata"].get("namespace") or ""), str(p["metadata"].get("name") or "")): str(
                p["metadata"].get("uid") or ""
            )
            for p in view.pods
        }
        records: list[dict[str, Any]] = []
        for decision in plan.decisions:
            outcome: Outcome | None = None
            if decision.kind in (DecisionKind.ACT, DecisionKind.DRY_RUN):
                namespace = decision.owner.namespace or ""
                outcome = await self.hands.execute(
                    decision,
                    pod_uids={n: uids.get((namespace, n), "") for n in decision.pods},
                )
                done.outcomes.append((decision, outcome))
                if (
                    outcome.word == "conflict"
                    and decision.action is BreakerAction.REVERT_OUT_OF_BAND
                ):
                    state = forget_revert(state, decision.owner)
            _log(decision, outcome)
            await self.hands.announce(decision, _involved(view, decision.owner), outcome)
            records.append(
                codec.decision_to_json(decision, outcome=str(outcome) if outcome else "")
            )
        self.state = state
        saved = json.dumps(codec.state_to_json(state), sort_keys=True)
        if records or saved != self._saved:
            await asyncio.to_thread(
                self.archive.save_breaker_round,
                self.cluster,
                state=codec.state_to_json(state),
                decisions=records,
                at=now.timestamp(),
            )
            self._saved = saved
        self.rounds += 1
        for observer in self.observers:
            observer(done)
        return done


def _body(view: ClusterView, owner: ObjectRef) -> Mapping[str, Any] | None:
    return view.workload(owner.kind, owner.namespace, owner.name)


def _involved(view: ClusterView, owner: ObjectRef) -> dict[str, Any]:
    body = _body(view, owner)
    if body is None:
        ref: dict[str, Any] = {
            "apiVersion": owner.api_version,
            "kind": owner.kind,
            "name": owner.name,
        }
        if owner.namespace:
            ref["namespace"] = owner.namespace
        return ref
    ref = involved(body)
    ref["apiVersion"] = str(body.get("apiVersion") or owner.api_version)
    ref["kind"] = str(body.get("kind") or owner.kind)
    ref.pop("resourceVersion", None)
    return ref


def _log(decision: Decision, outcome: Outcome | None) -> None:
    level = logging.INFO
    if decision.kind in (DecisionKind.ALERT, DecisionKind.HOLD) or (
        outcome is not None and not outcome.ok
    ):
        level = logging.WARNING
    said = f" ({outcome})" if outcome is not None else ""
    log.log(level, "%s %s: %s%s", decision.reason, decision.owner, decision.message, said)


def build(
    *,
    api: Api,
    archive: Archive,
    run: BreakerRun,
    cluster: str,
    clock: Clock,
    identity: str,
    bodies: Callable[[], Iterable[Mapping[str, Any]]],
    rules: DriftRules | None = None,
) -> Controller:
    """The controller with an executor and desired-state lookups over ``api``."""
    return Controller(
        run=run,
        cluster=cluster,
        clock=clock,
        bodies=bodies,
        hands=Executor(api=api, identity=identity, now=clock.now),
        desired=DesiredStates(api, rules=rules),
        archive=archive,
    )
