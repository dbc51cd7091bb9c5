"""Reflectors against the emulator over HTTP (lightkube's client), with its fault injection.

Each test serves its own emulator on the test's event loop. Writes go through the same HTTP
API (retried when a fault rejects them); the emulator's store listener is the ground truth of
what changed. Back-off sleeps are recorded and shortened, so no test waits for real seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
from lightkube import AsyncClient
from lightkube.config.kubeconfig import KubeConfig

from kubemedic.kube.api import Api, ApiError, ConnectionLost, Kind
from kubemedic.kube.backoff import Backoff
from kubemedic.kube.compact import compact_pod
from kubemedic.kube.reflector import Reflector
from kubemedic.model.objects import Body
from kubemedic.sim.apiserver.server import ApiServer, kubeconfig
from kubemedic.sim.machinery.objects import Change
from tests.factories import container, pod

T = TypeVar("T")

PODS = Kind("", "v1", "pods", "Pod", True)
CONFIGMAPS = Kind("", "v1", "configmaps", "ConfigMap", True)
WIDGETS = Kind("example.com", "v1", "widgets", "Widget", True)
FAULTS = "/kubemedic.io/v1/faults"


# -- harness -----------------------------------------------------------------------------------


@dataclass
class Recorded:
    """A handler that remembers every call, and each object's last state."""

    lists: list[tuple[list[Body], list[Body], str]] = field(default_factory=list)
    changes: list[tuple[str, Body, str]] = field(default_factory=list)
    bookmarks: list[str] = field(default_factory=list)
    latest: dict[str, tuple[str, str]] = field(default_factory=dict)
    """``ns/name`` -> (type, resourceVersion) of the newest version seen."""

    async def replaced(
        self, kind: Kind, items: list[Body], deleted: list[Body], resource_version: str
    ) -> None:
        assert kind.kind == "Pod"
        self.lists.append((items, deleted, resource_version))
        for item in items:
            self.latest[_key(item)] = ("ADDED", item["metadata"]["resourceVersion"])
        for gone in deleted:
            self.latest[_key(gone)] = ("DELETED", resource_version)

    async def changed(self, kind: Kind, type_: str, obj: Body, resource_version: str) -> None:
        self.changes.append((type_, obj, resource_version))
        key = _key(obj)
        if key not in self.latest or int(self.latest[key][1]) < int(resource_version):
            self.latest[key] = (type_, resource_version)

    async def bookmark(self, kind: Kind, resource_version: str) -> None:
        self.bookmarks.append(resource_version)

    def names(self, type_: str) -> list[str]:
        return [obj["metadata"]["name"] for kind, obj, _ in self.changes if kind == type_]


def _key(body: Body) -> str:
    return f"{body['metadata']['namespace']}/{body['metadata']['name']}"


