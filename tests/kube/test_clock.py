"""The clocks kubemedic reads time from, against the emulator's virtual clock over HTTP, and
against a bare server that only answers ``/version`` (a real kube-apiserver has no clock
endpoint) for the ``Date`` header fallback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import pytest
from aiohttp import web
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.kube.api import Api
from kubemedic.kube.clock import CLOCK_PATH, ClockError, ServerClock, WallClock
from kubemedic.model.objects import parse_time
from kubemedic.sim.apiserver.server import kubeconfig
from tests.sim.conftest import Running, start_emulator

T = TypeVar("T")


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


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


def server_now(emulator: Running) -> datetime:
    status, body, _ = emulator.request("GET", CLOCK_PATH)
    assert status == 200
    moment = parse_time(body["now"])
    assert moment is not None
    return moment


def set_clock(emulator: Running, **change: Any) -> None:
    status, body, _ = emulator.request("PUT", CLOCK_PATH, change)
    assert status == 200, body


@asynccontextmanager
async def bare_server(routes: dict[str, Callable[[], web.Response]]) -> AsyncIterator[str]:
    """An HTTP server answering only ``routes`` (404 elsewhere), on a free local port."""
    app = web.Application()
    for path, answer in routes.items():

        async def handler(_: web.Request, answer: Callable[[], web.Response] = answer) -> Any:
            return answer()

        app.router.add_get(path, handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def version_dated(date: str) -> Callable[[], web.Response]:
    return lambda: web.json_response({"major": "1", "minor": "31"}, headers={"Date": date})


def test_wall_clock_reads_aware_utc_and_sleeps() -> None:
    clock = WallClock()
    before = datetime.now(UTC)
    moment = clock.now()
    assert moment.tzinfo is not None and moment.utcoffset() == timedelta(0)
    assert moment >= before
    run(lambda: clock.sleep(-1.0))  # a negative sleep returns at once
    run(lambda: clock.sleep(0.01))
    assert clock.now() > moment


def test_server_clock_needs_a_first_sync(emulator: Running) -> None:
    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api)
            assert not clock.synced
            with pytest.raises(RuntimeError, match=r"sync\(\)"):
                clock.now()

    run(scenario)
    with pytest.raises(ValueError, match="resync_every"):
        ServerClock(None, resync_every=0)  # type: ignore[arg-type]


def test_server_clock_reads_the_emulator_clock_not_the_wall_clock(emulator: Running) -> None:
    set_clock(emulator, advanceSeconds=86_400 * 30)  # a month ahead of the wall clock

    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api)
            await clock.sync()
            assert clock.source == "endpoint"
            assert clock.speed == 1.0 and not clock.paused
            ours = clock.now()
            theirs = await asyncio.to_thread(server_now, emulator)
            assert abs((ours - theirs).total_seconds()) < 1.0
            assert ours - datetime.now(UTC) > timedelta(days=29)

    run(scenario)


def test_server_clock_advances_at_the_server_speed(emulator: Running) -> None:
    set_clock(emulator, speed=20)

    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api)
            await clock.sync()
            assert clock.speed == 20.0
            start = clock.now()
            await asyncio.sleep(0.3)  # wall seconds
            # at least 0.3 wall seconds passed, so at least 6 seconds of cluster time
            assert (clock.now() - start).total_seconds() >= 0.3 * 20 - 1e-3
            theirs = await asyncio.to_thread(server_now, emulator)
            assert abs((clock.now() - theirs).total_seconds()) < 2.0

    run(scenario)


def test_sleep_counts_cluster_seconds(emulator: Running) -> None:
    set_clock(emulator, speed=20)

    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api)
            await clock.sync()
            before = await asyncio.to_thread(server_now, emulator)
            await clock.sleep(10.0)
            after = await asyncio.to_thread(server_now, emulator)
            slept = (after - before).total_seconds()
            assert slept >= 10.0 - 0.5  # ten seconds of the server's time went by ...
            assert slept < 10.0 * 20  # ... not ten wall seconds (200 at this speed)

    run(scenario)


def test_paused_server_clock_stands_still_and_sleep_waits_for_resume(emulator: Running) -> None:
    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api, paused_poll=0.02)
            await asyncio.to_thread(set_clock, emulator, paused=True)
            await clock.sync()
            assert clock.paused
            frozen = clock.now()
            await asyncio.sleep(0.1)
            assert clock.now() == frozen
            sleeper = asyncio.create_task(clock.sleep(1.0))
            await asyncio.sleep(0.3)
            assert not sleeper.done()  # no cluster time passes while paused
            await asyncio.to_thread(set_clock, emulator, paused=False, speed=10)
            await asyncio.wait_for(sleeper, timeout=30)
            assert not clock.paused and clock.speed == 10.0
            assert clock.now() >= frozen + timedelta(seconds=1.0)

    run(scenario)


def test_a_jump_of_the_server_clock_is_seen_at_the_next_sync(emulator: Running) -> None:
    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api)
            await clock.sync()
            before = clock.now()
            await asyncio.to_thread(set_clock, emulator, advanceSeconds=3600)
            assert clock.now() - before < timedelta(minutes=59)  # extrapolating
            await clock.sync()
            assert clock.now() - before >= timedelta(hours=1) - timedelta(seconds=0.5)

    run(scenario)


def test_sleep_resyncs_on_schedule_and_follows_a_speed_change(emulator: Running) -> None:
    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api, resync_every=0.05)
            await clock.sync()
            assert clock.speed == 1.0
            await asyncio.to_thread(set_clock, emulator, speed=25)
            await clock.sleep(5.0)  # 5 wall seconds at speed 1; 0.2 once the change is seen
            assert clock.speed == 25.0

    run(scenario)


def test_server_clock_never_goes_backward(emulator: Running) -> None:
    set_clock(emulator, speed=50)

    async def scenario() -> None:
        async with connected(emulator.url) as api:
            clock = ServerClock(api)
            await clock.sync()
            readings = []
            for _ in range(20):
                readings.append(clock.now())
                await clock.sync()
                readings.append(clock.now())
            assert readings == sorted(readings)

    run(scenario)


def test_without_a_clock_endpoint_the_date_header_is_followed_at_speed_1() -> None:
    async def scenario() -> None:
        routes = {"/version": version_dated("Sat, 01 Mar 2031 12:00:00 GMT")}
        async with bare_server(routes) as url, connected(url) as api:
            clock = ServerClock(api)
            await clock.sync()
            assert clock.source == "date"
            assert clock.speed == 1.0 and not clock.paused
            stamped = datetime(2031, 3, 1, 12, 0, 0, tzinfo=UTC)
            first = clock.now()
            assert stamped <= first <= stamped + timedelta(seconds=2)
            await clock.sync()  # the same second again: still consistent, no jump back
            assert clock.now() >= first
            assert clock.source == "date"

    run(scenario)


def test_a_server_without_a_usable_date_is_a_clear_error() -> None:
    async def scenario() -> None:
        routes = {"/version": version_dated("not a date")}
        async with bare_server(routes) as url, connected(url) as api:
            with pytest.raises(ClockError, match=r"/version: .*Date"):
                await ServerClock(api).sync()

    run(scenario)


def test_a_malformed_clock_document_names_the_field() -> None:
    async def scenario() -> None:
        routes = {CLOCK_PATH: lambda: web.json_response({"now": "yesterday", "speed": 1})}
        async with bare_server(routes) as url, connected(url) as api:
            with pytest.raises(ClockError, match=r"kubemedic.io/v1/clock: field 'now'"):
                await ServerClock(api).sync()
        routes = {
            CLOCK_PATH: lambda: web.json_response({"now": "2031-03-01T12:00:00Z", "speed": 0})
        }
        async with bare_server(routes) as url, connected(url) as api:
            with pytest.raises(ClockError, match="field 'speed'"):
                await ServerClock(api).sync()

    run(scenario)
