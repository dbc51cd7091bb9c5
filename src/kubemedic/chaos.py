"""Seeded chaos for node repair: random node faults on a simulated cluster, repaired in process.

A generated cluster of Cluster API pools (``nodes`` nodes over three zones, the node agent on
each, a Deployment per pool with a PodDisruptionBudget) runs on the simulator's virtual clock.
A seed draws the faults: single-node faults (a stopped kubelet, a hung runtime, transient and
persistent misconfiguration, a machine powered off) at random times, one flapping node, and
(optionally) a correlated failure: a share of one zone unreachable at once for a while. The
repair controller runs in the same process, exactly as in ``kubemedic run`` but stepped in
lockstep with the simulation: its real executor over HTTP, the ``agent`` provider (reboots
through the simulated node agent; Cluster API replaces what a reboot cannot cure) and a SQLite
ledger. After every round the invariants are checked:

- **brakes**: repairs in flight per pool never above ``maxInFlight``; no repair starts in a pool
  while more of it is unhealthy than ``maxUnhealthy`` allows;
- **budgets**: no pod is deleted outside the Eviction API, and no PodDisruptionBudget is driven
  below zero disruptions allowed;
- **correlated failures**: no node of the dark zone is rebooted, powered on or replaced while
  the outage lasts;
- **repair**: every node with a repairable fault is healthy again (or replaced by a Ready node)
  by the end, and within the threshold plus the ladder's timeouts plus its time queued behind
  other repairs of its pool;
- **the flapping node** is quarantined and never rebooted.

It also measures how long after a threshold is crossed the first action comes (cluster time).
``tests/repair/test_chaos.py`` runs a few seeds; ``bench/repair.py`` runs many and prints the
figures.

May import: everything below the command line (the simulator, the repair package, the archive).
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kubemedic.kube import config as kubeconfig
from kubemedic.repair.controller import Controller, Round
from kubemedic.repair.executing.executor import Executor
from kubemedic.repair.policy import brakes, health, observing
from kubemedic.repair.policy.records import Action, Kind, Step
from kubemedic.repair.policy.settings import RepairSettings
from kubemedic.repair.providers import registry
from kubemedic.repair.providers.base import ProviderContext
from kubemedic.sim import apiserver, scenarios
from kubemedic.sim.scenarios import ScenarioRun
from kubemedic.store.db import Archive

__all__ = ["ChaosOptions", "ChaosReport", "Fault", "play"]

ZONES = ("zone-a", "zone-b", "zone-c")
REPAIRABLE = ("kubelet-stopped", "runtime-hung", "misconfig-transient", "misconfig-persistent")
DISRUPTIVE = frozenset({Action.REBOOT, Action.POWER_ON, Action.REPLACE})
WATCHED = ("nodes", "leases", "machines", "machinesets", "machinedeployments")


@dataclass(frozen=True)
class ChaosOptions:
    seed: int = 0
    nodes: int = 500
    pools: int = 5
    #: Single-node faults drawn by the seed.
    faults: int = 10
    #: One zone partly unreachable at once (a correlated failure).
    correlated: bool = True
    #: Cluster time from the first fault to the end.
    duration: timedelta = timedelta(minutes=100)
    #: Longest step of the simulation between rounds (the policy's wake_at may be sooner).
    tick: timedelta = timedelta(seconds=10)
    settings: RepairSettings = field(default_factory=lambda: RepairSettings(dry_run=False))
    #: Follow the policy's ``wake_at`` (False: poll every ``tick`` only, as a resync loop does:
    #: the baseline of the latency figures).
    wake: bool = True


@dataclass(frozen=True)
class Fault:
    at: float  # cluster seconds after the start of the faults
    node: str
    kind: str
    lasts: float | None = None  # None: until repaired


@dataclass
class ChaosReport:
    seed: int
    nodes: int
    faults: list[Fault]
    rounds: int = 0
    decisions: int = 0
    violations: list[str] = field(default_factory=list)
    #: Cluster seconds from a threshold crossed to the repair's first decision.
    latencies: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    repaired: dict[str, float] = field(default_factory=dict)  # node -> seconds fault-to-cured
    reboots: int = 0
    #: Nodes with a fault, still held by a brake at the end (and why).
    held: dict[str, str] = field(default_factory=dict)
    wall_seconds: float = 0.0


def scenario_text(options: ChaosOptions) -> str:
    """The generated cluster, as a scenario document."""
    per_pool = max(3, options.nodes // options.pools)
    pools = []
    objects = []
    for index in range(options.pools):
        name = f"pool{index}"
        pools.append(
            f"""  - name: {name}
    count: {per_pool}
    provider: clusterapi
    capacity: {{cpu: "8", memory: 32Gi, pods: 110}}
    allocatable: {{cpu: 7910m, memory: 29Gi}}
    zones: [{", ".join(ZONES)}]
    region: region-1
    instanceType: m1.xlarge
    bootTime: [60s, 90s]
    autoscaling: {{min: 1, max: {per_pool * 2}}}
    agent: {{heartbeat: 60s}}"""
        )
        objects.append(
            f"""      - apiVersion: apps/v1
        kind: Deployment
        metadata: {{name: app{index}, namespace: chaos}}
        spec:
          replicas: {max(2, per_pool // 5)}
          selector: {{matchLabels: {{app: app{index}}}}}
          template:
            metadata: {{labels: {{app: app{index}}}}}
            spec:
              nodeSelector: {{node.kubernetes.io/pool: {name}}}
              containers:
                - name: app
                  image: registry.example/app:1
                  resources: {{requests: {{cpu: 100m, memory: 256Mi}}}}
      - apiVersion: policy/v1
        kind: PodDisruptionBudget
        metadata: {{name: app{index}, namespace: chaos}}
        spec:
          maxUnavailable: 1
          selector: {{matchLabels: {{app: app{index}}}}}"""
        )
    return (
        f"name: chaos-{options.seed}\nseed: {options.seed}\n"
        f"duration: {int(options.duration.total_seconds()) + 900}s\n"
        "pools:\n" + "\n".join(pools) + "\nobjects:\n  - manager: kubectl\n"
        "    operation: Apply\n    manifests:\n" + "\n".join(objects) + "\n"
    )


def draw_faults(options: ChaosOptions, nodes: list[str], zones: Mapping[str, str]) -> list[Fault]:
    """The seed's faults: single-node faults at least 3 minutes apart, a flapping node, and a
    correlated outage of 40% of one zone, on distinct nodes."""
    rng = random.Random(options.seed)  # noqa: S311 (a simulation)
    pool = list(nodes)
    rng.shuffle(pool)
    faults: list[Fault] = []
    at = 60.0
    for _ in range(options.faults):
        at += rng.uniform(180, 600)
        kind = rng.choice([*REPAIRABLE, "power-off"])
        faults.append(Fault(at, pool.pop(), kind))
    faults.append(Fault(rng.uniform(60, 600), pool.pop(), "flapping"))
    if options.correlated:
        zone = rng.choice(ZONES)
        members = [n for n in pool if zones.get(n) == zone]
        members = members[: max(3, int(len([n for n in nodes if zones.get(n) == zone]) * 0.4))]
        start = rng.uniform(900, 2400)
        for name in members:
            faults.append(Fault(start, name, "unreachable", lasts=rng.uniform(900, 1500)))
    return sorted(faults, key=lambda f: (f.at, f.node))


class SimClock:
    """The simulation's clock, as the controller reads it (the harness steps the simulation)."""

    def __init__(self, run: ScenarioRun) -> None:
        self.run = run

    def now(self) -> datetime:
        return self.run.sim.now()

    async def sleep(self, seconds: float) -> None:  # the harness never lets it sleep
        await asyncio.sleep(0)


async def play(options: ChaosOptions, *, workdir: Path | None = None) -> ChaosReport:
    """One seed, start to end, with the invariants checked after every round."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        where = workdir or Path(scratch)
        run = ScenarioRun(scenarios.parse(scenario_text(options), source="chaos"))
        server = run.sim.server
        port = await server.start(port=0, tick=False)
        config = where / "kubeconfig"
        apiserver.write_kubeconfig(config, f"http://127.0.0.1:{port}")
        api = kubeconfig.connect(kubeconfig.resolve(config, None))
        archive = Archive.open(f"sqlite:///{where}/ledger.db")
        try:
            return await _play(options, run, api, archive, started)
        finally:
            archive.close()
            await api.close()
            await server.stop()


async def _play(
    options: ChaosOptions, run: ScenarioRun, api: Any, archive: Archive, started: float
) -> ChaosReport:
    sim = run.sim
    sim.run_for(timedelta(minutes=8))  # the machines boot and join
    settings = options.settings
    clock = SimClock(run)
    context = ProviderContext(api=api, identity="chaos", settings=settings, now=clock.now)
    provider = registry.make_provider("agent", context)
    hands = Executor(api=api, provider=provider, identity="chaos", dry_run=False, now=clock.now)
    controller = Controller(
        settings=settings,
        cluster="chaos",
        clock=clock,
        bodies=lambda: _bodies(sim),
        hands=hands,
        provider=provider,
        ledger=archive,
        tick=options.tick,
    )
    await controller.load()
    first = observing.observe(list(_bodies(sim)), settings)
    zones = {n.name: n.zone for n in first}
    faults = draw_faults(options, sorted(zones), zones)
    report = ChaosReport(options.seed, len(first), faults)
    origin = sim.seconds()
    pending = list(faults)
    mends: list[tuple[float, Fault]] = []
    outage = _outage(faults)
    checker = _Checker(options, report, faults, outage, origin)
    end = origin + options.duration.total_seconds()
    while sim.seconds() < end:
        now = sim.seconds() - origin
        while pending and pending[0].at <= now:
            fault = pending.pop(0)
            _inflict(run, fault, sim.seconds())
            if fault.lasts is not None:
                mends.append((fault.at + fault.lasts, fault))
            if fault.kind == "flapping":
                mends.append((fault.at + 120, fault))
        for due, fault in [m for m in mends if m[0] <= now]:
            mends.remove((due, fault))
            if fault.kind == "flapping":
                host = run.cluster.hosts.find(fault.node)
                if host is not None:
                    host.kubelet = "running"
                    pending.append(replace(fault, at=now + 180))
                    pending.sort(key=lambda f: (f.at, f.node))
            else:
                scenarios.mend(run.cluster.hosts.get(fault.node), fault.kind, sim.seconds())
        done = await controller.round()
        report.rounds += 1
        report.decisions += len(done.plan.decisions)
        checker.after(done, controller, sim)
        step = options.tick.total_seconds()
        if options.wake and done.plan.wake_at is not None:
            step = min(step, max(1.0, (done.plan.wake_at - sim.now()).total_seconds()))
        sim.run_for(step)
    checker.finish(run, controller)
    report.wall_seconds = time.perf_counter() - started
    return report


def _bodies(sim: Any) -> Iterable[Mapping[str, Any]]:
    for store in (
        "nodes",
        "leases.coordination.k8s.io",
        "machines.cluster.x-k8s.io",
        "machinesets.cluster.x-k8s.io",
        "machinedeployments.cluster.x-k8s.io",
    ):
        yield from sim.objects(store)


def _inflict(run: ScenarioRun, fault: Fault, now: float) -> None:
    host = run.cluster.hosts.get(fault.node)
    kind = "kubelet-stopped" if fault.kind == "flapping" else fault.kind
    scenarios.inflict(host, kind, now)


def _outage(faults: list[Fault]) -> tuple[float, float, frozenset[str]] | None:
    dark = [f for f in faults if f.kind == "unreachable"]
    if not dark:
        return None
    return (
        min(f.at for f in dark),
        max(f.at + (f.lasts or 0) for f in dark),
        frozenset(f.node for f in dark),
    )


class _Checker:
    """The invariants, after every round."""

    def __init__(
        self,
        options: ChaosOptions,
        report: ChaosReport,
        faults: list[Fault],
        outage: tuple[float, float, frozenset[str]] | None,
        origin: float,
    ) -> None:
        self.options = options
        self.report = report
        self.faults = {f.node: f for f in faults if f.kind != "unreachable"}
        self.outage = outage
        self.origin = origin
        self.settings = options.settings
        self.started: dict[str, float] = {}
        self.queued: dict[str, float] = {}
        self.quarantined: set[str] = set()
        #: Nodes a brake held in the latest round (a repair not started for a good reason).
        self.held: dict[str, str] = {}

    def _violation(self, text: str) -> None:
        if len(self.report.violations) < 50:
            self.report.violations.append(text)

    def after(self, done: Round, controller: Controller, sim: Any) -> None:
        now = sim.seconds() - self.origin
        settings = self.settings
        nodes = observing.observe(list(_bodies(sim)), settings)
        in_flight = Counter(
            r.pool for r in controller.repairs.values() if r.step is not Step.QUARANTINE
        )
        for pool, count in in_flight.items():
            if count > brakes.max_in_flight(settings, pool):
                self._violation(f"{now:.0f}s: {count} repairs in flight in {pool}")
        sizes = Counter(n.pool for n in nodes)
        unhealthy = Counter(n.pool for n in nodes if health.judge(n, settings, done.at).unhealthy)
        by_name = {n.name: n for n in nodes}
        for name, fault in self.faults.items():
            node = by_name.get(name)
            if name in self.report.repaired or fault.at > now or name not in self.started:
                continue
            cured = node is None or (
                not health.judge(node, settings, done.at).unhealthy
                and (ready := health.ready(node, done.at)) is not None
                and ready.status == "True"
                and name not in controller.repairs
            )
            if cured:
                self.report.repaired[name] = now - fault.at
        self.held = {
            d.node: d.message for d in done.plan.decisions if d.kind is Kind.HOLD and d.node
        }
        for decision in done.plan.decisions:
            node = by_name.get(decision.node or "")
            if decision.kind is Kind.START and node is not None:
                verdict = health.judge(node, settings, done.at)
                self.started.setdefault(node.name, now)
                if verdict.since is not None and decision.repair:
                    rule = _after(settings, verdict.trigger)
                    if rule is not None:
                        late = (done.at - verdict.since - rule).total_seconds()
                        queued = self.queued.pop(node.name, None)
                        if queued is None:
                            self.report.latencies.append(max(0.0, late))
                if "quarantine" not in decision.message and unhealthy[
                    node.pool
                ] > brakes.unhealthy_budget(sizes[node.pool], settings, node.pool):
                    self._violation(f"{now:.0f}s: repair of {node.name} started over budget")
            if decision.kind is Kind.HOLD and decision.node:
                self.queued.setdefault(decision.node, now)
            if decision.kind is Kind.FINISH:
                self.report.outcomes[decision.outcome] += 1
                if decision.outcome == "quarantined" and decision.node:
                    self.quarantined.add(decision.node)
            if decision.action in DISRUPTIVE:
                if decision.action is Action.REBOOT:
                    self.report.reboots += 1
                if decision.node in self.quarantined:
                    self._violation(
                        f"{now:.0f}s: quarantined {decision.node} got {decision.action}"
                    )
                if self.outage is not None:
                    start, end, dark = self.outage
                    if decision.node in dark and start <= now <= end + 60:
                        self._violation(
                            f"{now:.0f}s: {decision.action} of {decision.node} during the "
                            "correlated outage"
                        )
        for _decision, outcome in done.outcomes:
            if outcome.data.get("deleted", "0") not in ("", "0"):
                self._violation(f"{now:.0f}s: pods deleted outside the Eviction API: {outcome}")
        for pdb in sim.objects("poddisruptionbudgets.policy"):
            allowed = (pdb.get("status") or {}).get("disruptionsAllowed", 0)
            if isinstance(allowed, int) and allowed < 0:
                self._violation(f"{now:.0f}s: PDB {pdb['metadata']['name']} below zero")

    def finish(self, run: ScenarioRun, controller: Controller) -> None:
        sim = run.sim
        nodes = {n.name: n for n in observing.observe(list(_bodies(sim)), self.settings)}
        at = sim.now()
        ladder = self.settings.ladder
        bound = (
            max(r.after for r in self.settings.conditions)
            + ladder.restart_timeout
            + ladder.reboot_timeout
            + ladder.replace_timeout
            + ladder.stable * 3
        ).total_seconds()
        for name, fault in self.faults.items():
            if fault.kind == "flapping":
                if name not in self.quarantined:
                    self._violation(f"the flapping node {name} was never quarantined")
                continue
            node = nodes.get(name)
            healthy = node is not None and not health.judge(node, self.settings, at).unhealthy
            ready = (
                node is not None
                and health.ready(node, at) is not None
                and (
                    health.ready(node, at).status == "True"  # type: ignore[union-attr]
                )
            )
            if node is None or (healthy and ready):
                continue
            if name in controller.repairs:
                continue  # still on the ladder at the end: judged by its bound below
            if name in self.held:
                self.report.held[name] = self.held[name]
                continue  # a brake holds it, which is the policy's answer
            self._violation(f"{name} ({fault.kind} at {fault.at:.0f}s) is not repaired")
        for name, repair in controller.repairs.items():
            waited = (at - repair.started).total_seconds()
            if waited > bound:
                self._violation(f"{name}: repair running for {waited:.0f}s (bound {bound:.0f}s)")


def _after(settings: RepairSettings, trigger: str) -> timedelta | None:
    for rule in settings.conditions:
        if trigger.startswith(f"{rule.type}="):
            return rule.after
    return None
