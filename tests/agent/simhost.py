"""The real node agent on a simulated node: a host adapter, and its process stepped in lockstep.

:class:`SimHost` implements :class:`kubemedic.agent.host.Host` over a simulator
:class:`~kubemedic.sim.cluster.runtime.hosts.Host`:

- ``kubelet.service`` is ``inactive`` while the simulated kubelet is ``stopped``, else
  ``active``; its ``/healthz`` answers ``ok`` when it is ``running``, refuses the connection when
  it is ``stopped`` and times out when it is ``hung``;
- ``containerd.service`` is always ``active``; the CRI times out while the runtime is ``hung``;
- a unit started at the machine's boot or at the adapter's last restart of it
  (``InactiveExitTimestamp``);
- ``restart_unit``, ``reboot`` and ``boot_id`` are the host's ``restart_kubelet`` /
  ``restart_runtime``, ``reboot`` and ``boot_id``.

The agent calls its host from a worker thread (``asyncio.to_thread``); the simulation is not
thread-safe, so every call runs on the simulation's loop (:func:`tests.sim.conftest.call_on`),
or directly when made on that loop's thread.

:class:`AgentProcess` is the agent's process on one node, stepped with the simulation's time:
what :meth:`kubemedic.agent.daemon.Agent.run` does on the wall clock. Each
:meth:`~AgentProcess.step` checks each daemon when due (its start delay, then every period),
then, while the host reaches the API server, reports the conditions and answers the Node's
request as a watch would. The
process lives with its machine: nothing runs while the host is down, and a new boot starts a new
:class:`~kubemedic.agent.daemon.Agent` with the same state file (its memory on the node's disk).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TypeVar

from kubemedic.agent.daemon import Agent
from kubemedic.agent.host import HostError, Probe, UnitStatus
from kubemedic.agent.policy import next_check
from kubemedic.agent.settings import AgentConfig
from kubemedic.kube.api import Api
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Host as MachineHost
from kubemedic.sim.cluster.runtime.hosts import Hosts
from tests.sim.conftest import call_on

T = TypeVar("T")

KUBELET_UNIT = "kubelet.service"
RUNTIME_UNIT = "containerd.service"


class SimHost:
    """:class:`kubemedic.agent.host.Host` over the simulator's host of ``node``."""

    def __init__(self, sim: Simulation, hosts: Hosts, node: str) -> None:
        self.sim = sim
        self.hosts = hosts
        self.node = node
        self.loop = asyncio.get_running_loop()
        self.thread = threading.get_ident()
        #: Cluster seconds of the adapter's last restart of each unit.
        self.restarted: dict[str, float] = {}

    def _on_loop(self, fn: Callable[[], T]) -> T:
        if threading.get_ident() == self.thread:
            return fn()
        return call_on(self.loop, fn, timeout=30)

    def _machine(self, command: str) -> MachineHost:
        host = self.hosts.find(self.node)
        if host is None:
            raise HostError(f"{command}: no machine under node {self.node}")
        if not host.up(self.sim.seconds()):
            raise HostError(f"{command}: the machine is down")
        return host

    def _time(self, seconds: float) -> datetime:
        return self.sim.now() - timedelta(seconds=self.sim.seconds() - seconds)

    def _started(self, host: MachineHost, unit: str) -> datetime | None:
        booted = host.booting_until if host.booting_until > 0 else None
        times = [t for t in (booted, self.restarted.get(unit)) if t is not None]
        return self._time(max(times)) if times else None

    def unit_status(self, unit: str) -> UnitStatus:
        def read() -> UnitStatus:
            host = self._machine(f"systemctl show {unit}")
            if unit == KUBELET_UNIT:
                active = host.kubelet != "stopped"
                restarts = host.kubelet_restarts
            elif unit == RUNTIME_UNIT:
                active, restarts = True, host.runtime_restarts
            else:
                raise HostError(f"systemctl show {unit}: Unit {unit} could not be found.")
            started = self._started(host, unit)
            return UnitStatus(
                unit,
                "active" if active else "inactive",
                "running" if active else "dead",
                started_at=started,
                active_since=started if active else None,
                restarts=restarts,
            )

        return self._on_loop(read)

    def restart_unit(self, unit: str) -> None:
        def restart() -> None:
            host = self._machine(f"systemctl restart {unit}")
            if unit == KUBELET_UNIT:
                host.restart_kubelet()
            elif unit == RUNTIME_UNIT:
                host.restart_runtime()
            else:
                raise HostError(f"systemctl restart {unit}: Unit {unit} not found.")
            self.restarted[unit] = self.sim.seconds()

        self._on_loop(restart)

    def probe_runtime(self, timeout: float) -> Probe:
        def probe() -> Probe:
            host = self._machine("crictl pods")
            if host.runtime == "hung":
                return Probe(False, f"DEADLINE_EXCEEDED: no answer in {timeout:g}s")
            return Probe(True, "ok")

        return self._on_loop(probe)

    def probe_kubelet(self, timeout: float) -> Probe:
        def probe() -> Probe:
            host = self._machine("GET http://127.0.0.1:10248/healthz")
            if host.kubelet == "stopped":
                return Probe(False, "connection refused")
            if host.kubelet == "hung":
                return Probe(False, f"timed out after {timeout:g}s")
            return Probe(True, "ok")

        return self._on_loop(probe)

    def boot_id(self) -> str:
        return self._on_loop(lambda: self._machine("cat boot_id").boot_id)

    def reboot(self) -> None:
        def reboot() -> None:
            self._machine("systemctl reboot").reboot(self.sim.seconds())

        self._on_loop(reboot)


