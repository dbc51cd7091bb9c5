"""node-not-ready: Ready False/Unknown, how long, why, and when repairs should brake."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from kubemedic.checks.findings import CLUSTER, Finding, Severity
from kubemedic.checks.notready import NotReadyConfig, node_not_ready
from kubemedic.model.view import ClusterView
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import node, node_lease, pod, stamp

NOW = timedelta(minutes=30)
WORKERS = {"cloud.google.com/gke-nodepool": "workers"}
STOPPED: dict[str, Any] = {
    "ready": "Unknown",
    "ready_reason": "NodeStatusUnknown",
    "ready_message": "Kubelet stopped posting node status.",
}


def healthy(name: str, **labels: str) -> dict[str, Any]:
    return node(name, labels=labels or WORKERS, heartbeat=NOW, created=timedelta(days=-3))


def not_ready(name: str, *, since: timedelta, message: str, **extra: object) -> dict[str, Any]:
    options: dict[str, Any] = {
        "ready": "False",
        "ready_reason": "KubeletNotReady",
        "ready_message": message,
        "heartbeat": NOW,
        "transition": since,
        "created": timedelta(days=-3),
        "labels": WORKERS,
    }
    options.update(extra)
    return node(name, **options)


def run(*bodies: dict[str, Any], config: NotReadyConfig | None = None) -> list[Finding]:
    view = ClusterView.build(bodies, at=BASE_TIME + NOW)
    return node_not_ready(view, config or NotReadyConfig())


def only_node_findings(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.object.kind == "Node"]


def test_incident_2_unknown_for_twelve_minutes_is_critical_kubelet_stopped_posting() -> None:
    taints = [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"},
    ]
    broken = node(
        "worker-7",
        labels=WORKERS,
        heartbeat=NOW - timedelta(minutes=12, seconds=40),
        transition=NOW - timedelta(minutes=12),
        created=timedelta(days=-3),
        taints=taints,
        **STOPPED,
    )
    bound = [pod(f"app-{i}", node_name="worker-7", created=timedelta(days=-1)) for i in range(3)]
    done = pod("job-1", node_name="worker-7", phase="Succeeded", created=timedelta(days=-1))
    findings = run(broken, healthy("worker-1"), healthy("worker-2"), *bound, done)

    [finding] = findings
    assert finding.severity is Severity.CRITICAL
    assert finding.object.kind == "Node" and finding.object.name == "worker-7"
    assert finding.cause == "node-not-ready:kubelet-stopped-posting@workers"
    assert finding.evidence == {
        "status": "Unknown",
        "reason": "NodeStatusUnknown",
        "message": "Kubelet stopped posting node status.",
        "causeClass": "kubelet-stopped-posting",
        "causeGroup": "kubelet-stopped-posting",
        "notReadyForSeconds": 720,
        "since": "2023-02-01T19:18:00Z",
        "lastHeartbeat": "2023-02-01T19:17:20Z",
        "heartbeatAgeSeconds": 760,
        "leaseSeen": False,
        "leaseRenewed": None,
        "leaseAgeSeconds": None,
        "leaseIgnored": None,
        "silentForSeconds": 760,
        "clockSkewSeconds": 0,
        "taints": [
            "node.kubernetes.io/unreachable:NoExecute",
            "node.kubernetes.io/unreachable:NoSchedule",
        ],
        "cordoned": False,
        "nodePool": "workers",
        "podsOnNode": 3,
        "neverReady": False,
    }
    assert "12m" in finding.message and "worker-7" in finding.message
    assert finding.first_seen == BASE_TIME + NOW - timedelta(minutes=12)
    json.dumps(finding.to_json())


def test_runtime_down_is_runtime_not_ready_and_warning_below_ten_minutes() -> None:
    findings = run(
        not_ready(
            "worker-3", since=NOW - timedelta(minutes=3), message="container runtime is down"
        ),
        healthy("worker-1"),
        healthy("worker-2"),
        healthy("worker-4"),
    )
    [finding] = findings
    assert finding.severity is Severity.WARNING
    assert finding.evidence["causeClass"] == "runtime-not-ready"
    assert finding.evidence["causeGroup"] == "runtime-not-ready"
    assert finding.evidence["notReadyForSeconds"] == 180
    assert finding.cause == "node-not-ready:runtime-not-ready@workers"


def test_ten_minutes_exactly_is_critical_and_threshold_is_configurable() -> None:
    body = not_ready("w", since=NOW - timedelta(minutes=10), message="container runtime is down")
    assert run(body)[0].severity is Severity.CRITICAL
    later = NotReadyConfig(critical_after_seconds=1800, brake_min_nodes=5)
    assert run(body, config=later)[0].severity is Severity.WARNING


def test_kubelet_messages_map_to_their_cause_classes() -> None:
    cases = {
        "container runtime network not ready: NetworkReady=false "
        "reason:NetworkPluginNotReady message:Network plugin returns error: "
        "cni plugin not initialized": ("network-not-ready", "runtime-not-ready"),
        "PLEG is not healthy: pleg was last seen active 3m5.30015447s ago; threshold is 3m0s": (
            "pleg-unhealthy",
            "runtime-not-ready",
        ),
        "[container runtime status check may not have completed yet, PLEG is not healthy: "
        "pleg has yet to be successful]": ("runtime-not-ready", "runtime-not-ready"),
        "node is shutting down": ("shutting-down", "shutting-down"),
        "missing node capacity for resources: ephemeral-storage": (
            "capacity-misconfigured",
            "other",
        ),
        "[container runtime is down, node is shutting down]": ("shutting-down", "shutting-down"),
        "some storage error": ("other", "other"),
    }
    for message, (klass, group) in cases.items():
        body = not_ready("w", since=NOW - timedelta(minutes=2), message=message)
        [finding] = run(body, config=NotReadyConfig(brake_min_nodes=5))
        assert (finding.evidence["causeClass"], finding.evidence["causeGroup"]) == (klass, group)
        assert finding.cause == f"node-not-ready:{klass}@workers"


def test_healthy_cluster_is_silent() -> None:
    assert run(*(healthy(f"w-{i}") for i in range(5))) == []


def test_booting_node_not_ready_for_thirty_seconds_is_silent() -> None:
    booting = not_ready(
        "new-1",
        since=NOW - timedelta(seconds=30),
        message="container runtime network not ready: NetworkReady=false",
    )
    assert run(booting, healthy("w-1")) == []


def test_ready_node_with_five_minute_old_heartbeat_is_normal_with_leases() -> None:
    quiet = node("w-2", labels=WORKERS, heartbeat=NOW - timedelta(minutes=5), created=-NOW)
    assert run(healthy("w-1"), quiet) == []


def test_ready_node_whose_heartbeat_went_stale_is_reported_as_heartbeat_stale() -> None:
    stale = node("w-2", labels=WORKERS, heartbeat=NOW - timedelta(minutes=9), created=-NOW)
    [finding] = run(healthy("w-1"), stale)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["causeClass"] == "heartbeat-stale"
    assert finding.evidence["causeGroup"] == "kubelet-stopped-posting"
    assert finding.evidence["heartbeatAgeSeconds"] == 540
    assert finding.evidence["notReadyForSeconds"] is None
    assert finding.cause == "node-not-ready:heartbeat-stale@workers"
    assert finding.evidence["leaseSeen"] is False
    assert finding.evidence["leaseRenewed"] is None
    assert "no Lease in kube-node-lease seen" in finding.message


def quiet_node(name: str, *, heartbeat: timedelta) -> dict[str, Any]:
    """Ready, with its status last posted ``heartbeat`` before now."""
    return node(name, labels=WORKERS, heartbeat=NOW - heartbeat, created=-NOW)


def test_a_fresh_lease_keeps_a_ready_node_with_an_old_status_heartbeat_healthy() -> None:
    # The kubelet posts an unchanged status every 5 minutes; a list that took a while, or a
    # report a little late, leaves it past 5m50s, while the Lease renewed 10s ago says it lives.
    quiet = quiet_node("w-2", heartbeat=timedelta(minutes=6, seconds=27))
    assert run(healthy("w-1"), quiet, node_lease("w-2", renewed=NOW - timedelta(seconds=8))) == []


def test_stale_only_when_both_the_lease_and_the_status_heartbeat_are_old() -> None:
    quiet = quiet_node("w-2", heartbeat=timedelta(minutes=9))
    lease = node_lease("w-2", renewed=NOW - timedelta(seconds=75))
    [finding] = run(healthy("w-1"), quiet, lease)
    evidence = finding.evidence
    assert evidence["causeClass"] == "heartbeat-stale"
    assert evidence["leaseSeen"] is True
    assert evidence["leaseRenewed"] == "2023-02-01T19:28:45.000000Z"
    assert evidence["leaseAgeSeconds"] == 75
    assert evidence["leaseIgnored"] is None
    assert evidence["silentForSeconds"] == 75
    assert evidence["heartbeatAgeSeconds"] == 540
    assert "not been heard from for 1m15s" in finding.message
    assert finding.first_seen == BASE_TIME + NOW - timedelta(seconds=75)


def test_a_recent_status_post_counts_even_when_the_lease_is_old() -> None:
    # The later of the two signs of life wins, as in the controller's tryUpdateNodeHealth.
    posted = quiet_node("w-2", heartbeat=timedelta(seconds=20))
    lease = node_lease("w-2", renewed=NOW - timedelta(minutes=4))
    assert run(posted, lease) == []


def test_a_lease_held_by_someone_else_does_not_count() -> None:
    quiet = quiet_node("w-2", heartbeat=timedelta(minutes=9))
    foreign = node_lease("w-2", renewed=NOW, holder="intruder")
    [finding] = run(quiet, foreign)
    assert finding.evidence["leaseSeen"] is True
    assert finding.evidence["leaseRenewed"] is None
    assert "held by 'intruder'" in finding.evidence["leaseIgnored"]
    assert "its Lease does not count" in finding.message


def test_a_lease_with_a_garbled_renew_time_falls_back_to_the_status_heartbeat() -> None:
    garbled = node_lease("w-2")
    garbled["spec"]["renewTime"] = "yesterday-ish"
    quiet = quiet_node("w-2", heartbeat=timedelta(minutes=5))
    assert run(quiet, garbled) == []  # 5 minutes is a quiet status, judged without the Lease
    [finding] = run(quiet_node("w-2", heartbeat=timedelta(minutes=7)), garbled)
    assert finding.evidence["leaseIgnored"] == "the Lease has no readable spec.renewTime"


def test_a_lease_renewed_ahead_of_now_is_heard_now_with_its_skew_in_evidence() -> None:
    skewed = node_lease("w-2", renewed=NOW + timedelta(seconds=12))
    assert run(quiet_node("w-2", heartbeat=timedelta(minutes=8)), skewed) == []
    down = quiet_node("w-2", heartbeat=timedelta(minutes=1))
    down["status"]["conditions"][-1].update(status="False", reason="KubeletNotReady")
    down["status"]["conditions"][-1]["lastTransitionTime"] = stamp(NOW - timedelta(minutes=3))
    [finding] = run(down, skewed)
    assert finding.evidence["clockSkewSeconds"] == 12
    assert finding.evidence["silentForSeconds"] == 0
    assert finding.evidence["leaseAgeSeconds"] == 0


def test_leases_of_other_namespaces_are_not_node_leases() -> None:
    leader = node_lease("w-2", renewed=NOW, namespace="kube-system")
    [finding] = run(quiet_node("w-2", heartbeat=timedelta(minutes=9)), leader)
    assert finding.evidence["leaseSeen"] is False


def test_the_lease_threshold_is_configurable() -> None:
    quiet = quiet_node("w-2", heartbeat=timedelta(minutes=9))
    lease = node_lease("w-2", renewed=NOW - timedelta(seconds=75))
    assert run(quiet, lease, config=NotReadyConfig(lease_stale_seconds=90)) == []


def test_cordoned_node_and_not_ready_taint_are_in_evidence() -> None:
    body = not_ready(
        "w-9",
        since=NOW - timedelta(minutes=4),
        message="container runtime is down",
        unschedulable=True,
        taints=[{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}],
    )
    [finding] = run(body, healthy("a"), healthy("b"), healthy("c"))
    assert finding.evidence["cordoned"] is True
    assert finding.evidence["taints"] == ["node.kubernetes.io/not-ready:NoSchedule"]


def test_many_nodes_not_ready_at_once_add_one_brake_finding() -> None:
    down = [
        node(
            f"dask-{i}",
            labels={"hub.jupyter.org/node-purpose": "user"},
            heartbeat=NOW - timedelta(minutes=16),
            transition=NOW - timedelta(minutes=15),
            created=timedelta(days=-1),
            **STOPPED,
        )
        for i in range(3)
    ]
    down.append(not_ready("w-x", since=NOW - timedelta(minutes=2), message="node is shutting down"))
    fine = [healthy(f"w-{i}") for i in range(6)]
    findings = run(*down, *fine)

    assert len(only_node_findings(findings)) == 4
    [mass] = [finding for finding in findings if finding.object == CLUSTER]
    assert mass.severity is Severity.CRITICAL
    assert mass.cause == "node-not-ready:mass@cluster"
    assert mass.evidence == {
        "notReady": 4,
        "nodesTotal": 10,
        "percent": 40.0,
        "thresholdPercent": 30.0,
        "byCauseClass": {"kubelet-stopped-posting": 3, "shutting-down": 1},
        "byPool": {"user": 3, "workers": 1},
        "nodes": ["dask-0", "dask-1", "dask-2", "w-x"],
    }
    assert "4 of 10" in mass.message and "40.0%" in mass.message
    assert mass.first_seen == BASE_TIME + NOW - timedelta(minutes=15)


def test_below_brake_fraction_no_cluster_finding() -> None:
    down = [
        not_ready(f"d-{i}", since=NOW - timedelta(minutes=20), message="container runtime is down")
        for i in range(2)
    ]
    findings = run(*down, *(healthy(f"w-{i}") for i in range(8)))
    assert len(findings) == 2
    assert all(finding.object.kind == "Node" for finding in findings)


def test_single_node_cluster_down_does_not_brake() -> None:
    body = not_ready("solo", since=NOW - timedelta(minutes=20), message="container runtime is down")
    findings = run(body)
    assert [finding.object.name for finding in findings] == ["solo"]


def test_stale_heartbeats_do_not_count_towards_the_brake() -> None:
    stale = [
        node(f"s-{i}", labels=WORKERS, heartbeat=NOW - timedelta(minutes=20), created=-NOW)
        for i in range(3)
    ]
    findings = run(*stale, healthy("w-1"))
    assert len(findings) == 3
    assert all(finding.object.kind == "Node" for finding in findings)


def test_missing_ready_condition_is_silent_and_missing_times_do_not_crash() -> None:
    registered = healthy("fresh")
    registered["status"]["conditions"] = []
    no_times = not_ready("odd", since=NOW, message="container runtime is down")
    ready = no_times["status"]["conditions"][-1]
    del ready["lastTransitionTime"], ready["lastHeartbeatTime"]
    garbage = healthy("junk")
    garbage["status"] = "not a mapping"
    findings = run(registered, no_times, garbage, config=NotReadyConfig(brake_min_nodes=5))
    [finding] = findings
    assert finding.object.name == "odd"
    assert finding.severity is Severity.WARNING
    assert finding.evidence["notReadyForSeconds"] is None
    assert finding.evidence["since"] is None
    assert finding.first_seen == BASE_TIME + NOW


CNI_PENDING = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


def test_nodes_still_starting_after_a_scale_up_are_neither_reported_nor_braked() -> None:
    # 100 nodes joined three minutes ago and wait for their CNI: a scale-up, not an outage.
    joining = [
        not_ready(f"dask-{i}", since=NOW - timedelta(minutes=3), message=CNI_PENDING)
        for i in range(10)
    ]
    for body in joining:
        body["metadata"]["creationTimestamp"] = stamp(NOW - timedelta(minutes=3, seconds=5))
    assert run(healthy("core-1"), healthy("core-2"), *joining) == []


def test_a_node_never_ready_past_the_startup_timeout_is_reported_as_such() -> None:
    stuck = not_ready("dask-9", since=NOW - timedelta(minutes=11), message=CNI_PENDING)
    stuck["metadata"]["creationTimestamp"] = stamp(NOW - timedelta(minutes=11, seconds=20))
    [finding] = run(healthy("core-1"), stuck)
    assert finding.evidence["neverReady"] is True
    assert finding.evidence["causeClass"] == "network-not-ready"
    assert finding.severity is Severity.CRITICAL
    assert "never been Ready since it joined" in finding.message
