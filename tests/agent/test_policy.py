"""The agent's pure decisions: unhealthy after ``failures`` probes, restart only past the unit's
cooldown and the back-off, give up after ``max_restarts``, start over after ``stable`` or a new
boot; and the properties that hold for any sequence of probes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.agent.host import Probe, UnitStatus
from kubemedic.agent.policy import (
    KUBELET,
    RUNTIME,
    DaemonState,
    backoff_delay,
    decide,
    next_check,
    observe,
)
from kubemedic.model import agentcontract as contract

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
BAD = Probe(False, "timed out after 10s")
OK = Probe(True, "ok")
LONG_UP = UnitStatus("kubelet.service", "active", "running", started_at=T0 - timedelta(hours=1))


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_unhealthy_only_after_the_failures_in_a_row() -> None:
    rules = replace(KUBELET, failures=3)
    state = DaemonState()
    for n in range(2):
        state = observe(rules, state, BAD, at(10 * n))
        assert not state.unhealthy
    state = observe(rules, state, BAD, at(20))
    assert state.unhealthy and state.failing_since == at(20)
    assert not observe(rules, state, OK, at(30)).unhealthy


def test_healthy_reports_false_and_stopped_or_hung_true() -> None:
    healthy = decide(KUBELET, observe(KUBELET, DaemonState(), OK, T0), LONG_UP, T0)
    assert (healthy.act, healthy.condition.status, healthy.condition.reason) == (
        "none",
        "False",
        "KubeletHealthy",
    )
    state = observe(KUBELET, DaemonState(), Probe(False, "connection refused"), T0)
    stopped = decide(KUBELET, state, replace(LONG_UP, active_state="failed"), T0, self_repair=False)
    assert (stopped.condition.status, stopped.condition.reason) == ("True", "KubeletStopped")
    hung = decide(KUBELET, state, LONG_UP, T0, self_repair=False)
    assert hung.condition.reason == "KubeletHung"
    runtime = decide(RUNTIME, observe(RUNTIME, DaemonState(), BAD, T0), None, T0)
    assert runtime.condition.type == contract.RUNTIME_UNHEALTHY
    assert runtime.condition.reason == "ContainerRuntimeHung"


def test_no_restart_within_the_units_cooldown() -> None:
    state = observe(KUBELET, DaemonState(), BAD, T0)
    young = replace(LONG_UP, started_at=T0 - timedelta(seconds=59))
    verdict = decide(KUBELET, state, young, T0)
    assert verdict.act == "none" and "cooldown" in verdict.reason
    old = replace(LONG_UP, started_at=T0 - timedelta(seconds=60))
    assert decide(KUBELET, state, old, T0).act == "restart"
    # InactiveExitTimestamp missing: ActiveEnterTimestamp is the start
    only_active = UnitStatus("kubelet.service", "active", active_since=T0 - timedelta(seconds=5))
    assert decide(KUBELET, state, only_active, T0).act == "none"


def test_back_off_doubles_up_to_its_cap() -> None:
    assert backoff_delay(KUBELET, 0) == timedelta(0)
    assert [backoff_delay(KUBELET, n).total_seconds() for n in (1, 2, 3, 4)] == [60, 120, 240, 480]
    assert backoff_delay(KUBELET, 30) == KUBELET.max_backoff


def test_restarts_then_gives_up_and_stays_given_up() -> None:
    rules = KUBELET
    state = DaemonState()
    acts: list[tuple[float, str]] = []
    for n in range(1, 200):
        now = at(10 * n)
        state = observe(rules, state, BAD, now)
        unit = replace(LONG_UP, started_at=now - timedelta(hours=1))
        verdict = decide(rules, state, unit, now)
        state = verdict.state
        if verdict.act != "none":
            acts.append((10 * n, verdict.act))
    assert [a for _, a in acts] == ["restart", "restart", "restart", "give-up"]
    times = [t for t, _ in acts]
    assert times[1] - times[0] >= 60 and times[2] - times[1] >= 120 and times[3] - times[2] >= 240
    gave = decide(rules, state, LONG_UP, at(5000))
    assert gave.act == "none" and gave.condition.reason == contract.KUBELET_GAVE_UP


def test_stable_health_or_a_new_boot_starts_over() -> None:
    given_up = DaemonState(failing_since=T0, restarts=(T0, T0, T0), gave_up=True, boot_id="boot-1")
    brief = observe(KUBELET, given_up, OK, at(10), boot_id="boot-1")
    assert brief.gave_up and len(brief.restarts) == 3  # healthy, not yet for long
    later = observe(KUBELET, brief, OK, at(10) + KUBELET.stable, boot_id="boot-1")
    assert not later.gave_up and later.restarts == ()
    rebooted = observe(KUBELET, given_up, BAD, at(20), boot_id="boot-2")
    assert not rebooted.gave_up and rebooted.restarts == () and rebooted.unhealthy


def test_checks_start_after_the_delay_then_every_period() -> None:
    assert next_check(KUBELET, T0, None) == T0 + timedelta(seconds=120)
    assert next_check(KUBELET, T0, T0 + timedelta(seconds=130)) == T0 + timedelta(seconds=140)
    assert next_check(RUNTIME, T0, None) == T0 + timedelta(seconds=30)


@settings(max_examples=200, deadline=None)
@given(
    probes=st.lists(st.booleans(), min_size=1, max_size=300),
    step=st.integers(min_value=1, max_value=120),
    max_restarts=st.integers(min_value=0, max_value=5),
)
def test_properties_for_any_probe_sequence(
    probes: list[bool], step: int, max_restarts: int
) -> None:
    """Never more restarts than the limit between two stable healthy spells, never two restarts
    closer than the back-off, never a restart of a healthy daemon or within the cooldown."""
    rules = replace(KUBELET, max_restarts=max_restarts)
    state = DaemonState(boot_id="b")
    started = T0 - timedelta(hours=1)
    restarts: list[datetime] = []
    for n, healthy in enumerate(probes):
        now = at(step * n)
        before = state
        state = observe(rules, state, OK if healthy else BAD, now, boot_id="b")
        if not state.restarts:
            restarts = []
        unit = UnitStatus("kubelet.service", "active", started_at=started)
        verdict = decide(rules, state, unit, now)
        state = verdict.state
        if verdict.act == "restart":
            assert not healthy
            assert now - started >= rules.cooldown
            if restarts:
                assert now - restarts[-1] >= backoff_delay(rules, len(restarts))
            restarts.append(now)
            started = now
            assert len(restarts) <= max_restarts
        if verdict.act == "give-up":
            assert len(state.restarts) >= max_restarts and not before.gave_up
        assert verdict.condition.status == ("True" if state.unhealthy else "False")
