"""The usage model: what each container uses, from its annotation, requests, age and the cluster."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.usage import (
    UsageError,
    UsageModel,
    allocate_cpu,
    parse_usage,
    system_usage,
)
from kubemedic.testing import bodies as builders

START = datetime(2026, 1, 1, tzinfo=UTC)
MI = 1024 * 1024
GI = 1024 * MI


def _pod(
    usage: dict[str, Any] | None = None,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    started: datetime = START,
    name: str = "app",
) -> dict[str, Any]:
    pod = builders.pod(
        "web",
        node_name="n1",
        containers=[builders.container(name, requests=requests, limits=limits)],
        created=started,
    )
    if usage is not None:
        pod["metadata"]["annotations"] = {f"usage.sim.kubemedic.io/{name}": json.dumps(usage)}
    return pod


def _at(seconds: float) -> float:
    return START.timestamp() + seconds


def test_defaults_are_half_the_memory_request_and_thirty_percent_of_the_cpu_request() -> None:
    model = UsageModel()
    pod = _pod(requests={"memory": "512Mi", "cpu": "500m"})
    assert model.memory(pod, "app", _at(60)) == 256 * MI
    assert model.cpu(pod, "app", _at(60)) == 150


def test_defaults_without_requests_are_64Mi_and_10m_and_limits_stand_in_for_requests() -> None:
    model = UsageModel()
    assert model.memory(_pod(), "app", _at(1)) == 64 * MI
    assert model.cpu(_pod(), "app", _at(1)) == 10
    limited = _pod(limits={"memory": "1Gi", "cpu": "1"})
    assert model.memory(limited, "app", _at(1)) == 512 * MI
    assert model.cpu(limited, "app", _at(1)) == 300


def test_memory_grows_per_hour_since_the_container_started_and_stops_at_its_cap() -> None:
    model = UsageModel()
    pod = _pod({"memory": "100Mi", "memoryPerHour": "60Mi", "memoryMax": "200Mi"})
    assert model.memory(pod, "app", _at(0)) == 100 * MI
    assert model.memory(pod, "app", _at(1800)) == 130 * MI
    assert model.memory(pod, "app", _at(3 * 3600)) == 200 * MI
    restarted = _pod(
        {"memory": "100Mi", "memoryPerHour": "60Mi"}, started=START + timedelta(hours=2)
    )
    assert model.memory(restarted, "app", _at(2 * 3600 + 600)) == 110 * MI


def test_per_node_usage_follows_the_node_count_of_the_cluster() -> None:
    sim = Simulation(start=START)
    sim.server.load([builders.node(f"n{i}") for i in range(3)])
    model = sim.add(UsageModel())
    pod = _pod({"memory": "1Gi", "memoryPerNode": "10Mi", "cpu": "100m", "cpuPerNode": "5m"})
    assert model.node_count == 3
    assert model.memory(pod, "app", _at(1)) == GI + 30 * MI
    sim.server.load([builders.node(f"m{i}") for i in range(100)])
    assert model.node_count == 103
    assert model.memory(pod, "app", _at(1)) == GI + 1030 * MI
    assert model.cpu(pod, "app", _at(1)) == 100 + 5 * 103


def test_startup_cpu_applies_for_the_first_five_minutes_after_start() -> None:
    model = UsageModel()
    pod = _pod({"cpu": "20m", "startupCpu": "800m"})
    assert model.cpu(pod, "app", _at(10)) == 800
    assert model.cpu(pod, "app", _at(299)) == 800
    assert model.cpu(pod, "app", _at(300)) == 20


def test_a_container_that_is_not_running_uses_nothing() -> None:
    model = UsageModel()
    pod = _pod({"memory": "1Gi"})
    pod["status"]["containerStatuses"][0]["state"] = {"waiting": {"reason": "CrashLoopBackOff"}}
    assert model.memory(pod, "app", _at(10)) == 0
    assert model.cpu(pod, "app", _at(10)) == 0
    assert model.pod_memory(pod, _at(10)) == 0


def test_working_sets_are_whole_pages() -> None:
    model = UsageModel()
    pod = _pod({"memory": "100000"})
    assert model.memory(pod, "app", _at(1)) == 98304


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{not json", "not JSON"),
        ("[1]", "must be a JSON object"),
        ('{"memroy": "1Gi"}', "unknown usage key(s) memroy"),
        ('{"memory": "lots"}', "invalid quantity 'lots'"),
        ('{"cpu": "-1"}', "must not be negative"),
    ],
)
def test_bad_annotations_are_reported_with_the_pod_and_container(text: str, fragment: str) -> None:
    with pytest.raises(UsageError) as caught:
        parse_usage(text, builders.container("hub"), where="pod jhub/hub-0 container hub")
    assert "pod jhub/hub-0 container hub" in str(caught.value)
    assert fragment in str(caught.value)


def test_a_bad_annotation_falls_back_to_the_defaults() -> None:
    model = UsageModel()
    pod = _pod(requests={"memory": "200Mi"})
    pod["metadata"]["annotations"] = {"usage.sim.kubemedic.io/app": "{oops"}
    assert model.memory(pod, "app", _at(1)) == 100 * MI


def test_a_changed_annotation_is_read_again() -> None:
    model = UsageModel()
    pod = _pod({"memory": "100Mi"})
    assert model.memory(pod, "app", _at(1)) == 100 * MI
    pod["metadata"]["annotations"]["usage.sim.kubemedic.io/app"] = '{"memory": "300Mi"}'
    assert model.memory(pod, "app", _at(1)) == 300 * MI


def test_contended_cpu_is_shared_in_proportion_to_requests() -> None:
    # 1000m for three containers needing 600m each, requests 100m, 100m, 800m: the big one's
    # share (800m) is more than it needs, so the rest goes to the two small ones.
    got = allocate_cpu(1000, [(600, 100, None), (600, 100, None), (600, 800, None)])
    assert got == [200, 200, 600]
    assert allocate_cpu(1000, [(2000, 100, None), (2000, 900, None)]) == [100, 900]
    # One needs little: it gets all of it, the rest is shared by weight.
    assert allocate_cpu(1000, [(50, 100, None), (900, 100, None), (900, 300, None)]) == [
        50,
        237,
        712,
    ]
    # Needs that fit are met, up to each container's limit.
    assert allocate_cpu(4000, [(500, 100, 200), (300, 0, None)]) == [200, 300]


def test_a_10m_request_starves_beside_a_big_one_when_the_node_is_saturated() -> None:
    hub, prometheus = allocate_cpu(2000, [(500, 10, None), (3000, 2000, None)])
    assert hub < 500
    assert prometheus > 1900


def test_system_daemons_use_what_the_node_reserves_unless_annotated() -> None:
    node = builders.node(
        "n1", cpu="4", memory="16Gi", allocatable_cpu="3800m", allocatable_memory="15Gi"
    )
    assert system_usage(node) == (GI - 100 * MI, 200)
    node["metadata"]["annotations"] = {
        "usage.sim.kubemedic.io/system": '{"memory": "2Gi", "cpu": "500m"}'
    }
    assert system_usage(node) == (2 * GI, 500)
