"""The eviction manager's ranking under memory pressure and the words it leaves behind."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubemedic.sim.cluster.kubelet import evicting
from kubemedic.testing import bodies as builders

MI = 1024 * 1024
GI = 1024 * MI


def _pod(
    name: str,
    *,
    memory: str | None = None,
    priority: int = 0,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    requests = {"memory": memory} if memory else None
    return builders.pod(
        name,
        namespace="jhub",
        node_name="core-1",
        containers=containers or [builders.container(name, requests=requests)],
        priority=priority,
    )


def _rank(pods: list[dict[str, Any]], usage: dict[str, int | None]) -> list[str]:
    def stats(pod: Any) -> dict[str, int] | None:
        used = usage[pod["metadata"]["name"]]
        return None if used is None else {pod["metadata"]["name"]: used}

    return [p["metadata"]["name"] for p in evicting.rank_memory_pressure(pods, stats)]


def test_a_hub_over_its_request_goes_before_a_prometheus_under_its_request() -> None:
    prometheus = _pod("prometheus", memory="20Gi")
    hub = _pod("hub", memory="128Mi")
    usage = {"prometheus": 19 * GI, "hub": 300 * MI}
    assert _rank([prometheus, hub], usage) == ["hub", "prometheus"]


def test_among_pods_over_their_requests_lower_priority_goes_first() -> None:
    critical = _pod("proxy", memory="64Mi", priority=1000)
    batch = _pod("batch", memory="64Mi", priority=0)
    usage = {"proxy": 900 * MI, "batch": 100 * MI}
    assert _rank([critical, batch], usage) == ["batch", "proxy"]


def test_at_equal_priority_the_largest_use_above_request_goes_first() -> None:
    pods = [_pod("a", memory="1Gi"), _pod("b", memory="100Mi"), _pod("c", memory="2Gi")]
    usage = {"a": 1100 * MI, "b": 600 * MI, "c": 2200 * MI}
    assert _rank(pods, usage) == ["b", "c", "a"]


def test_under_their_requests_priority_then_usage_above_request_decide() -> None:
    pods = [_pod("low", memory="1Gi"), _pod("high", memory="1Gi", priority=5), _pod("x")]
    # "x" has no request: any usage exceeds it.
    usage = {"low": 500 * MI, "high": 10 * MI, "x": 1 * MI}
    assert _rank(pods, usage) == ["x", "low", "high"]


def test_pods_without_stats_are_evicted_first() -> None:
    pods = [_pod("a", memory="1Gi"), _pod("ghost", memory="1Gi")]
    assert _rank(pods, {"a": 2 * GI, "ghost": None}) == ["ghost", "a"]


def test_the_message_reads_as_the_kubelet_writes_it() -> None:
    hub = _pod("hub", memory="128Mi")
    message, annotations = evicting.eviction_message(
        hub, {"hub": 312344 * 1024}, threshold="100Mi", available=93704 * 1024
    )
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 93704Ki. "
        "Container hub was using 312344Ki, request is 128Mi, has larger consumption of memory. "
    )
    assert annotations == {
        "offending_containers": "hub",
        "offending_containers_usage": "312344Ki",
        "starved_resource": "memory",
    }


def test_only_containers_over_their_request_are_named() -> None:
    pod = _pod(
        "web",
        containers=[
            builders.container("app", requests={"memory": "1G"}),
            builders.container("sidecar"),
            builders.container("idle", requests={"memory": "1Gi"}),
        ],
    )
    stats = {"app": 1_000_000_001, "sidecar": 4096, "idle": 10 * MI}
    message, annotations = evicting.eviction_message(pod, stats, threshold="100Mi", available=1000)
    assert message == (
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 1k. "
        "Container app was using 1000000001, request is 1G, has larger consumption of memory. "
        "Container sidecar was using 4Ki, request is 0, has larger consumption of memory. "
    )
    assert annotations["offending_containers"] == "app,sidecar"
    assert annotations["offending_containers_usage"] == "1000000001,4Ki"


def test_a_pod_without_stats_gets_the_node_part_only() -> None:
    message, annotations = evicting.eviction_message(
        _pod("hub"), None, threshold="100Mi", available=-5
    )
    assert (
        message == "The node was low on resource: memory. Threshold quantity: 100Mi, available: 0. "
    )
    assert annotations == {}


def test_the_pod_request_sums_containers_and_takes_init_containers_and_overhead() -> None:
    pod = _pod(
        "web",
        containers=[
            builders.container("a", requests={"memory": "100Mi"}),
            builders.container("b", requests={"memory": "50Mi"}),
        ],
    )
    assert evicting.pod_request(pod) == 150 * MI
    pod["spec"]["initContainers"] = [builders.container("init", requests={"memory": "1Gi"})]
    assert evicting.pod_request(pod) == GI
    pod["spec"]["overhead"] = {"memory": "64Mi"}
    assert evicting.pod_request(pod) == GI + 64 * MI


def test_static_mirror_and_system_critical_pods_are_critical() -> None:
    assert not evicting.is_critical(_pod("web"))
    assert evicting.is_critical(_pod("dns", priority=2_000_000_000))
    mirror = _pod("etcd")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "abc"}
    assert evicting.is_critical(mirror)


def test_an_evicted_pod_is_failed_with_its_containers_gone() -> None:
    pod = _pod("hub", memory="128Mi")
    status = evicting.evicted_status(pod, "The node was low on resource: memory. ", now="T")
    assert status["phase"] == "Failed"
    assert status["reason"] == "Evicted"
    [target, *_] = status["conditions"]
    assert target == {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "TerminationByKubelet",
        "message": "The node was low on resource: memory. ",
        "lastTransitionTime": "T",
        "lastProbeTime": None,
    }
    [container] = status["containerStatuses"]
    assert container["ready"] is False
    assert container["state"]["terminated"]["exitCode"] == 137
    assert container["state"]["terminated"]["reason"] == "ContainerStatusUnknown"


def test_the_evicted_event_carries_the_annotations() -> None:
    pod = _pod("hub", memory="128Mi")
    moment = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    event = evicting.evicted_event(
        pod, "msg", {"starved_resource": "memory"}, node="core-1", moment=moment
    )
    assert event["metadata"]["annotations"] == {"starved_resource": "memory"}
    assert event["metadata"]["namespace"] == "jhub"
    assert event["involvedObject"]["name"] == "hub"
    assert event["source"] == {"component": "kubelet", "host": "core-1"}
    assert (event["type"], event["reason"], event["lastTimestamp"]) == (
        "Warning",
        "Evicted",
        "2026-01-01T00:05:00Z",
    )