class Sleeps:
    """Records back-off delays; waits a moment instead (keeps retry loops from spinning)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0.01)


@dataclass
class Cluster:
    server: ApiServer
    api: Api
    truth: list[Change] = field(default_factory=list)

    async def write(
        self, method: str, path: str, body: Any = None, **params: str | int
    ) -> dict[str, Any]:
        """One write, retried while injected faults reject it (they reject before acting)."""
        content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
        for _ in range(200):
            try:
                result: dict[str, Any] = await self.api.request(
                    method, path, body=body, params=params or None, content_type=content_type
                )
                return result
            except ApiError as error:
                if not error.retryable:
                    raise
            except ConnectionLost:
                pass
            await asyncio.sleep(0.005)
        raise AssertionError(f"{method} {path} kept failing")

    async def create(self, name: str, **labels: str) -> dict[str, Any]:
        body = pod(name, labels=labels or {"app": "web"}, containers=[container("web")])
        return await self.write("POST", PODS.path("default"), body)

    async def label(self, name: str, **labels: str) -> dict[str, Any]:
        return await self.write(
            "PATCH", PODS.path("default", name), {"metadata": {"labels": labels}}
        )

    async def delete(self, name: str) -> dict[str, Any]:
        return await self.write("DELETE", PODS.path("default", name), gracePeriodSeconds=0)

    async def faults(self, **settings: Any) -> None:
        await self.api.request("PUT", FAULTS, body=settings)

    def pods(self) -> dict[str, str]:
        """``ns/name`` -> resourceVersion of every pod the server holds."""
        return {
            f"{obj['metadata']['namespace']}/{obj['metadata']['name']}": obj["metadata"][
                "resourceVersion"
            ]
            for _, entry in self.server.store.scan("pods")
            for obj in [entry.obj]
        }

    def pod_changes(self, after: int = 0) -> list[tuple[str, str, str]]:
        return [
            (change.type, change.obj["metadata"]["name"], str(change.rv))
            for change in self.truth
            if change.store == "pods" and change.rv > after
        ]


@contextlib.asynccontextmanager
async def cluster() -> AsyncIterator[Cluster]:
    server = ApiServer(seed=7)
    await server.start(port=0, tick=False)
    api = Api(AsyncClient(config=KubeConfig.from_dict(kubeconfig(server.url))))
    running = Cluster(server, api)
    server.store.listeners.append(running.truth.append)
    try:
        yield running
    finally:
        await api.close()
        await server.stop()


@contextlib.asynccontextmanager
async def reflecting(reflector: Reflector) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.get_running_loop().create_task(reflector.run())
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def run(scenario: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await scenario()

    return asyncio.run(main())


async def until(what: str, predicate: Callable[[], bool], *, wall: float = 30.0) -> None:
    """Wait until ``predicate()`` holds (a guard against hanging, not a timing assertion)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wall
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"still waiting for: {what}")
        await asyncio.sleep(0.01)


def reflector(c: Cluster, handler: Recorded | None, **options: Any) -> Reflector:
    options.setdefault("sleep", Sleeps())
    return Reflector(c.api, PODS, handler, **options)


def cached(r: Reflector) -> dict[str, str]:
    return {key: body["metadata"]["resourceVersion"] for key, body in r.cache.items()}


# -- list and watch ----------------------------------------------------------------------------


def test_list_then_watch_sees_creates_updates_and_deletes() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            for index in range(7):
                await c.create(f"web-{index}")
            seen = Recorded()
            r = reflector(c, seen, page_size=3)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                items, deleted, list_rv = seen.lists[0]
                assert sorted(i["metadata"]["name"] for i in items) == [
                    f"web-{i}" for i in range(7)
                ]
                assert {(i["kind"], i["apiVersion"]) for i in items} == {("Pod", "v1")}
                assert deleted == [] and r.stats.lists == 1
                await c.create("api-0")
                await c.label("web-1", app="web", tier="front")
                await c.delete("web-2")
                await until("the cache matches the server", lambda: cached(r) == c.pods())
                assert [(t, o["metadata"]["name"]) for t, o, _ in seen.changes] == [
                    ("ADDED", "api-0"),
                    ("MODIFIED", "web-1"),
                    ("DELETED", "web-2"),
                ]
                assert r.cache["default/web-1"]["metadata"]["labels"]["tier"] == "front"
                assert int(r.resource_version or 0) > int(list_rv)
                assert r.stats.relists == 0 and r.stats.events == 3

    run(scenario)


def test_the_handler_gets_full_objects_while_the_cache_keeps_compact_ones() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            seen = Recorded()
            r = reflector(c, seen)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                await c.create("web-0")
                await until("the pod is cached", lambda: "default/web-0" in r.cache)
            full = seen.changes[-1][1]
            assert full["metadata"]["managedFields"], "the server's object, as sent"
            assert full["spec"]["containers"][0]["terminationMessagePath"]
            small = r.cache["default/web-0"]
            assert "managedFields" not in small["metadata"]
            assert "terminationMessagePath" not in small["spec"]["containers"][0]
            assert small == compact_pod(full)
            assert list(r.bodies()) == [small]

    run(scenario)


