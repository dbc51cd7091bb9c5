"""Reading the archive back: event search, the OOM report and the clusters held, on SQLite and
PostgreSQL (the ``archive`` fixture runs each test on both)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from kubemedic.store import extraction, queries
from kubemedic.store.db import Archive
from kubemedic.store.queries import EventQuery, find_events, oom_report
from kubemedic.store.writer import Batch
from tests.factories import event
from tests.store.archived import CLUSTER, MI, T0, Incident, fill, oom_killed


@pytest.fixture
def incident(archive: Archive) -> Incident:
    return fill(archive)


def reasons(archive: Archive, **filters: object) -> list[str]:
    query = EventQuery(**{"cluster": CLUSTER, **filters})  # type: ignore[arg-type]
    return [event.reason for event in find_events(archive, query)]


# -- events -----------------------------------------------------------------------------------


def test_events_come_back_oldest_first_with_their_history(
    archive: Archive, incident: Incident
) -> None:
    found = find_events(archive.engine, EventQuery(cluster=CLUSTER))
    assert [e.reason for e in found] == [
        "Scheduled",
        "Unhealthy",
        "SystemOOM",
        "Evicted",
        "FailedScheduling",
    ]
    unhealthy = found[1]
    assert (unhealthy.uid, unhealthy.count, unhealthy.cluster) == (
        incident.unhealthy_uid,
        30,
        CLUSTER,
    )
    assert [(c.count, c.last_seen) for c in unhealthy.counts] == [
        (1, T0),
        (5, T0 + timedelta(minutes=1)),
        (30, T0 + timedelta(minutes=5)),
    ]
    assert unhealthy.deleted_at == T0 + timedelta(minutes=65)
    assert unhealthy.gone
    assert not found[3].gone
    assert (found[3].node, found[3].source, found[3].host) == ("core-2", "kubelet", "core-2")


def test_every_cluster_when_none_is_named(archive: Archive, incident: Incident) -> None:
    found = find_events(archive, EventQuery())
    assert {e.cluster for e in found} == {CLUSTER, "staging"}
    assert len(found) == 6


def test_reason_type_and_namespace_filters(archive: Archive, incident: Incident) -> None:
    assert reasons(archive, reason="Evicted") == ["Evicted"]
    assert reasons(archive, reason="evicted") == []  # reasons are exact, as field selectors
    assert reasons(archive, type="normal") == ["Scheduled"]
    assert reasons(archive, type="Warning", namespace="jhub") == ["Unhealthy", "Evicted"]
    assert reasons(archive, namespace="dask") == ["FailedScheduling"]


def test_object_filter_takes_kubectls_kind_spellings(archive: Archive, incident: Incident) -> None:
    hub = incident.hub["metadata"]["name"]
    for spelling in ("pod", "pods", "po", "Pod", "PODS"):
        kind, name = queries.parse_object(f"{spelling}/{hub}")
        assert reasons(archive, object_kind=kind, object_name=name) == ["Unhealthy", "Evicted"]
    kind, name = queries.parse_object("no/core-2")
    assert reasons(archive, object_kind=kind, object_name=name) == ["SystemOOM"]
    assert reasons(archive, object_kind="node") == ["SystemOOM"]


def test_node_filter_finds_kubelet_events_and_events_about_the_node(
    archive: Archive, incident: Incident
) -> None:
    assert reasons(archive, node="core-2") == ["Unhealthy", "SystemOOM", "Evicted"]
    assert reasons(archive, node="core-9") == []


def test_time_window_catches_events_that_recurred_through_it(
    archive: Archive, incident: Incident
) -> None:
    window = {"since": T0 + timedelta(minutes=3), "until": T0 + timedelta(minutes=42)}
    # Unhealthy began at 19:00 and was last seen at 19:05: it was happening at 19:03.
    assert reasons(archive, **window) == ["Unhealthy", "SystemOOM", "Evicted", "FailedScheduling"]
    assert reasons(archive, since=T0 + timedelta(minutes=44)) == ["FailedScheduling"]
    assert reasons(archive, until=T0 - timedelta(minutes=5)) == ["Scheduled"]


def test_grep_is_case_insensitive_over_message_reason_and_object(
    archive: Archive, incident: Incident
) -> None:
    assert reasons(archive, grep="CONTEXT DEADLINE") == ["Unhealthy"]
    assert reasons(archive, grep="oom") == ["SystemOOM"]
    assert reasons(archive, grep="dask-worker") == ["FailedScheduling"]
    assert reasons(archive, grep="Insufficient memory") == ["FailedScheduling"]


def test_grep_takes_like_wildcards_literally(archive: Archive, incident: Incident) -> None:
    assert reasons(archive, grep="%") == []
    assert reasons(archive, grep="org_dedicated") == ["FailedScheduling"]
    assert reasons(archive, grep="jupyter_org") == []  # "_" is not "any character"
    assert [e.reason for e in find_events(archive, EventQuery(grep="100%_done"))] == ["BackOff"]
    assert find_events(archive, EventQuery(grep="100%xdone")) == []
    assert find_events(archive, EventQuery(grep="\\")) == []


def test_limit_keeps_the_newest_in_time_order(archive: Archive, incident: Incident) -> None:
    assert reasons(archive, limit=2) == ["Evicted", "FailedScheduling"]
    assert reasons(archive, limit=0) == []


def test_events_without_times_come_first(archive: Archive, incident: Incident) -> None:
    [dated] = find_events(archive, EventQuery(cluster="staging"))
    body = event(involved=incident.hub, reason="Killing", message="Stopping container hub")
    row = extraction.event_row(body)
    assert row is not None
    archive.write(
        Batch("staging", events=[replace(row, uid="no-time", first_seen=None, last_seen=None)])
    )
    found = find_events(archive, EventQuery(cluster="staging"))
    assert [e.uid for e in found] == ["no-time", dated.uid]
    assert find_events(archive, EventQuery(cluster="staging", since=T0)) == [dated]


def test_newest_event_time_is_the_archives_now(archive: Archive, incident: Incident) -> None:
    assert queries.newest_event_time(archive) == T0 + timedelta(minutes=45)
    assert queries.newest_event_time(archive, cluster="staging") == T0 + timedelta(minutes=30)
    assert queries.newest_event_time(archive, cluster="nowhere") is None


def test_clusters_lists_every_cluster_once(archive: Archive, incident: Incident) -> None:
    assert queries.clusters(archive) == [CLUSTER, "staging"]
    archive.write(Batch("metrics-only", checkpoints={"v1/events": "42"}))
    assert queries.clusters(archive.engine) == [CLUSTER, "metrics-only", "staging"]


# -- kinds ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pod/hub-0", ("Pod", "hub-0")),
        ("po/hub-0", ("Pod", "hub-0")),
        ("deploy/hub", ("Deployment", "hub")),
        ("deployments.apps/hub", ("Deployment", "hub")),
        ("sts/prometheus", ("StatefulSet", "prometheus")),
        ("node/core-2", ("Node", "core-2")),
        ("no/core-2", ("Node", "core-2")),
        ("hpa/web", ("HorizontalPodAutoscaler", "web")),
        ("NotebookServer/alice", ("NotebookServer", "alice")),
    ],
)
def test_object_flag_spellings(text: str, expected: tuple[str, str]) -> None:
    assert queries.parse_object(text) == expected


@pytest.mark.parametrize("text", ["hub-0", "pod/", "/hub-0", "pod/ns/hub-0", ""])
def test_object_flag_must_be_kind_slash_name(text: str) -> None:
    with pytest.raises(ValueError, match="KIND/NAME"):
        queries.parse_object(text)


# -- OOM kills and evictions ------------------------------------------------------------------


def test_oom_report_merges_kills_and_evictions_in_time_order(
    archive: Archive, incident: Incident
) -> None:
    kill, eviction = oom_report(archive, cluster=CLUSTER)
    assert (kill.kind, kill.time, kill.container, kill.node) == (
        "oom-kill",
        T0 + timedelta(minutes=20),
        "hub",
        "core-2",
    )
    # The last sample at or before the kill (19:19:30), not the one after the restart.
    assert (kill.usage, kill.usage_source, kill.usage_at) == (
        1000 * MI,
        "metrics",
        T0 + timedelta(minutes=19, seconds=30),
    )
    assert (kill.request, kill.limit, kill.restart_count, kill.exit_code) == (
        128 * MI,
        1024 * MI,
        1,
        137,
    )
    assert (kill.owner_kind, kill.owner_name) == ("ReplicaSet", "hub-5d8f7c9b4")
    assert (eviction.kind, eviction.time, eviction.container) == (
        "eviction",
        T0 + timedelta(minutes=40),
        "hub",
    )
    assert (eviction.usage, eviction.usage_source, eviction.request) == (
        318892 * 1024,
        "message",
        128 * MI,
    )
    # The limit and restarts come from the container's archived terminations.
    assert (eviction.limit, eviction.restart_count) == (1024 * MI, 1)
    assert (eviction.threshold, eviction.available) == ("100Mi", "91436Ki")
    assert eviction.message.startswith("The node was low on resource: memory.")


def test_kill_without_a_sample_reports_at_least_the_limit(
    archive: Archive, incident: Incident
) -> None:
    [kill] = oom_report(archive, cluster="staging")
    assert (kill.usage, kill.usage_source, kill.limit) == (512 * MI, "limit", 512 * MI)


def test_a_sample_older_than_ten_minutes_does_not_count(
    archive: Archive, incident: Incident
) -> None:
    again = oom_killed(incident.hub, killed_at=timedelta(minutes=35), container_id="cri-o://e5")
    archive.write(Batch(CLUSTER, terminations=extraction.terminations(again)))
    kills = [e for e in oom_report(archive, cluster=CLUSTER) if e.kind == "oom-kill"]
    assert [(e.time, e.usage_source) for e in kills] == [
        (T0 + timedelta(minutes=20), "metrics"),
        # The last sample, at 19:20:30, is 14.5 minutes older than this kill.
        (T0 + timedelta(minutes=35), "limit"),
    ]
    assert timedelta(minutes=10) == queries.SAMPLE_MAX_AGE


def test_oom_report_filters(archive: Archive, incident: Incident) -> None:
    def kinds(**filters: object) -> list[tuple[str, str]]:
        return [(e.cluster, e.kind) for e in oom_report(archive, **filters)]  # type: ignore[arg-type]

    assert kinds() == [(CLUSTER, "oom-kill"), ("staging", "oom-kill"), (CLUSTER, "eviction")]
    assert kinds(namespace="shop") == [("staging", "oom-kill")]
    assert kinds(node="core-2") == [(CLUSTER, "oom-kill"), (CLUSTER, "eviction")]
    assert kinds(since=T0 + timedelta(minutes=25)) == [
        ("staging", "oom-kill"),
        (CLUSTER, "eviction"),
    ]
    assert kinds(until=T0 + timedelta(minutes=25)) == [(CLUSTER, "oom-kill")]
    assert kinds(cluster="nowhere") == []
