"""metrics.k8s.io from the usage model: the shape metrics-server serves, and kubectl top."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.sim.cluster.metricsserver import MetricsServer, binary_quantity, nano_quantity
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.cluster.runtime.usage import UsageModel
from kubemedic.testing import bodies as builders
from tests.sim.conftest import Running, needs_kubectl

START = datetime(2026, 1, 1, tzinfo=UTC)


def _pod(name: str, *, node: str = "n1", usage: dict[str, str] | None = None) -> dict[str, Any]:
    container = builders.container(name, requests={"memory": "256Mi", "cpu": "500m"})
    pod = builders.pod(
        name, namespace="shop", node_name=node, containers=[container], created=START
    )
    pod["metadata"]["labels"] = {"app": name}
    if usage is not None:
        pod["metadata"]["annotations"] = {f"usage.sim.kubemedic.io/{name}": json.dumps(usage)}
    return pod


def _node(name: str = "n1", **kwargs: str) -> dict[str, Any]:
    return builders.node(name, cpu="4", memory="8Gi", **kwargs)


def _cluster(
    *objects: dict[str, Any], hosts: Hosts | None = None
) -> tuple[Simulation, MetricsServer]:
    sim = Simulation(start=START)
    sim.server.load(objects)
    usage = sim.add(UsageModel())
    metrics = sim.add(MetricsServer(usage, hosts=hosts))
    return sim, metrics


def _read(sim: Simulation, store: str, namespace: str, name: str) -> dict[str, Any] | None:
    sim.server.read_hooks[store]()
    return sim.get(store, namespace, name)


def test_pod_metrics_carry_each_running_containers_usage() -> None:
    sim, _ = _cluster(_node(), _pod("web", usage={"memory": "300Mi", "cpu": "250m"}))
    metrics = _read(sim, "pods.metrics.k8s.io", "shop", "web")
    assert metrics is not None
    assert metrics["apiVersion"] == "metrics.k8s.io/v1beta1"
    assert metrics["kind"] == "PodMetrics"
    assert metrics["metadata"]["labels"] == {"app": "web"}
    assert metrics["timestamp"] == "2026-01-01T00:00:00Z"
    assert metrics["window"] == "15s"
    [container] = metrics["containers"]
    assert container["name"] == "web"
    assert container["usage"]["memory"] == "300Mi"
    cpu = container["usage"]["cpu"]
    assert cpu.endswith("n")
    assert 249_000_000 < int(cpu[:-1]) <= 250_000_000


def test_node_metrics_add_the_system_daemons_to_the_pods() -> None:
    node = _node(allocatable_memory="7Gi", allocatable_cpu="3800m")
    sim, _ = _cluster(node, _pod("web", usage={"memory": "1Gi", "cpu": "1"}))
    metrics = _read(sim, "nodes.metrics.k8s.io", "", "n1")
    assert metrics is not None
    assert metrics["kind"] == "NodeMetrics"
    assert metrics["metadata"]["labels"]["kubernetes.io/hostname"] == "n1"
    # 1Gi for the pod, 1Gi - 100Mi reserved for the system daemons.
    assert metrics["usage"]["memory"] == binary_quantity(2 * 1024**3 - 100 * 1024**2)
    assert 1_199_000_000 < int(metrics["usage"]["cpu"][:-1]) <= 1_200_000_000


def test_contended_cpu_is_reported_as_what_the_containers_get() -> None:
    sim, _ = _cluster(
        _node(),
        _pod("a", usage={"cpu": "4"}),
        _pod("b", usage={"cpu": "4"}),
    )
    for name in ("a", "b"):
        metrics = _read(sim, "pods.metrics.k8s.io", "shop", name)
        assert metrics is not None
        assert 1_999_000_000 < int(metrics["containers"][0]["usage"]["cpu"][:-1]) <= 2 * 10**9


def test_metrics_refresh_at_most_once_per_resolution() -> None:
    pod = _pod("web", usage={"memory": "100Mi", "memoryPerHour": "3600Mi"})
    sim, _ = _cluster(_node(), pod)
    first = _read(sim, "pods.metrics.k8s.io", "shop", "web")
    sim.run_until(START + timedelta(seconds=10))
    again = _read(sim, "pods.metrics.k8s.io", "shop", "web")
    assert again == first
    sim.run_until(START + timedelta(seconds=16))
    later = _read(sim, "pods.metrics.k8s.io", "shop", "web")
    assert later is not None
    assert later["timestamp"] == "2026-01-01T00:00:16Z"
    assert later["containers"][0]["usage"]["memory"] == "116Mi"


def test_pods_that_went_away_or_stopped_lose_their_metrics() -> None:
    sim, metrics = _cluster(_node(), _pod("web"), _pod("job"))
    metrics.refresh()
    assert sim.count("pods.metrics.k8s.io") == 2
    job = sim.get("pods", "shop", "job")
    assert job is not None
    sim.server.load([{**job, "status": {**job["status"], "phase": "Succeeded"}}])
    sim.server.store.remove("pods", ("shop", "web"))
    metrics.refresh()
    assert sim.count("pods.metrics.k8s.io") == 0


def test_a_node_whose_kubelet_cannot_be_scraped_has_no_metrics() -> None:
    hosts = Hosts()
    hosts.get("n2").kubelet = "hung"
    sim, metrics = _cluster(_node(), _node("n2"), _pod("web"), _pod("db", node="n2"), hosts=hosts)
    metrics.refresh()
    assert sim.get("nodes.metrics.k8s.io", "", "n1") is not None
    assert sim.get("nodes.metrics.k8s.io", "", "n2") is None
    assert sim.get("pods.metrics.k8s.io", "shop", "db") is None


def test_quantities_print_as_the_api_machinery_prints_them() -> None:
    assert [nano_quantity(n) for n in (0, 250_000_000, 2 * 10**9, 1_500, 412_345_678)] == [
        "0",
        "250m",
        "2",
        "1500n",
        "412345678n",
    ]
    assert [binary_quantity(n) for n in (0, 1000, 4096, 300 * 1024**2, 1_000_001)] == [
        "0",
        "1000",
        "4Ki",
        "300Mi",
        "1000001",
    ]


def _serve(emulator: Running) -> None:
    def setup() -> None:
        sim = Simulation(emulator.server)
        usage = sim.add(UsageModel())
        sim.add(MetricsServer(usage))
        node = _node(allocatable_memory="7Gi", allocatable_cpu="3800m")
        web = _pod("web", usage={"memory": "300Mi", "cpu": "250m"})
        emulator.server.load([node, web])

    emulator.call(setup)


def test_metrics_are_served_over_http_in_the_metrics_server_shape(emulator: Running) -> None:
    _serve(emulator)
    code, body, _ = emulator.request("GET", "/apis/metrics.k8s.io/v1beta1/nodes")
    assert code == 200
    assert body["kind"] == "NodeMetricsList"
    [node] = body["items"]
    assert set(node) >= {"metadata", "timestamp", "window", "usage"}
    assert set(node["usage"]) == {"cpu", "memory"}
    path = "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web"
    code, pod, _ = emulator.request("GET", path)
    assert code == 200
    assert pod["containers"][0]["usage"]["memory"] == "300Mi"
    code, _, _ = emulator.request("DELETE", path)
    assert code == 405


@needs_kubectl
def test_kubectl_top_reads_nodes_and_pods_from_the_emulator(emulator: Running) -> None:
    _serve(emulator)
    nodes = emulator.kubectl("top", "nodes").stdout.split("\n")
    assert nodes[0].split() == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    # 250m for web + 200m reserved; 300Mi + 924Mi; percentages of allocatable.
    assert nodes[1].split() == ["n1", "450m", "11%", "1224Mi", "17%"]
    pods = emulator.kubectl("top", "pods", "-n", "shop", "--containers").stdout.split("\n")
    assert pods[1].split() == ["web", "web", "250m", "300Mi"]


def test_refreshed_metrics_are_served_but_are_not_writes_nor_watch_events() -> None:
    """The metrics API is not backed by etcd and cannot be watched: a refresh of every pod's
    metrics must not move resourceVersions nor push real changes out of the watch history."""
    sim, metrics = _cluster(_node(), _pod("web"), _pod("api"))
    changes: list[str] = []
    sim.server.store.listeners.append(lambda change: changes.append(change.store))
    before, history = sim.server.store.resource_version, len(sim.server.store.history)
    for _ in range(3):
        metrics.refresh()
        sim.run_for(20)
    assert sim.server.store.resource_version == before
    assert len(sim.server.store.history) == history
    assert not [store for store in changes if store.endswith("metrics.k8s.io")]
    served = sim.get("pods.metrics.k8s.io", "shop", "api")
    assert served is not None and "resourceVersion" not in served["metadata"]
    assert sim.count("pods.metrics.k8s.io") == 2