def test_a_cache_only_reflector_needs_no_handler() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            r = reflector(c, None)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                await c.delete("web-0")
                await until("the deletion is cached", lambda: len(r.cache) == 0)

    run(scenario)


# -- 410 Gone ------------------------------------------------------------------------------------


def test_410_relists_and_reports_the_pods_deleted_during_the_gap() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            for index in range(5):
                await c.create(f"web-{index}")
            seen = Recorded()
            sleeps = Sleeps()
            r = reflector(c, seen, watch_timeout=1, sleep=sleeps)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                await c.faults(watch_stall=True)  # the watch stays open and silent
                await c.delete("web-1")
                await c.delete("web-3")
                await c.create("web-9")
                await c.label("web-0", app="web", moved="yes")
                c.server.store.compact()  # etcd compaction: resuming the watch gets 410
                # The silent watch times out; watching again from the last version gets 410.
                await until("a relist", lambda: len(seen.lists) == 2)
                await c.faults(watch_stall=False)
                items, deleted, _ = seen.lists[1]
                assert sorted(d["metadata"]["name"] for d in deleted) == ["web-1", "web-3"]
                assert "managedFields" not in deleted[0]["metadata"], "the cached bodies"
                assert sorted(i["metadata"]["name"] for i in items) == [
                    "web-0",
                    "web-2",
                    "web-4",
                    "web-9",
                ]
                assert seen.changes == [], "the stalled watch delivered nothing"
                assert cached(r) == c.pods()
                assert r.cache["default/web-0"]["metadata"]["labels"]["moved"] == "yes"
                assert r.stats.relists == 1 and r.stats.errors["410"] == 1
                await c.create("web-10")
                await until("watching again", lambda: "default/web-10" in r.cache)

    run(scenario)


def test_a_watch_410_right_after_a_list_backs_off_before_listing_again() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            sleeps = Sleeps()
            r = reflector(c, Recorded(), sleep=sleeps)
            await c.faults(force_gone=True)  # every watch from a resourceVersion: 410
            async with reflecting(r):
                await until("a few relists", lambda: r.stats.relists >= 3)
                assert len(sleeps.delays) >= 3, "never relisting in a tight loop"
                await c.faults(force_gone=False)
                await c.create("web-1")
                await until("watching again", lambda: "default/web-1" in r.cache)

    run(scenario)


# -- resuming ------------------------------------------------------------------------------------


def test_resume_from_replays_every_change_since_the_checkpoint() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            await c.create("web-1")
            checkpoint = (await c.api.list_page(PODS))["metadata"]["resourceVersion"]
            for version in ("1", "2", "3"):
                await c.label("web-0", app="web", version=version)
            await c.create("web-2")
            await c.delete("web-1")
            seen = Recorded()
            r = reflector(c, seen, resume_from=checkpoint)
            async with reflecting(r):
                await until("the replay", lambda: len(seen.changes) == 5)
                replayed = [
                    (t, o["metadata"]["name"], o["metadata"]["labels"].get("version"))
                    for t, o, _ in seen.changes
                ]
                assert replayed == [
                    ("MODIFIED", "web-0", "1"),
                    ("MODIFIED", "web-0", "2"),
                    ("MODIFIED", "web-0", "3"),
                    ("ADDED", "web-2", None),
                    ("DELETED", "web-1", None),
                ]
                assert [rv for *_, rv in seen.changes] == [
                    rv for *_, rv in c.pod_changes(after=int(checkpoint))
                ]
                assert r.stats.replayed == 5, "older than the list: not cached again"
                assert cached(r) == c.pods()
                assert r.cache["default/web-0"]["metadata"]["labels"]["version"] == "3"
                await c.label("web-2", app="web", version="new")
                await until(
                    "live changes after the replay",
                    lambda: r.cache["default/web-2"]["metadata"]["labels"].get("version") == "new",
                )
                assert r.stats.resume_expired == 0 and r.stats.lists == 1

    run(scenario)


