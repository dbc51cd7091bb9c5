"""Archive rows for incident tests, written with SQLAlchemy Core as ``kubemedic run`` leaves
them: findings episodes (evidence as JSON text, times as epoch seconds), evictions, OOM kills,
node transitions and events of incident 3's core-node-prometheus run."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import orjson
import sqlalchemy as sa

from kubemedic.incidents.model import FindingEpisode
from kubemedic.store import schema
from tests.incidents import builders as b


def _ts(moment: datetime) -> float:
    return moment.timestamp()


def insert_findings(
    connection: sa.Connection, episodes: Iterable[FindingEpisode], *, evidence: str | None = None
) -> None:
    rows = [
        {
            "cluster": e.cluster,
            "fingerprint": e.fingerprint,
            "check": e.check,
            "severity": e.severity.label,
            "object_api_version": e.object.api_version,
            "object_kind": e.object.kind,
            "object_namespace": e.object.namespace or "",
            "object_name": e.object.name,
            "message": e.message,
            "evidence": evidence if evidence is not None else orjson.dumps(e.evidence).decode(),
            "cause": e.cause,
            "first_seen": _ts(e.first_seen),
            "last_seen": _ts(e.last_seen),
            "scans": 3,
        }
        for e in episodes
    ]
    if rows:
        connection.execute(sa.insert(schema.findings), rows)


def insert_eviction(
    connection: sa.Connection, at: datetime, *, pod: str, node: str = "core-2", **extra: Any
) -> None:
    row = {
        "cluster": b.CLUSTER,
        "pod_uid": f"uid-{pod}",
        "namespace": "prod",
        "pod": pod,
        "node": node,
        "owner_kind": "ReplicaSet",
        "owner_name": "hub-5f45bffd5",
        "at": _ts(at),
        "kind": "node-pressure",
        "resource": "memory",
        "threshold": "100Mi",
        "available": "0",
        "container": "hub",
        "usage": 2200 * 2**20,
        "request": 128 * 2**20,
        "message": "The node was low on resource: memory.",
        "source": "pod-status,event",
        "recorded_at": _ts(at),
        **extra,
    }
    connection.execute(sa.insert(schema.evictions), [row])


def insert_termination(
    connection: sa.Connection,
    at: datetime,
    *,
    pod: str,
    node: str,
    reason: str = "OOMKilled",
    namespace: str = "prod",
    owner: str = "dask-worker-6bfd56fdcf",
) -> None:
    row = {
        "cluster": b.CLUSTER,
        "pod_uid": f"uid-{pod}",
        "namespace": namespace,
        "pod": pod,
        "container": "dask-worker",
        "key": f"containerd://{pod}",
        "node": node,
        "owner_kind": "ReplicaSet",
        "owner_name": owner,
        "reason": reason,
        "exit_code": 137,
        "restart_count": 1,
        "finished_at": _ts(at),
        "memory_limit": 10 * 2**30,
        "memory_request": 10 * 2**30,
        "recorded_at": _ts(at),
    }
    connection.execute(sa.insert(schema.terminations), [row])


def insert_transition(
    connection: sa.Connection, at: datetime, *, node: str, condition: str, status: str
) -> None:
    row = {
        "cluster": b.CLUSTER,
        "node": node,
        "condition": condition,
        "status": status,
        "previous": "False" if status == "True" else "True",
        "reason": "KubeletHasInsufficientMemory" if condition == "MemoryPressure" else "",
        "message": "",
        "at": _ts(at),
        "recorded_at": _ts(at),
    }
    connection.execute(sa.insert(schema.node_transitions), [row])


_EVENTS = 0


def insert_event(
    connection: sa.Connection,
    at: datetime,
    *,
    reason: str,
    message: str,
    kind: str = "Pod",
    name: str,
    namespace: str = "prod",
    type: str = "Warning",
    count: int = 1,
    source: str = "kubelet",
    host: str = "",
    cluster: str = b.CLUSTER,
) -> None:
    global _EVENTS  # noqa: PLW0603 - unique uids across one test session
    _EVENTS += 1
    row = {
        "cluster": cluster,
        "uid": f"event-{_EVENTS}",
        "api_version": "v1",
        "namespace": namespace if kind != "Node" else "default",
        "name": f"{name}.{_EVENTS:x}",
        "type": type,
        "reason": reason,
        "message": message,
        "object_kind": kind,
        "object_namespace": namespace if kind != "Node" else "",
        "object_name": name,
        "source": source,
        "host": host,
        "node": name if kind == "Node" else host,
        "count": count,
        "first_seen": _ts(at),
        "last_seen": _ts(at),
        "recorded_at": _ts(at),
    }
    connection.execute(sa.insert(schema.events), [row])


def fill_incident3(connection: sa.Connection, start: datetime = b.T0) -> None:
    """One run of incident 3: its findings, three hub evictions on core-2, core-2's memory
    pressure, Dask workers' FailedScheduling and OOM kills, and events beside them."""
    insert_findings(connection, b.incident3(start))
    for index in range(3):
        insert_eviction(
            connection, start + b.minutes(10 + 2 * index), pod=f"hub-5f45bffd5-x7kq{'bcd'[index]}"
        )
    insert_transition(
        connection, start + b.minutes(9), node="core-2", condition="MemoryPressure", status="True"
    )
    insert_transition(
        connection, start + b.minutes(30), node="core-2", condition="Ready", status="True"
    )
    insert_event(
        connection,
        start + b.minutes(5),
        reason="FailedScheduling",
        message=(
            "0/126 nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
            "23 Insufficient cpu, 24 Insufficient memory."
        ),
        name="dask-worker-6bfd56fdcf-wd6db",
        count=7,
        source="default-scheduler",
        host="",
    )
    insert_event(
        connection,
        start + b.minutes(10),
        reason="Evicted",
        message="The node was low on resource: memory.",
        name="hub-5f45bffd5-x7kqb",
        host="core-2",
    )
    insert_event(
        connection,
        start + b.minutes(11),
        reason="Killing",
        type="Normal",
        message="Stopping container hub",
        name="hub-5f45bffd5-x7kqb",
        host="core-2",
    )
    insert_event(
        connection,
        start + b.minutes(12),
        reason="Unhealthy",
        message="Liveness probe failed: timeout",
        name="hub-5f45bffd5-x7kqc",
        count=30,
        host="core-2",
    )
    insert_event(
        connection,
        start + b.minutes(12),
        reason="SystemOOM",
        message="System OOM encountered, victim process: pangeo-notebook, pid: 42",
        kind="Node",
        name="dask-7",
    )
    insert_event(
        connection,
        start + b.minutes(12),
        reason="BackOff",
        message="Back-off pulling image",
        name="billing-6d9f7c7b9d-abcde",
        namespace="billing",
    )
    insert_termination(
        connection, start + b.minutes(12), pod="dask-worker-6bfd56fdcf-wd6db", node="dask-7"
    )
    insert_termination(
        connection,
        start + b.minutes(12),
        pod="dask-worker-6bfd56fdcf-zzzzb",
        node="dask-7",
        reason="Error",
    )
