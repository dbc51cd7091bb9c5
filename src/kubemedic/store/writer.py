"""Writing to the archive: batches of records with their checkpoints, as idempotent upserts.

A recorder turns watch events into a ``Batch`` and writes it in one transaction, checkpoints
included: the resourceVersion of a stream is stored only together with every change up to it, so
after a crash (even ``kill -9``) the recorder resumes its watch from a checkpoint whose data is
all there. Resuming replays changes the archive may already hold (a watch from resourceVersion
R sends every change after R; a relist after ``410 Gone`` sends every live object again), so
every write is keyed on the object's natural key and merges instead of adding:

* events: one row per Event object (its uid), updated in place as the count grows. A recurrence
  is how client-go's EventCorrelator reports a repeated event: it patches the stored Event's
  ``count``, ``lastTimestamp`` and ``message`` (events.k8s.io/v1: ``series.count`` and
  ``series.lastObservedTime``). A replayed older version (lower count, or the same count with an
  older lastTimestamp) never rolls the row back, and a replay of the stored version leaves the
  row untouched (a relist after ``410 Gone`` resends every live Event: rewriting them all would
  cost as much as the storm itself). Every count an Event was seen at goes to ``event_counts``
  once. kube-apiserver deletes Events after ``--event-ttl`` (one hour by default); the deletion
  only stamps ``deleted_at``, the row stays.
* terminations: one row per container termination (containerID, else start and finish times);
  a later sighting fills what an earlier one lacked and keeps the highest restartCount.
* evictions: one row per pod, merged from the two places the kubelet leaves the story: the pod's
  status (``reason: Evicted`` and the message) and the ``Evicted`` event.
* node transitions and metric samples: immutable facts, inserted once.

Findings are recorded as episodes by ``episodes.record_findings`` (re-exported here).

Statements are SQLAlchemy Core inserts with ``ON CONFLICT`` (SQLite 3.24+ and PostgreSQL),
each run once per table for all of the batch's rows (``bulk``: an executemany on SQLite, one
statement over a JSON array on PostgreSQL). PostgreSQL refuses an ``ON CONFLICT DO UPDATE``
statement that touches one row twice, and the outcome should not depend on the order of
duplicates anyway, so each batch is first merged per key in Python with the same rules the SQL
applies across batches.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kubemedic.store import bulk, schema
from kubemedic.store.episodes import REOPEN_AFTER, fingerprint, record_findings
from kubemedic.store.records import (
    EventRow,
    EvictionRow,
    MetricSample,
    NodeTransition,
    TerminationRow,
)

__all__ = [
    "EVICTION_SOURCES",
    "REOPEN_AFTER",
    "Batch",
    "WriteStats",
    "fingerprint",
    "record_findings",
    "write",
]

EVICTION_SOURCES: Final = ("event", "pod-status")
"""Where an eviction can be read; a row's ``source`` is the sorted, comma-joined set."""


@dataclass(slots=True)
class Batch:
    """Everything one transaction writes for one cluster.

    ``event_deletions`` are ``(uid, when the API server deleted it)``; ``checkpoints`` map a
    stream (``v1/events``...) to the resourceVersion whose changes the batch completes.
    ``len(batch)`` counts records (not checkpoints); a batch with only checkpoints is not
    ``empty`` and is truthy.
    """

    cluster: str
    events: list[EventRow] = field(default_factory=list)
    event_deletions: list[tuple[str, datetime]] = field(default_factory=list)
    terminations: list[TerminationRow] = field(default_factory=list)
    evictions: list[EvictionRow] = field(default_factory=list)
    transitions: list[NodeTransition] = field(default_factory=list)
    samples: list[MetricSample] = field(default_factory=list)
    checkpoints: dict[str, str] = field(default_factory=dict)

    def __len__(self) -> int:
        return (
            len(self.events)
            + len(self.event_deletions)
            + len(self.terminations)
            + len(self.evictions)
            + len(self.transitions)
            + len(self.samples)
        )

    @property
    def empty(self) -> bool:
        return len(self) == 0 and not self.checkpoints

    def __bool__(self) -> bool:
        return not self.empty


@dataclass(frozen=True, slots=True)
class WriteStats:
    """Rows sent per table after merging duplicates within the batch (a replayed row counts:
    the database decides whether it changes anything)."""

    events: int = 0
    event_counts: int = 0
    event_deletions: int = 0
    terminations: int = 0
    evictions: int = 0
    transitions: int = 0
    samples: int = 0
    checkpoints: int = 0
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(getattr(self, item.name) for item in fields(self) if item.name != "seconds")


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


