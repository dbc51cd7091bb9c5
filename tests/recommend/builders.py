"""Builders for right-sizing tests: a workload's usage samples, its kills and its specs, shaped
like what the archive holds for incident 3's hub (128Mi request, ~2.2Gi used when evicted)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.recommend.policy import Kill, KillKind, Usage, Workload
from kubemedic.testing import bodies

T0 = datetime(2023, 2, 1, 19, 0, tzinfo=UTC)
MI = 1024 * 1024
HUB = Workload("prod", "Deployment", "hub", "hub", cluster="leap")
HUB_POD = "hub-5d8f7c9b4-x7k2p"


def minute(value: float) -> datetime:
    return T0 + timedelta(minutes=value)


def usage(
    at: float, *, cpu: float | None = 40.0, memory_mi: float | None = 2200, pod: str = HUB_POD
) -> Usage:
    """A sample ``at`` minutes after T0 (CPU in millicores, memory in MiB)."""
    memory = None if memory_mi is None else int(memory_mi * MI)
    return Usage(pod, minute(at), cpu, memory)


def steady(
    count: int,
    *,
    cpu: float = 40.0,
    memory_mi: float = 2200,
    pod: str = HUB_POD,
    start: float = 0,
    every: float = 1,
) -> list[Usage]:
    """``count`` samples, one each ``every`` minutes from ``start``, all the same."""
    return [usage(start + i * every, cpu=cpu, memory_mi=memory_mi, pod=pod) for i in range(count)]


def series(values: Iterable[tuple[float, float]], *, pod: str = HUB_POD) -> list[Usage]:
    """One sample a minute with the given ``(cpu millicores, memory MiB)``."""
    return [usage(i, cpu=cpu, memory_mi=mem, pod=pod) for i, (cpu, mem) in enumerate(values)]


def eviction(at: float, *, pod: str = HUB_POD, usage_mi: float | None = None) -> Kill:
    return Kill(
        KillKind.EVICTION,
        pod,
        minute(at),
        usage=None if usage_mi is None else int(usage_mi * MI),
    )


def oom_kill(at: float, *, limit_mi: float | None, pod: str = HUB_POD) -> Kill:
    return Kill(
        KillKind.OOM_KILL, pod, minute(at), limit=None if limit_mi is None else int(limit_mi * MI)
    )


def daemonset(name: str, *, namespace: str, requests: dict[str, str]) -> dict[str, Any]:
    """A one-container DaemonSet ``name`` (as the Deployment builder writes a workload)."""
    body = bodies.deployment(
        name, namespace=namespace, containers=[bodies.container(name, requests=requests)]
    )
    body["kind"] = "DaemonSet"
    del body["spec"]["replicas"]
    body["status"] = {"desiredNumberScheduled": 2, "numberReady": 2, "observedGeneration": 1}
    return body
