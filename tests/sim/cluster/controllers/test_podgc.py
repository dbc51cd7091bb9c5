"""The pod garbage collector: terminated pods above the threshold, orphans after quarantine,
terminating pods nobody will finish, and the failed-pod storm held at the threshold."""

from __future__ import annotations

from datetime import timedelta

from kubemedic.sim.cluster.controllers.podgc import PodGC
from kubemedic.sim.cluster.controllers.replicasets import ReplicaSetController
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery.objects import Change, Obj
from kubemedic.testing import bodies as builders
from tests.sim.cluster.controllers.test_replicasets import StandInKubelet, replicaset

T0 = builders.BASE_TIME


def simulation(*objects: Obj, threshold: int = 12_500) -> tuple[Simulation, PodGC]:
    sim = Simulation(start=T0 + timedelta(hours=1))
    sim.server.load(objects)
    gc = sim.add(PodGC(threshold))
    return sim, gc


def names(sim: Simulation) -> set[str]:
    return {p["metadata"]["name"] for p in sim.objects("pods")}


def test_terminated_pods_above_the_threshold_go_evicted_first_then_oldest() -> None:
    failed = [
        builders.pod(
            f"failed-{i}",
            node_name="n1",
            phase="Failed",
            reason="OutOfmemory",
            created=timedelta(minutes=i),
        )
        for i in range(6)
    ]
    evicted = builders.pod(
        "evicted", node_name="n1", phase="Failed", reason="Evicted", created=timedelta(minutes=30)
    )
    done = builders.pod("done", node_name="n1", phase="Succeeded", created=timedelta(minutes=3))
    running = builders.pod("running", node_name="n1", created=timedelta(minutes=-5))
    sim, gc = simulation(builders.node("n1"), *failed, evicted, done, running, threshold=5)
    sim.run_for(21)
    assert gc.deleted == 3
    assert names(sim) == {"failed-2", "failed-3", "failed-4", "failed-5", "done", "running"}
    assert not list(sim.objects("events"))  # PodGC only logs


def test_nothing_is_collected_below_the_default_threshold() -> None:
    failed = [builders.pod(f"f-{i}", node_name="n1", phase="Failed") for i in range(50)]
    sim, gc = simulation(builders.node("n1"), *failed)
    sim.run_for(timedelta(minutes=5))
    assert gc.deleted == 0 and len(names(sim)) == 50


def test_orphaned_pods_are_failed_and_deleted_after_the_quarantine() -> None:
    orphan = builders.pod("orphan", node_name="gone")
    sim, _ = simulation(orphan)
    last: list[Obj] = []
    sim.watch("pods", lambda change: last.append(change.obj) if change.type != "DELETED" else None)
    sim.run_for(21)
    assert "orphan" in names(sim)  # first seen missing: quarantined for 40 s
    sim.run_for(60)
    assert "orphan" not in names(sim)
    status = last[-1]["status"]
    assert status["phase"] == "Failed"
    (condition,) = [c for c in status["conditions"] if c["type"] == "DisruptionTarget"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "True",
        "DeletionByPodGC",
        "PodGC: node no longer exists",
    )


def test_a_node_that_comes_back_within_the_quarantine_keeps_its_pods() -> None:
    sim, gc = simulation(builders.pod("p", node_name="late"))
    sim.run_for(21)
    sim.server.load([builders.node("late")])
    sim.run_for(60)
    assert gc.deleted == 0 and names(sim) == {"p"}


def test_terminating_pods_on_out_of_service_nodes_are_force_deleted() -> None:
    taint = {
        "key": "node.kubernetes.io/out-of-service",
        "value": "nodeshutdown",
        "effect": "NoExecute",
    }
    node = builders.node("down", ready="False", taints=[taint])
    pod = builders.pod("stuck", node_name="down")
    pod["spec"]["terminationGracePeriodSeconds"] = 3600
    sim, gc = simulation(node, pod)
    Client(sim.server, "kubectl").delete("v1", "Pod", "stuck", namespace="default")
    assert sim.get("pods", "default", "stuck") is not None  # graceful: an hour to go
    sim.run_for(21)
    assert gc.deleted == 1 and "stuck" not in names(sim)


def test_unscheduled_terminating_pods_are_marked_failed() -> None:
    pod = builders.pod("held", phase="Pending")
    pod["metadata"]["finalizers"] = ["example.com/hold"]
    sim, _ = simulation(pod)
    Client(sim.server, "kubectl").delete("v1", "Pod", "held", namespace="default")
    sim.run_for(21)
    held = sim.get("pods", "default", "held")
    assert held is not None and held["status"]["phase"] == "Failed"


def test_a_failed_pod_storm_is_held_near_the_threshold_oldest_first() -> None:
    sim = Simulation()
    sim.server.load([builders.node("node-1", memory="8Gi")])
    sim.add(ReplicaSetController())
    sim.add(StandInKubelet())
    gc = sim.add(PodGC(200))
    deleted: list[Obj] = []

    def on_pod(change: Change) -> None:
        if change.type == "DELETED":
            deleted.append(change.obj)

    sim.watch("pods", on_pod)
    client = Client(sim.server, "kubectl-create")
    client.create(replicaset("gateway", 12, node_name="node-1", memory="800Mi"))
    sim.run_for(timedelta(minutes=3))
    failed = [p for p in sim.objects("pods") if p["status"]["phase"] == "Failed"]
    assert gc.deleted > 500
    assert 200 <= len(failed) <= 200 + 8 * 21  # what one gc period of the storm adds
    newest_deleted = max(p["metadata"]["creationTimestamp"] for p in deleted)
    oldest_kept = min(p["metadata"]["creationTimestamp"] for p in failed)
    assert newest_deleted <= oldest_kept
