"""A chaos world for the repair policy: random clusters, an executor that plays the plan's acts
(each succeeding or failing at random), faults, and the invariants every round must keep.

Used by ``test_properties.py`` (small clusters drawn through hypothesis, so failures shrink) and
``bench/policy_chaos.py`` (500-node clusters, many seeds). Everything is driven by one
:class:`random.Random`: a seed replays a run exactly.

The invariants are computed from the rules of docs/repair.md, not from the policy's own helpers,
except where a rule has its own unit tests (``health.judge`` for "unhealthy").
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from kubemedic.model.selectors import LabelSelector
from kubemedic.repair.policy import brakes, deciding, health, ladder
from kubemedic.repair.policy.records import (
    Action,
    ClusterState,
    Condition,
    Decision,
    Kind,
    LedgerEntry,
    MachineRef,
    NodeObservation,
    Outcome,
    Plan,
    Power,
    Repair,
    Step,
)
from kubemedic.repair.policy.settings import (
    Budget,
    ConditionRule,
    CorrelationSettings,
    DrainSettings,
    FlapSettings,
    LadderSettings,
    LedgerSettings,
    PoolSettings,
    RepairSettings,
)

from .invariants import DO_NOT_REPAIR, QUARANTINED, violations

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
HOUR = timedelta(hours=1)
ACK = "kubemedic.io/agent-ack"

# -- settings -------------------------------------------------------------------------------


def _minutes(rng: random.Random, low: float, high: float) -> timedelta:
    return timedelta(seconds=round(rng.uniform(low, high) * 60))


def random_settings(rng: random.Random, pools: Iterable[str]) -> RepairSettings:
    """Settings anywhere within their valid ranges (kubemedic.repair.settings)."""

    def budget() -> Budget:
        count = rng.choice([None, rng.randint(0, 6)])
        percent = rng.choice([None, float(rng.randint(0, 100))])
        return Budget(count=count, percent=percent)

    overrides = tuple(
        PoolSettings(
            name=name,
            selector=LabelSelector.parse(f"pool={name}"),
            max_in_flight=rng.choice([None, rng.randint(1, 4)]),
            max_unhealthy=rng.choice([None, budget()]),
            conditions=rng.choice(
                [None, (ConditionRule("Ready", ("False", "Unknown"), _minutes(rng, 1, 15)),)]
            ),
            startup_timeout=rng.choice([None, _minutes(rng, 2, 20)]),
        )
        for name in sorted(pools)
        if rng.random() < 0.5
    )
    steps = tuple(s for s in ("restart", "reboot", "replace") if rng.random() < 0.8)
    return RepairSettings(
        dry_run=rng.random() < 0.3,
        paused=rng.random() < 0.1,
        max_in_flight=rng.randint(1, 4),
        max_unhealthy=budget(),
        startup_timeout=_minutes(rng, 2, 20),
        pools=overrides,
        ladder=LadderSettings(
            restart_timeout=_minutes(rng, 1, 10),
            reboot_timeout=_minutes(rng, 3, 30),
            replace_timeout=_minutes(rng, 5, 60),
            stable=_minutes(rng, 1, 10),
            steps=steps,
        ),
        drain=DrainSettings(
            timeout=_minutes(rng, 1, 20),
            delete_after_timeout=rng.choice([(), ("best-effort",), ("standalone", "app=web")]),
            report_every=_minutes(rng, 1, 10),
        ),
        ledger=LedgerSettings(max_repairs=rng.randint(1, 5), window=_minutes(rng, 60, 48 * 60)),
        flapping=FlapSettings(transitions=rng.randint(2, 5), window=_minutes(rng, 10, 180)),
        correlation=CorrelationSettings(
            window=_minutes(rng, 0.5, 10),
            nodes=rng.randint(2, 40),
            zone_percent=float(rng.randint(1, 100)),
            zone_min_nodes=rng.randint(2, 10),
        ),
        agent_heartbeat=_minutes(rng, 0.5, 5),
    )


# -- the world --------------------------------------------------------------------------------


@dataclass
class Host:
    """One node as it really is (the policy sees it through :meth:`observe`)."""

    name: str
    pool: str
    zone: str
    created: datetime
    ready: str = "True"
    since: datetime = T0 - 48 * HOUR
    #: The kubelet stopped posting (Ready still True in the API, heartbeats stale).
    silent_since: datetime | None = None
    agent: bool = True
    agent_lag: timedelta = timedelta(0)
    kubelet_hung: bool = False
    runtime_hung: bool = False
    runtime_message: bool = False
    deadlock_since: datetime | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    unschedulable: bool = False
    boot: int = 1
    machine: MachineRef | None = None
    power: Power = Power.ON

    def observe(self, now: datetime, *, power_known: bool) -> NodeObservation:
        posting = self.ready != "Unknown" and self.silent_since is None
        beat = now - 5 * SECOND if posting else (self.silent_since or self.since - 40 * SECOND)
        message = "container runtime is down" if self.runtime_message else "kubelet is posting"
        conditions = {
            "Ready": Condition("Ready", self.ready, self.since, beat, "", message),
            "KubeletUnhealthy": Condition(
                "KubeletUnhealthy", str(self.kubelet_hung), self.created, now
            ),
            "ContainerRuntimeUnhealthy": Condition(
                "ContainerRuntimeUnhealthy", str(self.runtime_hung), self.created, now
            ),
        }
        if self.agent:
            conditions["KubemedicAgentReady"] = Condition(
                "KubemedicAgentReady", "True", self.created, now - self.agent_lag
            )
        if self.deadlock_since is not None:
            conditions["KernelDeadlock"] = Condition("KernelDeadlock", "True", self.deadlock_since)
        return NodeObservation(
            name=self.name,
            created=self.created,
            labels={"pool": self.pool, **self.labels},
            annotations=dict(self.annotations),
            unschedulable=self.unschedulable,
            boot_id=f"boot-{self.boot}",
            conditions=conditions,
            lease_renewed=(now - 3 * SECOND) if posting else beat,
            zone=self.zone,
            pool=self.pool,
            machine=self.machine,
            power=self.power if power_known else None,
            uid=f"uid-{self.name}",
        )


@dataclass
class World:
    rng: random.Random
    settings: RepairSettings
    now: datetime
    hosts: dict[str, Host]
    repairs: dict[str, Repair] = field(default_factory=dict)
    ledger: dict[str, list[LedgerEntry]] = field(default_factory=dict)
    not_ready_at: dict[str, list[datetime]] = field(default_factory=dict)
    alerted: frozenset[str] = frozenset()
    abilities: frozenset[Action] = frozenset({Action.REBOOT, Action.POWER_ON})
    power_known: bool = False
    serial: int = 0

    def state(self) -> ClusterState:
        return ClusterState(
            now=self.now,
            nodes=tuple(
                h.observe(self.now, power_known=self.power_known) for h in self.hosts.values()
            ),
            repairs=dict(self.repairs),
            ledger={n: tuple(e) for n, e in self.ledger.items()},
            not_ready_at={n: tuple(t) for n, t in self.not_ready_at.items()},
            alerted=self.alerted,
            abilities=self.abilities,
            power_known=self.power_known,
        )

    # -- the executor, as the controller plays it -----------------------------------------

    def play(self, plan: Plan) -> None:
        """Carry out the plan's acts (each may fail), fold them into their repairs, keep the
        ledger and the alerts, as the controller does."""
        repairs = dict(plan.repairs)
        for decision in plan.decisions:
            if decision.kind is not Kind.ACT or decision.action is None:
                continue
            outcome = self._execute(decision)
            repair = repairs.get(decision.node or "")
            if repair is not None and repair.id == decision.repair:
                repairs[repair.node] = ladder.fold(repair, decision, outcome, self.now)
        self.repairs = repairs
        for entry in plan.finished:
            self.ledger.setdefault(entry.node, []).append(entry)
        self.alerted = plan.alerted

    def _execute(self, decision: Decision) -> Outcome:
        action = decision.action
        assert action is not None
        if decision.dry_run or self.settings.dry_run:
            return Outcome(action, True, "dry run", {"dry_run": "true"})
        if action is Action.ALERT:
            return Outcome(action, True, "sent")
        host = self.hosts.get(decision.node or "")
        if host is None or self.rng.random() < 0.15:
            return Outcome(action, False, "the API refused it")
        rng, now = self.rng, self.now
        if action in (Action.RESTART_KUBELET, Action.RESTART_RUNTIME):
            state = rng.choice(["done", "done", "done", "refused", "failed"])
            host.annotations[ACK] = (
                f'{{"id": "{decision.args.get("id", "")}", "state": "{state}", '
                '"message": "by the chaos agent"}'
            )
            if state == "done" and rng.random() < 0.7:
                self._up(host, now + _minutes(rng, 0, 3))
        elif action is Action.CORDON:
            host.unschedulable = True
        elif action is Action.DRAIN:
            if rng.random() < 0.3:
                return Outcome(action, False, "blocked", {"blocking": "shop/web-1 (PDB web)"})
        elif action in (Action.REBOOT, Action.POWER_ON):
            before = f"boot-{host.boot}"
            if rng.random() < 0.8:
                host.boot += 1
                host.power = Power.ON
                if rng.random() < 0.7:
                    self._up(host, now + _minutes(rng, 0.5, 5))
            return Outcome(action, True, "asked", {"boot_id": before})
        elif action is Action.FENCE:
            host.labels["chaos/fenced"] = "true"
        elif action is Action.UNFENCE:
            host.labels.pop("chaos/fenced", None)
        elif action is Action.UNCORDON:
            if host.labels.get(QUARANTINED) == "true":
                return Outcome(action, False, "quarantined")
            host.unschedulable = False
        elif action is Action.REPLACE:
            self._replace(host)
        elif action is Action.QUARANTINE:
            host.labels[QUARANTINED] = "true"
            host.annotations["kubemedic.io/quarantine-reason"] = decision.args.get("reason", "")
            host.unschedulable = True
        return Outcome(action, True, "done")

    def _up(self, host: Host, at: datetime) -> None:
        at = min(at, self.now)
        host.ready, host.since, host.silent_since = "True", at, None
        host.kubelet_hung = host.runtime_hung = host.runtime_message = False
        host.deadlock_since = None

    def _down(self, host: Host, at: datetime, status: str) -> None:
        if host.ready == "True" and host.silent_since is None:
            self.not_ready_at.setdefault(host.name, []).append(at)
        if status == "silent":
            host.silent_since = at
            return
        if host.ready == "True" or host.ready != status:
            host.ready, host.since = status, at

    def _replace(self, host: Host) -> None:
        del self.hosts[host.name]
        if host.machine is None or self.rng.random() < 0.2:
            return
        self.serial += 1
        name = f"{host.pool}-r{self.serial}"
        born = self.now + _minutes(self.rng, 0, 2)
        self.hosts[name] = Host(
            name=name,
            pool=host.pool,
            zone=host.zone,
            created=min(born, self.now),
            since=min(born, self.now),
            machine=replace(host.machine, name=f"{host.machine.name}-r{self.serial}"),
        )

    # -- faults and time --------------------------------------------------------------------

    def disturb(self, span: timedelta) -> None:
        """What happened during ``span`` before now: nodes failing (alone or together),
        recovering, operators annotating and releasing."""
        rng, now = self.rng, self.now
        hosts = list(self.hosts.values())
        if not hosts:
            return
        for host in hosts:
            roll = rng.random()
            at = now - span * rng.random()
            if roll < 0.01:
                self._down(host, at, rng.choice(["False", "Unknown", "silent"]))
                host.kubelet_hung = rng.random() < 0.3
                host.runtime_hung = rng.random() < 0.1
                host.runtime_message = rng.random() < 0.1
            elif roll < 0.013:
                host.deadlock_since = at
            elif roll < 0.05 and (host.ready != "True" or host.silent_since is not None):
                self._up(host, at)
            elif roll < 0.052:
                if DO_NOT_REPAIR in host.annotations:
                    del host.annotations[DO_NOT_REPAIR]
                else:
                    host.annotations[DO_NOT_REPAIR] = rng.choice(["true", "yes", "false", ""])
            elif roll < 0.06 and host.labels.get(QUARANTINED) == "true":
                self._release(host)
            elif roll < 0.065:
                host.agent_lag = _minutes(rng, 0, 6)
            elif roll < 0.068:
                host.power = rng.choice(list(Power))
        if rng.random() < 0.15:
            self._burst(hosts, span)

    def _burst(self, hosts: list[Host], span: timedelta) -> None:
        rng = self.rng
        zone = rng.choice(hosts).zone
        members = [h for h in hosts if rng.random() < 0.5 or h.zone == zone]
        if rng.random() < 0.5:
            members = [h for h in hosts if h.zone == zone]
        start = self.now - span * rng.random()
        spread = self.settings.correlation.window * rng.uniform(0.2, 2)
        for host in rng.sample(members, k=min(len(members), rng.randint(2, 12))):
            at = min(self.now, start + spread * rng.random())
            self._down(host, at, rng.choice(["Unknown", "Unknown", "False", "silent"]))

    def _release(self, host: Host) -> None:
        host.labels.pop(QUARANTINED, None)
        host.annotations.pop("kubemedic.io/quarantine-reason", None)
        host.unschedulable = False
        self.serial += 1
        entry = LedgerEntry(
            f"release-{self.serial}", host.name, "released", self.now, self.now, "released"
        )
        self.ledger.setdefault(host.name, []).append(entry)

    def advance(self, plan: Plan) -> timedelta:
        """Move the clock: to the plan's wake-up, or by a random tick."""
        step = timedelta(seconds=self.rng.choice([10, 30, 60, 120, 300, 600, 900]))
        if plan.wake_at is not None and self.rng.random() < 0.5:
            step = min(step, plan.wake_at - self.now)
        step = max(step, SECOND)
        self.now += step
        return step


