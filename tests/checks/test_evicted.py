"""``evicted``: kubelet evictions per workload and node, linked by pressured pool."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from kubemedic.checks.evicted import EvictedConfig, evicted
from kubemedic.checks.findings import Finding, Severity
from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView
from tests.factories import (
    container,
    deployment,
    event,
    node,
    pod,
    pod_metrics,
    replicaset,
)
from tests.incident3 import HUB_EVICTION, prometheus

CORE = {"cloud.google.com/gke-nodepool": "core-pool", "hub.jupyter.org/node-purpose": "core"}
PROXY_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. "
    "Container chp was using 400Mi, request is 64Mi, has larger consumption of memory. "
)


def workload(name: str, namespace: str, **resources: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    owner = deployment(name, namespace=namespace, containers=[container(name, **resources)])
    return owner, replicaset(owner)


def evicted_pod(
    rs: dict[str, Any], suffix: str, *, node_name: str, message: str, **extra: Any
) -> dict[str, Any]:
    name = rs["metadata"]["name"]
    spec = rs["spec"]["template"]["spec"]
    body = pod(
        f"{name}-{suffix}",
        namespace=rs["metadata"]["namespace"],
        node_name=node_name,
        containers=spec["containers"],
        owner=rs,
        phase="Failed",
        reason="Evicted",
        message=message,
        created=timedelta(minutes=-30),
        **extra,
    )
    body["status"]["conditions"] = [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "TerminationByKubelet",
            "message": message,
            "lastTransitionTime": "2023-02-01T19:05:00Z",
        }
    ]
    return body


def incident() -> list[dict[str, Any]]:
    """The 2i2c leap cluster: hub evicted from core-2, where Prometheus holds 20Gi."""
    hub, hub_rs = workload("hub", "prod", requests={"cpu": "10m", "memory": "128Mi"})
    prom, prom_rs, prom_pod = prometheus()
    return [
        node("core-2", memory="52Gi", labels=CORE),
        hub,
        hub_rs,
        prom,
        prom_rs,
        prom_pod,
        pod_metrics(prom_pod, {"support-prometheus-server": {"memory": "21Gi", "cpu": "1"}}),
        evicted_pod(hub_rs, "x8k2p", node_name="core-2", message=HUB_EVICTION),
    ]


def run(bodies: list[dict[str, Any]], config: EvictedConfig | None = None) -> list[Finding]:
    return evicted(ClusterView.build(bodies), config or EvictedConfig())


def test_hub_evicted_beside_prometheus_names_victim_and_node_top_consumer() -> None:
    [finding] = run(incident())
    assert finding.severity is Severity.WARNING
    assert finding.object == ObjectRef("Deployment", "hub", "prod", "apps/v1")
    assert finding.cause == "eviction:memory@core-pool"
    evidence = finding.evidence
    assert evidence["pod"] == "prod/hub-5d8f7c9b4-x8k2p"
    assert evidence["owner"] == "Deployment prod/hub"
    assert (evidence["node"], evidence["pool"]) == ("core-2", "core-pool")
    assert (evidence["resource"], evidence["threshold"], evidence["available"]) == (
        "memory",
        "100Mi",
        "91436Ki",
    )
    assert evidence["containers"] == [
        {
            "name": "hub",
            "scope": "container",
            "resource": "memory",
            "usage": "318892Ki",
            "request": "128Mi",
        }
    ]
    assert evidence["biggestConsumer"]["name"] == "hub"
    assert evidence["nodeTopConsumer"] == {
        "pod": "support/support-prometheus-server-5d8f7c9b4-q2x7z",
        "namespace": "support",
        "container": "support-prometheus-server",
        "usage": "21Gi",
        "request": "20Gi",
    }
    assert evidence["count"] == 1
    assert evidence["critical"] is None
    assert "hub was using 311.42Mi against a 128Mi request" in finding.message
    assert "low on memory (threshold 100Mi, available 89.29Mi)" in finding.message
    assert finding.last_seen.isoformat() == "2023-02-01T19:05:00+00:00"
    json.dumps(finding.to_json())


def test_evictions_of_different_workloads_on_one_pool_share_a_cause() -> None:
    bodies = incident()
    proxy, proxy_rs = workload("proxy", "prod", requests={"memory": "64Mi"})
    bodies += [
        node("core-3", memory="52Gi", labels=CORE),
        proxy,
        proxy_rs,
        evicted_pod(proxy_rs, "m2n4b", node_name="core-3", message=PROXY_MESSAGE),
    ]
    findings = run(bodies)
    assert sorted(f.object.name for f in findings) == ["hub", "proxy"]
    assert {f.cause for f in findings} == {"eviction:memory@core-pool"}


def test_evicted_system_class_pod_is_critical() -> None:
    bodies = incident()
    bodies[-1]["spec"]["priorityClassName"] = "system-cluster-critical"
    bodies[-1]["spec"]["priority"] = 2000000000
    [finding] = run(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["critical"] == "priority class system-cluster-critical (2000000000)"


def test_evicted_jupyterhub_hub_is_critical_by_its_chart_labels() -> None:
    bodies = incident()
    bodies[-1]["metadata"]["labels"].update({"app": "jupyterhub", "component": "hub"})
    [finding] = run(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["critical"].startswith("jupyterhub")


def test_fifth_eviction_of_one_workload_on_one_node_is_critical() -> None:
    bodies = incident()
    rs = bodies[2]
    bodies += [
        evicted_pod(rs, suffix, node_name="core-2", message=HUB_EVICTION)
        for suffix in ("aaaa1", "aaaa2", "aaaa3", "aaaa4")
    ]
    [finding] = run(bodies)
    assert finding.evidence["count"] == 5
    assert len(finding.evidence["pods"]) == 5
    assert finding.severity is Severity.CRITICAL
    assert finding.message.startswith("5 pod(s) of Deployment prod/hub evicted from node core-2")
    assert run(bodies, EvictedConfig(critical_count=6))[0].severity is Severity.WARNING


def test_event_of_a_deleted_pod_is_reported_with_guessed_deployment() -> None:
    gone = pod("dask-worker-7c9f8d6b5-x2kqp", namespace="dask")
    bodies: list[dict[str, Any]] = [
        event(
            involved=gone,
            reason="Evicted",
            message=PROXY_MESSAGE.replace("chp", "dask-worker"),
            count=2,
            first=timedelta(minutes=1),
            last=timedelta(minutes=3),
            host="user-7",
        )
    ]
    [finding] = run(bodies)
    assert finding.object == ObjectRef("Deployment", "dask-worker", "dask", "apps/v1")
    assert finding.evidence["ownerGuessed"] is True
    assert finding.evidence["pod"] == "dask/dask-worker-7c9f8d6b5-x2kqp"
    assert finding.evidence["pods"] == ["dask/dask-worker-7c9f8d6b5-x2kqp"]
    assert finding.evidence["count"] == 2
    assert (finding.evidence["node"], finding.evidence["pool"]) == ("user-7", "user-7")
    assert finding.cause == "eviction:memory@user-7"
    assert finding.first_seen.isoformat() == "2023-02-01T19:01:00+00:00"


def test_evicted_pod_without_controller_is_named_by_namespace_and_name() -> None:
    bare = pod(
        "scratch",
        namespace="lab",
        node_name="core-2",
        phase="Failed",
        reason="Evicted",
        message=HUB_EVICTION.replace("hub", "scratch"),
    )
    [finding] = run([node("core-2", labels=CORE), bare])
    assert finding.object == ObjectRef("Pod", "scratch", "lab")
    assert (finding.evidence["pod"], finding.evidence["pods"]) == ("lab/scratch", ["lab/scratch"])
    assert finding.message.startswith("Pod lab/scratch evicted from node core-2 (pool core-pool)")


def test_event_about_a_pod_still_present_is_not_counted_twice() -> None:
    bodies = incident()
    bodies.append(
        event(
            involved=bodies[-1], reason="Evicted", message=HUB_EVICTION, first=timedelta(minutes=4)
        )
    )
    [finding] = run(bodies)
    assert finding.evidence["count"] == 1
    assert finding.first_seen.isoformat() == "2023-02-01T19:04:00+00:00"


def test_empty_status_message_falls_back_to_the_event() -> None:
    bodies = incident()
    bodies[-1]["status"]["message"] = ""
    bodies[-1]["status"]["conditions"] = []
    bodies.append(event(involved=bodies[-1], reason="Evicted", message=HUB_EVICTION))
    [finding] = run(bodies)
    assert finding.evidence["threshold"] == "100Mi"


def test_local_storage_limit_cause_belongs_to_the_workload() -> None:
    builder, builder_rs = workload("builder", "ci", limits={"ephemeral-storage": "1Gi"})
    message = 'Usage of EmptyDir volume "workspace" exceeds the limit "1Gi". '
    bodies = [node("ci-1"), builder, builder_rs]
    bodies.append(evicted_pod(builder_rs, "b7c8d", node_name="ci-1", message=message))
    [finding] = run(bodies)
    assert finding.cause == "eviction:ephemeral-storage-limit:ci/Deployment/builder"
    assert finding.evidence["kind"] == "local-storage-limit"
    assert finding.evidence["limits"] == [
        {"scope": "emptyDir", "name": "workspace", "limit": "1Gi"}
    ]
    assert "exceeding its emptyDir workspace limit 1Gi" in finding.message


def test_admission_rejection_under_disk_pressure() -> None:
    web, web_rs = workload("web", "shop")
    message = "The node had condition: [DiskPressure]. "
    bodies = [node("w-1", labels={"agentpool": "general"}), web, web_rs]
    bodies.append(evicted_pod(web_rs, "c1d2e", node_name="w-1", message=message))
    [finding] = run(bodies)
    assert finding.cause == "eviction:ephemeral-storage@general"
    assert finding.evidence["conditions"] == ["DiskPressure"]
    assert "rejected by node w-1 (pool general)" in finding.message


def test_garbled_evicted_status_is_still_reported_as_unknown_resource() -> None:
    web, web_rs = workload("web", "shop")
    bodies = [node("w-1"), web, web_rs]
    bodies.append(evicted_pod(web_rs, "c1d2e", node_name="w-1", message="\udcff garbage"))
    [finding] = run(bodies)
    assert finding.evidence["resource"] == "unknown"
    assert finding.cause == "eviction:unknown@default"  # an unlabelled node's pool
    assert finding.message.endswith("the kubelet's message did not name a resource.")


def test_invalid_pod_metrics_do_not_hide_the_eviction() -> None:
    bodies = incident()
    bodies[6]["containers"][0]["usage"]["memory"] = "lots"
    [finding] = run(bodies)
    assert finding.evidence["nodeTopConsumer"] is None


# -- negatives ------------------------------------------------------------------------------------


def test_healthy_cluster_is_silent() -> None:
    bodies = incident()[:-1]
    bodies.append(pod("plain-failure", phase="Failed", reason="Error", node_name="core-2"))
    assert run(bodies) == []


def test_drains_preemptions_and_taint_deletions_are_not_evictions_by_the_kubelet() -> None:
    drained = pod("api-1", node_name="core-2")
    drained["status"]["conditions"].append(
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    )
    victim = pod("batch-1", node_name="core-2")
    bodies = [
        node("core-2", labels=CORE),
        drained,
        victim,
        event(involved=victim, reason="Preempted", message="Preempted by pod 1 on node core-2"),
        event(
            involved=pod("gone-1"),
            reason="Evicted",
            message="pod evicted from core-2 node by sigs.k8s.io/descheduler",
        ),
    ]
    assert run(bodies) == []


# -- owners ------------------------------------------------------------------------------------


def test_replicaset_missing_from_snapshot_still_names_the_deployment() -> None:
    _, rs = workload("hub", "prod")
    orphan = evicted_pod(rs, "abcde", node_name="core-2", message=HUB_EVICTION)
    [finding] = run([node("core-2", labels=CORE), orphan])
    assert finding.object == ObjectRef("Deployment", "hub", "prod", "apps/v1")
    assert finding.cause == "eviction:memory@core-pool"
