"""Node repair's state in the archive: repairs in flight, the ledger, decisions, node states.

The repair package (a higher layer) hands its records over as the plain dicts of its codec
(``kubemedic.repair.policy.codec``: camelCase keys, RFC 3339 UTC times, enums by value) and gets
the same dicts back; this module reads only the keys it indexes (``id``, ``node``, ``trigger``,
``started``, ``finished``, ``outcome``, ``dryRun`` and a decision's ``kind``, ``reason``,
``message``, ``action``, ``repair``) and keeps the rest as JSON text. Times given as floats are
seconds since the Unix epoch, as in every other table.

One controller round is one transaction (``save_round``): the repairs still in flight are
upserted (one per node), the finished ones leave ``repairs`` and enter ``repair_ledger`` (keyed by
the repair's id, so a round replayed after a crash or by another replica adds nothing twice),
every decision is appended to ``repair_decisions`` and each node's state is upserted. A crash
at any point leaves the archive as it was before the round or after it, never in between.

Rows read back pass ``checking.check`` and their JSON is parsed and checked to be the object or
list it should be, so a row damaged by hand is named (table, row, column) as ``RowError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from kubemedic.model import objects
from kubemedic.store import checking, schema
from kubemedic.store.records import storable_text

__all__ = [
    "NODE_STATES",
    "RELEASED",
    "clusters",
    "decisions",
    "ledger",
    "load",
    "node_states",
    "not_ready_since",
    "release",
    "save_round",
]

NODE_STATES: Final = ("healthy", "unhealthy", "repairing", "held", "quarantined", "gone")
RELEASED: Final = "released"
"""The ledger outcome of a person clearing a node's quarantine (``kubemedic nodes release``):
the quarantine rule counts only the repairs finished after a node's latest such row."""

_MESSAGE: Final = 32 * 1024
Json = dict[str, Any]


# -- values in ----------------------------------------------------------------------------------


