"""The node lifecycle controller: Unknown after the grace period, taints, zone rate limits."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.testing import bodies as builders

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def cluster(
    zones: dict[str, int], *, controller: NodeLifecycleController | None = None
) -> tuple[Simulation, Hosts, NodeLifecycleController]:
    """Nodes ``<zone>-<i>`` in each zone, alive, and a node lifecycle controller."""
    sim = Simulation(start=START)
    nodes = [
        builders.node(
            f"{zone}-{i}",
            labels={"topology.kubernetes.io/region": "r1", "topology.kubernetes.io/zone": zone},
        )
        for zone, count in zones.items()
        for i in range(count)
    ]
    sim.server.load(nodes)
    hosts = Hosts()
    sim.add(Kubelets(hosts))
    nlc = sim.add(controller or NodeLifecycleController())
    sim.run_for(30)
    return sim, hosts, nlc


def ready(sim: Simulation, name: str) -> dict[str, Any]:
    node = sim.get("nodes", "", name)
    assert node is not None
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


def taints(sim: Simulation, name: str) -> set[tuple[str, str]]:
    node = sim.get("nodes", "", name)
    assert node is not None
    return {(t["key"], t["effect"]) for t in node["spec"].get("taints") or ()}


def events(sim: Simulation, reason: str) -> list[dict[str, Any]]:
    return [e for e in sim.objects("events") if e["reason"] == reason]


UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


def test_registered_node_events_name_every_node_once() -> None:
    sim, _, _ = cluster({"a": 2})
    messages = sorted(e["message"] for e in events(sim, "RegisteredNode"))
    assert messages == [
        "Node a-0 event: Registered Node a-0 in Controller",
        "Node a-1 event: Registered Node a-1 in Controller",
    ]
    assert {e["source"]["component"] for e in events(sim, "RegisteredNode")} == {"node-controller"}


def test_node_goes_unknown_after_the_grace_period_when_its_kubelet_stops() -> None:
    sim, hosts, _ = cluster({"a": 3})
    before = ready(sim, "a-0")
    hosts.get("a-0").kubelet = "stopped"
    sim.run_for(40)
    assert ready(sim, "a-0")["status"] == "True"  # within the 50 s grace period
    sim.run_for(30)
    node = sim.get("nodes", "", "a-0")
    assert node is not None
    for condition in node["status"]["conditions"]:
        assert condition["status"] == "Unknown", condition
        assert condition["reason"] == "NodeStatusUnknown"
        assert condition["message"] == "Kubelet stopped posting node status."
    assert ready(sim, "a-0")["lastHeartbeatTime"] == before["lastHeartbeatTime"]
    assert ready(sim, "a-1")["status"] == "True"
    (event,) = events(sim, "NodeNotReady")
    assert event["message"] == "Node a-0 status is now: NodeNotReady"


def test_unreachable_taints_come_with_unknown_and_go_when_the_kubelet_is_back() -> None:
    sim, hosts, _ = cluster({"a": 3})
    hosts.get("a-0").kubelet = "stopped"
    sim.run_for(75)
    assert taints(sim, "a-0") == {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
    node = sim.get("nodes", "", "a-0")
    assert node is not None
    assert all(t.get("timeAdded") for t in node["spec"]["taints"])
    hosts.get("a-0").restart_kubelet()
    sim.run_for(20)
    assert ready(sim, "a-0")["status"] == "True"
    assert taints(sim, "a-0") == set()


def test_a_broken_runtime_makes_the_node_not_ready_and_tainted_not_ready() -> None:
    sim, hosts, _ = cluster({"a": 3})
    hosts.get("a-1").runtime = "hung"
    sim.run_for(60)  # the kubelet reports the runtime down after 30 s
    assert ready(sim, "a-1")["status"] == "False"
    assert taints(sim, "a-1") == {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")}


def test_cordoned_node_gets_the_unschedulable_taint() -> None:
    sim, _, _ = cluster({"a": 1})
    Client(sim.server, "kubectl").patch("v1", "Node", "a-0", {"spec": {"unschedulable": True}})
    sim.run_for(1)
    assert taints(sim, "a-0") == {("node.kubernetes.io/unschedulable", "NoSchedule")}


def test_pods_on_a_node_that_stops_are_marked_not_ready_with_an_event() -> None:
    sim = Simulation(start=START)
    sim.server.load([builders.node("n1"), builders.node("n2")])
    sim.server.load([builders.pod("web-1", node_name="n1"), builders.pod("web-2", node_name="n2")])
    hosts = Hosts()
    sim.add(Kubelets(hosts))
    sim.add(NodeLifecycleController())
    sim.run_for(30)
    hosts.get("n1").kubelet = "hung"
    sim.run_for(80)
    pod = sim.get("pods", "default", "web-1")
    assert pod is not None
    cond = next(c for c in pod["status"]["conditions"] if c["type"] == "Ready")
    assert cond["status"] == "False"
    other = sim.get("pods", "default", "web-2")
    assert other is not None
    assert other["status"]["conditions"][0]["status"] == "True"
    (event,) = [e for e in events(sim, "NodeNotReady") if e["involvedObject"]["kind"] == "Pod"]
    assert (event["type"], event["message"]) == ("Warning", "Node is not ready")
    assert event["involvedObject"]["name"] == "web-1"


def _taint_times(sim: Simulation, names: list[str]) -> list[datetime]:
    times = []
    for name in names:
        node = sim.get("nodes", "", name)
        assert node is not None
        for taint in node["spec"].get("taints") or ():
            if taint["effect"] == "NoExecute":
                times.append(datetime.fromisoformat(taint["timeAdded"]))
    return sorted(times)


def test_forty_percent_of_a_large_zone_is_normal_and_tainted_at_the_normal_rate() -> None:
    sim, hosts, nlc = cluster({"a": 60})
    dark = [f"a-{i}" for i in range(24)]  # a network fault: kubelets run but cannot post
    for name in dark:
        hosts.get(name).reachable = False
    sim.run_for(75)
    assert all(ready(sim, n)["status"] == "Unknown" for n in dark)
    assert nlc.zone_states["r1:\x00:a"] == "Normal"
    sim.run_for(120)
    times = _taint_times(sim, dark)
    assert 12 <= len(times) <= 15  # one node every 10 s since the first went Unknown
    gaps = {(b - a).total_seconds() for a, b in itertools.pairwise(times)}
    assert gaps <= {10.0, 11.0}


def test_partial_disruption_of_a_large_zone_slows_tainting_to_the_secondary_rate() -> None:
    sim, hosts, nlc = cluster({"a": 60})
    dark = [f"a-{i}" for i in range(36)]  # 60 % >= 55 %
    for name in dark:
        hosts.get(name).reachable = False
    sim.run_for(75)
    assert nlc.zone_states["r1:\x00:a"] == "PartialDisruption"
    sim.run_for(250)
    times = _taint_times(sim, dark)
    assert len(times) == 3  # one node every 100 s
    assert [(b - a).total_seconds() for a, b in itertools.pairwise(times)] == [100, 100]


def test_partial_disruption_of_a_small_zone_stops_tainting_while_other_zones_go_on() -> None:
    sim, hosts, nlc = cluster({"a": 5, "b": 5})
    for name in ("a-0", "a-1", "a-2", "b-0"):
        hosts.get(name).kubelet = "stopped"
    sim.run_for(200)
    assert nlc.zone_states == {"r1:\x00:a": "PartialDisruption", "r1:\x00:b": "Normal"}
    assert all((UNREACHABLE, "NoExecute") not in taints(sim, f"a-{i}") for i in range(3))
    assert (UNREACHABLE, "NoSchedule") in taints(sim, "a-0")
    assert (UNREACHABLE, "NoExecute") in taints(sim, "b-0")


def test_when_every_zone_is_dark_no_node_keeps_a_no_execute_taint() -> None:
    sim, hosts, nlc = cluster({"a": 2, "b": 2})
    hosts.get("a-0").reachable = False
    sim.run_for(100)
    assert (UNREACHABLE, "NoExecute") in taints(sim, "a-0")
    for host in ("a-1", "b-0", "b-1"):
        hosts.get(host).reachable = False
    sim.run_for(120)
    assert set(nlc.zone_states.values()) == {"FullDisruption"}
    for name in ("a-0", "a-1", "b-0", "b-1"):
        assert ready(sim, name)["status"] == "Unknown"
        assert (UNREACHABLE, "NoExecute") not in taints(sim, name)
        assert (UNREACHABLE, "NoSchedule") in taints(sim, name)


def test_a_node_that_never_posted_status_gets_the_startup_grace_period() -> None:
    sim = Simulation(start=START)
    fresh = builders.node("fresh", created=START)
    del fresh["status"]["conditions"]
    sim.server.load([fresh])
    sim.add(NodeLifecycleController())
    sim.run_for(55)
    node = sim.get("nodes", "", "fresh")
    assert node is not None
    assert "conditions" not in node["status"]
    sim.run_for(15)
    node = sim.get("nodes", "", "fresh")
    assert node is not None
    conditions = {c["type"]: c for c in node["status"]["conditions"]}
    assert set(conditions) == {"Ready", "MemoryPressure", "DiskPressure", "PIDPressure"}
    assert conditions["Ready"]["reason"] == "NodeStatusNeverUpdated"
    assert conditions["Ready"]["message"] == "Kubelet never posted node status."
    assert conditions["Ready"]["lastHeartbeatTime"] == rfc3339(START)


def test_node_deletion_is_recorded_as_removing_node() -> None:
    sim, _, _ = cluster({"a": 2})
    Client(sim.server, "kubectl").delete("v1", "Node", "a-1")
    sim.run_for(timedelta(seconds=10))
    (event,) = events(sim, "RemovingNode")
    assert event["message"] == "Node a-1 event: Removing Node a-1 from Controller"
