"""When a node is unhealthy: condition rules, the startup timeout, liveness from the Lease."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from kubemedic.model.selectors import LabelSelector
from kubemedic.repair.policy import health
from kubemedic.repair.policy.records import Condition
from kubemedic.repair.policy.settings import ConditionRule, PoolSettings, RepairSettings

from .builders import MINUTE, T0, node

SETTINGS = RepairSettings()


def test_ready_unknown_becomes_unhealthy_exactly_at_ten_minutes() -> None:
    down = node("w1", ready="Unknown", since=T0, reason="NodeStatusUnknown")
    before = health.judge(down, SETTINGS, T0 + 10 * MINUTE - timedelta(seconds=1))
    assert not before.unhealthy and before.due == T0 + 10 * MINUTE
    after = health.judge(down, SETTINGS, T0 + 10 * MINUTE)
    assert after.unhealthy
    assert after.trigger == "Ready=Unknown for 10m (NodeStatusUnknown)"
    assert after.since == T0


def test_the_cause_names_the_daemon_the_agent_reports() -> None:
    at = T0 + 11 * MINUTE
    kubelet = node("w1", ready="Unknown", since=T0, kubelet_unhealthy=True, now=at)
    runtime = node("w2", ready="False", since=T0, message="container runtime is down", now=at)
    other = node("w3", ready="False", since=T0, message="network plugin not ready", now=at)
    assert health.judge(kubelet, SETTINGS, at).cause == "kubelet"
    assert health.judge(runtime, SETTINGS, at).cause == "runtime"
    assert health.judge(other, SETTINGS, at).cause == "node"


def test_node_problem_detector_conditions_count_with_their_own_duration() -> None:
    sick = node("w1")
    conditions = dict(sick.conditions)
    conditions["KernelDeadlock"] = Condition("KernelDeadlock", "True", T0, T0, "DockerHung")
    sick = replace(sick, conditions=conditions)
    assert not health.judge(sick, SETTINGS, T0 + 4 * MINUTE).unhealthy
    verdict = health.judge(sick, SETTINGS, T0 + 5 * MINUTE)
    assert verdict.unhealthy and verdict.trigger.startswith("KernelDeadlock=True for 5m")


def test_a_pool_has_its_own_rules() -> None:
    fast = PoolSettings(
        "gpu",
        LabelSelector.parse("pool=gpu"),
        conditions=(ConditionRule("Ready", ("False", "Unknown"), timedelta(minutes=2)),),
    )
    settings = replace(SETTINGS, pools=(fast,))
    gpu = node("g1", ready="False", since=T0, pool="gpu")
    plain = node("w1", ready="False", since=T0)
    at = T0 + 3 * MINUTE
    assert health.judge(gpu, settings, at).unhealthy
    assert not health.judge(plain, settings, at).unhealthy


def test_a_new_node_gets_its_startup_timeout() -> None:
    fresh = node("new", ready="False", since=T0, created=T0)
    starting = health.judge(fresh, SETTINGS, T0 + 9 * MINUTE)
    assert starting.starting and not starting.unhealthy
    late = health.judge(fresh, SETTINGS, T0 + 10 * MINUTE)
    assert late.unhealthy and late.cause == "startup" and "startup timeout" in late.trigger


def test_a_fresh_lease_keeps_a_node_alive_whose_status_is_old() -> None:
    at = T0 + 30 * MINUTE
    quiet = replace(node("w1", heartbeat=T0, now=at), lease_renewed=at - timedelta(seconds=5))
    assert health.ready(quiet, at).status == "True"  # type: ignore[union-attr]
    silent = replace(quiet, lease_renewed=at - 20 * MINUTE)
    read = health.ready(silent, at)
    assert read is not None and read.status == "Unknown"
    assert read.since == at - 20 * MINUTE + health.GRACE


def test_the_agent_is_reachable_only_while_its_heartbeat_is_fresh() -> None:
    at = T0 + 30 * MINUTE
    assert health.agent_reachable(node("w1", agent_beat=at - MINUTE, now=at), SETTINGS, at)
    assert not health.agent_reachable(node("w1", agent_beat=at - 3 * MINUTE, now=at), SETTINGS, at)
    assert not health.agent_reachable(node("w1", agent=False, now=at), SETTINGS, at)


def test_the_rule_that_fired_first_names_the_trigger_while_the_node_stays_down() -> None:
    # The agent reports the kubelet down at once; Ready goes Unknown 50 s later.
    down = node("w1", ready="Unknown", since=T0 + timedelta(seconds=50), kubelet_unhealthy=True)
    conditions = dict(down.conditions)
    conditions["KubeletUnhealthy"] = Condition("KubeletUnhealthy", "True", T0, T0, "KubeletStopped")
    down = replace(down, conditions=conditions)
    for minutes in (10, 11, 30):
        verdict = health.judge(down, SETTINGS, T0 + minutes * MINUTE)
        assert verdict.trigger == "KubeletUnhealthy=True for 10m (KubeletStopped)", minutes
