"""The storm breaker: its state between rounds and the audit trail of its decisions.

Revision ID: 0003
Revises: 0002
Create Date: 2027-01-10

Only adds tables: an archive of revision 0002 keeps every row, and opening it with this
kubemedic (``Archive.open``, migrations on) upgrades it in the transaction that checks it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
"""Text in byte order on both databases (``COLLATE "C"`` on PostgreSQL)."""


def _text(name: str) -> sa.Column[str]:
    return sa.Column(name, TEXT, nullable=False)


def upgrade() -> None:
    op.create_table(
        "breaker_state",
        _text("cluster"),
        _text("body"),
        sa.Column("updated_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", name="pk_breaker_state"),
    )
    op.create_table(
        "breaker_decisions",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        _text("cluster"),
        _text("owner"),
        sa.Column("at", sa.Float(), nullable=False),
        _text("kind"),
        _text("reason"),
        _text("message"),
        _text("action"),
        _text("outcome"),
        sa.Column("dry_run", sa.Integer(), nullable=False),
        _text("body"),
        sa.PrimaryKeyConstraint("id", name="pk_breaker_decisions"),
    )
    op.create_index("ix_breaker_decisions_cluster_at", "breaker_decisions", ["cluster", "at"])
    op.create_index(
        "ix_breaker_decisions_cluster_owner_at", "breaker_decisions", ["cluster", "owner", "at"]
    )


def downgrade() -> None:
    for table in ("breaker_decisions", "breaker_state"):
        op.drop_table(table)
