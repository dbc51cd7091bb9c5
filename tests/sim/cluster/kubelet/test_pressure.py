"""OOM kills, memory-pressure eviction and starved liveness probes, through the engine."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.sim.cluster.kubelet.pressure import NodePressure, go_duration
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.cluster.runtime.usage import UsageModel, starved_probe_output
from kubemedic.testing import bodies as builders

START = datetime(2026, 1, 1, tzinfo=UTC)


def _pod(
    name: str,
    *,
    node: str = "core-1",
    namespace: str = "jhub",
    usage: dict[str, str] | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    liveness: dict[str, Any] | None = None,
    priority: int = 0,
) -> dict[str, Any]:
    container = builders.container(name, requests=requests, limits=limits, liveness=liveness)
    pod = builders.pod(
        name,
        namespace=namespace,
        node_name=node,
        containers=[container],
        created=START,
        priority=priority,
    )
    pod["status"]["podIP"] = "10.0.3.7"
    pod["status"]["containerStatuses"][0]["containerID"] = "containerd://" + "a" * 64
    if usage is not None:
        pod["metadata"]["annotations"] = {f"usage.sim.kubemedic.io/{name}": json.dumps(usage)}
    return pod


def _cluster(
    *objects: dict[str, Any], hosts: Hosts | None = None
) -> tuple[Simulation, NodePressure]:
    sim = Simulation(start=START)
    sim.server.load(objects)
    usage = sim.add(UsageModel())
    pressure = sim.add(NodePressure(hosts or Hosts(), usage))
    return sim, pressure


def _status(sim: Simulation, name: str, namespace: str = "jhub") -> dict[str, Any]:
    pod = sim.get("pods", namespace, name)
    assert pod is not None
    return dict(pod["status"])


def _events(sim: Simulation, reason: str) -> list[dict[str, Any]]:
    return [e for e in sim.objects("events") if e["reason"] == reason]


def _at(seconds: float) -> datetime:
    return START + timedelta(seconds=seconds)


def test_a_container_over_its_limit_is_oom_killed_and_restarts_with_growing_back_off() -> None:
    leaky = _pod(
        "worker",
        usage={"memory": "300Mi"},
        requests={"memory": "100Mi"},
        limits={"memory": "200Mi"},
    )
    sim, pressure = _cluster(builders.node("core-1", memory="8Gi"), leaky)
    seen: list[tuple[int, str]] = []
    messages: set[str] = set()
    for second in range(1, 400):
        sim.run_until(_at(second))
        [status] = _status(sim, "worker")["containerStatuses"]
        state = next(iter(status["state"]))
        if not seen or seen[-1] != (status["restartCount"], state):
            seen.append((status["restartCount"], state))
        waiting = status["state"].get("waiting")
        if waiting:
            messages.add(waiting["message"].split(" restarting")[0])
        if state == "terminated":
            terminated = status["state"]["terminated"]
            assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
            assert terminated["startedAt"] <= terminated["finishedAt"]
    # First exit: restarted at once. Later ones wait in CrashLoopBackOff, longer each time.
    assert seen[:4] == [(0, "running"), (0, "terminated"), (1, "running"), (1, "terminated")]
    assert (1, "waiting") in seen
    assert messages >= {"back-off 10s", "back-off 20s", "back-off 40s", "back-off 1m20s"}
    [status] = _status(sim, "worker")["containerStatuses"]
    assert status["lastState"]["terminated"]["reason"] == "OOMKilled"
    assert 4 <= status["restartCount"] <= 6
    assert pressure.oom_kills == status["restartCount"] + (0 if "running" in status["state"] else 1)


def test_the_back_off_message_and_events_name_the_pod_as_the_kubelet_does() -> None:
    leaky = _pod("worker", usage={"memory": "1Gi"}, limits={"memory": "512Mi"})
    sim, _ = _cluster(builders.node("core-1"), leaky)
    sim.run_until(_at(60))
    uid = leaky["metadata"]["uid"]
    [backoff] = _events(sim, "BackOff")
    assert backoff["message"] == (
        f"Back-off restarting failed container worker in pod worker_jhub({uid})"
    )
    assert backoff["involvedObject"]["fieldPath"] == "spec.containers{worker}"
    assert backoff["source"] == {"component": "kubelet", "host": "core-1"}
    assert backoff["count"] >= 2
    oom = _events(sim, "SystemOOM")
    assert oom
    assert oom[0]["involvedObject"]["kind"] == "Node"
    assert oom[0]["involvedObject"]["name"] == "core-1"
    assert oom[0]["message"].startswith("System OOM encountered, victim process: worker, pid: ")
    assert {e["message"] for e in _events(sim, "Created")} == {"Created container: worker"}
    waiting = _status(sim, "worker")["containerStatuses"][0]["state"].get("waiting")
    if waiting:
        assert waiting["reason"] == "CrashLoopBackOff"
        assert waiting["message"].endswith(f"container=worker pod=worker_jhub({uid})")


def test_the_back_off_resets_after_ten_minutes_of_running() -> None:
    # Grows past its limit in about 11 minutes, so each run lasts longer than 10 minutes.
    slow = _pod(
        "worker",
        usage={"memory": "100Mi", "memoryPerHour": "600Mi"},
        limits={"memory": "210Mi"},
    )
    sim, pressure = _cluster(builders.node("core-1"), slow)
    sim.run_until(_at(3600))
    assert pressure.oom_kills >= 4
    assert not [e for e in sim.objects("events") if e["reason"] == "BackOff"], (
        "every exit came after 10 minutes of running: restarted at once"
    )


def test_status_writes_are_the_kubelets_on_the_status_subresource() -> None:
    sim, _ = _cluster(
        builders.node("core-1"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "jhub"}},
    )
    body = _pod("worker", usage={"memory": "1Gi"}, limits={"memory": "512Mi"})
    Client(sim.server, "kubectl-create").create(body)
    running = {"phase": "Running", "containerStatuses": body["status"]["containerStatuses"]}
    Client(sim.server, "kubelet").patch(
        "v1", "Pod", "worker", {"status": running}, namespace="jhub", subresource="status"
    )
    sim.run_until(_at(30))
    pod = sim.get("pods", "jhub", "worker")
    assert pod is not None
    managers = {(m["manager"], m.get("subresource")) for m in pod["metadata"]["managedFields"]}
    assert managers == {("kubectl-create", None), ("kubelet", "status")}
    [status] = pod["status"]["containerStatuses"]
    assert status["restartCount"] >= 1
    ready = {c["type"]: c for c in pod["status"]["conditions"]}
    assert ready["Ready"]["status"] in ("True", "False")
    if ready["Ready"]["status"] == "False":
        assert ready["Ready"]["message"] == "containers with unready status: [worker]"


def _incident() -> tuple[Simulation, NodePressure]:
    """The core node of the 2i2c incident: Prometheus under its 20Gi request, the hub over its
    128Mi one, and not 100Mi left on the node."""
    node = builders.node("core-1", cpu="4", memory="21Gi")
    prometheus = _pod(
        "prometheus",
        namespace="support",
        usage={"memory": "20210Mi"},
        requests={"memory": "20Gi", "cpu": "1"},
        limits={"memory": "22Gi"},
    )
    hub = _pod("hub", usage={"memory": "300Mi"}, requests={"memory": "128Mi", "cpu": "10m"})
    proxy = _pod("proxy", usage={"memory": "900Mi"}, requests={"memory": "1Gi"})
    return _cluster(node, prometheus, hub, proxy)


def test_memory_pressure_evicts_the_hub_before_prometheus_with_the_kubelet_message() -> None:
    sim, pressure = _incident()
    sim.run_until(_at(30))
    hub = _status(sim, "hub")
    assert (hub["phase"], hub["reason"]) == ("Failed", "Evicted")
    assert hub["message"] == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 94Mi. "
        "Container hub was using 300Mi, request is 128Mi, has larger consumption of memory. "
    )
    disruption = next(c for c in hub["conditions"] if c["type"] == "DisruptionTarget")
    assert (disruption["status"], disruption["reason"]) == ("True", "TerminationByKubelet")
    assert _status(sim, "prometheus", "support")["phase"] == "Running"
    assert _status(sim, "proxy")["phase"] == "Running"
    assert pressure.evictions == 1
    [evicted] = _events(sim, "Evicted")
    assert evicted["type"] == "Warning"
    assert evicted["message"] == hub["message"]
    assert evicted["metadata"]["annotations"] == {
        "offending_containers": "hub",
        "offending_containers_usage": "300Mi",
        "starved_resource": "memory",
    }
    [met] = _events(sim, "EvictionThresholdMet")
    assert met["message"] == "Attempting to reclaim memory"
    assert met["involvedObject"]["kind"] == "Node"
    assert [e["message"] for e in _events(sim, "Killing")] == ["Stopping container hub"]


def test_memory_pressure_is_reported_on_the_node_until_the_transition_period_ends() -> None:
    sim, pressure = _incident()
    sim.run_until(_at(30))
    node = sim.get("nodes", "", "core-1")
    assert node is not None
    condition = next(c for c in node["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (condition["status"], condition["reason"]) == ("True", "KubeletHasInsufficientMemory")
    assert pressure.under_memory_pressure("core-1")
    assert [e["message"] for e in _events(sim, "NodeHasInsufficientMemory")] == [
        "Node core-1 status is now: NodeHasInsufficientMemory"
    ]
    sim.run_until(_at(4 * 60))
    assert pressure.under_memory_pressure("core-1"), "kept for the 5-minute transition period"
    sim.run_until(_at(6 * 60))
    assert not pressure.under_memory_pressure("core-1")
    node = sim.get("nodes", "", "core-1")
    assert node is not None
    condition = next(c for c in node["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (condition["status"], condition["reason"]) == ("False", "KubeletHasSufficientMemory")


def test_the_condition_goes_through_the_kubelets_when_they_are_attached() -> None:
    calls: list[tuple[str, ...]] = []

    class Kubelets:
        name = "kubelets"

        def attach(self, sim: Simulation) -> None:
            pass

        def sync(self) -> bool:
            return False

        def set_condition(self, *args: str) -> None:
            calls.append(args)

    sim, _ = _incident()
    sim.add(Kubelets())
    sim.run_until(_at(30))
    assert calls == [
        (
            "core-1",
            "MemoryPressure",
            "True",
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
        )
    ]


def test_prometheus_growing_with_the_node_count_pushes_its_node_into_eviction() -> None:
    node = builders.node("core-1", cpu="8", memory="21Gi")
    prometheus = _pod(
        "prometheus",
        namespace="support",
        usage={"memory": "16Gi", "memoryPerNode": "30Mi"},
        requests={"memory": "20Gi"},
        limits={"memory": "22Gi"},
    )
    hub = _pod("hub", usage={"memory": "300Mi"}, requests={"memory": "128Mi"})
    proxy = _pod("proxy", usage={"memory": "1000Mi"}, requests={"memory": "1Gi"})
    others = [builders.node(f"worker-{i}") for i in range(25)]
    sim, pressure = _cluster(node, prometheus, hub, proxy, *others)
    sim.run_until(_at(60))
    assert pressure.evictions == 0
    # 100 nodes in a minute: Prometheus grows to 16Gi + 126 x 30Mi, still under its request.
    sim.server.load([builders.node(f"dask-{i}") for i in range(100)])
    sim.run_until(_at(120))
    assert _status(sim, "hub")["reason"] == "Evicted"
    assert _status(sim, "prometheus", "support")["phase"] == "Running"
    assert _status(sim, "proxy")["phase"] == "Running"
    assert pressure.evictions == 1


def test_critical_pods_are_not_evicted() -> None:
    node = builders.node("core-1", memory="2Gi")
    dns = _pod("dns", usage={"memory": "2000Mi"}, requests={"memory": "70Mi"})
    dns["spec"]["priority"] = 2_000_001_000
    sim, pressure = _cluster(node, dns)
    sim.run_until(_at(30))
    assert pressure.under_memory_pressure("core-1")
    assert pressure.evictions == 0
    assert _status(sim, "dns")["phase"] == "Running"


def _starved() -> tuple[Simulation, NodePressure]:
    """A 2-CPU node saturated by a big consumer; the hub needs 500m while starting, on 10m."""
    node = builders.node("core-1", cpu="2", memory="16Gi")
    liveness = {
        "httpGet": {"path": "/hub/health", "port": "http"},
        "periodSeconds": 10,
        "failureThreshold": 3,
        "timeoutSeconds": 1,
    }
    hub = _pod(
        "hub",
        usage={"cpu": "20m", "startupCpu": "500m"},
        requests={"cpu": "10m", "memory": "128Mi"},
        liveness=liveness,
    )
    hub["spec"]["containers"][0]["ports"] = [{"name": "http", "containerPort": 8081}]
    hub["spec"]["terminationGracePeriodSeconds"] = 30
    prometheus = _pod(
        "prometheus", namespace="support", usage={"cpu": "3"}, requests={"cpu": "1900m"}
    )
    return _cluster(node, hub, prometheus)


def test_a_cpu_starved_container_fails_its_liveness_probe_and_is_restarted() -> None:
    sim, pressure = _starved()
    sim.run_until(_at(120))
    unhealthy = _events(sim, "Unhealthy")
    assert unhealthy
    assert unhealthy[0]["message"] == (
        'Liveness probe failed: Get "http://10.0.3.7:8081/hub/health": context deadline '
        "exceeded (Client.Timeout exceeded while awaiting headers)"
    )
    assert unhealthy[0]["involvedObject"]["fieldPath"] == "spec.containers{hub}"
    [killing] = _events(sim, "Killing")
    assert killing["message"] == "Container hub failed liveness probe, will be restarted"
    assert killing["type"] == "Normal"
    [status] = _status(sim, "hub")["containerStatuses"]
    assert status["restartCount"] >= 1
    assert status["lastState"]["terminated"]["reason"] == "Error"
    assert status["lastState"]["terminated"]["exitCode"] == 137
    assert pressure.probe_kills >= 1
    assert _status(sim, "prometheus", "support")["containerStatuses"][0]["restartCount"] == 0
    # Starting again, it starves again: the restarts go on.
    sim.run_until(_at(15 * 60))
    [status] = _status(sim, "hub")["containerStatuses"]
    assert status["restartCount"] >= 3


def test_a_container_that_gets_the_cpu_it_needs_passes_its_probes() -> None:
    sim, pressure = _starved()
    prometheus = sim.get("pods", "support", "prometheus")
    assert prometheus is not None
    sim.server.load([{**prometheus, "metadata": {**prometheus["metadata"], "annotations": {}}}])
    sim.run_until(_at(10 * 60))
    assert pressure.probe_kills == 0
    assert not _events(sim, "Unhealthy")


def test_a_node_whose_kubelet_is_stopped_kills_and_evicts_nothing() -> None:
    hosts = Hosts()
    hosts.get("core-1").kubelet = "stopped"
    leaky = _pod("worker", usage={"memory": "1Gi"}, limits={"memory": "512Mi"})
    sim, pressure = _cluster(builders.node("core-1", memory="1Gi"), leaky, hosts=hosts)
    sim.run_until(_at(120))
    assert pressure.oom_kills == 0
    assert pressure.evictions == 0
    assert _status(sim, "worker")["containerStatuses"][0]["restartCount"] == 0


def test_probe_timeouts_read_as_the_prober_reports_them() -> None:
    pod = _pod("hub")
    container = {"name": "hub", "ports": [{"name": "web", "containerPort": 80}]}
    tcp = {"tcpSocket": {"port": "web"}}
    assert starved_probe_output(pod, container, tcp) == "dial tcp 10.0.3.7:80: i/o timeout"
    grpc = {"grpc": {"port": 9090}, "timeoutSeconds": 2}
    assert starved_probe_output(pod, container, grpc) == (
        "timeout: health rpc did not complete within 2s"
    )
    command = {"exec": {"command": ["sh", "-c", "pg_isready"]}}
    assert starved_probe_output(pod, container, command) == 'command "sh -c pg_isready" timed out'


def test_back_off_durations_print_as_go_durations() -> None:
    assert [go_duration(s) for s in (10, 80, 160, 300, 3600)] == [
        "10s",
        "1m20s",
        "2m40s",
        "5m0s",
        "1h0m0s",
    ]
