"""Incident 3: the monitoring that evicted the hub (2i2c ``leap`` cluster, 2023-02-01).

A GKE 1.24 cluster (Calico network policy on) running JupyterHub (``prod`` and ``staging``),
dask-gateway and the ``support`` chart (Prometheus, Grafana, ingress-nginx). Pools: four
``core-pool`` n1-highmem-4 nodes, nine ``nb-medium`` user nodes, and ``dask-medium`` workers.

Timeline (UTC; the snapshot is taken at 18:07:30, an hour before anyone looked):

* 17:31 Prometheus (20Gi request, 22Gi limit) is OOM-killed once and restarts;
* 17:59:40-18:04:30 the hub's liveness probe fails 30 times (period 10s, threshold 30: z2jh's
  defaults); the kubelet restarts it;
* 18:01 dask-gateway asks for 100 more workers; the 13 worker nodes are full;
* 18:04:20-18:05:18 the autoscaler adds 100 ``dask-medium`` nodes (13 -> 113);
* 18:05:19-18:06:52 the pending workers get the incident's FailedScheduling message;
* 18:06:03 core node 2 reaches the memory eviction threshold as Prometheus scrapes the new
  targets; 18:06:05 the kubelet evicts the hub (over its 128Mi request), not Prometheus (under
  its 20Gi); the new hub pod lands on the same node.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import _gke, lifelike

Obj = dict[str, Any]

NOW = datetime(2023, 2, 1, 18, 7, 30, tzinfo=UTC)
CLUSTER = _gke.Cluster(
    name="leap-cluster",
    project="leap-pangeo",
    region="us-central1",
    version="v1.24.8-gke.2000",
    runtime="containerd://1.6.9",
    kernel="5.10.147+",
    modern=False,
)
ZONE = "us-central1-b"
DASK_ID = "2f1c9e0b7d4a4c8e9b6f3a5d1e7c0b92"
FAILED_SCHEDULING = (
    "0/126 nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
    "23 Insufficient cpu, 24 Insufficient memory, 6 node(s) had untolerated taint "
    "{node.kubernetes.io/network-unavailable: }, 9 node(s) had untolerated taint "
    "{hub.jupyter.org_dedicated: user}, 96 node(s) had untolerated taint "
    "{node.kubernetes.io/not-ready: }."
)
EARLIER_SCHEDULING = (
    "0/26 nodes are available: 13 Insufficient cpu, 13 Insufficient memory, 4 node(s) didn't "
    "match Pod's node affinity/selector, 9 node(s) had untolerated taint "
    "{hub.jupyter.org_dedicated: user}."
)
EVICTION = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 83292Ki. "
    "Container hub was using 624832Ki, request is 128Mi, has larger consumption of memory. "
)


def _beat(name: str) -> datetime:
    """Ready nodes rewrite their status heartbeat every 5 minutes (the Lease is the real one)."""
    return NOW - timedelta(seconds=5 + lifelike.digest("beat", name)[0] % 280)


def _nodes() -> tuple[list[Obj], list[Obj], list[Obj], list[Obj], list[Obj]]:
    core = [
        _gke.node(
            CLUSTER,
            pool="core-pool",
            machine="n1-highmem-4",
            zone=ZONE,
            index=i,
            created=datetime(2022, 11, 14, 9, 12, 40 + i, tzinfo=UTC),
            heartbeat=NOW - timedelta(seconds=61 * i),
            labels={"hub.jupyter.org/node-purpose": "core", "k8s.dask.org/node-purpose": "core"},
            memory_pressure_since=NOW - timedelta(seconds=87) if i == 1 else None,
        )
        for i in range(4)
    ]
    pressure = core[1]
    pressure["spec"]["taints"] = [
        _gke.taint(
            "node.kubernetes.io/memory-pressure", None, "NoSchedule", NOW - timedelta(seconds=85)
        )
    ]
    user_taint = [_gke.taint("hub.jupyter.org_dedicated", "user", "NoSchedule")]
    users = [
        _gke.node(
            CLUSTER,
            pool="nb-medium",
            machine="n2-highmem-4",
            zone=ZONE,
            index=i,
            created=datetime(2023, 2, 1, 14, 2, 11, tzinfo=UTC) + timedelta(minutes=23 * i),
            heartbeat=NOW - timedelta(seconds=9 + 31 * i),
            taints=user_taint,
            labels={
                "hub.jupyter.org/node-purpose": "user",
                "k8s.dask.org/node-purpose": "scheduler",
            },
        )
        for i in range(9)
    ]
    dask_labels = {"k8s.dask.org/node-purpose": "worker"}
    worker_taint = [_gke.taint("k8s.dask.org_dedicated", "worker", "NoSchedule")]
    workers = [
        _gke.node(
            CLUSTER,
            pool="dask-medium",
            machine="n2-highmem-16",
            zone=ZONE,
            index=i,
            created=datetime(2023, 2, 1, 17, 21, 4, tzinfo=UTC) + timedelta(seconds=117 * i),
            heartbeat=_beat(f"w{i}"),
            taints=worker_taint,
            labels=dask_labels,
        )
        for i in range(13)
    ]
    fresh = []
    for i in range(100):
        created = datetime(2023, 2, 1, 18, 4, 20, tzinfo=UTC) + timedelta(seconds=i * 58 // 99)
        ready = i < 4
        cut_off = i < 4 or i in (57, 83)
        taints = [*worker_taint]
        if cut_off:
            taints.append(
                _gke.taint("node.kubernetes.io/network-unavailable", None, "NoSchedule", created)
            )
        if not ready:
            taints.append(_gke.taint("node.kubernetes.io/not-ready", None, "NoSchedule", created))
            taints.append(
                _gke.taint(
                    "node.kubernetes.io/not-ready",
                    None,
                    "NoExecute",
                    created + timedelta(seconds=5),
                )
            )
        fresh.append(
            _gke.node(
                CLUSTER,
                pool="dask-medium",
                machine="n2-highmem-16",
                zone=ZONE,
                index=13 + i,
                created=created,
                ready=ready,
                heartbeat=NOW - timedelta(seconds=3 + i % 9),
                ready_since=created + timedelta(seconds=24),
                network_unavailable=cut_off,
                taints=taints,
                labels=dask_labels,
            )
        )
    return core, users, workers, fresh, [pressure]
