"""Reading incidents out of the archive: findings and signals by parameterised Core queries.

``load`` reads the finding episodes (``findings``) that overlap ``[since, until]``, then the
signals within ``window`` of them, in the same clusters:

* ``evictions``: every eviction row (node pressure, storage limits, admission under pressure);
* ``terminations`` with ``reason = OOMKilled`` (the runtime's attribution of a kill inside the
  container's cgroup, exit 137);
* ``node_transitions`` of ``Ready`` to ``False``/``Unknown`` (NotReady) and of
  ``MemoryPressure``/``DiskPressure``/``PIDPressure`` to ``True``;
* ``events``: ``FailedScheduling`` (pods pending), the kubelet's admission rejections
  (``OutOf<resource>``, ``NodeAffinity``...), ``Evicted`` for pods without an eviction row,
  ``OOMKilling``/``SystemOOM`` on nodes, and every other Warning (plus the autoscaler's
  ``TriggeredScaleUp`` and the liveness ``Killing``) in a namespace a finding names or on a
  node. Grouping keeps those about an incident's objects.

Queries name every column they filter on through SQLAlchemy Core with bound parameters, and run
unchanged on SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Engine, and_, func, or_, select
from sqlalchemy.engine import Connection

from kubemedic.checks.findings import Severity
from kubemedic.incidents import grouping
from kubemedic.incidents.causes import workload_key, workload_of_pod
from kubemedic.incidents.model import FindingEpisode, Incident, Signal, SignalKind
from kubemedic.model.objects import ObjectRef
from kubemedic.model.quantities import Format, Quantity
from kubemedic.store import checking, schema

__all__ = ["ArchiveDataError", "incidents", "load"]

ADMISSION_REASONS = frozenset(
    {
        "NodeAffinity",
        "NodeName",
        "NodePorts",
        "TaintToleration",
        "UnexpectedAdmissionError",
        "PodOSSelectorNodeLabelDoesNotMatch",
        "PodOSNotSupported",
        "InvalidNodeInfo",
        "TopologyAffinityError",
        "SysctlForbidden",
        "NodeShutdown",
    }
)
"""Reasons of the kubelet's events for pods it rejected at admission (``OutOf*`` besides)."""

NORMAL_REASONS = frozenset({"TriggeredScaleUp", "Killing", "NodeNotReady"})
"""Normal events worth a timeline line: the autoscaler's answer to pending pods, a kill (after
a failed liveness probe), the node lifecycle controller marking a node NotReady."""

_PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure")


class ArchiveDataError(checking.RowError):
    """A row the archive holds cannot be read (the message names the table, row and column)."""


def _when(seconds: float | None) -> datetime | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC)


def _epoch(moment: datetime) -> float:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _bytes(value: int | None) -> str:
    return "?" if value is None else Quantity(Fraction(value), Format.BINARY_SI).human()


def load(
    engine: Engine,
    *,
    cluster: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    window: timedelta = grouping.DEFAULT_WINDOW,
) -> tuple[list[FindingEpisode], list[Signal]]:
    """Finding episodes overlapping ``[since, until]`` (of ``cluster``, or all) and the signals
    within ``window`` of them."""
    with engine.connect() as connection:
        episodes = _findings(connection, cluster=cluster, since=since, until=until)
        if not episodes:
            return [], []
        low = _epoch(min(e.first_seen for e in episodes) - window)
        high = _epoch(max(e.last_seen for e in episodes) + window)
        clusters = sorted({e.cluster for e in episodes})
        namespaces = _namespaces(episodes)
        signals = [
            *_evictions(connection, clusters, low, high),
            *_oom_kills(connection, clusters, low, high),
            *_transitions(connection, clusters, low, high),
        ]
        evicted = {(s.cluster, s.namespace, s.object_name) for s in signals}
        signals += _events(connection, clusters, namespaces, low, high, evicted=evicted)
    signals.sort(key=lambda s: s.order)
    return episodes, signals