class AgentProcess:
    """The real agent's process on ``node``, stepped with the simulation's time (see the module
    docstring). Construct it on the simulation's loop."""

    def __init__(
        self,
        *,
        api: Api,
        sim: Simulation,
        hosts: Hosts,
        node: str,
        config: AgentConfig,
    ) -> None:
        self.api = api
        self.sim = sim
        self.hosts = hosts
        self.node = node
        self.config = config
        self.host = SimHost(sim, hosts, node)
        self.agent: Agent | None = None
        self.boot = ""
        self.last: dict[str, datetime] = {}
        #: How many times the process started (once per boot of its machine).
        self.starts = 0

    @classmethod
    def on(
        cls,
        *,
        api: Api,
        sim: Simulation,
        hosts: Hosts,
        node: str,
        state_dir: Path,
        config: AgentConfig | None = None,
    ) -> AgentProcess:
        """The agent as the node-repair scenarios run theirs: no self-repair, so only the
        controller's requests restart anything; its state file in ``state_dir``."""
        base = config or AgentConfig(self_repair=False)
        state = str(state_dir / f"{node}-agent-state.json")
        return cls(
            api=api,
            sim=sim,
            hosts=hosts,
            node=node,
            config=AgentConfig(
                self_repair=base.self_repair,
                heartbeat=base.heartbeat,
                state_file=state,
                kubelet=base.kubelet,
                runtime=base.runtime,
                host=base.host,
            ),
        )

    async def step(self) -> None:
        """What the agent does at the simulation's present time."""
        machine = self.hosts.find(self.node)
        if machine is None or not machine.up(self.sim.seconds()):
            self.agent = None  # the process goes down with its machine
            return
        if self.agent is None or machine.boot_id != self.boot:
            self.agent = Agent(
                api=self.api,
                host=self.host,
                node=self.node,
                config=self.config,
                now=self.sim.now,
                version="sim",
            )
            self.boot, self.last = machine.boot_id, {}
            self.starts += 1
        agent, now = self.agent, self.sim.now()
        for daemon, rules in agent.rules.items():
            if now >= next_check(rules, agent.started, self.last.get(daemon)):
                await agent.check(daemon, now)
                self.last[daemon] = now
        if not machine.reachable:
            return  # it cannot reach the API server: no heartbeat, no requests seen
        await agent.report(now)
        node = self.sim.get("nodes", "", self.node)
        if node is not None and agent is self.agent:
            await agent.handle(node, now)
