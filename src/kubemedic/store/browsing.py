"""Reading the archive a page at a time: what the dashboard and its JSON API show.

Every list is ordered newest first by one time column, ties broken by the row id, and paged by
**keyset**: a page ends with a ``continue`` token that encodes the last row's sort key (its time
and id), and the next page starts strictly after that key. No ``OFFSET``: a page deep in a
million events costs what the first one does (an index range scan from the key), and rows
written while someone pages (newer ones, at the top) neither shift nor repeat what follows.
Rows whose time is not known (NULL) come after every timed row, by id.

Queries are SQLAlchemy Core with bound parameters, on SQLite and PostgreSQL alike, and always
name one ``cluster`` (every index leads with it). Rows come back as plain dicts of the table's
columns (times in epoch seconds; JSON columns parsed) after ``checking.check``.

Tokens are opaque to callers: base64url of a small JSON array. A token that does not decode, or
was made for another list, is refused with ``PageError`` (an ``InputError``).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import sqlalchemy as sa
from sqlalchemy import ColumnElement
from sqlalchemy.engine import Connection

from kubemedic.errors import InputError
from kubemedic.store import breakers, checking, repairs, schema
from kubemedic.store.queries import resolve_kind

__all__ = [
    "MAX_LIMIT",
    "EventFilter",
    "Page",
    "PageError",
    "breaker_decisions",
    "breaker_state",
    "clusters",
    "decode_token",
    "encode_token",
    "events",
    "findings",
    "latest_commitment",
    "newest",
    "node_names",
    "node_repair",
    "node_transitions",
    "nodes_first_seen",
    "pod_rows",
    "version",
]

MAX_LIMIT: Final = 500
"""The most rows one page holds, whatever ``limit`` asks for."""

Row = dict[str, Any]


class PageError(InputError):
    """A ``continue`` token or a ``limit`` that cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Page:
    """One page of rows and the token of the next (None on the last page)."""

    items: list[Row]
    next: str | None = None


@dataclass(frozen=True, slots=True)
class EventFilter:
    """kubectl-like filters over events; None or "" leaves one out. ``kind`` is compared as
    given after ``queries.resolve_kind`` (so ``po`` finds ``Pod``); ``type`` is ``Normal`` or
    ``Warning`` in any case; an event matches ``since``/``until`` (epoch seconds) when it was
    last seen at or after ``since`` and first seen at or before ``until``."""

    namespace: str | None = None
    kind: str | None = None
    name: str | None = None
    reason: str | None = None
    type: str | None = None
    node: str | None = None
    since: float | None = None
    until: float | None = None
    extra: Mapping[str, str] = field(default_factory=dict)


# -- tokens -------------------------------------------------------------------------------------


