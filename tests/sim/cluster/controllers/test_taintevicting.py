"""The taint-eviction controller: pods leave NoExecute-tainted nodes after their toleration."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController
from kubemedic.sim.cluster.controllers.taintevicting import (
    TaintEvictionController,
    matching_tolerations,
    min_toleration_seconds,
)
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.testing import bodies as builders

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
UNREACHABLE = "node.kubernetes.io/unreachable"


def _pod(name: str, *, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def setup() -> tuple[Simulation, Hosts, Client]:
    sim = Simulation(start=START)
    sim.server.load([builders.node("n1"), builders.node("n2")])
    hosts = Hosts()
    sim.add(Kubelets(hosts))
    sim.add(NodeLifecycleController())
    return sim, hosts, Client(sim.server, "kubectl")


def create_bound(client: Client, body: dict[str, Any], node: str) -> None:
    client.create(body)  # through admission: the default 300 s tolerations are added
    client.bind("default", body["metadata"]["name"], node)


def deleting(sim: Simulation, name: str) -> bool:
    pod = sim.get("pods", "default", name)
    return pod is None or bool(pod["metadata"].get("deletionTimestamp"))


def events(sim: Simulation, reason: str) -> list[dict[str, Any]]:
    return [e for e in sim.objects("events") if e["reason"] == reason]


def test_pods_leave_an_unreachable_node_after_the_default_300_second_toleration() -> None:
    sim, hosts, client = setup()
    create_bound(client, _pod("web"), "n1")
    create_bound(client, _pod("other"), "n2")
    sim.run_for(20)
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(75)
    node = sim.get("nodes", "", "n1")
    assert node is not None
    (taint,) = [t for t in node["spec"]["taints"] if t["effect"] == "NoExecute"]
    tainted_at = datetime.fromisoformat(taint["timeAdded"])
    sim.run_until(tainted_at + timedelta(seconds=299))
    assert not deleting(sim, "web")
    sim.run_until(tainted_at + timedelta(seconds=302))
    assert deleting(sim, "web")
    assert not deleting(sim, "other")
    (event,) = events(sim, "TaintManagerEviction")
    assert event["message"] == "Marking for deletion Pod default/web"
    assert event["source"]["component"] == "taint-eviction-controller"
    assert event["involvedObject"] == {
        "kind": "Pod",
        "namespace": "default",
        "name": "web",
        "apiVersion": "v1",
    }


def test_the_pod_is_marked_as_a_disruption_target_before_it_is_deleted() -> None:
    sim, hosts, client = setup()
    brief = [
        {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}
    ]
    create_bound(client, _pod("web", tolerations=brief), "n1")
    sim.server.writer.stand_in_kubelet = False  # a dead node never confirms the deletion
    sim.run_for(20)
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(80)
    pod = sim.get("pods", "default", "web")
    assert pod is not None and pod["metadata"].get("deletionTimestamp")
    target = next(c for c in pod["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert target["status"] == "True"
    assert target["reason"] == "DeletionByTaintManager"
    assert target["message"] == "Taint manager: deleting due to NoExecute taint"


def test_a_pod_without_a_matching_toleration_is_deleted_at_once() -> None:
    sim, _, client = setup()
    sim.run_for(5)
    create_bound(client, _pod("fragile", tolerations=[]), "n1")
    create_bound(client, _pod("steady"), "n1")
    taint = {"key": "maintenance", "value": "now", "effect": "NoExecute"}
    client.patch("v1", "Node", "n1", {"spec": {"taints": [taint]}})
    sim.run_for(1)
    assert deleting(sim, "fragile")
    assert deleting(sim, "steady")  # the default tolerations do not cover this taint


def test_a_toleration_without_seconds_keeps_the_pod_forever() -> None:
    sim, hosts, client = setup()
    forever = [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}]
    create_bound(client, _pod("log-shipper", tolerations=forever), "n1")
    sim.run_for(10)
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(3600)
    assert not deleting(sim, "log-shipper")
    assert events(sim, "TaintManagerEviction") == []


def test_recovery_before_the_toleration_ends_cancels_the_deletion() -> None:
    sim, hosts, client = setup()
    create_bound(client, _pod("web"), "n1")
    sim.run_for(10)
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(120)
    hosts.get("n1").restart_kubelet()
    sim.run_for(600)
    assert not deleting(sim, "web")
    (event,) = events(sim, "TaintManagerEviction")
    assert event["message"] == "Cancelling deletion of Pod default/web"


def test_a_pod_bound_to_an_already_tainted_node_gets_its_own_clock() -> None:
    sim, _, client = setup()
    assert sim.find(TaintEvictionController) is not None  # attached by the lifecycle controller
    taint = {"key": "maintenance", "effect": "NoExecute"}
    client.patch("v1", "Node", "n2", {"spec": {"taints": [taint]}})
    sim.run_for(100)
    toleration = {
        "key": "maintenance",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    create_bound(client, _pod("late", tolerations=[toleration]), "n2")
    sim.run_for(295)
    assert not deleting(sim, "late")
    sim.run_for(10)
    assert deleting(sim, "late")


def test_matching_tolerations_and_the_smallest_toleration_time() -> None:
    taints = [{"key": "a", "effect": "NoExecute"}, {"key": "b", "effect": "NoExecute"}]
    tolerations = [
        {"key": "a", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
        {"operator": "Exists", "tolerationSeconds": 30},
    ]
    tolerated, used = matching_tolerations(taints, tolerations)
    assert tolerated and used == tolerations
    assert min_toleration_seconds(used) == 30
    assert matching_tolerations(taints, tolerations[:1]) == (False, [])
    assert min_toleration_seconds([]) == 0
    assert min_toleration_seconds([{"operator": "Exists"}]) == -1
    assert min_toleration_seconds([{"operator": "Exists", "tolerationSeconds": -5}]) == 0