def incidents(
    engine: Engine,
    *,
    cluster: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    window: timedelta = grouping.DEFAULT_WINDOW,
    linked: bool = True,
) -> list[Incident]:
    """``load`` then ``grouping.group``: the archive's incidents, oldest first (``linked``:
    as ``grouping.group``)."""
    episodes, signals = load(engine, cluster=cluster, since=since, until=until, window=window)
    return grouping.group(episodes, signals, window=window, linked=linked)


# -- findings ----------------------------------------------------------------------------------


def _findings(
    connection: Connection,
    *,
    cluster: str | None,
    since: datetime | None,
    until: datetime | None,
) -> list[FindingEpisode]:
    f = schema.findings.c
    filters: list[ColumnElement[bool]] = []
    if cluster is not None:
        filters.append(f.cluster == cluster)
    if since is not None:
        filters.append(f.last_seen >= _epoch(since))
    if until is not None:
        filters.append(f.first_seen <= _epoch(until))
    query = select(schema.findings).where(*filters).order_by(f.id)
    rows = checking.check_all("findings", connection.execute(query).mappings())
    return [_episode(row) for row in rows]


def _episode(row: Mapping[Any, Any]) -> FindingEpisode:
    where = checking.where("findings", row)
    try:
        severity = Severity.parse(str(row["severity"]))
    except ValueError as error:
        raise ArchiveDataError(f"{where}: column severity: {error}") from None
    try:
        evidence = orjson.loads(row["evidence"] or "{}")
    except orjson.JSONDecodeError:
        raise ArchiveDataError(
            f"{where}: column evidence: expected a JSON object, found "
            f"{checking.shown(row['evidence'])} (not JSON)"
        ) from None
    if not isinstance(evidence, dict):
        raise ArchiveDataError(
            f"{where}: column evidence: expected a JSON object, found "
            f"{checking.shown(row['evidence'])}"
        )
    first, last = _when(row["first_seen"]), _when(row["last_seen"])
    assert first is not None and last is not None  # NOT NULL columns
    return FindingEpisode(
        cluster=row["cluster"],
        check=row["check"],
        severity=severity,
        object=ObjectRef(
            kind=row["object_kind"],
            name=row["object_name"],
            namespace=row["object_namespace"] or None,
            api_version=row["object_api_version"] or "v1",
        ),
        message=row["message"],
        cause=row["cause"],
        first_seen=first,
        last_seen=last,
        evidence=evidence,
        fingerprint=row["fingerprint"],
        row_id=int(row["id"]),
        scans=int(row["scans"]),
    )


def _namespaces(episodes: Iterable[FindingEpisode]) -> list[str]:
    """Namespaces of the findings' objects and of the workloads their evidence names."""
    found = {e.object.namespace for e in episodes if e.object.namespace}
    for episode in episodes:
        for key in ("owner", "pod"):
            value = episode.evidence.get(key)
            text = workload_key(value) if isinstance(value, str) else ""
            if text.count("/") == 2:
                found.add(text.split("/", 1)[0])
            elif isinstance(value, str) and value.count("/") == 1:
                found.add(value.split("/", 1)[0])
    return sorted(found)


# -- signals -----------------------------------------------------------------------------------


def _in_range(column: Any, low: float, high: float) -> ColumnElement[bool]:
    return and_(column >= low, column <= high)


def _pod_signal(
    row: Any,
    kind: SignalKind,
    at: datetime,
    *,
    summary: str,
    source: str,
    detail: tuple[str, ...],
) -> Signal:
    """A signal about one pod, from an archive row that names its pod, node and owner."""
    return Signal(
        kind=kind,
        at=at,
        cluster=row["cluster"],
        namespace=row["namespace"],
        object_kind="Pod",
        object_name=row["pod"],
        node=row["node"],
        summary=summary,
        source=source,
        source_id=str(row["id"]),
        workload=workload_of_pod(
            row["namespace"], row["pod"], owner_kind=row["owner_kind"], owner_name=row["owner_name"]
        ),
        detail=_detail(row, detail),
    )


