"""Retention trims by the time rows are about, per cluster, oldest first, checkpoints kept."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kubemedic.store import schema
from kubemedic.store.db import Archive
from kubemedic.store.retention import retain
from kubemedic.store.writer import Batch
from tests.store.rows import (
    T0,
    at,
    event,
    eviction,
    finding,
    rows,
    sample,
    termination,
    transition,
)

DAY = 86400


def _fill(archive: Archive, cluster: str) -> None:
    old, new = 0, 10 * DAY
    archive.write(
        Batch(
            cluster=cluster,
            events=[
                event("old-1", 2, last_seen=at(old)),
                event("old-1", 1, last_seen=at(old)),
                event("old-2", 1, last_seen=at(old + 1)),
                event("new", 1, last_seen=at(new)),
                event("never-seen", 1, first_seen=None, last_seen=None),
            ],
            terminations=[
                termination("old", finished_at=at(old)),
                termination("new", finished_at=at(new)),
            ],
            evictions=[
                eviction(pod_uid="old", at=at(old)),
                eviction(pod_uid="new", at=at(new)),
            ],
            transitions=[transition("False", old), transition("True", new)],
            samples=[sample(old), sample(new)],
            checkpoints={"v1/events": "77"},
        )
    )


def test_retention_removes_only_rows_about_times_before_the_cutoff(archive: Archive) -> None:
    _fill(archive, "prod")
    _fill(archive, "staging")
    removed = retain(archive, "prod", T0 + timedelta(days=5))
    assert removed == {
        "events": 2,
        "event_counts": 3,
        "terminations": 1,
        "evictions": 1,
        "node_transitions": 1,
        "metric_samples": 1,
        "findings": 0,
        "repair_decisions": 0,
    }
    prod = {r["uid"] for r in rows(archive, schema.events) if r["cluster"] == "prod"}
    # An event without timestamps is judged by when it was recorded (now): it stays.
    assert prod == {"new", "never-seen"}
    assert {r["uid"] for r in rows(archive, schema.event_counts) if r["cluster"] == "prod"} == {
        "new",
        "never-seen",
    }
    staging = [r for r in rows(archive, schema.events) if r["cluster"] == "staging"]
    assert len(staging) == 4
    assert archive.checkpoints("prod") == {"v1/events": "77"}
    assert retain(archive, "prod", T0 + timedelta(days=5))["events"] == 0


def test_retention_of_every_cluster_in_small_batches(archive: Archive) -> None:
    _fill(archive, "prod")
    _fill(archive, "staging")
    removed = retain(archive, None, T0 + timedelta(days=20), batch=1)
    assert removed["events"] == 6
    assert removed["event_counts"] == 8
    assert removed["metric_samples"] == 4
    assert {r["uid"] for r in rows(archive, schema.events)} == {"never-seen"}
    assert [r["key"] for r in rows(archive, schema.terminations)] == []


def test_findings_go_by_the_end_of_their_episode(archive: Archive) -> None:
    archive.record_findings("c", [finding()], at(0))
    archive.record_findings("c", [finding()], at(600))
    archive.record_findings("c", [finding(name="core-9")], at(0))
    assert retain(archive, "c", at(300))["findings"] == 1
    assert [r["object_name"] for r in rows(archive, schema.findings)] == ["core-2"]


def test_a_naive_cutoff_is_refused(archive: Archive) -> None:
    with pytest.raises(ValueError, match="has no timezone"):
        retain(archive, None, T0.replace(tzinfo=None))
