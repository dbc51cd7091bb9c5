"""A small archive for right-sizing: incident 3's hub in ``prod`` (two pods of its Deployment
over 40 minutes, ~2000Mi used, evicted at minute 20 while using 2200Mi on a 128Mi request), a
Dask worker OOM-killed at its 10Gi limit, a cron pod seen for five minutes only, and two pods
of a DaemonSet that only metrics named."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from kubemedic.store.db import Archive
from kubemedic.store.records import EvictionRow, MetricSample, TerminationRow
from kubemedic.store.writer import Batch
from tests.recommend.builders import MI, T0

CLUSTER = "leap"
HUB_POD = "hub-5d8f7c9b4-x7k2p"
HUB_NEXT = "hub-5d8f7c9b4-q9w8z"
WORKER = "dask-worker-7c9d8b6f5-k2m4n"
GI = 1024 * MI
#: Pods of the support/node-exporter DaemonSet the archive knows no owner of.
EXPORTER_PODS = ("node-exporter-x7k2p", "node-exporter-b4n6q")


def sample(
    pod: str, container: str, minute: float, *, cpu: float, memory: int, namespace: str = "prod"
) -> MetricSample:
    return MetricSample(
        kind="pod",
        namespace=namespace,
        name=pod,
        container=container,
        node="core-2",
        at=T0 + timedelta(minutes=minute),
        window_seconds=15.0,
        cpu_millicores=cpu,
        memory_bytes=memory,
    )


def samples() -> list[MetricSample]:
    found = [sample(HUB_POD, "hub", m, cpu=40.0, memory=2000 * MI) for m in range(20)]
    found += [sample(HUB_NEXT, "hub", m, cpu=30.0, memory=1900 * MI) for m in range(21, 41)]
    found += [sample(WORKER, "worker", m, cpu=900.0, memory=9 * GI) for m in range(40)]
    found += [
        sample("report-28391040-abcde", "report", m, cpu=5.0, memory=50 * MI) for m in range(5)
    ]
    for pod, memory in ((EXPORTER_PODS[0], 30 * MI), (EXPORTER_PODS[1], 40 * MI)):
        found += [
            sample(pod, "node-exporter", m, cpu=20.0, memory=memory, namespace="support")
            for m in range(40)
        ]
    return found


def hub_eviction() -> EvictionRow:
    return EvictionRow(
        pod_uid="uid-hub-1",
        namespace="prod",
        pod=HUB_POD,
        node="core-2",
        owner_kind="ReplicaSet",
        owner_name="hub-5d8f7c9b4",
        at=T0 + timedelta(minutes=20),
        kind="node-pressure",
        resource="memory",
        threshold="100Mi",
        available="90Mi",
        container="hub",
        usage=2200 * MI,
        request=128 * MI,
        message="The node was low on resource: memory. Container hub was using 2200Mi, "
        "request is 128Mi, has larger consumption of memory.",
        source="event,pod-status",
    )


def worker_oom_kill() -> TerminationRow:
    return TerminationRow(
        pod_uid="uid-worker-1",
        namespace="prod",
        pod=WORKER,
        container="worker",
        key="containerd://worker-1",
        node="dask-1",
        owner_kind="ReplicaSet",
        owner_name="dask-worker-7c9d8b6f5",
        reason="OOMKilled",
        exit_code=137,
        signal=None,
        restart_count=1,
        started_at=T0,
        finished_at=T0 + timedelta(minutes=30, seconds=20),
        message="",
        memory_request=8 * GI,
        memory_limit=10 * GI,
    )


def fill(path: Path | str) -> Path | str:
    """Write the archive at ``path`` (a file, or an archive URL); returns ``path``."""
    with Archive.open(str(path)) as archive:
        archive.write(
            Batch(
                CLUSTER,
                samples=samples(),
                evictions=[hub_eviction()],
                terminations=[worker_oom_kill()],
            )
        )
    return path
