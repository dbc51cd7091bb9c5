"""The simulation engine: cluster components acting on the emulator's virtual clock.

A :class:`Simulation` owns one :class:`~kubemedic.sim.apiserver.server.ApiServer` and the components
that make it behave like a cluster (scheduler, kubelets, controllers, Cluster API, metrics).
Components act the way their real counterparts do: they observe changes (the stand-in for an
informer's watch), keep work queues, and write back through the API server's registries with
their own field manager (``kube-scheduler``, ``kubelet``, ``kube-controller-manager``), so
resourceVersions, managedFields, watch events and Events are what a client of a real cluster
would see.

Time is discrete. The engine advances the virtual clock in steps of ``resolution`` seconds of
cluster time; in each step it fires the timers that are due (heartbeats, resyncs, scenario
actions) and then runs up to ``rounds`` passes of every component's ``sync``. One pass stands for
the latency of one informer-to-write round trip (about ``resolution / rounds`` seconds), so a loop
that feeds itself, such as a ReplicaSet replacing pods the kubelet keeps rejecting, goes round a
realistic number of times per second instead of forever in one instant. When no component has
work and no change arrived, the clock jumps straight to the next timer.

Two ways to run:

- :meth:`Simulation.run_for` runs as fast as the machine allows (the clock is paused between
  steps, so hours of cluster time take seconds);
- :meth:`Simulation.run_paced` keeps cluster time at ``speed`` times wall time, yielding to the
  event loop between steps, so HTTP clients (kubectl, lightkube, kubemedic itself) can watch and
  write while the cluster runs. Their writes are seen by the components at the next pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import heapq
import logging
import random
import time
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.clock import VirtualClock
from kubemedic.sim.machinery.objects import Change, Key, Obj

__all__ = ["Component", "DelayedAdds", "Simulation", "Timer"]

log = logging.getLogger(__name__)

#: Default step of cluster time (seconds).
RESOLUTION = 1.0
#: Default sync passes per step: one informer-to-write round trip takes ~250 ms.
ROUNDS = 4


class Component(Protocol):
    """A piece of cluster behaviour. ``attach`` registers timers and change listeners; ``sync``
    processes queued work and returns whether it wrote anything."""

    name: str

    def attach(self, sim: Simulation) -> None: ...

    def sync(self) -> bool: ...


C = TypeVar("C", bound=Component)
K = TypeVar("K", bound=Hashable)


@dataclass(eq=False)
class Timer:
    """A callback due at ``due`` (POSIX seconds of cluster time), repeating every ``period``."""

    due: float
    fn: Callable[[], None]
    period: float = 0.0
    name: str = ""
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


#: CPython's cyclic-GC thresholds while a run goes as fast as it can (at least these).
GC_THRESHOLDS = (50_000, 20, 10)


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise CPython's collection thresholds for the duration, then restore them.

    A simulated cluster is a large, long-lived heap (the stored objects: some 2.6 million
    tracked containers for 60,000 pods) and every write allocates thousands of short-lived
    dicts (copies, patches, managedFields). With the default thresholds ``(700, 10, 10)`` a
    young collection runs every few writes and a full one, walking the whole store for seconds,
    every few minutes of cluster time: a third of a large cluster's run time. Rarer young
    collections still reclaim the reference cycles the components make (timer closures), and
    the oldest generation is still collected when it has grown enough."""
    previous = gc.get_threshold()
    if previous[0] == 0:  # automatic collection turned off by the caller: leave it so
        yield
        return
    gc.set_threshold(*(max(a, b) for a, b in zip(previous, GC_THRESHOLDS, strict=False)))
    try:
        yield
    finally:
        gc.set_threshold(*previous)


#: client-go's ``DefaultControllerRateLimiter``: per-item exponential back-off from 5 ms (to
#: 1000 s), and one token bucket of 10 adds per second (burst 100) shared by all items.
BACKOFF_BASE = 0.005
BACKOFF_MAX = 1000.0
BUCKET_RATE = 10.0
BUCKET_BURST = 100


