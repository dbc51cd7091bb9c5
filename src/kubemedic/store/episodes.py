"""Findings as episodes: what the daemon's scans found, and for how long.

A check reports the same problem on every scan while it lasts. The archive keeps one row per
*episode* of a finding (its check, object and cause: the fingerprint), from the first scan that
found it to the last; a finding absent for longer than the reopen gap (``REOPEN_AFTER``) starts
a new episode when it returns, so "how often did this happen, and when" reads straight off the
table. Message, evidence and severity follow the latest scan of the episode.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from kubemedic.checks.findings import Finding
from kubemedic.store import bulk, checking, schema

__all__ = ["REOPEN_AFTER", "fingerprint", "record_findings"]

REOPEN_AFTER: Final = timedelta(minutes=15)
"""A finding absent from scans for longer than this starts a new episode when it returns."""


def fingerprint(finding: Finding) -> str:
    """A finding's identity across scans: its check, object and cause (not its message, numbers
    or severity, which change while it lasts)."""
    ref = finding.object
    text = "|".join(
        (
            finding.check,
            f"{ref.api_version}/{ref.kind}/{ref.namespace or ''}/{ref.name}",
            finding.cause,
        )
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record_findings(
    connection: Connection,
    cluster: str,
    findings: Sequence[Finding],
    at: datetime,
    *,
    reopen_after: timedelta = REOPEN_AFTER,
) -> int:
    """Record one scan's ``findings`` (taken at ``at``) and return how many episodes it opened.

    A finding continues the episode of the same fingerprint last seen within ``reopen_after``
    (``last_seen`` moves to ``at``, message, evidence and severity follow the latest scan,
    ``scans`` counts); otherwise it opens a new episode row starting at ``at``.
    """
    if at.tzinfo is None:
        raise ValueError(f"findings time {at.isoformat()} has no timezone")
    table = schema.findings
    when = at.timestamp()
    latest: dict[str, Finding] = {}
    for finding in findings:
        latest[fingerprint(finding)] = finding
    if not latest:
        return 0
    recent = connection.execute(
        sa.select(table.c.id, table.c.fingerprint, table.c.last_seen).where(
            table.c.cluster == cluster,
            table.c.last_seen >= when - reopen_after.total_seconds(),
        )
    )
    open_episodes: dict[str, tuple[float, int]] = {}
    for row in recent.mappings():
        checking.check("findings", row)
        row_id, print_, last_seen = row["id"], row["fingerprint"], row["last_seen"]
        if print_ in latest and (last_seen, row_id) > open_episodes.get(print_, (-1.0, -1)):
            open_episodes[print_] = (last_seen, row_id)
    updates: list[dict[str, Any]] = []
    inserts: list[tuple[Any, ...]] = []
    for print_, finding in sorted(latest.items()):
        evidence = orjson.dumps(
            dict(finding.evidence), option=orjson.OPT_SORT_KEYS, default=str
        ).decode()
        if print_ in open_episodes:
            updates.append(
                {
                    "b_id": open_episodes[print_][1],
                    "b_at": when,
                    "b_message": finding.message,
                    "b_evidence": evidence,
                    "b_severity": finding.severity.label,
                }
            )
            continue
        ref = finding.object
        inserts.append(
            (
                cluster,
                print_,
                finding.check,
                finding.severity.label,
                ref.api_version,
                ref.kind,
                ref.namespace or "",
                ref.name,
                finding.message,
                evidence,
                finding.cause,
                when,
                when,
                1,
            )
        )
    if updates:
        connection.execute(_FINDING_UPDATE, updates)
    _FINDINGS.run(connection, inserts)
    return len(inserts)


_FINDING_UPDATE: Final = (
    sa.update(schema.findings)
    .where(schema.findings.c.id == sa.bindparam("b_id"))
    .values(
        last_seen=sa.case(
            (schema.findings.c.last_seen < sa.bindparam("b_at"), sa.bindparam("b_at")),
            else_=schema.findings.c.last_seen,
        ),
        message=sa.bindparam("b_message"),
        evidence=sa.bindparam("b_evidence"),
        severity=sa.bindparam("b_severity"),
        scans=schema.findings.c.scans + 1,
    )
)

_FINDINGS: Final = bulk.insert_once(schema.findings)
