"""``kubemedic events`` and ``kubemedic oom`` on an archive of incident 3: the hub's liveness
failures (since deleted by the API server), its OOM kill, its eviction, the Dask workers'
FailedScheduling; and a second cluster, ``staging``."""

from __future__ import annotations

import json
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.cli.archive import parse_duration
from kubemedic.model.timing import kubectl_age as human_duration
from kubemedic.store import extraction
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from tests.factories import event
from tests.store.archived import CLUSTER, T0, fill, hub_pod, incident_archive

runner = CliRunner()
WIDE = {"COLUMNS": "320"}
HUB = hub_pod()["metadata"]["name"]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return incident_archive(tmp_path_factory.mktemp("archive") / "kubemedic.db")


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, list(args), env={**WIDE, **(env or {})})


def events(db: Path, *args: str) -> Result:
    result = run("events", "--db", str(db), *args)
    assert result.exit_code == 0, result.output
    return result


def events_json(db: Path, *args: str) -> list[dict[str, Any]]:
    found = json.loads(events(db, *args, "--output", "json").stdout)
    assert isinstance(found, list)
    return found


def reasons(db: Path, *args: str) -> list[str]:
    return [item["reason"] for item in events_json(db, *args)]


def rows(result: Result) -> list[str]:
    """The table's body lines whose first cell starts a row (not wrapped continuations)."""
    return [line for line in result.stdout.splitlines()[1:] if line and not line.startswith(" ")]


# -- kubemedic events -------------------------------------------------------------------------


def test_events_table_has_kubectls_columns_and_marks_deleted_events(db: Path) -> None:
    result = events(db, "--cluster", CLUSTER)
    header = result.stdout.splitlines()[0].split()
    assert header == [
        "NAMESPACE", "LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE", "COUNT", "FIRST",
        "SEEN", "GONE",
    ]  # fmt: skip
    lines = rows(result)
    assert [line.split()[3] for line in lines[:-1]] == [
        "Scheduled",
        "Unhealthy",
        "SystemOOM",
        "Evicted",
        "FailedScheduling",
    ]
    unhealthy = lines[1].split()
    # Ages count from the newest archived event (19:45): last seen 19:05, first 19:00.
    assert unhealthy[:5] == ["jhub", "40m", "Warning", "Unhealthy", f"pod/{HUB}"]
    assert unhealthy[-3:] == ["30", "45m", "gone"]
    assert lines[2].split()[3:5] == ["SystemOOM", "node/core-2"]
    assert lines[4].split()[1] == "0s"
    assert "ages as of 2023-02-01T19:45:00Z" in result.stdout
    assert "GONE: 1 deleted by the API server" in result.stdout


def test_reason_evicted_shows_the_kubelets_message(db: Path) -> None:
    result = events(db, "--reason", "Evicted")
    assert len(rows(result)) == 2  # the row and the caption
    assert "Container hub was using 318892Ki, request is 128Mi" in result.stdout


def test_several_clusters_get_a_cluster_column(db: Path) -> None:
    result = events(db)
    assert result.stdout.splitlines()[0].split()[0] == "CLUSTER"
    assert any(line.startswith("staging") for line in rows(result))
    assert "CLUSTER" not in events(db, "--cluster", "staging").stdout


