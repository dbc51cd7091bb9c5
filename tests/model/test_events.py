"""Events from ``core/v1`` and ``events.k8s.io/v1`` read into one ``EventRecord``, and the
kubelet's liveness ``Killing`` sentence."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemedic.model.events import (
    MAX_MESSAGE,
    EventRecord,
    liveness_killed_container,
    read_event,
)
from tests.factories import event, node, pod, stamp

HUB = pod("hub-5d8f7c9b4-x8k2p", namespace="prod", node_name="core-2")
T0 = datetime(2023, 2, 1, 19, 0, tzinfo=UTC)


def as_events_v1(core: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """``core`` as ``events.k8s.io/v1`` serves it: ``regarding`` and ``note``, no ``count``,
    ``source`` or first/last timestamps (give the new-style fields in ``fields``)."""
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": core["metadata"],
        "regarding": core["involvedObject"],
        "note": core["message"],
        "reason": core["reason"],
        "type": core["type"],
        "action": "Killing",
        **fields,
    }


def test_core_v1_event_is_read_field_by_field() -> None:
    body = event(
        involved=HUB,
        reason="Unhealthy",
        message="Liveness probe failed: context deadline exceeded",
        count=30,
        first=timedelta(0),
        last=timedelta(minutes=5),
        host="core-2",
        field_path="spec.containers{hub}",
    )
    record = read_event(body)
    assert (record.namespace, record.name) == ("prod", body["metadata"]["name"])
    assert record.uid == body["metadata"]["uid"]
    assert (record.reason, record.type) == ("Unhealthy", "Warning")
    assert record.message == "Liveness probe failed: context deadline exceeded"
    assert record.object_key == ("Pod", "prod", "hub-5d8f7c9b4-x8k2p")
    assert record.object_uid == HUB["metadata"]["uid"]
    assert record.count == 30
    assert (record.first_seen, record.last_seen) == (T0, T0 + timedelta(minutes=5))
    assert (record.source, record.host) == ("kubelet", "core-2")
    assert record.field_path == "spec.containers{hub}"
    assert record.annotations is None


def test_events_v1_series_gives_count_and_last_observation() -> None:
    core = event(involved=HUB, reason="FailedScheduling", message="0/3 nodes are available")
    body = as_events_v1(
        core,
        eventTime="2023-02-01T19:00:00.250000Z",
        series={"count": 7, "lastObservedTime": "2023-02-01T19:04:30.500000Z"},
        reportingController="default-scheduler",
        reportingInstance="default-scheduler-cp-1",
    )
    record = read_event(body)
    assert record.message == "0/3 nodes are available"
    assert record.object_key == ("Pod", "prod", "hub-5d8f7c9b4-x8k2p")
    assert record.count == 7
    assert record.first_seen == T0 + timedelta(milliseconds=250)
    assert record.last_seen == T0 + timedelta(minutes=4, seconds=30, milliseconds=500)
    assert (record.source, record.host) == ("default-scheduler", "default-scheduler-cp-1")


def test_events_v1_without_series_happened_once_at_its_event_time() -> None:
    body = as_events_v1(
        event(involved=HUB, reason="Scheduled", message="assigned"),
        eventTime="2023-02-01T19:02:00.000001Z",
    )
    record = read_event(body)
    assert record.count == 1
    assert record.first_seen == record.last_seen == T0 + timedelta(minutes=2, microseconds=1)


def test_events_v1_copy_of_a_core_event_reads_the_deprecated_fields() -> None:
    core = event(involved=HUB, reason="Killing", message="Stopping container hub")
    body = as_events_v1(
        core,
        eventTime=None,
        reportingController="",
        deprecatedCount=4,
        deprecatedFirstTimestamp=stamp(timedelta(minutes=1)),
        deprecatedLastTimestamp=stamp(timedelta(minutes=3)),
        deprecatedSource={"component": "kubelet", "host": "core-2"},
    )
    record = read_event(body)
    assert record.count == 4
    assert (record.first_seen, record.last_seen) == (
        T0 + timedelta(minutes=1),
        T0 + timedelta(minutes=3),
    )
    assert (record.source, record.host) == ("kubelet", "core-2")


def test_event_without_any_timestamp_falls_back_to_its_creation() -> None:
    body = event(involved=HUB, reason="Pulled", message="pulled", first=timedelta(minutes=9))
    del body["firstTimestamp"], body["lastTimestamp"]
    record = read_event(body)
    assert record.first_seen == record.last_seen == T0 + timedelta(minutes=9)


@pytest.mark.parametrize("count", [0, -3, "12", None, 2.5])
def test_missing_or_odd_counts_read_as_one(count: Any) -> None:
    body = event(involved=HUB, reason="Pulled", message="pulled")
    body["count"] = count
    assert read_event(body).count == 1


def test_huge_messages_are_cut() -> None:
    body = event(involved=HUB, reason="Failed", message="x" * (MAX_MESSAGE * 10))
    message = read_event(body).message
    assert len(message) == MAX_MESSAGE + 1
    assert message.endswith("x…")
    assert read_event(event(involved=HUB, reason="Failed", message="y" * MAX_MESSAGE)).message == (
        "y" * MAX_MESSAGE
    )


def test_annotations_of_kubelet_eviction_events_are_kept() -> None:
    annotations = {"starved_resource": "memory", "offending_containers": "hub"}
    body = event(involved=HUB, reason="Evicted", message="low", annotations=annotations)
    assert read_event(body).annotations == annotations


def test_event_about_a_cluster_scoped_object_and_a_bare_body() -> None:
    record = read_event(event(involved=node("core-2"), reason="NodeNotReady", message="down"))
    assert record.object_key == ("Node", None, "core-2")
    assert record.field_path is None
    empty = read_event({})
    assert (empty.reason, empty.message, empty.type, empty.count) == ("", "", "Normal", 1)
    assert (empty.object_kind, empty.object_namespace, empty.object_uid) == ("", None, None)
    assert (empty.first_seen, empty.last_seen, empty.source, empty.host) == (None, None, "", None)


# -- liveness kills ------------------------------------------------------------------------------


def killing(message: str, *, reason: str = "Killing") -> EventRecord:
    return read_event(event(involved=HUB, reason=reason, message=message, type="Normal"))


def test_liveness_kill_names_the_container() -> None:
    restarted = killing("Container hub failed liveness probe, will be restarted")
    assert liveness_killed_container(restarted) == "hub"
    # restartPolicy: Never: the kubelet kills without restarting and leaves the suffix off
    never = killing("Container sidecar failed liveness probe")
    assert liveness_killed_container(never) == "sidecar"


@pytest.mark.parametrize(
    ("reason", "message"),
    [
        ("Killing", "Container hub failed startup probe, will be restarted"),
        ("Killing", "Container hub definition changed, will be restarted"),
        ("Killing", "Stopping container hub"),
        ("Unhealthy", "Container hub failed liveness probe, will be restarted"),
        ("Killing", "container hub failed liveness probe"),
    ],
)
def test_other_kills_and_other_reasons_are_not_liveness_kills(reason: str, message: str) -> None:
    assert liveness_killed_container(killing(message, reason=reason)) is None
