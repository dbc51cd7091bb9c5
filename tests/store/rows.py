"""Builders for archive records and a reader of table rows, for the store tests."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from kubemedic.checks.findings import Finding, Severity
from kubemedic.model.objects import ObjectRef
from kubemedic.store.db import Archive
from kubemedic.store.records import (
    EventRow,
    EvictionRow,
    MetricSample,
    NodeTransition,
    TerminationRow,
)

T0 = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
MI = 1024 * 1024


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def event(uid: str, count: int = 1, **changes: Any) -> EventRow:
    """A kubelet ``BackOff`` event about pod ``web/api-<uid>``, seen ``count`` times, the last
    one ``count`` seconds after T0."""
    row = EventRow(
        uid=uid,
        api_version="v1",
        namespace="web",
        name=f"api-{uid}.17a",
        type="Warning",
        reason="BackOff",
        message="Back-off restarting failed container api in pod api",
        object_kind="Pod",
        object_namespace="web",
        object_name=f"api-{uid}",
        object_uid=f"pod-{uid}",
        field_path="spec.containers{api}",
        source="kubelet",
        host="node-1",
        node="node-1",
        count=count,
        first_seen=T0,
        last_seen=at(count),
        resource_version=str(1000 + count),
    )
    return replace(row, **changes)


def termination(key: str = "containerd://abc", **changes: Any) -> TerminationRow:
    row = TerminationRow(
        pod_uid="pod-1",
        namespace="web",
        pod="api-1",
        container="api",
        key=key,
        node="node-1",
        owner_kind="ReplicaSet",
        owner_name="api-5d8",
        reason="OOMKilled",
        exit_code=137,
        signal=None,
        restart_count=1,
        started_at=at(0),
        finished_at=at(60),
        message="",
        memory_request=128 * MI,
        memory_limit=256 * MI,
    )
    return replace(row, **changes)


def eviction(source: str = "pod-status", **changes: Any) -> EvictionRow:
    row = EvictionRow(
        pod_uid="pod-9",
        namespace="jhub",
        pod="hub-0",
        node="core-2",
        owner_kind="ReplicaSet",
        owner_name="hub-7f",
        at=at(300),
        kind="node-pressure",
        resource="memory",
        threshold="100Mi",
        available="90Mi",
        container="",
        usage=None,
        request=None,
        message="The node was low on resource: memory.",
        source=source,
    )
    return replace(row, **changes)


def transition(status: str = "False", seconds: float = 0, **changes: Any) -> NodeTransition:
    row = NodeTransition(
        node="node-1",
        condition="Ready",
        status=status,
        previous="True",
        reason="KubeletNotReady",
        message="PLEG is not healthy",
        at=at(seconds),
    )
    return replace(row, **changes)


def sample(seconds: float = 0, **changes: Any) -> MetricSample:
    row = MetricSample(
        kind="pod",
        namespace="web",
        name="api-1",
        container="api",
        node="node-1",
        at=at(seconds),
        window_seconds=15.0,
        cpu_millicores=250.0,
        memory_bytes=200 * MI,
    )
    return replace(row, **changes)


def finding(
    check: str = "node-memory-overcommit",
    *,
    name: str = "core-2",
    cause: str = "memory-hog:monitoring/prometheus-server@core-pool",
    severity: Severity = Severity.CRITICAL,
    message: str = "core-2 is 180% committed",
    evidence: dict[str, object] | None = None,
) -> Finding:
    return Finding(
        check=check,
        severity=severity,
        object=ObjectRef(kind="Node", name=name),
        message=message,
        cause=cause,
        first_seen=T0,
        last_seen=T0,
        evidence={"committedPercent": 180.0} if evidence is None else evidence,
    )


def rows(archive: Archive, table: sa.Table, *, order: str | None = None) -> list[dict[str, Any]]:
    """Every row of ``table`` as a dict, ordered by ``order`` (else by every column)."""
    query = sa.select(table)
    query = query.order_by(table.c[order]) if order else query.order_by(*table.columns)
    with archive.engine.connect() as connection:
        return [dict(row._mapping) for row in connection.execute(query)]
