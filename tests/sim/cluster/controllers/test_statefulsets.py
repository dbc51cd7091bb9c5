"""The StatefulSet controller: one pod per ordinal, a name reused only once the old pod is gone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubemedic.sim.cluster.controllers.statefulsets import StatefulSetController
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.cluster.scheduler.scheduling import Scheduler
from kubemedic.testing import bodies as builders

Obj = dict[str, Any]
START = datetime(2026, 1, 1, tzinfo=UTC)


def statefulset(replicas: int = 3) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "postgres", "image": "postgres:16"}]},
            },
        },
    }


def cluster() -> tuple[Simulation, Hosts, StatefulSetController, Client]:
    sim = Simulation(start=START)
    sim.server.load([builders.node(f"n{i}", boot_id=f"boot-{i}") for i in (1, 2, 3)])
    hosts = Hosts()
    controller = sim.add(StatefulSetController())
    sim.add(Scheduler())
    sim.add(Kubelets(hosts))
    client = Client(sim.server, "kubectl")
    client.create(statefulset())
    sim.run_for(30)
    return sim, hosts, controller, client


def pods(sim: Simulation) -> dict[str, Obj]:
    return {p["metadata"]["name"]: p for p in sim.objects("pods", namespace="default")}


def status(sim: Simulation) -> Obj:
    sts = sim.get("statefulsets.apps", "default", "db")
    assert sts is not None
    return dict(sts["status"])


def test_pods_are_named_by_ordinal_and_counted_in_the_status() -> None:
    sim, _, controller, _ = cluster()
    assert sorted(pods(sim)) == ["db-0", "db-1", "db-2"]
    db1 = pods(sim)["db-1"]
    labels = db1["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-1"
    assert labels["apps.kubernetes.io/pod-index"] == "1"
    assert labels["controller-revision-hash"] == status(sim)["updateRevision"]
    assert (db1["spec"]["hostname"], db1["spec"]["subdomain"]) == ("db-1", "db")
    assert db1["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet"
    assert db1["status"]["phase"] == "Running"
    st = status(sim)
    assert (st["replicas"], st["readyReplicas"], st["availableReplicas"]) == (3, 3, 3)
    assert controller.created == 3
    messages = {e["message"] for e in sim.objects("events") if e["reason"] == "SuccessfulCreate"}
    assert "create Pod db-0 in StatefulSet db successful" in messages


def test_a_terminating_pod_blocks_its_name_until_it_is_gone() -> None:
    sim, hosts, _, client = cluster()
    old = pods(sim)["db-1"]
    node = old["spec"]["nodeName"]
    hosts.get(node).kubelet = "stopped"  # nobody will confirm the deletion
    client.delete("v1", "Pod", "db-1", namespace="default")
    sim.run_for(600)
    stuck = pods(sim)["db-1"]
    assert stuck["metadata"]["uid"] == old["metadata"]["uid"]
    assert stuck["metadata"]["deletionTimestamp"]
    assert len(pods(sim)) == 3  # never two pods named db-1
    assert status(sim)["readyReplicas"] == 2
    client.patch("v1", "Node", node, {"spec": {"unschedulable": True}})
    client.delete("v1", "Pod", "db-1", namespace="default", grace_seconds=0)  # force
    sim.run_for(30)
    new = pods(sim)["db-1"]
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["nodeName"] != node
    assert new["status"]["phase"] == "Running"
    assert status(sim)["readyReplicas"] == 3


def test_failed_pods_are_made_again_and_scaling_down_removes_the_highest_ordinals() -> None:
    sim, _, _, client = cluster()
    old = pods(sim)["db-0"]
    patch = {"status": {"phase": "Failed", "reason": "Evicted"}}
    client.patch("v1", "Pod", "db-0", patch, namespace="default", subresource="status")
    sim.run_for(30)
    assert pods(sim)["db-0"]["metadata"]["uid"] != old["metadata"]["uid"]
    client.patch("apps/v1", "StatefulSet", "db", {"spec": {"replicas": 1}}, namespace="default")
    sim.run_for(30)
    assert sorted(pods(sim)) == ["db-0"]
    assert status(sim)["replicas"] == 1