def test_namespace_filter_drops_the_namespace_column(db: Path) -> None:
    result = events(db, "--namespace", "jhub")
    assert result.stdout.splitlines()[0].split()[:3] == ["LAST", "SEEN", "TYPE"]
    assert reasons(db, "-n", "jhub") == ["Unhealthy", "Evicted"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--type", "Warning", "--cluster", CLUSTER], ["Unhealthy", "SystemOOM", "Evicted",
                                                       "FailedScheduling"]),
        (["--type", "normal"], ["Scheduled"]),
        (["--object", f"po/{HUB}"], ["Unhealthy", "Evicted"]),
        (["--object", f"pods/{HUB}"], ["Unhealthy", "Evicted"]),
        (["--object", "no/core-2"], ["SystemOOM"]),
        (["--node", "core-2"], ["Unhealthy", "SystemOOM", "Evicted"]),
        (["--node", "worker-1"], ["BackOff"]),
        (["--since", "10m"], ["Evicted", "FailedScheduling"]),
        (["--since", "1h30m", "--until", "30m"], ["Scheduled", "Unhealthy"]),
        (["--since", "2023-02-01T19:30:00Z", "--until", "2023-02-01T19:40:30Z"],
         ["BackOff", "Evicted"]),
        (["--grep", "oom"], ["SystemOOM"]),
        (["--grep", "INSUFFICIENT MEMORY"], ["FailedScheduling"]),
        (["--grep", "100%_done"], ["BackOff"]),
        (["--limit", "2"], ["Evicted", "FailedScheduling"]),
        (["--cluster", "staging"], ["BackOff"]),
        (["--cluster", "nowhere"], []),
    ],
)  # fmt: skip
def test_each_filter(db: Path, args: list[str], expected: list[str]) -> None:
    assert reasons(db, *args) == expected


def test_json_is_an_array_of_events_with_rfc3339_times(db: Path) -> None:
    [unhealthy] = events_json(db, "--reason", "Unhealthy")
    assert unhealthy["cluster"] == CLUSTER
    assert unhealthy["apiVersion"] == "v1"
    assert unhealthy["object"] == {
        "kind": "Pod",
        "namespace": "jhub",
        "name": HUB,
        "uid": hub_pod()["metadata"]["uid"],
        "fieldPath": "spec.containers{hub}",
    }
    assert unhealthy["source"] == {"component": "kubelet", "host": "core-2"}
    assert (unhealthy["count"], unhealthy["node"]) == (30, "core-2")
    assert (unhealthy["firstSeen"], unhealthy["lastSeen"]) == (
        "2023-02-01T19:00:00Z",
        "2023-02-01T19:05:00Z",
    )
    assert unhealthy["deletedAt"] == "2023-02-01T20:05:00Z"
    assert unhealthy["counts"] == [
        {"count": 1, "lastSeen": "2023-02-01T19:00:00Z"},
        {"count": 5, "lastSeen": "2023-02-01T19:01:00Z"},
        {"count": 30, "lastSeen": "2023-02-01T19:05:00Z"},
    ]
    assert set(unhealthy) == {
        "cluster", "uid", "apiVersion", "namespace", "name", "type", "reason", "message",
        "object", "source", "node", "count", "firstSeen", "lastSeen", "deletedAt", "counts",
        "resourceVersion",
    }  # fmt: skip


def test_nothing_matching_is_not_an_error(db: Path) -> None:
    result = events(db, "--reason", "NodeNotReady")
    assert result.stdout.strip() == "no events match"
    assert events_json(db, "--reason", "NodeNotReady") == []


def test_an_unknown_cluster_is_named_with_the_ones_archived(db: Path) -> None:
    result = events(db, "--cluster", "lepa")
    assert result.stdout.strip() == (
        "no events match: the archive holds no cluster 'lepa' (it holds: leap, staging)"
    )


def test_cluster_text_is_printed_literally(tmp_path: Path) -> None:
    path = incident_archive(tmp_path / "archive.db")
    body = event(
        involved=hub_pod(),
        reason="Killing",
        message="[bold red]pwned[/] \x1b[2Jcleared\nsecond line",
        first=timedelta(minutes=50),
    )
    row = extraction.event_row(body)
    assert row is not None
    with Archive.open(str(path)) as archive:
        archive.write(Batch(CLUSTER, events=[row]))
    result = events(path, "--reason", "Killing")
    assert "[bold red]pwned[/] ?[2Jcleared second line" in result.stdout
    assert "\x1b" not in result.stdout


