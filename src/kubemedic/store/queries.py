"""Reading the archive back: the questions ``kubemedic events`` and ``kubemedic oom`` answer.

Every query is SQLAlchemy Core with bound parameters and runs unchanged on SQLite and
PostgreSQL. Functions take an ``Engine`` or anything with an ``.engine`` (an open archive).

Times go in and come out as timezone-aware datetimes (UTC); the tables hold epoch seconds.

**Events** are filtered the way ``kubectl get events`` would be if the API server had kept
them: by reason, type, namespace, involved object (``--object pod/hub-...``, the kind in any
of kubectl's spellings), node, time window and a case-insensitive text search. An event
matches a window when it was seen inside it: its ``lastTimestamp`` is at or after ``since`` and
its ``firstTimestamp`` at or before ``until``, so a deduplicated event that kept recurring
through the window is found whichever end is asked about.

**OOM report**: the kernel's OOM kills (terminations with reason ``OOMKilled``: the kubelet
reads the reason from the runtime, which reads the cgroup's ``memory.events`` oom_kill count,
so a container killed for exceeding its own limit) and the kubelet's evictions, merged in time
order. A kill's usage is the container's last metrics sample at most ``SAMPLE_MAX_AGE`` before
it (metrics-server scrapes every 15-60 s, so a sample shows how close to the limit it ran);
without one, the limit itself stands in, as a lower bound: a container is OOM-killed when it
tries to use more than its limit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import ColumnElement, Engine, and_, func, or_, select, union

from kubemedic.store import checking, schema
from kubemedic.store.records import EventRow

__all__ = [
    "KIND_ALIASES",
    "ArchivedEvent",
    "CountSeen",
    "EventQuery",
    "OomEntry",
    "clusters",
    "find_events",
    "newest_event_time",
    "oom_report",
    "parse_object",
    "pods_named",
    "resolve_kind",
]

SAMPLE_MAX_AGE = timedelta(minutes=10)
"""How old a metrics sample may be and still stand for a container's usage when it was killed."""

_CHUNK = 500
"""Bound parameters per ``IN (...)``: far below SQLite's and PostgreSQL's limits."""


class _HasEngine(Protocol):
    @property
    def engine(self) -> Engine: ...


Source = Engine | _HasEngine
"""An ``Engine``, or an object holding one as ``.engine`` (an open archive)."""


def _engine(source: Source) -> Engine:
    return source if isinstance(source, Engine) else source.engine


def _epoch(when: datetime) -> float:
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


def _when(seconds: float | None) -> datetime | None:
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, ValueError, OSError):
        return None


# -- kinds ------------------------------------------------------------------------------------

_KINDS = {
    "Pod": ("pods", "po"),
    "Node": ("nodes", "no"),
    "Deployment": ("deployments", "deploy"),
    "ReplicaSet": ("replicasets", "rs"),
    "StatefulSet": ("statefulsets", "sts"),
    "DaemonSet": ("daemonsets", "ds"),
    "Job": ("jobs",),
    "CronJob": ("cronjobs", "cj"),
    "Service": ("services", "svc"),
    "Endpoints": ("ep",),
    "Ingress": ("ingresses", "ing"),
    "ConfigMap": ("configmaps", "cm"),
    "Namespace": ("namespaces", "ns"),
    "PersistentVolumeClaim": ("persistentvolumeclaims", "pvc"),
    "PersistentVolume": ("persistentvolumes", "pv"),
    "ServiceAccount": ("serviceaccounts", "sa"),
    "HorizontalPodAutoscaler": ("horizontalpodautoscalers", "hpa"),
    "PodDisruptionBudget": ("poddisruptionbudgets", "pdb"),
    "Lease": ("leases",),
    "Event": ("events", "ev"),
    "Machine": ("machines", "ma"),
    "MachineDeployment": ("machinedeployments", "md"),
    "MachineSet": ("machinesets", "ms"),
}

KIND_ALIASES: dict[str, str] = {
    alias: kind for kind, aliases in _KINDS.items() for alias in (kind.lower(), *aliases)
}
"""kubectl's names for a kind (singular, plural, short name; any case) -> the kind."""


def resolve_kind(text: str) -> str:
    """The kind ``text`` names: ``po``, ``pods``, ``Pod`` and ``pods.v1`` give ``Pod``;
    ``deployments.apps`` gives ``Deployment``. An unknown name (a custom resource) is returned
    as written and matched case-insensitively."""
    name = text.strip()
    return KIND_ALIASES.get(name.lower()) or KIND_ALIASES.get(name.split(".", 1)[0].lower()) or name


