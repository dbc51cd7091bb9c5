"""The breaker policy: detection with hysteresis, prediction, and each action's guards."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kubemedic.breaker.policy import (
    BreakerAction,
    BreakerSettings,
    BreakerSettingsError,
    BreakerState,
    DecisionKind,
    Plan,
    decide,
    forget_revert,
    observe,
    predict,
    prune_candidates,
)
from kubemedic.model import objects
from kubemedic.model.view import ClusterView
from tests.breaker.builders import OWNER, T0, burst, failed, pinned_drift, prediction
from tests.factories import container, deployment, node, pod, replicaset, stamp

SECOND = timedelta(seconds=1)
ALL = frozenset(BreakerAction)


def reasons(plan: Plan) -> list[str]:
    return [d.reason for d in plan.decisions]


def live(settings: BreakerSettings) -> BreakerSettings:
    return BreakerSettings(**{**_fields(settings), "dry_run": False})


def _fields(settings: BreakerSettings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in settings.__slots__}


def test_a_burst_over_the_threshold_starts_one_storm_and_one_alert() -> None:
    pods = burst(12, start=T0, every=5 * SECOND)
    now = T0 + 60 * SECOND
    plan = decide(BreakerState(), now=now, pods=pods)
    assert reasons(plan) == ["KubemedicBreakerStorm"]
    assert "12 pods rejected" in plan.decisions[0].message
    more = pods + burst(10, start=now, every=5 * SECOND, first=100)
    again = decide(plan.state, now=now + 50 * SECOND, pods=more)
    assert again.decisions == ()
    assert list(again.state.storms) == ["default/Deployment/web"]


def test_below_the_threshold_or_outside_the_window_is_no_storm() -> None:
    slow = burst(12, start=T0, every=15 * SECOND)  # 8 in any 2 minutes
    assert decide(BreakerState(), now=T0 + 180 * SECOND, pods=slow).state.storms == {}
    ready = [p for p in burst(12, start=T0, every=SECOND)]
    running = [
        type(p)(**{**{k: getattr(p, k) for k in p.__slots__}, "rejected": False}) for p in ready
    ]
    assert decide(BreakerState(), now=T0 + 20 * SECOND, pods=running).state.storms == {}


def test_hysteresis_a_storm_ends_after_staying_calm_and_flickers_do_not_split_it() -> None:
    settings = BreakerSettings(window_seconds=120, start_pods=10, end_pods=2, calm_seconds=300)
    pods = burst(10, start=T0, every=SECOND)
    plan = decide(BreakerState(), now=T0 + 10 * SECOND, pods=pods, settings=settings)
    [storm] = plan.state.storms.values()
    # Between the thresholds (5 in the window): the storm goes on, not calm.
    later = T0 + 400 * SECOND
    pods += burst(5, start=later - 60 * SECOND, every=SECOND, first=50)
    plan = decide(plan.state, now=later, pods=pods, settings=settings)
    assert plan.state.storms["default/Deployment/web"].calm_since is None
    # Calm from 600 s; a flicker of 3 pods at 700 s restarts the calm clock.
    plan = decide(plan.state, now=T0 + 600 * SECOND, pods=pods, settings=settings)
    assert plan.state.storms["default/Deployment/web"].calm_since == T0 + 600 * SECOND
    pods += burst(3, start=T0 + 690 * SECOND, every=SECOND, first=80)
    plan = decide(plan.state, now=T0 + 700 * SECOND, pods=pods, settings=settings)
    assert plan.state.storms["default/Deployment/web"].calm_since is None
    plan = decide(plan.state, now=T0 + 900 * SECOND, pods=pods, settings=settings)
    assert plan.decisions == ()
    plan = decide(plan.state, now=T0 + 1200 * SECOND, pods=pods, settings=settings)
    assert reasons(plan) == ["KubemedicBreakerStormEnded"]
    assert plan.state.storms == {}
    assert plan.decisions[0].key == f"ended:{storm.key}"


def test_dry_run_by_default_reports_what_it_would_do_once_and_acts_on_nothing() -> None:
    settings = BreakerSettings(actions=ALL)
    pods = burst(20, start=T0, every=SECOND)
    drifts = {"default/Deployment/web": pinned_drift()}
    state = BreakerState()
    seen: list[str] = []
    for step in range(3):
        plan = decide(
            state, now=T0 + (20 + step) * SECOND, pods=pods, drifts=drifts, settings=settings
        )
        state = plan.state
        assert plan.of(DecisionKind.ACT) == []
        seen += reasons(plan)
    assert seen == [
        "KubemedicBreakerStorm",
        "KubemedicBreakerRevertOutOfBand",
        "KubemedicBreakerPruneFailed",
    ]
    assert state.reverted == {}


def test_revert_removes_the_kubectl_edit_pin_with_a_resource_version_guard() -> None:
    settings = live(BreakerSettings(actions=ALL))
    pods = burst(20, start=T0, every=SECOND)
    plan = decide(
        BreakerState(),
        now=T0 + 20 * SECOND,
        pods=pods,
        predictions=[prediction()],
        drifts={"default/Deployment/web": pinned_drift()},
        settings=settings,
    )
    [revert] = [
        d for d in plan.of(DecisionKind.ACT) if d.action is BreakerAction.REVERT_OUT_OF_BAND
    ]
    assert revert.reason == "KubemedicBreakerRevertOutOfBand"
    assert list(revert.patch) == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "100"},
        {"op": "remove", "path": "/spec/template/spec/nodeName"},
    ]
    assert "kubectl-edit" in revert.message
    # A revert was decided: no scale-to-fit in the same round.
    assert all(d.action is not BreakerAction.SCALE_TO_FIT for d in plan.decisions)
    assert plan.state.reverted == {"default/Deployment/web": T0 + 20 * SECOND}


def test_loop_guard_alerts_once_instead_of_reverting_twice_within_the_window() -> None:
    settings = live(BreakerSettings(actions=frozenset({BreakerAction.REVERT_OUT_OF_BAND})))
    pods = burst(20, start=T0, every=SECOND)
    drifts = {"default/Deployment/web": pinned_drift()}
    plan = decide(BreakerState(), now=T0 + 20 * SECOND, pods=pods, drifts=drifts, settings=settings)
    assert reasons(plan) == ["KubemedicBreakerRevertOutOfBand"]
    for step in (30, 40):
        plan = decide(
            plan.state, now=T0 + step * SECOND, pods=pods, drifts=drifts, settings=settings
        )
        assert reasons(plan) == (["KubemedicBreakerLoopGuard"] if step == 30 else [])
    after = T0 + (20 + 3600) * SECOND
    plan = decide(
        plan.state,
        now=after,
        pods=burst(20, start=after - 20 * SECOND, every=SECOND),
        drifts=drifts,
        settings=settings,
    )
    assert "KubemedicBreakerRevertOutOfBand" in reasons(plan)


def test_a_failed_revert_does_not_count_for_the_loop_guard() -> None:
    state = BreakerState(reverted={"default/Deployment/web": T0})
    assert forget_revert(state, OWNER).reverted == {}


def test_a_field_in_git_is_never_out_of_band() -> None:
    settings = live(BreakerSettings(actions=ALL - {BreakerAction.PRUNE_FAILED}))
    drifts = {"default/Deployment/web": pinned_drift(in_git=True)}
    plan = decide(
        BreakerState(),
        now=T0 + 20 * SECOND,
        pods=burst(20, start=T0, every=SECOND),
        drifts=drifts,
        settings=settings,
    )
    assert plan.of(DecisionKind.ACT) == []
    assert reasons(plan) == ["KubemedicBreakerStorm", "KubemedicBreakerInGit"]


def test_a_field_a_controller_wrote_is_not_reverted_and_an_unknown_desired_state_holds() -> None:
    settings = live(BreakerSettings(actions=frozenset({BreakerAction.REVERT_OUT_OF_BAND})))
    pods = burst(20, start=T0, every=SECOND)
    drift = pinned_drift(manager="some-operator")
    plan = decide(
        BreakerState(),
        now=T0 + 20 * SECOND,
        pods=pods,
        drifts={"default/Deployment/web": drift},
        settings=settings,
    )
    assert plan.decisions == ()
    plan = decide(BreakerState(), now=T0 + 20 * SECOND, pods=pods, settings=settings)
    assert reasons(plan) == ["KubemedicBreakerNoDesiredState"]


def test_scale_to_fit_scales_to_what_the_node_admits_never_to_zero() -> None:
    settings = live(BreakerSettings(actions=frozenset({BreakerAction.SCALE_TO_FIT})))
    pods = burst(20, start=T0, every=SECOND)
    plan = decide(
        BreakerState(),
        now=T0 + 20 * SECOND,
        pods=pods,
        predictions=[prediction()],
        settings=settings,
    )
    [scale] = plan.decisions
    assert (scale.kind, scale.replicas, scale.resource_version) == (DecisionKind.ACT, 8, "100")
    plan = decide(
        BreakerState(),
        now=T0 + 20 * SECOND,
        pods=pods,
        predictions=[prediction(fits=0)],
        settings=settings,
    )
    assert reasons(plan) == ["KubemedicBreakerCannotFit"]


def test_a_prediction_alerts_once_before_any_pod_fails_and_acts_only_when_told() -> None:
    settings = live(BreakerSettings(actions=ALL))
    drifts = {"default/Deployment/web": pinned_drift()}
    plan = decide(
        BreakerState(),
        now=T0,
        pods=[],
        predictions=[prediction()],
        drifts=drifts,
        settings=settings,
    )
    assert reasons(plan) == ["KubemedicBreakerPredicted"]
    assert "admits 8" in plan.decisions[0].message
    again = decide(
        plan.state,
        now=T0 + SECOND,
        pods=[],
        predictions=[prediction()],
        drifts=drifts,
        settings=settings,
    )
    assert again.decisions == ()
    eager = live(BreakerSettings(actions=ALL, act_on_prediction=True))
    plan = decide(
        BreakerState(), now=T0, pods=[], predictions=[prediction()], drifts=drifts, settings=eager
    )
    assert reasons(plan) == ["KubemedicBreakerPredicted", "KubemedicBreakerRevertOutOfBand"]


def test_prune_keeps_the_newest_and_deletes_the_oldest_in_batches() -> None:
    pods = burst(30, start=T0, every=SECOND)
    names = prune_candidates(pods, OWNER, keep=5, batch=10)
    assert names == tuple(p.name for p in pods[:10])
    assert len(prune_candidates(pods, OWNER, keep=5, batch=100)) == 25
    assert prune_candidates(pods[:5], OWNER, keep=5, batch=100) == ()
    other = [failed(1, at=T0, owner=OWNER.__class__("Deployment", "api", "default", "apps/v1"))]
    assert prune_candidates(other, OWNER, keep=0, batch=10) == ()


@pytest.mark.parametrize(
    "options",
    [{"start_pods": 0}, {"end_pods": 10}, {"window_seconds": 0}, {"keep_failed": -1}],
)
def test_impossible_settings_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises(BreakerSettingsError):
        BreakerSettings(**options)


# -- from a ClusterView ------------------------------------------------------------------------

NOW = objects.parse_time(stamp(timedelta(minutes=30)))


def test_observe_and_predict_read_incident_1_through_the_checks() -> None:
    resources = {"cpu": "100m", "memory": "800Mi"}
    app = deployment(
        "nginx-deployment",
        replicas=12,
        node_name="core-2",
        containers=[container("nginx", requests=resources, limits=resources)],
    )
    rs = replicaset(app)
    rejected = pod("nginx-deployment-5d8f7c9b4-a", owner=rs, node_name="core-2")
    rejected["status"] = {
        "phase": "Failed",
        "reason": "OutOfmemory",
        "message": "Pod was rejected: Node didn't have enough resource: memory",
    }
    view = ClusterView.build(
        [node("core-2", cpu="8", memory="8027168Ki"), app, rs, rejected], at=NOW
    )
    [seen] = observe(view)
    assert (seen.owner.kind, seen.owner.name, seen.rejected, seen.reason) == (
        "Deployment",
        "nginx-deployment",
        True,
        "OutOfmemory",
    )
    [predicted] = predict(view)
    assert (predicted.node, predicted.replicas, predicted.fits, predicted.limiting) == (
        "core-2",
        12,
        9,
        "memory",
    )