# -- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--since", "nonsense"], "--since"),
        (["--since", "2h3"], "--since"),
        (["--until", "yesterday"], "--until"),
        (["--object", HUB], "--object"),
        (["--object", "pod/"], "--object"),
        (["--since", "2023-02-01T19:30:00Z", "--until", "2023-02-01T19:00:00Z"], "--since"),
        (["--limit", "-1"], "--limit"),
        (["--output", "xml"], "--output"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(db: Path, args: list[str], flag: str) -> None:
    result = run("events", "--db", str(db), *args)
    assert result.exit_code == 2
    assert flag in result.stderr


def test_missing_archive_is_an_error_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    result = run("events", "--db", str(missing))
    assert result.exit_code == 2
    assert f"no archive at {missing}: run `kubemedic run` first" in result.stderr
    assert not missing.exists()
    result = run("oom", "--db", f"sqlite:///{missing}")
    assert result.exit_code == 2
    assert "no archive at" in result.stderr
    assert not missing.exists()


def test_default_archive_is_kubemedic_db_or_kubemedic_db_env(
    db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KUBEMEDIC_DB", raising=False)
    result = run("events")
    assert result.exit_code == 2
    assert f"no archive at {tmp_path / 'kubemedic.db'}" in result.stderr
    result = run("events", "--reason", "Evicted", "-o", "json", env={"KUBEMEDIC_DB": str(db)})
    assert result.exit_code == 0
    assert [item["reason"] for item in json.loads(result.stdout)] == ["Evicted"]


def test_an_empty_file_is_no_archive_and_stays_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    result = run("oom", "--db", str(path))
    assert result.exit_code == 2
    assert f"no archive at {path}: run `kubemedic run` first" in result.stderr
    assert path.stat().st_size == 0


def test_a_sqlite_database_without_the_archive_tables_is_no_archive(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    connection.close()
    result = run("events", "--db", str(path))
    assert result.exit_code == 2
    assert f"no archive at {path}: run `kubemedic run` first" in result.stderr


def test_a_file_that_is_not_an_archive_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("not a database\n" * 100)
    result = run("events", "--db", str(path))
    assert result.exit_code == 2
    assert str(path) in result.stderr


# -- kubemedic oom ----------------------------------------------------------------------------


def oom(db: Path, *args: str) -> Result:
    result = run("oom", "--db", str(db), *args)
    assert result.exit_code == 0, result.output
    return result


def test_oom_table_shows_the_hubs_kill_and_eviction_with_numbers(db: Path) -> None:
    result = oom(db, "--cluster", CLUSTER)
    header = result.stdout.splitlines()[0].split()
    assert header[:10] == [
        "TIME", "WHAT", "NAMESPACE", "POD", "CONTAINER", "NODE", "USAGE", "REQUEST", "LIMIT",
        "RESTARTS",
    ]  # fmt: skip
    kill, eviction, _caption = rows(result)
    assert kill.split()[:10] == [
        "2023-02-01T19:20:00Z", "OOMKilled", "jhub", HUB, "hub", "core-2", "1000Mi", "128Mi",
        "1Gi", "1",
    ]  # fmt: skip
    assert "usage sampled 30s before the kill" in kill
    assert eviction.split()[:10] == [
        "2023-02-01T19:40:00Z", "Evicted", "jhub", HUB, "hub", "core-2", "311.42Mi", "128Mi",
        "1Gi", "1",
    ]  # fmt: skip
    assert "The node was low on resource: memory." in result.stdout
    assert "1 OOM kill(s), 1 eviction(s)" in result.stdout


def test_kill_without_sample_shows_at_least_its_limit(db: Path) -> None:
    [kill, _caption] = rows(oom(db, "--cluster", "staging"))
    assert kill.split()[6] == "≥512Mi"
    assert "no usage sample: it used at least its limit" in kill


def test_oom_json(db: Path) -> None:
    result = oom(db, "--output", "json", "--namespace", "jhub")
    kill, eviction = json.loads(result.stdout)
    assert kill == {
        "kind": "oom-kill",
        "time": "2023-02-01T19:20:00Z",
        "cluster": CLUSTER,
        "namespace": "jhub",
        "pod": HUB,
        "podUid": hub_pod()["metadata"]["uid"],
        "container": "hub",
        "node": "core-2",
        "owner": {"kind": "ReplicaSet", "name": "hub-5d8f7c9b4"},
        "resource": "memory",
        "unit": "bytes",
        "usage": 1000 * 1024 * 1024,
        "usageSource": "metrics",
        "usageAt": "2023-02-01T19:19:30Z",
        "request": 128 * 1024 * 1024,
        "limit": 1024 * 1024 * 1024,
        "restartCount": 1,
        "exitCode": 137,
        "threshold": None,
        "available": None,
        "message": "",
    }
    assert (eviction["kind"], eviction["usage"], eviction["usageSource"]) == (
        "eviction",
        318892 * 1024,
        "message",
    )
    assert (eviction["threshold"], eviction["available"]) == ("100Mi", "91436Ki")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], [("leap", "oom-kill"), ("staging", "oom-kill"), ("leap", "eviction")]),
        (["--namespace", "shop"], [("staging", "oom-kill")]),
        (["--node", "core-2"], [("leap", "oom-kill"), ("leap", "eviction")]),
        (["--since", "10m"], [("leap", "eviction")]),
        (["--until", "2023-02-01T19:25:00Z"], [("leap", "oom-kill")]),
        (["--cluster", "nowhere"], []),
    ],
)
def test_oom_filters(db: Path, args: list[str], expected: list[tuple[str, str]]) -> None:
    found = json.loads(oom(db, *args, "-o", "json").stdout)
    assert [(item["cluster"], item["kind"]) for item in found] == expected


