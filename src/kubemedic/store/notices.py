"""What each notification receiver has accepted, per group (``notifications``).

The notify package (a higher layer) hands over plain dicts: ``receiver``, ``key``, ``status``,
``body`` (its JSON-able record of the subject as sent), ``firstSent`` and ``lastSent`` (epoch
seconds). A record is written only after the receiver accepted the message, in its own
transaction, so a crash or a failing receiver leaves the archive saying what was really
delivered. Rows read back pass ``checking.check``; a body that is not a JSON object is named
(table, row, column) as ``RowError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kubemedic.store import checking, schema
from kubemedic.store.records import storable_text

__all__ = ["load", "save"]

Json = dict[str, Any]


def load(connection: Connection, cluster: str) -> list[Json]:
    """Every record of ``cluster``, by receiver then key."""
    table = schema.notifications
    query = (
        sa.select(table).where(table.c.cluster == cluster).order_by(table.c.receiver, table.c.key)
    )
    rows = checking.check_all(table.name, list(connection.execute(query).mappings()))
    out: list[Json] = []
    for row in rows:
        try:
            body = json.loads(row["body"])
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise checking.expected(table.name, row, "body", "a JSON object", row["body"])
        out.append(
            {
                "receiver": row["receiver"],
                "key": row["key"],
                "status": row["status"],
                "body": body,
                "firstSent": row["first_sent"],
                "lastSent": row["last_sent"],
            }
        )
    return out


def save(connection: Connection, cluster: str, record: Mapping[str, Any]) -> None:
    """Upsert one record on ``connection`` (the caller's transaction)."""
    table = schema.notifications
    insert = (postgresql if connection.dialect.name == "postgresql" else sqlite).insert(table)
    row = {
        "cluster": cluster,
        "receiver": storable_text(str(record["receiver"])),
        "key": storable_text(str(record["key"])),
        "status": storable_text(str(record["status"])),
        "body": json.dumps(record["body"], separators=(",", ":"), sort_keys=True, default=str),
        "first_sent": float(record["firstSent"]),
        "last_sent": float(record["lastSent"]),
    }
    connection.execute(
        insert.on_conflict_do_update(
            index_elements=["cluster", "receiver", "key"],
            set_={
                name: getattr(insert.excluded, name)
                for name in ("status", "body", "first_sent", "last_sent")
            },
        ),
        [row],
    )
