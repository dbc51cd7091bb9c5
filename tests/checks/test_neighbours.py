"""memory-hog-neighbour: a memory hog beside a critical pod, and the kubelet's eviction order."""

from __future__ import annotations

import json

from kubemedic.checks import neighbours
from kubemedic.checks.findings import Severity
from kubemedic.checks.neighbours import NeighbourConfig
from kubemedic.model.view import ClusterView
from tests.checks.addons import kube_proxy
from tests.factories import container, deployed, node, pod, pod_metrics
from tests.incident3 import CORE_POOL, jupyterhub, prometheus_beside_hub

PROMETHEUS = "support/support-prometheus-server-5d8f7c9b4-x7k2p"
HUB = "jhub/hub-5d8f7c9b4-x7k2p"


def core_node(memory: str = "25Gi") -> list[dict]:
    """Incident 3's core node: Prometheus 20Gi/22Gi beside the hub (128Mi) and proxy."""
    bodies = prometheus_beside_hub(memory=memory)
    bodies += deployed(
        "support-grafana",
        namespace="support",
        node_name="core-1",
        requests={"memory": "3136Mi"},
        limits={"memory": "6Gi"},  # 24%: below the hog threshold
    )
    return bodies


def by_key(bodies: list[dict], key: str) -> dict:
    namespace, name = key.split("/")
    return next(
        b
        for b in bodies
        if b["kind"] == "Pod"
        and b["metadata"]["name"] == name
        and b["metadata"]["namespace"] == namespace
    )


def run(bodies: list[dict], config: NeighbourConfig | None = None):
    view = ClusterView.build(bodies)
    return neighbours.memory_hog_neighbour(view, config or NeighbourConfig())


def test_prometheus_beside_hub_is_critical_when_its_limit_would_exhaust_the_node() -> None:
    [finding] = run(core_node())
    assert finding.severity is Severity.CRITICAL
    assert finding.object.kind == "Pod" and finding.object.key == PROMETHEUS
    assert finding.cause == "memory-hog:support/Deployment/support-prometheus-server@core-pool"
    evidence = finding.evidence
    assert evidence["hog"] == {
        "pod": PROMETHEUS,
        "owner": "Deployment support/support-prometheus-server",
        "request": "20Gi",
        "limit": "22Gi",
        "unbounded": False,
        "usage": None,
        "percentOfAllocatable": 88.0,
        "measure": "limit",
    }
    assert evidence["node"] == "core-1"
    assert evidence["nodePool"] == "core-pool"
    assert evidence["allocatable"] == "25Gi"
    assert [c["pod"] for c in evidence["critical"]] == [HUB, "jhub/proxy-5d8f7c9b4-x7k2p"]
    assert evidence["critical"][0]["reason"] == "jupyterhub (labels app=jupyterhub, component=hub)"
    assert evidence["critical"][0]["request"] == "128Mi"
    assert evidence["usageKnown"] is False
    assert evidence["nodeCanRunOut"] is True  # 22Gi + 3136Mi + 128Mi + 64Mi > 25Gi
    assert evidence["evictedBeforeHog"] == []
    # Without usage every pod is assumed at its request; all share priority 0: one rank.
    assert {entry["rank"] for entry in evidence["evictionOrder"]} == {1}
    assert evidence["evictionOrderTotal"] == 4
    assert all(entry["exceedsRequest"] is None for entry in evidence["evictionOrder"])
    assert "88.0% of node core-1's 25Gi allocatable memory (limit 22Gi)" in finding.message
    assert "would need 25.25Gi of 25Gi" in finding.message
    json.dumps(finding.to_json())