class DelayedAdds(Generic[K]):
    """A controller's delayed work-queue adds (client-go's delaying, rate-limited workqueue).

    ``add_after(key, delay)`` calls ``add(key)`` ``delay`` seconds of cluster time later. As in
    client-go, a key waits at most once: asking again while it waits only moves its time
    earlier, never adds a second wake-up, so a controller that requeues on every sync keeps one
    timer per object instead of one per sync.

    ``add_rate_limited(key)`` is ``AddRateLimited`` with ``DefaultControllerRateLimiter``: the
    delay is the larger of the item's exponential back-off (5 ms doubling with each rate-limited
    add since the item was last ``forget``-ed, as a controller does after a sync that returned
    no error) and the wait for a token of the bucket shared by every item (10 per second, burst
    100). So however many objects a controller requeues "now", it gets to about ten of them a
    second, as kube-controller-manager's Deployment controller does with Deployments whose
    pods are unavailable (``requeueStuckDeployment`` when the progress deadline is less than a
    second away or already passed).
    """

    def __init__(self, sim: Simulation, add: Callable[[K], None], *, name: str = "") -> None:
        self._sim = sim
        self._add = add
        self._name = name
        self._waiting: dict[K, Timer] = {}
        self._failures: dict[K, int] = {}
        self._tokens = float(BUCKET_BURST)
        self._filled = sim.seconds()

    def add_after(self, key: K, delay: float) -> None:
        due = self._sim.seconds() + max(0.0, delay)
        waiting = self._waiting.get(key)
        if waiting is not None and not waiting.cancelled:
            if waiting.due <= due:
                return
            waiting.cancel()
        fire = functools.partial(self._fire, key)
        self._waiting[key] = self._sim.after(delay, fire, name=self._name)

    def add_rate_limited(self, key: K) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        backoff = min(BACKOFF_BASE * 2.0**failures, BACKOFF_MAX)
        self.add_after(key, max(backoff, self._reserve()))

    def forget(self, key: K) -> None:
        """The item synced without error: its back-off starts again from 5 ms."""
        self._failures.pop(key, None)

    def _reserve(self) -> float:
        """``rate.Limiter.Reserve().Delay()``: take a token, or wait for one to accrue."""
        now = self._sim.seconds()
        self._tokens = min(BUCKET_BURST, self._tokens + (now - self._filled) * BUCKET_RATE)
        self._filled = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / BUCKET_RATE

    def _fire(self, key: K) -> None:
        self._waiting.pop(key, None)
        self._add(key)


@dataclass
class Stats:
    """What the engine did (for progress displays and benchmarks)."""

    steps: int = 0
    timers: int = 0
    passes: int = 0
    changes: int = 0
    errors: int = 0
    wall: float = 0.0


