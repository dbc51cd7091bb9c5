"""node-scale-burst: many nodes at once, and the scrapers and DaemonSets that grow with them."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from kubemedic.checks.burst import BurstConfig, node_scale_burst, scraper_kind
from kubemedic.checks.findings import CLUSTER, Finding, Severity
from kubemedic.model.view import ClusterView
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import container, deployment, node, pod, replicaset
from tests.incident3 import CORE_POOL

NOW = timedelta(hours=2)
BURST_AT = NOW - timedelta(minutes=10)
OLD = timedelta(days=-7)
DASK_POOL = {"cloud.google.com/gke-nodepool": "dask-worker-pool"}


def existing(count: int) -> list[dict[str, Any]]:
    core = [node(f"core-{i}", labels=CORE_POOL, created=OLD, heartbeat=NOW) for i in range(2)]
    users = [
        node(f"user-{i}", labels={"cloud.google.com/gke-nodepool": "user-pool"}, created=OLD)
        for i in range(count - 2)
    ]
    return core + users


def burst(count: int, *, every: timedelta, start: timedelta = BURST_AT) -> list[dict[str, Any]]:
    return [
        node(f"dask-{i:03d}", labels=DASK_POOL, created=start + i * every) for i in range(count)
    ]


def daemonset(name: str, namespace: str, **options: Any) -> dict[str, Any]:
    """A DaemonSet shaped by the Deployment builder (same template), then re-kinded."""
    body = deployment(name, namespace=namespace, created=OLD, **options)
    body["kind"] = "DaemonSet"
    del body["spec"]["replicas"]
    body["status"] = {"desiredNumberScheduled": 0}
    return body


def prometheus() -> list[dict[str, Any]]:
    owner = deployment("support-prometheus-server", namespace="support", created=OLD)
    rs = replicaset(owner, pod_hash="5b8d6c7f9", created=OLD)
    server = pod(
        "support-prometheus-server-5b8d6c7f9-x2k4p",
        namespace="support",
        owner=rs,
        node_name="core-1",
        labels={"app": "prometheus", "component": "server"},
        containers=[
            container(
                "prometheus-server",
                image="quay.io/prometheus/prometheus:v2.41.0",
                requests={"cpu": "1", "memory": "20Gi"},
                limits={"memory": "22Gi"},
            ),
            container(
                "prometheus-server-configmap-reload",
                image="jimmidyson/configmap-reload:v0.8.0",
                requests={"memory": "10Mi"},
                limits={"memory": "20Mi"},
            ),
        ],
        created=OLD,
    )
    alertmanager = pod(
        "support-prometheus-alertmanager-0",
        namespace="support",
        node_name="core-0",
        labels={"app": "prometheus", "component": "alertmanager"},
        containers=[container("alertmanager", image="quay.io/prometheus/alertmanager:v0.25.0")],
        created=OLD,
    )
    return [owner, rs, server, alertmanager]


def run(*bodies: dict[str, Any], config: BurstConfig | None = None) -> list[Finding]:
    view = ClusterView.build(bodies, at=BASE_TIME + NOW)
    return node_scale_burst(view, config or BurstConfig())


def test_incident_3_hundred_nodes_in_a_minute_names_prometheus() -> None:
    new = burst(100, every=timedelta(milliseconds=600))
    exporter = daemonset(
        "support-prometheus-node-exporter",
        "support",
        containers=[container("node-exporter", requests={"cpu": "100m", "memory": "30Mi"})],
    )
    exporter_pods = [
        pod(
            f"support-prometheus-node-exporter-{i:05d}",
            namespace="support",
            owner=exporter,
            node_name=body["metadata"]["name"],
            containers=[container("node-exporter", requests={"cpu": "100m", "memory": "30Mi"})],
            created=BURST_AT,
        )
        for i, body in enumerate(new + existing(26))
    ]
    ksm = pod(
        "kube-state-metrics-6d9f8b7c5-abcde",
        namespace="support",
        node_name="core-0",
        containers=[
            container(
                "kube-state-metrics",
                image="registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.8.0",
                requests={"memory": "256Mi"},
            )
        ],
        created=OLD,
    )
    findings = run(*existing(26), *new, *prometheus(), exporter, *exporter_pods, ksm)

    [finding] = findings
    assert finding.object == CLUSTER
    assert finding.severity is Severity.CRITICAL
    assert finding.cause == "node-scale-burst@dask-worker-pool"
    evidence = finding.evidence
    assert evidence["nodesAdded"] == 100
    assert evidence["windowSeconds"] == 300
    assert evidence["spanSeconds"] == 59
    assert evidence["from"] == "2023-02-01T20:50:00Z"
    assert evidence["to"] == "2023-02-01T20:50:59Z"
    assert evidence["nodesBefore"] == 26
    assert evidence["nodesAfter"] == 126
    assert evidence["nodePools"] == {"dask-worker-pool": 100}
    growers = evidence["loadGrowsWith"]
    assert [g["owner"] for g in growers] == [
        "support/Deployment/support-prometheus-server",
        "support/Pod/kube-state-metrics-6d9f8b7c5-abcde",
        "support/DaemonSet/support-prometheus-node-exporter",
    ]
    assert growers[0]["scraper"] == "prometheus"
    assert growers[0]["pods"] == [
        {
            "pod": "support/support-prometheus-server-5b8d6c7f9-x2k4p",
            "node": "core-1",
            "memoryRequest": "20490Mi",
            "memoryLimit": "22548Mi",
        }
    ]
    assert growers[1]["scraper"] == "kube-state-metrics"
    assert growers[1]["pods"][0]["memoryLimit"] is None
    assert growers[2]["podsAdded"] == 100
    assert growers[2]["estimated"] is False
    assert growers[2]["perPodRequests"] == {"cpu": "100m", "memory": "30Mi"}
    assert growers[2]["addedRequests"] == {"cpu": "10", "memory": "3000Mi"}
    assert "100 nodes were created within 59s" in finding.message
    assert "support/Deployment/support-prometheus-server (prometheus)" in finding.message
    assert finding.first_seen == BASE_TIME + BURST_AT
    json.dumps(finding.to_json())


def test_nodes_created_slowly_are_silent() -> None:
    slow = burst(60, every=timedelta(minutes=2), start=NOW - timedelta(hours=2))
    assert run(*existing(10), *slow, *prometheus()) == []


def test_just_below_the_threshold_is_silent_and_at_it_is_a_warning() -> None:
    base = existing(60)
    assert run(*base, *burst(19, every=timedelta(seconds=10))) == []
    [finding] = run(*base, *burst(20, every=timedelta(seconds=10)))
    assert finding.severity is Severity.WARNING
    assert finding.evidence["nodesAdded"] == 20
    assert finding.evidence["loadGrowsWith"] == []
    assert "no known scraper" in finding.message


def test_doubling_a_small_cluster_is_critical() -> None:
    [finding] = run(*existing(20), *burst(25, every=timedelta(seconds=5)))
    assert finding.severity is Severity.CRITICAL


def test_window_is_configurable() -> None:
    spread = burst(30, every=timedelta(seconds=20))  # 30 nodes over ~10 minutes
    assert run(*existing(60), *spread) == []
    wide = BurstConfig(window_seconds=900)
    [finding] = run(*existing(60), *spread, config=wide)
    assert finding.evidence["nodesAdded"] == 30


def test_burst_older_than_lookback_is_history() -> None:
    long_ago = burst(80, every=timedelta(seconds=1), start=NOW - timedelta(hours=5))
    assert run(*existing(30), *long_ago) == []


def test_cluster_creation_is_not_a_burst() -> None:
    assert run(*burst(40, every=timedelta(seconds=1))) == []


def test_pools_are_counted_and_the_largest_names_the_cause() -> None:
    mixed = burst(30, every=timedelta(seconds=1)) + [
        node(f"gpu-{i}", labels={"karpenter.sh/nodepool": "gpu"}, created=BURST_AT)
        for i in range(12)
    ]
    [finding] = run(*existing(100), *mixed)
    assert finding.evidence["nodePools"] == {"dask-worker-pool": 30, "gpu": 12}
    assert finding.cause == "node-scale-burst@dask-worker-pool"


def test_daemonset_without_pods_in_view_is_estimated_and_honours_node_selector() -> None:
    everywhere = daemonset(
        "fluent-bit",
        "logging",
        containers=[container("fluent-bit", requests={"cpu": "50m", "memory": "64Mi"})],
    )
    gpu_only = daemonset(
        "nvidia-device-plugin",
        "kube-system",
        containers=[container("plugin", requests={"cpu": "10m"})],
    )
    gpu_only["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    [finding] = run(*existing(30), *burst(40, every=timedelta(seconds=1)), everywhere, gpu_only)
    [entry] = finding.evidence["loadGrowsWith"]
    assert entry["owner"] == "logging/DaemonSet/fluent-bit"
    assert entry["estimated"] is True
    assert entry["podsAdded"] == 40
    assert entry["addedRequests"] == {"cpu": "2", "memory": "2560Mi"}


def test_nodes_without_creation_time_are_ignored() -> None:
    broken = burst(30, every=timedelta(seconds=1))
    for body in broken:
        body["metadata"]["creationTimestamp"] = "not a time"
    assert run(*existing(10), *broken) == []


def test_scraper_detection_by_labels_and_images() -> None:
    def kind(image: str = "nginx:1.25", **labels: str) -> str | None:
        return scraper_kind(pod("p", labels=labels, containers=[container("c", image=image)]))

    assert kind(**{"app.kubernetes.io/name": "prometheus"}) == "prometheus"
    assert kind(**{"app.kubernetes.io/name": "prometheus-operator"}) is None
    assert kind(app="prometheus", component="node-exporter") is None
    assert kind(**{"k8s-app": "metrics-server"}) == "metrics-server"
    assert kind("grafana/alloy:v1.0.0") == "alloy"
    assert kind("grafana/agent:v0.40.0") == "grafana-agent"
    assert kind("gcr.io/datadoghq/cluster-agent:7.50.0") == "datadog"
    assert kind("otel/opentelemetry-collector-contrib:0.98.0") == "otel-collector"
    assert kind("victoriametrics/vmagent:v1.99.0") == "vmagent"
    assert kind("localhost:5000/prometheus") == "prometheus"
    assert kind("quay.io/prometheus/prometheus@sha256:abc") == "prometheus"
    assert kind("quay.io/prometheus/alertmanager:v0.27.0") is None
    assert kind("quay.io/prometheus/node-exporter:v1.8.0") is None
    assert kind("quay.io/prometheus-operator/prometheus-config-reloader:v0.73.0") is None
    assert kind() is None
