"""The storm breaker's state in the archive: one state row per cluster and the audit trail.

The breaker package (a higher layer) hands its state over as the plain dict of its codec
(``kubemedic.breaker.codec``) and gets the same dict back; its decisions come as dicts with
``owner``, ``kind``, ``reason``, ``message``, ``action``, ``outcome`` and ``dryRun`` (indexed)
and are kept whole as JSON. One round is one transaction (``save_round``): the state is upserted
and the decisions appended, so a crash leaves the archive as it was before the round or after
it, never in between. Rows read back pass ``checking.check``; JSON that is not the object it
should be is named (table, row, column) as ``RowError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kubemedic.store import checking, schema
from kubemedic.store.records import storable_text

__all__ = ["decisions", "load", "save_round"]

_MESSAGE = 32 * 1024
Json = dict[str, Any]


def _dump(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)


def load(connection: Connection, cluster: str) -> Json | None:
    """The breaker's state of ``cluster`` as its codec wrote it, or None when none was saved."""
    table = schema.breaker_state
    rows = checking.check_all(
        table.name,
        list(connection.execute(sa.select(table).where(table.c.cluster == cluster)).mappings()),
    )
    if not rows:
        return None
    row = rows[0]
    try:
        value = json.loads(row["body"])
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise checking.expected(table.name, row, "body", "a JSON object", row["body"])
    return value


def save_round(
    connection: Connection,
    cluster: str,
    *,
    state: Mapping[str, Any],
    decisions: Sequence[Mapping[str, Any]],
    at: float,
) -> None:
    """Upsert the state and append the decisions, on ``connection`` (the caller's transaction)."""
    table = schema.breaker_state
    insert = (postgresql if connection.dialect.name == "postgresql" else sqlite).insert(table)
    connection.execute(
        insert.on_conflict_do_update(
            index_elements=["cluster"],
            set_={"body": insert.excluded.body, "updated_at": insert.excluded.updated_at},
        ),
        [{"cluster": cluster, "body": _dump(dict(state)), "updated_at": at}],
    )
    rows = [
        {
            "cluster": cluster,
            "owner": storable_text(str(d.get("owner") or "")),
            "at": at,
            "kind": storable_text(str(d.get("kind") or "")),
            "reason": storable_text(str(d.get("reason") or "")),
            "message": storable_text(str(d.get("message") or ""), _MESSAGE),
            "action": storable_text(str(d.get("action") or "")),
            "outcome": storable_text(str(d.get("outcome") or ""), _MESSAGE),
            "dry_run": 1 if d.get("dryRun") else 0,
            "body": _dump(dict(d)),
        }
        for d in decisions
    ]
    if rows:
        connection.execute(sa.insert(schema.breaker_decisions), rows)


def decisions(connection: Connection, cluster: str, *, since: float | None = None) -> list[Json]:
    """The decisions recorded for ``cluster``, in order, as they were given (with ``at``)."""
    table = schema.breaker_decisions
    query = sa.select(table).where(table.c.cluster == cluster)
    if since is not None:
        query = query.where(table.c.at >= since)
    rows = checking.check_all(
        table.name, list(connection.execute(query.order_by(table.c.id)).mappings())
    )
    out: list[Json] = []
    for row in rows:
        try:
            body = json.loads(row["body"])
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise checking.expected(table.name, row, "body", "a JSON object", row["body"])
        out.append({**body, "at": row["at"]})
    return out
