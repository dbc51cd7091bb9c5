"""The archive's tables (SQLAlchemy Core), shared by SQLite and PostgreSQL.

Conventions, so one schema serves both databases and upserts stay idempotent:

* every row carries ``cluster`` (the kubeconfig context's cluster name, or ``--cluster``), so one
  archive can hold several clusters;
* text columns that may be absent (a cluster-scoped object's namespace, a pod's node before
  scheduling) hold ``""``, never NULL: SQL treats NULLs as distinct in unique constraints, which
  would let a replayed row in twice;
* times are float seconds since the Unix epoch (UTC), microseconds kept: they compare, index and
  sort the same way in both databases and cost nothing to convert on a 20,000 rows/s ingest;
* JSON payloads (a finding's evidence) are text holding JSON;
* text compares byte by byte on both databases (``TEXT``: ``COLLATE "C"`` on PostgreSQL, as
  SQLite's ``BINARY``), so both order and match rows alike whatever the server's locale.

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
    "TEXT",
    "breaker_decisions",
    "breaker_state",
    "checkpoints",
    "event_counts",
    "events",
    "evictions",
    "findings",
    "metadata",
    "metric_samples",
    "node_states",
    "node_transitions",
    "notifications",
    "repair_decisions",
    "repair_ledger",
    "repairs",
    "terminations",
]

TEXT = Text().with_variant(Text(collation="C"), "postgresql")
"""Text in byte order on PostgreSQL too: one ordering on both databases, and index comparisons
by ``memcmp`` instead of the locale's ``strcoll`` (measured on the ingest bench: ~10% of the
server's time per event, the events table having seven indexes over text)."""

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
    Column("cluster", TEXT, nullable=False),
    #: ``v1/events``, ``v1/pods``, ``v1/nodes``...: one per watched collection.
    Column("stream", TEXT, nullable=False),
    Column("resource_version", TEXT, nullable=False),
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("cluster", "stream"),
)
"""The last resourceVersion whose changes are all in the archive, per stream; written in the same
transaction as those changes, so a crash never leaves a checkpoint ahead of its data."""

events = Table(
    "events",
    metadata,
    _id(),
    Column("cluster", TEXT, nullable=False),
    Column("uid", TEXT, nullable=False),
    #: ``v1`` or ``events.k8s.io/v1``: the API the row was last read from.
    Column("api_version", TEXT, nullable=False),
    Column("namespace", TEXT, nullable=False, default=""),
    Column("name", TEXT, nullable=False),
    Column("type", TEXT, nullable=False),
    Column("reason", TEXT, nullable=False),
    Column("message", TEXT, nullable=False),
    Column("object_kind", TEXT, nullable=False),
    Column("object_namespace", TEXT, nullable=False, default=""),
    Column("object_name", TEXT, nullable=False),
    Column("object_uid", TEXT, nullable=False, default=""),
    Column("field_path", TEXT, nullable=False, default=""),
    #: The reporting component (``kubelet``, ``default-scheduler``...).
    Column("source", TEXT, nullable=False, default=""),
    #: The reporting host: for kubelet events, the node.
    Column("host", TEXT, nullable=False, default=""),
    #: The node the event is about or came from (a Node object's name, else the host).
    Column("node", TEXT, nullable=False, default=""),
    Column("count", Integer, nullable=False),
    Column("first_seen", Float, nullable=True),
    Column("last_seen", Float, nullable=True),
    Column("resource_version", TEXT, nullable=False, default=""),
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
    Column("cluster", TEXT, nullable=False),
    Column("uid", TEXT, nullable=False),
    Column("count", Integer, nullable=False),
    Column("last_seen", Float, nullable=True),
    PrimaryKeyConstraint("cluster", "uid", "count"),
)
"""Each count an event was observed at, with the lastTimestamp it carried then."""

