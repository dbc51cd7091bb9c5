"""``oom-killed``: OOM-killed containers per workload, and OOM kills reported by nodes."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.oom import OomConfig, oom_killed
from kubemedic.checks.registry import run_checks
from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView
from tests.factories import (
    container,
    event,
    node,
    pod,
    pod_metrics,
    stamp,
)
from tests.incident3 import CORE_POOL, PROMETHEUS_SERVER, prometheus

PROM = PROMETHEUS_SERVER


def terminated(
    name: str,
    *,
    restarts: int = 3,
    reason: str = "OOMKilled",
    exit_code: int = 137,
    finished: timedelta = timedelta(minutes=5),
    where: str = "lastState",
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": name,
        "ready": where == "lastState",
        "restartCount": restarts,
        "image": f"registry.example/{name}:1.0",
        "state": {"running": {"startedAt": stamp(finished + timedelta(seconds=10))}},
    }
    record = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": stamp(finished - timedelta(hours=1)),
        "finishedAt": stamp(finished),
    }
    if where == "state":
        status["state"] = {"terminated": record}
    else:
        status["lastState"] = {"terminated": record}
    return status


def run(bodies: list[Any], config: OomConfig | None = None) -> list[Finding]:
    return oom_killed(ClusterView.build(bodies), config or OomConfig())


def test_prometheus_oom_kill_reports_limit_request_usage_and_restarts() -> None:
    bodies = [node("core-2", labels=CORE_POOL)]
    bodies += prometheus(terminated(PROM, restarts=3))
    bodies.append(pod_metrics(bodies[-1], {PROM: {"memory": "21Gi"}}, at=timedelta(minutes=6)))
    [finding] = run(bodies)
    assert finding.severity is Severity.WARNING
    assert finding.object == ObjectRef("Deployment", PROM, "support", "apps/v1")
    assert finding.cause == f"oom:support/Deployment/{PROM}/{PROM}"
    evidence = finding.evidence
    assert evidence["pod"] == f"support/{PROM}-5d8f7c9b4-q2x7z"
    assert evidence["owner"] == f"Deployment support/{PROM}"
    assert (evidence["container"], evidence["node"]) == (PROM, "core-2")
    assert (evidence["restartCount"], evidence["exitCode"], evidence["reason"]) == (
        3,
        137,
        "OOMKilled",
    )
    assert evidence["finishedAt"] == "2023-02-01T19:05:00Z"
    assert (evidence["memoryLimit"], evidence["memoryRequest"]) == ("22Gi", "20Gi")
    assert (evidence["usage"], evidence["usagePercentOfLimit"]) == ("21Gi", 95.5)
    assert evidence["likelyOOM"] is False
    assert finding.message == (
        f"Container {PROM} of Deployment support/{PROM} was OOM-killed 1 time(s) across 1 pod(s) "
        f"(memory limit 22Gi, request 20Gi); support/{PROM}-5d8f7c9b4-q2x7z has restarted 3 times."
    )
    json.dumps(finding.to_json())


def test_replicas_of_one_workload_are_one_finding_listing_pods_latest_first() -> None:
    first = prometheus(terminated(PROM, finished=timedelta(minutes=2)), suffix="aaaaa")
    second = prometheus(terminated(PROM, finished=timedelta(minutes=9)), suffix="bbbbb")
    [finding] = run(first + second[2:])
    assert finding.evidence["kills"] == 2
    assert [p["pod"] for p in finding.evidence["pods"]] == [
        f"support/{PROM}-5d8f7c9b4-bbbbb",
        f"support/{PROM}-5d8f7c9b4-aaaaa",
    ]
    assert finding.evidence["pod"] == f"support/{PROM}-5d8f7c9b4-bbbbb"
    assert finding.first_seen.isoformat() == "2023-02-01T19:02:00+00:00"
    assert finding.last_seen.isoformat() == "2023-02-01T19:09:00+00:00"


def test_kill_loop_at_five_restarts_is_critical() -> None:
    [finding] = run(prometheus(terminated(PROM, restarts=5)))
    assert finding.severity is Severity.CRITICAL
    [relaxed] = run(prometheus(terminated(PROM, restarts=5)), OomConfig(critical_restarts=6))
    assert relaxed.severity is Severity.WARNING


def test_oom_kill_of_critical_pod_is_critical() -> None:
    by_class = run(prometheus(terminated(PROM, restarts=1), priority_class="system-node-critical"))
    by_value = run(prometheus(terminated(PROM, restarts=1), priority=1_000_000_000))
    assert [f.severity for f in by_class + by_value] == [Severity.CRITICAL, Severity.CRITICAL]
    assert by_value[0].evidence["critical"] == "priority 1000000000 >= 1000000000"
    assert run(prometheus(terminated(PROM, restarts=1)))[0].evidence["critical"] is None


def test_current_terminated_state_and_previous_kill_both_count() -> None:
    status = terminated(PROM, where="state", finished=timedelta(minutes=8))
    status["lastState"] = terminated(PROM, finished=timedelta(minutes=4))["lastState"]
    [finding] = run(prometheus(status))
    assert finding.evidence["kills"] == 2
    assert finding.evidence["finishedAt"] == "2023-02-01T19:08:00Z"


def test_init_container_oom_is_reported_under_its_name() -> None:
    body = pod(
        "migrate-once",
        namespace="db",
        init_containers=[container("migrate", limits={"memory": "256Mi"})],
        phase="Pending",
    )
    body["status"]["initContainerStatuses"] = [terminated("migrate", restarts=2)]
    [finding] = run([body])
    assert finding.object == ObjectRef("Pod", "migrate-once", "db")
    assert finding.evidence["container"] == "migrate"
    assert finding.evidence["memoryLimit"] == "256Mi"
    assert finding.cause == "oom:db/Pod/migrate-once/migrate"


def test_pod_level_memory_limit_is_used_when_the_container_sets_none() -> None:
    body = pod(
        "solo",
        containers=[container("app")],
        container_statuses=[terminated("app", reason="Error")],
    )
    body["spec"]["resources"] = {"limits": {"memory": "1Gi"}}
    [finding] = run([body])
    assert finding.evidence["memoryLimit"] == "1Gi"
    assert finding.evidence["likelyOOM"] is True


# -- exit code 137 heuristic ---------------------------------------------------------------------


def test_sigkill_with_memory_limit_is_labelled_likely_oom() -> None:
    [finding] = run(prometheus(terminated(PROM, reason="Error", restarts=2)))
    assert finding.evidence["likelyOOM"] is True
    assert finding.evidence["reason"] == "Error"
    assert "killed by SIGKILL (exit code 137) 1 time(s) with a memory limit 22Gi" in (
        finding.message
    )
    assert "likely OOM-killed" in finding.message


def test_sigkill_after_failed_liveness_probe_is_not_oom() -> None:
    bodies = prometheus(terminated(PROM, reason="Error"))
    bodies.append(
        event(
            involved=bodies[-1],
            reason="Killing",
            message=f"Container {PROM} failed liveness probe, will be restarted",
            type="Normal",
        )
    )
    assert run(bodies) == []


def test_sigkill_without_memory_limit_or_with_heuristic_off_is_silent() -> None:
    unlimited = pod(
        "free",
        containers=[container("app")],
        container_statuses=[terminated("app", reason="Error")],
    )
    assert run([unlimited]) == []
    assert run(prometheus(terminated(PROM, reason="Error")), OomConfig(include_likely=False)) == []


# -- negatives and bad input -----------------------------------------------------------------------


def test_healthy_pods_and_ordinary_exit_codes_are_silent() -> None:
    bodies: list[Any] = [node("core-2"), *prometheus()]
    for code, reason in (
        (0, "Completed"),
        (1, "Error"),
        (143, "Error"),
        (137, "ContainerCannotRun"),
    ):
        bodies.append(
            pod(
                f"exit-{code}-{reason.lower()}",
                containers=[container("app", limits={"memory": "1Gi"})],
                container_statuses=[terminated("app", reason=reason, exit_code=code)],
            )
        )
    assert run(bodies) == []


def test_statuses_with_missing_or_odd_fields_are_tolerated() -> None:
    odd: dict[str, Any] = {
        "name": PROM,
        "restartCount": "many",
        "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": True, "finishedAt": 5}},
    }
    bodies = prometheus(odd, {"weird": 1}, "not-a-status")  # type: ignore[arg-type]
    [finding] = run(bodies)
    assert finding.evidence["restartCount"] == 0
    assert finding.evidence["exitCode"] is None
    assert finding.evidence["finishedAt"] is None
    assert finding.first_seen == finding.last_seen


def test_invalid_memory_limit_becomes_input_error_naming_pod_and_field() -> None:
    bodies = prometheus(terminated(PROM, reason="Error"))
    bodies[-1]["spec"]["containers"][0]["resources"]["limits"]["memory"] = "22 gigs"
    [finding] = run_checks(ClusterView.build(bodies), names=["oom-killed"])
    assert finding.check == "invalid-input"
    assert f"support/{PROM}-5d8f7c9b4-q2x7z" in finding.message
    assert f"spec.containers[name={PROM}].resources.limits.memory" in finding.message


# -- node OOM events -------------------------------------------------------------------------------


def test_kubelet_killed_by_system_oom_is_critical_node_finding() -> None:
    core = node("core-2", labels=CORE_POOL)
    bodies = [
        core,
        event(
            involved=core,
            reason="SystemOOM",
            message="System OOM encountered, victim process: kubelet, pid: 812",
            count=2,
            first=timedelta(minutes=1),
            last=timedelta(minutes=4),
        ),
    ]
    [finding] = run(bodies)
    assert finding.object == ObjectRef("Node", "core-2")
    assert finding.severity is Severity.CRITICAL
    assert finding.cause == "oom:node@core-pool"
    assert finding.evidence["criticalVictims"] == ["kubelet"]
    assert finding.evidence["victims"][0] == {
        "process": "kubelet",
        "pid": 812,
        "reason": "SystemOOM",
        "cgroup": False,
        "count": 2,
        "lastSeen": "2023-02-01T19:04:00Z",
    }
    assert finding.message == (
        "Node core-2 (pool core-pool) reported 2 node-wide OOM kill(s) of kubelet."
    )


def test_node_problem_detector_kills_global_warning_and_cgroup_info() -> None:
    core = node("core-2")
    user = node("user-1")
    bodies: list[Any] = [core, user, *prometheus(terminated(PROM))]
    bodies.append(
        event(
            involved=core,
            reason="OOMKilling",
            message="Memory cgroup out of memory: Killed process 4242 (prometheus) "
            "total-vm:23456789kB, anon-rss:23068672kB, file-rss:0kB, shmem-rss:0kB",
            component="kernel-monitor",
        )
    )
    bodies.append(
        event(
            involved=user,
            reason="OOMKilling",
            message="Out of memory: Killed process 3103923 (stress-ng-vm) total-vm:15791416kB, "
            "anon-rss:14369596kB, file-rss:4kB, shmem-rss:36kB, UID:0 oom_score_adj:1000",
            component="kernel-monitor",
        )
    )
    nodes = {f.object.name: f for f in run(bodies) if f.object.kind == "Node"}
    assert nodes["core-2"].severity is Severity.INFO
    assert nodes["core-2"].evidence["oomKilledContainers"] == [
        f"support/{PROM}-5d8f7c9b4-q2x7z/{PROM}"
    ]
    assert nodes["core-2"].evidence["victims"][0]["process"] == "prometheus"
    assert nodes["user-1"].severity is Severity.WARNING
    assert nodes["user-1"].evidence["global"] is True
    assert nodes["user-1"].evidence["victims"][0]["pid"] == 3103923


def test_unparseable_node_oom_event_still_counts() -> None:
    core = node("core-2")
    [finding] = run(
        [core, event(involved=core, reason="SystemOOM", message="System OOM encountered")]
    )
    assert finding.evidence["victims"][0]["process"] is None
    assert finding.message == "Node core-2 (pool default) reported 1 node-wide OOM kill(s)."
