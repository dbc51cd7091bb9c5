"""The archive's tables (SQLAlchemy Core), shared by SQLite and PostgreSQL.

Conventions, so one schema serves both databases and upserts stay idempotent:

* every row carries ``cluster`` (the kubeconfig context's cluster name, or ``--cluster``), so one
  archive can hold several clusters;
* text columns that may be absent (a cluster-scoped object's namespace, a pod's node before
  scheduling) hold ``""``, never NULL: SQL treats NULLs as distinct in unique constraints, which
  would let a replayed row in twice;
* times are float seconds since the Unix epoch (UTC), microseconds kept: they compare, index and
  sort the same way in both databases and cost nothing to convert on a 20,000 rows/s ingest;
* JSON payloads (a finding's evidence) are text holding JSON.

The natural keys (the unique constraints below) are what make a replay harmless: a restarted
recorder, a relist after ``410 Gone`` or a second replica writes the same key and updates the row
in place instead of adding one.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
)

__all__ = [
    "checkpoints",
    "event_counts",
    "events",
    "evictions",
    "findings",
    "metadata",
    "metric_samples",
    "node_transitions",
    "terminations",
]

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)


def _id() -> Column[int]:
    # BigInteger on PostgreSQL; on SQLite an INTEGER PRIMARY KEY is the rowid alias.
    return Column("id", BigInteger().with_variant(Integer(), "sqlite"), primary_key=True)


checkpoints = Table(
    "checkpoints",
    metadata,
    Column("cluster", Text, nullable=False),
    #: ``v1/events``, ``v1/pods``, ``v1/nodes``...: one per watched collection.
    Column("stream", Text, nullable=False),
    Column("resource_version", Text, nullable=False),
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("cluster", "stream"),
)
"""The last resourceVersion whose changes are all in the archive, per stream; written in the same
transaction as those changes, so a crash never leaves a checkpoint ahead of its data."""

events = Table(
    "events",
    metadata,
    _id(),
    Column("cluster", Text, nullable=False),
    Column("uid", Text, nullable=False),
    #: ``v1`` or ``events.k8s.io/v1``: the API the row was last read from.
    Column("api_version", Text, nullable=False),
    Column("namespace", Text, nullable=False, default=""),
    Column("name", Text, nullable=False),
    Column("type", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("object_kind", Text, nullable=False),
    Column("object_namespace", Text, nullable=False, default=""),
    Column("object_name", Text, nullable=False),
    Column("object_uid", Text, nullable=False, default=""),
    Column("field_path", Text, nullable=False, default=""),
    #: The reporting component (``kubelet``, ``default-scheduler``...).
    Column("source", Text, nullable=False, default=""),
    #: The reporting host: for kubelet events, the node.
    Column("host", Text, nullable=False, default=""),
    #: The node the event is about or came from (a Node object's name, else the host).
    Column("node", Text, nullable=False, default=""),
    Column("count", Integer, nullable=False),
    Column("first_seen", Float, nullable=True),
    Column("last_seen", Float, nullable=True),
    Column("resource_version", Text, nullable=False, default=""),
    #: When the API server deleted it (TTL expiry, usually one hour), as seen by a watch.
    Column("deleted_at", Float, nullable=True),
    Column("recorded_at", Float, nullable=False),
    UniqueConstraint("cluster", "uid"),
    Index(None, "cluster", "reason", "last_seen"),
    Index(None, "cluster", "type", "last_seen"),
    Index(None, "cluster", "namespace", "last_seen"),
    Index(None, "cluster", "object_kind", "object_name"),
    Index(None, "cluster", "node", "last_seen"),
    Index(None, "cluster", "last_seen"),
)
"""One row per event object, updated in place as its count grows."""

event_counts = Table(
    "event_counts",
    metadata,
    Column("cluster", Text, nullable=False),
    Column("uid", Text, nullable=False),
    Column("count", Integer, nullable=False),
    Column("last_seen", Float, nullable=True),
    PrimaryKeyConstraint("cluster", "uid", "count"),
)
"""Each count an event was observed at, with the lastTimestamp it carried then."""

terminations = Table(
    "terminations",
    metadata,
    _id(),
    Column("cluster", Text, nullable=False),
    Column("pod_uid", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("pod", Text, nullable=False),
    Column("container", Text, nullable=False),
    #: Stable identity of this termination within the container: the containerID when the
    #: runtime gave one, else the start and finish times.
    Column("key", Text, nullable=False),
    Column("node", Text, nullable=False, default=""),
    Column("owner_kind", Text, nullable=False, default=""),
    Column("owner_name", Text, nullable=False, default=""),
    Column("reason", Text, nullable=False, default=""),
    Column("exit_code", Integer, nullable=True),
    Column("signal", Integer, nullable=True),
    #: The container's restartCount once this termination was counted.
    Column("restart_count", Integer, nullable=False, default=0),
    Column("started_at", Float, nullable=True),
    Column("finished_at", Float, nullable=True),
    Column("message", Text, nullable=False, default=""),
    Column("memory_request", BigInteger, nullable=True),
    Column("memory_limit", BigInteger, nullable=True),
    Column("recorded_at", Float, nullable=False),
    UniqueConstraint("cluster", "pod_uid", "container", "key"),
    Index(None, "cluster", "reason", "finished_at"),
    Index(None, "cluster", "node", "finished_at"),
    Index(None, "cluster", "namespace", "pod"),
)
"""Container terminations read from pod statuses (``state.terminated``, ``lastState.terminated``):
OOM kills, errors, completions."""

evictions = Table(
    "evictions",
    metadata,
    _id(),
    Column("cluster", Text, nullable=False),
    Column("pod_uid", Text, nullable=False),
    Column("namespace", Text, nullable=False),
    Column("pod", Text, nullable=False),
    Column("node", Text, nullable=False, default=""),
    Column("owner_kind", Text, nullable=False, default=""),
    Column("owner_name", Text, nullable=False, default=""),
    Column("at", Float, nullable=True),
    #: ``kubemedic.model.eviction.DisruptionKind`` value (node-pressure, storage-limit...).
    Column("kind", Text, nullable=False),
    #: The starved resource (``memory``, ``ephemeral-storage``...).
    Column("resource", Text, nullable=False, default=""),
    Column("threshold", Text, nullable=False, default=""),
    Column("available", Text, nullable=False, default=""),
    #: The largest consumer the kubelet named, with its usage and request in bytes (or
    #: millicores for CPU-like resources), when the message named one.
    Column("container", Text, nullable=False, default=""),
    Column("usage", BigInteger, nullable=True),
    Column("request", BigInteger, nullable=True),
    Column("message", Text, nullable=False, default=""),
    #: ``pod-status`` and/or ``event``: where it was read (comma-joined when both).
    Column("source", Text, nullable=False),
    Column("recorded_at", Float, nullable=False),
    UniqueConstraint("cluster", "pod_uid"),
    Index(None, "cluster", "at"),
    Index(None, "cluster", "node", "at"),
)
"""One row per evicted pod, merged from its status and its ``Evicted`` event."""

node_transitions = Table(
    "node_transitions",
    metadata,
    _id(),
    Column("cluster", Text, nullable=False),
    Column("node", Text, nullable=False),
    Column("condition", Text, nullable=False),
    Column("status", Text, nullable=False),
    #: The status before, as last recorded ("" when first seen).
    Column("previous", Text, nullable=False, default=""),
    Column("reason", Text, nullable=False, default=""),
    Column("message", Text, nullable=False, default=""),
    #: The condition's lastTransitionTime.
    Column("at", Float, nullable=False),
    Column("recorded_at", Float, nullable=False),
    UniqueConstraint("cluster", "node", "condition", "at", "status"),
    Index(None, "cluster", "node", "at"),
    Index(None, "cluster", "at"),
)
"""Node condition changes (Ready, MemoryPressure...): one row per transition."""

metric_samples = Table(
    "metric_samples",
    metadata,
    Column("cluster", Text, nullable=False),
    #: ``pod`` (one row per container) or ``node``.
    Column("kind", Text, nullable=False),
    Column("namespace", Text, nullable=False, default=""),
    Column("name", Text, nullable=False),
    Column("container", Text, nullable=False, default=""),
    Column("node", Text, nullable=False, default=""),
    Column("at", Float, nullable=False),
    Column("window_seconds", Float, nullable=True),
    Column("cpu_millicores", Float, nullable=True),
    Column("memory_bytes", BigInteger, nullable=True),
    PrimaryKeyConstraint("cluster", "kind", "namespace", "name", "container", "at"),
    Index(None, "cluster", "node", "at"),
)
"""metrics.k8s.io samples, kept for right-sizing and for the usage beside an OOM kill."""

findings = Table(
    "findings",
    metadata,
    _id(),
    Column("cluster", Text, nullable=False),
    #: Hash of (check, object, cause): one finding's identity across scans.
    Column("fingerprint", Text, nullable=False),
    Column("check", Text, nullable=False),
    Column("severity", Text, nullable=False),
    Column("object_api_version", Text, nullable=False, default=""),
    Column("object_kind", Text, nullable=False),
    Column("object_namespace", Text, nullable=False, default=""),
    Column("object_name", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("evidence", Text, nullable=False, default="{}"),
    Column("cause", Text, nullable=False),
    #: An episode: from the first scan that found it to the last, until it has been absent for
    #: longer than the writer's reopen gap (then a new row starts).
    Column("first_seen", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("scans", Integer, nullable=False, default=1),
    UniqueConstraint("cluster", "fingerprint", "first_seen"),
    Index(None, "cluster", "cause", "first_seen"),
    Index(None, "cluster", "last_seen"),
    Index(None, "cluster", "fingerprint", "last_seen"),
)
"""Findings of the daemon's scans, one row per episode."""