# -- building a world ----------------------------------------------------------------------


def build_world(rng: random.Random, *, nodes: int) -> World:
    """A cluster of ``nodes`` nodes in a few pools and zones, some already down (a few in a
    burst), with a history of transitions, a ledger and repairs in flight."""
    pools = [f"p{i}" for i in range(rng.randint(1, 5))]
    zones = [f"z{i}" for i in range(rng.randint(1, 4))] + ([""] if rng.random() < 0.2 else [])
    settings = random_settings(rng, pools)
    world = World(rng=rng, settings=settings, now=T0, hosts={}, power_known=rng.random() < 0.4)
    if rng.random() < 0.2:
        world.abilities = frozenset({Action.POWER_ON})
    for i in range(nodes):
        pool, zone = rng.choice(pools), rng.choice(zones)
        created = T0 - _minutes(rng, 5, 60 * 24 * 30)
        machine = None
        if rng.random() < 0.6:
            machine = MachineRef(
                "capi",
                f"{pool}-m{i}",
                owner=rng.choice([f"MachineSet/{pool}-ms", f"MachineSet/{pool}-ms", ""]),
                group=f"capi/MachineDeployment/{pool}",
                group_min=rng.choice([None, rng.randint(0, 5)]),
                group_ready=rng.randint(0, 8),
            )
        host = Host(
            name=f"n{i:03d}",
            pool=pool,
            zone=zone,
            created=created,
            since=max(created, T0 - _minutes(rng, 1, 60 * 48)),
            agent=rng.random() < 0.8,
            machine=machine,
            power=rng.choice([Power.ON, Power.ON, Power.OFF, Power.UNKNOWN]),
        )
        if rng.random() < 0.05:
            host.labels[QUARANTINED] = "true"
            host.unschedulable = True
        if rng.random() < 0.04:
            host.annotations[DO_NOT_REPAIR] = rng.choice(["true", "false", "", "no"])
        world.hosts[host.name] = host
        _history(world, host)
        if rng.random() < 0.08:
            world._down(host, T0 - _minutes(rng, 0, 40), rng.choice(["False", "Unknown"]))
            host.kubelet_hung = rng.random() < 0.4
        elif rng.random() < 0.02:  # never Ready since its creation
            host.created = T0 - _minutes(rng, 0, 30)
            host.ready, host.since = "False", host.created + 20 * SECOND
    if rng.random() < 0.5:
        world._burst(list(world.hosts.values()), 20 * MINUTE)
    for host in list(world.hosts.values()):
        _maybe_in_flight(world, host)
    return world


