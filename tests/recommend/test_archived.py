"""Recommendations read from an archive: samples placed in their workloads, evictions and OOM
kills as floors, the current spec from archived rows or a snapshot; ``kubemedic recommend``'s
output and its errors (exit 2)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import Result
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.model.view import ClusterView
from kubemedic.recommend.archived import recommend_from_archive, workload_of
from kubemedic.recommend.policy import Recommendation, Settings
from kubemedic.store import usage
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from tests.factories import container, deployment
from tests.recommend.archived import CLUSTER, GI, HUB_NEXT, HUB_POD, MI, WORKER, fill, sample
from tests.recommend.builders import daemonset

runner = CliRunner()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("recommend") / "kubemedic.db"
    fill(path)
    return path


def run(*args: str) -> Result:
    return runner.invoke(app, ["recommend", *args], env={"COLUMNS": "300"})


def as_json(*args: str) -> list[dict[str, Any]]:
    result = run(*args, "-o", "json")
    assert result.exit_code == 0, result.output
    found: list[dict[str, Any]] = json.loads(result.stdout)["recommendations"]
    return found


def by_workload(found: list[Recommendation]) -> dict[str, Recommendation]:
    return {f"{r.workload.key}:{r.workload.container}": r for r in found}


# -- the Python API (what the dashboard calls) --------------------------------------------------


def test_samples_of_a_deployments_pods_are_one_workload(db: Path) -> None:
    with Archive.open(str(db), migrate=False) as archive:
        found = by_workload(recommend_from_archive(archive))
    assert set(found) == {
        "prod/Deployment/hub:hub",
        "prod/Deployment/dask-worker:worker",
        "prod/Pod/report-28391040-abcde:report",
        # Named by metrics only: without a view, each pod is its own workload.
        "support/Pod/node-exporter-x7k2p:node-exporter",
        "support/Pod/node-exporter-b4n6q:node-exporter",
    }
    hub = found["prod/Deployment/hub:hub"]
    assert hub.pods == 2 and hub.samples == 40
    assert hub.workload.cluster == "leap"


def test_the_evicted_hub_gets_more_than_it_used_when_the_kubelet_evicted_it(db: Path) -> None:
    with Archive.open(str(db), migrate=False) as archive:
        hub = by_workload(recommend_from_archive(archive))["prod/Deployment/hub:hub"]
    assert hub.memory_request == hub.memory_limit == 2530 * MI  # 2200Mi * 1.15, not 2000Mi's
    assert hub.reasons[2].rule == "eviction-floor"
    assert "2200Mi named by the kubelet's message at the eviction of pod hub-5d8f7c9b4-x7k2p" in (
        hub.reasons[2].text
    )
    assert hub.cpu_request == 40
    assert hub.current is not None and hub.current.memory_request == 128 * MI
    assert hub.current.cpu_request is None
    assert hub.current.source.startswith(f"archive (eviction of pod {HUB_POD} at ")


def test_the_same_recommendations_on_sqlite_and_postgresql(archive_url: str) -> None:
    fill(archive_url)
    with Archive.open(archive_url, migrate=False) as archive:
        found = by_workload(recommend_from_archive(archive, namespace="prod"))
    hub = found["prod/Deployment/hub:hub"]
    assert (hub.memory_request, hub.cpu_request, hub.samples) == (2530 * MI, 40, 40)
    assert hub.current is not None and hub.current.memory_request == 128 * MI
    worker = found["prod/Deployment/dask-worker:worker"]
    assert worker.memory_limit == 11776 * MI


def test_the_oom_killed_worker_gets_more_than_its_limit(db: Path) -> None:
    with Archive.open(str(db), migrate=False) as archive:
        worker = by_workload(recommend_from_archive(archive))["prod/Deployment/dask-worker:worker"]
    assert worker.memory_limit is not None and worker.memory_limit > 10 * GI
    assert worker.memory_limit == 11776 * MI  # 10Gi * 1.15
    assert worker.current is not None
    assert (worker.current.memory_request, worker.current.memory_limit) == (8 * GI, 10 * GI)


def test_a_pod_seen_for_five_minutes_has_not_enough_data(db: Path) -> None:
    with Archive.open(str(db), migrate=False) as archive:
        found = by_workload(recommend_from_archive(archive))
        report = found["prod/Pod/report-28391040-abcde:report"]
        assert not report.enough and report.memory_request is None
        lenient = Settings(min_samples=5, min_span=timedelta(minutes=4))
        again = recommend_from_archive(archive, namespace="prod", settings=lenient)
    assert by_workload(again)["prod/Pod/report-28391040-abcde:report"].memory_request == 58 * MI


def test_filters_by_workload_and_namespace(db: Path) -> None:
    with Archive.open(str(db), migrate=False) as archive:
        hub = recommend_from_archive(archive, workload=("Deployment", "hub"))
        elsewhere = recommend_from_archive(archive, namespace="kube-system")
    assert [r.workload.key for r in hub] == ["prod/Deployment/hub"]
    assert elsewhere == []


def test_a_view_places_the_pods_of_a_daemonset_and_gives_its_spec(db: Path) -> None:
    exporter = daemonset(
        "node-exporter", namespace="support", requests={"cpu": "50m", "memory": "64Mi"}
    )
    view = ClusterView.build([exporter])
    with Archive.open(str(db), migrate=False) as archive:
        [found] = recommend_from_archive(archive, namespace="support", view=view)
    assert found.workload.key == "support/DaemonSet/node-exporter"
    assert found.pods == 2 and found.samples == 80
    assert found.memory_request == 46 * MI  # 40Mi * 1.15, the larger pod's
    assert found.current is not None
    assert (found.current.cpu_request, found.current.memory_request) == (50, 64 * MI)
    assert found.current.source == "snapshot (DaemonSet support/node-exporter pod template)"


def test_a_pod_is_placed_by_its_archived_owner_else_by_its_name() -> None:
    assert workload_of("prod", HUB_NEXT, None) == ("Deployment", "hub")
    assert workload_of("prod", "whatever", ("ReplicaSet", "hub-5d8f7c9b4")) == ("Deployment", "hub")
    assert workload_of("db", "pg-0", ("StatefulSet", "pg")) == ("StatefulSet", "pg")
    assert workload_of("db", "pg-0", None) == ("Pod", "pg-0")


# -- the command ---------------------------------------------------------------------------------


def test_the_table_shows_each_change_and_why(db: Path) -> None:
    result = run("--db", str(db), "-n", "prod")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "prod/Deployment/hub" in out and "128Mi -> 2530Mi" in out
    assert "? -> 40m" in out  # the archive keeps no CPU request
    assert "10Gi -> 11776Mi" in out
    assert "no data" in out
    assert "memory: not enough data: 5 memory sample(s) over 4m" in out
    assert "current: archive (eviction of pod hub-5d8f7c9b4-x7k2p" in out


def test_json_carries_numbers_quantities_changes_and_reasons(db: Path) -> None:
    [hub] = as_json("--db", str(db), "--workload", "deploy/hub")
    assert hub["workload"] == "prod/Deployment/hub" and hub["container"] == "hub"
    assert hub["recommended"] == {
        "requests": {"cpu": "40m", "memory": "2530Mi"},
        "limits": {"cpu": None, "memory": "2530Mi"},
    }
    memory = next(
        c for c in hub["changes"] if c["resource"] == "memory" and c["field"] == "request"
    )
    assert memory == {
        "resource": "memory",
        "field": "request",
        "current": 128 * MI,
        "recommended": 2530 * MI,
        "delta": 2402 * MI,
        "action": "raise",
        "unit": "bytes",
    }
    assert hub["history"]["samples"] == 40 and hub["history"]["pods"] == 2
    assert {r["rule"] for r in hub["reasons"]} >= {"cpu-percentile", "eviction-floor"}


def test_settings_are_flags(db: Path) -> None:
    [hub] = as_json(
        "--db",
        str(db),
        "--workload",
        "deployment/hub",
        "--memory-buffer",
        "50",
        "--cpu-percentile",
        "50",
    )
    assert hub["recommended"]["requests"]["memory"] == "3300Mi"
    [report] = as_json(
        "--db",
        str(db),
        "--workload",
        "pod/report-28391040-abcde",
        "--min-samples",
        "5",
        "--min-history",
        "4m",
    )
    assert report["enoughData"] == {"cpu": True, "memory": True}


def test_the_current_spec_can_come_from_a_snapshot(db: Path, tmp_path: Path) -> None:
    hub = deployment(
        "hub",
        namespace="prod",
        containers=[
            container("hub", requests={"cpu": "10m", "memory": "128Mi"}, limits={"memory": "1Gi"})
        ],
    )
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": [hub]}))
    [found] = as_json("--db", str(db), "--workload", "deployment/hub", "--snapshot", str(snapshot))
    assert found["current"]["requests"] == {"cpu": "10m", "memory": "128Mi"}
    assert found["current"]["limits"] == {"cpu": None, "memory": "1Gi"}
    cpu = next(c for c in found["changes"] if c["resource"] == "cpu" and c["field"] == "request")
    assert (cpu["current"], cpu["recommended"], cpu["action"]) == (10, 40, "raise")


def test_no_samples_is_said_not_an_error(db: Path) -> None:
    result = run("--db", str(db), "-n", "elsewhere")
    assert result.exit_code == 0, result.output
    assert "no usage samples match" in result.stdout
    assert as_json("--db", str(db), "--workload", "statefulset/nothing") == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--workload", "hub"], "--workload 'hub': expected KIND/NAME"),
        (["--since", "yesterday"], "--since 'yesterday': expected a duration"),
        (["--cpu-percentile", "150"], "CPU percentile 150: expected more than 0, at most 100"),
        (["--memory-buffer", "0"], "memory buffer 0%"),
        (["--min-samples", "0"], "minimum samples 0"),
        (["--min-history", "soon"], "--min-history 'soon': expected a duration"),
        (["--snapshot", "/nonexistent/snapshot.json"], "--snapshot: "),
    ],
)
def test_bad_input_exits_2_naming_the_flag(db: Path, args: list[str], message: str) -> None:
    result = run("--db", str(db), *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr


def test_a_missing_archive_exits_2(tmp_path: Path) -> None:
    result = run("--db", str(tmp_path / "none.db"))
    assert result.exit_code == 2
    assert "no archive at" in result.stderr


def test_a_workload_is_named_by_its_deployment_not_by_its_pods(db: Path) -> None:
    [worker] = as_json("--db", str(db), "--workload", "deployment/dask-worker")
    assert worker["name"] == "dask-worker" and WORKER not in worker["workload"]


def test_a_workloads_pods_are_read_by_name_on_both_databases(archive_url: str) -> None:
    # Pods named after "hub" (and some that only look alike), beside the filled archive's.
    fill(archive_url)
    names = ["hub", "hub-5d8f7c9b4-aaaaa", "hub-api-7f9c-bbbbb", "hubx-1", "hu", "hub.x", "HUB-1"]
    with Archive.open(archive_url, migrate=False) as archive:
        archive.write(
            Batch(CLUSTER, samples=[sample(n, "c", 500, cpu=1, memory=MI) for n in names])
        )
        read = {
            s.pod
            for s in usage.container_samples(archive, namespace="prod", named="hub")
            if s.pod in names
        }
        found = by_workload(recommend_from_archive(archive, workload=("Deployment", "hub")))
    # The superset the database gives: the name itself and every name-..., nothing else.
    assert read == {"hub", "hub-5d8f7c9b4-aaaaa", "hub-api-7f9c-bbbbb"}
    # Placed exactly: the hub Deployment's pods only (hub-api-... is another Deployment's).
    assert set(found) == {"prod/Deployment/hub:hub"}
    assert found["prod/Deployment/hub:hub"].samples == 40
