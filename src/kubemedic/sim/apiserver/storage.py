"""The emulator's storage: objects, one resourceVersion sequence, a watch history, watchers.

It plays etcd plus the watch cache. Every write takes the next value of one global, strictly
increasing counter as its ``resourceVersion`` (etcd's revision), so clients may compare versions
across resources exactly as the real server allows them to for list-then-watch. Each change is
appended to a bounded history: a watch that starts from a version still inside it replays what
followed; one that starts before it gets ``410 Gone`` (``too old resource version``), which is
how real clients learn to relist. The window size is configurable so tests can force relists.

Everything runs on one asyncio loop; no locks. Stored objects are never mutated in place: a write
stores a new dict, so a list or a watch event may hand out the stored dict without copying, and
its JSON bytes are cached on the entry the first time a list serialises it.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kubemedic.sim.machinery.objects import Change, EventType, Key, Obj

#: Changes kept for watches by default (the real watch cache keeps ~100 per resource type,
#: etcd keeps minutes of revisions; this is per server).
DEFAULT_HISTORY = 100_000


class Entry:
    """A stored object and its cached serialisation."""

    __slots__ = ("_json", "obj", "rv", "written")

    def __init__(self, obj: Obj, rv: int, written: float) -> None:
        self.obj = obj
        self.rv = rv
        self.written = written
        self._json: bytes | None = None

    def warm(self) -> None:
        """Serialise now rather than on the first read."""
        if self._json is None:
            self._json = orjson.dumps(self.obj)

    @property
    def json(self) -> bytes:
        if self._json is None:
            self._json = orjson.dumps(self.obj)
        return self._json


@dataclass(eq=False)
class Watcher:
    """A watch's subscription: the store it follows and a filter over old and new object."""

    store: str
    namespace: str | None
    accepts: Callable[[Obj], bool]
    queue: asyncio.Queue[Change | None] = field(default_factory=asyncio.Queue)
    max_pending: int = 200_000
    overflowed: bool = False

    def offer(self, change: Change) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= self.max_pending:
            # A watcher that cannot keep up is closed, as the real server closes a watch whose
            # buffer is full; the client relists.
            self.overflowed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(change)