def _history(world: World, host: Host) -> None:
    rng = world.rng
    if rng.random() < 0.2:
        world.not_ready_at[host.name] = sorted(
            T0 - _minutes(rng, 1, 240) for _ in range(rng.randint(1, 5))
        )
    if rng.random() < 0.25:
        entries = []
        for j in range(rng.randint(1, 6)):
            finished = T0 - _minutes(rng, 1, 60 * 50)
            outcome = rng.choice(_OUTCOMES)
            entries.append(
                LedgerEntry(
                    f"{host.name}-old{j}",
                    host.name,
                    "Ready=False for 10m",
                    finished - 10 * MINUTE,
                    finished,
                    outcome,
                    dry_run=outcome == "dry-run" or rng.random() < 0.1,
                )
            )
        world.ledger[host.name] = sorted(entries, key=lambda e: e.finished)


_OUTCOMES = ("repaired", "replaced", "abandoned", "quarantined", "recovered", "dry-run", "released")
_PHASES = {
    Step.RESTART: ["request", "verify"],
    Step.REBOOT: ["cordon", "power", "drain", "reboot", "booting", "restore"],
    Step.REPLACE: ["check", "replacing"],
    Step.QUARANTINE: ["request", "verify"],
}


def _maybe_in_flight(world: World, host: Host) -> None:
    """A repair in flight for some unhealthy nodes, within the pool's in-flight limit."""
    rng, settings = world.rng, world.settings
    if rng.random() > 0.3 or host.ready == "True" or host.name in world.repairs:
        return
    step = rng.choice(list(_PHASES))
    if step is not Step.QUARANTINE:
        limit = next(
            (p.max_in_flight for p in settings.pools if p.name == host.pool and p.max_in_flight),
            settings.max_in_flight,
        )
        busy = sum(
            1
            for r in world.repairs.values()
            if r.pool == host.pool and r.step is not Step.QUARANTINE
        )
        if busy >= limit:
            return
    phase = rng.choice(_PHASES[step])
    if settings.dry_run and rng.random() < 0.5:
        phase = "dry-run"
    started = T0 - _minutes(rng, 0, 60)
    phase_started = started + (T0 - started) * rng.random()
    world.repairs[host.name] = Repair(
        id=f"{host.name}-inflight",
        node=host.name,
        pool=host.pool,
        trigger="Ready=Unknown for 10m",
        started=started,
        step=step,
        phase=phase,
        phase_started=phase_started,
        step_started=started,
        cause=rng.choice(["node", "kubelet", "runtime"]),
        boot_id=f"boot-{host.boot}",
        request=f"{host.name}-inflight-1" if step is Step.RESTART else "",
        fenced=step is Step.REBOOT and rng.random() < 0.3,
        cordoned=step is Step.REBOOT and rng.random() < 0.6,
        owner=host.machine.owner if host.machine is not None else "",
        dry_run=settings.dry_run,
    )


