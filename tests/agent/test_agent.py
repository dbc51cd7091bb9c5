"""The agent against fakes: self-repair (once, cooldown, back-off, give-up) for a hung kubelet and
a hung runtime, its conditions and Events on the Node in the emulator, and the controller's
requests carried out once (a replayed or foreign one refused)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.agent import memory
from kubemedic.agent.daemon import Agent
from kubemedic.agent.settings import AgentConfig
from kubemedic.kube.api import Api
from kubemedic.model import agentcontract as contract
from tests.agent.fakes import FakeHost
from tests.repair.served import NODE, Served


class Clock:
    def __init__(self, start: datetime) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at

    def tick(self, seconds: float) -> datetime:
        self.at += timedelta(seconds=seconds)
        return self.at


def run_agent(
    served: Served,
    tmp_path: Path,
    body: Callable[[Agent, FakeHost, Clock, Api], Awaitable[None]],
    *,
    config: AgentConfig | None = None,
) -> None:
    async def scenario(api: Api) -> None:
        start = await api.server_time()
        assert start is not None
        clock = Clock(start)
        host = FakeHost(now=clock)
        cfg = config or AgentConfig(state_file=str(tmp_path / "agent-state.json"))
        agent = Agent(api=api, host=host, node=NODE, config=cfg, now=clock, version="test")
        await body(agent, host, clock, api)

    served.run(scenario)


def conditions(served: Served) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in served.node()["status"]["conditions"]}


def agent_events(served: Served) -> list[dict[str, Any]]:
    return [e for e in served.events() if e["source"].get("component") == contract.AGENT_MANAGER]


@pytest.mark.parametrize("daemon", ["kubelet", "runtime"])
def test_a_hung_daemon_is_restarted_once_and_reported(
    served: Served, tmp_path: Path, daemon: str
) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        fake = getattr(host, daemon)
        fake.started_at = clock() - timedelta(hours=1)
        await agent.report()
        fake.healthy = False
        verdict = await agent.check(daemon, clock.tick(10))
        assert verdict.act == "restart", verdict.reason
        await agent.report()
        assert host.restarted == [fake.unit]
        for _ in range(5):  # cured: never restarted again
            assert (await agent.check(daemon, clock.tick(10))).act == "none"
        await agent.report()
        assert host.restarted == [fake.unit]

    run_agent(served, tmp_path, body)
    kind = contract.KUBELET_UNHEALTHY if daemon == "kubelet" else contract.RUNTIME_UNHEALTHY
    got = conditions(served)
    assert got[kind]["status"] == "False"
    assert got[contract.AGENT_READY]["status"] == "True"
    managers = {m["manager"] for m in served.node()["metadata"]["managedFields"]}
    assert contract.AGENT_MANAGER in managers
    restarted = [e for e in agent_events(served) if e["reason"] == contract.RESTARTED]
    assert len(restarted) == 1
    assert "self-repair" in restarted[0]["message"]
    assert restarted[0]["involvedObject"]["name"] == NODE


def test_the_condition_goes_true_while_the_daemon_fails(served: Served, tmp_path: Path) -> None:
    cfg = AgentConfig(state_file=str(tmp_path / "s.json"), self_repair=False)

    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        host.kubelet.active = False
        host.kubelet.healthy = False
        await agent.check("kubelet", clock.tick(10))
        await agent.check("runtime", clock.tick(1))
        await agent.report()
        assert host.restarted == []

    run_agent(served, tmp_path, body, config=cfg)
    got = conditions(served)
    assert got[contract.KUBELET_UNHEALTHY]["status"] == "True"
    assert got[contract.KUBELET_UNHEALTHY]["reason"] == "KubeletStopped"
    assert got[contract.RUNTIME_UNHEALTHY]["status"] == "False"


@pytest.mark.parametrize("daemon", ["kubelet", "runtime"])
def test_cooldown_back_off_then_give_up(served: Served, tmp_path: Path, daemon: str) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        fake = getattr(host, daemon)
        rules = agent.rules[daemon]
        fake.cures = False
        fake.healthy = False
        fake.started_at = clock() - rules.cooldown / 2  # started recently: cooldown holds
        verdict = await agent.check(daemon, clock.tick(1))
        assert verdict.act == "none"
        assert "cooldown" in verdict.reason
        restarts: list[datetime] = []
        gave_up_at = None
        for _ in range(400):  # ten-second checks, over an hour
            verdict = await agent.check(daemon, clock.tick(10))
            if verdict.act == "restart":
                restarts.append(clock())
            if verdict.act == "give-up":
                gave_up_at = clock()
        assert len(restarts) == rules.max_restarts == 3
        gaps = [b - a for a, b in itertools.pairwise(restarts)]
        # each restart waits cooldown * 2^(n-1) after the previous one, and never less
        assert gaps[0] >= rules.cooldown
        assert gaps[1] >= rules.cooldown * 2
        assert gaps[1] > gaps[0]
        assert gave_up_at is not None and gave_up_at > restarts[-1]
        assert host.restarted == [fake.unit] * 3
        await agent.report()
        state = memory.load(agent.path)
        assert state.daemons[daemon].gave_up
        assert len(state.daemons[daemon].restarts) == 3

    run_agent(served, tmp_path, body)
    kind = contract.KUBELET_UNHEALTHY if daemon == "kubelet" else contract.RUNTIME_UNHEALTHY
    condition = conditions(served)[kind]
    assert condition["status"] == "True"
    assert condition["reason"] in contract.GAVE_UP_REASONS
    giving_up = [e for e in agent_events(served) if e["reason"] == contract.GIVING_UP]
    assert len(giving_up) == 1
    assert giving_up[0]["type"] == "Warning"
    assert "next step" in giving_up[0]["message"]


def test_a_new_boot_starts_the_count_over(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        host.kubelet.cures = False
        host.kubelet.healthy = False
        host.kubelet.started_at = clock() - timedelta(hours=1)
        for _ in range(400):
            await agent.check("kubelet", clock.tick(10))
        assert agent.states["kubelet"].gave_up
        host.boot = "0b7e8a52-55e1-4d0e-9a65-3c2b4f9d8e70"
        again = Agent(api=api, host=host, node=NODE, config=agent.config, now=clock, version="test")
        assert again.states["kubelet"].gave_up  # remembered across the agent's restart
        host.kubelet.started_at = clock() - timedelta(hours=1)
        verdict = await again.check("kubelet", clock.tick(10))
        assert verdict.act == "restart"  # the new boot's count starts at zero

    run_agent(served, tmp_path, body)


# -- requests ---------------------------------------------------------------------------------


def write_request(
    served: Served, request: dict[str, Any], *, manager: str = contract.CONTROLLER_MANAGER
) -> dict[str, Any]:
    patch = {"metadata": {"annotations": {contract.REQUEST_ANNOTATION: json.dumps(request)}}}
    status, answer, _ = served.emulator.request(
        "PATCH",
        f"/api/v1/nodes/{NODE}?fieldManager={manager}",
        patch,
        content_type="application/merge-patch+json",
    )
    assert status == 200, answer
    return dict(answer)


def request_body(rid: str, action: str, at: datetime) -> dict[str, Any]:
    return {
        "id": rid,
        "action": action,
        "requestedAt": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "requester": "kubemedic-0_abc",
    }


def ack(served: Served) -> dict[str, Any]:
    return dict(json.loads(served.node()["metadata"]["annotations"][contract.ACK_ANNOTATION]))


def test_a_request_is_carried_out_once(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        node = write_request(served, request_body("r1", "restart-kubelet", clock()))
        answer = await agent.handle(node, clock.tick(1))
        assert answer is not None and answer.state == "done"
        assert host.restarted == ["kubelet.service"]
        assert ack(served)["id"] == "r1" and ack(served)["state"] == "done"
        # the same Node seen again (a watch event, a heartbeat's answer): nothing more
        assert await agent.handle(served.node(), clock.tick(1)) is None
        # the agent restarts: the request answered before is not carried out again
        again = Agent(api=api, host=host, node=NODE, config=agent.config, now=clock, version="test")
        assert await again.handle(served.node(), clock.tick(1)) is None
        assert host.restarted == ["kubelet.service"]
        # the same request written again (a replay) is refused, and the answer stays
        node = write_request(served, {**request_body("r1", "restart-kubelet", clock()), "x": 1})
        answer = await again.handle(node, clock.tick(1))
        assert answer is not None and answer.state == "refused"
        assert "repeated id" in answer.message
        assert ack(served)["state"] == "done"
        assert host.restarted == ["kubelet.service"]

    run_agent(served, tmp_path, body)
    reasons = [e["reason"] for e in agent_events(served)]
    assert reasons.count(contract.RESTARTED) == 1
    assert reasons.count(contract.REFUSED) == 1


def test_a_foreign_request_is_refused(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        node = write_request(
            served, request_body("x1", "reboot", clock()), manager="kubectl-annotate"
        )
        answer = await agent.handle(node, clock.tick(1))
        assert answer is not None and answer.state == "refused"
        assert "not from kubemedic-repair" in answer.message
        assert "kubectl-annotate" in answer.message
        assert host.reboots == 0
        assert ack(served) == {**ack(served), "id": "x1", "state": "refused"}

    run_agent(served, tmp_path, body)
    refused = [e for e in agent_events(served) if e["reason"] == contract.REFUSED]
    assert len(refused) == 1 and refused[0]["type"] == "Warning"


def test_an_old_or_rate_limited_request_is_refused(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        node = write_request(served, request_body("old", "restart-runtime", clock()))
        answer = await agent.handle(node, clock.tick(6 * 60))
        assert answer is not None and answer.state == "refused"
        assert "too old" in answer.message
        served.advance(6 * 60)  # the API server's clock too, so new writes are fresh
        states = []
        for n in range(contract.RATE_LIMIT + 1):
            node = write_request(served, request_body(f"r{n}", "restart-runtime", clock()))
            answer = await agent.handle(node, clock.tick(1))
            assert answer is not None
            states.append(answer.state)
        assert states == ["done"] * contract.RATE_LIMIT + ["refused"]
        assert "rate-limited" in ack(served)["message"]
        assert host.restarted == ["containerd.service"] * contract.RATE_LIMIT

    run_agent(served, tmp_path, body)


def test_a_reboot_is_acknowledged_before_it_starts(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        node = write_request(served, request_body("b1", "reboot", clock()))
        answer = await agent.handle(node, clock.tick(1))
        assert answer is not None and answer.state == "accepted"
        assert host.reboots == 1
        assert ack(served)["state"] == "accepted"
        assert "b1" in memory.load(agent.path).answered
        # after the reboot a new agent process sees the same request: not again
        host.boot = "2f4a2b1c-7d35-4b7a-9a0e-1c2d3e4f5a6b"
        again = Agent(api=api, host=host, node=NODE, config=agent.config, now=clock, version="test")
        assert await again.handle(served.node(), clock.tick(60)) is None
        assert host.reboots == 1
        # a reboot the host refuses is answered "failed"
        host.reboot_fails = True
        node = write_request(served, request_body("b2", "reboot", clock()))
        answer = await again.handle(node, clock.tick(1))
        assert answer is not None and answer.state == "failed"
        assert ack(served)["state"] == "failed" and "Access denied" in ack(served)["message"]

    run_agent(served, tmp_path, body)
    reasons = [e["reason"] for e in agent_events(served)]
    assert contract.REBOOTING in reasons


def test_a_malformed_request_is_refused_with_the_reason(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        node = write_request(served, {"id": "m1", "action": "format-disk", "requestedAt": "x"})
        answer = await agent.handle(node, clock.tick(1))
        assert answer is not None and answer.state == "refused"
        assert "unknown action 'format-disk'" in answer.message
        assert host.restarted == [] and host.reboots == 0

    run_agent(served, tmp_path, body)


def test_damaged_memory_is_set_aside(tmp_path: Path) -> None:
    path = tmp_path / "agent-state.json"
    path.write_bytes(b'{"version": 1, "answered": [')
    loaded = memory.load(path)
    assert loaded.answered == [] and "not JSON" in loaded.problem
    assert (tmp_path / "agent-state.json.damaged").exists()
    fresh = memory.Memory()
    fresh.answer("a", datetime(2026, 12, 2, 10, 0, tzinfo=datetime.now().astimezone().tzinfo))
    memory.save(path, fresh)
    assert memory.load(path).answered == ["a"]


def test_healthz_follows_the_checks(served: Served, tmp_path: Path) -> None:
    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        assert agent.healthy(clock())  # in its start delay
        await agent.check("kubelet", clock.tick(130))
        await agent.check("runtime", clock.tick(0))
        assert agent.healthy(clock.tick(10))
        assert not agent.healthy(clock.tick(600))  # the checks stopped
        text = agent.metrics.exposition().decode()
        assert 'kubemedic_agent_probes_total{daemon="kubelet",result="healthy"} 1.0' in text

    run_agent(served, tmp_path, body, config=replace(AgentConfig(), state_file=str(tmp_path / "s")))


def test_self_repair_goes_on_while_the_api_server_fails(served: Served, tmp_path: Path) -> None:
    """Checks and restarts need no API server: with every API call failing (500s from the
    emulator's fault injection), a hung kubelet is still restarted; the Events and conditions
    that could not be written are counted, and written again once the server is back."""

    async def body(agent: Agent, host: FakeHost, clock: Clock, api: Api) -> None:
        host.kubelet.healthy = False
        host.kubelet.started_at = clock() - timedelta(hours=1)
        served.emulator.call(lambda: served.emulator.server.faults.update({"error_rate": 1.0}))
        verdict = await agent.check("kubelet", clock.tick(10))
        assert verdict.act == "restart"
        assert host.restarted == ["kubelet.service"]
        text = agent.metrics.exposition().decode()
        assert 'kubemedic_agent_api_errors_total{operation="event"}' in text
        served.emulator.call(lambda: served.emulator.server.faults.update({"error_rate": 0.0}))
        await agent.check("kubelet", clock.tick(10))
        assert await agent.report(clock.tick(1))

    run_agent(served, tmp_path, body)
    assert conditions(served)[contract.KUBELET_UNHEALTHY]["status"] == "False"
