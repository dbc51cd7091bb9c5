"""Retention: forgetting what is older than a policy allows (``--retain 30d``).

The archive exists to keep what the API server forgets (Events live one hour, pod statuses only
as long as their pods), so nothing is dropped for being old unless the operator asks: ``retain``
runs only when a caller decides to. Each table is trimmed by the time its rows are about (an
event's last occurrence, a termination's finish, an eviction, a transition, a sample, a finding
episode's last scan), not by when they were recorded (that stands in only for rows without the
time). Deletion goes oldest first in batches of about ``BATCH_ROWS`` rows, each its own short
transaction, so a recorder writing to the same archive waits at most one batch (SQLite has one
writer at a time) and an interrupted run has still removed whole batches of the oldest rows.

Node repair's decisions (the audit trail) are trimmed by when they were given. Checkpoints are
never trimmed: they say where each watch resumes, whatever the age; nor are the repairs in
flight, the node states and the repair ledger (small, and the ledger is what the quarantine rule
counts).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kubemedic.store import schema
from kubemedic.store.db import Archive

__all__ = ["BATCH_ROWS", "retain"]

BATCH_ROWS: Final = 5000
_IN_CHUNK: Final = 500

_TIMES: Final = (
    (schema.events, "last_seen"),
    (schema.terminations, "finished_at"),
    (schema.evictions, "at"),
    (schema.node_transitions, "at"),
    (schema.metric_samples, "at"),
    (schema.findings, "last_seen"),
    (schema.repair_decisions, "at"),
)


def retain(
    archive: Archive, cluster: str | None, older_than: datetime, *, batch: int = BATCH_ROWS
) -> dict[str, int]:
    """Delete the rows about times before ``older_than`` (of ``cluster``, or of every cluster
    when ``None``); return how many went, per table. Events take their count history
    (``event_counts``) with them."""
    if older_than.tzinfo is None:
        raise ValueError(f"retention time {older_than.isoformat()} has no timezone")
    if batch < 1:
        raise ValueError(f"retention batch size must be positive, not {batch}")
    cutoff = older_than.timestamp()
    removed: dict[str, int] = {"event_counts": 0}
    for table, column in _TIMES:
        removed[table.name] = 0
        when = _when(table, column)
        old = (
            when < cutoff if cluster is None else sa.and_(table.c.cluster == cluster, when < cutoff)
        )
        while True:
            with archive.transaction() as connection:
                boundary = connection.execute(
                    sa.select(when).where(old).order_by(when).offset(batch - 1).limit(1)
                ).scalar_one_or_none()
                chosen = old if boundary is None else sa.and_(old, when <= boundary)
                if table is schema.events:
                    removed["event_counts"] += _delete_counts(connection, chosen)
                count = connection.execute(sa.delete(table).where(chosen)).rowcount
            removed[table.name] += count
            if boundary is None or count == 0:
                break
    return removed


def _when(table: sa.Table, column: str) -> Any:
    """The time a row is about; rows without it (an event with no timestamps, a termination
    still without a finish) fall back to when they were recorded."""
    if "recorded_at" in table.c:
        return sa.func.coalesce(table.c[column], table.c.recorded_at)
    return table.c[column]


def _delete_counts(connection: Connection, chosen: Any) -> int:
    """Delete the count history of the events ``chosen`` selects (before they go)."""
    events, counts = schema.events, schema.event_counts
    uids: dict[str, list[str]] = defaultdict(list)
    for cluster, uid in connection.execute(sa.select(events.c.cluster, events.c.uid).where(chosen)):
        uids[cluster].append(uid)
    removed = 0
    for cluster, chosen_uids in uids.items():
        for start in range(0, len(chosen_uids), _IN_CHUNK):
            chunk = chosen_uids[start : start + _IN_CHUNK]
            removed += connection.execute(
                sa.delete(counts).where(counts.c.cluster == cluster, counts.c.uid.in_(chunk))
            ).rowcount
    return removed