def test_resuming_from_a_compacted_checkpoint_continues_from_the_list() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            checkpoint = (await c.api.list_page(PODS))["metadata"]["resourceVersion"]
            await c.create("web-1")
            c.server.store.compact()
            seen = Recorded()
            r = reflector(c, seen, resume_from=checkpoint)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                await until("the resume fails", lambda: r.stats.resume_expired == 1)
                await c.create("web-2")
                await until("live changes", lambda: seen.names("ADDED") == ["web-2"])
                assert sorted(i["metadata"]["name"] for i in seen.lists[0][0]) == [
                    "web-0",
                    "web-1",
                ]
                assert r.stats.lists == 1, "the list is current: no relist"
                assert cached(r) == c.pods()

    run(scenario)


def test_a_checkpoint_newer_than_the_list_is_not_resumed_from() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            seen = Recorded()
            r = reflector(c, seen, resume_from="999999999")
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                await c.create("web-1")
                await until("live changes", lambda: seen.names("ADDED") == ["web-1"])
            assert r.stats.resume_expired == 1 and r.stats.lists == 1

    run(scenario)


# -- faults --------------------------------------------------------------------------------------


class FirstWatchHangs(Api):
    """A connection that went silent without closing (half-open TCP: no emulator fault can
    serve one, since its server still ends every watch at its timeout)."""

    hung = False

    async def watch(self, kind: Kind, **options: Any) -> AsyncIterator[dict[str, Any]]:  # type: ignore[override]
        if not self.hung:
            self.hung = True
            await asyncio.Event().wait()
        async for event in super().watch(kind, **options):
            yield event


def test_a_silent_dead_watch_is_dropped_and_reopened() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            api = FirstWatchHangs(c.api.client)
            seen = Recorded()
            r = Reflector(api, PODS, seen, watch_timeout=1, sleep=Sleeps())
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                await c.create("web-0")
                await until("the pod, through a new watch", lambda: "default/web-0" in r.cache)
            assert seen.names("ADDED") == ["web-0"]
            assert r.stats.errors["connection"] == 1 and r.stats.watches == 2
            assert "nothing from the server for 3 s" in (r.stats.last_error or "")

    run(scenario)


def test_429_waits_at_least_the_retry_after_the_server_asks_for() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            await c.faults(throttle_rate=1.0, retry_after=7)
            sleeps = Sleeps()
            r = reflector(c, Recorded(), sleep=sleeps, backoff=Backoff(rng=random.Random(1)))
            async with reflecting(r):
                await until("throttled", lambda: len(sleeps.delays) >= 2)
                await c.faults(throttle_rate=0.0)
                await asyncio.wait_for(r.synced.wait(), 30)
            assert all(delay >= 7 for delay in sleeps.delays)
            assert r.stats.errors["429"] == len(sleeps.delays)
            assert "429" in (r.stats.last_error or "")

    run(scenario)


def test_server_errors_and_dropped_watches_lose_and_repeat_nothing() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            for index in range(10):
                await c.create(f"web-{index}")
            seen = Recorded()
            sleeps = Sleeps()
            r = reflector(c, seen, sleep=sleeps)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                list_rv = int(seen.lists[0][2])
                await c.faults(error_rate=0.3, watch_drop_after=3)
                rng = random.Random(5)
                alive = {f"web-{index}" for index in range(10)}
                for step in range(60):
                    choice = rng.random()
                    if choice < 0.3 or len(alive) < 3:
                        name = f"new-{step}"
                        await c.create(name)
                        alive.add(name)
                    elif choice < 0.8:
                        await c.label(rng.choice(sorted(alive)), app="web", step=str(step))
                    else:
                        name = rng.choice(sorted(alive))
                        await c.delete(name)
                        alive.discard(name)
                await c.faults(error_rate=0.0, watch_drop_after=0)
                await until("the cache matches the server", lambda: cached(r) == c.pods())
                truth = c.pod_changes(after=list_rv)
                await until("every change seen", lambda: len(seen.changes) >= len(truth))
            got = [(t, o["metadata"]["name"], rv) for t, o, rv in seen.changes]
            assert got == truth, "each change once, in order"
            assert r.stats.relists == 0
            assert r.stats.errors["500"] >= 1, "the faults did hit the reflector"
            assert r.stats.watches > 10, "dropped watches were reopened"
            final = {key: rv for key, (kind, rv) in seen.latest.items() if kind != "DELETED"}
            assert final == c.pods()

    run(scenario)


