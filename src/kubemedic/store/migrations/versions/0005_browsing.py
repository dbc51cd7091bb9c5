"""Indexes for reading the archive a page at a time (the dashboard and its API).

Revision ID: 0005
Revises: 0004
Create Date: 2027-01-20

Only adds indexes: findings by check (the overview's commitment heat map reads each node's
latest overcommit finding; the findings list filters by check), terminations by time (kills of
every cluster's pods newest first). An archive of revision 0004 keeps every row.
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_findings_cluster_check_last_seen", "findings", ["cluster", "check", "last_seen"]
    )
    op.create_index(
        "ix_terminations_cluster_finished_at", "terminations", ["cluster", "finished_at"]
    )


def downgrade() -> None:
    op.drop_index("ix_terminations_cluster_finished_at", table_name="terminations")
    op.drop_index("ix_findings_cluster_check_last_seen", table_name="findings")
