"""Writing batches: idempotent upserts that merge, never roll back, and commit with their
checkpoints; findings as episodes. Every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import timedelta

import orjson
import pytest

from kubemedic.checks.findings import Severity
from kubemedic.model.objects import ObjectRef
from kubemedic.store import schema
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch, WriteStats, fingerprint
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

# -- the batch ------------------------------------------------------------------------------


def test_a_batch_counts_its_records_and_a_checkpoint_only_batch_is_not_empty() -> None:
    assert len(Batch(cluster="c")) == 0
    assert Batch(cluster="c").empty and not Batch(cluster="c")
    only_checkpoint = Batch(cluster="c", checkpoints={"v1/events": "5"})
    assert len(only_checkpoint) == 0 and not only_checkpoint.empty and only_checkpoint
    batch = Batch(cluster="c", events=[event("a"), event("b")], samples=[sample()])
    assert len(batch) == 3


def test_write_reports_rows_per_table_after_merging_duplicates(archive: Archive) -> None:
    stats = archive.write(
        Batch(
            cluster="c",
            events=[event("a", 1), event("a", 2), event("b")],
            terminations=[termination()],
            checkpoints={"v1/events": "9"},
        )
    )
    assert (stats.events, stats.event_counts, stats.terminations, stats.checkpoints) == (2, 3, 1, 1)
    assert stats.rows == 7
    assert stats.seconds >= 0
    assert WriteStats().rows == 0


# -- events ---------------------------------------------------------------------------------


def test_an_event_is_one_row_updated_in_place_with_its_history_of_counts(
    archive: Archive,
) -> None:
    archive.write(Batch(cluster="c", events=[event("a", 1)]))
    archive.write(Batch(cluster="c", events=[event("a", 5, message="Back-off 5m0s")]))
    (row,) = rows(archive, schema.events)
    assert (row["uid"], row["count"], row["message"]) == ("a", 5, "Back-off 5m0s")
    assert row["last_seen"] == at(5).timestamp()
    assert row["first_seen"] == T0.timestamp()
    assert row["resource_version"] == "1005"
    history = rows(archive, schema.event_counts, order="count")
    assert [(h["count"], h["last_seen"]) for h in history] == [
        (1, at(1).timestamp()),
        (5, at(5).timestamp()),
    ]


def test_replaying_events_changes_nothing(archive: Archive) -> None:
    batch = Batch(cluster="c", events=[event("a", 1), event("a", 2), event("b", 1)])
    archive.write(batch)
    before = (rows(archive, schema.events), rows(archive, schema.event_counts))
    archive.write(batch)
    archive.write(Batch(cluster="c", events=[event("a", 1)]))
    after = (rows(archive, schema.events), rows(archive, schema.event_counts))
    assert after == before


def test_an_older_version_never_rolls_an_event_back(archive: Archive) -> None:
    archive.write(Batch(cluster="c", events=[event("a", 7, message="latest")]))
    archive.write(Batch(cluster="c", events=[event("a", 3, message="older")]))
    (row,) = rows(archive, schema.events)
    assert (row["count"], row["message"]) == (7, "latest")
    assert {h["count"] for h in rows(archive, schema.event_counts)} == {3, 7}


def test_at_the_same_count_a_newer_sighting_updates_message_time_and_version(
    archive: Archive,
) -> None:
    archive.write(Batch(cluster="c", events=[event("a", 2)]))
    newer = event("a", 2, message="edited", last_seen=at(30), resource_version="2000")
    archive.write(Batch(cluster="c", events=[newer]))
    older = event("a", 2, message="stale", last_seen=at(10), resource_version="1500")
    archive.write(Batch(cluster="c", events=[older]))
    (row,) = rows(archive, schema.events)
    assert (row["message"], row["last_seen"], row["resource_version"]) == (
        "edited",
        at(30).timestamp(),
        "2000",
    )


def test_duplicates_within_a_batch_keep_the_highest_count_whatever_their_order(
    archive: Archive,
) -> None:
    archive.write(
        Batch(
            cluster="c",
            events=[event("a", 4, message="four"), event("a", 9, message="nine"), event("a", 2)],
        )
    )
    (row,) = rows(archive, schema.events)
    assert (row["count"], row["message"]) == (9, "nine")
    assert [h["count"] for h in rows(archive, schema.event_counts, order="count")] == [2, 4, 9]


def test_an_event_read_through_events_k8s_io_updates_the_same_row(archive: Archive) -> None:
    archive.write(Batch(cluster="c", events=[event("a", 3)]))
    # The same stored object (same resourceVersion) through the other API: nothing to change.
    archive.write(Batch(cluster="c", events=[event("a", 3, api_version="events.k8s.io/v1")]))
    assert rows(archive, schema.events)[0]["api_version"] == "v1"
    series = event("a", 3, api_version="events.k8s.io/v1", first_seen=None, last_seen=at(9))
    archive.write(Batch(cluster="c", events=[series]))
    (row,) = rows(archive, schema.events)
    assert (row["api_version"], row["first_seen"], row["count"]) == ("events.k8s.io/v1", None, 3)


def test_a_deleted_event_keeps_its_row_stamped_with_the_first_deletion(archive: Archive) -> None:
    archive.write(Batch(cluster="c", events=[event("a"), event("b")]))
    archive.write(Batch(cluster="c", event_deletions=[("a", at(3600)), ("ghost", at(3600))]))
    archive.write(Batch(cluster="c", event_deletions=[("a", at(7200))]))
    archive.write(Batch(cluster="c", events=[event("a", 1)]))  # a replay after the deletion
    deleted = {row["uid"]: row["deleted_at"] for row in rows(archive, schema.events)}
    assert deleted == {"a": at(3600).timestamp(), "b": None}


def test_an_event_and_its_deletion_in_one_batch(archive: Archive) -> None:
    archive.write(
        Batch(cluster="c", events=[event("a")], event_deletions=[("a", at(90)), ("a", at(60))])
    )
    (row,) = rows(archive, schema.events)
    assert row["deleted_at"] == at(60).timestamp()


def test_clusters_do_not_share_events(archive: Archive) -> None:
    archive.write(Batch(cluster="prod", events=[event("a", 5)]))
    archive.write(Batch(cluster="staging", events=[event("a", 1)]))
    archive.write(Batch(cluster="staging", event_deletions=[("a", at(10))]))
    found = {(r["cluster"], r["count"], r["deleted_at"]) for r in rows(archive, schema.events)}
    assert found == {("prod", 5, None), ("staging", 1, at(10).timestamp())}


def test_recorded_at_is_the_wall_time_of_the_write(archive: Archive) -> None:
    before = time.time()
    archive.write(Batch(cluster="c", events=[event("a")], terminations=[termination()]))
    after = time.time()
    for table in (schema.events, schema.terminations):
        (row,) = rows(archive, table)
        assert before <= row["recorded_at"] <= after


def test_text_with_nul_characters_is_archived(archive: Archive) -> None:
    archive.write(Batch(cluster="c", events=[event("a", message="bad\x00byte")]))
    (row,) = rows(archive, schema.events)
    # PostgreSQL text cannot hold NUL: it becomes the replacement character there.
    assert row["message"] in ("bad\x00byte", "bad\ufffdbyte")


def test_quotes_and_sql_in_data_are_just_data(archive: Archive) -> None:
    nasty = "'); DROP TABLE events; -- \" \\ % %% ? :name $1"
    archive.write(Batch(cluster="c", events=[event("a", message=nasty, reason=nasty)]))
    (row,) = rows(archive, schema.events)
    assert (row["message"], row["reason"]) == (nasty, nasty)


# -- terminations ---------------------------------------------------------------------------


def test_a_termination_seen_again_fills_what_was_missing_and_keeps_the_highest_restarts(
    archive: Archive,
) -> None:
    early = termination(reason="", exit_code=None, restart_count=3, node="", message="")
    archive.write(Batch(cluster="c", terminations=[early]))
    later = termination(reason="OOMKilled", exit_code=137, restart_count=2, message="killed")
    archive.write(Batch(cluster="c", terminations=[later]))
    (row,) = rows(archive, schema.terminations)
    assert (row["reason"], row["exit_code"], row["restart_count"]) == ("OOMKilled", 137, 3)
    assert (row["node"], row["message"]) == ("node-1", "killed")
    assert row["memory_limit"] == 256 * 1024 * 1024


def test_terminations_are_one_per_key_and_replays_are_harmless(archive: Archive) -> None:
    first = termination("containerd://1", restart_count=1)
    second = termination("containerd://2", restart_count=2, finished_at=at(600))
    batch = Batch(cluster="c", terminations=[first, second, first])
    archive.write(batch)
    archive.write(batch)
    keys = [(r["key"], r["restart_count"]) for r in rows(archive, schema.terminations, order="key")]
    assert keys == [("containerd://1", 1), ("containerd://2", 2)]


def test_duplicate_terminations_in_one_batch_merge(archive: Archive) -> None:
    archive.write(
        Batch(
            cluster="c",
            terminations=[
                termination(reason="", exit_code=None, restart_count=4),
                termination(reason="Error", exit_code=1, restart_count=2),
            ],
        )
    )
    (row,) = rows(archive, schema.terminations)
    assert (row["reason"], row["exit_code"], row["restart_count"]) == ("Error", 1, 4)


# -- evictions ------------------------------------------------------------------------------


def test_the_pod_status_and_the_event_of_one_eviction_merge_into_one_row(
    archive: Archive,
) -> None:
    status = eviction("pod-status", at=at(320), container="", usage=None)
    archive.write(Batch(cluster="c", evictions=[status]))
    from_event = eviction(
        "event",
        at=at(300),
        container="hub",
        usage=1500 * 1024 * 1024,
        request=128 * 1024 * 1024,
        owner_kind="",
        message="The node was low on resource: memory. Container hub was using 1500Mi.",
    )
    archive.write(Batch(cluster="c", evictions=[from_event]))
    (row,) = rows(archive, schema.evictions)
    assert row["source"] == "event,pod-status"
    assert row["at"] == at(300).timestamp()
    assert (row["container"], row["usage"], row["request"]) == (
        "hub",
        1500 * 1024 * 1024,
        128 * 1024 * 1024,
    )
    assert row["owner_kind"] == "ReplicaSet"
    assert row["message"] == "The node was low on resource: memory."
    archive.write(Batch(cluster="c", evictions=[status, from_event]))
    assert rows(archive, schema.evictions) == [row]


def test_an_eviction_merged_within_one_batch_reads_the_same(archive: Archive) -> None:
    archive.write(
        Batch(
            cluster="c",
            evictions=[eviction("event", at=None, usage=7), eviction("pod-status", at=at(5))],
        )
    )
    (row,) = rows(archive, schema.evictions)
    assert (row["source"], row["at"], row["usage"]) == ("event,pod-status", at(5).timestamp(), 7)


def test_an_eviction_known_from_one_place_keeps_that_source(archive: Archive) -> None:
    archive.write(Batch(cluster="c", evictions=[eviction("event")]))
    archive.write(Batch(cluster="c", evictions=[eviction("event")]))
    (row,) = rows(archive, schema.evictions)
    assert row["source"] == "event"


def test_an_unknown_eviction_source_is_refused_and_nothing_of_the_batch_is_written(
    archive: Archive,
) -> None:
    archive.write(Batch(cluster="c", checkpoints={"v1/events": "10"}))
    bad = Batch(
        cluster="c",
        events=[event("a")],
        evictions=[eviction("rumour")],
        checkpoints={"v1/events": "11"},
    )
    with pytest.raises(ValueError, match=r"jhub/hub-0 \(pod-9\): source 'rumour'"):
        archive.write(bad)
    assert rows(archive, schema.events) == []
    assert archive.checkpoints("c") == {"v1/events": "10"}


# -- transitions, samples -------------------------------------------------------------------


def test_node_transitions_and_samples_are_inserted_once(archive: Archive) -> None:
    batch = Batch(
        cluster="c",
        transitions=[transition("False", 0), transition("True", 60, previous="False")],
        samples=[sample(0), sample(15), sample(0, node="node-2", memory_bytes=1)],
    )
    archive.write(batch)
    archive.write(batch)
    assert [r["status"] for r in rows(archive, schema.node_transitions, order="at")] == [
        "False",
        "True",
    ]
    found = [(r["at"], r["memory_bytes"]) for r in rows(archive, schema.metric_samples)]
    assert found == [
        (at(0).timestamp(), 200 * 1024 * 1024),
        (at(15).timestamp(), 200 * 1024 * 1024),
    ]


# -- checkpoints travel with their data -----------------------------------------------------


def test_a_checkpoint_commits_with_its_rows_or_not_at_all(archive: Archive) -> None:
    archive.write(Batch(cluster="c", events=[event("a")], checkpoints={"v1/events": "1"}))
    with pytest.raises(RuntimeError, match="crash"), archive.transaction() as connection:
        from kubemedic.store import writer

        writer.write(
            connection, Batch(cluster="c", events=[event("b")], checkpoints={"v1/events": "2"})
        )
        raise RuntimeError("crash before commit")
    assert archive.checkpoints("c") == {"v1/events": "1"}
    assert [r["uid"] for r in rows(archive, schema.events)] == ["a"]


# -- findings -------------------------------------------------------------------------------


def test_a_fingerprint_is_check_object_and_cause_not_message_or_severity() -> None:
    base = finding()
    assert fingerprint(base) == fingerprint(replace(base, message="other", severity=Severity.INFO))
    assert len(fingerprint(base)) == 16
    assert fingerprint(base) != fingerprint(finding(name="core-3"))
    assert fingerprint(base) != fingerprint(finding(cause="other"))
    assert fingerprint(base) != fingerprint(finding("other-check"))
    namespaced = replace(base, object=ObjectRef(kind="Node", name="core-2", namespace="x"))
    assert fingerprint(base) != fingerprint(namespaced)


def test_a_finding_seen_in_consecutive_scans_is_one_episode(archive: Archive) -> None:
    assert archive.record_findings("c", [finding()], T0) == 1
    later = finding(
        severity=Severity.WARNING, message="now 150%", evidence={"committedPercent": 150}
    )
    assert archive.record_findings("c", [later], T0 + timedelta(minutes=10)) == 0
    (row,) = rows(archive, schema.findings)
    assert (row["first_seen"], row["last_seen"], row["scans"]) == (
        T0.timestamp(),
        (T0 + timedelta(minutes=10)).timestamp(),
        2,
    )
    assert (row["severity"], row["message"]) == ("warning", "now 150%")
    assert orjson.loads(row["evidence"]) == {"committedPercent": 150}
    assert (row["object_api_version"], row["object_kind"], row["object_namespace"]) == (
        "v1",
        "Node",
        "",
    )
    assert row["fingerprint"] == fingerprint(later)


def test_a_finding_absent_longer_than_the_gap_opens_a_new_episode(archive: Archive) -> None:
    archive.record_findings("c", [finding()], T0)
    archive.record_findings("c", [finding()], T0 + timedelta(minutes=5))
    assert archive.record_findings("c", [finding()], T0 + timedelta(minutes=30)) == 1
    assert (
        archive.record_findings(
            "c", [finding()], T0 + timedelta(minutes=40), reopen_after=timedelta(minutes=5)
        )
        == 1
    )
    episodes = [(r["first_seen"], r["scans"]) for r in rows(archive, schema.findings, order="id")]
    assert episodes == [
        (T0.timestamp(), 2),
        ((T0 + timedelta(minutes=30)).timestamp(), 1),
        ((T0 + timedelta(minutes=40)).timestamp(), 1),
    ]


def test_findings_of_one_scan_are_recorded_together_per_cluster(archive: Archive) -> None:
    scan = [finding(name="core-1"), finding(name="core-2"), finding(name="core-2")]
    assert archive.record_findings("prod", scan, T0) == 2
    assert archive.record_findings("staging", scan[:1], T0) == 1
    assert archive.record_findings("prod", [], T0) == 0
    by_cluster = sorted((r["cluster"], r["object_name"]) for r in rows(archive, schema.findings))
    assert by_cluster == [("prod", "core-1"), ("prod", "core-2"), ("staging", "core-1")]


def test_a_findings_time_without_timezone_is_refused(archive: Archive) -> None:
    with pytest.raises(ValueError, match="has no timezone"):
        archive.record_findings("c", [finding()], T0.replace(tzinfo=None))


def test_writing_carries_on_after_a_failed_batch(archive: Archive) -> None:
    bad = Batch(cluster="c", events=[event("a")], evictions=[eviction("rumour")])
    with pytest.raises(ValueError, match="rumour"):
        archive.write(bad)
    archive.write(Batch(cluster="c", events=[event("a", 2)], evictions=[eviction("event")]))
    archive.write(Batch(cluster="c", events=[event("a", 3)], checkpoints={"v1/events": "3"}))
    assert [(r["uid"], r["count"]) for r in rows(archive, schema.events)] == [("a", 3)]
    assert [r["count"] for r in rows(archive, schema.event_counts, order="count")] == [2, 3]
    assert len(rows(archive, schema.evictions)) == 1