def parse_object(text: str) -> tuple[str, str]:
    """``KIND/NAME`` (``pod/hub-5d8f7c9b4-x7k2p``, ``no/core-2``) as ``(kind, name)``; raises
    ``ValueError`` saying what is expected."""
    kind, slash, name = text.partition("/")
    if not slash or not kind.strip() or not name.strip() or "/" in name:
        raise ValueError(f"{text!r} is not KIND/NAME, e.g. pod/hub-5d8f7c9b4-x7k2p or node/core-2")
    return resolve_kind(kind), name.strip()


# -- events -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EventQuery:
    """What to look for; None (or "") leaves a filter out. ``cluster`` None is every cluster;
    ``limit`` keeps the newest that many (still returned oldest first)."""

    cluster: str | None = None
    reason: str | None = None
    type: str | None = None
    namespace: str | None = None
    object_kind: str | None = None
    object_name: str | None = None
    node: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    grep: str | None = None
    limit: int | None = None


@dataclass(frozen=True, slots=True)
class CountSeen:
    """An event's ``count`` as observed, with the ``lastTimestamp`` it carried then."""

    count: int
    last_seen: datetime | None


@dataclass(frozen=True, slots=True)
class ArchivedEvent(EventRow):
    """An archived event: the row, its cluster, when the API server deleted it (None while it
    still exists, as far as the recorder saw) and each count it was seen at, oldest first."""

    cluster: str
    deleted_at: datetime | None
    counts: tuple[CountSeen, ...]

    @property
    def gone(self) -> bool:
        """Deleted by the API server (event TTL): ``kubectl get events`` no longer shows it."""
        return self.deleted_at is not None


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _event_filters(q: EventQuery) -> list[ColumnElement[bool]]:
    e = schema.events.c
    found: list[ColumnElement[bool]] = []
    if q.cluster is not None:
        found.append(e.cluster == q.cluster)
    if q.reason:
        found.append(e.reason == q.reason)
    if q.type:
        found.append(func.lower(e.type) == q.type.lower())
    if q.namespace:
        found.append(e.namespace == q.namespace)
    if q.object_kind:
        found.append(func.lower(e.object_kind) == resolve_kind(q.object_kind).lower())
    if q.object_name:
        found.append(e.object_name == q.object_name)
    if q.node:
        found.append(e.node == q.node)
    if q.since is not None:
        found.append(e.last_seen >= _epoch(q.since))
    if q.until is not None:
        found.append(func.coalesce(e.first_seen, e.last_seen) <= _epoch(q.until))
    if q.grep:
        pattern = _like(q.grep)
        found.append(
            or_(
                e.message.ilike(pattern, escape="\\"),
                e.reason.ilike(pattern, escape="\\"),
                e.object_name.ilike(pattern, escape="\\"),
            )
        )
    return found


_SECONDS = (float, int, type(None))
"""What a time column may hold (checked in full by ``checking`` when it holds anything else)."""


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


def _counts(engine: Engine, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Any]]:
    by_cluster: dict[str, list[str]] = defaultdict(list)
    for cluster, uid in keys:
        by_cluster[cluster].append(uid)
    c = schema.event_counts.c
    found: dict[tuple[str, str], list[Any]] = defaultdict(list)
    with engine.connect() as connection:
        for cluster, uids in by_cluster.items():
            for chunk in _chunks(uids):
                query = (
                    select(c.uid, c.count, c.last_seen)
                    .where(c.cluster == cluster, c.uid.in_(chunk))
                    .order_by(c.uid, c.count)
                )
                for uid, count, last_seen in connection.execute(query):
                    if type(count) is not int or type(last_seen) not in _SECONDS:
                        row = {"cluster": cluster, "uid": uid, "count": count}
                        checking.check("event_counts", {**row, "last_seen": last_seen})
                    found[(cluster, uid)].append(CountSeen(count, _when(last_seen)))
    return found


