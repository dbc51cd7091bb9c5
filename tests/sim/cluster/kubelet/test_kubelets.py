"""The kubelets on the simulation engine: admission, pod lifecycle, heartbeats, host faults."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

from kubemedic.sim.cluster.kubelet import nodestatuses
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.machinery.objects import Change
from kubemedic.testing import bodies as builders

Obj = dict[str, Any]
START = datetime(2026, 1, 1, tzinfo=UTC)
LEASES = "leases.coordination.k8s.io"


def cluster(*nodes: Obj, seed: int = 0) -> tuple[Simulation, Hosts, Kubelets]:
    sim = Simulation(start=START, seed=seed)
    sim.server.load(nodes or [builders.node("n1", boot_id="boot-1")])
    hosts = Hosts()
    return sim, hosts, sim.add(Kubelets(hosts))


def create_pod(sim: Simulation, name: str, *, node: str = "n1", memory: str = "100Mi") -> Obj:
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": node,
            "containers": [
                {
                    "name": "app",
                    "image": "nginx:1.25",
                    "resources": {"requests": {"memory": memory}},
                }
            ],
        },
    }
    return Client(sim.server, "kubectl-create").create(body)


def pod(sim: Simulation, name: str) -> Obj:
    found = sim.get("pods", "default", name)
    assert found is not None
    return found


def node_condition(sim: Simulation, type_: str, name: str = "n1") -> Obj:
    node = sim.get("nodes", "", name)
    assert node is not None
    return next(c for c in node["status"]["conditions"] if c["type"] == type_)


def events(sim: Simulation, *, name: str | None = None, reason: str | None = None) -> list[Obj]:
    return [
        e
        for e in sim.objects("events")
        if (name is None or e["involvedObject"]["name"] == name)
        and (reason is None or e["reason"] == reason)
    ]


def test_a_pinned_pod_that_does_not_fit_fails_out_of_memory_with_a_kubelet_event() -> None:
    node = builders.node("n1", memory="8Gi", allocatable_memory="8000000000")
    sim, _, _ = cluster(node)
    for i in range(12):
        create_pod(sim, f"api-{i:02d}", memory="800Mi")
    sim.run_for(10)
    failed = [p for p in sim.objects("pods") if p["status"]["phase"] == "Failed"]
    running = [p for p in sim.objects("pods") if p["status"]["phase"] == "Running"]
    assert len(running) == 9 and len(failed) == 3
    # The oldest pods are admitted first; the last three are refused.
    assert sorted(p["metadata"]["name"] for p in failed) == ["api-09", "api-10", "api-11"]
    message = (
        "Node didn't have enough resource: memory, requested: 838860800, used: 7549747200, "
        "capacity: 8000000000"
    )
    rejected = pod(sim, "api-10")
    assert rejected["status"]["reason"] == "OutOfmemory"
    assert rejected["status"]["message"] == "Pod was rejected: " + message
    assert rejected["status"]["startTime"]
    (event,) = events(sim, name="api-10")
    assert (event["type"], event["reason"], event["message"]) == ("Warning", "OutOfmemory", message)
    assert event["source"] == {"component": "kubelet", "host": "n1"}


def test_admitted_pods_run_with_the_statuses_and_events_of_the_kubelet() -> None:
    sim, _, _ = cluster()
    create_pod(sim, "web")
    sim.run_for(1)
    pending = pod(sim, "web")["status"]
    assert pending["phase"] == "Pending"
    assert pending["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    sim.run_for(15)
    running = pod(sim, "web")
    status = running["status"]
    assert status["phase"] == "Running"
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "PodReadyToStartContainers": "True",
        "Initialized": "True",
        "Ready": "True",
        "ContainersReady": "True",
        "PodScheduled": "True",
    }
    (container,) = status["containerStatuses"]
    assert container["ready"] and container["started"] and container["restartCount"] == 0
    assert container["containerID"].startswith("containerd://")
    assert status["hostIP"] == "10.0.0.4" and status["podIP"].startswith("10.244.")
    entry = next(m for m in running["metadata"]["managedFields"] if m["manager"] == "kubelet")
    assert entry["subresource"] == "status" and entry["operation"] == "Update"
    assert [e["reason"] for e in sorted(events(sim, name="web"), key=_when)] == [
        "Pulling",
        "Pulled",
        "Created",
        "Started",
    ]
    started = events(sim, name="web", reason="Started")[0]
    assert started["message"] == "Started container app"
    assert started["involvedObject"]["fieldPath"] == "spec.containers{app}"


def _when(event: Obj) -> tuple[str, str]:
    return (event["firstTimestamp"], event["metadata"]["name"])


def test_the_kubelets_writes_keep_restart_counts_other_kubelet_parts_wrote() -> None:
    sim, _, _ = cluster()
    create_pod(sim, "web")
    sim.run_for(15)
    statuses = pod(sim, "web")["status"]["containerStatuses"]
    oom = {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}
    patch = {
        "status": {"containerStatuses": [{**statuses[0], "restartCount": 4, "lastState": oom}]}
    }
    Client(sim.server, "kubelet").patch(
        "v1", "Pod", "web", patch, namespace="default", subresource="status"
    )
    last: list[Obj] = []
    sim.watch("pods", lambda c: last.append(c.obj) if c.type == "MODIFIED" else None)
    Client(sim.server, "kubectl").delete("v1", "Pod", "web", namespace="default")
    sim.run_for(10)
    assert sim.get("pods", "default", "web") is None
    final = last[-1]["status"]
    assert final["phase"] == "Succeeded"
    (container,) = final["containerStatuses"]
    assert container["restartCount"] == 4 and container["lastState"] == oom
    assert container["state"]["terminated"]["reason"] == "Completed"


def test_the_node_lease_is_renewed_every_ten_seconds() -> None:
    sim, _, _ = cluster()
    renewals: list[str] = []
    sim.watch(LEASES, lambda c: renewals.append(c.obj["spec"]["renewTime"]))
    sim.run_for(61)
    assert len(renewals) == 6
    seconds = [datetime.fromisoformat(r).timestamp() for r in renewals]
    assert {round(b - a, 3) for a, b in itertools.pairwise(seconds)} == {10.0}
    lease = sim.get(LEASES, "kube-node-lease", "n1")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "n1"
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert len(lease["spec"]["renewTime"]) == len("2026-01-01T00:00:00.000000Z")
    assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"
    assert [m["manager"] for m in lease["metadata"]["managedFields"]] == ["kubelet"]


def test_a_stopped_kubelet_stops_renewing_and_a_restarted_one_resumes() -> None:
    sim, hosts, _ = cluster()
    sim.run_for(15)
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(5)
    lease = sim.get(LEASES, "kube-node-lease", "n1")
    node_rv = sim.get("nodes", "", "n1")["metadata"]["resourceVersion"]  # type: ignore[index]
    sim.run_for(600)
    assert sim.get(LEASES, "kube-node-lease", "n1") is lease
    assert sim.get("nodes", "", "n1")["metadata"]["resourceVersion"] == node_rv  # type: ignore[index]
    hosts.get("n1").restart_kubelet()
    sim.run_for(11)
    renewed = sim.get(LEASES, "kube-node-lease", "n1")
    assert renewed is not None and renewed is not lease
    (starting,) = events(sim, reason="Starting")
    assert starting["message"] == "Starting kubelet."
    assert starting["involvedObject"] == {"kind": "Node", "name": "n1", "uid": "n1"}


def test_a_hung_runtime_makes_the_node_not_ready_and_new_pods_wait_for_a_sandbox() -> None:
    sim, hosts, _ = cluster()
    hosts.get("n1").runtime = "hung"
    sim.run_for(50)
    ready = node_condition(sim, "Ready")
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "KubeletNotReady",
        "container runtime is down",
    )
    assert events(sim, reason="NodeNotReady")[0]["message"] == "Node n1 status is now: NodeNotReady"
    create_pod(sim, "stuck")
    sim.run_for(30)
    status = pod(sim, "stuck")["status"]
    assert status["phase"] == "Pending"
    assert status["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    (failed,) = events(sim, name="stuck", reason="FailedCreatePodSandBox")
    assert failed["type"] == "Warning" and failed["count"] >= 2
    assert failed["message"] == (
        "Failed to create pod sandbox: rpc error: code = DeadlineExceeded desc = context "
        "deadline exceeded"
    )
    sim.run_for(150)
    message = node_condition(sim, "Ready")["message"]
    assert message.startswith("[container runtime is down, PLEG is not healthy: pleg was last")
    assert message.endswith("ago; threshold is 3m0s]")
    hosts.get("n1").restart_runtime()
    sim.run_for(30)
    assert node_condition(sim, "Ready")["status"] == "True"
    assert pod(sim, "stuck")["status"]["phase"] == "Running"


def test_a_misconfigured_node_reports_its_network_not_ready() -> None:
    sim, hosts, _ = cluster()
    hosts.get("n1").misconfig = "persistent"
    sim.run_for(15)
    ready = node_condition(sim, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "KubeletNotReady"
    assert ready["message"] == (
        "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
        "message:Network plugin returns error: cni plugin not initialized"
    )
    create_pod(sim, "web")
    sim.run_for(10)
    (event,) = events(sim, name="web", reason="NetworkNotReady")
    assert event["message"] == "network is not ready: " + ready["message"]


def test_a_reboot_reports_a_new_boot_id_and_restarts_every_container() -> None:
    sim, hosts, _ = cluster()
    create_pod(sim, "web")
    sim.run_for(15)
    before = pod(sim, "web")["status"]["containerStatuses"][0]
    host = hosts.get("n1")
    host.reboot(sim.seconds())
    sim.run_for(host.boot_seconds + 60)
    node = sim.get("nodes", "", "n1")
    assert node is not None and node["status"]["nodeInfo"]["bootID"] == host.boot_id != "boot-1"
    (rebooted,) = events(sim, reason="Rebooted")
    assert rebooted["type"] == "Warning"
    assert rebooted["message"] == f"Node n1 has been rebooted, boot id: {host.boot_id}"
    status = pod(sim, "web")["status"]
    assert status["phase"] == "Running"
    (after,) = status["containerStatuses"]
    assert after["restartCount"] == 1 and after["ready"]
    assert after["containerID"] != before["containerID"]
    assert after["lastState"]["terminated"]["reason"] == "Unknown"
    assert after["lastState"]["terminated"]["exitCode"] == 255
    assert events(sim, name="web", reason="SandboxChanged")
    assert node_condition(sim, "Ready")["status"] == "True"


def test_graceful_deletion_stops_the_containers_and_removes_the_pod() -> None:
    sim, _, _ = cluster()
    create_pod(sim, "web")
    sim.run_for(15)
    Client(sim.server, "kubectl").delete("v1", "Pod", "web", namespace="default")
    sim.run_for(0.5)
    assert pod(sim, "web")["metadata"]["deletionTimestamp"]
    (killing,) = events(sim, name="web", reason="Killing")
    assert killing["message"] == "Stopping container app"
    sim.run_for(5)
    assert sim.get("pods", "default", "web") is None


def test_graceful_deletion_waits_for_a_kubelet_that_is_down() -> None:
    sim, hosts, _ = cluster()
    create_pod(sim, "web")
    sim.run_for(15)
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(11)
    Client(sim.server, "kubectl").delete("v1", "Pod", "web", namespace="default")
    sim.run_for(300)  # long past the 30 s grace period
    assert pod(sim, "web")["metadata"]["deletionTimestamp"]
    hosts.get("n1").restart_kubelet()
    sim.run_for(20)
    assert sim.get("pods", "default", "web") is None


def test_pods_marked_not_ready_while_the_node_was_unreachable_are_ready_again() -> None:
    sim, hosts, _ = cluster()
    create_pod(sim, "web")
    sim.run_for(15)
    hosts.get("n1").reachable = False
    sim.run_for(60)
    ready = next(c for c in pod(sim, "web")["status"]["conditions"] if c["type"] == "Ready")
    not_ready = {**ready, "status": "False", "reason": "NodeNotReady"}  # node lifecycle controller
    Client(sim.server, "kube-controller-manager").patch(
        "v1", "Pod", "web", {"status": {"conditions": [not_ready]}}, namespace="default",
        subresource="status",
    )  # fmt: skip
    sim.run_for(30)
    assert next(c for c in pod(sim, "web")["status"]["conditions"] if c["type"] == "Ready")[
        "status"
    ] == "False"  # fmt: skip
    hosts.get("n1").reachable = True
    sim.run_for(11)
    ready = next(c for c in pod(sim, "web")["status"]["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and "reason" not in ready
    assert not events(sim, reason="Starting")  # the kubelet kept running meanwhile


def test_register_creates_the_node_as_the_kubelet_and_it_becomes_ready() -> None:
    sim = Simulation(start=START, seed=3)
    hosts = Hosts()
    kubelets = sim.add(Kubelets(hosts))
    host = hosts.get("w1")
    host.booting_until = sim.seconds() + 30
    taint = {"key": "dedicated", "value": "dask", "effect": "NoSchedule"}
    template = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "w1", "labels": {"pool": "workers"}},
        "spec": {"taints": [taint], "providerID": "openstack:///w1"},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }
    kubelets.register(template)
    sim.run_for(25)
    assert sim.get("nodes", "", "w1") is None  # still booting
    sim.run_for(15)
    node = sim.get("nodes", "", "w1")
    assert node is not None
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "w1"
    assert node["metadata"]["labels"]["pool"] == "workers"
    # The kubelet adds no taint; admission (TaintNodesByCondition) adds not-ready:NoSchedule.
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    assert node["spec"]["taints"] == [taint, not_ready]
    assert node["status"]["allocatable"] == node["status"]["capacity"]
    assert node["status"]["nodeInfo"]["bootID"] == host.boot_id
    assert node["metadata"]["managedFields"][0]["manager"] == "kubelet"
    assert node_condition(sim, "Ready", "w1")["status"] == "False"
    sim.run_for(30)
    assert node_condition(sim, "Ready", "w1")["status"] == "True"
    reasons = [e["reason"] for e in sorted(events(sim, name="w1"), key=_when)]
    assert reasons[0] == "Starting"
    assert {"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"} <= set(
        reasons
    )
    assert reasons[-1] == "NodeReady"
    assert sim.get(LEASES, "kube-node-lease", "w1") is not None


def test_memory_pressure_is_posted_at_once_and_refuses_best_effort_pods() -> None:
    sim, _, kubelets = cluster()
    sim.run_for(15)
    kubelets.set_condition(
        "n1",
        "MemoryPressure",
        "True",
        "KubeletHasInsufficientMemory",
        "kubelet has insufficient memory available",
    )
    sim.step()
    assert node_condition(sim, "MemoryPressure")["status"] == "True"
    assert events(sim, reason="NodeHasInsufficientMemory")
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "be", "namespace": "default"},
        "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "busybox"}]},
    }
    Client(sim.server, "kubectl-create").create(body)
    sim.run_for(2)
    status = pod(sim, "be")["status"]
    assert (status["phase"], status["reason"]) == ("Failed", "Evicted")
    assert status["message"] == "Pod was rejected: The node had condition: [MemoryPressure]. "


def test_node_status_is_posted_when_it_changes_or_every_five_minutes() -> None:
    sim, _, _ = cluster()
    posts: list[Change] = []
    sim.watch("nodes", posts.append)
    sim.run_for(20 * 60)
    assert 3 <= len(posts) <= 5
    readies = [
        next(c for c in p.obj["status"]["conditions"] if c["type"] == "Ready") for p in posts
    ]
    beats = [datetime.fromisoformat(c["lastHeartbeatTime"]).timestamp() for c in readies]
    assert all(290 <= b - a <= 310 for a, b in itertools.pairwise(beats))


def test_status_messages_print_go_durations_and_error_aggregates() -> None:
    assert nodestatuses.go_duration(182.5) == "3m2.5s"
    assert nodestatuses.go_duration(180) == "3m0s"
    assert nodestatuses.go_duration(0.52) == "520ms"
    assert nodestatuses.go_duration(3600) == "1h0m0s"
    assert nodestatuses.aggregate([["a"]]) == "a"
    assert nodestatuses.aggregate([["a", "b"]]) == "[a, b]"
    assert nodestatuses.aggregate([["a"], ["c"]]) == "[a, c]"
    assert nodestatuses.aggregate([[], []]) == ""


def test_two_hundred_nodes_heartbeat_at_twenty_writes_per_cluster_second_cheaply() -> None:
    nodes = [builders.node(f"n{i:03d}", boot_id=f"boot-{i}") for i in range(200)]
    pods = [
        builders.pod(f"p{i:03d}-{j}", node_name=f"n{i:03d}", containers=[builders.container()])
        for i in range(200)
        for j in range(10)
    ]
    sim = Simulation(start=START)
    sim.server.load([*nodes, *pods])
    sim.add(Kubelets(Hosts()))
    sim.run_for(15)  # every lease created
    writes: list[Change] = []
    sim.watch(LEASES, writes.append)
    sim.run_for(60)  # its cost per cluster second: bench/cluster.py
    assert 1150 <= len(writes) <= 1250
