"""The repair loop inside ``kubemedic run`` (leader only): observe, decide, act, record.

Each round:

1. **observe**: the daemon's caches (Nodes, their Leases, Cluster API Machines, MachineSets and
   MachineDeployments) become observations; for a repair about to choose between fencing and
   draining, the provider is asked for the machine's power;
2. **decide**: :func:`kubemedic.repair.policy.deciding.decide` (pure);
3. **act**: each ``act`` decision goes to the executor, whose outcome is folded into its repair
   at once (so a cordon is known before the drain is decided);
4. **record**: in one archive transaction, the repairs in flight, the finished ones (the ledger),
   the decisions announced this round and every node's state;
5. **announce**: every decision that is new (by its key) becomes a Kubernetes Event on the node
   (aggregated by the executor when it repeats) and a log line.

Then it sleeps until the policy's ``wake_at`` (a threshold about to be crossed, a timeout, a
stable period ending) or ``tick``, whichever is first, on the cluster's clock: the first action
follows a threshold within one round, not one polling interval.

In-flight repairs live in the archive, so a restarted or newly elected replica resumes them
where they stood. Ready -> NotReady transitions (for flapping) are read from the archive's node
transitions at start and followed in memory after that.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from kubemedic.kube.api import ApiError, ConnectionLost
from kubemedic.kube.clock import Clock, sleep_or_stop
from kubemedic.repair.executing.executor import Executor
from kubemedic.repair.policy import brakes, codec, deciding, ladder, observing
from kubemedic.repair.policy.records import (
    Action,
    ClusterState,
    Decision,
    Kind,
    LedgerEntry,
    NodeObservation,
    Outcome,
    Plan,
    Power,
    Repair,
)
from kubemedic.repair.policy.settings import RepairSettings
from kubemedic.repair.providers import registry
from kubemedic.repair.providers.base import Provider, ProviderContext, ProviderError, Target
from kubemedic.store.db import Archive

__all__ = ["Controller", "Hands", "Round", "build"]

log = logging.getLogger("kubemedic.repair")

_DISRUPTIVE = frozenset({Action.REBOOT, Action.POWER_ON, Action.REPLACE})

TICK = timedelta(seconds=10)
"""Longest sleep between rounds (cluster time) when nothing is due sooner."""


class Hands(Protocol):
    """The executor as the controller uses it."""

    async def execute(self, decision: Decision, node: NodeObservation | None) -> Outcome: ...

    async def announce(self, decision: Decision) -> None: ...


@dataclass
class Round:
    """What one round did (for logs, metrics and tests)."""

    at: datetime
    plan: Plan
    outcomes: list[tuple[Decision, Outcome]] = field(default_factory=list)
    announced: list[Decision] = field(default_factory=list)


class Controller:
    """One cluster's repair loop."""

    def __init__(
        self,
        *,
        settings: RepairSettings,
        cluster: str,
        clock: Clock,
        bodies: Callable[[], Iterable[Mapping[str, Any]]],
        hands: Hands,
        provider: Provider,
        ledger: Archive,
        tick: timedelta = TICK,
    ) -> None:
        self.settings = settings
        self.cluster = cluster
        self.clock = clock
        self.bodies = bodies
        self.hands = hands
        self.provider = provider
        self.ledger = ledger
        self.tick = tick
        self.repairs: dict[str, Repair] = {}
        self.history: dict[str, tuple[LedgerEntry, ...]] = {}
        self.transitions = brakes.Transitions()
        self.alerted: frozenset[str] = frozenset()
        self.correlated: Mapping[str, str] = {}
        self.announced: set[str] = set()
        self.rounds = 0
        #: Called with each finished round (the daemon's metrics); must not raise or block.
        self.observers: list[Callable[[Round], None]] = []

    async def load(self) -> None:
        """The repairs in flight, the ledger and recent NotReady transitions, from the archive."""
        now = self.clock.now()
        loaded = await asyncio.to_thread(self.ledger.load_repairs, self.cluster)
        self.repairs = {node: codec.repair_from_json(body) for node, body in loaded.items()}
        await self._read_ledger(now)
        since = (now - self.settings.flapping.window).timestamp()
        transitions = await asyncio.to_thread(self.ledger.not_ready_since, self.cluster, since)
        self.transitions = brakes.Transitions(
            {node: [_from_epoch(t) for t in sorted(times)] for node, times in transitions.items()}
        )
        if self.repairs:
            log.info("resuming %d repairs: %s", len(self.repairs), ", ".join(sorted(self.repairs)))

    async def _read_ledger(self, now: datetime) -> None:
        """The finished repairs that count now (releases included: a person may release a node
        with ``kubemedic nodes release`` while this runs, and the count starts over)."""
        horizon = now - max(self.settings.ledger.window, self.settings.flapping.window)
        entries = await asyncio.to_thread(
            self.ledger.ledger, self.cluster, since=horizon.timestamp()
        )
        history: dict[str, list[LedgerEntry]] = {}
        for body in entries:
            entry = codec.entry_from_json(body)
            history.setdefault(entry.node, []).append(entry)
        self.history = {n: tuple(sorted(e, key=lambda x: x.finished)) for n, e in history.items()}

    async def run(self, stop: asyncio.Event) -> None:
        await self.load()
        mode = "dry run" if self.settings.dry_run else "acting"
        log.info("node repair on (%s, provider %s)", mode, self.provider.name)
        while not stop.is_set():
            wake: datetime | None = None
            try:
                wake = (await self.round()).plan.wake_at
            except (ApiError, ConnectionLost, ProviderError) as error:
                # The API or the cloud failed mid-round: what was done is folded and recorded
                # next round (every action is safe to repeat), so try again after a tick.
                log.warning("repair round failed: %s", error)
            now = self.clock.now()
            pause = self.tick
            if wake is not None:
                pause = min(pause, max(wake - now, timedelta(0)))
            if pause > timedelta(0):
                await sleep_or_stop(self.clock.sleep(pause.total_seconds()), stop)

    async def round(self) -> Round:
        """Observe, decide, act and record once."""
        now = self.clock.now()
        await self._read_ledger(now)
        nodes = observing.observe(list(self.bodies()), self.settings)
        self.transitions.observe(nodes, now, self.settings)
        nodes = await self._with_power(nodes)
        state = ClusterState(
            now=now,
            nodes=nodes,
            repairs=dict(self.repairs),
            ledger=dict(self.history),
            not_ready_at=self.transitions.snapshot(),
            alerted=self.alerted,
            correlated=self.correlated,
            abilities=self.provider.actions,
            power_known=bool(getattr(self.provider, "tells_power", False)),
        )
        plan = deciding.decide(state, self.settings)
        done = Round(now, plan)
        repairs = dict(plan.repairs)
        by_name = {n.name: n for n in nodes}
        for decision in plan.decisions:
            if decision.kind is not Kind.ACT or decision.action is None:
                continue
            outcome = await self._execute(decision, by_name.get(decision.node or ""))
            done.outcomes.append((decision, outcome))
            repair = repairs.get(decision.node or "")
            if repair is not None and repair.id == decision.repair:
                repairs[repair.node] = ladder.fold(repair, decision, outcome, now)
                self.repairs[repair.node] = repairs[repair.node]
                if decision.action in _DISRUPTIVE and outcome.ok:
                    # Recorded at once: a crash before the end of the round must not make
                    # the next leader reboot (or delete) the same machine again.
                    await asyncio.to_thread(
                        self.ledger.save_repair_round,
                        self.cluster,
                        in_flight={repair.node: codec.repair_to_json(repairs[repair.node])},
                        finished=[],
                        decisions=[],
                        node_states=[],
                        at=now.timestamp(),
                    )
        new = [d for d in plan.decisions if d.kind is not Kind.WAIT and d.key not in self.announced]
        for decision in new:
            self.announced.add(decision.key)
            _log(decision)
            try:
                await self.hands.announce(decision)
            except Exception as error:
                log.warning("could not write the Event for %s: %s", decision.reason, error)
        done.announced = new
        self.repairs = repairs
        self.alerted = plan.alerted
        self.correlated = plan.correlated
        await asyncio.to_thread(
            self.ledger.save_repair_round,
            self.cluster,
            in_flight={node: codec.repair_to_json(r) for node, r in repairs.items()},
            finished=[codec.entry_to_json(e) for e in plan.finished],
            decisions=[codec.decision_to_json(d, now) for d in new],
            node_states=[
                {"node": s.name, "state": s.state, "step": s.step, "reason": s.reason}
                for s in plan.states
            ],
            at=now.timestamp(),
        )
        self.rounds += 1
        for observer in self.observers:
            observer(done)
        return done

    async def _execute(self, decision: Decision, node: NodeObservation | None) -> Outcome:
        assert decision.action is not None
        try:
            return await self.hands.execute(decision, node)
        except ProviderError as error:
            return Outcome(decision.action, False, str(error))

    async def _with_power(self, nodes: tuple[NodeObservation, ...]) -> tuple[NodeObservation, ...]:
        """Ask the provider for the power of the machines whose repair must choose between
        fencing and draining (only those: a cloud API is not polled for every node)."""
        if not getattr(self.provider, "tells_power", False):
            return nodes
        asking = {r.node for r in self.repairs.values() if r.phase == "power"}
        if not asking:
            return nodes
        answered = []
        for node in nodes:
            if node.name in asking:
                target = Target(node.name, node.provider_id, node.machine)
                try:
                    power = await self.provider.power(target)
                except ProviderError as error:
                    log.warning("%s: cannot tell the machine's power: %s", node.name, error)
                    power = Power.UNKNOWN
                answered.append(replace(node, power=power))
            else:
                answered.append(node)
        return tuple(answered)


def _log(decision: Decision) -> None:
    level = logging.WARNING if decision.kind in (Kind.HOLD, Kind.ESCALATE) else logging.INFO
    if decision.action is Action.ALERT:
        level = logging.WARNING
    log.log(level, "%s %s: %s", decision.reason, decision.node or "-", decision.message)


def _from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def build(
    *,
    api: Any,
    archive: Archive,
    settings: RepairSettings,
    cluster: str,
    clock: Clock,
    identity: str,
    bodies: Callable[[], Iterable[Mapping[str, Any]]],
) -> Controller:
    """The controller with the configured provider and an executor over ``api``."""
    context = ProviderContext(
        api=api,
        identity=identity,
        settings=settings,
        extra={"clouds_yaml": settings.openstack.clouds_file}
        if settings.openstack.clouds_file
        else {},
        timeout=settings.exec.timeout,
        now=clock.now,
    )
    provider = registry.make_provider(settings.provider, context)
    hands = Executor(
        api=api, provider=provider, identity=identity, dry_run=settings.dry_run, now=clock.now
    )
    return Controller(
        settings=settings,
        cluster=cluster,
        clock=clock,
        bodies=bodies,
        hands=hands,
        provider=provider,
        ledger=archive,
    )
