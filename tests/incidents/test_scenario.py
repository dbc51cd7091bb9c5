"""Incident 3 end to end: the core-node-prometheus scenario played on the simulator, archived as
``kubemedic run`` archives it (records extracted from every write, findings of a scan every
three minutes of cluster time), read back as incidents and exported as the postmortem draft."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.incidents import archive, render
from kubemedic.incidents.model import Incident, SignalKind
from kubemedic.store.db import Archive
from tests.incidents import recording
from tests.incidents.builders import MEMORY_CAUSE, PROMETHEUS

#: A whole scenario played over HTTP: minutes on a loaded 2-core machine, not the suite's 120 s.
pytestmark = pytest.mark.timeout(900)

OOM_CAUSE = "oom:prod/Deployment/dask-worker/dask-worker"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scenario") / "kubemedic.db"
    with Archive.open(str(path)) as opened:
        recording.record(
            opened.engine,
            "core-node-prometheus",
            cluster="leap",
            until=timedelta(minutes=35),
            scan_every=timedelta(minutes=3),
        )
    return path


@pytest.fixture(scope="module")
def incidents(db: Path) -> list[Incident]:
    with Archive.open(str(db), migrate=False) as opened:
        return archive.incidents(opened.engine)


def by_cause(incidents: list[Incident], cause: str) -> Incident:
    return next(incident for incident in incidents if incident.cause == cause)


def test_the_hub_eviction_is_one_incident_blaming_prometheus(incidents: list[Incident]) -> None:
    incident = by_cause(incidents, MEMORY_CAUSE)
    assert incident.title == (
        "JupyterHub hub evicted: memory overcommit on core pool, Prometheus beside it"
    )
    assert incident.culprits == (PROMETHEUS,)
    assert "prod/Deployment/hub" in incident.harmed
    assert {"pod eviction", "pod pending", "node scale-up burst"} <= set(incident.symptoms)
    checks = {episode.check for episode in incident.findings}
    assert checks >= {
        "memory-hog-neighbour",
        "node-memory-overcommit",
        "evicted",
        "node-scale-burst",
        "unschedulable-pods",
        "critical-pod-underrequested",
    }
    assert incident.suspected_cause.confidence >= 0.75


def test_every_archived_eviction_is_in_the_incident(db: Path, incidents: list[Incident]) -> None:
    with Archive.open(str(db), migrate=False) as opened:
        _, signals = archive.load(opened.engine)
    evictions = {s.source_id for s in signals if s.kind is SignalKind.EVICTION}
    assert evictions
    incident = by_cause(incidents, MEMORY_CAUSE)
    assert {s.source_id for s in incident.signals if s.kind is SignalKind.EVICTION} == evictions
    assert all(s.node == "core-2" for s in incident.signals if s.kind is SignalKind.EVICTION)


def test_the_dask_workers_oom_kills_are_an_incident_of_their_own(
    incidents: list[Incident],
) -> None:
    oom = by_cause(incidents, OOM_CAUSE)
    assert oom.title.startswith("Dask worker OOM-killed: container dask-worker over its 10Gi")
    assert {episode.check for episode in oom.findings} == {"oom-killed"}
    memory = by_cause(incidents, MEMORY_CAUSE)
    assert not any(s.kind is SignalKind.OOM_KILL for s in memory.signals)
    assert oom.id not in {related.id for related in memory.related}


def test_the_export_reads_like_the_incident_report(incidents: list[Incident]) -> None:
    incident = by_cause(incidents, MEMORY_CAUSE)
    text = render.to_markdown(incident, incidents)
    # The overcommit's percentages are those of the last scan (93.0% and 124.5% while the hub
    # is on core-2, less while it waits to be scheduled again).
    assert re.search(r"Node core-2 \(core-pool\) has memory requests at 9\d\.\d% and limits", text)
    for fact in [
        "core-2",
        "20Gi request, 22Gi limit",
        "CPU request from 10m",
        "128Mi",
        "100 nodes",
        "0/126 nodes are available",
        "FailedScheduling",
        "MemoryPressure=True",
        "- [ ] Move Prometheus off the core pool",
    ]:
        assert fact in text, fact


def test_the_cli_exports_the_same_draft(db: Path, incidents: list[Incident]) -> None:
    incident = by_cause(incidents, MEMORY_CAUSE)
    result = CliRunner().invoke(app, ["incidents", "export", incident.id, "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"# {incident.title}\n")
    listed = CliRunner().invoke(app, ["incidents", "list", "--db", str(db), "-o", "json"])
    assert incident.id in [entry["id"] for entry in json.loads(listed.stdout)["incidents"]]
