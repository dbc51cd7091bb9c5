"""Finding episodes and signals for incident tests, shaped like what the checks and the archive
produce for incident 3 (core-node-prometheus), incident 1 (the pinned storm) and incident 2
(NotReady nodes). Evidence keeps the keys and numbers the checks write, trimmed to what the
incident code reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.checks.findings import Severity
from kubemedic.incidents.model import FindingEpisode, Signal, SignalKind
from kubemedic.model.objects import ObjectRef

T0 = datetime(2023, 2, 1, 19, 0, tzinfo=UTC)
CLUSTER = "leap"
PROMETHEUS = "support/Deployment/support-prometheus-server"
HUB = "prod/Deployment/hub"
MEMORY_CAUSE = f"memory-pressure:{PROMETHEUS}@core-pool"


def minutes(value: float) -> timedelta:
    return timedelta(minutes=value)


def episode(
    check: str,
    cause: str,
    *,
    obj: ObjectRef,
    first: datetime,
    last: datetime | None = None,
    severity: Severity = Severity.WARNING,
    message: str = "",
    evidence: Mapping[str, Any] | None = None,
    cluster: str = CLUSTER,
) -> FindingEpisode:
    return FindingEpisode(
        cluster=cluster,
        check=check,
        severity=severity,
        object=obj,
        message=message or f"{check} about {obj}",
        cause=cause,
        first_seen=first,
        last_seen=last or first,
        evidence=dict(evidence or {}),
        fingerprint=f"{check}|{obj}|{cause}",
    )


def signal(
    kind: SignalKind,
    at: datetime,
    *,
    pod: str = "",
    namespace: str = "prod",
    node: str = "",
    workload: str = "",
    summary: str = "",
    source_id: str = "1",
    cluster: str = CLUSTER,
    detail: Mapping[str, Any] | None = None,
) -> Signal:
    return Signal(
        kind=kind,
        at=at,
        cluster=cluster,
        namespace=namespace if pod else "",
        object_kind="Pod" if pod else "Node",
        object_name=pod or node,
        node=node,
        summary=summary or f"{kind.value} {pod or node}",
        source="evictions" if kind is SignalKind.EVICTION else "events",
        source_id=source_id,
        workload=workload,
        detail=dict(detail or {}),
    )


def deployment(namespace: str, name: str) -> ObjectRef:
    return ObjectRef("Deployment", name, namespace, "apps/v1")


def node_ref(name: str) -> ObjectRef:
    return ObjectRef("Node", name)


CLUSTER_REF = ObjectRef("Cluster", "cluster", None, "kubemedic.io/v1")


# -- incident 3 --------------------------------------------------------------------------------


def overcommit(start: datetime, *, last: datetime | None = None) -> FindingEpisode:
    return episode(
        "node-memory-overcommit",
        f"memory-overcommit:{PROMETHEUS}@core-pool",
        obj=node_ref("core-2"),
        first=start,
        last=last,
        severity=Severity.CRITICAL,
        message=(
            "Node core-2 (core-pool) has memory requests at 93.0% and limits at 124.5% of its "
            "23Gi allocatable across 7 pods; the largest, support/support-prometheus-server-"
            "5f644b4977-n42rc, alone has a 22Gi limit (95.7%)."
        ),
        evidence={
            "node": "core-2",
            "nodePool": "core-pool",
            "resource": "memory",
            "allocatable": "23Gi",
            "requestsPercent": 93.0,
            "limitsPercent": 124.5,
            "topConsumers": [
                {
                    "pod": "support/support-prometheus-server-5f644b4977-n42rc",
                    "owner": "Deployment support/support-prometheus-server",
                    "request": "20Gi",
                    "limit": "22Gi",
                }
            ],
        },
    )


def hog(start: datetime, *, last: datetime | None = None) -> FindingEpisode:
    return episode(
        "memory-hog-neighbour",
        f"memory-hog:{PROMETHEUS}@core-pool",
        obj=ObjectRef("Pod", "support-prometheus-server-5f644b4977-n42rc", "support"),
        first=start,
        last=last,
        severity=Severity.CRITICAL,
        message=(
            "Pod support/support-prometheus-server-5f644b4977-n42rc (Deployment support/"
            "support-prometheus-server) holds 95.7% of node core-2's 23Gi allocatable memory "
            "(limit 22Gi) beside critical pods prod/hub-5f45bffd5-sf6lx (jupyterhub) and "
            "prod/proxy-777f68b486-mbhjn (jupyterhub)."
        ),
        evidence={
            "node": "core-2",
            "nodePool": "core-pool",
            "allocatable": "23Gi",
            "hog": {
                "pod": "support/support-prometheus-server-5f644b4977-n42rc",
                "owner": "Deployment support/support-prometheus-server",
                "request": "20Gi",
                "limit": "22Gi",
                "usage": "20384Mi",
                "percentOfAllocatable": 95.7,
                "measure": "limit",
            },
            "critical": [
                {"pod": "prod/hub-5f45bffd5-sf6lx", "owner": "Deployment prod/hub",
                 "role": "jupyterhub", "request": "128Mi"},
                {"pod": "prod/proxy-777f68b486-mbhjn", "owner": "Deployment prod/proxy",
                 "role": "jupyterhub", "request": "512Mi"},
            ],
            "evictedBeforeHog": ["prod/hub-5f45bffd5-sf6lx"],
        },
    )  # fmt: skip


def evicted(start: datetime, *, last: datetime | None = None) -> FindingEpisode:
    return episode(
        "evicted",
        "eviction:memory@core-pool",
        obj=deployment("prod", "hub"),
        first=start,
        last=last,
        severity=Severity.CRITICAL,
        message=(
            "2 pod(s) of Deployment prod/hub evicted from node core-2 (pool core-pool): the node "
            "was low on memory (threshold 100Mi, available 0); container hub was using 2.15Gi "
            "against a 128Mi request."
        ),
        evidence={
            "pod": "prod/hub-5f45bffd5-zpwpx",
            "pods": ["prod/hub-5f45bffd5-j7kv4", "prod/hub-5f45bffd5-zpwpx"],
            "owner": "Deployment prod/hub",
            "node": "core-2",
            "pool": "core-pool",
            "kind": "node-pressure",
            "resource": "memory",
            "biggestConsumer": {"name": "hub", "usage": "2200Mi", "request": "128Mi"},
            "nodeTopConsumer": {
                "pod": "support/support-prometheus-server-5f644b4977-n42rc",
                "usage": "20384Mi",
                "request": "20Gi",
            },
            "count": 2,
            "critical": "jupyterhub (labels app=jupyterhub, component=hub)",
        },
    )


def underrequested_hub(start: datetime, *, last: datetime | None = None) -> FindingEpisode:
    return episode(
        "critical-pod-underrequested",
        f"critical-underrequested:{HUB}",
        obj=deployment("prod", "hub"),
        first=start,
        last=last,
        message=(
            "Critical Deployment prod/hub (jupyterhub, 1 pod) is under-requested: CPU request "
            "10m is below the 100m floor and memory request 128Mi is below the 256Mi floor."
        ),
        evidence={
            "pod": "prod/hub-5f45bffd5-c6wmn",
            "owner": "Deployment prod/hub",
            "role": "jupyterhub",
            "requests": {"cpu": "10m", "memory": "128Mi"},
            "shortfalls": [
                {"pod": "prod/hub-5f45bffd5-c6wmn", "resource": "cpu", "kind": "floor",
                 "request": "10m", "floor": "100m"},
                {"pod": "prod/hub-5f45bffd5-c6wmn", "resource": "memory", "kind": "floor",
                 "request": "128Mi", "floor": "256Mi"},
            ],
            "pods": [{"pod": "prod/hub-5f45bffd5-c6wmn", "node": "core-2"}],
        },
    )  # fmt: skip


def burst(start: datetime) -> FindingEpisode:
    return episode(
        "node-scale-burst",
        "node-scale-burst@dask-worker",
        obj=CLUSTER_REF,
        first=start,
        last=start + minutes(1),
        severity=Severity.CRITICAL,
        message=(
            "100 nodes were created within 1m (26 -> 126 nodes, mostly in pool dask-worker); "
            "load grows with them for support/Deployment/support-prometheus-server (prometheus)."
        ),
        evidence={
            "nodesAdded": 100,
            "spanSeconds": 60,
            "from": (start).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "to": (start + minutes(1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "nodesBefore": 26,
            "nodesAfter": 126,
            "nodePools": {"dask-worker": 100},
            "loadGrowsWith": [
                {"owner": PROMETHEUS, "scraper": "prometheus", "why": "scrapes every node"}
            ],
        },
    )


def dask_pending(start: datetime) -> FindingEpisode:
    return episode(
        "unschedulable-pods",
        "unschedulable:insufficient-memory@prod/Deployment/dask-worker",
        obj=deployment("prod", "dask-worker"),
        first=start,
        last=start + minutes(4),
        message=(
            "74 pods of prod/Deployment/dask-worker cannot be scheduled for 4m: 0/126 nodes are "
            "available, most often: 96 node(s) had untolerated taint "
            "{node.kubernetes.io/not-ready: }."
        ),
        evidence={
            "owner": "prod/Deployment/dask-worker",
            "pods": 74,
            "nodesTotal": 126,
            "reasons": {"Insufficient memory": 24, "Insufficient cpu": 23},
            "reasonClass": "insufficient-memory",
        },
    )


def incident3(start: datetime = T0, *, cluster: str = CLUSTER) -> list[FindingEpisode]:
    """The findings of one core-node-prometheus run: the standing risk, the burst, the pending
    workers, the hub evicted."""
    found = [
        overcommit(start, last=start + minutes(40)),
        hog(start, last=start + minutes(40)),
        underrequested_hub(start, last=start + minutes(40)),
        dask_pending(start + minutes(5)),
        burst(start + minutes(6)),
        evicted(start + minutes(10), last=start + minutes(20)),
    ]
    return [replace(item, cluster=cluster) for item in found]


def hub_evictions(start: datetime, count: int = 3, *, every: float = 2) -> list[Signal]:
    return [
        signal(
            SignalKind.EVICTION,
            start + minutes(every * index),
            pod=f"hub-5f45bffd5-x7kq{'bcdfghjklm'[index]}",
            node="core-2",
            workload=HUB,
            source_id=str(100 + index),
            summary=f"pod of prod/hub evicted from core-2 (node-pressure, memory), #{index}",
        )
        for index in range(count)
    ]


# -- incidents 1 and 2 -------------------------------------------------------------------------

GATEWAY = "gateway/Deployment/api-gateway"


def storm(start: datetime) -> list[FindingEpisode]:
    pinned = f"pinned-node-name:{GATEWAY}"
    ref = deployment("gateway", "api-gateway")
    return [
        episode(
            "out-of-band-edit",
            pinned,
            obj=ref,
            first=start,
            severity=Severity.CRITICAL,
            evidence={
                "manager": "kubectl-edit",
                "operation": "Update",
                "time": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "fieldPaths": ["spec.template.spec.nodeName"],
                "gitops": {"tool": "argocd", "app": "api-gateway", "via": "tracking-id"},
            },
        ),
        episode(
            "pinned-node-name",
            pinned,
            obj=ref,
            first=start,
            last=start + minutes(6),
            severity=Severity.CRITICAL,
            evidence={"nodeName": "workers-2", "replicas": 12, "fitsReplicas": 9},
        ),
        episode(
            "failed-pod-storm",
            pinned,
            obj=ref,
            first=start + minutes(1),
            last=start + minutes(6),
            severity=Severity.CRITICAL,
            message="Deployment gateway/api-gateway has 3612 Failed pods rejected by the kubelet.",
            evidence={"nodes": {"workers-2": 3612}, "pinnedNodeName": "workers-2"},
        ),
        episode(
            "node-memory-overcommit",
            f"memory-overcommit:{GATEWAY}@workers",
            obj=node_ref("workers-2"),
            first=start + minutes(1),
            last=start + minutes(6),
            evidence={"node": "workers-2", "nodePool": "workers", "limitsPercent": 93.0},
        ),
    ]


def not_ready(start: datetime, nodes: list[str], *, pool: str = "batch") -> list[FindingEpisode]:
    return [
        episode(
            "node-not-ready",
            f"node-not-ready:kubelet-stopped-posting@{pool}",
            obj=node_ref(name),
            first=start,
            last=start + minutes(20),
            severity=Severity.CRITICAL,
            evidence={
                "status": "Unknown",
                "causeClass": "kubelet-stopped-posting",
                "since": start.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "nodePool": pool,
            },
        )
        for name in nodes
    ]
