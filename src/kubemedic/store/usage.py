"""Reading back what right-sizing needs: containers' usage samples and their memory specs.

**Samples** are the metrics.k8s.io PodMetrics ``kubemedic run`` polled (one row per container
and poll, ``metric_samples`` with ``kind = 'pod'``), in (namespace, pod, container, time) order,
streamed so that a caller can keep only the pods it wants.

**Owners**: metrics name a pod, not its workload; the archived terminations and evictions
carry the pod's owner (``ownerReferences``' controller) when it was seen, which
``pod_owners`` collects. Pods without one are placed by their names by the caller.

**Memory specs**: the archive keeps no pod specs, but every archived termination carries the
container's memory request and limit at that moment, and an eviction the request of the
container the kubelet named; ``memory_specs`` returns them oldest first, so the last one per
container is the newest spec the archive knows.

Each reader takes ``named``: only pods called that or named after it (``named-...``, as every
controller names its pods: a ReplicaSet's ``hub-5d8f7c9b4-x7k2p``, a StatefulSet's ``db-0``), a
superset of one workload's pods the caller narrows down, read off the indexes leading with
cluster, namespace and pod (on SQLite as a byte range, exact under its BINARY collation).

Parameterised SQLAlchemy Core, the same on SQLite and PostgreSQL; times in and out are
timezone-aware UTC datetimes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select

from kubemedic.store import checking, queries, schema
from kubemedic.store.queries import Source

__all__ = [
    "ContainerSample",
    "MemorySpec",
    "container_samples",
    "memory_specs",
    "more_samples_than",
    "pod_owners",
]


@dataclass(frozen=True, slots=True)
class ContainerSample:
    """One usage sample of a pod's container: millicores and bytes (None when not reported)."""

    cluster: str
    namespace: str
    pod: str
    container: str
    at: datetime
    cpu_millicores: float | None
    memory_bytes: int | None


@dataclass(frozen=True, slots=True)
class MemorySpec:
    """A container's memory request and limit (bytes, None when unset) as an archived row
    showed them at ``at``; ``source`` is ``termination`` or ``eviction``."""

    cluster: str
    namespace: str
    pod: str
    container: str
    owner_kind: str
    owner_name: str
    request: int | None
    limit: int | None
    at: datetime | None
    source: str


def _engine(source: Source) -> Any:
    return getattr(source, "engine", source)


def _epoch(when: datetime) -> float:
    return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()


def _when(seconds: float | None) -> datetime | None:
    if seconds is None:
        return None
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, ValueError, OSError):
        return None


def _scope(
    table: Any,
    *,
    cluster: str | None,
    namespace: str | None,
    named: str | None = None,
    column: str = "pod",
    dialect: str = "",
) -> list[ColumnElement[bool]]:
    found: list[ColumnElement[bool]] = []
    if cluster is not None:
        found.append(table.c.cluster == cluster)
    if namespace:
        found.append(table.c.namespace == namespace)
    if named:
        found.append(queries.pods_named(table.c[column], named, dialect))
    return found


def _dialect(source: Source) -> str:
    return str(_engine(source).dialect.name)


def container_samples(
    source: Source,
    *,
    cluster: str | None = None,
    namespace: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    named: str | None = None,
) -> Iterator[ContainerSample]:
    """Every pod container's sample in the window, by namespace, pod, container and time."""
    m = schema.metric_samples.c
    filters = [
        m.kind == "pod",
        *_scope(
            schema.metric_samples,
            cluster=cluster,
            namespace=namespace,
            named=named,
            column="name",
            dialect=_dialect(source),
        ),
    ]
    if since is not None:
        filters.append(m.at >= _epoch(since))
    if until is not None:
        filters.append(m.at <= _epoch(until))
    query = (
        select(m.cluster, m.namespace, m.name, m.container, m.at, m.cpu_millicores, m.memory_bytes)
        .where(*filters)
        .order_by(m.cluster, m.namespace, m.name, m.container, m.at)
    )
    with _engine(source).connect() as connection:
        for row in connection.execution_options(yield_per=5000).execute(query).mappings():
            checking.check("metric_samples", row)
            at = _when(row["at"])
            if at is None:
                continue
            yield ContainerSample(
                cluster=row["cluster"],
                namespace=row["namespace"],
                pod=row["name"],
                container=row["container"],
                at=at,
                cpu_millicores=row["cpu_millicores"],
                memory_bytes=row["memory_bytes"],
            )


