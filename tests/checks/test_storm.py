"""``failed-pod-storm``: incident 1's endless OutOfmemory pods, counted per owner."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.storm import FailedPodStormConfig, failed_pod_storm, parse_insufficient
from kubemedic.model import objects
from kubemedic.model.view import ClusterView
from tests.factories import container, deployment, node, pod, replicaset, stamp

NOW = objects.parse_time(stamp(timedelta(minutes=30)))
NODE = "minikube-dev1-m02"
REJECTED = (
    "Pod was rejected: Node didn't have enough resource: memory, requested: 838860800, "
    "used: 7516192768, capacity: 8148250624"
)
RESOURCES = {"cpu": "100m", "memory": "800Mi"}


def nginx(*, node_name: str | None = NODE) -> dict[str, Any]:
    return deployment(
        "nginx-deployment",
        replicas=12,
        node_name=node_name,
        containers=[container("nginx", requests=RESOURCES, limits=RESOURCES)],
    )


def rejected(
    owner: dict[str, Any],
    count: int,
    *,
    start: timedelta = timedelta(minutes=24),
    every: timedelta = timedelta(seconds=12),
    reason: str = "OutOfmemory",
    message: str = REJECTED,
    prefix: str = "r",
) -> list[dict[str, Any]]:
    """``count`` pods the kubelet rejected, one every ``every`` from ``start`` (after 19:00)."""
    return [
        pod(
            f"{owner['metadata']['name']}-{prefix}{i:03d}",
            owner=owner,
            node_name=NODE,
            phase="Failed",
            reason=reason,
            message=message,
            created=start + every * i,
        )
        for i in range(count)
    ]


def run(*bodies: dict[str, Any], config: FailedPodStormConfig | None = None) -> list[Finding]:
    view = ClusterView.build(bodies, at=NOW)
    return failed_pod_storm(view, config or FailedPodStormConfig())


def test_incident_outofmemory_storm_of_a_pinned_deployment_is_critical() -> None:
    app = nginx()
    rs = replicaset(app)
    running = pod("nginx-deployment-5d8f7c9b4-ok", owner=rs, node_name=NODE)

    [finding] = run(node(NODE), app, rs, running, *rejected(rs, 30))

    assert finding.severity is Severity.CRITICAL
    assert finding.object.kind == "Deployment"
    assert finding.object.name == "nginx-deployment"
    assert finding.cause == "pinned-node-name:default/Deployment/nginx-deployment"
    evidence = finding.evidence
    assert evidence["owner"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "namespace": "default",
        "name": "nginx-deployment",
    }
    assert evidence["failedPods"] == 30
    assert evidence["reasons"] == {"OutOfmemory": 30}
    assert evidence["nodes"] == {NODE: 30}
    assert evidence["windowMinutes"] == 5.8  # 29 gaps of 12 s
    assert evidence["perMinute"] == 5.2  # 30 / 5.8
    assert evidence["recentPerMinute"] == 3.0  # 30 in the last 10 minutes
    assert evidence["lastMessage"] == REJECTED
    assert evidence["insufficientResource"] == {
        "resource": "memory",
        "requested": 838860800,
        "used": 7516192768,
        "capacity": 8148250624,
        "shortBy": 206802944,
    }
    assert evidence["pinnedNodeName"] == NODE
    assert evidence["gcThreshold"] == 12500
    assert evidence["terminatedPodsInCluster"] == 30
    assert finding.first_seen == objects.parse_time(stamp(timedelta(minutes=24)))
    assert finding.last_seen == objects.parse_time(stamp(timedelta(minutes=24, seconds=348)))
    assert "30 Failed pods rejected by the kubelet at admission (30 OutOfmemory)" in finding.message
    assert "above 12500 terminated pods (the cluster holds 30)" in finding.message


def test_storm_of_an_unpinned_owner_has_its_own_cause() -> None:
    app = nginx(node_name=None)
    rs = replicaset(app)

    [finding] = run(app, rs, *rejected(rs, 6, every=timedelta(minutes=1)))

    assert finding.cause == "failed-pod-storm:default/Deployment/nginx-deployment"
    assert finding.evidence["pinnedNodeName"] is None
    assert finding.severity is Severity.WARNING  # 6 pods at 1.2 per minute


def test_deployment_is_inferred_from_the_pod_template_hash_when_replicasets_are_missing() -> None:
    rs = replicaset(nginx())

    [finding] = run(*rejected(rs, 5))

    assert finding.object.kind == "Deployment"
    assert finding.object.name == "nginx-deployment"
    assert finding.cause == "failed-pod-storm:default/Deployment/nginx-deployment"


def test_rate_alone_makes_a_small_live_burst_critical() -> None:
    rs = replicaset(nginx())

    [finding] = run(*rejected(rs, 8, every=timedelta(seconds=2)))

    assert finding.evidence["perMinute"] == 8.0  # the span counts as at least a minute
    assert finding.severity is Severity.CRITICAL


def test_storm_that_stopped_long_ago_is_only_a_warning() -> None:
    rs = replicaset(nginx())
    old = rejected(rs, 40, start=timedelta(minutes=-120), every=timedelta(seconds=5))

    [finding] = run(*old)

    assert finding.severity is Severity.WARNING
    assert finding.evidence["recentPerMinute"] == 0.0
    assert finding.evidence["failedPods"] == 40


def test_fewer_than_five_rejections_are_silent() -> None:
    assert run(*rejected(replicaset(nginx()), 4)) == []


def test_thresholds_are_configurable() -> None:
    config = FailedPodStormConfig(warning_pods=2, critical_pods=3, critical_per_minute=100.0)

    [finding] = run(*rejected(replicaset(nginx()), 3, every=timedelta(minutes=1)), config=config)

    assert finding.severity is Severity.CRITICAL


def test_ordinary_evictions_and_crashes_are_not_an_admission_storm() -> None:
    rs = replicaset(nginx())
    evicted = rejected(
        rs,
        10,
        reason="Evicted",
        message="The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi.",
    )
    crashed = rejected(rs, 10, reason="Error", message="", prefix="c")
    healthy = [pod(f"ok-{i}", owner=rs, node_name=NODE) for i in range(10)]

    assert run(*evicted, *crashed, *healthy) == []


def test_eviction_managers_admission_refusals_count() -> None:
    rs = replicaset(nginx())
    refused = rejected(
        rs,
        5,
        reason="Evicted",
        message="Pod was rejected: The node had condition: [DiskPressure]. ",
    )

    [finding] = run(*refused)

    assert finding.evidence["reasons"] == {"Evicted": 5}
    assert finding.evidence["insufficientResource"] is None


def test_predicate_reasons_and_any_outof_resource_are_counted_together() -> None:
    rs = replicaset(nginx())
    pods = [
        *rejected(rs, 2, reason="NodeAffinity", message="Pod was rejected: Predicate NodeAffinity"),
        *rejected(rs, 2, reason="OutOfnvidia.com/gpu", message="", prefix="g"),
        *rejected(rs, 1, reason="UnexpectedAdmissionError", message="", prefix="u"),
        *rejected(rs, 1, reason="OutOf", message="", prefix="x"),  # not a resource: ignored
    ]

    [finding] = run(*pods)

    assert finding.evidence["reasons"] == {
        "NodeAffinity": 2,
        "OutOfnvidia.com/gpu": 2,
        "UnexpectedAdmissionError": 1,
    }


def test_extra_reasons_come_from_the_config() -> None:
    pods = rejected(replicaset(nginx()), 5, reason="VendorAdmission", message="")

    assert run(*pods) == []
    [finding] = run(*pods, config=FailedPodStormConfig(extra_reasons=("VendorAdmission",)))
    assert finding.evidence["reasons"] == {"VendorAdmission": 5}


def test_pods_without_a_controller_cannot_storm() -> None:
    bare = [
        pod(f"bare-{i}", node_name=NODE, phase="Failed", reason="OutOfcpu", message=REJECTED)
        for i in range(10)
    ]

    assert run(*bare) == []


def test_owners_are_reported_separately() -> None:
    api = replicaset(deployment("api"))
    web = replicaset(deployment("web"))

    findings = run(*rejected(api, 5), *rejected(web, 6))

    assert [(f.object.name, f.evidence["failedPods"]) for f in findings] == [("api", 5), ("web", 6)]


def test_old_message_format_and_cpu_millicores_parse() -> None:
    parsed = parse_insufficient(
        "Node didn't have enough resource: cpu, requested: 500, used: 3800, capacity: 4000"
    )

    assert parsed == {
        "resource": "cpu",
        "requested": 500,
        "used": 3800,
        "capacity": 4000,
        "shortBy": 300,
    }
    assert parse_insufficient("Pod was rejected: Predicate NodeAffinity failed") is None


def test_missing_times_and_fields_read_as_absent() -> None:
    rs = replicaset(nginx())
    pods = rejected(rs, 5)
    for body in pods:
        del body["metadata"]["creationTimestamp"]
        del body["spec"]["nodeName"]
    odd = pod("odd", owner=rs)
    odd["status"] = "garbage"

    [finding] = run(*pods, odd)

    assert finding.evidence["perMinute"] == 0.0
    assert finding.evidence["nodes"] == {}
    assert finding.first_seen == NOW
    assert finding.severity is Severity.WARNING  # liveness cannot be shown without times