# -- a run -----------------------------------------------------------------------------------


@dataclass
class Run:
    rounds: int = 0
    decisions: int = 0
    acts: int = 0
    violations: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    alerts: Counter[str] = field(default_factory=Counter)
    #: (node, NotReady since) of the members of each correlated group alerted so far.
    outages: dict[tuple[str, datetime], str] = field(default_factory=dict)

    def alerted_again(self, state: ClusterState, plan: Plan, settings: RepairSettings) -> list[str]:
        """A new correlated alert for an outage (a node NotReady since the same time) that an
        earlier alert named already."""
        since = {
            n.name: t
            for n in state.nodes
            if n.labels.get(QUARANTINED) != "true"
            and (t := health.not_ready_since(n, state.now)) is not None
        }
        groups = {g.key: g for g in brakes.correlated(state.nodes, since, settings.correlation)}
        found = []
        for d in plan.decisions:
            group = groups.get(d.key)
            if d.kind is not Kind.ACT or group is None or d.key in state.alerted:
                continue
            seen = {
                self.outages[(n, since[n])] for n in group.nodes if (n, since[n]) in self.outages
            }
            if seen - {d.key}:
                found.append(f"alert {d.key} again names the outage of {sorted(seen)[0]}")
            for n in group.nodes:
                self.outages.setdefault((n, since[n]), d.key)
        return found


