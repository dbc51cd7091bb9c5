"""Incident 3's acceptance for right-sizing: the core-node-prometheus scenario played on the
simulator and archived with its usage samples; ``kubemedic recommend`` then asks for a hub memory
request above what the hub used when the kubelet evicted it (its 128Mi request is what made it
the kubelet's first choice)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.store import queries, usage
from kubemedic.store.db import Archive
from tests.recommend import recording

#: A whole scenario played in-process: minutes on a loaded 2-core machine.
pytestmark = pytest.mark.timeout(900)

MI = 1024 * 1024


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("recommend")
    db, snapshot = where / "kubemedic.db", where / "snapshot.json"
    with Archive.open(str(db)) as opened:
        recording.record(
            opened.engine,
            "core-node-prometheus",
            cluster="leap",
            until=timedelta(minutes=40),
            poll_every=timedelta(seconds=15),  # kubemedic run --metrics-interval 15s
            snapshot=snapshot,
        )
    return db, snapshot


def hub_evictions(db: Path) -> list[queries.OomEntry]:
    with Archive.open(str(db), migrate=False) as opened:
        found = queries.oom_report(opened, namespace="prod")
    return [e for e in found if e.kind == "eviction" and e.pod.startswith("hub-")]


def used_when_evicted(db: Path) -> int:
    """The most the hub was known to use at an eviction: the kubelet's message, or the last
    sample of the evicted pod before it."""
    evictions = hub_evictions(db)
    assert evictions, "the scenario evicts the hub"
    with Archive.open(str(db), migrate=False) as opened:
        samples = list(usage.container_samples(opened, namespace="prod"))
    used = 0
    for entry in evictions:
        assert entry.time is not None
        if entry.usage is not None and entry.container == "hub":
            used = max(used, entry.usage)
        before = [
            s.memory_bytes
            for s in samples
            if s.pod == entry.pod and s.container == "hub" and s.at <= entry.time
        ]
        if before and before[-1] is not None:
            used = max(used, before[-1])
    assert used > 128 * MI
    return used


def recommend(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["recommend", *args, "-o", "json"])
    assert result.exit_code == 0, result.output
    found: dict[str, Any] = json.loads(result.stdout)
    return found


def hub(document: dict[str, Any]) -> dict[str, Any]:
    [found] = [
        r
        for r in document["recommendations"]
        if r["workload"] == "prod/Deployment/hub" and r["container"] == "hub"
    ]
    return found


def change(found: dict[str, Any], resource: str, field: str) -> dict[str, Any]:
    [match] = [c for c in found["changes"] if (c["resource"], c["field"]) == (resource, field)]
    return match


def test_the_hub_memory_request_is_above_what_it_used_when_it_was_evicted(
    recorded: tuple[Path, Path],
) -> None:
    db, _ = recorded
    found = hub(recommend("--db", str(db)))
    used = used_when_evicted(db)
    memory = change(found, "memory", "request")
    assert memory["recommended"] > used
    assert memory["recommended"] >= used * 1.15
    assert change(found, "memory", "limit")["recommended"] == memory["recommended"]
    # The archive knows the 128Mi request (an eviction message names it); no CPU request.
    assert memory["current"] == 128 * MI and memory["action"] == "raise"
    assert found["current"]["source"].startswith("archive (")
    assert change(found, "cpu", "request")["current"] is None
    assert found["enoughData"] == {"cpu": True, "memory": True}
    assert found["history"]["pods"] >= 2  # the evicted hubs and their replacements: one workload
    assert found["history"]["samples"] >= 45
    assert any(r["rule"] == "eviction-floor" for r in found["reasons"])
    assert change(found, "cpu", "limit")["action"] == "none"


def test_with_a_snapshot_the_current_spec_is_the_deployments_template(
    recorded: tuple[Path, Path],
) -> None:
    db, snapshot = recorded
    found = hub(
        recommend(
            "--db", str(db), "-n", "prod", "--workload", "deploy/hub", "--snapshot", str(snapshot)
        )
    )
    assert change(found, "cpu", "request")["current"] == 10
    assert change(found, "memory", "request")["current"] == 128 * MI
    assert change(found, "memory", "limit")["current"] == 3 * 1024 * MI
    assert found["current"]["source"].startswith(f"snapshot {snapshot}")


def test_prometheus_is_sized_from_its_samples(recorded: tuple[Path, Path]) -> None:
    db, _ = recorded
    document = recommend(
        "--db", str(db), "-n", "support", "--workload", "deployment/support-prometheus-server"
    )
    [found] = document["recommendations"]
    assert found["container"] == "prometheus-server"
    memory = change(found, "memory", "request")
    assert memory["recommended"] > 14 * 1024 * MI  # its head series alone are 14Gi


def test_the_table_names_the_rule_and_the_eviction(recorded: tuple[Path, Path]) -> None:
    db, _ = recorded
    result = CliRunner().invoke(
        app, ["recommend", "--db", str(db), "--workload", "deployment/hub"], env={"COLUMNS": "300"}
    )
    assert result.exit_code == 0, result.output
    assert "prod/Deployment/hub" in result.stdout
    assert "128Mi -> " in result.stdout
    assert "eviction of pod hub-" in result.stdout