def find_events(source: Source, q: EventQuery) -> list[ArchivedEvent]:
    """The archived events matching ``q``, ordered by last then first seen (events never seen
    with a time first)."""
    engine = _engine(source)
    e = schema.events.c
    query = select(schema.events).where(*_event_filters(q))
    if q.limit is not None:
        query = query.order_by(
            e.last_seen.desc().nulls_last(), e.first_seen.desc().nulls_last(), e.id.desc()
        ).limit(max(q.limit, 0))
    else:
        query = query.order_by(
            e.last_seen.asc().nulls_first(), e.first_seen.asc().nulls_first(), e.id
        )
    with engine.connect() as connection:
        rows = checking.check_all("events", connection.execute(query).mappings())
    if q.limit is not None:
        rows.reverse()
    counts = _counts(engine, ((row["cluster"], row["uid"]) for row in rows))
    return [
        ArchivedEvent(
            uid=row["uid"],
            api_version=row["api_version"],
            namespace=row["namespace"],
            name=row["name"],
            type=row["type"],
            reason=row["reason"],
            message=row["message"],
            object_kind=row["object_kind"],
            object_namespace=row["object_namespace"],
            object_name=row["object_name"],
            object_uid=row["object_uid"],
            field_path=row["field_path"],
            source=row["source"],
            host=row["host"],
            node=row["node"],
            count=row["count"],
            first_seen=_when(row["first_seen"]),
            last_seen=_when(row["last_seen"]),
            resource_version=row["resource_version"],
            cluster=row["cluster"],
            deleted_at=_when(row["deleted_at"]),
            counts=tuple(counts.get((row["cluster"], row["uid"]), ())),
        )
        for row in rows
    ]


def newest_event_time(source: Source, *, cluster: str | None = None) -> datetime | None:
    """The latest ``lastTimestamp`` archived (of ``cluster``, or of all): "now" as far as the
    archive knows, which is what ages are counted from when the recorder ran in the past or
    against a simulator's clock."""
    e = schema.events.c
    query = select(func.max(e.last_seen))
    if cluster is not None:
        query = query.where(e.cluster == cluster)
    with _engine(source).connect() as connection:
        newest = connection.execute(query).scalar()
        try:
            checking.check_value("events", "last_seen", newest)
        except checking.RowError:
            # SQLite's max() ranks text above every number: find the row holding it.
            row = (
                connection.execute(select(e.id, e.last_seen).where(e.last_seen == newest).limit(1))
                .mappings()
                .first()
            )
            checking.check("events", row if row is not None else {"last_seen": newest})
            raise
        return _when(newest)


def clusters(source: Source) -> list[str]:
    """Every cluster with anything in the archive, sorted."""
    tables = (
        schema.events,
        schema.terminations,
        schema.evictions,
        schema.node_transitions,
        schema.metric_samples,
        schema.findings,
        schema.checkpoints,
    )
    query = union(*(select(table.c.cluster) for table in tables))
    with _engine(source).connect() as connection:
        return sorted(str(cluster) for (cluster,) in connection.execute(query))


# -- OOM kills and evictions ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OomEntry:
    """One OOM kill or eviction. Amounts are bytes, or millicores when ``resource`` is
    ``cpu``. ``usage_source`` says where ``usage`` came from: ``metrics`` (the last sample
    before the kill, taken at ``usage_at``), ``message`` (the kubelet's eviction message),
    ``limit`` (no sample: the kill proves usage reached at least the limit) or ""."""

    kind: str
    time: datetime | None
    cluster: str
    namespace: str
    pod: str
    pod_uid: str
    container: str
    node: str
    owner_kind: str
    owner_name: str
    resource: str
    usage: int | None
    usage_source: str
    usage_at: datetime | None
    request: int | None
    limit: int | None
    restart_count: int | None
    exit_code: int | None
    threshold: str
    available: str
    message: str


def _window(
    column: Any, since: datetime | None, until: datetime | None
) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = []
    if since is not None:
        found.append(column >= _epoch(since))
    if until is not None:
        found.append(column <= _epoch(until))
    return found


def _last_sample(
    connection: Any, *, cluster: str, namespace: str, pod: str, container: str, at: float
) -> tuple[int, float] | None:
    m = schema.metric_samples.c
    query = (
        select(m.memory_bytes, m.at)
        .where(
            m.cluster == cluster,
            m.kind == "pod",
            m.namespace == namespace,
            m.name == pod,
            m.container == container,
            m.memory_bytes.is_not(None),
            m.at <= at,
            m.at >= at - SAMPLE_MAX_AGE.total_seconds(),
        )
        .order_by(m.at.desc())
        .limit(1)
    )
    found = connection.execute(query).mappings().first()
    if found is None:
        return None
    checking.check("metric_samples", found)
    return int(found["memory_bytes"]), float(found["at"])


