"""Lease leader election against the emulator over HTTP.

Candidates follow the emulator's clock (``ServerClock``) with the emulator running five times
faster than real time, so client-go's defaults (lease 15 s, renew deadline 10 s, retry 2 s) play
out in a fifth of the wall time. A small TCP proxy stands between one candidate and the
emulator to cut it off (a network partition) or to let another client write the Lease just
before that candidate's update reaches the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.kube.api import Api
from kubemedic.kube.clock import CLOCK_PATH, Clock, ServerClock, WallClock
from kubemedic.kube.leader import LeaderElector, LeaseRecord, micro_time
from kubemedic.sim.apiserver.server import kubeconfig
from tests.sim.conftest import Running, start_emulator

T = TypeVar("T")

NAMESPACE = "default"
NAME = "kubemedic"
LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases/{NAME}"
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
SPEED = 5.0
LEASE_DURATION = 15.0


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


@pytest.fixture
def fast(emulator: Running) -> Running:
    """The emulator with its clock at ``SPEED`` times real time."""
    status, body, _ = emulator.request("PUT", CLOCK_PATH, {"speed": SPEED})
    assert status == 200, body
    return emulator


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await scenario()

    return asyncio.run(main())


@asynccontextmanager
async def connected(url: str) -> AsyncIterator[Api]:
    api = Api(AsyncClient(config=KubeConfig.from_dict(kubeconfig(url))))
    try:
        yield api
    finally:
        await api.close()


def leader_of(elector: LeaderElector) -> str:
    """The holder the Lease named when ``elector`` last saw it ("" before any read)."""
    return elector.record.holder if elector.record else ""


async def until(what: str, predicate: Callable[[], bool], *, wall: float = 30.0) -> None:
    """Wait until ``predicate()`` holds (a guard against hanging, not a timing assertion)."""
    deadline = asyncio.get_running_loop().time() + wall
    while not predicate():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"still waiting for: {what}")
        await asyncio.sleep(0.005)


async def read_lease(api: Api) -> dict[str, Any]:
    lease = await api.get(LEASE)
    assert isinstance(lease, dict)
    return lease


def record_of(lease: dict[str, Any]) -> LeaseRecord:
    return LeaseRecord.from_lease(lease, where=LEASE)


@dataclass
class Candidate:
    """A LeaderElector with its callbacks counted and its task."""

    identity: str
    elector: LeaderElector = field(init=False)
    clock: Clock = field(init=False)
    started: int = 0
    stopped: int = 0
    stopped_at: list[datetime] = field(default_factory=list)
    leaders: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self) -> None:
        self.task = asyncio.create_task(self.elector.run(self.stop))

    async def crash(self) -> None:
        """Cancel the election task: no release, as when the process dies."""
        assert self.task is not None
        self.task.cancel()
        await asyncio.wait([self.task])


async def candidate(
    identity: str,
    api: Api,
    *,
    clock: Clock | None = None,
    clock_api: Api | None = None,
    **timing: float,
) -> Candidate:
    """A candidate following the server's clock (read through ``clock_api``, default ``api``)."""
    c = Candidate(identity)
    c.clock = clock or await ServerClock.follow(clock_api or api)

    def started() -> None:
        c.started += 1
        c.events.append("started")

    def stopped() -> None:
        c.stopped += 1
        c.stopped_at.append(c.clock.now())
        c.events.append("stopped")

    def new_leader(identity: str) -> None:
        c.leaders.append(identity)
        c.events.append(f"leader:{identity}")

    c.elector = LeaderElector(
        api,
        namespace=NAMESPACE,
        name=NAME,
        identity=identity,
        clock=c.clock,
        on_started_leading=started,
        on_stopped_leading=stopped,
        on_new_leader=new_leader,
        **timing,
    )
    return c


