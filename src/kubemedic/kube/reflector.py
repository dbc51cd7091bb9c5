"""Reflectors: list a collection, then watch it, forever, keeping a compact cache.

What client-go's ``cache.Reflector`` does (``ListAndWatch``), and what kubemedic needs on top:

* **List** (paginated, ``limit`` + ``continue``; a consistent read, no ``resourceVersion``),
  then **watch from the list's resourceVersion** with ``allowWatchBookmarks``: nothing falls
  between the two. List items carry no ``kind``/``apiVersion`` (the List does); they are set.
* The list is **diffed** against the cache: objects cached but absent from the new list were
  deleted while the reflector was not watching (a 410 gap, a restart) and are reported as
  ``deleted``, so a consumer sees those deletions too (client-go's ``DeltaFIFO.Replace`` emits
  ``Deleted`` deltas for them the same way).
* **Resume** (``resume_from``): the first watch may start from an older resourceVersion (a
  checkpoint), replaying every change since: a restarted recorder loses nothing that happened
  while it was down. Those replayed versions are older than the list: they go to the handler
  but never overwrite the cache. If the server no longer has that history (``410 Gone``) the
  watch continues from the list's version; the list already holds the current state.
* **Bookmarks** advance the resourceVersion while nothing changes, so a watch that breaks after
  a quiet hour resumes without a relist.
* A watch the server **ends normally** (its ``timeoutSeconds``) is reopened from the last
  resourceVersion, without a relist (client-go: ``watchHandler`` returns nil, the loop watches
  again). A watch that ends at once with nothing received is client-go's "very short watch" and
  backs off first, so a misbehaving server is not hammered.
* ``410 Gone`` / ``Expired`` (the HTTP status, or the ``ERROR`` event in the stream): the
  version is older than the server's history (etcd compaction, the watch cache's window):
  relist and diff.
* ``429``, ``5xx`` and broken connections: back off (``kubemedic.kube.backoff``: 800 ms doubling
  to 30 s, jittered, ``Retry-After`` honoured) and watch again from the last version (or list
  again, if the list failed). Other errors (401, 403, 404): client-go keeps trying, and so does
  this, at the capped delay, relisting; ``stats.last_error`` says what is wrong.
* The handler is awaited before the next event is read (back-pressure: a slow archive slows
  the watch, nothing piles up in memory). A handler's exception ends ``run()``: it is a bug or a
  storage failure, not a network blip to retry.

The cache holds compact bodies (``kubemedic.kube.compact``); the handler always gets the full
object as the server sent it.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubemedic.kube.api import Api, ApiError, ConnectionLost, Gone, Kind
from kubemedic.kube.backoff import Backoff
from kubemedic.kube.compact import CompactCache, Key, Record, compact_for, key_of

__all__ = ["Handler", "Reflector", "ReflectorStats"]

log = logging.getLogger(__name__)

SHORT_WATCH_SECONDS = 1.0
"""A watch that ends normally this soon with no event backs off before the next (client-go's
"very short watch: Unexpected watch close")."""

_CHANGES = frozenset({"ADDED", "MODIFIED", "DELETED"})


class Handler(Protocol):
    """What a reflector tells its consumer (the recorder). Each call is awaited in order."""

    async def replaced(
        self,
        kind: Kind,
        items: list[dict[str, Any]],
        deleted: list[dict[str, Any]],
        resource_version: str,
        /,
    ) -> None:
        """A (re)list: ``items``, the full current objects; ``deleted``, the cached (compact)
        bodies of objects that are gone since the cache last saw them."""

    async def changed(
        self, kind: Kind, type_: str, obj: dict[str, Any], resource_version: str, /
    ) -> None:
        """A watch event: ``ADDED``, ``MODIFIED`` or ``DELETED`` with the full object (its last
        state, for ``DELETED``)."""

    async def bookmark(self, kind: Kind, resource_version: str, /) -> None:
        """Nothing changed up to ``resource_version`` (a checkpoint may move there)."""


@dataclass
class ReflectorStats:
    """Counters, for logs, metrics and tests."""

    lists: int = 0
    """Complete lists (every page)."""
    relists: int = 0
    """Lists after the first (410s, failures)."""
    watches: int = 0
    """Watch requests opened."""
    events: int = 0
    """``ADDED``/``MODIFIED``/``DELETED`` events received."""
    bookmarks: int = 0
    replayed: int = 0
    """Events older than the cache (a resume's replay), passed on but not cached."""
    errors: Counter[str] = field(default_factory=Counter)
    """Failures by kind: the HTTP status (``"410"``, ``"429"``, ``"500"``...) or
    ``"connection"``."""
    resume_expired: int = 0
    """Resumes from ``resume_from`` that could not be made (``410 Gone``: older than the
    server's history; or newer than the list): changes between the checkpoint and the list
    were not replayed (the list still holds every object's current state)."""
    last_error: str | None = None


def _decimal(rv: str | None) -> int | None:
    """A resourceVersion as a number, when it is one. The API calls them opaque strings; every
    kube-apiserver (etcd's revision) and the emulator use decimal integers, which is what makes
    "older than" decidable at all."""
    if rv is None or not rv.isdigit():
        return None
    return int(rv)


class _Relist(Exception):
    """Internal: the watch cannot continue; list again."""


class Reflector:
    """List and watch one collection (``kind``), forever: see the module docstring.

    ``compact`` turns a full object into its cached form (default: ``compact_for(kind.kind)``).
    ``page_size`` is the list's ``limit``; ``watch_timeout`` the watch's ``timeoutSeconds``.
    ``sleep`` is awaited for every back-off (tests pass one that records the delays)."""

    def __init__(
        self,
        api: Api,
        kind: Kind,
        handler: Handler | None = None,
        *,
        resume_from: str | None = None,
        compact: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        backoff: Backoff | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if page_size < 1 or watch_timeout < 1:
            raise ValueError(
                f"Reflector for {kind.stream}: page_size and watch_timeout must be positive "
                f"(got {page_size}, {watch_timeout})"
            )
        self.api = api
        self.kind = kind
        self.handler = handler
        self.resume_from = resume_from or None
        self.compact = compact or compact_for(kind.kind)
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.backoff = backoff or Backoff()
        self._sleep = sleep
        self.stats = ReflectorStats()
        self.cache = CompactCache()
        self.synced = asyncio.Event()
        """Set once the first list is in the cache (and the handler has it)."""
        self._rv: str | None = None
        self._listed_at: str | None = None
        self._list_rv: int | None = None
        self._replaying = False
        self.streaming = False
        """True while a watch is open: False while listing, backing off or reconnecting, when
        the cache is falling behind the cluster."""

    @property
    def resource_version(self) -> str | None:
        """The last resourceVersion seen: the list's, then each event's or bookmark's (during a
        resume's replay, the replayed versions, older than the list's)."""
        return self._rv

    def bodies(self) -> Iterator[dict[str, Any]]:
        """Every cached (compact) body, built afresh: ``ClusterView.build`` reads these."""
        return self.cache.bodies()

    # -- the loop ----------------------------------------------------------------------------

    async def run(self) -> None:
        """List and watch until cancelled. Only a handler's exception ends it."""
        resume = self.resume_from
        while True:
            if not await self._list():
                continue
            start = self._rv
            self._replaying = False
            if resume is not None:
                start, self._replaying = resume, self._list_rv is not None
                checkpoint = _decimal(resume)
                newer = self._list_rv is not None and (checkpoint or 0) > self._list_rv
                if newer:  # a checkpoint from another cluster, or from before an etcd restore
                    start, self._replaying = self._rv, False
                    self._resume_unusable("it is newer than the list")
                resume = None  # only the very first watch resumes
            try:
                await self._watch(start)
            except _Relist:
                continue

    async def _list(self) -> bool:
        """One complete list into the cache; False after a failure (already backed off)."""
        kind = self.kind
        full: list[dict[str, Any]] | None = [] if self.handler is not None else None
        records: dict[Key, Record] = {}
        token: str | None = None
        rv: Any = None
        try:
            while True:
                page = await self.api.list_page(kind, limit=self.page_size, continue_token=token)
                for raw in page.get("items") or ():
                    if not isinstance(raw, dict):
                        continue
                    item = {"apiVersion": kind.api_version, "kind": kind.kind}
                    item.update(raw)
                    item["apiVersion"], item["kind"] = kind.api_version, kind.kind
                    self._keep(records, item)
                    if full is not None:
                        full.append(item)
                meta = page.get("metadata")
                meta = meta if isinstance(meta, dict) else {}
                rv = meta.get("resourceVersion")
                token = meta.get("continue") or None
                if not token:
                    break
            if not isinstance(rv, str) or not rv:
                raise ConnectionLost(f"GET {kind.path()}: the list has no resourceVersion")
        except (ApiError, ConnectionLost) as error:
            for record in records.values():
                self.cache.release(record)
            await self._back_off(error, "list")
            return False
        deleted = self.cache.missing_from(records)
        if self.handler is not None and full is not None:
            await self.handler.replaced(kind, full, deleted, rv)
        self.cache.swap(records)
        if self.stats.lists:
            self.stats.relists += 1
        self.stats.lists += 1
        self._rv = self._listed_at = rv
        self._list_rv = _decimal(rv)
        self.synced.set()
        return True

    def _keep(self, records: dict[Key, Record], item: dict[str, Any]) -> None:
        packed = self.cache.pack(self.compact(item))
        if packed is None:
            return
        key, record = packed
        old = records.get(key)
        records[key] = record
        if old is not None:
            self.cache.release(old)

    async def _watch(self, start: str | None) -> None:
        """Watch from ``start``, reopening the watch from the last version until a relist is
        needed (raises ``_Relist``)."""
        loop = asyncio.get_running_loop()
        rv = start
        fresh = True  # straight from a list, nothing received yet
        while True:
            opened = loop.time()
            received, error = await self._stream(rv)
            if received:
                fresh, rv = False, self._rv
            if error is None:
                if not received and loop.time() - opened < SHORT_WATCH_SECONDS:
                    await self._back_off(
                        ConnectionLost(f"watch {self.kind.stream}: closed at once, no event"),
                        "watch",
                    )
            elif isinstance(error, Gone):
                if not self._replaying:
                    self._record(error)
                    if fresh:  # a version the server just gave us is already gone: slow down
                        await self._sleep(self.backoff.next_delay(error))
                    raise _Relist
                self._resume_expired(error)
                fresh, rv = True, self._listed_at
            elif isinstance(error, ConnectionLost) or error.retryable:
                await self._back_off(error, "watch")
            else:
                await self._back_off(error, "watch")
                raise _Relist

    async def _stream(self, rv: str | None) -> tuple[int, ApiError | ConnectionLost | None]:
        """One watch request, read to its end: how many events it brought, and the failure
        that ended it (None when the server ended it normally).

        The server ends every watch at ``timeoutSeconds``, and sends at least that, so a watch
        silent for twice as long (plus a second) is a dead connection (a half-open TCP
        connection says nothing); it is dropped as one."""
        self.stats.watches += 1
        self.streaming = True
        loop = asyncio.get_running_loop()
        silence = 2.0 * self.watch_timeout + 1.0
        received = 0
        error: ApiError | ConnectionLost | None = None
        stream = self.api.watch(self.kind, resource_version=rv, timeout_seconds=self.watch_timeout)
        guard = asyncio.timeout(None)
        try:
            async with guard:
                while True:
                    guard.reschedule(loop.time() + silence)
                    try:
                        type_, obj, version = self._read(await anext(stream))
                    except StopAsyncIteration:
                        break
                    except (ApiError, ConnectionLost) as failure:
                        error = failure
                        break
                    guard.reschedule(None)  # the handler takes the time it needs
                    received += 1
                    await self._apply(type_, obj, version)
        except TimeoutError:
            if not guard.expired():
                raise  # the handler's own
            error = ConnectionLost(
                f"watch {self.kind.stream}: nothing from the server for {silence:.0f} s"
            )
        finally:
            self.streaming = False
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        return received, error

    def _resume_expired(self, error: ApiError) -> None:
        """The checkpoint to resume from is older than the server's history."""
        self._resume_unusable(str(error))

    def _resume_unusable(self, why: str) -> None:
        self.stats.resume_expired += 1
        self._replaying = False
        log.warning(
            "%s: cannot resume from resourceVersion %s (%s): changes between it and the list "
            "at %s are not replayed",
            self.kind.stream,
            self.resume_from,
            why,
            self._listed_at,
        )

    def _read(self, event: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
        """``(type, object, resourceVersion)`` of a watch event; a malformed one is a broken
        stream (``ConnectionLost``)."""
        type_ = event.get("type")
        obj = event.get("object")
        if not isinstance(obj, dict) or not isinstance(type_, str):
            raise ConnectionLost(f"watch {self.kind.stream}: an event without type or object")
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, dict) else None
        if not isinstance(rv, str) or not rv:
            raise ConnectionLost(
                f"watch {self.kind.stream}: a {type_} event without resourceVersion"
            )
        return type_, obj, rv

    async def _apply(self, type_: str, obj: dict[str, Any], rv: str) -> None:
        kind = self.kind
        if type_ == "BOOKMARK":
            self.stats.bookmarks += 1
            self._rv = rv
            self._caught_up(rv)
            if self.handler is not None:
                await self.handler.bookmark(kind, rv)
            return
        if type_ not in _CHANGES:
            log.debug("%s: ignoring a %s event", kind.stream, type_)
            return
        self.stats.events += 1
        obj.setdefault("apiVersion", kind.api_version)
        obj.setdefault("kind", kind.kind)
        if self.handler is not None:
            await self.handler.changed(kind, type_, obj, rv)
        self._rv = rv
        if self._stale(obj, rv):
            self.stats.replayed += 1
        elif type_ == "DELETED":
            key = key_of(obj)
            if key is not None:
                self.cache.remove(key)
        else:
            self.cache.put(self.compact(obj))
        self._caught_up(rv)

    def _stale(self, obj: dict[str, Any], rv: str) -> bool:
        """Whether this version is older than what the cache holds: a replay from before the
        list, or an older version than the cached one of the same object."""
        number = _decimal(rv)
        if number is None:
            return False
        if self._replaying and self._list_rv is not None and number <= self._list_rv:
            return True
        key = key_of(obj)
        cached = _decimal(self.cache.resource_version(key)) if key is not None else None
        return cached is not None and cached > number

    def _caught_up(self, rv: str) -> None:
        if self._replaying:
            number = _decimal(rv)
            if number is None or self._list_rv is None or number >= self._list_rv:
                self._replaying = False

    # -- failures ----------------------------------------------------------------------------

    def _record(self, error: ApiError | ConnectionLost) -> None:
        label = "connection" if isinstance(error, ConnectionLost) else str(error.code)
        self.stats.errors[label] += 1
        self.stats.last_error = str(error)

    async def _back_off(self, error: ApiError | ConnectionLost, during: str) -> None:
        self._record(error)
        hopeless = isinstance(error, ApiError) and not (error.retryable or isinstance(error, Gone))
        delay = self.backoff.next_delay(error, at_cap=hopeless)
        log.log(
            logging.WARNING if hopeless else logging.INFO,
            "%s %s failed (%s); retrying in %.1f s",
            self.kind.stream,
            during,
            error,
            delay,
        )
        await self._sleep(delay)