class Simulation:
    """One simulated cluster: the API server, its components and the virtual clock."""

    def __init__(
        self,
        server: ApiServer | None = None,
        *,
        start: datetime | None = None,
        seed: int = 0,
        resolution: float = RESOLUTION,
        rounds: int = ROUNDS,
        event_ttl: timedelta = timedelta(hours=1),
    ) -> None:
        if server is None:
            origin = start or datetime(2026, 1, 1, tzinfo=UTC)
            server = ApiServer(
                clock=VirtualClock(origin, paused=True), event_ttl=event_ttl, seed=seed + 1
            )
        elif not server.clock.paused:
            server.clock.pause()
        self.server = server
        self.clock: VirtualClock = server.clock
        if server.writer.ids is None:
            # Object uids and generated names come from the seed too, so a run repeats.
            server.writer.ids = random.Random(seed + 1)  # noqa: S311 (simulation, not crypto)
        self.random = random.Random(seed)  # noqa: S311 (simulation, not cryptography)
        #: The run's seed, for parts that draw from their own source (the simulated cloud's
        #: credentials) so as not to change what ``random`` gives the components.
        self.seed = seed
        self.resolution = resolution
        self.rounds = rounds
        self.components: list[Component] = []
        self.stats = Stats()
        self._timers: list[tuple[float, int, Timer]] = []
        self._seq = 0
        self._listeners: dict[str, list[Callable[[Change], None]]] = {}
        self._dirty = True
        self._last_nanos = 0
        server.store.listeners.append(self._dispatch)

    # components ------------------------------------------------------------------------------

    def add(self, component: C) -> C:
        """Attach a component; components sync in the order they were added."""
        self.components.append(component)
        component.attach(self)
        return component

    def find(self, kind: type[C]) -> C | None:
        """The attached component of a type (e.g. the kubelets, to break one)."""
        for component in self.components:
            if isinstance(component, kind):
                return component
        return None

    # time --------------------------------------------------------------------------------------

    def now(self) -> datetime:
        return self.clock.now()

    def nanos(self) -> int:
        """Cluster time in nanoseconds, strictly increasing between calls (names such as an
        event's ``<object>.<hex UnixNano>`` stay unique when many are written in one instant)."""
        value = max(int(self.seconds() * 1e9), self._last_nanos + 1)
        self._last_nanos = value
        return value

    def seconds(self) -> float:
        """Cluster time as POSIX seconds (what timers are keyed on)."""
        return self.clock.now().timestamp()

    def every(
        self, period: float, fn: Callable[[], None], *, offset: float | None = None, name: str = ""
    ) -> Timer:
        """Call ``fn`` every ``period`` seconds, first after ``offset`` (a random phase within
        the period when omitted, so a thousand kubelets do not all beat in the same second)."""
        if period <= 0:
            raise ValueError(f"timer period must be positive, got {period}")
        first = self.random.uniform(0, period) if offset is None else offset
        return self._push(Timer(self.seconds() + first, fn, period, name))

    def after(self, delay: float, fn: Callable[[], None], *, name: str = "") -> Timer:
        return self._push(Timer(self.seconds() + max(0.0, delay), fn, 0.0, name))

    def at(self, moment: datetime, fn: Callable[[], None], *, name: str = "") -> Timer:
        return self._push(Timer(moment.timestamp(), fn, 0.0, name))

    def _push(self, timer: Timer) -> Timer:
        self._seq += 1
        heapq.heappush(self._timers, (timer.due, self._seq, timer))
        return timer

    def next_due(self) -> float | None:
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    # observing ---------------------------------------------------------------------------------

    def watch(self, store: str, fn: Callable[[Change], None]) -> None:
        """Call ``fn`` with every change of one store (``pods``, ``deployments.apps``,
        ``machines.cluster.x-k8s.io``...), synchronously as the write is stored. Listeners must
        not write: they note work for their component's next ``sync``."""
        self._listeners.setdefault(store, []).append(fn)

    def _dispatch(self, change: Change) -> None:
        self._dirty = True
        self.stats.changes += 1
        for fn in self._listeners.get(change.store, ()):
            fn(change)

    # reading -----------------------------------------------------------------------------------

    def get(self, store: str, namespace: str, name: str) -> Obj | None:
        """The stored object (never mutate it: stored objects are shared with readers)."""
        entry = self.server.store.get(store, (namespace, name))
        return entry.obj if entry is not None else None

    def objects(self, store: str, *, namespace: str | None = None) -> Iterator[Obj]:
        """Stored objects of one store in key order (never mutate them)."""
        for _, entry in self.server.store.scan(store, namespace=namespace):
            yield entry.obj

    def items(self, store: str) -> Iterator[tuple[Key, Obj]]:
        """Stored objects of one store with their keys, in key order (never mutate them)."""
        for key, entry in self.server.store.scan(store):
            yield key, entry.obj

    def stamp(self) -> str:
        """The server's time as it writes it into objects (RFC 3339, whole seconds)."""
        return self.server.writer.now()

    def kubelets_attached(self) -> None:
        """Real kubelets run from now on: the server stops standing in for them (it no longer
        finishes deleting pods of nodes nobody runs)."""
        self.server.writer.stand_in_kubelet = False

    def count(self, store: str) -> int:
        return self.server.store.count(store)

    # stepping ----------------------------------------------------------------------------------

    def step(self) -> None:
        """Fire the timers due by now, then let the components settle."""
        self.stats.steps += 1
        now = self.seconds()
        with fewer_collections():
            while self._timers and self._timers[0][0] <= now:
                due, _, timer = heapq.heappop(self._timers)
                if timer.cancelled:
                    continue
                self.stats.timers += 1
                self._call(timer.fn, timer.name)
                if timer.period and not timer.cancelled:
                    timer.due = due + timer.period
                    if timer.due <= now:  # a long jump: skip missed beats, not replay them
                        timer.due = now + timer.period
                    self._push(timer)
            self.settle()

    def settle(self, rounds: int | None = None) -> None:
        """Run up to ``rounds`` passes of every component's sync, stopping when quiet."""
        for _ in range(self.rounds if rounds is None else rounds):
            self._dirty = False
            progressed = False
            for component in self.components:
                self.stats.passes += 1
                progressed |= bool(self._call(component.sync, component.name))
            self._call(self.server.collector.tick, "collector")
            if not progressed and not self._dirty:
                return

    def _call(self, fn: Callable[[], Any], name: str) -> Any:
        try:
            return fn()
        except errors.StatusError as exc:
            # A component's write lost a race (409) or was refused: real controllers requeue
            # and retry on their next sync, which is what the next pass does.
            self.stats.errors += 1
            log.debug("%s: %s %s", name or fn, exc.code, exc.message)
            return True

    def _idle(self) -> bool:
        return not self._dirty

    def _advance_to(self, target: float) -> None:
        now = self.seconds()
        if target > now:
            self.clock.advance(target - now)

    def run_until(self, moment: datetime, *, on_step: Callable[[], None] | None = None) -> None:
        """Run as fast as possible until cluster time reaches ``moment``."""
        started = time.perf_counter()
        end = moment.timestamp()
        with fewer_collections():
            due = self.next_due()
            if due is not None and due <= self.seconds():
                self.step()
            while True:
                now = self.seconds()
                if now >= end:
                    break
                target = now + self.resolution
                if self._idle():
                    due = self.next_due()
                    target = max(target, due) if due is not None else end
                self._advance_to(min(target, end))
                self.step()
                if on_step is not None:
                    on_step()
        self.stats.wall += time.perf_counter() - started

    def run_for(
        self, duration: timedelta | float, *, on_step: Callable[[], None] | None = None
    ) -> None:
        seconds = duration.total_seconds() if isinstance(duration, timedelta) else duration
        self.run_until(self.now() + timedelta(seconds=seconds), on_step=on_step)

    async def run_paced(
        self,
        *,
        speed: float,
        until: datetime | None = None,
        on_step: Callable[[], None] | None = None,
        stop: asyncio.Event | None = None,
    ) -> None:
        """Keep cluster time at ``speed`` x wall time (or as close as the machine allows),
        yielding to the event loop between steps so the API keeps answering."""
        if speed <= 0:
            raise ValueError(f"speed must be positive, got {speed}")
        wall0 = time.monotonic()
        virtual0 = self.seconds()
        while until is None or self.now() < until:
            if stop is not None and stop.is_set():
                return
            target = virtual0 + (time.monotonic() - wall0) * speed
            if until is not None:
                target = min(target, until.timestamp())
            now = self.seconds()
            if target - now >= self.resolution or (until is not None and target > now):
                self._advance_to(min(target, now + self.resolution))
                started = time.perf_counter()
                self.step()
                self.stats.wall += time.perf_counter() - started
                if on_step is not None:
                    on_step()
                await asyncio.sleep(0)
            else:
                # Let HTTP clients in; their writes are picked up by the next step.
                await asyncio.sleep(min(0.05, self.resolution / speed))
                if not self._idle():
                    self.settle(1)