def more_samples_than(
    limit: int,
    source: Source,
    *,
    cluster: str | None = None,
    namespace: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> bool:
    """Whether ``container_samples`` would read more than ``limit`` samples (it stops counting
    there, so a huge archive answers as fast as a small one)."""
    m = schema.metric_samples.c
    filters = [
        m.kind == "pod",
        *_scope(schema.metric_samples, cluster=cluster, namespace=namespace),
    ]
    if since is not None:
        filters.append(m.at >= _epoch(since))
    if until is not None:
        filters.append(m.at <= _epoch(until))
    some = select(m.at).where(*filters).limit(limit + 1).subquery()
    with _engine(source).connect() as connection:
        return int(connection.execute(select(func.count()).select_from(some)).scalar() or 0) > limit


def pod_owners(
    source: Source,
    *,
    cluster: str | None = None,
    namespace: str | None = None,
    named: str | None = None,
) -> dict[tuple[str, str, str], tuple[str, str]]:
    """``(cluster, namespace, pod) -> (owner kind, owner name)`` for every pod an archived
    termination or eviction names with an owner."""
    found: dict[tuple[str, str, str], tuple[str, str]] = {}
    with _engine(source).connect() as connection:
        for table in (schema.terminations, schema.evictions):
            c = table.c
            query = (
                select(c.cluster, c.namespace, c.pod, c.owner_kind, c.owner_name)
                .where(
                    c.owner_kind != "",
                    c.owner_name != "",
                    *_scope(
                        table,
                        cluster=cluster,
                        namespace=namespace,
                        named=named,
                        dialect=_dialect(source),
                    ),
                )
                .distinct()
            )
            for row in connection.execute(query).mappings():
                checking.check(table.name, row)
                key = (row["cluster"], row["namespace"], row["pod"])
                found.setdefault(key, (row["owner_kind"], row["owner_name"]))
    return found


def memory_specs(
    source: Source,
    *,
    cluster: str | None = None,
    namespace: str | None = None,
    named: str | None = None,
) -> list[MemorySpec]:
    """The memory request and limit of every archived termination, and the request of every
    evicted container the kubelet named, oldest first (undated ones first)."""
    t, v = schema.terminations.c, schema.evictions.c
    found: list[MemorySpec] = []
    kills = select(
        t.cluster,
        t.namespace,
        t.pod,
        t.container,
        t.owner_kind,
        t.owner_name,
        t.memory_request,
        t.memory_limit,
        t.finished_at,
    ).where(
        (t.memory_request.is_not(None)) | (t.memory_limit.is_not(None)),
        *_scope(
            schema.terminations,
            cluster=cluster,
            namespace=namespace,
            named=named,
            dialect=_dialect(source),
        ),
    )
    evicted = select(
        v.cluster, v.namespace, v.pod, v.container, v.owner_kind, v.owner_name, v.request, v.at
    ).where(
        v.resource == "memory",
        v.container != "",
        v.request.is_not(None),
        *_scope(
            schema.evictions,
            cluster=cluster,
            namespace=namespace,
            named=named,
            dialect=_dialect(source),
        ),
    )
    with _engine(source).connect() as connection:
        for row in connection.execute(kills).mappings():
            checking.check("terminations", row)
            found.append(
                MemorySpec(
                    row["cluster"],
                    row["namespace"],
                    row["pod"],
                    row["container"],
                    row["owner_kind"],
                    row["owner_name"],
                    row["memory_request"],
                    row["memory_limit"],
                    _when(row["finished_at"]),
                    "termination",
                )
            )
        for row in connection.execute(evicted).mappings():
            checking.check("evictions", row)
            found.append(
                MemorySpec(
                    row["cluster"],
                    row["namespace"],
                    row["pod"],
                    row["container"],
                    row["owner_kind"],
                    row["owner_name"],
                    row["request"],
                    None,
                    _when(row["at"]),
                    "eviction",
                )
            )
    earliest = datetime.min.replace(tzinfo=UTC)
    found.sort(key=lambda spec: spec.at or earliest)
    return found