def _evictions(
    connection: Connection, clusters: list[str], low: float, high: float
) -> list[Signal]:
    e = schema.evictions.c
    when = func.coalesce(e.at, e.recorded_at)
    query = select(schema.evictions).where(e.cluster.in_(clusters), _in_range(when, low, high))
    signals = []
    for row in checking.check_all("evictions", connection.execute(query).mappings()):
        at = _when(row["at"] if row["at"] is not None else row["recorded_at"])
        assert at is not None
        used = ""
        if row["container"]:
            amount = (
                (lambda v: f"{v}m" if v is not None else "?")
                if row["resource"] == "cpu"
                else _bytes
            )
            used = (
                f": container {row['container']} used {amount(row['usage'])} of a "
                f"{amount(row['request'])} request"
            )
        signals.append(
            _pod_signal(
                row,
                SignalKind.EVICTION,
                at,
                summary=(
                    f"pod {row['namespace']}/{row['pod']} evicted from {row['node'] or '?'} "
                    f"({row['kind']}, {row['resource'] or 'unknown resource'}){used}"
                ),
                source="evictions",
                detail=(
                    "kind",
                    "resource",
                    "threshold",
                    "available",
                    "container",
                    "usage",
                    "request",
                    "message",
                    "source",
                ),
            )
        )
    return signals


def _oom_kills(
    connection: Connection, clusters: list[str], low: float, high: float
) -> list[Signal]:
    t = schema.terminations.c
    when = func.coalesce(t.finished_at, t.recorded_at)
    query = select(schema.terminations).where(
        t.cluster.in_(clusters), t.reason == "OOMKilled", _in_range(when, low, high)
    )
    signals = []
    for row in checking.check_all("terminations", connection.execute(query).mappings()):
        at = _when(row["finished_at"] if row["finished_at"] is not None else row["recorded_at"])
        assert at is not None
        limit = f", limit {_bytes(row['memory_limit'])}" if row["memory_limit"] else ""
        signals.append(
            _pod_signal(
                row,
                SignalKind.OOM_KILL,
                at,
                summary=(
                    f"container {row['container']} of pod {row['namespace']}/{row['pod']} "
                    f"OOM-killed on {row['node'] or '?'} (exit {row['exit_code']}{limit}, "
                    f"restart {row['restart_count']})"
                ),
                source="terminations",
                detail=(
                    "container",
                    "exit_code",
                    "restart_count",
                    "memory_request",
                    "memory_limit",
                    "message",
                ),
            )
        )
    return signals


def _transitions(
    connection: Connection, clusters: list[str], low: float, high: float
) -> list[Signal]:
    n = schema.node_transitions.c
    query = select(schema.node_transitions).where(
        n.cluster.in_(clusters),
        _in_range(n.at, low, high),
        or_(
            and_(n.condition == "Ready", n.status.in_(("False", "Unknown"))),
            and_(n.condition.in_(_PRESSURES), n.status == "True"),
        ),
    )
    signals = []
    for row in checking.check_all("node_transitions", connection.execute(query).mappings()):
        at = _when(row["at"])
        assert at is not None
        ready = row["condition"] == "Ready"
        why = ": ".join(part for part in (row["reason"], row["message"]) if part)
        signals.append(
            Signal(
                kind=SignalKind.NODE_NOT_READY if ready else SignalKind.NODE_PRESSURE,
                at=at,
                cluster=row["cluster"],
                namespace="",
                object_kind="Node",
                object_name=row["node"],
                node=row["node"],
                summary=(
                    f"node {row['node']} {row['condition']}={row['status']}"
                    + (f" (was {row['previous']})" if row["previous"] else "")
                    + (f": {why}" if why else "")
                ),
                source="node_transitions",
                source_id=str(row["id"]),
                detail=_detail(row, ("condition", "status", "previous", "reason", "message")),
            )
        )
    return signals