def test_oom_with_nothing_matching_and_bad_flags(db: Path) -> None:
    assert oom(db, "--namespace", "nowhere").stdout.strip() == "no OOM kills or evictions match"
    result = run("oom", "--db", str(db), "--since", "last tuesday")
    assert result.exit_code == 2
    assert "--since" in result.stderr


@pytest.mark.parametrize("command", ["events", "oom"])
def test_commands_have_help(command: str) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "--db" in result.stdout


# -- PostgreSQL -------------------------------------------------------------------------------


def test_postgresql_archive(postgres_url: str) -> None:
    result = run("events", "--db", postgres_url)
    assert result.exit_code == 2
    assert "no archive at postgresql" in result.stderr
    with Archive.open(postgres_url) as archive:
        fill(archive)
    result = run("events", "--db", postgres_url, "--reason", "Evicted", "-o", "json")
    assert result.exit_code == 0, result.output
    assert [item["lastSeen"] for item in json.loads(result.stdout)] == ["2023-02-01T19:40:00Z"]
    result = run("oom", "--db", postgres_url, "--cluster", CLUSTER, "-o", "json")
    assert [item["kind"] for item in json.loads(result.stdout)] == ["oom-kill", "eviction"]


# -- time words -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-1, "0s"),
        (45, "45s"),
        (119, "119s"),
        (303, "5m3s"),
        (300, "5m"),
        (65 * 60, "65m"),
        (3 * 3600 + 20 * 60, "3h20m"),
        (26 * 3600, "26h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (40 * 86400, "40d"),
        (2 * 365 * 86400 + 10 * 86400, "2y10d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_ages_read_like_kubectls(seconds: int, shown: str) -> None:
    assert human_duration(timedelta(seconds=seconds)) == shown


def test_durations() -> None:
    assert parse_duration("30s") == timedelta(seconds=30)
    assert parse_duration("2h") == timedelta(hours=2)
    assert parse_duration("7d") == timedelta(days=7)
    assert parse_duration("1h30m") == timedelta(minutes=90)
    assert parse_duration("1.5h") == timedelta(minutes=90)
    for bad in ("", "2", "h", "2x", "-2h", "1h 30m", "2023-02-01T19:00:00Z"):
        assert parse_duration(bad) is None
    assert T0 - parse_duration("45m") == T0 - timedelta(minutes=45)  # type: ignore[operator]
