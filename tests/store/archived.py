"""An archive holding incident 3 as a recorder would have kept it, for the query and CLI tests.

Cluster ``leap``, namespace ``jhub``: the JupyterHub hub on core node ``core-2`` beside
``support-prometheus-server``. The hub fails its liveness probe (an ``Unhealthy`` event seen at
counts 1, 5 and 30, since deleted by the API server), is OOM-killed at 19:20 (a metrics sample at
19:19:30 shows it at 1000Mi of its 1Gi limit), and is evicted at 19:40 under memory pressure (the
pod's status and the kubelet's ``Evicted`` event, with the real message). A Dask worker piles up
``FailedScheduling`` while 100 nodes come up; Prometheus is scheduled before it all. A second
cluster, ``staging``, holds one event and an OOM kill without any metrics sample.

Everything goes through the model's extraction functions and the archive's writer, as in a run.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubemedic.sim.cluster.kubelet import evicting
from kubemedic.store import extraction, records
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from tests.factories import deployed, event, node, pod_metrics, stamp
from tests.incident3 import FIT_ERROR, HUB_EVICTION, PROMETHEUS_SERVER, jupyterhub

T0 = datetime(2023, 2, 1, 19, 0, tzinfo=UTC)
MI = 1024 * 1024
CLUSTER = "leap"
HUB_ID = "containerd://" + "a1" * 32


@dataclass(frozen=True)
class Incident:
    """Names and uids the tests look up."""

    hub: dict[str, Any]
    unhealthy_uid: str
    evicted_uid: str
    oom_uid: str
    scheduling_uid: str
    scheduled_uid: str


def _at(minutes: float) -> timedelta:
    return timedelta(minutes=minutes)


def hub_pod() -> dict[str, Any]:
    _, _, hub = jupyterhub(
        "hub",
        node_name="core-2",
        requests={"cpu": "10m", "memory": "128Mi"},
        limits={"memory": "1Gi"},
    )
    return hub


def oom_killed(pod: dict[str, Any], *, killed_at: timedelta, container_id: str) -> dict[str, Any]:
    """``pod`` after its first container was OOM-killed at ``killed_at`` and restarted."""
    killed = copy.deepcopy(pod)
    status = killed["status"]["containerStatuses"][0]
    status.update(
        restartCount=1,
        state={"running": {"startedAt": stamp(killed_at + timedelta(seconds=1))}},
        lastState={
            "terminated": {
                "exitCode": 137,
                "reason": "OOMKilled",
                "startedAt": stamp(timedelta(0)),
                "finishedAt": stamp(killed_at),
                "containerID": container_id,
            }
        },
    )
    return killed


def _row(body: dict[str, Any]) -> records.EventRow:
    row = extraction.event_row(body)
    assert row is not None
    return row


def fill(archive: Archive, *, cluster: str = CLUSTER) -> Incident:
    """Write incident 3 into ``archive`` as ``cluster``, and a little of ``staging``."""
    hub = hub_pod()
    core = node("core-2")

    unhealthy = [
        event(
            involved=hub,
            reason="Unhealthy",
            message='Liveness probe failed: Get "http://10.0.3.7:8081/hub/health": '
            "context deadline exceeded",
            count=count,
            first=_at(0),
            last=_at(minutes),
            host="core-2",
            field_path="spec.containers{hub}",
            name_suffix="174f3a9b2c1d0e8f",
        )
        for count, minutes in ((1, 0), (5, 1), (30, 5))
    ]
    for body in unhealthy:
        archive.write(Batch(cluster, events=[_row(body)]))

    oom = event(
        involved=core,
        reason="SystemOOM",
        message="System OOM encountered, victim process: jupyterhub, pid: 31337",
        first=_at(20),
        host="core-2",
    )
    evicted_body = evicting.evicted_event(
        hub,
        HUB_EVICTION,
        {
            "offending_containers": "hub",
            "offending_containers_usage": "318892Ki",
            "starved_resource": "memory",
        },
        node="core-2",
        moment=T0 + _at(40),
    )
    evicted_body["metadata"]["uid"] = "0b9e-evicted-hub"
    _, _, worker = deployed(
        "dask-worker",
        namespace="dask",
        node_name="",
        requests={"cpu": "1", "memory": "4Gi"},
    )
    scheduling = event(
        involved=worker,
        reason="FailedScheduling",
        message=FIT_ERROR,
        count=12,
        first=_at(41),
        last=_at(45),
        component="default-scheduler",
    )
    _, _, prometheus = deployed(
        PROMETHEUS_SERVER,
        namespace="support",
        node_name="core-2",
        requests={"cpu": "500m", "memory": "20Gi"},
    )
    scheduled = event(
        involved=prometheus,
        reason="Scheduled",
        message=f"Successfully assigned support/{prometheus['metadata']['name']} to core-2",
        type="Normal",
        first=_at(-10),
        component="default-scheduler",
    )
    scheduled["metadata"]["uid"] = "5c4e-scheduled"
    killed_hub = oom_killed(hub, killed_at=_at(20), container_id=HUB_ID)
    evicted_hub = copy.deepcopy(killed_hub)
    evicted_hub["status"].update(
        evicting.evicted_status(evicted_hub, HUB_EVICTION, now=stamp(_at(40)))
    )
    samples = [
        sample
        for minutes, memory in ((10, "600Mi"), (19.5, "1000Mi"), (20.5, "150Mi"))
        for sample in extraction.metric_samples(
            pod_metrics(hub, {"hub": {"cpu": "8m", "memory": memory}}, at=_at(minutes)),
            node="core-2",
        )
    ]
    archive.write(
        Batch(
            cluster,
            events=[_row(body) for body in (oom, evicted_body, scheduling, scheduled)],
            terminations=extraction.terminations(killed_hub) + extraction.terminations(evicted_hub),
            evictions=[
                row
                for row in (
                    extraction.eviction_from_pod(evicted_hub),
                    extraction.eviction_from_event(evicted_body),
                )
                if row is not None
            ],
            samples=samples,
            transitions=extraction.node_transitions(None, core),
        )
    )
    archive.write(Batch(cluster, event_deletions=[(unhealthy[0]["metadata"]["uid"], T0 + _at(65))]))

    _fill_staging(archive)
    return Incident(
        hub=hub,
        unhealthy_uid=unhealthy[0]["metadata"]["uid"],
        evicted_uid="0b9e-evicted-hub",
        oom_uid=oom["metadata"]["uid"],
        scheduling_uid=scheduling["metadata"]["uid"],
        scheduled_uid="5c4e-scheduled",
    )


def _fill_staging(archive: Archive) -> None:
    _, _, api = deployed(
        "api",
        namespace="shop",
        node_name="worker-1",
        requests={"memory": "256Mi"},
        limits={"memory": "512Mi"},
    )
    backoff = event(
        involved=api,
        reason="BackOff",
        message="Back-off restarting failed container api in pod api (100%_done)",
        first=_at(30),
        host="worker-1",
    )
    archive.write(
        Batch(
            "staging",
            events=[_row(backoff)],
            terminations=extraction.terminations(
                oom_killed(api, killed_at=_at(30), container_id="containerd://" + "c3" * 32)
            ),
        )
    )


def incident_archive(path: Path) -> Path:
    """A SQLite archive file at ``path`` filled with :func:`fill`."""
    with Archive.open(str(path)) as archive:
        fill(archive)
    return path
