"""unschedulable-pods: FailedScheduling reasons counted per owner of pods still Pending."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.unschedulable import UnschedulableConfig, unschedulable_pods
from kubemedic.model.view import ClusterView
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import container, deployment, event, node, pod, replicaset
from tests.incident3 import FIT_ERROR, FIT_ERROR_REASONS

NOW = timedelta(hours=1)
INSUFFICIENT = "0/126 nodes are available: 100 Insufficient cpu, 26 Insufficient memory."


def workers(replicas: int = 3) -> tuple[dict[str, Any], dict[str, Any]]:
    owner = deployment(
        "dask-worker",
        namespace="dask",
        replicas=replicas,
        containers=[container("worker", requests={"cpu": "3", "memory": "12Gi"})],
        created=timedelta(days=-1),
    )
    return owner, replicaset(owner, pod_hash="7c9d5f8b6", created=timedelta(days=-1))


def pending(name: str, rs: dict[str, Any], *, created: timedelta) -> dict[str, Any]:
    return pod(name, namespace="dask", owner=rs, phase="Pending", created=created)


def failed(
    target: dict[str, Any], message: str, *, count: int, first: timedelta, last: timedelta
) -> dict[str, Any]:
    return event(
        involved=target,
        reason="FailedScheduling",
        message=message,
        count=count,
        first=first,
        last=last,
        component="default-scheduler",
    )


def run(*bodies: dict[str, Any], config: UnschedulableConfig | None = None) -> list[Finding]:
    view = ClusterView.build(bodies, at=BASE_TIME + NOW)
    return unschedulable_pods(view, config or UnschedulableConfig())


def test_incident_3_dask_workers_are_aggregated_per_deployment_with_real_counts() -> None:
    owner, rs = workers()
    started = NOW - timedelta(minutes=12)
    pods = [pending(f"dask-worker-7c9d5f8b6-{s}", rs, created=started) for s in ("abcde", "fghij")]
    late = pending("dask-worker-7c9d5f8b6-klmno", rs, created=NOW - timedelta(minutes=2))
    events = [
        failed(pods[0], INSUFFICIENT, count=4, first=started, last=NOW - timedelta(minutes=5)),
        failed(pods[0], FIT_ERROR, count=5, first=started, last=NOW - timedelta(seconds=30)),
        failed(pods[1], FIT_ERROR, count=3, first=started, last=NOW - timedelta(minutes=1)),
        failed(late, FIT_ERROR, count=2, first=NOW - timedelta(minutes=2), last=NOW),
    ]
    findings = run(owner, rs, *pods, late, *events, node("core-1", heartbeat=NOW))

    [finding] = findings
    assert finding.object.kind == "Deployment"
    assert (finding.object.namespace, finding.object.name) == ("dask", "dask-worker")
    assert finding.severity is Severity.CRITICAL
    assert finding.cause == (
        "unschedulable:taint:node.kubernetes.io/not-ready@dask/Deployment/dask-worker"
    )
    evidence = finding.evidence
    assert evidence["owner"] == "dask/Deployment/dask-worker"
    assert evidence["pods"] == 3
    assert evidence["events"] == 14
    assert evidence["nodesTotal"] == 126
    assert evidence["reasons"] == FIT_ERROR_REASONS
    assert evidence["reasonClass"] == "taint:node.kubernetes.io/not-ready"
    assert evidence["preemption"] is None
    assert evidence["partial"] is False
    assert evidence["lastMessage"] == FIT_ERROR
    assert evidence["pendingForSeconds"] == 720
    assert evidence["firstSeen"] == "2023-02-01T19:48:00Z"
    assert evidence["lastSeen"] == "2023-02-01T20:00:00Z"
    assert finding.first_seen == BASE_TIME + started
    assert "3 pods of dask/Deployment/dask-worker" in finding.message
    assert "96 node(s) had untolerated taint" in finding.message
    json.dumps(finding.to_json())


def test_recently_pending_pods_are_a_warning() -> None:
    owner, rs = workers()
    fresh = pending("dask-worker-7c9d5f8b6-abcde", rs, created=NOW - timedelta(minutes=3))
    note = failed(fresh, INSUFFICIENT, count=1, first=NOW - timedelta(minutes=3), last=NOW)
    [finding] = run(owner, rs, fresh, note)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["pendingForSeconds"] == 180
    assert finding.evidence["reasonClass"] == "insufficient-cpu"
    assert finding.cause == "unschedulable:insufficient-cpu@dask/Deployment/dask-worker"
    tight = UnschedulableConfig(critical_after_seconds=60)
    assert run(owner, rs, fresh, note, config=tight)[0].severity is Severity.CRITICAL


def test_pods_that_got_scheduled_are_silent_despite_old_events() -> None:
    owner, rs = workers()
    running = pod(
        "dask-worker-7c9d5f8b6-abcde",
        namespace="dask",
        owner=rs,
        node_name="dask-1",
        created=NOW - timedelta(minutes=20),
    )
    old = failed(running, FIT_ERROR, count=9, first=NOW - timedelta(minutes=20), last=NOW)
    assert run(owner, rs, running, old) == []


def test_healthy_cluster_is_silent() -> None:
    owner, rs = workers(1)
    running = pod("dask-worker-7c9d5f8b6-abcde", namespace="dask", owner=rs, node_name="n-1")
    assert run(owner, rs, running, node("n-1")) == []


def test_preemption_postfix_lands_in_evidence() -> None:
    owner, rs = workers(1)
    waiting = pending("dask-worker-7c9d5f8b6-abcde", rs, created=NOW - timedelta(minutes=1))
    message = (
        "0/7 nodes are available: 1 node(s) didn't match pod topology spread constraints "
        "(missing required label), 6 node(s) had volume node affinity conflict. "
        "preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
    )
    [finding] = run(owner, rs, waiting, failed(waiting, message, count=1, first=NOW, last=NOW))
    assert finding.evidence["preemption"] == {
        "message": "preemption: 0/7 nodes are available: 7 Preemption is not helpful for "
        "scheduling.",
        "nodesTotal": 7,
        "reasons": {"Preemption is not helpful for scheduling": 7},
    }
    assert finding.evidence["reasonClass"] == "volume"


def test_condition_message_outlives_expired_events() -> None:
    owner, rs = workers(1)
    waiting = pending("dask-worker-7c9d5f8b6-abcde", rs, created=NOW - timedelta(hours=3))
    waiting["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": FIT_ERROR,
            "lastTransitionTime": "2023-02-01T17:00:00Z",
        }
    ]
    [finding] = run(owner, rs, waiting)
    assert finding.evidence["events"] == 0
    assert finding.evidence["pods"] == 1
    assert finding.evidence["nodesTotal"] == 126
    assert finding.evidence["pendingForSeconds"] == 3 * 3600
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["firstSeen"] == "2023-02-01T17:00:00Z"


def test_scheduling_gated_pod_without_events_is_silent() -> None:
    owner, rs = workers(1)
    gated = pending("dask-worker-7c9d5f8b6-abcde", rs, created=NOW - timedelta(hours=1))
    gated["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
    ]
    assert run(owner, rs, gated) == []


def test_events_of_pods_gone_from_the_snapshot_count_when_recent() -> None:
    owner, rs = workers()
    gone = pending("dask-worker-7c9d5f8b6-zzzzz", rs, created=NOW - timedelta(minutes=30))
    recent = failed(gone, INSUFFICIENT, count=6, first=NOW - timedelta(minutes=30), last=NOW)
    [finding] = run(owner, rs, recent)
    assert finding.object.kind == "Deployment" and finding.object.name == "dask-worker"
    assert finding.evidence["pods"] == 1
    assert finding.evidence["events"] == 6
    assert finding.evidence["pendingForSeconds"] == 1800

    stale = failed(
        gone, INSUFFICIENT, count=6, first=NOW - timedelta(hours=5), last=NOW - timedelta(hours=2)
    )
    assert run(owner, rs, stale) == []


def test_gone_pod_owner_guessed_from_deployment_name_without_replicaset() -> None:
    owner, rs = workers()
    gone = pending("dask-worker-7c9d5f8b6-zzzzz", rs, created=NOW)
    [finding] = run(owner, failed(gone, INSUFFICIENT, count=1, first=NOW, last=NOW))
    assert finding.object.kind == "Deployment"
    assert finding.evidence["owner"] == "dask/Deployment/dask-worker"


def test_gone_pod_without_known_owner_is_reported_on_the_pod() -> None:
    lone = pod("dask-scheduler-x", namespace="dask", phase="Pending", created=NOW)
    [finding] = run(failed(lone, INSUFFICIENT, count=2, first=NOW, last=NOW))
    assert finding.object.kind == "Pod"
    assert finding.evidence["owner"] == "dask/Pod/dask-scheduler-x"


def test_events_about_an_earlier_pod_of_the_same_name_are_ignored() -> None:
    previous = pod("web-0", namespace="shop", phase="Pending", created=NOW - timedelta(hours=1))
    note = failed(previous, INSUFFICIENT, count=3, first=NOW - timedelta(minutes=50), last=NOW)
    current = pod("web-0", namespace="shop", phase="Pending", created=NOW)
    current["metadata"]["uid"] = "11111111-2222-3333-4444-555555555555"
    assert run(current, note) == []


def test_messages_other_schedulers_write_are_kept_but_unclassified() -> None:
    lone = pod("train-0", namespace="ml", phase="Pending", created=NOW - timedelta(minutes=1))
    message = "pod group is not ready, 1 Pending, 4 minMember"
    [finding] = run(lone, failed(lone, message, count=1, first=NOW, last=NOW))
    assert finding.evidence["reasonClass"] == "unknown"
    assert finding.evidence["reasons"] == {}
    assert finding.evidence["nodesTotal"] is None
    assert finding.evidence["lastMessage"] == message
    assert finding.cause == "unschedulable:unknown@ml/Pod/train-0"


def test_each_owner_gets_its_own_finding() -> None:
    owner, rs = workers(1)
    other = deployment("api", namespace="shop", created=timedelta(days=-1))
    other_rs = replicaset(other, pod_hash="66b9f7c5d4", created=timedelta(days=-1))
    a = pending("dask-worker-7c9d5f8b6-abcde", rs, created=NOW)
    b = pod("api-66b9f7c5d4-qwert", namespace="shop", owner=other_rs, phase="Pending", created=NOW)
    findings = run(
        owner,
        rs,
        other,
        other_rs,
        a,
        b,
        failed(a, INSUFFICIENT, count=1, first=NOW, last=NOW),
        failed(
            b,
            "0/3 nodes are available: 3 node(s) were unschedulable.",
            count=1,
            first=NOW,
            last=NOW,
        ),
    )
    assert [finding.evidence["owner"] for finding in findings] == [
        "dask/Deployment/dask-worker",
        "shop/Deployment/api",
    ]
    assert findings[1].evidence["reasonClass"] == "node-unschedulable"
