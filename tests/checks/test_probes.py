"""``probe-restarts``: liveness probe failures, the restarts they cause, and CPU starvation."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.probes import ProbeConfig, probe_restarts
from kubemedic.checks.registry import run_checks
from kubemedic.model.objects import ObjectRef
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import ClusterView
from tests.factories import container, deployment, event, node, pod, replicaset, stamp

# zero-to-jupyterhub's hub liveness probe: 30 failures x 10 s = the incident's 5 minutes.
HUB_PROBE = {
    "httpGet": {"path": "/hub/health", "port": "http"},
    "initialDelaySeconds": 300,
    "periodSeconds": 10,
    "failureThreshold": 30,
    "timeoutSeconds": 3,
}
TIMEOUT = (
    'Liveness probe failed: Get "http://10.8.3.17:8081/hub/health": context deadline exceeded '
    "(Client.Timeout exceeded while awaiting headers)"
)


def hub(
    *, cpu: str | None = "10m", restarts: int = 1, suffix: str = "x8k2p", **extra: Any
) -> list[Any]:
    requests = {"memory": "128Mi", **({"cpu": cpu} if cpu else {})}
    owner = deployment(
        "hub",
        namespace="prod",
        containers=[container("hub", requests=requests, liveness=HUB_PROBE)],
    )
    rs = replicaset(owner)
    status = {
        "name": "hub",
        "ready": True,
        "restartCount": restarts,
        "image": "jupyterhub/k8s-hub:2.0.0",
        "state": {"running": {"startedAt": stamp(timedelta(minutes=5, seconds=30))}},
        "lastState": {
            "terminated": {
                "exitCode": 143,
                "reason": "Error",
                "finishedAt": stamp(timedelta(minutes=5, seconds=20)),
            }
        },
    }
    body = pod(
        f"hub-5d8f7c9b4-{suffix}",
        namespace="prod",
        node_name="core-2",
        containers=owner["spec"]["template"]["spec"]["containers"],
        owner=rs,
        container_statuses=[status],
        created=timedelta(hours=-2),
        **extra,
    )
    return [node("core-2"), owner, rs, body]


def unhealthy(target: dict[str, Any], *, count: int = 30, message: str = TIMEOUT) -> dict[str, Any]:
    return event(
        involved=target,
        reason="Unhealthy",
        message=message,
        count=count,
        first=timedelta(0),
        last=timedelta(minutes=5),
    )


def killing(target: dict[str, Any], name: str = "hub", *, count: int = 1) -> dict[str, Any]:
    return event(
        involved=target,
        reason="Killing",
        message=f"Container {name} failed liveness probe, will be restarted",
        type="Normal",
        count=count,
        first=timedelta(minutes=5),
        last=timedelta(minutes=5),
    )


def app_with_sidecar(name: str, *, sidecar_cpu: str) -> dict[str, Any]:
    """A pod whose ``app`` (500m CPU) and ``sidecar`` containers have the same TCP liveness
    probe, so the probe's Unhealthy message alone cannot say which of them failed."""
    probe = {"tcpSocket": {"port": 8080}}
    return pod(
        name,
        containers=[
            container("app", requests={"cpu": "500m"}, liveness=probe),
            container("sidecar", requests={"cpu": sidecar_cpu}, liveness=probe),
        ],
    )


def run(bodies: list[Any], config: ProbeConfig | None = None) -> list[Finding]:
    return probe_restarts(ClusterView.build(bodies), config or ProbeConfig())


def test_hub_liveness_failing_30_times_in_5_minutes_flags_cpu_starvation() -> None:
    bodies = hub()
    bodies += [unhealthy(bodies[-1]), killing(bodies[-1])]
    [finding] = run(bodies)
    assert finding.severity is Severity.WARNING
    assert finding.object == ObjectRef("Deployment", "hub", "prod", "apps/v1")
    assert finding.cause == "probe-restarts:prod/Deployment/hub/hub"
    evidence = finding.evidence
    assert (evidence["pod"], evidence["owner"], evidence["container"]) == (
        "prod/hub-5d8f7c9b4-x8k2p",
        "Deployment prod/hub",
        "hub",
    )
    assert (evidence["failures"], evidence["kills"], evidence["restartCount"]) == (30, 1, 1)
    assert evidence["restartsInWindow"] == 1
    assert evidence["lastMessage"] == TIMEOUT
    assert evidence["window"] == {
        "first": "2023-02-01T19:00:00Z",
        "last": "2023-02-01T19:05:00Z",
        "seconds": 300,
    }
    assert evidence["probe"] == {
        "type": "httpGet",
        "periodSeconds": 10,
        "failureThreshold": 30,
        "timeoutSeconds": 3,
        "initialDelaySeconds": 300,
    }
    assert (evidence["cpuRequest"], evidence["cpuLimit"]) == ("10m", None)
    assert evidence["cpuStarvationLikely"] is True
    assert evidence["containerInferred"] is False
    assert finding.message == (
        "Liveness probe of container hub in Deployment prod/hub failed 30 time(s) over 5 min, "
        "restarting it 1 time(s) (timeout 3s, period 10s, failureThreshold 30); CPU request 10m, "
        "so CPU starvation is likely."
    )
    json.dumps(finding.to_json())