_EMPTY: Final = sa.literal_column("''", sa.Text)


def _columns(table: sa.Table, *, skip: Sequence[str] = ("id",)) -> list[sa.Column[Any]]:
    return [column for column in table.columns if column.name not in skip]


def write(connection: Connection, batch: Batch, *, now: float | None = None) -> WriteStats:
    """Write ``batch`` on ``connection`` (inside the caller's transaction, which must also be
    the one that commits it, so the checkpoints land with their data)."""
    started = time.perf_counter()
    recorded = time.time() if now is None else now
    cluster = batch.cluster
    events, counts = _event_rows(cluster, batch.events, recorded)
    stats = {
        "events": _EVENTS.run(connection, events),
        "event_counts": _EVENT_COUNTS.run(connection, counts),
        "event_deletions": _EVENT_DELETIONS.run(
            connection, _deletion_rows(cluster, batch.event_deletions)
        ),
        "terminations": _TERMINATIONS.run(
            connection, _termination_rows(cluster, batch.terminations, recorded)
        ),
        "evictions": _EVICTIONS.run(connection, _eviction_rows(cluster, batch.evictions, recorded)),
        "transitions": _TRANSITIONS.run(
            connection, [_transition_row(cluster, item, recorded) for item in batch.transitions]
        ),
        "samples": _SAMPLES.run(connection, [_sample_row(cluster, item) for item in batch.samples]),
        "checkpoints": _CHECKPOINTS.run(
            connection,
            [
                (cluster, stream, version, recorded)
                for stream, version in sorted(batch.checkpoints.items())
            ],
        ),
    }
    return WriteStats(**stats, seconds=time.perf_counter() - started)


# -- events ---------------------------------------------------------------------------------


def _version(row: EventRow) -> tuple[int, float]:
    """How recent a version of its Event ``row`` is: the count, then the lastTimestamp
    (events.k8s.io series move the time on at the same count)."""
    return (row.count, -1.0 if row.last_seen is None else row.last_seen.timestamp())


