"""The archive's first schema: events and their counts, terminations, evictions, node
transitions, metric samples, findings and watch checkpoints.

Revision ID: 0001
Revises:
Create Date: 2025-11-30

Written out table by table (not ``metadata.create_all``) so this revision stays what it was when
``schema.py`` moves on; a test compares the migrated database with ``schema.metadata``.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _id() -> sa.Column[int]:
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False)


TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
"""Text in byte order on both databases (``COLLATE "C"`` on PostgreSQL)."""


def _text(name: str) -> sa.Column[str]:
    return sa.Column(name, TEXT, nullable=False)


def _float(name: str, *, nullable: bool = True) -> sa.Column[float]:
    return sa.Column(name, sa.Float(), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "checkpoints",
        _text("cluster"),
        _text("stream"),
        _text("resource_version"),
        _float("updated_at", nullable=False),
        sa.PrimaryKeyConstraint("cluster", "stream", name="pk_checkpoints"),
    )

    op.create_table(
        "events",
        _id(),
        _text("cluster"),
        _text("uid"),
        _text("api_version"),
        _text("namespace"),
        _text("name"),
        _text("type"),
        _text("reason"),
        _text("message"),
        _text("object_kind"),
        _text("object_namespace"),
        _text("object_name"),
        _text("object_uid"),
        _text("field_path"),
        _text("source"),
        _text("host"),
        _text("node"),
        sa.Column("count", sa.Integer(), nullable=False),
        _float("first_seen"),
        _float("last_seen"),
        _text("resource_version"),
        _float("deleted_at"),
        _float("recorded_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
        sa.UniqueConstraint("cluster", "uid", name="uq_events_cluster_uid"),
    )
    for columns in (
        ("cluster", "reason", "last_seen"),
        ("cluster", "type", "last_seen"),
        ("cluster", "namespace", "last_seen"),
        ("cluster", "object_kind", "object_name"),
        ("cluster", "node", "last_seen"),
        ("cluster", "last_seen"),
    ):
        op.create_index(f"ix_events_{'_'.join(columns)}", "events", list(columns))

    op.create_table(
        "event_counts",
        _text("cluster"),
        _text("uid"),
        sa.Column("count", sa.Integer(), nullable=False),
        _float("last_seen"),
        sa.PrimaryKeyConstraint("cluster", "uid", "count", name="pk_event_counts"),
    )

    op.create_table(
        "terminations",
        _id(),
        _text("cluster"),
        _text("pod_uid"),
        _text("namespace"),
        _text("pod"),
        _text("container"),
        _text("key"),
        _text("node"),
        _text("owner_kind"),
        _text("owner_name"),
        _text("reason"),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("signal", sa.Integer(), nullable=True),
        sa.Column("restart_count", sa.Integer(), nullable=False),
        _float("started_at"),
        _float("finished_at"),
        _text("message"),
        sa.Column("memory_request", sa.BigInteger(), nullable=True),
        sa.Column("memory_limit", sa.BigInteger(), nullable=True),
        _float("recorded_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_terminations"),
        sa.UniqueConstraint(
            "cluster",
            "pod_uid",
            "container",
            "key",
            name="uq_terminations_cluster_pod_uid_container_key",
        ),
    )
    for columns in (
        ("cluster", "reason", "finished_at"),
        ("cluster", "node", "finished_at"),
        ("cluster", "namespace", "pod"),
    ):
        op.create_index(f"ix_terminations_{'_'.join(columns)}", "terminations", list(columns))

    op.create_table(
        "evictions",
        _id(),
        _text("cluster"),
        _text("pod_uid"),
        _text("namespace"),
        _text("pod"),
        _text("node"),
        _text("owner_kind"),
        _text("owner_name"),
        _float("at"),
        _text("kind"),
        _text("resource"),
        _text("threshold"),
        _text("available"),
        _text("container"),
        sa.Column("usage", sa.BigInteger(), nullable=True),
        sa.Column("request", sa.BigInteger(), nullable=True),
        _text("message"),
        _text("source"),
        _float("recorded_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_evictions"),
        sa.UniqueConstraint("cluster", "pod_uid", name="uq_evictions_cluster_pod_uid"),
    )
    op.create_index("ix_evictions_cluster_at", "evictions", ["cluster", "at"])
    op.create_index("ix_evictions_cluster_node_at", "evictions", ["cluster", "node", "at"])

    op.create_table(
        "node_transitions",
        _id(),
        _text("cluster"),
        _text("node"),
        _text("condition"),
        _text("status"),
        _text("previous"),
        _text("reason"),
        _text("message"),
        _float("at", nullable=False),
        _float("recorded_at", nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_node_transitions"),
        sa.UniqueConstraint(
            "cluster",
            "node",
            "condition",
            "at",
            "status",
            name="uq_node_transitions_cluster_node_condition_at_status",
        ),
    )
    op.create_index(
        "ix_node_transitions_cluster_node_at", "node_transitions", ["cluster", "node", "at"]
    )
    op.create_index("ix_node_transitions_cluster_at", "node_transitions", ["cluster", "at"])

    op.create_table(
        "metric_samples",
        _text("cluster"),
        _text("kind"),
        _text("namespace"),
        _text("name"),
        _text("container"),
        _text("node"),
        _float("at", nullable=False),
        _float("window_seconds"),
        _float("cpu_millicores"),
        sa.Column("memory_bytes", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint(
            "cluster", "kind", "namespace", "name", "container", "at", name="pk_metric_samples"
        ),
    )
    op.create_index(
        "ix_metric_samples_cluster_node_at", "metric_samples", ["cluster", "node", "at"]
    )

    op.create_table(
        "findings",
        _id(),
        _text("cluster"),
        _text("fingerprint"),
        _text("check"),
        _text("severity"),
        _text("object_api_version"),
        _text("object_kind"),
        _text("object_namespace"),
        _text("object_name"),
        _text("message"),
        _text("evidence"),
        _text("cause"),
        _float("first_seen", nullable=False),
        _float("last_seen", nullable=False),
        sa.Column("scans", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_findings"),
        sa.UniqueConstraint(
            "cluster",
            "fingerprint",
            "first_seen",
            name="uq_findings_cluster_fingerprint_first_seen",
        ),
    )
    op.create_index(
        "ix_findings_cluster_cause_first_seen", "findings", ["cluster", "cause", "first_seen"]
    )
    op.create_index("ix_findings_cluster_last_seen", "findings", ["cluster", "last_seen"])
    op.create_index(
        "ix_findings_cluster_fingerprint_last_seen",
        "findings",
        ["cluster", "fingerprint", "last_seen"],
    )


def downgrade() -> None:
    for table in (
        "findings",
        "metric_samples",
        "node_transitions",
        "evictions",
        "terminations",
        "event_counts",
        "events",
        "checkpoints",
    ):
        op.drop_table(table)
