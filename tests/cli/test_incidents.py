"""``kubemedic incidents list|show|export`` on an archive holding incident 3 twice."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.store.db import Archive
from tests.incidents import archived
from tests.incidents import builders as b

runner = CliRunner()
WIDE = {"COLUMNS": "200"}


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("incidents") / "kubemedic.db"
    with Archive.open(str(path)) as archive, archive.engine.begin() as connection:
        archived.fill_incident3(connection, b.T0)
        archived.insert_findings(connection, b.incident3(b.T0 + timedelta(days=1)))
        archived.insert_event(
            connection,
            b.T0 + timedelta(days=1, minutes=12),
            reason="Unhealthy",
            message="Liveness probe failed: timeout",
            name="hub-5f45bffd5-x7kqf",
            host="core-2",
        )
    return path


def flat(text: str) -> str:
    """Messages as one line (the terminal wraps them)."""
    return " ".join(text.split())


def run(*args: str) -> Result:
    return runner.invoke(app, list(args), env=WIDE)


def ids(db: Path, *args: str) -> list[str]:
    result = run("incidents", "list", "--db", str(db), "--output", "json", *args)
    assert result.exit_code == 0, result.output
    return [entry["id"] for entry in json.loads(result.stdout)["incidents"]]


def test_list_prints_the_incidents_newest_first(db: Path) -> None:
    found = ids(db)
    assert len(found) == 2
    result = run("incidents", "list", "--db", str(db))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines if line.startswith("inc-")] == found
    assert "JupyterHub hub evicted: memory overcommit on core pool" in result.stdout
    assert "2023-02-02 19:05" in lines[2]  # the newer one first


def test_since_and_until_choose_which_incidents_are_listed(db: Path) -> None:
    newer, older = ids(db)
    assert ids(db, "--since", "2023-02-02T00:00:00Z") == [newer]
    assert ids(db, "--until", "2023-02-02T00:00:00Z") == [older]
    # Back from the archive's newest event (day 2, 19:12), not from the wall clock.
    assert ids(db, "--since", "2h") == [newer]


def test_an_unknown_cluster_lists_nothing_and_says_what_there_is(db: Path) -> None:
    result = run("incidents", "list", "--db", str(db), "--cluster", "prod-eu")
    assert result.exit_code == 0
    assert "No incidents in" in result.stdout
    assert "holds no cluster 'prod-eu' (it holds: leap)" in result.stdout


def test_show_finds_an_incident_by_a_prefix_of_its_id(db: Path) -> None:
    newer, _ = ids(db)
    result = run("incidents", "show", newer.removeprefix("inc-")[:5], "--db", str(db))
    assert result.exit_code == 0, result.output
    assert newer in result.stdout
    assert "JupyterHub hub evicted" in result.stdout
    assert "Suspected cause (confidence" in result.stdout
    assert "same cause: shared core node pool, Prometheus" in result.stdout


def test_export_writes_the_postmortem_draft(db: Path, tmp_path: Path) -> None:
    _, older = ids(db)
    result = run("incidents", "export", older, "--db", str(db))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# JupyterHub hub evicted: memory overcommit on core pool")
    assert "## Timeline (UTC)" in result.stdout and "- [ ] " in result.stdout
    assert "3 evictions for prod/Deployment/hub" in result.stdout
    out = tmp_path / "incident.json"
    result = run(
        "incidents", "export", older, "--format", "json", "--out", str(out), "--db", str(db)
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {older} to {out}" in flat(result.stderr)
    assert json.loads(out.read_text())["incident"]["id"] == older


def test_an_unknown_id_exits_2_and_says_how_to_find_ids(db: Path) -> None:
    result = run("incidents", "show", "inc-deadbeef", "--db", str(db))
    assert result.exit_code == 2
    assert "no incident 'inc-deadbeef'" in flat(result.stderr)
    assert f"kubemedic incidents list --db {db}" in flat(result.stderr)
    ambiguous = run("incidents", "export", "inc-", "--db", str(db))
    assert ambiguous.exit_code == 2
    assert "is ambiguous" in flat(ambiguous.stderr)


def test_a_missing_archive_exits_2_and_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.db"
    for command in (["list"], ["show", "inc-00000000"], ["export", "inc-00000000"]):
        result = run("incidents", *command, "--db", str(missing))
        assert result.exit_code == 2
        assert f"no archive at {missing}" in flat(result.stderr)
    assert not missing.exists()


def test_export_never_writes_through_a_link_or_over_a_directory(db: Path, tmp_path: Path) -> None:
    older = ids(db)[-1]
    precious = tmp_path / "precious.md"
    precious.write_text("keep me")
    link = tmp_path / "link.md"
    link.symlink_to(precious)
    refused = run("incidents", "export", older, "--out", str(link), "--db", str(db))
    assert refused.exit_code == 2
    assert f"--out {link}: is a symbolic link" in flat(refused.stderr)
    assert link.is_symlink() and precious.read_text() == "keep me"

    forced = run("incidents", "export", older, "--out", str(link), "--force", "--db", str(db))
    assert forced.exit_code == 0, forced.output
    assert not link.is_symlink() and link.read_text().startswith("#")
    assert precious.read_text() == "keep me"

    directory = run(
        "incidents", "export", older, "--out", str(tmp_path), "--force", "--db", str(db)
    )
    assert directory.exit_code == 2
    assert "is a directory" in flat(directory.stderr)