@asynccontextmanager
async def sampling(*candidates: Candidate) -> AsyncIterator[list[int]]:
    """Check every few milliseconds that at most one candidate believes it leads; yields a
    one-item list with the number of samples taken."""
    count = [0]
    overlaps: list[list[str]] = []

    async def sample() -> None:
        while True:
            leading = [c.identity for c in candidates if c.elector.is_leader]
            if len(leading) > 1:
                overlaps.append(leading)
            count[0] += 1
            await asyncio.sleep(0.002)

    task = asyncio.create_task(sample())
    try:
        yield count
    finally:
        task.cancel()
        await asyncio.wait([task])
    assert not overlaps, f"two leaders at once: {overlaps[:3]}"


class Proxy:
    """A TCP proxy to the emulator that can black-hole a candidate (a partition) or run a hook
    just before the next ``PUT`` request it forwards."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.partitioned = False
        self.before_put: Callable[[], Awaitable[None]] | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[Any]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def close(self) -> None:
        self.partition()
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)

    def partition(self) -> None:
        """Drop the open connections and black-hole new ones until ``heal()``."""
        self.partitioned = True
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def heal(self) -> None:
        self.partitioned = False

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._serve(reader, writer)
        except asyncio.CancelledError:
            pass  # closing down: the connection goes with it
        finally:
            writer.transport.abort()
            self._handlers.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.partitioned:
            with contextlib.suppress(ConnectionError):
                while await reader.read(65536):
                    pass  # swallowed: the request never reaches the server
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers.update((writer, up_writer))
        try:
            await asyncio.gather(
                self._pump(reader, up_writer, requests=True), self._pump(up_reader, writer)
            )
        finally:
            for w in (writer, up_writer):
                self._writers.discard(w)
                w.transport.abort()

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, requests: bool = False
    ) -> None:
        with contextlib.suppress(ConnectionError):
            while chunk := await reader.read(65536):
                if requests and chunk.startswith(b"PUT ") and self.before_put is not None:
                    hook, self.before_put = self.before_put, None
                    await hook()
                writer.write(chunk)
                await writer.drain()
        writer.transport.abort()


@asynccontextmanager
async def proxied(emulator: Running) -> AsyncIterator[tuple[Proxy, Api]]:
    proxy = Proxy(emulator.server.port)
    url = await proxy.start()
    try:
        async with connected(url) as api:
            yield proxy, api
    finally:
        await proxy.close()


async def shutdown(*candidates: Candidate) -> None:
    for c in candidates:
        if c.task is not None and not c.task.done():
            await c.crash()


def test_timings_are_checked_like_client_go() -> None:
    api: Any = None
    clock = WallClock()
    common: dict[str, Any] = {"namespace": NAMESPACE, "name": NAME, "identity": "a", "clock": clock}
    with pytest.raises(ValueError, match=r"lease_duration \(10.0 s\) must be greater than"):
        LeaderElector(api, lease_duration=10.0, renew_deadline=10.0, **common)
    with pytest.raises(ValueError, match=r"renew_deadline \(2.0 s\) must be greater than 1.2"):
        LeaderElector(api, renew_deadline=2.0, retry_period=2.0, **common)
    with pytest.raises(ValueError, match="retry_period must be positive"):
        LeaderElector(api, retry_period=0, **common)
    with pytest.raises(ValueError, match="identity must not be empty"):
        LeaderElector(api, **{**common, "identity": ""})
    elector = LeaderElector(api, **common)
    assert (elector.lease_duration, elector.renew_deadline, elector.retry_period) == (15, 10, 2)
    assert not elector.is_leader and leader_of(elector) == ""


def test_a_lone_candidate_creates_the_lease_with_kubernetes_field_shapes(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a = await candidate("a", api)
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            first = await read_lease(api)
            spec = first["spec"]
            assert spec["holderIdentity"] == "a"
            assert spec["leaseDurationSeconds"] == 15 and isinstance(
                spec["leaseDurationSeconds"], int
            )
            assert spec["leaseTransitions"] == 0
            assert MICRO_TIME.match(spec["acquireTime"]) and MICRO_TIME.match(spec["renewTime"])
            assert spec["acquireTime"] == spec["renewTime"]
            assert "managedFields" in first["metadata"]  # the server kept its own bookkeeping
            await until("a renews", lambda: a.elector.record != record_of(first))
            await asyncio.sleep(0.1)
            later = await read_lease(api)
            assert later["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
            assert MICRO_TIME.match(later["spec"]["renewTime"])
            assert later["spec"]["renewTime"] > spec["renewTime"]
            assert later["spec"]["acquireTime"] == spec["acquireTime"]
            assert later["spec"]["leaseTransitions"] == 0
            assert a.started == 1 and a.stopped == 0 and a.leaders == ["a"]
            await shutdown(a)

    run(scenario)


def test_two_candidates_exactly_one_leads(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a, b = await candidate("a", api), await candidate("b", api)
            async with sampling(a, b) as samples:
                a.start()
                b.start()
                await until("someone leads", lambda: a.elector.is_leader or b.elector.is_leader)
                leader, follower = (a, b) if a.elector.is_leader else (b, a)
                await until("the follower sees the leader", lambda: bool(follower.leaders))
                # several renewals later the same one leads and the other follows it
                await fast_sleep(leader, 2 * LEASE_DURATION)
            assert samples[0] > 100
            assert leader.started == 1 and leader.stopped == 0
            assert follower.started == 0 and not follower.elector.is_leader
            assert leader_of(follower.elector) == leader.identity
            assert follower.leaders == [leader.identity]
            assert record_of(await read_lease(api)).holder == leader.identity
            await shutdown(a, b)

    run(scenario)


async def fast_sleep(c: Candidate, seconds: float) -> None:
    await c.clock.sleep(seconds)


def test_a_crashed_leader_is_replaced_once_the_lease_expires(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a = await candidate("a", api)
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            b = await candidate("b", api)
            b.start()
            await until("b sees a", lambda: b.leaders == ["a"])
            async with sampling(a, b):
                await a.crash()
                assert a.stopped == 1 and not a.elector.is_leader
                await a.clock.sleep(2.0)  # a write a's cancelled request may have sent lands
                last = record_of(await read_lease(api))
                assert last.holder == "a"
                await until("b takes over", lambda: b.elector.is_leader)
            taken = record_of(await read_lease(api))
            assert taken.holder == "b" and taken.transitions == last.transitions + 1
            assert taken.acquire_time is not None and last.renew_time is not None
            # b waited a whole lease after it last saw a's renewal (one second of slack for
            # the two candidates' estimates of the server's clock)
            assert taken.acquire_time - last.renew_time >= timedelta(seconds=LEASE_DURATION - 1)
            assert b.leaders == ["a", "b"] and b.started == 1
            await shutdown(b)

    run(scenario)


def test_cancelling_the_election_task_always_ends_it(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a = await candidate("a", api)
            for delay in [0.0, 0.001, 0.003, 0.007, 0.013, 0.021, 0.034, 0.055, 0.089] * 3:
                a.start()
                await asyncio.sleep(delay)  # cancelled while reading, writing or waiting
                assert a.task is not None
                a.task.cancel()
                done, _ = await asyncio.wait([a.task], timeout=30)
                assert done, "the election task ignored its cancellation"
                assert not a.elector.is_leader and a.started == a.stopped

    run(scenario)


def test_wall_clock_candidates_with_short_leases_hand_over_too(emulator: Running) -> None:
    timing = {"lease_duration": 1.5, "renew_deadline": 1.0, "retry_period": 0.2}

    async def scenario() -> None:
        async with connected(emulator.url) as api:
            a = await candidate("a", api, clock=WallClock(), **timing)
            b = await candidate("b", api, clock=WallClock(), **timing)
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            b.start()
            async with sampling(a, b):
                await until("b sees a", lambda: b.leaders == ["a"])
                await a.crash()
                await until("b takes over", lambda: b.elector.is_leader)
            lease = await read_lease(api)
            assert lease["spec"]["leaseDurationSeconds"] == 2  # 1.5 s rounded up on the wire
            assert lease["spec"]["leaseTransitions"] == 1
            await shutdown(b)

    run(scenario)


def test_release_hands_over_without_waiting_out_the_lease(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a, b = await candidate("a", api), await candidate("b", api)
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            b.start()
            await until("b sees a", lambda: b.leaders == ["a"])
            before = record_of(await read_lease(api))
            async with sampling(a, b):
                assert await a.elector.release()
                assert a.stopped == 1 and not a.elector.is_leader
                released = a.elector.record
                assert released is not None and released.holder == ""
                assert released.duration_seconds == 1
                await until("b takes over", lambda: b.elector.is_leader)
            assert a.task is not None
            await asyncio.wait_for(a.task, timeout=30)  # run() returned after the release
            taken = record_of(await read_lease(api))
            assert taken.holder == "b" and taken.transitions == before.transitions + 1
            assert released.renew_time is not None and taken.acquire_time is not None
            assert taken.acquire_time - released.renew_time < timedelta(seconds=LEASE_DURATION)
            await shutdown(b)

    run(scenario)


def test_stopping_a_leader_releases_the_lease(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a = await candidate("a", api, clock=ServerClock(api))  # run() syncs it first
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            held = record_of(await read_lease(api))
            a.stop.set()
            assert a.task is not None
            await asyncio.wait_for(a.task, timeout=30)
            spec = (await read_lease(api))["spec"]
            assert spec["holderIdentity"] == ""
            assert spec["leaseDurationSeconds"] == 1
            assert spec["leaseTransitions"] == held.transitions
            assert spec["acquireTime"] == spec["renewTime"] and MICRO_TIME.match(spec["renewTime"])
            assert a.started == 1 and a.stopped == 1 and not a.elector.is_leader

    run(scenario)


def test_release_rereads_a_lease_edited_by_someone_else(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a = await candidate("a", api)
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            await a.crash()  # no renewals from here on
            lease = await read_lease(api)
            lease["metadata"]["labels"] = {"edited": "by-someone-else"}
            await api.request("PUT", LEASE, body=lease)  # the resourceVersion a holds is stale
            assert await a.elector.release()
            released = await read_lease(api)
            assert released["spec"]["holderIdentity"] == ""
            assert released["metadata"]["labels"] == {"edited": "by-someone-else"}

    run(scenario)


@pytest.mark.parametrize("skew", [-3600.0, 3600.0], ids=["stale-renew-time", "future-renew-time"])
def test_expiry_is_judged_by_local_observation_not_the_holders_renew_time(
    fast: Running, skew: float
) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            a = await candidate("a", api)
            stamp = micro_time(a.clock.now() + timedelta(seconds=skew))
            ghost = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "spec": {
                    "holderIdentity": "ghost",
                    "leaseDurationSeconds": 15,
                    "acquireTime": stamp,
                    "renewTime": stamp,
                    "leaseTransitions": 3,
                },
            }
            await api.request("POST", LEASE.rsplit("/", 1)[0], body=ghost)
            started = a.clock.now()
            a.start()
            await until("a takes over", lambda: a.elector.is_leader)
            taken = record_of(await read_lease(api))
            assert taken.holder == "a" and taken.transitions == 4
            assert taken.acquire_time is not None
            # not at once for a stale renewTime, nor an hour later for a future one: a whole
            # lease after a first saw the record
            assert taken.acquire_time - started >= timedelta(seconds=LEASE_DURATION)
            assert a.leaders == ["ghost", "a"]
            await shutdown(a)

    run(scenario)


def test_a_write_between_get_and_put_is_a_conflict_and_no_double_leadership(
    fast: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="kubemedic.leader")

    async def scenario() -> None:
        async with connected(fast.url) as api, proxied(fast) as (proxy, proxied_api):
            stamp = micro_time((await ServerClock.follow(api)).now())
            ghost = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": NAME, "namespace": NAMESPACE},
                "spec": {
                    "holderIdentity": "ghost",
                    "leaseDurationSeconds": 15,
                    "acquireTime": stamp,
                    "renewTime": stamp,
                    "leaseTransitions": 1,
                },
            }
            await api.request("POST", LEASE.rsplit("/", 1)[0], body=ghost)
            a = await candidate("a", proxied_api, clock_api=api)
            b_clock = await ServerClock.follow(api)

            async def b_takes_the_lease_first() -> None:
                # another client reads the Lease and writes it just before a's update lands
                lease = await read_lease(api)
                now = micro_time(b_clock.now())
                lease["spec"].update(
                    holderIdentity="b",
                    acquireTime=now,
                    renewTime=now,
                    leaseTransitions=lease["spec"]["leaseTransitions"] + 1,
                )
                await api.request("PUT", LEASE, body=lease)
                b_wrote.append(b_clock.now())

            b_wrote: list[datetime] = []
            proxy.before_put = b_takes_the_lease_first
            a.start()
            await until("a takes over from b", lambda: a.elector.is_leader)
            assert proxy.before_put is None  # b wrote between a's read and a's update
            assert "a: lost the race for default/kubemedic (409 Conflict)" in caplog.messages
            # a did not lead while b held the Lease; it took over once b's lease expired
            assert a.events == ["leader:ghost", "leader:b", "leader:a", "started"]
            taken = record_of(await read_lease(api))
            assert taken.holder == "a" and taken.transitions == 3  # ghost 1, b 2, a 3
            assert taken.acquire_time is not None and b_wrote
            assert taken.acquire_time - b_wrote[0] >= timedelta(seconds=LEASE_DURATION - 1)
            await shutdown(a)

    run(scenario)


def test_candidates_racing_for_a_new_lease_elect_one(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api:
            crowd = [await candidate(name, api) for name in "abcde"]
            async with sampling(*crowd):
                for c in crowd:
                    c.start()
                await until("someone leads", lambda: any(c.elector.is_leader for c in crowd))
                await crowd[0].clock.sleep(2 * LEASE_DURATION)
            winners = [c for c in crowd if c.started]
            assert len(winners) == 1 and winners[0].stopped == 0
            lease = record_of(await read_lease(api))
            assert lease.holder == winners[0].identity and lease.transitions == 0
            assert all(leader_of(c.elector) == lease.holder for c in crowd)
            await shutdown(*crowd)

    run(scenario)


def test_a_partitioned_leader_steps_down_before_the_other_takes_over(fast: Running) -> None:
    async def scenario() -> None:
        async with connected(fast.url) as api, proxied(fast) as (proxy, proxied_api):
            # a reaches the Lease through the proxy; its clock stays in touch with the server
            a = await candidate("a", proxied_api, clock_api=api)
            b = await candidate("b", api)
            a.start()
            await until("a leads", lambda: a.elector.is_leader)
            b.start()
            await until("b sees a", lambda: b.leaders == ["a"])
            async with sampling(a, b) as samples:
                proxy.partition()
                await until("a steps down", lambda: a.stopped == 1)
                await until("b takes over", lambda: b.elector.is_leader)
                proxy.heal()
                await until("a sees b", lambda: leader_of(a.elector) == "b")
                await b.clock.sleep(LEASE_DURATION)  # a, back in touch, keeps following
            assert samples[0] > 100
            taken = record_of(await read_lease(api))
            assert taken.holder == "b" and taken.transitions == 1
            assert taken.acquire_time is not None
            assert a.stopped_at[0] <= taken.acquire_time  # a had stopped acting by then
            assert a.started == 1 and not a.elector.is_leader and b.started == 1
            await shutdown(a, b)

    run(scenario)