def test_three_liveness_restarts_in_the_window_are_critical() -> None:
    bodies = hub(restarts=3)
    bodies += [unhealthy(bodies[-1], count=90), killing(bodies[-1], count=3)]
    [finding] = run(bodies)
    assert finding.evidence["restartsInWindow"] == 3
    assert finding.severity is Severity.CRITICAL
    assert run(bodies, ProbeConfig(critical_restarts=4))[0].severity is Severity.WARNING


def test_liveness_failure_of_critical_pod_is_critical() -> None:
    bodies = hub(priority=1_000_000_000)
    bodies += [unhealthy(bodies[-1]), killing(bodies[-1])]
    assert run(bodies)[0].severity is Severity.CRITICAL


def test_hub_labelled_as_zero_to_jupyterhub_labels_it_is_critical() -> None:
    bodies = hub(labels={"app": "jupyterhub", "component": "hub"})
    bodies += [unhealthy(bodies[-1]), killing(bodies[-1])]
    [finding] = run(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["critical"] == "jupyterhub (labels app=jupyterhub, component=hub)"


def test_probe_errors_count_as_liveness_failures() -> None:
    bodies = hub()
    errored = "Liveness probe errored: rpc error: code = DeadlineExceeded desc = context deadline"
    bodies.append(unhealthy(bodies[-1], count=4, message=errored))
    [finding] = run(bodies)
    assert finding.evidence["failures"] == 4
    assert finding.evidence["lastMessage"] == errored


def test_pods_of_one_workload_are_summed_into_one_finding() -> None:
    first = hub(suffix="aaaaa")
    second = hub(suffix="bbbbb")
    bodies = [*first, second[-1], unhealthy(first[-1], count=6), unhealthy(second[-1], count=9)]
    [finding] = run(bodies)
    assert finding.evidence["failures"] == 15
    assert finding.evidence["pods"] == ["prod/hub-5d8f7c9b4-aaaaa", "prod/hub-5d8f7c9b4-bbbbb"]


def test_without_killing_events_restarts_come_from_a_termination_inside_the_window() -> None:
    bodies = hub(restarts=4)
    bodies.append(unhealthy(bodies[-1]))
    [finding] = run(bodies)
    assert finding.evidence["kills"] == 0
    assert finding.evidence["restartsInWindow"] == 4
    assert finding.severity is Severity.CRITICAL
    old = hub(restarts=4)
    old[-1]["status"]["containerStatuses"][0]["lastState"]["terminated"]["finishedAt"] = stamp(
        timedelta(hours=-1)
    )
    old.append(unhealthy(old[-1]))
    assert run(old)[0].evidence["restartsInWindow"] == 0


def test_container_is_taken_from_killing_events_in_multi_container_pods() -> None:
    body = app_with_sidecar("web-1", sidecar_cpu="500m")
    bodies = [body, unhealthy(body, count=3), killing(body, "app")]
    [finding] = run(bodies)
    assert finding.evidence["container"] == "app"
    assert finding.evidence["containerInferred"] is True
    assert finding.evidence["cpuStarvationLikely"] is False
    assert finding.evidence["probe"] == {
        "type": "tcpSocket",
        "periodSeconds": 10,
        "failureThreshold": 3,
        "timeoutSeconds": 1,
        "initialDelaySeconds": 0,
    }
    assert finding.object == ObjectRef("Pod", "web-1", "default")


def test_cpu_starvation_from_missing_request_or_low_limit() -> None:
    no_request = hub(cpu=None)
    no_request.append(unhealthy(no_request[-1]))
    assert run(no_request)[0].evidence["cpuStarvationLikely"] is True
    throttled = hub(cpu="1")
    throttled[-1]["spec"]["containers"][0]["resources"]["limits"] = {"cpu": "50m"}
    throttled.append(unhealthy(throttled[-1]))
    assert run(throttled)[0].evidence["cpuLimit"] == "50m"
    assert run(throttled)[0].evidence["cpuStarvationLikely"] is True
    ample = hub(cpu="1")
    ample.append(unhealthy(ample[-1]))
    assert run(ample)[0].evidence["cpuStarvationLikely"] is False


def test_long_probe_output_is_clipped() -> None:
    bodies = hub()
    bodies.append(unhealthy(bodies[-1], message="Liveness probe failed: " + "x" * 5000))
    clipped = run(bodies)[0].evidence["lastMessage"]
    assert len(clipped) == 200
    assert clipped.endswith("…")


# -- negatives and bad input -----------------------------------------------------------------------


def test_healthy_pods_are_silent() -> None:
    assert run(hub()) == []


def test_readiness_and_startup_failures_are_not_liveness() -> None:
    bodies = hub()
    bodies.append(unhealthy(bodies[-1], count=50, message="Readiness probe failed: HTTP 503"))
    bodies.append(unhealthy(bodies[-1], count=7, message="Startup probe failed: timeout"))
    bodies.append(
        event(
            involved=bodies[3],
            reason="Killing",
            message="Container hub failed startup probe, will be restarted",
        )
    )
    assert run(bodies) == []


def test_isolated_failures_below_minimum_are_silent() -> None:
    bodies = hub()
    bodies.append(unhealthy(bodies[-1], count=2))
    assert run(bodies) == []
    assert len(run(bodies, ProbeConfig(min_failures=1))) == 1


def test_events_of_an_earlier_pod_with_the_same_name_are_ignored() -> None:
    bodies = hub()
    stale = unhealthy(bodies[-1])
    stale["involvedObject"]["uid"] = "an-earlier-incarnation"
    assert run([*bodies, stale]) == []


def test_invalid_cpu_request_is_an_input_error_naming_pod_and_field() -> None:
    bodies = hub(cpu="ten millicores")
    bodies.append(unhealthy(bodies[-1]))
    [finding] = run_checks(ClusterView.build(bodies), names=["probe-restarts"])
    assert finding.check == "invalid-input"
    assert "prod/hub-5d8f7c9b4-x8k2p" in finding.message
    assert "spec.containers[name=hub].resources.requests.cpu" in finding.message


def test_invalid_starvation_setting_is_an_input_error_naming_the_setting() -> None:
    bodies = hub()
    bodies.append(unhealthy(bodies[-1]))
    config = ProbeConfig(starvation_cpu_request="a tenth of a core")
    [finding] = run_checks(
        ClusterView.build(bodies), names=["probe-restarts"], configs={"probe-restarts": config}
    )
    assert finding.check == "invalid-input"
    assert "config of check probe-restarts: starvation_cpu_request" in finding.message
    with pytest.raises(QuantityError, match="starvation_cpu_request"):
        run(hub(), config)


def test_the_events_field_path_names_the_failing_container() -> None:
    body = app_with_sidecar("web-2", sidecar_cpu="50m")
    failing = event(
        involved=body,
        reason="Unhealthy",
        message="Liveness probe failed: dial tcp 10.0.0.7:8080: connect: connection refused",
        count=4,
        field_path="spec.containers{sidecar}",
    )
    [finding] = run([body, failing])
    assert finding.evidence["container"] == "sidecar"
    assert finding.evidence["containerInferred"] is False
    assert finding.evidence["cpuStarvationLikely"] is True


def test_native_sidecar_is_read_from_init_containers() -> None:
    probe = {"tcpSocket": {"port": 15021}, "periodSeconds": 5}
    body = pod(
        "web-3",
        namespace="shop",
        containers=[container("app", requests={"cpu": "500m"}, liveness=probe)],
        init_containers=[
            container("proxy", requests={"cpu": "50m"}, restart_policy="Always", liveness=probe)
        ],
    )
    body["status"]["initContainerStatuses"] = [{"name": "proxy", "restartCount": 4}]
    failing = event(
        involved=body,
        reason="Unhealthy",
        message="Liveness probe failed: dial tcp 10.0.0.9:15021: connect: connection refused",
        count=6,
        field_path="spec.initContainers{proxy}",
    )
    [finding] = run([body, failing, killing(body, "proxy")])
    evidence = finding.evidence
    assert (evidence["pod"], evidence["container"]) == ("shop/web-3", "proxy")
    assert (evidence["cpuRequest"], evidence["cpuStarvationLikely"]) == ("50m", True)
    assert evidence["probe"]["periodSeconds"] == 5
    assert (evidence["restartCount"], evidence["kills"]) == (4, 1)