terminations = Table(
    "terminations",
    metadata,
    _id(),
    Column("cluster", TEXT, nullable=False),
    Column("pod_uid", TEXT, nullable=False),
    Column("namespace", TEXT, nullable=False),
    Column("pod", TEXT, nullable=False),
    Column("container", TEXT, nullable=False),
    #: Stable identity of this termination within the container: the containerID when the
    #: runtime gave one, else the start and finish times.
    Column("key", TEXT, nullable=False),
    Column("node", TEXT, nullable=False, default=""),
    Column("owner_kind", TEXT, nullable=False, default=""),
    Column("owner_name", TEXT, nullable=False, default=""),
    Column("reason", TEXT, nullable=False, default=""),
    Column("exit_code", Integer, nullable=True),
    Column("signal", Integer, nullable=True),
    #: The container's restartCount once this termination was counted.
    Column("restart_count", Integer, nullable=False, default=0),
    Column("started_at", Float, nullable=True),
    Column("finished_at", Float, nullable=True),
    Column("message", TEXT, nullable=False, default=""),
    Column("memory_request", BigInteger, nullable=True),
    Column("memory_limit", BigInteger, nullable=True),
    Column("recorded_at", Float, nullable=False),
    UniqueConstraint("cluster", "pod_uid", "container", "key"),
    Index(None, "cluster", "reason", "finished_at"),
    Index(None, "cluster", "node", "finished_at"),
    Index(None, "cluster", "namespace", "pod"),
    Index(None, "cluster", "finished_at"),
)
"""Container terminations read from pod statuses (``state.terminated``, ``lastState.terminated``):
OOM kills, errors, completions."""

