"""Properties of the breaker policy over random pod histories and rounds."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta
from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.breaker.policy import (
    BreakerAction,
    BreakerSettings,
    BreakerState,
    Decision,
    DecisionKind,
    decide,
)
from tests.breaker.builders import T0, failed, pinned_drift, prediction

DRIFTS = {"default/Deployment/web": pinned_drift()}

histories = st.lists(st.integers(min_value=0, max_value=3000), min_size=0, max_size=80)
rounds = st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=12)


def run(
    created: list[int], steps: list[int], policy: BreakerSettings
) -> list[tuple[datetime, Decision]]:
    pods = [failed(i, at=T0 + timedelta(seconds=s)) for i, s in enumerate(sorted(created))]
    state, now = BreakerState(), T0
    out: list[tuple[datetime, Decision]] = []
    for step in steps:
        now += timedelta(seconds=step)
        seen = [p for p in pods if p.created is not None and p.created <= now]
        plan = decide(
            state, now=now, pods=seen, predictions=[prediction()], drifts=DRIFTS, settings=policy
        )
        state = plan.state
        out.extend((now, d) for d in plan.decisions)
    return out


@settings(max_examples=60, deadline=None)
@given(histories, rounds, st.integers(min_value=0, max_value=10))
def test_dry_run_never_acts(created: list[int], steps: list[int], keep: int) -> None:
    policy = BreakerSettings(actions=frozenset(BreakerAction), keep_failed=keep)
    assert all(d.kind is not DecisionKind.ACT for _, d in run(created, steps, policy))


@settings(max_examples=60, deadline=None)
@given(histories, rounds, st.integers(min_value=0, max_value=10), st.integers(1, 20))
def test_live_invariants(created: list[int], steps: list[int], keep: int, batch: int) -> None:
    policy = BreakerSettings(
        actions=frozenset(BreakerAction),
        dry_run=False,
        keep_failed=keep,
        prune_batch=batch,
        revert_guard_seconds=900,
    )
    decisions = run(created, steps, policy)
    reverts = [now for now, d in decisions if d.action is BreakerAction.REVERT_OUT_OF_BAND]
    assert all(b - a >= timedelta(seconds=900) for a, b in pairwise(reverts))
    alerts = Counter(d.key for _, d in decisions if d.reason == "KubemedicBreakerStorm")
    assert all(count == 1 for count in alerts.values())
    for now, d in decisions:
        if d.action is BreakerAction.PRUNE_FAILED:
            existing = sum(1 for s in created if T0 + timedelta(seconds=s) <= now)
            assert existing - len(d.pods) >= keep
            assert len(d.pods) <= batch
