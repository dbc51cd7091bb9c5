"""Events as client-go's recorders write them: counts, aggregation, spam filter, series."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import COMBINED_PREFIX, EventRecorder, SeriesRecorder

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _sim_with_pod(name: str = "web") -> tuple[Simulation, dict[str, object]]:
    sim = Simulation(start=START)
    client = Client(sim.server, "kubectl-create")
    client.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    pod = client.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop"},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]},
        }
    )
    return sim, pod


def _events(sim: Simulation) -> list[dict[str, object]]:
    return list(sim.objects("events"))


def test_identical_events_patch_count_and_last_timestamp() -> None:
    sim, pod = _sim_with_pod()
    recorder = EventRecorder(sim, component="kubelet", host="node-1", manager="kubelet")
    for _ in range(3):
        recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container c")
        sim.run_for(20)
    [event] = _events(sim)
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-03-01T12:00:00Z"
    assert event["lastTimestamp"] == "2026-03-01T12:00:40Z"
    assert event["source"] == {"component": "kubelet", "host": "node-1"}
    assert event["involvedObject"]["name"] == "web"  # type: ignore[index]
    assert str(event["metadata"]["name"]).startswith("web.")  # type: ignore[index]
    assert event["metadata"]["namespace"] == "shop"  # type: ignore[index]


def test_the_tenth_distinct_message_starts_a_combined_event() -> None:
    sim, pod = _sim_with_pod()
    recorder = EventRecorder(sim, component="kubelet", host="node-1")
    for i in range(14):
        recorder.event(pod, "Warning", "Unhealthy", f"Liveness probe failed: attempt {i}")
        sim.run_for(5)
    events = _events(sim)
    combined = [e for e in events if str(e["message"]).startswith(COMBINED_PREFIX)]
    assert len(events) == 10
    assert len(combined) == 1
    assert combined[0]["count"] == 5
    assert str(combined[0]["message"]).endswith("attempt 13")


def test_identical_events_never_combine() -> None:
    sim, pod = _sim_with_pod()
    recorder = EventRecorder(sim, component="kubelet", host="node-1")
    for _ in range(20):
        recorder.event(pod, "Warning", "BackOff", "Back-off restarting failed container c")
        sim.run_for(20)
    [event] = _events(sim)
    assert event["count"] == 20
    assert not str(event["message"]).startswith(COMBINED_PREFIX)


def test_spam_filter_drops_events_past_a_burst_of_25_per_object() -> None:
    sim, pod = _sim_with_pod()
    recorder = EventRecorder(sim, component="kubelet", host="node-1")
    for i in range(30):
        recorder.event(pod, "Normal", f"Reason{i}", "something happened")
    assert recorder.dropped == 5
    assert len(_events(sim)) == 25
    sim.run_for(timedelta(minutes=5))
    recorder.event(pod, "Normal", "Later", "a token came back")
    assert recorder.dropped == 5


def test_events_expire_after_the_event_ttl_and_a_new_one_is_written() -> None:
    sim, pod = _sim_with_pod()
    recorder = EventRecorder(sim, component="kubelet", host="node-1")
    recorder.event(pod, "Warning", "BackOff", "Back-off")
    sim.run_for(timedelta(minutes=61))
    assert _events(sim) == []
    recorder.event(pod, "Warning", "BackOff", "Back-off")
    [event] = _events(sim)
    assert event["count"] == 1


def test_scheduler_series_start_on_the_second_occurrence_and_end_after_six_minutes() -> None:
    sim, pod = _sim_with_pod()
    recorder = SeriesRecorder(
        sim, controller="default-scheduler", instance="default-scheduler-0", manager="x"
    )
    note = "0/3 nodes are available: 3 Insufficient memory."
    recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", note)
    [first] = _events(sim)
    assert "series" not in first
    assert first["reportingComponent"] == "default-scheduler"
    assert first["eventTime"] == "2026-03-01T12:00:00.000000Z"
    sim.run_for(10)
    recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", note)
    [second] = _events(sim)
    assert second["series"]["count"] == 2  # type: ignore[index]
    for _ in range(3):
        sim.run_for(10)
        recorder.event(pod, "Warning", "FailedScheduling", "Scheduling", note)
    [cached] = _events(sim)
    assert cached["series"]["count"] == 2  # later counts wait in the recorder's cache  # type: ignore[index]
    sim.run_for(timedelta(minutes=8))
    [finished] = _events(sim)
    assert finished["series"]["count"] == 5  # type: ignore[index]
    assert finished["series"]["lastObservedTime"] == "2026-03-01T12:00:40.000000Z"  # type: ignore[index]
