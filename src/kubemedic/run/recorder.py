"""The recorder: turns what reflectors see into archive rows, in batches, with checkpoints.

It is the reflectors' handler. Every change is turned into rows at once (events, container
terminations, evictions, node condition transitions) and added to the pending batch together
with the stream's resourceVersion; a batch is written in one transaction when it is big enough or
old enough, so the checkpoint saved for a stream never runs ahead of the rows it covers. After a
crash, the recorder resumes each stream from its checkpoint (the reflector replays the changes
since) and the upserts absorb whatever was written twice.

What it never does: drop an event for being old (kubernetes-event-exporter skips events older
than ``maxEventAgeSeconds``, 5 s by default, which loses everything a restart missed), or keep a
row only in memory after the write that should hold it returned.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubemedic.kube.api import Kind
from kubemedic.model import objects
from kubemedic.store import extraction
from kubemedic.store.db import Archive
from kubemedic.store.records import EvictionRow
from kubemedic.store.writer import Batch, WriteStats

__all__ = ["Recorder", "RecorderStats"]

log = logging.getLogger("kubemedic.recorder")

Body = dict[str, Any]


@dataclass
class RecorderStats:
    """What the recorder has done since it started."""

    changes: int = 0
    relists: int = 0
    batches: int = 0
    rows: int = 0
    write_seconds: float = 0.0
    last_write: float | None = None
    by_stream: dict[str, int] = field(default_factory=dict)


class Recorder:
    """A reflector handler writing the archive.

    ``now`` gives the time deletions are stamped with (the cluster's clock). Rows go out when the
    pending batch holds ``flush_rows`` rows or is ``flush_seconds`` (wall) old; ``flush()`` writes
    at once. Writes run in a worker thread, one at a time, so the event loop keeps reading the
    API meanwhile; a pending batch above ``4 * flush_rows`` makes handlers wait for the write
    (back-pressure instead of unbounded memory).
    """

    def __init__(
        self,
        archive: Archive,
        cluster: str,
        *,
        now: Callable[[], datetime],
        flush_rows: int = 2000,
        flush_seconds: float = 0.5,
    ) -> None:
        self.archive = archive
        self.cluster = cluster
        self.now = now
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.stats = RecorderStats()
        self._batch = self._new_batch()
        self._batch_started: float | None = None
        self._writing_since: float | None = None
        self._write_lock = asyncio.Lock()
        self._nodes: dict[str, Body] = {}
        self._pod_nodes: dict[tuple[str, str], str] = {}
        self._terminations: set[tuple[str, str, str, int]] = set()
        self._evictions: set[tuple[str, str]] = set()
        self._flusher: asyncio.Task[None] | None = None
        #: Per stream: the newest write time seen (``managedFields[].time``, RFC 3339 text,
        #: which sorts as time) and the ``time.monotonic()`` of its last change.
        self._newest: dict[str, str] = {}
        self._last_change: dict[str, float] = {}
        #: Called with each write's counts per table (the daemon's metrics); must not raise.
        self.on_write: Callable[[WriteStats], None] | None = None

    def _new_batch(self) -> Batch:
        return Batch(
            cluster=self.cluster,
            events=[],
            event_deletions=[],
            terminations=[],
            evictions=[],
            transitions=[],
            samples=[],
            checkpoints={},
        )

    # reflector handler --------------------------------------------------------------------

    async def replaced(
        self, kind: Kind, items: list[Body], deleted: list[Body], resource_version: str
    ) -> None:
        self.stats.relists += 1
        for obj in items:
            self._take(kind, "ADDED", obj)
        for obj in deleted:
            self._take(kind, "DELETED", obj)
        await self._checkpoint(kind, resource_version)

    async def changed(self, kind: Kind, type_: str, obj: Body, resource_version: str) -> None:
        self.stats.changes += 1
        self.stats.by_stream[kind.stream] = self.stats.by_stream.get(kind.stream, 0) + 1
        self._take(kind, type_, obj)
        await self._checkpoint(kind, resource_version)

    async def bookmark(self, kind: Kind, resource_version: str) -> None:
        await self._checkpoint(kind, resource_version)

    # metrics ------------------------------------------------------------------------------

    def add_metrics(self, bodies: list[Body]) -> None:
        """Queue metrics.k8s.io samples, each pod's with the node it runs on."""
        for body in bodies:
            meta = body.get("metadata") or {}
            node = ""
            if body.get("kind") == "PodMetrics":
                key = (str(meta.get("namespace") or ""), str(meta.get("name")))
                node = self._pod_nodes.get(key, "")
            self._batch.samples.extend(extraction.metric_samples(body, node=node))
        self._touch()

    # rows ---------------------------------------------------------------------------------

    def _take(self, kind: Kind, type_: str, obj: Body) -> None:
        batch = self._batch
        if type_ != "DELETED":  # a deletion carries its object's last write time, not now's
            self._note_time(kind.stream, obj)
        if kind.kind == "Event":
            row = extraction.event_row(obj)
            if row is None:
                return
            batch.events.append(row)
            if type_ == "DELETED":
                batch.event_deletions.append((row.uid, self.now()))
            if row.reason == "Evicted" and row.object_kind == "Pod":
                eviction = extraction.eviction_from_event(obj)
                if eviction is not None and self._new_eviction(eviction):
                    batch.evictions.append(eviction)
        elif kind.kind == "Pod":
            meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
            pod = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
            if type_ == "DELETED":
                self._pod_nodes.pop(pod, None)
            elif isinstance(spec, dict) and isinstance(spec.get("nodeName"), str):
                self._pod_nodes[pod] = sys.intern(spec["nodeName"])
            for termination in extraction.terminations(obj):
                key = (
                    termination.pod_uid,
                    termination.container,
                    termination.key,
                    termination.restart_count,
                )
                if key not in self._terminations:
                    self._terminations.add(key)
                    batch.terminations.append(termination)
            eviction = extraction.eviction_from_pod(obj)
            if eviction is not None and self._new_eviction(eviction):
                batch.evictions.append(eviction)
        elif kind.kind == "Node":
            name = str((obj.get("metadata") or {}).get("name") or "")
            if type_ == "DELETED":
                self._nodes.pop(name, None)
            else:
                batch.transitions.extend(extraction.node_transitions(self._nodes.get(name), obj))
                self._nodes[name] = _conditions_only(obj)
        self._touch()

    def _note_time(self, stream: str, obj: Body) -> None:
        self._last_change[stream] = time.monotonic()
        meta = obj.get("metadata")
        entries = meta.get("managedFields") if isinstance(meta, dict) else None
        if not isinstance(entries, list):
            return
        newest = self._newest.get(stream, "")
        for entry in entries:
            written = entry.get("time") if isinstance(entry, dict) else None
            if isinstance(written, str) and written > newest:
                newest = written
        if newest:
            self._newest[stream] = newest

    def as_of(
        self,
        now: datetime,
        *,
        behind: Collection[str] = (),
        idle: float = 0.5,
        max_lag: timedelta = timedelta(minutes=10),
    ) -> datetime:
        """The moment the cached state stands for. A watching stream with no new writes for
        ``idle`` wall seconds is caught up (a server sends changes as they happen); one still
        pouring in, or one not watching at all (``behind``: listing, backing off after a 429,
        reconnecting), stands for the newest write time it has shown (its objects'
        ``managedFields[].time``). The state is as of the earliest of those and ``now``, so a
        scan does not judge a lagging cache (throttled, busy, or following a fast simulator)
        as if it were current, calling fresh heartbeats stale. A stream whose newest write is
        more than ``max_lag`` old says nothing about lag (its kind has simply not been written
        lately: no new Events for an hour in a quiet cluster) and is not counted."""
        moment = now
        quiet_since = time.monotonic() - idle
        for stream, changed in self._last_change.items():
            if changed <= quiet_since and stream not in behind:
                continue
            written = objects.parse_time(self._newest.get(stream))
            if written is not None and now - max_lag <= written < moment:
                moment = written
        return moment

    def _new_eviction(self, eviction: EvictionRow) -> bool:
        key = (eviction.pod_uid, eviction.source)
        if key in self._evictions:
            return False
        self._evictions.add(key)
        return True

    def _touch(self) -> None:
        if self._batch_started is None:
            self._batch_started = time.monotonic()

    async def _checkpoint(self, kind: Kind, resource_version: str) -> None:
        if resource_version:
            self._batch.checkpoints[kind.stream] = resource_version
            self._touch()
        if len(self._batch) >= self.flush_rows:
            await self.flush(wait=len(self._batch) >= 4 * self.flush_rows)

    # writing ------------------------------------------------------------------------------

    async def flush(self, *, wait: bool = True) -> None:
        """Write the pending batch (``wait=False``: unless a write is already running)."""
        if not wait and self._write_lock.locked():
            return
        async with self._write_lock:
            batch = self._batch
            if batch.empty:
                return
            self._batch = self._new_batch()
            self._writing_since, self._batch_started = self._batch_started, None
            started = time.perf_counter()
            try:
                written = await asyncio.to_thread(self.archive.write, batch)
            finally:
                self._writing_since = None
            if self.on_write is not None:
                self.on_write(written)
            self.stats.write_seconds += time.perf_counter() - started
            self.stats.batches += 1
            self.stats.rows += len(batch)
            self.stats.last_write = time.time()

    def pending_seconds(self) -> float:
        """How long (wall seconds) the oldest change not yet in the archive has waited; 0 when
        everything seen is written. It grows while writes fail or fall behind."""
        waiting = [t for t in (self._writing_since, self._batch_started) if t is not None]
        return max(time.monotonic() - min(waiting), 0.0) if waiting else 0.0

    async def _flush_forever(self) -> None:
        while True:
            await asyncio.sleep(self.flush_seconds / 2)
            started = self._batch_started
            if started is not None and time.monotonic() - started >= self.flush_seconds:
                await self.flush()

    def start(self) -> None:
        """Start the timed flusher."""
        if self._flusher is None:
            self._flusher = asyncio.get_running_loop().create_task(self._flush_forever())

    async def stop(self) -> None:
        """Stop the flusher and write what is pending."""
        if self._flusher is not None:
            self._flusher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._flusher
            self._flusher = None
        await self.flush()


def _conditions_only(node: Body) -> Body:
    """What ``node_transitions`` compares: the conditions, nothing else kept."""
    status = node.get("status") or {}
    conditions = status.get("conditions") if isinstance(status, dict) else None
    meta = node.get("metadata") or {}
    name = meta.get("name") if isinstance(meta, dict) else None
    return {"metadata": {"name": name}, "status": {"conditions": conditions or []}}
