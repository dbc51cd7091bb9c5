"""The controller-agent contract of docs/repair.md, the same tests for both node agents.

Each test runs once with the simulator's agent (``simulated``: :class:`NodeAgents` inside the
simulation) and once with the real one (``real``: :class:`kubemedic.agent.daemon.Agent` on the
simulated host through :mod:`tests.agent.simhost`, over HTTP, with the simulator's agent off on
that node), on one simulated node served by the API emulator and stepped in lockstep with the
simulation's clock. Requests are written as the controller writes them (a merge patch with
field manager ``kubemedic-repair``) or as someone else would.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.kube import config as kubeconfig
from kubemedic.model import agentcontract as contract
from kubemedic.sim import apiserver
from kubemedic.sim.cluster.agent.agents import AgentSettings, NodeAgents
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Host, Hosts
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.testing import bodies as builders
from tests.agent.simhost import AgentProcess

NODE = "n1"
START = datetime(2026, 1, 1, tzinfo=UTC)
AGENTS = ["simulated", "real"]
#: Both agents have checked both daemons (the real one's kubelet start delay is 2 minutes).
SETTLED = 150.0

Obj = dict[str, Any]


@dataclass
class Rig:
    """One simulated node with an agent of the ``kind`` under test."""

    kind: str
    sim: Simulation
    hosts: Hosts
    process: AgentProcess | None

    @property
    def host(self) -> Host:
        return self.hosts.get(NODE)

    async def run_for(self, seconds: float) -> None:
        """Move the cluster's clock on; the real agent takes its steps every second."""
        if self.process is None:
            self.sim.run_for(seconds)
            return
        end = self.sim.seconds() + seconds
        while (left := end - self.sim.seconds()) > 1e-6:
            self.sim.run_for(min(1.0, left))
            await self.process.step()

    def node(self) -> Obj:
        found = self.sim.get("nodes", "", NODE)
        assert found is not None
        return found

    def condition(self, type_: str) -> tuple[str, str]:
        (found,) = [c for c in self.node()["status"]["conditions"] if c["type"] == type_]
        return found["status"], found["reason"]

    def heartbeat(self) -> str:
        (found,) = [
            c for c in self.node()["status"]["conditions"] if c["type"] == contract.AGENT_READY
        ]
        return str(found["lastHeartbeatTime"])

    def request(
        self, action: str, rid: str, *, manager: str = contract.CONTROLLER_MANAGER, **extra: Any
    ) -> None:
        body = {
            "id": rid,
            "action": action,
            "requestedAt": rfc3339(self.sim.now()),
            "requester": "kubemedic-0_ab12",
            **extra,
        }
        patch = {"metadata": {"annotations": {contract.REQUEST_ANNOTATION: json.dumps(body)}}}
        Client(self.sim.server, manager).patch("v1", "Node", NODE, patch, patch_type="merge")

    def ack(self) -> Obj:
        return dict(json.loads(self.node()["metadata"]["annotations"][contract.ACK_ANNOTATION]))

    def events(self) -> list[tuple[str, str]]:
        """The agent's Events on the node: (type, reason), once per occurrence (an Event
        repeated is one object with a ``count``)."""
        found = [
            e
            for e in self.sim.objects("events")
            if (
                e.get("source", {}).get("component") == contract.AGENT_MANAGER
                or e.get("reportingComponent") == contract.AGENT_MANAGER
            )
            and e["involvedObject"]["name"] == NODE
        ]
        return [(e["type"], e["reason"]) for e in found for _ in range(int(e.get("count") or 1))]


def play(kind: str, tmp_path: Path, body: Callable[[Rig], Awaitable[None]]) -> None:
    """Run ``body`` on a fresh node whose agent is of ``kind``."""

    async def main() -> None:
        sim = Simulation(start=START)
        Client(sim.server, "kubelet").create(
            builders.node(NODE, boot_id="boot-1", labels={"pool": "a"})
        )
        hosts = Hosts()
        sim.add(Kubelets(hosts))
        agents = sim.add(NodeAgents(hosts))
        port = await sim.server.start(port=0, tick=False)
        config = tmp_path / "kubeconfig"
        apiserver.write_kubeconfig(config, f"http://127.0.0.1:{port}")
        api = kubeconfig.connect(kubeconfig.resolve(config, None))
        try:
            process = None
            if kind == "real":
                agents.configure({"pool": "a"}, AgentSettings(enabled=False))
                process = AgentProcess.on(
                    api=api, sim=sim, hosts=hosts, node=NODE, state_dir=tmp_path
                )
            await body(Rig(kind, sim, hosts, process))
        finally:
            await api.close()
            await sim.server.stop()

    asyncio.run(main())


# -- conditions -------------------------------------------------------------------------------

HEALTHY = {
    contract.AGENT_READY: ("True", "KubemedicAgentRunning"),
    contract.KUBELET_UNHEALTHY: ("False", "KubeletHealthy"),
    contract.RUNTIME_UNHEALTHY: ("False", "ContainerRuntimeHealthy"),
}