def test_bookmarks_advance_the_resource_version_while_pods_stay_still() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            await c.create("web-0")
            seen = Recorded()
            r = reflector(c, seen)
            async with reflecting(r):
                await asyncio.wait_for(r.synced.wait(), 30)
                listed = int(r.resource_version or 0)
                configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
                await c.write("POST", CONFIGMAPS.path("default"), configmap)
                await until(
                    "a bookmark past the ConfigMap",
                    lambda: bool(seen.bookmarks) and int(seen.bookmarks[-1]) > listed,
                )
                assert int(r.resource_version or 0) > listed
                assert seen.changes == [] and r.stats.bookmarks >= 1

    run(scenario)


def test_a_forbidden_or_missing_collection_is_retried_at_the_capped_delay() -> None:
    async def scenario() -> None:
        async with cluster() as c:
            sleeps = Sleeps()
            r = Reflector(c.api, WIDGETS, Recorded(), sleep=sleeps)
            async with reflecting(r) as task:
                await until("two attempts", lambda: len(sleeps.delays) >= 2)
                assert not task.done(), "still trying, as client-go does"
            assert all(30 <= delay < 60 for delay in sleeps.delays)
            assert r.stats.errors["404"] >= 2 and not r.synced.is_set()
            assert "404" in (r.stats.last_error or "")

    run(scenario)


def test_a_handler_failure_ends_the_run() -> None:
    class Broken(Recorded):
        async def changed(self, kind: Kind, type_: str, obj: Body, resource_version: str) -> None:
            raise RuntimeError("the archive is full")

    async def scenario() -> None:
        async with cluster() as c:
            r = reflector(c, Broken())
            task = asyncio.get_running_loop().create_task(r.run())
            await asyncio.wait_for(r.synced.wait(), 30)
            await c.create("web-0")
            with pytest.raises(RuntimeError, match="archive is full"):
                await asyncio.wait_for(task, 30)

    run(scenario)


# -- back-off ------------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_doubles_from_800ms_to_a_30s_cap_with_up_to_100_percent_jitter() -> None:
    backoff = Backoff(rng=random.Random(3), now=Clock())
    delays = [backoff.next_delay() for _ in range(10)]
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0, 30.0]
    for delay, base in zip(delays, bases, strict=True):
        assert base <= delay < 2 * base


def test_backoff_starts_over_after_two_quiet_minutes() -> None:
    clock = Clock()
    backoff = Backoff(rng=random.Random(3), now=clock)
    for _ in range(5):
        backoff.next_delay()
    clock.now += 119
    assert backoff.next_delay() >= 12.8
    clock.now += 121
    assert backoff.next_delay() < 1.6
    backoff.reset()
    assert backoff.current == 0.8


def test_backoff_honours_a_longer_retry_after_and_jumps_to_the_cap_when_asked() -> None:
    backoff = Backoff(rng=random.Random(3), now=Clock())
    assert backoff.next_delay(ApiError(429, retry_after=20)) == 20
    assert backoff.next_delay(ApiError(429, retry_after=0.1)) >= 1.6
    assert 30 <= backoff.next_delay(ApiError(403), at_cap=True) < 60


def test_backoff_without_jitter_is_exact() -> None:
    backoff = Backoff(jitter=0.0, now=Clock())
    assert [backoff.next_delay() for _ in range(3)] == [0.8, 1.6, 3.2]
    with pytest.raises(ValueError, match="cap >= initial"):
        Backoff(initial=5, cap=1)