def _event_rows(
    cluster: str, rows: Iterable[EventRow], recorded: float
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    latest: dict[str, EventRow] = {}
    counts: dict[str, dict[int, float | None]] = {}
    for row in rows:
        known = latest.get(row.uid)
        if known is None:
            latest[row.uid] = row
            counts[row.uid] = {row.count: _ts(row.last_seen)}
            continue
        if _version(row) >= _version(known):
            latest[row.uid] = row
        counts[row.uid].setdefault(row.count, _ts(row.last_seen))
    # One order (by uid) for both statements: concurrent writers then lock rows in the same
    # order and cannot deadlock each other on PostgreSQL.
    order = sorted(latest)
    events = [
        (
            cluster,
            uid,
            row.api_version,
            row.namespace,
            row.name,
            row.type,
            row.reason,
            row.message,
            row.object_kind,
            row.object_namespace,
            row.object_name,
            row.object_uid,
            row.field_path,
            row.source,
            row.host,
            row.node,
            row.count,
            _ts(row.first_seen),
            _ts(row.last_seen),
            row.resource_version,
            recorded,
        )
        for uid in order
        for row in (latest[uid],)
    ]
    history = [
        (cluster, uid, count, last_seen)
        for uid in order
        for count, last_seen in sorted(counts[uid].items())
    ]
    return events, history


def _events_upsert(dialect: str, values: bulk.Values) -> Any:
    table = schema.events
    insert = bulk.insert_into(table, dialect, values)
    new = insert.excluded
    never = sa.literal_column("-1.0", sa.Float)
    return insert.on_conflict_do_update(
        index_elements=[table.c.cluster, table.c.uid],
        set_={name: new[name] for name in values if name not in ("cluster", "uid")},
        where=sa.or_(
            new.count > table.c.count,
            sa.and_(
                new.count == table.c.count,
                sa.or_(
                    sa.func.coalesce(new.last_seen, never)
                    > sa.func.coalesce(table.c.last_seen, never),
                    sa.and_(
                        sa.func.coalesce(new.last_seen, never)
                        == sa.func.coalesce(table.c.last_seen, never),
                        new.resource_version != table.c.resource_version,
                    ),
                ),
            ),
        ),
    )


_EVENTS: Final = bulk.Bulk(_columns(schema.events, skip=("id", "deleted_at")), _events_upsert)
_EVENT_COUNTS: Final = bulk.Bulk(
    _columns(schema.event_counts),
    lambda dialect, values: bulk.insert_into(
        schema.event_counts, dialect, values
    ).on_conflict_do_nothing(),
)


def _mark_deleted(dialect: str, values: bulk.Values) -> Any:
    table = schema.events
    return (
        sa.update(table)
        .where(
            table.c.cluster == values["cluster"],
            table.c.uid == values["uid"],
            table.c.deleted_at.is_(None),
        )
        .values(deleted_at=values["deleted_at"])
    )


_EVENT_DELETIONS: Final = bulk.Bulk(
    [schema.events.c.cluster, schema.events.c.uid, schema.events.c.deleted_at], _mark_deleted
)


def _deletion_rows(
    cluster: str, deletions: Iterable[tuple[str, datetime]]
) -> list[tuple[Any, ...]]:
    first: dict[str, float] = {}
    for uid, when in deletions:
        at = when.timestamp()
        first[uid] = min(at, first.get(uid, at))
    return [(cluster, uid, at) for uid, at in sorted(first.items())]


# -- terminations ---------------------------------------------------------------------------


def _fill(kept: Any, new: Any) -> Any:
    """What a merge keeps of a field: the known value, the newcomer's when none was known."""
    return new if kept is None or kept == "" else kept


def _merge(known: list[Any], value: Sequence[Any]) -> None:
    for index, new in enumerate(value):
        known[index] = _fill(known[index], new)


_TERMINATION_COLUMNS: Final = _columns(schema.terminations)
_TERMINATION_RESTARTS: Final = [column.name for column in _TERMINATION_COLUMNS].index(
    "restart_count"
)


def _termination_rows(
    cluster: str, rows: Iterable[TerminationRow], recorded: float
) -> list[tuple[Any, ...]]:
    merged: dict[tuple[str, str, str], list[Any]] = {}
    for row in rows:
        value = [
            cluster,
            row.pod_uid,
            row.namespace,
            row.pod,
            row.container,
            row.key,
            row.node,
            row.owner_kind,
            row.owner_name,
            row.reason,
            row.exit_code,
            row.signal,
            row.restart_count,
            _ts(row.started_at),
            _ts(row.finished_at),
            row.message,
            row.memory_request,
            row.memory_limit,
            recorded,
        ]
        key = (row.pod_uid, row.container, row.key)
        known = merged.get(key)
        if known is None:
            merged[key] = value
            continue
        restarts = max(known[_TERMINATION_RESTARTS], row.restart_count)
        _merge(known, value)
        known[_TERMINATION_RESTARTS] = restarts
    return [tuple(merged[key]) for key in sorted(merged)]


def _fill_sql(table: sa.Table, new: Any, name: str) -> Any:
    """SQL of ``_fill``: keep the stored value unless it is NULL or ``""``."""
    column = table.c[name]
    if isinstance(column.type, sa.Text):
        return sa.case((column == _EMPTY, new[name]), else_=column)
    return sa.func.coalesce(column, new[name])


_MERGE_FIXED: Final = ("cluster", "pod_uid", "container", "key", "recorded_at")


def _terminations_upsert(dialect: str, values: bulk.Values) -> Any:
    table = schema.terminations
    insert = bulk.insert_into(table, dialect, values)
    new = insert.excluded
    changes: dict[str, Any] = {
        name: _fill_sql(table, new, name) for name in values if name not in _MERGE_FIXED
    }
    changes["restart_count"] = sa.case(
        (new.restart_count > table.c.restart_count, new.restart_count),
        else_=table.c.restart_count,
    )
    return insert.on_conflict_do_update(
        index_elements=[table.c.cluster, table.c.pod_uid, table.c.container, table.c.key],
        set_=changes,
    )


_TERMINATIONS: Final = bulk.Bulk(_TERMINATION_COLUMNS, _terminations_upsert)


# -- evictions ------------------------------------------------------------------------------


def _sources(text: str, *, row: EvictionRow) -> set[str]:
    found = {part.strip() for part in text.split(",") if part.strip()}
    if not found or found - set(EVICTION_SOURCES):
        raise ValueError(
            f"eviction of pod {row.namespace}/{row.pod} ({row.pod_uid}): source {text!r} is "
            f"not a comma-separated subset of {', '.join(EVICTION_SOURCES)}"
        )
    return found


def _earliest(one: float | None, other: float | None) -> float | None:
    if one is None:
        return other
    if other is None:
        return one
    return min(one, other)


_EVICTION_COLUMNS: Final = _columns(schema.evictions)
_EVICTION_NAMES: Final = [column.name for column in _EVICTION_COLUMNS]
_EVICTION_AT: Final = _EVICTION_NAMES.index("at")
_EVICTION_SOURCE: Final = _EVICTION_NAMES.index("source")


def _eviction_rows(
    cluster: str, rows: Iterable[EvictionRow], recorded: float
) -> list[tuple[Any, ...]]:
    merged: dict[str, list[Any]] = {}
    sources: dict[str, set[str]] = {}
    for row in rows:
        value: list[Any] = [
            cluster,
            row.pod_uid,
            row.namespace,
            row.pod,
            row.node,
            row.owner_kind,
            row.owner_name,
            _ts(row.at),
            row.kind,
            row.resource,
            row.threshold,
            row.available,
            row.container,
            row.usage,
            row.request,
            row.message,
            "",
            recorded,
        ]
        found = _sources(row.source, row=row)
        known = merged.get(row.pod_uid)
        if known is None:
            merged[row.pod_uid] = value
            sources[row.pod_uid] = found
            continue
        at = _earliest(known[_EVICTION_AT], value[_EVICTION_AT])
        _merge(known, value)
        known[_EVICTION_AT] = at
        sources[row.pod_uid] |= found
    for uid, value in merged.items():
        value[_EVICTION_SOURCE] = ",".join(sorted(sources[uid]))
    return [tuple(merged[uid]) for uid in sorted(merged)]


def _text(value: str) -> Any:
    """A constant string of this module's own (never data) as SQL text."""
    if "'" in value:
        raise ValueError(value)
    return sa.literal_column(f"'{value}'", sa.Text)


def _evictions_upsert(dialect: str, values: bulk.Values) -> Any:
    table = schema.evictions
    insert = bulk.insert_into(table, dialect, values)
    new = insert.excluded
    changes: dict[str, Any] = {
        name: _fill_sql(table, new, name)
        for name in values
        if name not in ("cluster", "pod_uid", "recorded_at", "source", "at")
    }
    changes["at"] = sa.case(
        (table.c.at.is_(None), new.at),
        (sa.and_(new.at.is_not(None), new.at < table.c.at), new.at),
        else_=table.c.at,
    )
    # Sorted union of two comma-joined subsets of EVICTION_SOURCES, spelled in portable SQL.
    comma = _text(",")
    both = comma + table.c.source + comma + new.source + comma
    union: Any = _EMPTY
    for source in EVICTION_SOURCES:
        union = union + sa.case(
            (both.like(_text(f"%,{source},%")), _text(f"{source},")), else_=_EMPTY
        )
    changes["source"] = sa.func.rtrim(union, comma, type_=sa.Text)
    return insert.on_conflict_do_update(
        index_elements=[table.c.cluster, table.c.pod_uid], set_=changes
    )


_EVICTIONS: Final = bulk.Bulk(_EVICTION_COLUMNS, _evictions_upsert)


# -- transitions, samples, checkpoints ------------------------------------------------------


def _transition_row(cluster: str, row: NodeTransition, recorded: float) -> tuple[Any, ...]:
    return (
        cluster,
        row.node,
        row.condition,
        row.status,
        row.previous,
        row.reason,
        row.message,
        row.at.timestamp(),
        recorded,
    )


def _sample_row(cluster: str, row: MetricSample) -> tuple[Any, ...]:
    return (
        cluster,
        row.kind,
        row.namespace,
        row.name,
        row.container,
        row.node,
        row.at.timestamp(),
        row.window_seconds,
        row.cpu_millicores,
        row.memory_bytes,
    )


_TRANSITIONS: Final = bulk.insert_once(schema.node_transitions)
_SAMPLES: Final = bulk.insert_once(schema.metric_samples)


def _checkpoints_upsert(dialect: str, values: bulk.Values) -> Any:
    table = schema.checkpoints
    insert = bulk.insert_into(table, dialect, values)
    return insert.on_conflict_do_update(
        index_elements=[table.c.cluster, table.c.stream],
        set_={
            "resource_version": insert.excluded.resource_version,
            "updated_at": insert.excluded.updated_at,
        },
    )


_CHECKPOINTS: Final = bulk.Bulk(_columns(schema.checkpoints), _checkpoints_upsert)