def _field(body: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in body:
        raise ValueError(f"{where}: no {key!r}")
    return body[key]


def _text(body: Mapping[str, Any], key: str, where: str, *, limit: int = 1024) -> str:
    value = _field(body, key, where)
    if not isinstance(value, str):
        raise ValueError(f"{where}: {key!r} is {value!r}, not text")
    return storable_text(value, limit)


def _epoch(body: Mapping[str, Any], key: str, where: str) -> float:
    value = _field(body, key, where)
    parsed = objects.parse_time(value) if isinstance(value, str) else None
    if parsed is None:
        raise ValueError(f"{where}: {key!r} is {value!r}, not an RFC 3339 time")
    return parsed.timestamp()


def _dump(value: object) -> str:
    # ASCII JSON: NUL and lone surrogates travel escaped, which PostgreSQL text accepts.
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def _insert(connection: Connection, table: sa.Table) -> Any:
    if connection.dialect.name == "postgresql":
        return postgresql.insert(table)
    return sqlite.insert(table)


# -- values out ---------------------------------------------------------------------------------


def _time(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return objects.format_exact_time(datetime.fromtimestamp(seconds, UTC))


def _parsed(table: str, row: Mapping[Any, Any], column: str, kind: type) -> Any:
    text = row[column]
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, kind):
        what = "a JSON object" if kind is dict else "a JSON list"
        raise checking.expected(table, row, column, what, text)
    if isinstance(value, list) and not all(isinstance(item, dict) for item in value):
        raise checking.expected(table, row, column, "a JSON list of objects", text)
    return value


def _rows(connection: Connection, query: Any, table: sa.Table) -> list[Mapping[Any, Any]]:
    found: list[Mapping[Any, Any]] = list(connection.execute(query).mappings())
    return checking.check_all(table.name, found)


# -- repairs in flight ------------------------------------------------------------------------


def load(connection: Connection, cluster: str) -> dict[str, Json]:
    """The repairs in flight of ``cluster``: ``{node: repair dict}``."""
    table = schema.repairs
    query = sa.select(table).where(table.c.cluster == cluster).order_by(table.c.node)
    return {
        row["node"]: _parsed(table.name, row, "body", dict)
        for row in _rows(connection, query, table)
    }


def save_round(
    connection: Connection,
    cluster: str,
    *,
    in_flight: Mapping[str, Mapping[str, Any]],
    finished: Sequence[Mapping[str, Any]],
    decisions: Sequence[Mapping[str, Any]],
    node_states: Sequence[Mapping[str, Any]],
    at: float,
) -> None:
    """Write one controller round on ``connection`` (inside the caller's one transaction)."""
    repairs = [
        {
            "cluster": cluster,
            "node": storable_text(node),
            "repair": _text(body, "id", f"repair of {node}"),
            "body": _dump(dict(body)),
            "updated_at": at,
        }
        for node, body in sorted(in_flight.items())
    ]
    if repairs:
        insert = _insert(connection, schema.repairs)
        connection.execute(
            insert.on_conflict_do_update(
                index_elements=["cluster", "node"],
                set_={
                    "repair": insert.excluded.repair,
                    "body": insert.excluded.body,
                    "updated_at": insert.excluded.updated_at,
                },
            ),
            repairs,
        )
    entries = [_ledger_row(cluster, entry, at) for entry in finished]
    if entries:
        table = schema.repairs
        for entry in entries:
            connection.execute(
                sa.delete(table).where(
                    table.c.cluster == cluster,
                    table.c.node == entry["node"],
                    table.c.repair == entry["repair"],
                )
            )
        connection.execute(
            _insert(connection, schema.repair_ledger).on_conflict_do_nothing(
                index_elements=["cluster", "repair"]
            ),
            entries,
        )
    rows = [_decision_row(cluster, decision, at) for decision in decisions]
    if rows:
        connection.execute(sa.insert(schema.repair_decisions), rows)
    states = [_state_row(cluster, state, at) for state in node_states]
    if states:
        _upsert_states(connection, states)


def _ledger_row(cluster: str, entry: Mapping[str, Any], at: float) -> Json:
    where = f"ledger entry {entry.get('id')!r}"
    steps = entry.get("steps", [])
    if not isinstance(steps, list):
        raise ValueError(f"{where}: 'steps' is {steps!r}, not a list")
    return {
        "cluster": cluster,
        "repair": _text(entry, "id", where),
        "node": _text(entry, "node", where),
        "trigger": _text(entry, "trigger", where, limit=_MESSAGE),
        "started_at": _epoch(entry, "started", where),
        "finished_at": _epoch(entry, "finished", where),
        "outcome": _text(entry, "outcome", where),
        "dry_run": 1 if entry.get("dryRun") else 0,
        "steps": _dump(steps),
        "recorded_at": at,
    }


def _decision_row(cluster: str, decision: Mapping[str, Any], at: float) -> Json:
    where = f"decision {decision.get('reason')!r}"
    node, action = decision.get("node"), decision.get("action")
    return {
        "cluster": cluster,
        "node": "" if node is None else _text(decision, "node", where),
        "at": at,
        "kind": _text(decision, "kind", where),
        "reason": _text(decision, "reason", where),
        "message": _text(decision, "message", where, limit=_MESSAGE),
        "action": "" if action is None else _text(decision, "action", where),
        "repair": storable_text(decision.get("repair") or ""),
        "dry_run": 1 if decision.get("dryRun") else 0,
        "body": _dump(dict(decision)),
    }


def _state_row(cluster: str, state: Mapping[str, Any], at: float) -> Json:
    where = f"node state of {state.get('node')!r}"
    word = _text(state, "state", where)
    if word not in NODE_STATES:
        raise ValueError(f"{where}: state {word!r} is not one of {', '.join(NODE_STATES)}")
    since = state.get("since")
    return {
        "cluster": cluster,
        "node": _text(state, "node", where),
        "state": word,
        "step": storable_text(state.get("step") or ""),
        "reason": storable_text(state.get("reason") or "", _MESSAGE),
        "since": None if since is None else _epoch(state, "since", where),
        "updated_at": at,
    }


def _upsert_states(connection: Connection, states: Sequence[Json]) -> None:
    insert = _insert(connection, schema.node_states)
    changed = ("state", "step", "reason", "since", "updated_at")
    connection.execute(
        insert.on_conflict_do_update(
            index_elements=["cluster", "node"],
            set_={name: insert.excluded[name] for name in changed},
        ),
        sorted(states, key=lambda row: str(row["node"])),
    )


# -- the ledger, decisions, states ----------------------------------------------------------------


def ledger(
    connection: Connection, cluster: str, *, since: float | None = None, node: str | None = None
) -> list[Json]:
    """Finished repairs of ``cluster`` (of ``node`` only, finished at or after ``since`` only),
    oldest first, as ledger dicts (``codec.ledger_to_json``'s shape)."""
    table = schema.repair_ledger
    query = sa.select(table).where(table.c.cluster == cluster)
    if since is not None:
        query = query.where(table.c.finished_at >= since)
    if node is not None:
        query = query.where(table.c.node == node)
    query = query.order_by(table.c.finished_at, table.c.started_at, table.c.id)
    return [
        {
            "id": row["repair"],
            "node": row["node"],
            "trigger": row["trigger"],
            "started": _time(row["started_at"]),
            "finished": _time(row["finished_at"]),
            "outcome": row["outcome"],
            "steps": _parsed(table.name, row, "steps", list),
            "dryRun": bool(row["dry_run"]),
        }
        for row in _rows(connection, query, table)
    ]


def decisions(
    connection: Connection, cluster: str, *, since: float | None = None, node: str | None = None
) -> list[Json]:
    """Decisions of ``cluster`` in the order given, each its ``codec.decision_to_json`` dict
    with the round's time added as ``at``."""
    table = schema.repair_decisions
    query = sa.select(table).where(table.c.cluster == cluster)
    if since is not None:
        query = query.where(table.c.at >= since)
    if node is not None:
        query = query.where(table.c.node == node)
    return [
        {**_parsed(table.name, row, "body", dict), "at": _time(row["at"])}
        for row in _rows(connection, query.order_by(table.c.at, table.c.id), table)
    ]


def node_states(connection: Connection, cluster: str) -> list[Json]:
    """Each node's state (``codec.node_state``'s shape, plus ``updatedAt``), by node name."""
    table = schema.node_states
    query = sa.select(table).where(table.c.cluster == cluster).order_by(table.c.node)
    return [
        {
            "node": row["node"],
            "state": row["state"],
            "step": row["step"],
            "reason": row["reason"],
            "since": _time(row["since"]),
            "updatedAt": _time(row["updated_at"]),
        }
        for row in _rows(connection, query, table)
    ]


def clusters(connection: Connection) -> list[str]:
    """The clusters node repair has recorded anything for (a state, a repair, a ledger row)."""
    found: set[str] = set()
    for table in (schema.node_states, schema.repairs, schema.repair_ledger):
        query = sa.select(table.c.cluster).distinct()
        found.update(str(row[0]) for row in connection.execute(query))
    return sorted(found)


def not_ready_since(connection: Connection, cluster: str, since: float) -> dict[str, list[float]]:
    """When each node's ``Ready`` went from ``True`` (or from first sight) to ``False`` or
    ``Unknown`` at or after ``since``, oldest first, from the recorded node transitions.
    ``False`` -> ``Unknown`` (the node lifecycle controller taking over a silent node) is the
    same outage, not a new transition."""
    table = schema.node_transitions
    query = (
        sa.select(table.c.id, table.c.node, table.c.at)
        .where(
            table.c.cluster == cluster,
            table.c.condition == "Ready",
            table.c.status.in_(["False", "Unknown"]),
            table.c.previous.in_(["True", ""]),
            table.c.at >= since,
        )
        .order_by(table.c.node, table.c.at, table.c.id)
    )
    found: dict[str, list[float]] = {}
    for row in _rows(connection, query, table):
        times = found.setdefault(row["node"], [])
        if not times or times[-1] != row["at"]:
            times.append(float(row["at"]))
    return found


def release(connection: Connection, cluster: str, node: str, *, by: str, at: float) -> Json:
    """Record that ``by`` cleared ``node``'s quarantine at ``at``: a ledger row with outcome
    ``released`` (one step, ``release``) and the node's state ``healthy``. Returns the row's
    ledger dict."""
    when = _time(at)
    who = by.strip() or "unknown"
    entry: Json = {
        "id": f"release:{node}:{when}",
        "node": node,
        "trigger": f"quarantine released by {who}",
        "started": when,
        "finished": when,
        "outcome": RELEASED,
        "steps": [
            {
                "action": "release",
                "started": when,
                "finished": when,
                "outcome": "done",
                "detail": f"released by {who}",
            }
        ],
        "dryRun": False,
    }
    save_round(
        connection,
        cluster,
        in_flight={},
        finished=[entry],
        decisions=[],
        node_states=[
            {
                "node": node,
                "state": "healthy",
                "step": "",
                "reason": f"quarantine released by {who}",
                "since": when,
            }
        ],
        at=at,
    )
    return entry