@pytest.mark.parametrize("kind", AGENTS)
def test_a_healthy_node_is_reported_through_the_status_subresource(
    kind: str, tmp_path: Path
) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(5)
        # Before its first check of a daemon an agent may say it does not know yet.
        for type_, healthy in HEALTHY.items():
            assert rig.condition(type_) in (healthy, ("Unknown", "NotCheckedYet")), type_
        await rig.run_for(SETTLED)
        for type_, healthy in HEALTHY.items():
            assert rig.condition(type_) == healthy, type_
        beat = rig.heartbeat()
        await rig.run_for(31)  # the heartbeat is renewed at least every 30 s
        assert rig.heartbeat() > beat
        assert rig.condition("Ready") == ("True", "KubeletReady")  # the kubelet's stay
        entries = [
            m
            for m in rig.node()["metadata"]["managedFields"]
            if m["manager"] == contract.AGENT_MANAGER and m.get("subresource") == "status"
        ]
        (entry,) = entries
        owned = entry["fieldsV1"]["f:status"]["f:conditions"]
        for type_ in HEALTHY:
            assert f'k:{{"type":"{type_}"}}' in owned

    play(kind, tmp_path, body)


FAULTS = [
    ("kubelet", "stopped", contract.KUBELET_UNHEALTHY, "KubeletStopped"),
    ("kubelet", "hung", contract.KUBELET_UNHEALTHY, "KubeletHung"),
    ("runtime", "hung", contract.RUNTIME_UNHEALTHY, "ContainerRuntimeHung"),
]


@pytest.mark.parametrize("kind", AGENTS)
@pytest.mark.parametrize(("daemon", "state", "type_", "reason"), FAULTS)
def test_a_failing_daemon_is_reported_and_left_alone(
    kind: str, tmp_path: Path, daemon: str, state: str, type_: str, reason: str
) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        setattr(rig.host, daemon, state)
        await rig.run_for(20)  # a check every 10 s
        assert rig.condition(type_) == ("True", reason)
        assert rig.condition(contract.AGENT_READY) == ("True", "KubemedicAgentRunning")
        other = contract.RUNTIME_UNHEALTHY if daemon == "kubelet" else contract.KUBELET_UNHEALTHY
        assert rig.condition(other) == HEALTHY[other]
        beat = rig.heartbeat()
        await rig.run_for(60)  # the agent keeps reporting, and repairs nothing on its own
        assert rig.heartbeat() > beat
        assert (rig.host.kubelet_restarts, rig.host.runtime_restarts, rig.host.reboots) == (0, 0, 0)
        setattr(rig.host, daemon, "running")
        await rig.run_for(20)
        assert rig.condition(type_) == HEALTHY[type_]

    play(kind, tmp_path, body)


# -- requests ---------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", AGENTS)
@pytest.mark.parametrize(
    ("action", "daemon", "unit"),
    [
        ("restart-kubelet", "kubelet", "kubelet.service"),
        ("restart-runtime", "runtime", "containerd.service"),
    ],
)
def test_a_restart_request_is_carried_out_once_and_acknowledged_done(
    kind: str, tmp_path: Path, action: str, daemon: str, unit: str
) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        setattr(rig.host, daemon, "hung")
        await rig.run_for(20)
        rig.request(action, "r1")
        await rig.run_for(2)
        assert getattr(rig.host, f"{daemon}_restarts") == 1
        assert getattr(rig.host, daemon) == "running"
        ack = rig.ack()
        assert (ack["id"], ack["action"], ack["state"]) == ("r1", action, "done")
        assert ack["message"] == f"{unit} restarted"
        owners = contract.annotation_owners(rig.node(), contract.ACK_ANNOTATION)
        assert owners == {contract.AGENT_MANAGER}
        await rig.run_for(120)  # seen again and again: carried out once
        assert getattr(rig.host, f"{daemon}_restarts") == 1
        assert rig.host.reboots == 0
        assert rig.events() == [("Normal", contract.RESTARTED)]
        type_ = contract.KUBELET_UNHEALTHY if daemon == "kubelet" else contract.RUNTIME_UNHEALTHY
        assert rig.condition(type_) == HEALTHY[type_]

    play(kind, tmp_path, body)


@pytest.mark.parametrize("kind", AGENTS)
def test_a_reboot_request_is_acknowledged_accepted_and_the_node_reboots_once(
    kind: str, tmp_path: Path
) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        boot = rig.host.boot_id
        rig.request("reboot", "b1")
        await rig.run_for(2)
        ack = rig.ack()
        assert (ack["id"], ack["action"], ack["state"]) == ("b1", "reboot", "accepted")
        assert rig.host.reboots == 1 and rig.host.boot_id != boot
        assert rig.events() == [("Normal", contract.REBOOTING)]
        beat = rig.heartbeat()
        await rig.run_for(4 * 60)  # the machine boots, the agent starts with it
        assert rig.host.reboots == 1
        assert rig.ack()["state"] == "accepted"
        assert rig.heartbeat() > beat
        for type_, healthy in HEALTHY.items():
            assert rig.condition(type_) == healthy, type_
        assert rig.events() == [("Normal", contract.REBOOTING)]

    play(kind, tmp_path, body)