def chaos(rng: random.Random, *, nodes: int, rounds: int, check_determinism: bool = True) -> Run:
    """Build a world and play ``rounds`` rounds of decide, check, execute, disturb, advance."""
    world = build_world(rng, nodes=nodes)
    settings = world.settings
    run = Run()
    for number in range(rounds):
        state = world.state()
        started = time.perf_counter()
        plan = deciding.decide(state, settings)
        run.seconds.append(time.perf_counter() - started)
        run.rounds += 1
        run.decisions += len(plan.decisions)
        problems = violations(state, plan, settings)
        if check_determinism and deciding.decide(state, settings) != plan:
            problems.append("the same state gave another plan")
        for d in plan.decisions:
            if d.kind is Kind.ACT:
                run.acts += 1
                if d.key.startswith("correlated:"):
                    run.alerts[d.key] += 1
                    if run.alerts[d.key] > 1 or d.key in state.alerted:
                        problems.append(f"correlated alert {d.key} emitted again")
        problems.extend(run.alerted_again(state, plan, settings))
        if not {k for k in state.alerted if k.startswith("correlated:")} <= plan.alerted:
            problems.append("alerted keys were forgotten")
        run.violations.extend(f"round {number} at {state.now:%H:%M:%S}: {p}" for p in problems)
        world.play(plan)
        span = world.advance(plan)
        world.disturb(span)
    return run