class Store:
    """All objects by store name and (namespace, name)."""

    def __init__(self, *, history: int = DEFAULT_HISTORY, wall: Callable[[], float]) -> None:
        self._wall = wall
        self._objects: dict[str, dict[Key, Entry]] = {}
        self._sorted: dict[str, list[Key]] = {}
        self._added: dict[str, list[Key]] = {}
        self._rv = 0
        self.history: deque[Change] = deque(maxlen=max(1, history))
        #: The oldest resourceVersion a watch may start from (exclusive).
        self._compacted = 0
        self._watchers: dict[str, set[Watcher]] = {}
        self.listeners: list[Callable[[Change], None]] = []

    # reading ---------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def oldest_watchable(self) -> int:
        """Watches from a version below this one must relist (410)."""
        return self._compacted

    def get(self, store: str, key: Key) -> Entry | None:
        return self._objects.get(store, {}).get(key)

    def count(self, store: str) -> int:
        return len(self._objects.get(store, {}))

    def keys(self, store: str) -> list[Key]:
        """Keys in (namespace, name) order, the order lists are served in (etcd key order).

        The sorted list is maintained lazily: writes only note new keys (an insert into a
        150,000-key list would move a megabyte per create) and removed keys stay until the next
        rebuild (readers skip keys whose object is gone). A read after writes merges the new keys
        in one nearly-sorted sort and drops the stale ones.
        """
        cached = self._sorted.get(store)
        objects = self._objects.get(store, {})
        if cached is None:
            cached = sorted(objects)
        else:
            added = self._added.pop(store, None)
            if not added:
                return cached
            merged = cached + added
            merged.sort()
            cached = [
                key
                for i, key in enumerate(merged)
                if key in objects and (i == 0 or merged[i - 1] != key)
            ]
        self._sorted[store] = cached
        return cached

    def scan(
        self, store: str, *, namespace: str | None = None, after: Key | None = None
    ) -> Iterator[tuple[Key, Entry]]:
        """Entries in key order, optionally of one namespace and strictly after a key."""
        keys = self.keys(store)
        objects = self._objects.get(store, {})
        start = 0
        if namespace is not None:
            start = bisect.bisect_left(keys, (namespace, ""))
        if after is not None:
            start = max(start, bisect.bisect_right(keys, after))
        for i in range(start, len(keys)):
            key = keys[i]
            if namespace is not None and key[0] != namespace:
                break
            entry = objects.get(key)
            if entry is not None:
                yield key, entry

    def stores(self) -> list[str]:
        return list(self._objects)

    # writing ---------------------------------------------------------------------------------

    def next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def put(self, store: str, key: Key, obj: Obj, *, event: EventType) -> Entry:
        """Store ``obj`` (its metadata.resourceVersion is set here) and notify watchers."""
        rv = self.next_rv()
        obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
        objects = self._objects.setdefault(store, {})
        previous = objects.get(key)
        if previous is None and store in self._sorted:
            self._added.setdefault(store, []).append(key)
        entry = Entry(obj, rv, self._wall())
        objects[key] = entry
        self._record(Change(rv, store, event, obj, None if previous is None else previous.obj))
        return entry

    def put_computed(
        self, store: str, objects: Mapping[Key, Obj], *, drop: Iterable[Key] = ()
    ) -> None:
        """Keep objects computed on read (and forget those in ``drop``), such as the
        ``metrics.k8s.io`` NodeMetrics and PodMetrics metrics-server answers with. Gets and
        lists serve them like any other, but this is not a write: they have no resourceVersion
        of their own, and there is no history entry, no watch event and no listener call. The
        aggregated metrics API is not backed by etcd and cannot be watched, and tens of
        thousands of refreshed PodMetrics must not push the cluster's real changes out of the
        watch history (which would expire watches and list continue tokens)."""
        kept = self._objects.setdefault(store, {})
        for key in drop:
            kept.pop(key, None)
        if store in self._sorted:
            added = [key for key in objects if key not in kept]
            if added:
                self._added.setdefault(store, []).extend(added)
        rv, written = self._rv, self._wall()
        for key, obj in objects.items():
            kept[key] = Entry(obj, rv, written)

    def remove(self, store: str, key: Key) -> Obj | None:
        """Delete an object; the DELETED event carries a new resourceVersion, as etcd's does."""
        objects = self._objects.get(store, {})
        entry = objects.pop(key, None)
        if entry is None:
            return None
        rv = self.next_rv()
        gone = {**entry.obj, "metadata": {**entry.obj.get("metadata", {})}}
        gone["metadata"]["resourceVersion"] = str(rv)
        self._record(Change(rv, store, "DELETED", gone, entry.obj))
        return gone

    def _record(self, change: Change) -> None:
        if len(self.history) == self.history.maxlen:
            self._compacted = self.history[0].rv
        self.history.append(change)
        for watcher in self._watchers.get(change.store, ()):
            if watcher.namespace is None or _namespace(change.obj) == watcher.namespace:
                watcher.offer(change)
        for listener in self.listeners:
            listener(change)

    def compact(self) -> None:
        """Forget the whole history (fault injection: every watch from an old version gets 410)."""
        self._compacted = self._rv
        self.history.clear()

    # watching --------------------------------------------------------------------------------

    def subscribe(self, watcher: Watcher) -> None:
        self._watchers.setdefault(watcher.store, set()).add(watcher)

    def unsubscribe(self, watcher: Watcher) -> None:
        self._watchers.get(watcher.store, set()).discard(watcher)

    def close_watchers(self) -> None:
        """End every watch (the server is stopping)."""
        for watchers in self._watchers.values():
            for watcher in watchers:
                watcher.queue.put_nowait(None)

    def watcher_count(self) -> int:
        return sum(len(w) for w in self._watchers.values())

    def since(self, store: str, rv: int) -> list[Change]:
        """Changes of one store after ``rv`` still in the history (caller checks for 410)."""
        history = self.history
        if not history or history[-1].rv <= rv:
            return []
        # History is ordered by rv; find the first change after rv.
        lo, hi = 0, len(history)
        while lo < hi:
            mid = (lo + hi) // 2
            if history[mid].rv <= rv:
                lo = mid + 1
            else:
                hi = mid
        return [history[i] for i in range(lo, len(history)) if history[i].store == store]


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or "")