def _events(
    connection: Connection,
    clusters: list[str],
    namespaces: list[str],
    low: float,
    high: float,
    *,
    evicted: set[tuple[str, str, str]],
) -> list[Signal]:
    e = schema.events.c
    first = func.coalesce(e.first_seen, e.last_seen, e.recorded_at)
    last = func.coalesce(e.last_seen, e.first_seen, e.recorded_at)
    query = select(schema.events).where(
        e.cluster.in_(clusters),
        last >= low,
        first <= high,
        or_(e.type == "Warning", e.reason.in_(sorted(NORMAL_REASONS))),
        or_(e.object_kind == "Node", e.object_namespace.in_(namespaces)),
    )
    signals = []
    for row in checking.check_all("events", connection.execute(query).mappings()):
        signal = _event_signal(row)
        if signal is None:
            continue
        if signal.kind is SignalKind.EVICTION and (
            (signal.cluster, signal.namespace, signal.object_name) in evicted
        ):
            continue  # the evictions table has it, merged from the pod's status and this event
        signals.append(signal)
    return signals


def _event_kind(reason: str, object_kind: str) -> SignalKind:
    if reason == "FailedScheduling":
        return SignalKind.POD_PENDING
    if object_kind == "Pod" and (reason.startswith("OutOf") or reason in ADMISSION_REASONS):
        return SignalKind.FAILED_POD
    if reason == "Evicted" and object_kind == "Pod":
        return SignalKind.EVICTION
    if reason in ("OOMKilling", "SystemOOM") and object_kind == "Node":
        return SignalKind.NODE_OOM
    return SignalKind.EVENT


def _event_signal(row: Mapping[Any, Any]) -> Signal | None:
    at = _when(row["first_seen"] or row["last_seen"] or row["recorded_at"])
    until = _when(row["last_seen"] or row["first_seen"] or row["recorded_at"])
    if at is None:
        return None
    if row["reason"] == "Killing" and "probe" not in row["message"]:
        return None  # a container stopped on deletion or scale-down: not part of any story
    kind = _event_kind(row["reason"], row["object_kind"])
    namespace = row["object_namespace"]
    # The node an event happened on: the Node it is about, or the kubelet that reported it
    # (other components' hosts, e.g. the scheduler's, say nothing about where the pod was).
    if row["object_kind"] == "Node":
        node = row["object_name"]
    else:
        node = row["host"] if row["source"] == "kubelet" else ""
    times = f" x{row['count']}" if row["count"] > 1 else ""
    what = f"{row['object_kind']} {namespace + '/' if namespace else ''}{row['object_name']}"
    return Signal(
        kind=kind,
        at=at,
        until=until,
        cluster=row["cluster"],
        namespace=namespace,
        object_kind=row["object_kind"],
        object_name=row["object_name"],
        node=node,
        summary=f"{row['reason']}{times} on {what}: {row['message']}",
        source="events",
        source_id=str(row["id"]),
        workload=_event_workload(row),
        count=max(int(row["count"]), 1),
        detail=_detail(row, ("type", "reason", "message", "source", "host", "count", "uid")),
    )


def _event_workload(row: Mapping[Any, Any]) -> str:
    """The workload an event is about: a pod's (read from its name), or the namespaced object
    itself (a Deployment's events, such as the storm breaker's, tell its incident's story)."""
    namespace, kind, name = row["object_namespace"], row["object_kind"], row["object_name"]
    if kind == "Pod":
        return workload_of_pod(namespace, name)
    if namespace and kind and name:
        return workload_of_pod(namespace, "", owner_kind=kind, owner_name=name)
    return ""


def _detail(row: Mapping[Any, Any], keys: Iterable[str]) -> Mapping[str, Any]:
    return {key: row[key] for key in keys}