def test_hub_over_its_request_ranks_before_prometheus_within_its_own() -> None:
    bodies = core_node(memory="64Gi")  # plenty of room: only the eviction order is at fault
    bodies.append(pod_metrics(by_key(bodies, HUB), {"hub": {"memory": "200Mi"}}))
    bodies.append(
        pod_metrics(by_key(bodies, PROMETHEUS), {"support-prometheus-server": {"memory": "18Gi"}})
    )
    bodies.append(
        pod_metrics(by_key(bodies, "jhub/proxy-5d8f7c9b4-x7k2p"), {"proxy": {"memory": "50Mi"}})
    )
    bodies.append(
        pod_metrics(
            by_key(bodies, "support/support-grafana-5d8f7c9b4-x7k2p"),
            {"support-grafana": {"memory": "1Gi"}},
        )
    )
    [finding] = run(bodies)
    evidence = finding.evidence
    assert finding.severity is Severity.CRITICAL
    assert evidence["usageKnown"] is True
    assert evidence["nodeCanRunOut"] is False
    # The proxy, 14Mi under its request, also goes before Prometheus, 2Gi under its own.
    assert evidence["evictedBeforeHog"] == [HUB, "jhub/proxy-5d8f7c9b4-x7k2p"]
    order = [(e["rank"], e["pod"]) for e in evidence["evictionOrder"]]
    # hub exceeds its request: first. Then the rest by how far below request (closest first).
    assert order == [
        (1, HUB),
        (2, "jhub/proxy-5d8f7c9b4-x7k2p"),
        (3, PROMETHEUS),
        (4, "support/support-grafana-5d8f7c9b4-x7k2p"),
    ]
    assert evidence["evictionOrder"][0]["exceedsRequest"] is True
    assert evidence["evictionOrder"][0]["usage"] == "200Mi"
    assert (
        "the kubelet would evict jhub/hub-5d8f7c9b4-x7k2p and jhub/proxy-5d8f7c9b4-x7k2p before it"
        in finding.message
    )


def test_hog_within_room_and_hub_within_request_is_a_warning() -> None:
    bodies = core_node(memory="64Gi")
    [finding] = run(bodies)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["hog"]["percentOfAllocatable"] == 34.4
    assert finding.message.endswith(
        "beside critical pods jhub/hub-5d8f7c9b4-x7k2p (jupyterhub) and "
        "jhub/proxy-5d8f7c9b4-x7k2p (jupyterhub)."
    )