@pytest.mark.parametrize("kind", AGENTS)
def test_a_request_from_another_field_manager_is_refused(kind: str, tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        rig.host.kubelet = "stopped"
        rig.request("restart-kubelet", "x1", manager="kubectl-annotate")
        await rig.run_for(2)
        ack = rig.ack()
        assert (ack["id"], ack["state"]) == ("x1", "refused")
        assert ack["message"].startswith("not from kubemedic-repair")
        assert "kubectl-annotate" in ack["message"]
        assert rig.events() == [("Warning", contract.REFUSED)]
        await rig.run_for(60)
        assert rig.host.kubelet == "stopped" and rig.host.kubelet_restarts == 0

    play(kind, tmp_path, body)


@pytest.mark.parametrize("kind", AGENTS)
def test_a_replayed_id_is_refused_and_the_acknowledgement_on_the_node_stays(
    kind: str, tmp_path: Path
) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        rig.request("restart-kubelet", "r1")
        await rig.run_for(2)
        assert rig.ack()["state"] == "done"
        # The same id again (the annotation rewritten): refused, and the answer the controller
        # may be reading stays as it was.
        rig.request("restart-kubelet", "r1", requester="kubemedic-1_cd34")
        await rig.run_for(2)
        assert rig.ack() | {"at": ""} == {
            "id": "r1",
            "action": "restart-kubelet",
            "state": "done",
            "at": "",
            "message": "kubelet.service restarted",
        }
        # An id answered before another one: refused, and said so.
        rig.request("restart-runtime", "r2")
        await rig.run_for(2)
        rig.request("restart-kubelet", "r1")
        await rig.run_for(2)
        ack = rig.ack()
        assert (ack["id"], ack["state"]) == ("r1", "refused")
        assert ack["message"].startswith("repeated id r1")
        assert (rig.host.kubelet_restarts, rig.host.runtime_restarts) == (1, 1)
        assert (
            sorted(rig.events())
            == [("Normal", contract.RESTARTED)] * 2 + [("Warning", contract.REFUSED)] * 2
        )

    play(kind, tmp_path, body)


@pytest.mark.parametrize("kind", AGENTS)
def test_an_id_refused_before_is_refused_again(kind: str, tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        rig.request("restart-kubelet", "x1", manager="kubectl-annotate")
        await rig.run_for(2)
        rig.request("restart-runtime", "r2")
        await rig.run_for(2)
        assert rig.ack()["id"] == "r2"
        # x1 was acknowledged (refused): written again, by the controller this time
        rig.request("restart-kubelet", "x1")
        await rig.run_for(2)
        ack = rig.ack()
        assert (ack["id"], ack["state"]) == ("x1", "refused")
        assert ack["message"].startswith("repeated id x1")
        assert rig.host.kubelet_restarts == 0

    play(kind, tmp_path, body)


@pytest.mark.parametrize("kind", AGENTS)
def test_a_request_older_than_five_minutes_by_the_servers_time_is_refused(
    kind: str, tmp_path: Path
) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        rig.host.reachable = False  # the agent cannot see the API server for a while
        rig.request("restart-runtime", "late")
        await rig.run_for(6 * 60)
        rig.host.reachable = True
        await rig.run_for(12)
        ack = rig.ack()
        assert (ack["id"], ack["state"]) == ("late", "refused")
        assert ack["message"].startswith("too old")
        assert rig.host.runtime_restarts == 0
        assert rig.events() == [("Warning", contract.REFUSED)]

    play(kind, tmp_path, body)


@pytest.mark.parametrize("kind", AGENTS)
def test_at_most_three_actions_an_hour(kind: str, tmp_path: Path) -> None:
    async def body(rig: Rig) -> None:
        await rig.run_for(SETTLED)
        states = []
        for n in range(contract.RATE_LIMIT + 1):
            rig.request("restart-runtime", f"r{n}")
            await rig.run_for(60)
            states.append(rig.ack()["state"])
        assert states == ["done"] * contract.RATE_LIMIT + ["refused"]
        assert rig.ack()["message"].startswith("rate-limited")
        assert rig.host.runtime_restarts == contract.RATE_LIMIT
        await rig.run_for(timedelta(hours=1).total_seconds())
        rig.request("restart-runtime", "later")
        await rig.run_for(2)
        assert rig.ack()["id"] == "later" and rig.ack()["state"] == "done"
        assert rig.host.runtime_restarts == contract.RATE_LIMIT + 1

    play(kind, tmp_path, body)
