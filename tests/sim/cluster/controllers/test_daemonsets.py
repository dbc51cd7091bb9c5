"""The DaemonSet controller: one pod per eligible node, placed through the matchFields affinity,
following nodes as they come, go and change; status, rolling updates and failed-pod backoff."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from kubemedic.sim.cluster.controllers.daemonsets import (
    DaemonSetController,
    daemon_tolerations,
    target_node,
)
from kubemedic.sim.cluster.controllers.podgc import PodGC
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery.objects import Obj
from kubemedic.testing import bodies as builders
from tests.sim.cluster.controllers.test_replicasets import StandInKubelet

WORKER = {"role": "worker"}


def daemonset(name: str, *, memory: str = "64Mi", **pod_spec: Any) -> Obj:
    spec: Obj = {"containers": [builders.container("agent", requests={"memory": memory})]}
    spec.update(pod_spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }


def cluster(*nodes: Obj, extra: tuple[Any, ...] = ()) -> tuple[Simulation, Client]:
    sim = Simulation()
    sim.server.load(nodes)
    sim.add(DaemonSetController())
    sim.add(StandInKubelet(place=target_node))
    for component in extra:
        sim.add(component)
    return sim, Client(sim.server, "kubectl-create")


def daemon_pods(sim: Simulation, *, alive: bool = True) -> dict[str, Obj]:
    found = [p for p in sim.objects("pods", namespace="kube-system")]
    if alive:
        found = [p for p in found if not p["metadata"].get("deletionTimestamp")]
    return {target_node(p): p for p in found}


def status(sim: Simulation, name: str = "agent") -> Obj:
    ds = sim.get("daemonsets.apps", "kube-system", name)
    assert ds is not None
    return ds["status"]  # type: ignore[no-any-return]


def test_one_pod_lands_on_each_eligible_node_through_a_metadata_name_affinity() -> None:
    gpu_taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    sim, client = cluster(
        builders.node("w1", labels=WORKER),
        builders.node("w2", labels=WORKER, taints=[gpu_taint]),
        builders.node("infra"),
    )
    client.create(daemonset("agent", nodeSelector=WORKER))
    sim.run_for(3)
    pods = daemon_pods(sim)
    assert list(pods) == ["w1"]
    pod = pods["w1"]
    assert pod["metadata"]["name"].startswith("agent-")
    assert pod["metadata"]["labels"]["controller-revision-hash"]
    assert pod["spec"]["affinity"]["nodeAffinity"] == {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["w1"]}]}
            ]
        }
    }
    tolerations = [(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]]
    assert tolerations == [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    assert all("tolerationSeconds" not in t for t in pod["spec"]["tolerations"])
    assert status(sim) == {
        "currentNumberScheduled": 1,
        "numberMisscheduled": 0,
        "desiredNumberScheduled": 1,
        "numberReady": 1,
        "observedGeneration": 1,
        "updatedNumberScheduled": 1,
        "numberAvailable": 1,
    }
    created = [e for e in sim.objects("events") if e["reason"] == "SuccessfulCreate"]
    assert [e["message"] for e in created] == [f"Created pod: {pod['metadata']['name']}"]
    assert created[0]["source"]["component"] == "daemonset-controller"


def test_host_network_daemons_also_tolerate_an_unavailable_network() -> None:
    tolerations = daemon_tolerations({"hostNetwork": True, "tolerations": [{"operator": "Exists"}]})
    assert tolerations[0] == {"operator": "Exists"}
    assert tolerations[-1] == {
        "key": "node.kubernetes.io/network-unavailable",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    assert len(tolerations) == 8


def test_the_daemonset_follows_nodes_as_they_are_added_and_removed() -> None:
    sim, client = cluster(builders.node("n1"), extra=(PodGC(),))
    client.create(daemonset("agent"))
    sim.run_for(3)
    admin = Client(sim.server, "cluster-api")
    admin.create(builders.node("n2") | {"metadata": {"name": "n2", "labels": {}}})
    sim.run_for(3)
    # Admission tainted the new node not-ready:NoSchedule, which daemon pods do not tolerate.
    assert sorted(daemon_pods(sim)) == ["n1"]
    lifecycle = Client(sim.server, "kube-controller-manager")
    lifecycle.patch("v1", "Node", "n2", {"spec": {"taints": None}})
    sim.run_for(3)
    assert sorted(daemon_pods(sim)) == ["n1", "n2"]
    assert status(sim)["desiredNumberScheduled"] == 2
    admin.delete("v1", "Node", "n2")
    sim.run_for(3)
    assert status(sim)["desiredNumberScheduled"] == 1
    assert "n2" in daemon_pods(sim)  # a bound pod is left to the pod garbage collector
    sim.run_for(timedelta(seconds=90))
    assert sorted(daemon_pods(sim)) == ["n1"]


def test_an_untolerated_no_execute_taint_removes_the_daemon_pod_but_not_ready_does_not() -> None:
    sim, client = cluster(builders.node("n1"), builders.node("n2"))
    client.create(daemonset("agent"))
    sim.run_for(3)
    admin = Client(sim.server, "kube-controller-manager")
    not_ready = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
    evict = {"key": "maintenance", "value": "true", "effect": "NoExecute"}
    admin.patch("v1", "Node", "n1", {"spec": {"taints": [not_ready]}})
    admin.patch("v1", "Node", "n2", {"spec": {"taints": [evict]}})
    sim.settle()
    assert status(sim)["numberMisscheduled"] == 1
    assert status(sim)["desiredNumberScheduled"] == 1  # daemons tolerate not-ready
    sim.run_for(40)
    assert list(daemon_pods(sim, alive=False)) == ["n1"]
    deleted = [e for e in sim.objects("events") if e["reason"] == "SuccessfulDelete"]
    assert len(deleted) == 1


def test_failed_daemon_pods_are_replaced_with_a_growing_backoff() -> None:
    sim, client = cluster(builders.node("small", memory="1Gi"))
    client.create(daemonset("agent", memory="2Gi"))
    sim.run_for(timedelta(minutes=2))
    created = [e for e in sim.objects("events") if e["reason"] == "SuccessfulCreate"]
    failed = [e for e in sim.objects("events") if e["reason"] == "FailedDaemonPod"]
    attempts = sum(e["count"] for e in created)
    # backoff 1 s, 2 s, 4 s ... 64 s: a handful of attempts, where a ReplicaSet makes hundreds
    assert 5 <= attempts <= 9
    assert failed[0]["message"].startswith("Found failed daemon pod kube-system/agent-")
    assert failed[0]["message"].endswith("on node small, will try to kill it")


def test_a_template_change_replaces_pods_one_node_at_a_time() -> None:
    nodes = [builders.node(f"n{i}") for i in range(4)]
    sim, client = cluster(*nodes)
    client.create(daemonset("agent"))
    sim.run_for(3)
    old_hash = daemon_pods(sim)["n0"]["metadata"]["labels"]["controller-revision-hash"]
    patch = {"spec": {"template": {"metadata": {"labels": {"version": "2"}}}}}
    client.patch("apps/v1", "DaemonSet", "agent", patch, namespace="kube-system")
    missing = []
    for _ in range(150):
        sim.run_for(1)
        pods = daemon_pods(sim)
        missing.append(4 - sum(1 for p in pods.values() if p["status"]["phase"] == "Running"))
    pods = daemon_pods(sim)
    assert sorted(pods) == ["n0", "n1", "n2", "n3"]
    assert all(p["metadata"]["labels"]["version"] == "2" for p in pods.values())
    assert all(
        p["metadata"]["labels"]["controller-revision-hash"] != old_hash for p in pods.values()
    )
    assert max(missing) <= 1  # maxUnavailable 1
    assert status(sim)["updatedNumberScheduled"] == 4
