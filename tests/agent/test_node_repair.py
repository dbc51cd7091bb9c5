"""End to end: the node-repair scenario's kubelet and runtime cases cured by the real node agent.

The bundled ``node-repair`` scenario, its timeline cut to the two faults a restart cures (a
stopped kubelet at 2 minutes on zone-a, a hung container runtime at 10 minutes on zone-b), is
served over HTTP and played in lockstep with the repair controller, not in dry run, exactly as
:mod:`kubemedic.chaos` plays its seeds (its executor over HTTP, the ``agent`` provider, a SQLite
ledger). On the two broken nodes the simulator's agent is off and the real one runs
(:class:`kubemedic.agent.daemon.Agent` on the simulated host, through
:mod:`tests.agent.simhost`), stepped every second of cluster time as its loops would on the
wall clock, without self-repair, as the scenario's pool has it. So the only cure is the
contract: the controller writes ``restart-kubelet`` / ``restart-runtime``, the real agent
carries it out on the simulated host, and the node is Ready again without a reboot.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.chaos import SimClock
from kubemedic.kube import config as kubeconfig
from kubemedic.model import agentcontract as contract
from kubemedic.repair.controller import Controller
from kubemedic.repair.executing.executor import Executor
from kubemedic.repair.policy.settings import RepairSettings
from kubemedic.repair.providers import registry
from kubemedic.repair.providers.base import ProviderContext
from kubemedic.sim import apiserver
from kubemedic.sim.cluster.agent.agents import AgentSettings
from kubemedic.sim.scenarios import ScenarioRun, load
from kubemedic.sim.scenarios.timeline import Step
from kubemedic.store.db import Archive
from tests.agent.simhost import AgentProcess

#: A scenario played with the controller: well under its budget, but not the suite's 120 s.
pytestmark = pytest.mark.timeout(900)

KUBELET_STOPPED = "sim-workers-zone-a-mtpxj-5djxk"
RUNTIME_HUNG = "sim-workers-zone-b-vgmg7-cz4lt"
CASES = {KUBELET_STOPPED: "restart-kubelet", RUNTIME_HUNG: "restart-runtime"}
CLUSTER = "node-repair"
#: Cluster time played: both faults, their 10-minute thresholds, the restarts and the time
#: Ready must hold before a repair counts as done.
PLAYED = timedelta(minutes=40)
TICK = timedelta(seconds=10)
WATCHED = (
    "nodes",
    "leases.coordination.k8s.io",
    "machines.cluster.x-k8s.io",
    "machinesets.cluster.x-k8s.io",
    "machinedeployments.cluster.x-k8s.io",
)


@dataclass
class Played:
    run: ScenarioRun
    processes: dict[str, AgentProcess]
    ledger: dict[str, list[dict[str, Any]]]
    in_flight: list[str]
    boot_ids: dict[str, str]
    #: What the simulator's own agents carried out: (node, action, id).
    simulated: list[tuple[str, str, str]]

    def node(self, name: str) -> dict[str, Any]:
        found = self.run.sim.get("nodes", "", name)
        assert found is not None, name
        return found

    def events(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.run.sim.objects("events") if e["involvedObject"]["name"] == name]


def _bodies(run: ScenarioRun) -> Iterable[Mapping[str, Any]]:
    for store in WATCHED:
        yield from run.sim.objects(store)


def _scenario() -> Any:
    scenario = load("node-repair")
    timeline = [a for a in scenario.timeline if a.note.split(":")[0] in CASES]
    assert len(timeline) == len(CASES), [a.note for a in scenario.timeline]
    return scenario.model_copy(update={"timeline": timeline})


async def _play(tmp: Path) -> Played:
    run = ScenarioRun(_scenario(), until=PLAYED)
    sim = run.sim
    agents = run.cluster.agent
    assert agents is not None
    for name in CASES:  # the simulator's agent is off where the real one runs
        agents.configure({"kubernetes.io/hostname": name}, AgentSettings(enabled=False))
    port = await sim.server.start(port=0, tick=False)
    config = tmp / "kubeconfig"
    apiserver.write_kubeconfig(config, f"http://127.0.0.1:{port}")
    api = kubeconfig.connect(kubeconfig.resolve(config, None))
    archive = Archive.open(f"sqlite:///{tmp}/ledger.db")
    try:
        processes = {
            name: AgentProcess.on(
                api=api, sim=sim, hosts=run.cluster.hosts, node=name, state_dir=tmp
            )
            for name in CASES
        }
        settings = RepairSettings(dry_run=False)
        clock = SimClock(run)
        context = ProviderContext(api=api, identity="e2e", settings=settings, now=clock.now)
        provider = registry.make_provider("agent", context)
        hands = Executor(api=api, provider=provider, identity="e2e", dry_run=False, now=clock.now)
        controller = Controller(
            settings=settings,
            cluster=CLUSTER,
            clock=clock,
            bodies=lambda: _bodies(run),
            hands=hands,
            provider=provider,
            ledger=archive,
            tick=TICK,
        )
        await controller.load()
        boot_ids = {name: run.cluster.hosts.get(name).boot_id for name in CASES}
        next_round = sim.now()
        while sim.now() < run.end:
            sim.run_for(1.0)
            for process in processes.values():
                await process.step()
            if sim.now() >= next_round:
                done = await controller.round()
                step = TICK
                if done.plan.wake_at is not None:
                    step = min(step, max(timedelta(seconds=1), done.plan.wake_at - sim.now()))
                next_round = sim.now() + step
        return Played(
            run=run,
            processes=processes,
            ledger={name: archive.ledger(CLUSTER, node=name) for name in CASES},
            in_flight=sorted(controller.repairs),
            boot_ids=boot_ids,
            simulated=list(agents.done),
        )
    finally:
        archive.close()
        await api.close()
        await sim.server.stop()


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    yield asyncio.run(_play(tmp_path_factory.mktemp("node-repair")))


def test_the_faults_happened(played: Played) -> None:
    notes = [step.text for step in played.run.steps if isinstance(step, Step) and step.index >= 0]
    assert len(notes) == len(CASES), notes
    assert played.run.failures == []


@pytest.mark.parametrize(("name", "action"), sorted(CASES.items()))
def test_the_controller_asked_and_the_real_agent_restarted_the_daemon(
    played: Played, name: str, action: str
) -> None:
    host = played.run.cluster.hosts.get(name)
    daemon = "kubelet" if action == "restart-kubelet" else "runtime"
    assert getattr(host, f"{daemon}_restarts") == 1
    assert getattr(host, daemon) == "running"
    assert host.reboots == 0 and host.boot_id == played.boot_ids[name]
    assert played.processes[name].starts == 1  # no reboot: the agent ran all along
    node = played.node(name)
    annotations = node["metadata"]["annotations"]
    request = json.loads(annotations[contract.REQUEST_ANNOTATION])
    ack = json.loads(annotations[contract.ACK_ANNOTATION])
    assert request["action"] == action
    assert (ack["id"], ack["action"], ack["state"]) == (request["id"], action, "done")
    assert contract.annotation_owners(node, contract.REQUEST_ANNOTATION) == {
        contract.CONTROLLER_MANAGER
    }
    assert contract.annotation_owners(node, contract.ACK_ANNOTATION) == {contract.AGENT_MANAGER}
    # Nothing of the simulator's own agent on this node: the real one did it.
    assert [d for d in played.simulated if d[0] == name] == []


@pytest.mark.parametrize(("name", "action"), sorted(CASES.items()))
def test_the_node_is_ready_and_healthy_again_and_the_ledger_says_so(
    played: Played, name: str, action: str
) -> None:
    node = played.node(name)
    conditions = {c["type"]: c for c in node["status"]["conditions"]}
    assert conditions["Ready"]["status"] == "True"
    assert conditions[contract.AGENT_READY]["status"] == "True"
    assert conditions[contract.KUBELET_UNHEALTHY]["status"] == "False"
    assert conditions[contract.RUNTIME_UNHEALTHY]["status"] == "False"
    assert not node["spec"].get("unschedulable")
    assert name not in played.in_flight
    (repair,) = played.ledger[name]
    # The trigger is the real agent's condition (the simulator's agent is off on this node).
    kind = contract.KUBELET_UNHEALTHY if action == "restart-kubelet" else contract.RUNTIME_UNHEALTHY
    assert repair["trigger"].startswith(f"{kind}=True"), repair
    assert repair["outcome"] == "repaired" and not repair["dryRun"], repair
    steps = [(s["action"], s["outcome"]) for s in repair["steps"]]
    assert steps == [(action, "repaired")], repair


@pytest.mark.parametrize(("name", "action"), sorted(CASES.items()))
def test_the_events_tell_the_story(played: Played, name: str, action: str) -> None:
    events = played.events(name)
    agent = [
        (e["type"], e["reason"])
        for e in events
        if e.get("source", {}).get("component") == contract.AGENT_MANAGER
    ]
    assert agent == [("Normal", contract.RESTARTED)]
    (restarted,) = [e for e in events if e["reason"] == contract.RESTARTED]
    assert "at the request" in restarted["message"]
    repair = {str(e["reason"]) for e in events if str(e["reason"]).startswith("KubemedicRepair")}
    assert "KubemedicRepairSucceeded" in repair, repair
    assert not any("Reboot" in reason for reason in repair), repair
