"""Notifications: what each receiver has accepted, per group.

Revision ID: 0004
Revises: 0003
Create Date: 2027-01-20

Only adds a table: an archive of revision 0003 keeps every row, and opening it with this
kubemedic (``Archive.open``, migrations on) upgrades it in the transaction that checks it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TEXT = sa.Text().with_variant(sa.Text(collation="C"), "postgresql")
"""Text in byte order on both databases (``COLLATE "C"`` on PostgreSQL)."""


def _text(name: str) -> sa.Column[str]:
    return sa.Column(name, TEXT, nullable=False)


def upgrade() -> None:
    op.create_table(
        "notifications",
        _text("cluster"),
        _text("receiver"),
        _text("key"),
        _text("status"),
        _text("body"),
        sa.Column("first_sent", sa.Float(), nullable=False),
        sa.Column("last_sent", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("cluster", "receiver", "key", name="pk_notifications"),
    )


def downgrade() -> None:
    op.drop_table("notifications")
