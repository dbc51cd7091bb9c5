"""Node repair: repairs in flight, the ledger of finished repairs, the decisions' audit trail and
each node's repair state.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-02

Only adds tables: an archive of revision 0001 keeps every row, and opening it with this
kubemedic (``Archive.open``, migrations on) upgrades it in the transaction that checks it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
"""Text in byte order on both databases (``COLLATE "C"`` on PostgreSQL)."""


def _id() -> sa.Column[int]:
    return sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False)


def _text(name: str) -> sa.Column[str]:
    return sa.Column(name, TEXT, nullable=False)


def _float(name: str, *, nullable: bool = False) -> sa.Column[float]:
    return sa.Column(name, sa.Float(), nullable=nullable)


def _flag(name: str) -> sa.Column[int]:
    return sa.Column(name, sa.Integer(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "repairs",
        _text("cluster"),
        _text("node"),
        _text("repair"),
        _text("body"),
        _float("updated_at"),
        sa.PrimaryKeyConstraint("cluster", "node", name="pk_repairs"),
    )

    op.create_table(
        "repair_ledger",
        _id(),
        _text("cluster"),
        _text("repair"),
        _text("node"),
        _text("trigger"),
        _float("started_at"),
        _float("finished_at"),
        _text("outcome"),
        _flag("dry_run"),
        _text("steps"),
        _float("recorded_at"),
        sa.PrimaryKeyConstraint("id", name="pk_repair_ledger"),
        sa.UniqueConstraint("cluster", "repair", name="uq_repair_ledger_cluster_repair"),
    )
    op.create_index(
        "ix_repair_ledger_cluster_node_finished_at",
        "repair_ledger",
        ["cluster", "node", "finished_at"],
    )
    op.create_index(
        "ix_repair_ledger_cluster_finished_at", "repair_ledger", ["cluster", "finished_at"]
    )

    op.create_table(
        "repair_decisions",
        _id(),
        _text("cluster"),
        _text("node"),
        _float("at"),
        _text("kind"),
        _text("reason"),
        _text("message"),
        _text("action"),
        _text("repair"),
        _flag("dry_run"),
        _text("body"),
        sa.PrimaryKeyConstraint("id", name="pk_repair_decisions"),
    )
    op.create_index("ix_repair_decisions_cluster_at", "repair_decisions", ["cluster", "at"])
    op.create_index(
        "ix_repair_decisions_cluster_node_at", "repair_decisions", ["cluster", "node", "at"]
    )

    op.create_table(
        "node_states",
        _text("cluster"),
        _text("node"),
        _text("state"),
        _text("step"),
        _text("reason"),
        _float("since", nullable=True),
        _float("updated_at"),
        sa.PrimaryKeyConstraint("cluster", "node", name="pk_node_states"),
    )


def downgrade() -> None:
    for table in ("node_states", "repair_decisions", "repair_ledger", "repairs"):
        op.drop_table(table)