def encode_token(list_name: str, at: float | None, row_id: int) -> str:
    """The token naming the row ``(at, row_id)`` of the list ``list_name``."""
    raw = json.dumps([list_name, at, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_token(list_name: str, token: str) -> tuple[float | None, int]:
    """The ``(at, id)`` key ``token`` holds; ``PageError`` unless it is a token of this list."""
    problem = f"continue token {token[:100]!r} is not one this list gave; start from the first page"
    try:
        padded = token + "=" * (-len(token) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, binascii.Error, UnicodeError):
        raise PageError(problem) from None
    if not (isinstance(value, list) and len(value) == 3 and value[0] == list_name):
        raise PageError(problem)
    at, row_id = value[1], value[2]
    if at is not None and (type(at) not in (int, float) or at != at):  # noqa: PLR0124 (NaN)
        raise PageError(problem)
    if type(row_id) is not int:
        raise PageError(problem)
    return (None if at is None else float(at)), row_id


def _limit(limit: int) -> int:
    if not 1 <= limit <= MAX_LIMIT:
        raise PageError(f"limit {limit}: expected a number from 1 to {MAX_LIMIT}")
    return limit


def _paged(
    connection: Connection,
    table: sa.Table,
    time_column: str,
    filters: Sequence[ColumnElement[bool]],
    *,
    list_name: str,
    limit: int,
    token: str | None,
) -> Page:
    """Rows of ``table`` matching ``filters``, newest ``time_column`` first (then id), the page
    after ``token``: timed rows by an index range scan, then untimed ones by id."""
    wanted = _limit(limit)
    t, row_id = table.c[time_column], table.c.id
    key: tuple[float | None, int] | None = None if token is None else decode_token(list_name, token)
    rows: list[Any] = []
    if key is None or key[0] is not None:
        timed = [*filters, t.is_not(None)]
        if key is not None:
            # The bound on the time alone is what the index range scan starts from; the id
            # only breaks ties on it.
            timed.extend([t <= key[0], sa.or_(t < key[0], row_id < key[1])])
        query = sa.select(table).where(*timed).order_by(t.desc(), row_id.desc()).limit(wanted + 1)
        rows.extend(connection.execute(query).mappings())
    if len(rows) <= wanted:
        untimed = [*filters, t.is_(None)]
        if key is not None and key[0] is None:
            untimed.append(row_id < key[1])
        query = (
            sa.select(table).where(*untimed).order_by(row_id.desc()).limit(wanted + 1 - len(rows))
        )
        rows.extend(connection.execute(query).mappings())
    checked = checking.check_all(table.name, rows)
    items = [dict(row) for row in checked[:wanted]]
    following = None
    if len(checked) > wanted:
        last = items[-1]
        following = encode_token(list_name, last[time_column], int(last["id"]))
    return Page(items, following)


# -- lists --------------------------------------------------------------------------------------


def events(
    connection: Connection,
    cluster: str,
    where: EventFilter,
    *,
    limit: int = 100,
    token: str | None = None,
) -> Page:
    """Events of ``cluster`` matching ``where``, last seen newest first."""
    e = schema.events.c
    found: list[ColumnElement[bool]] = [e.cluster == cluster]
    if where.namespace:
        found.append(e.namespace == where.namespace)
    if where.kind:
        found.append(e.object_kind == resolve_kind(where.kind))
    if where.name:
        found.append(e.object_name == where.name)
    if where.reason:
        found.append(e.reason == where.reason)
    if where.type:
        found.append(e.type == where.type.strip().capitalize())
    if where.node:
        found.append(e.node == where.node)
    if where.since is not None:
        found.append(e.last_seen >= where.since)
    if where.until is not None:
        found.append(sa.func.coalesce(e.first_seen, e.last_seen) <= where.until)
    return _paged(
        connection,
        schema.events,
        "last_seen",
        found,
        list_name="events",
        limit=limit,
        token=token,
    )


@dataclass(frozen=True, slots=True)
class _PodList:
    """A list of rows about pods (terminations, evictions): its table and time column, the list
    name its tokens carry, and what else a row must be."""

    table: sa.Table
    time_column: str
    token_name: str
    only: tuple[ColumnElement[bool], ...] = ()


_POD_LISTS: Final = {
    "oom_kills": _PodList(
        schema.terminations,
        "finished_at",
        "oom",
        (schema.terminations.c.reason == "OOMKilled",),
    ),
    "evictions": _PodList(schema.evictions, "at", "evictions"),
}
"""The lists :func:`pod_rows` reads, by name."""


def pod_rows(
    connection: Connection,
    cluster: str,
    *,
    listing: Literal["oom_kills", "evictions"],
    namespace: str | None = None,
    node: str | None = None,
    since: float | None = None,
    until: float | None = None,
    limit: int = 100,
    token: str | None = None,
) -> Page:
    """A page of the pod list ``listing`` of ``cluster``, newest first, kept to ``namespace``,
    ``node`` and times from ``since`` to ``until``: ``oom_kills``, containers OOM-killed
    (terminations with reason ``OOMKilled``); ``evictions``, pods evicted by a kubelet (or at
    admission under pressure)."""
    chosen = _POD_LISTS[listing]
    c = chosen.table.c
    found: list[ColumnElement[bool]] = [c.cluster == cluster]
    if namespace:
        found.append(c.namespace == namespace)
    if node:
        found.append(c.node == node)
    if since is not None:
        found.append(c[chosen.time_column] >= since)
    if until is not None:
        found.append(c[chosen.time_column] <= until)
    found.extend(chosen.only)
    return _paged(
        connection,
        chosen.table,
        chosen.time_column,
        found,
        list_name=chosen.token_name,
        limit=limit,
        token=token,
    )


def findings(
    connection: Connection,
    cluster: str,
    *,
    check: str | None = None,
    severity: str | None = None,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    limit: int = 100,
    token: str | None = None,
) -> Page:
    """Finding episodes, last seen newest first; ``evidence`` parsed (``{}`` if unreadable)."""
    f = schema.findings.c
    found: list[ColumnElement[bool]] = [f.cluster == cluster]
    for column, value in (
        (f.check, check),
        (f.severity, severity),
        (f.object_kind, kind),
        (f.object_name, name),
        (f.object_namespace, namespace),
    ):
        if value:
            found.append(column == value)
    page = _paged(
        connection,
        schema.findings,
        "last_seen",
        found,
        list_name="findings",
        limit=limit,
        token=token,
    )
    for item in page.items:
        item["evidence"] = _json(item.get("evidence"), {})
    return page


def breaker_decisions(
    connection: Connection,
    cluster: str,
    *,
    owner: str | None = None,
    kind: str | None = None,
    limit: int = 100,
    token: str | None = None,
) -> Page:
    """The storm breaker's decisions, newest first, each with its whole JSON ``body`` (the
    revert ``patch`` when it gave one)."""
    d = schema.breaker_decisions.c
    found: list[ColumnElement[bool]] = [d.cluster == cluster]
    if owner:
        found.append(d.owner == owner)
    if kind:
        found.append(d.kind == kind)
    page = _paged(
        connection,
        schema.breaker_decisions,
        "at",
        found,
        list_name="breaker",
        limit=limit,
        token=token,
    )
    for item in page.items:
        item["body"] = _json(item.get("body"), {})
    return page


def _json(text: Any, default: Any) -> Any:
    try:
        value = json.loads(text) if isinstance(text, str) else default
    except ValueError:
        return default
    return value if isinstance(value, type(default)) else default


# -- small reads ----------------------------------------------------------------------------------

_CLUSTER_TABLES = (
    schema.events,
    schema.findings,
    schema.terminations,
    schema.evictions,
    schema.node_transitions,
    schema.node_states,
    schema.repair_ledger,
    schema.breaker_decisions,
)


def clusters(connection: Connection) -> list[str]:
    """Every cluster the archive holds rows of, sorted: a loose index scan per table (each
    step one ``min(cluster) > previous`` lookup), so a million rows cost a few lookups."""
    found: set[str] = set()
    for table in _CLUSTER_TABLES:
        previous: str | None = None
        while True:
            query = sa.select(sa.func.min(table.c.cluster))
            if previous is not None:
                query = query.where(table.c.cluster > previous)
            value = connection.execute(query).scalar()
            if value is None:
                break
            found.add(str(value))
            previous = str(value)
    return sorted(found)


def version(connection: Connection, cluster: str) -> tuple[Any, ...]:
    """What changes whenever rows incidents are made of change (new or updated findings,
    events, evictions, kills, transitions): a cache of incidents is good while it is equal."""
    parts: list[Any] = []
    for table, column in (
        (schema.findings, "last_seen"),
        (schema.events, "last_seen"),
        (schema.evictions, "at"),
        (schema.terminations, "finished_at"),
        (schema.node_transitions, "at"),
    ):
        parts.append(connection.execute(sa.select(sa.func.max(table.c.id))).scalar())
        query = sa.select(sa.func.max(table.c[column])).where(table.c.cluster == cluster)
        parts.append(connection.execute(query).scalar())
    return tuple(parts)


def newest(connection: Connection, cluster: str) -> float | None:
    """The newest time the archive saw in ``cluster``: its latest event or finding (both
    indexed by cluster and time)."""
    found: list[float] = []
    for table in (schema.events, schema.findings):
        query = sa.select(sa.func.max(table.c.last_seen)).where(table.c.cluster == cluster)
        value = connection.execute(query).scalar()
        if isinstance(value, int | float):
            found.append(float(value))
    return max(found) if found else None


def node_names(connection: Connection, cluster: str) -> list[str]:
    """Every node the archive knows of in ``cluster``: with a repair state, a condition
    transition or a finished repair (each read off an index leading with cluster and node)."""
    found: set[str] = set()
    for table in (schema.node_states, schema.node_transitions, schema.repair_ledger):
        query = sa.select(table.c.node).where(table.c.cluster == cluster).distinct()
        found.update(str(value) for (value,) in connection.execute(query))
    return sorted(found)


def nodes_first_seen(connection: Connection, cluster: str) -> list[tuple[str, float]]:
    """Each node's first recorded condition transition (when the recorder first saw it), oldest
    first: how many nodes the cluster had at any moment, as far as the archive knows."""
    t = schema.node_transitions.c
    query = (
        sa.select(t.node, sa.func.min(t.at))
        .where(t.cluster == cluster)
        .group_by(t.node)
        .order_by(sa.func.min(t.at), t.node)
    )
    return [(str(node), float(at)) for node, at in connection.execute(query)]


def node_transitions(
    connection: Connection, cluster: str, node: str, *, most: int = 2000
) -> list[Row]:
    """The node's condition transitions, oldest first (the newest ``most`` of them)."""
    table = schema.node_transitions
    query = (
        sa.select(table)
        .where(table.c.cluster == cluster, table.c.node == node)
        .order_by(table.c.at.desc(), table.c.id.desc())
        .limit(most)
    )
    rows = checking.check_all(table.name, list(connection.execute(query).mappings()))
    return [dict(row) for row in reversed(rows)]


def node_repair(connection: Connection, cluster: str, node: str) -> Row:
    """The node's repair state (``state``: its ``node_states`` row or None), the repair in
    flight (``repair``: its JSON body or None), its ledger (``ledger``, oldest first) and the
    newest decisions about it (``decisions``, oldest first, at most 200)."""
    s = schema.node_states
    state_rows = checking.check_all(
        s.name,
        list(
            connection.execute(
                sa.select(s).where(s.c.cluster == cluster, s.c.node == node)
            ).mappings()
        ),
    )
    r = schema.repairs
    body = connection.execute(
        sa.select(r.c.body).where(r.c.cluster == cluster, r.c.node == node)
    ).scalar()
    d = schema.repair_decisions
    newest = (
        sa.select(d.c.at)
        .where(d.c.cluster == cluster, d.c.node == node)
        .order_by(d.c.at.desc())
        .limit(200)
        .subquery()
    )
    floor = connection.execute(sa.select(sa.func.min(newest.c.at))).scalar()
    return {
        "state": dict(state_rows[0]) if state_rows else None,
        "repair": _json(body, {}) or None,
        "ledger": repairs.ledger(connection, cluster, node=node),
        "decisions": repairs.decisions(
            connection, cluster, node=node, since=None if floor is None else float(floor)
        ),
    }


def breaker_state(connection: Connection, cluster: str) -> Row | None:
    """The storm breaker's saved state (storms in progress, reverts), or None."""
    return breakers.load(connection, cluster)


def latest_commitment(connection: Connection, cluster: str) -> list[Row]:
    """Per node and resource (``memory``, ``cpu``), the evidence of the latest
    ``node-*-overcommit`` finding: ``node``, ``pool``, ``resource``, ``requestsPercent``,
    ``limitsPercent``, ``lastSeen``. Nodes under the checks' thresholds have none."""
    f = schema.findings.c
    latest = (
        sa.select(f.object_name, f.check, sa.func.max(f.last_seen).label("newest"))
        .where(
            f.cluster == cluster,
            f.check.in_(["node-memory-overcommit", "node-cpu-overcommit"]),
        )
        .group_by(f.object_name, f.check)
        .subquery()
    )
    query = (
        sa.select(f.object_name, f.check, f.evidence, f.last_seen)
        .join(
            latest,
            sa.and_(
                f.object_name == latest.c.object_name,
                f.check == latest.c.check,
                f.last_seen == latest.c.newest,
            ),
        )
        .where(f.cluster == cluster)
        .order_by(f.object_name, f.check)
    )
    found: dict[tuple[str, str], Row] = {}
    for name, check, evidence, last_seen in connection.execute(query):
        value = _json(evidence, {})
        resource = "cpu" if check == "node-cpu-overcommit" else "memory"
        found[(str(name), resource)] = {
            "node": str(name),
            "pool": str(value.get("nodePool") or ""),
            "resource": resource,
            "requestsPercent": _number(value.get("requestsPercent")),
            "limitsPercent": _number(value.get("limitsPercent")),
            "lastSeen": float(last_seen),
        }
    return list(found.values())


def _number(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None
