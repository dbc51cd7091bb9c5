"""An archive for the dashboard's tests, written by the project's own writers.

Incident 3 twice, a day apart (two incidents of one cause, so each links the other), through the
rows ``kubemedic run`` leaves (tests/incidents/archived.py); ``EVENTS`` more events through the
archive's writer (``writer.Batch``), with ties on ``lastTimestamp`` and some without one, so
paging meets every edge; node repair's round for core-2 (state, ledger, decisions) and a storm
breaker round with a revert patch, through ``Archive.save_*_round``.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from tests.incidents import archived
from tests.incidents import builders as b
from tests.store.rows import event

CLUSTER = b.CLUSTER
DAY2 = b.T0 + timedelta(days=1)
EVENTS = 237
"""Events written besides the incidents' (not a multiple of any page size the tests use)."""
PATCH = [{"op": "remove", "path": "/spec/template/spec/nodeName"}]


def fill(archive: Archive) -> None:
    with archive.transaction() as connection:
        archived.fill_incident3(connection, b.T0)
        archived.insert_findings(connection, b.incident3(DAY2))
        for index in range(2):
            archived.insert_eviction(
                connection, DAY2 + b.minutes(10 + index), pod=f"hub-5f45bffd5-d2{index}"
            )
        archived.insert_transition(
            connection, DAY2 + b.minutes(9), node="core-2", condition="Ready", status="False"
        )
    rows = []
    for index in range(EVENTS):
        row = event(f"bulk-{index:04d}", count=1 + index % 3)
        seen = None if index % 50 == 7 else b.T0 + timedelta(minutes=60 + index // 4)
        rows.append(
            replace(
                row,
                namespace="web" if index % 2 else "batch",
                reason="BackOff" if index % 3 else "Unhealthy",
                type="Warning" if index % 5 else "Normal",
                first_seen=seen,
                last_seen=seen,
                node=f"worker-{index % 4}",
                host=f"worker-{index % 4}",
            )
        )
    archive.write(Batch(CLUSTER, events=rows))
    repaired = (b.T0 + timedelta(minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = (b.T0 + timedelta(minutes=20)).strftime("%Y-%m-%dT%H:%M:%SZ")
    archive.save_repair_round(
        CLUSTER,
        in_flight={},
        finished=[
            {
                "id": "repair-core-2-1",
                "node": "core-2",
                "trigger": "Ready=False for 5m",
                "started": started,
                "finished": repaired,
                "outcome": "quarantined",
                "steps": [
                    {"action": "reboot", "outcome": "done", "started": started},
                    {"action": "quarantine", "outcome": "done", "started": repaired},
                ],
                "dryRun": False,
            }
        ],
        decisions=[
            {
                "node": "core-2",
                "kind": "escalate",
                "reason": "KubemedicRepairQuarantined",
                "message": "core-2 repaired 3 times in 24h: quarantined",
                "action": "quarantine",
            }
        ],
        node_states=[
            {
                "node": "core-2",
                "state": "quarantined",
                "step": "quarantine",
                "reason": "repaired 3 times in 24h",
                "since": repaired,
            },
            {"node": "worker-1", "state": "healthy", "step": "", "reason": "", "since": None},
        ],
        at=(b.T0 + timedelta(minutes=30)).timestamp(),
    )
    archive.save_breaker_round(
        CLUSTER,
        state={
            "storms": {
                "gateway/Deployment/api-gateway": {
                    "owner": {"kind": "Deployment", "name": "api-gateway"},
                    "started": started,
                    "alerted": True,
                    "calmSince": None,
                }
            },
            "reverted": {},
            "announced": [],
        },
        decisions=[
            {
                "owner": "gateway/Deployment/api-gateway",
                "kind": "act",
                "reason": "KubemedicBreakerReverted",
                "message": "reverted the nodeName pin kubectl-edit set on api-gateway",
                "action": "revert-pin",
                "outcome": "done",
                "patch": PATCH,
            }
        ],
        at=(b.T0 + timedelta(minutes=25)).timestamp(),
    )