def _oom_kills(connection: Any, filters: list[ColumnElement[bool]]) -> list[OomEntry]:
    t = schema.terminations.c
    found: list[OomEntry] = []
    query = select(schema.terminations).where(t.reason == "OOMKilled", *filters)
    for row in checking.check_all("terminations", connection.execute(query).mappings()):
        usage, source, usage_at = row["memory_limit"], "limit", None
        if row["finished_at"] is not None:
            sample = _last_sample(
                connection,
                cluster=row["cluster"],
                namespace=row["namespace"],
                pod=row["pod"],
                container=row["container"],
                at=row["finished_at"],
            )
            if sample is not None:
                usage, source, usage_at = sample[0], "metrics", _when(sample[1])
        found.append(
            OomEntry(
                kind="oom-kill",
                time=_when(row["finished_at"]),
                cluster=row["cluster"],
                namespace=row["namespace"],
                pod=row["pod"],
                pod_uid=row["pod_uid"],
                container=row["container"],
                node=row["node"],
                owner_kind=row["owner_kind"],
                owner_name=row["owner_name"],
                resource="memory",
                usage=usage,
                usage_source=source if usage is not None else "",
                usage_at=usage_at,
                request=row["memory_request"],
                limit=row["memory_limit"],
                restart_count=row["restart_count"],
                exit_code=row["exit_code"],
                threshold="",
                available="",
                message=row["message"],
            )
        )
    return found


def _container_facts(
    connection: Any, *, cluster: str, pod_uid: str, container: str
) -> tuple[int | None, int | None]:
    """The memory limit and highest restart count archived for a pod's container."""
    t = schema.terminations.c
    query = select(func.max(t.memory_limit), func.max(t.restart_count)).where(
        t.cluster == cluster, t.pod_uid == pod_uid, t.container == container
    )
    found = connection.execute(query).first()
    if found is None:
        return None, None
    checking.check_value("terminations", "memory_limit", found[0])
    checking.check_value("terminations", "restart_count", found[1])
    return found[0], found[1]


def _evictions(connection: Any, filters: list[ColumnElement[bool]]) -> list[OomEntry]:
    found: list[OomEntry] = []
    query = select(schema.evictions).where(*filters)
    for row in checking.check_all("evictions", connection.execute(query).mappings()):
        limit, restarts = None, None
        if row["container"]:
            limit, restarts = _container_facts(
                connection,
                cluster=row["cluster"],
                pod_uid=row["pod_uid"],
                container=row["container"],
            )
        found.append(
            OomEntry(
                kind="eviction",
                time=_when(row["at"]),
                cluster=row["cluster"],
                namespace=row["namespace"],
                pod=row["pod"],
                pod_uid=row["pod_uid"],
                container=row["container"],
                node=row["node"],
                owner_kind=row["owner_kind"],
                owner_name=row["owner_name"],
                resource=row["resource"],
                usage=row["usage"],
                usage_source="message" if row["usage"] is not None else "",
                usage_at=None,
                request=row["request"],
                limit=limit if row["resource"] == "memory" else None,
                restart_count=restarts,
                exit_code=None,
                threshold=row["threshold"],
                available=row["available"],
                message=row["message"],
            )
        )
    return found


def pods_named(column: Any, named: str, dialect: str) -> ColumnElement[bool]:
    """Pods called ``named`` or named after it (``named-...``, as every controller names its
    pods: a superset of one workload's pods, read off an index leading with the pod's name; on
    SQLite a byte range under its BINARY collation, elsewhere a LIKE prefix)."""
    if dialect == "sqlite":
        # One byte range, so that SQLite walks the index ("-" + 1 is "."): [named, named.)
        # holds named and every named-... (and names such as "named+" no pod may have).
        return and_(column >= named, column < named + ".")
    escaped = named.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return or_(column == named, column.like(escaped + "-%", escape="\\"))


def oom_report(
    source: Source,
    *,
    cluster: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    namespace: str | None = None,
    node: str | None = None,
    named: str | None = None,
) -> list[OomEntry]:
    """OOM kills and kubelet evictions in time order (undated ones last); ``named``: only of
    pods called that or named after it (``pods_named``)."""
    t, v = schema.terminations.c, schema.evictions.c
    kill_filters = _window(t.finished_at, since, until)
    eviction_filters = _window(v.at, since, until)
    dialect = _engine(source).dialect.name
    for table, filters in ((t, kill_filters), (v, eviction_filters)):
        if cluster is not None:
            filters.append(table.cluster == cluster)
        if namespace:
            filters.append(table.namespace == namespace)
        if node:
            filters.append(table.node == node)
        if named:
            filters.append(pods_named(table.pod, named, dialect))
    with _engine(source).connect() as connection:
        entries = _oom_kills(connection, kill_filters) + _evictions(connection, eviction_filters)
    far = datetime.max.replace(tzinfo=UTC)
    entries.sort(key=lambda entry: (entry.time or far, entry.namespace, entry.pod, entry.kind))
    return entries
