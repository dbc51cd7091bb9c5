"""Archive URLs and archive contents for ``events``, ``oom``, ``incidents list`` and ``run --db``:
bad URLs, a port that never answers, and a real archive damaged with sqlite3 or by bytes."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.fuzz import servers
from tests.fuzz.harness import assert_contract, run_cli
from tests.sim.conftest import start_emulator
from tests.store.archived import incident_archive

pytestmark = pytest.mark.timeout(600)
QUERIES = (["events"], ["oom"], ["incidents", "list"], ["nodes"])
BOUND = 20.0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A kubeconfig of a running emulator, so that ``run`` gets as far as its archive."""
    for running in start_emulator(tmp_path_factory.mktemp("emulator")):
        yield running.kubeconfig


def run_argv(kubeconfig: Path) -> list[str]:
    return ["run", "--kubeconfig", str(kubeconfig), "--no-leader-elect", "--log-level", "error"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return incident_archive(tmp_path_factory.mktemp("archive") / "kubemedic.db")


def query(command: list[str], db: str, *, valid: bool | None, names: str | None) -> None:
    outcome = run_cli([*command, "--db", db], timeout=BOUND)
    assert_contract(outcome, valid=valid, names=names, what=f"{' '.join(command)} --db {db!r}")


@pytest.mark.parametrize("command", QUERIES, ids=" ".join)
def test_the_archive_is_valid(archive: Path, command: list[str]) -> None:
    query(command, str(archive), valid=True, names=None)


BAD_URLS = {
    "postgresql port not a number": ("postgresql://u:p@127.0.0.1:notaport/db", "notaport"),
    "unknown scheme": ("nosuchdb://x/y", "nosuchdb"),
    "sqlite URL of a directory": ("sqlite:////tmp", "/tmp"),
    "a directory": ("/tmp", "/tmp"),
    "missing parent": ("/no/such/dir/a.db", "/no/such/dir"),
    "empty": ("", "--db"),
    "not UTF-8": (os.fsdecode(b"/tmp/\xff\xfe.db"), "--db"),
    "a name too long": ("a" * 300 + ".db", "File name too long"),
}


@pytest.mark.parametrize("command", [*QUERIES, ["run"]], ids=" ".join)
@pytest.mark.parametrize("label", sorted(BAD_URLS))
def test_a_bad_archive_url_exits_2_naming_it(command: list[str], label: str, live: Path) -> None:
    url, names = BAD_URLS[label]
    if command == ["run"]:
        command = run_argv(live)
    query(command, url, valid=False, names=names)


@pytest.mark.parametrize("command", QUERIES, ids=" ".join)
def test_a_database_that_never_answers_times_out_in_seconds(command: list[str]) -> None:
    with servers.silent_port() as port:
        query(command, f"postgresql://u:p@127.0.0.1:{port}/db", valid=False, names=str(port))


def _drop(table: str) -> Callable[[sqlite3.Connection], object]:
    return lambda db: db.execute(f"DROP TABLE {table}")


def _set(table: str, column: str, value: object) -> Callable[[sqlite3.Connection], object]:
    sql = f'UPDATE {table} SET "{column}" = ? WHERE rowid IN (SELECT rowid FROM {table} LIMIT 1)'

    def damage(db: sqlite3.Connection) -> None:
        assert db.execute(sql, (value,)).rowcount == 1, f"{table} has no row to damage"

    return damage


def _unknown_severity(db: sqlite3.Connection) -> None:
    """A finding row (the archive built for these tests holds none) with a severity no
    kubemedic writes."""
    db.execute(
        'INSERT INTO findings (cluster, fingerprint, "check", severity, object_api_version,'
        " object_kind, object_namespace, object_name, message, evidence, cause, first_seen,"
        " last_seen, scans) VALUES ('default', 'f1', 'oom-killed', 'apocalyptic', 'v1', 'Pod',"
        " 'prod', 'hub', 'm', '{}', 'c', 1700000000.0, 1700000060.0, 1)"
    )


DAMAGE: dict[str, Callable[[sqlite3.Connection], object]] = {
    "events table dropped": _drop("events"),
    "terminations table dropped": _drop("terminations"),
    "findings table dropped": _drop("findings"),
    "alembic_version dropped": _drop("alembic_version"),
    "event times are text": _set("events", "last_seen", "yesterday"),
    "event counts are text": _set("event_counts", "count", "many"),
    "termination times are blobs": _set("terminations", "finished_at", b"\x00\x01"),
    "eviction times are text": _set("evictions", "at", "soon"),
    "finding severities unknown": _unknown_severity,
    "schema version unknown": _set("alembic_version", "version_num", "zzzz"),
}


@pytest.mark.parametrize("command", [*QUERIES, ["run"]], ids=" ".join)
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_archive_exits_2_naming_it(
    tmp_path: Path, archive: Path, damage: str, command: list[str], live: Path
) -> None:
    db = tmp_path / "damaged.db"
    shutil.copy(archive, db)
    with sqlite3.connect(db) as connection:
        DAMAGE[damage](connection)
    if command == ["run"]:
        command = run_argv(live)
    query(command, str(db), valid=False, names="damaged.db")


@pytest.mark.parametrize("command", QUERIES, ids=" ".join)
@pytest.mark.parametrize("where", [0.1, 0.5, 0.9])
def test_an_archive_with_overwritten_pages_exits_2(
    tmp_path: Path, archive: Path, command: list[str], where: float
) -> None:
    db = tmp_path / "damaged.db"
    data = bytearray(archive.read_bytes())
    at = int(len(data) * where)
    data[at : at + 4096] = os.urandom(4096)
    db.write_bytes(bytes(data))
    query(command, str(db), valid=None, names="damaged.db")