evictions = Table(
    "evictions",
    metadata,
    _id(),
    Column("cluster", TEXT, nullable=False),
    Column("pod_uid", TEXT, nullable=False),
    Column("namespace", TEXT, nullable=False),
    Column("pod", TEXT, nullable=False),
    Column("node", TEXT, nullable=False, default=""),
    Column("owner_kind", TEXT, nullable=False, default=""),
    Column("owner_name", TEXT, nullable=False, default=""),
    Column("at", Float, nullable=True),
    #: ``kubemedic.model.eviction.DisruptionKind`` value (node-pressure, storage-limit...).
    Column("kind", TEXT, nullable=False),
    #: The starved resource (``memory``, ``ephemeral-storage``...).
    Column("resource", TEXT, nullable=False, default=""),
    Column("threshold", TEXT, nullable=False, default=""),
    Column("available", TEXT, nullable=False, default=""),
    #: The largest consumer the kubelet named, with its usage and request in bytes (or
    #: millicores for CPU-like resources), when the message named one.
    Column("container", TEXT, nullable=False, default=""),
    Column("usage", BigInteger, nullable=True),
    Column("request", BigInteger, nullable=True),
    Column("message", TEXT, nullable=False, default=""),
    #: ``pod-status`` and/or ``event``: where it was read (comma-joined when both).
    Column("source", TEXT, nullable=False),
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
    Column("cluster", TEXT, nullable=False),
    Column("node", TEXT, nullable=False),
    Column("condition", TEXT, nullable=False),
    Column("status", TEXT, nullable=False),
    #: The status before, as last recorded ("" when first seen).
    Column("previous", TEXT, nullable=False, default=""),
    Column("reason", TEXT, nullable=False, default=""),
    Column("message", TEXT, nullable=False, default=""),
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
    Column("cluster", TEXT, nullable=False),
    #: ``pod`` (one row per container) or ``node``.
    Column("kind", TEXT, nullable=False),
    Column("namespace", TEXT, nullable=False, default=""),
    Column("name", TEXT, nullable=False),
    Column("container", TEXT, nullable=False, default=""),
    Column("node", TEXT, nullable=False, default=""),
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
    Column("cluster", TEXT, nullable=False),
    #: Hash of (check, object, cause): one finding's identity across scans.
    Column("fingerprint", TEXT, nullable=False),
    Column("check", TEXT, nullable=False),
    Column("severity", TEXT, nullable=False),
    Column("object_api_version", TEXT, nullable=False, default=""),
    Column("object_kind", TEXT, nullable=False),
    Column("object_namespace", TEXT, nullable=False, default=""),
    Column("object_name", TEXT, nullable=False),
    Column("message", TEXT, nullable=False),
    Column("evidence", TEXT, nullable=False, default="{}"),
    Column("cause", TEXT, nullable=False),
    #: An episode: from the first scan that found it to the last, until it has been absent for
    #: longer than the writer's reopen gap (then a new row starts).
    Column("first_seen", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Column("scans", Integer, nullable=False, default=1),
    UniqueConstraint("cluster", "fingerprint", "first_seen"),
    Index(None, "cluster", "cause", "first_seen"),
    Index(None, "cluster", "last_seen"),
    Index(None, "cluster", "fingerprint", "last_seen"),
    Index(None, "cluster", "check", "last_seen"),
)
"""Findings of the daemon's scans, one row per episode."""


# -- node repair (kubemedic.repair keeps its state here; the rows' JSON is its codec's) -------

repairs = Table(
    "repairs",
    metadata,
    Column("cluster", TEXT, nullable=False),
    Column("node", TEXT, nullable=False),
    #: The repair's id (``Repair.id``).
    Column("repair", TEXT, nullable=False),
    #: The whole ``Repair`` as JSON (``kubemedic.repair.policy.codec.repair_to_json``).
    Column("body", TEXT, nullable=False),
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("cluster", "node"),
)
"""Repairs in flight, one per node at most: another replica (or a restarted one) resumes each
where it stood. A repair leaves this table when it finishes, for the ledger."""

repair_ledger = Table(
    "repair_ledger",
    metadata,
    _id(),
    Column("cluster", TEXT, nullable=False),
    #: The repair's id: a replayed round inserts nothing twice.
    Column("repair", TEXT, nullable=False),
    Column("node", TEXT, nullable=False),
    Column("trigger", TEXT, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("finished_at", Float, nullable=False),
    #: ``repaired``, ``replaced``, ``quarantined``, ``recovered``, ``abandoned``, ``dry-run``,
    #: or ``released`` (a person cleared the node's quarantine: the ledger window starts over).
    Column("outcome", TEXT, nullable=False),
    #: 1 for a dry run's repair (decided, recorded, nothing done), else 0.
    Column("dry_run", Integer, nullable=False, default=0),
    #: The repair's steps as a JSON list (``codec.step_to_json`` each).
    Column("steps", TEXT, nullable=False, default="[]"),
    Column("recorded_at", Float, nullable=False),
    UniqueConstraint("cluster", "repair"),
    Index(None, "cluster", "node", "finished_at"),
    Index(None, "cluster", "finished_at"),
)
"""Finished repairs, per node: the ledger the quarantine rule counts (more than
``ledger.maxRepairs`` in ``ledger.window``). Never trimmed by retention."""

repair_decisions = Table(
    "repair_decisions",
    metadata,
    _id(),
    Column("cluster", TEXT, nullable=False),
    #: ``""`` for a decision about the whole cluster (a correlated failure's hold).
    Column("node", TEXT, nullable=False, default=""),
    Column("at", Float, nullable=False),
    #: ``kubemedic.repair.policy.records.Kind`` value (start, act, wait, escalate...).
    Column("kind", TEXT, nullable=False),
    #: The Event reason (``KubemedicRepair...``).
    Column("reason", TEXT, nullable=False),
    Column("message", TEXT, nullable=False),
    #: ``records.Action`` value for ``act``, else ``""``.
    Column("action", TEXT, nullable=False, default=""),
    #: The repair's id, ``""`` when none.
    Column("repair", TEXT, nullable=False, default=""),
    Column("dry_run", Integer, nullable=False, default=0),
    #: The whole ``Decision`` as JSON (``codec.decision_to_json``).
    Column("body", TEXT, nullable=False),
    Index(None, "cluster", "at"),
    Index(None, "cluster", "node", "at"),
)
"""The audit trail: one row per decision the policy gave, taken or held back, with its reason."""

node_states = Table(
    "node_states",
    metadata,
    Column("cluster", TEXT, nullable=False),
    Column("node", TEXT, nullable=False),
    #: healthy, unhealthy, repairing, held, quarantined, or gone (deleted or replaced).
    Column("state", TEXT, nullable=False),
    #: The ladder step (``restart``, ``reboot``, ``replace``, ``quarantine``) or ``""``.
    Column("step", TEXT, nullable=False, default=""),
    Column("reason", TEXT, nullable=False, default=""),
    #: Since when the node is in this state (None when not known).
    Column("since", Float, nullable=True),
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("cluster", "node"),
)
"""Each node's repair state as of the controller's last round (what ``kubemedic nodes`` shows)."""


# -- the storm breaker (kubemedic.breaker keeps its state here; the JSON is its codec's) -------

breaker_state = Table(
    "breaker_state",
    metadata,
    Column("cluster", TEXT, nullable=False),
    #: The breaker's ``BreakerState`` as JSON (``kubemedic.breaker.codec.state_to_json``).
    Column("body", TEXT, nullable=False),
    Column("updated_at", Float, nullable=False),
    PrimaryKeyConstraint("cluster"),
)
"""What the breaker remembers between rounds (storms in progress, the loop guard's reverts, the
decisions announced), one row per cluster: a restarted or newly elected replica neither
re-announces a storm nor reverts an owner twice."""

breaker_decisions = Table(
    "breaker_decisions",
    metadata,
    _id(),
    Column("cluster", TEXT, nullable=False),
    #: The owner the decision is about: ``<namespace>/<Kind>/<name>``.
    Column("owner", TEXT, nullable=False),
    Column("at", Float, nullable=False),
    #: ``kubemedic.breaker.policy.DecisionKind`` value (act, dry-run, alert, hold, storm-ended).
    Column("kind", TEXT, nullable=False),
    #: The Event reason (``KubemedicBreaker...``).
    Column("reason", TEXT, nullable=False),
    Column("message", TEXT, nullable=False),
    #: ``BreakerAction`` value for ``act`` and ``dry-run``, else ``""``.
    Column("action", TEXT, nullable=False, default=""),
    #: What carrying it out gave (``done``, ``conflict``, ``failed: ...``), ``""`` when nothing
    #: was carried out.
    Column("outcome", TEXT, nullable=False, default=""),
    Column("dry_run", Integer, nullable=False, default=0),
    #: The whole decision and its outcome as JSON.
    Column("body", TEXT, nullable=False),
    Index(None, "cluster", "at"),
    Index(None, "cluster", "owner", "at"),
)
"""The breaker's audit trail: one row per decision announced or carried out, with its outcome."""


# -- notifications (kubemedic.notify remembers what each receiver was sent) -------------------

notifications = Table(
    "notifications",
    metadata,
    Column("cluster", TEXT, nullable=False),
    #: The receiver's name (``notify.receivers[].name``).
    Column("receiver", TEXT, nullable=False),
    #: The group key: ``incident:<cause>``, ``quarantine:<node>``, ``hold:<node>``,
    #: ``storm:<owner>``.
    Column("key", TEXT, nullable=False),
    #: ``firing`` or ``resolved``: the last status the receiver accepted.
    Column("status", TEXT, nullable=False),
    #: The subject as last sent, as JSON (``kubemedic.notify.policy.Sent.to_json``).
    Column("body", TEXT, nullable=False),
    Column("first_sent", Float, nullable=False),
    Column("last_sent", Float, nullable=False),
    PrimaryKeyConstraint("cluster", "receiver", "key"),
)
"""What each receiver has accepted, per group: a restarted or newly elected replica sends no
group again, and a receiver that failed is sent what it missed on the next round."""
