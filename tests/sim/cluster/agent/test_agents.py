"""The node agent on the simulation engine: its conditions, the requests it carries out or
refuses (docs/repair.md), and its optional self-repair."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from kubemedic.model import agentcontract as contract
from kubemedic.sim.cluster.agent.agents import AgentSettings, NodeAgents
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.testing import bodies as builders

Obj = dict[str, Any]
START = datetime(2026, 1, 1, tzinfo=UTC)


def cluster(settings: AgentSettings | None = None) -> tuple[Simulation, Hosts, NodeAgents]:
    sim = Simulation(start=START)
    body = builders.node("n1", boot_id="boot-1", labels={"pool": "a"})
    Client(sim.server, "kubelet").create(body)  # registered: its fields are tracked
    hosts = Hosts()
    sim.add(Kubelets(hosts))
    agents = sim.add(NodeAgents(hosts))
    if settings is not None:
        agents.configure({"pool": "a"}, settings)
    sim.run_for(15)
    return sim, hosts, agents


def node(sim: Simulation) -> Obj:
    found = sim.get("nodes", "", "n1")
    assert found is not None
    return found


def condition(sim: Simulation, type_: str) -> Obj:
    return next(c for c in node(sim)["status"]["conditions"] if c["type"] == type_)


def request(
    sim: Simulation,
    action: str,
    rid: str,
    *,
    manager: str = contract.CONTROLLER_MANAGER,
    age: timedelta = timedelta(0),
) -> None:
    body = {
        "id": rid,
        "action": action,
        "requestedAt": rfc3339(sim.now() - age),
        "requester": "kubemedic-0_ab12",
    }
    patch = {
        "metadata": {"annotations": {contract.REQUEST_ANNOTATION: orjson.dumps(body).decode()}}
    }
    Client(sim.server, manager).patch("v1", "Node", "n1", patch, patch_type="merge")


def ack(sim: Simulation) -> Obj:
    text = node(sim)["metadata"]["annotations"][contract.ACK_ANNOTATION]
    return dict(orjson.loads(text))


def agent_events(sim: Simulation) -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in sim.objects("events")
        if e.get("source", {}).get("component") == "kubemedic-agent"
        or e.get("reportingComponent") == "kubemedic-agent"
    ]


def test_conditions_and_a_heartbeat_every_30s_through_the_status_subresource() -> None:
    sim, _, _ = cluster()
    ready = condition(sim, contract.AGENT_READY)
    assert (ready["status"], ready["reason"]) == ("True", "KubemedicAgentRunning")
    kubelet = condition(sim, contract.KUBELET_UNHEALTHY)
    assert (kubelet["status"], kubelet["reason"]) == ("False", "KubeletHealthy")
    runtime = condition(sim, contract.RUNTIME_UNHEALTHY)
    assert (runtime["status"], runtime["reason"]) == ("False", "ContainerRuntimeHealthy")
    first = ready["lastHeartbeatTime"]
    sim.run_for(30)
    again = condition(sim, contract.AGENT_READY)
    assert again["lastHeartbeatTime"] > first
    assert again["lastTransitionTime"] == ready["lastTransitionTime"]
    (entry,) = [
        f for f in node(sim)["metadata"]["managedFields"] if f["manager"] == contract.AGENT_MANAGER
    ]
    assert entry["subresource"] == "status"
    assert condition(sim, "Ready")["status"] == "True"  # the kubelet's conditions are kept


def test_a_stopped_or_hung_kubelet_is_reported_by_the_agent_which_keeps_running() -> None:
    sim, hosts, _ = cluster()
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(10)
    stopped = condition(sim, contract.KUBELET_UNHEALTHY)
    assert (stopped["status"], stopped["reason"]) == ("True", "KubeletStopped")
    beat = condition(sim, contract.AGENT_READY)["lastHeartbeatTime"]
    sim.run_for(60)
    assert condition(sim, contract.AGENT_READY)["lastHeartbeatTime"] > beat
    hosts.get("n1").kubelet = "hung"
    hosts.get("n1").runtime = "hung"
    sim.run_for(10)
    assert condition(sim, contract.KUBELET_UNHEALTHY)["reason"] == "KubeletHung"
    runtime = condition(sim, contract.RUNTIME_UNHEALTHY)
    assert (runtime["status"], runtime["reason"]) == ("True", "ContainerRuntimeHung")


def test_an_unreachable_or_powered_off_host_lets_the_heartbeat_go_stale() -> None:
    sim, hosts, _ = cluster()
    hosts.get("n1").reachable = False
    beat = condition(sim, contract.AGENT_READY)["lastHeartbeatTime"]
    sim.run_for(120)
    assert condition(sim, contract.AGENT_READY)["lastHeartbeatTime"] == beat
    hosts.get("n1").reachable = True
    hosts.get("n1").power_off()
    sim.run_for(120)
    assert condition(sim, contract.AGENT_READY)["lastHeartbeatTime"] == beat
    hosts.get("n1").power_on(sim.seconds())
    sim.run_for(120)
    assert condition(sim, contract.AGENT_READY)["lastHeartbeatTime"] > beat


def test_a_restart_request_from_the_controller_is_done_and_acknowledged() -> None:
    sim, hosts, agents = cluster()
    host = hosts.get("n1")
    host.kubelet = "hung"
    request(sim, "restart-kubelet", "r1")
    sim.run_for(1)
    assert host.kubelet == "running" and host.kubelet_restarts == 1
    assert ack(sim) | {"at": ""} == {
        "id": "r1",
        "action": "restart-kubelet",
        "state": "done",
        "at": "",
        "message": "kubelet.service restarted",
    }
    owners = contract.annotation_owners(node(sim), contract.ACK_ANNOTATION)
    assert owners == {contract.AGENT_MANAGER}
    ((kind, reason, message),) = agent_events(sim)
    assert (kind, reason) == ("Normal", contract.RESTARTED)
    assert "request r1 from kubemedic-0_ab12" in message
    host.runtime = "hung"
    request(sim, "restart-runtime", "r2")
    sim.run_for(1)
    assert host.runtime == "running" and ack(sim)["message"] == "containerd.service restarted"
    assert agents.done == [("n1", "restart-kubelet", "r1"), ("n1", "restart-runtime", "r2")]


def test_requests_the_contract_forbids_are_refused_with_the_reason() -> None:
    sim, hosts, _ = cluster()
    host = hosts.get("n1")
    host.kubelet = "stopped"
    request(sim, "restart-kubelet", "x1", manager="kubectl-annotate")
    sim.run_for(1)
    assert host.kubelet == "stopped"
    refused = ack(sim)
    assert (refused["id"], refused["state"]) == ("x1", "refused")
    assert refused["message"].startswith("not from kubemedic-repair")
    # A controller whose clock is 6 minutes behind: the age is the API server's (the write's
    # managedFields time), so the request is fresh.
    request(sim, "restart-kubelet", "skewed", age=timedelta(minutes=6))
    sim.run_for(1)
    assert ack(sim)["state"] == "done" and host.kubelet == "running"
    host.kubelet = "stopped"
    request(sim, "restart-kubelet", "ok")
    sim.run_for(1)
    assert ack(sim)["state"] == "done" and host.kubelet == "running"
    request(sim, "restart-kubelet", "other")
    sim.run_for(1)
    request(sim, "restart-kubelet", "ok")  # the same id again: done at most once
    sim.run_for(1)
    assert ack(sim)["id"] == "ok" and ack(sim)["message"].startswith("repeated id ok")
    assert host.kubelet_restarts == 3  # skewed, ok, other: three actions, the most an hour
    reasons = [(kind, reason) for kind, reason, _ in agent_events(sim)]
    assert reasons.count(("Warning", contract.REFUSED)) == 2


def test_at_most_three_actions_per_hour() -> None:
    sim, hosts, _ = cluster()
    for i in range(4):
        request(sim, "restart-runtime", f"r{i}")
        sim.run_for(60)
    assert hosts.get("n1").runtime_restarts == 3
    assert ack(sim)["message"].startswith("rate-limited")
    sim.run_for(timedelta(hours=1))
    request(sim, "restart-runtime", "later")
    sim.run_for(1)
    assert ack(sim)["state"] == "done"


def test_a_reboot_request_is_accepted_then_the_machine_reboots() -> None:
    sim, hosts, _ = cluster()
    host = hosts.get("n1")
    host.misconfig = "transient"
    request(sim, "reboot", "b1")
    sim.run_for(1)
    assert ack(sim)["state"] == "accepted"
    assert host.reboots == 1 and host.boot_id != "boot-1" and host.misconfig == ""
    assert [r for _, r, _ in agent_events(sim)] == [contract.REBOOTING]
    sim.run_for(120)
    assert node(sim)["status"]["nodeInfo"]["bootID"] == host.boot_id


def test_a_request_made_while_the_node_was_cut_off_is_judged_when_it_is_back() -> None:
    sim, hosts, _ = cluster()
    host = hosts.get("n1")
    host.reachable = False
    host.kubelet = "stopped"
    request(sim, "restart-kubelet", "late")
    sim.run_for(timedelta(minutes=6))
    assert contract.ACK_ANNOTATION not in node(sim)["metadata"].get("annotations", {})
    host.reachable = True
    sim.run_for(10)
    assert ack(sim)["message"].startswith("too old") and host.kubelet == "stopped"


def test_self_repair_restarts_after_the_grace_and_gives_up_after_the_limit() -> None:
    settings = AgentSettings(self_repair=True, grace=60, cooldown=120, max_restarts=2)
    sim, hosts, agents = cluster(settings)
    assert agents.settings_of("n1") == settings
    host = hosts.get("n1")
    host.kubelet = "stopped"
    sim.run_for(50)
    assert host.kubelet == "stopped"
    sim.run_for(30)
    assert host.kubelet == "running" and host.kubelet_restarts == 1
    for _ in range(3):
        host.kubelet = "stopped"
        sim.run_for(200)
    assert host.kubelet == "stopped" and host.kubelet_restarts == 2
    reasons = [r for _, r, _ in agent_events(sim)]
    assert reasons == [contract.RESTARTED, contract.RESTARTED, contract.GIVING_UP]
    host.reboot(sim.seconds())  # a new boot: the agent tries again
    host.runtime = "hung"
    sim.run_for(200)
    assert host.runtime == "running" and host.runtime_restarts == 1


def test_the_heartbeat_period_is_a_setting() -> None:
    sim, _, _ = cluster(AgentSettings(heartbeat=120))
    beat = condition(sim, contract.AGENT_READY)["lastHeartbeatTime"]
    sim.run_for(100)
    assert condition(sim, contract.AGENT_READY)["lastHeartbeatTime"] == beat
    sim.run_for(30)
    assert condition(sim, contract.AGENT_READY)["lastHeartbeatTime"] > beat


def test_self_repair_is_off_by_default_and_a_disabled_agent_does_nothing() -> None:
    sim, hosts, _ = cluster()
    hosts.get("n1").kubelet = "stopped"
    sim.run_for(600)
    assert hosts.get("n1").kubelet == "stopped"
    sim, hosts, _ = cluster(AgentSettings(enabled=False))
    conditions = {c["type"] for c in node(sim)["status"]["conditions"]}
    assert contract.AGENT_READY not in conditions
    request(sim, "reboot", "b1")
    sim.run_for(60)
    assert hosts.get("n1").reboots == 0
    assert contract.ACK_ANNOTATION not in node(sim)["metadata"]["annotations"]