def test_hog_without_a_memory_limit_can_always_run_the_node_out() -> None:
    bodies = [node("core-1", memory="64Gi", labels=CORE_POOL)]
    bodies += deployed(
        "prometheus", namespace="monitoring", node_name="core-1", requests={"memory": "20Gi"}
    )
    bodies += jupyterhub("hub", node_name="core-1", requests={"memory": "1Gi"})
    [finding] = run(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["hog"]["limit"] is None
    assert finding.evidence["hog"]["measure"] == "request"
    assert finding.evidence["nodeCanRunOut"] is True
    assert "no memory limit" in finding.message
    assert finding.cause == "memory-hog:monitoring/Deployment/prometheus@core-pool"


def test_a_limitless_sidecar_makes_the_hog_unbounded_but_keeps_its_limit_in_view() -> None:
    bodies = [node("core-1", memory="64Gi", labels=CORE_POOL)]
    bodies += deployed(
        "prometheus",
        namespace="monitoring",
        node_name="core-1",
        requests={"memory": "20Gi"},
        limits={"memory": "22Gi"},
    )
    for body in bodies:
        if body["kind"] == "Pod":
            body["spec"]["containers"].append(container("configmap-reload"))
    bodies += jupyterhub("hub", node_name="core-1", requests={"memory": "1Gi"})
    [finding] = run(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["hog"]["limit"] == "22Gi"
    assert finding.evidence["hog"]["unbounded"] is True
    assert finding.evidence["hog"]["measure"] == "limit"
    assert "sets no memory limit, so it can grow past its 22Gi of limits" in finding.message


def test_hog_by_usage_alone_is_found() -> None:
    bodies = [node("n1", memory="16Gi")]
    bodies += deployed(
        "cache",
        namespace="app",
        node_name="n1",
        requests={"memory": "1Gi"},
        limits={"memory": "6Gi"},
    )
    bodies += deployed(
        "ingress",
        namespace="ingress",
        node_name="n1",
        requests={"memory": "512Mi"},
        limits={"memory": "1Gi"},
        labels={"app.kubernetes.io/name": "traefik"},
    )
    bodies.append(
        pod_metrics(by_key(bodies, "app/cache-5d8f7c9b4-x7k2p"), {"cache": {"memory": "5Gi"}})
    )
    bodies.append(
        pod_metrics(
            by_key(bodies, "ingress/ingress-5d8f7c9b4-x7k2p"), {"ingress": {"memory": "100Mi"}}
        )
    )
    [finding] = run(bodies)
    assert finding.evidence["hog"]["measure"] == "limit"  # 6Gi limit > 5Gi usage
    assert finding.evidence["hog"]["percentOfAllocatable"] == 37.5
    config = NeighbourConfig(hog_percent=40.0)
    assert run(bodies, config) == []


def test_no_finding_without_a_critical_pod_on_the_same_node() -> None:
    bodies = [node("core-1", memory="25Gi"), node("core-2", memory="25Gi")]
    bodies += deployed(
        "prometheus",
        namespace="monitoring",
        node_name="core-1",
        requests={"memory": "20Gi"},
        limits={"memory": "22Gi"},
    )
    bodies += jupyterhub("hub", node_name="core-2", requests={"memory": "128Mi"})
    assert run(bodies) == []


def test_kubelet_protected_critical_pods_are_not_threatened() -> None:
    bodies = [node("n1", memory="16Gi")]
    bodies += deployed(
        "prometheus", namespace="monitoring", node_name="n1", requests={"memory": "10Gi"}
    )
    bodies.append(kube_proxy("kube-proxy-n1", node_name="n1"))
    assert run(bodies) == []


def test_critical_pods_are_not_hogs_themselves() -> None:
    bodies = [node("n1", memory="16Gi")]
    bodies += jupyterhub("hub", node_name="n1", requests={"memory": "8Gi"})
    assert run(bodies) == []


def test_failed_pods_are_not_hogs() -> None:
    bodies = core_node()
    by_key(bodies, PROMETHEUS)["status"] = {"phase": "Failed", "reason": "Evicted"}
    assert run(bodies) == []


def test_node_without_allocatable_memory_is_skipped() -> None:
    bodies = core_node()
    del bodies[0]["status"]
    assert run(bodies) == []


def test_eviction_ranking_matches_the_kubelet() -> None:
    bodies = [node("n1", memory="64Gi")]
    specs = {
        "a": ("1Gi", "1124Mi", 0),  # exceeds by 100Mi
        "b": ("1Gi", "2Gi", 0),  # exceeds by 1Gi
        "c": ("4Gi", "1Gi", 0),  # within
        "d": ("1Gi", "1100Mi", 1000),  # exceeds, higher priority
        "e": ("1Gi", "1Gi", 0),  # at its request: does not exceed
    }
    for name, (request, usage, priority) in specs.items():
        body = pod(
            name,
            node_name="n1",
            priority=priority,
            containers=[container("main", requests={"memory": request})],
        )
        bodies += [body, pod_metrics(body, {"main": {"memory": usage}})]
    view = ClusterView.build(bodies)
    residents = [neighbours._resident(view, body, NeighbourConfig()) for body in view.pods_on("n1")]
    ranked = neighbours.eviction_ranks(residents)
    assert [(rank, r.key) for rank, r in ranked] == [
        (1, "default/b"),
        (2, "default/a"),
        (3, "default/d"),
        (4, "default/e"),
        (5, "default/c"),
    ]


def test_eviction_order_is_capped_but_keeps_hog_and_critical_pods() -> None:
    bodies = core_node(memory="64Gi")
    for index in range(10):
        bodies.append(
            pod(
                f"small-{index}",
                namespace="batch",
                node_name="core-1",
                priority=-10,
                containers=[container(requests={"memory": "10Mi"})],
            )
        )
    [finding] = run(bodies, NeighbourConfig(eviction_order_limit=3))
    order = finding.evidence["evictionOrder"]
    assert finding.evidence["evictionOrderTotal"] == 14
    assert [e["pod"] for e in order[:3]] == ["batch/small-0", "batch/small-1", "batch/small-2"]
    kept = {e["pod"] for e in order[3:]}
    assert {PROMETHEUS, HUB, "jhub/proxy-5d8f7c9b4-x7k2p"} <= kept
    assert "support/support-grafana-5d8f7c9b4-x7k2p" not in kept
