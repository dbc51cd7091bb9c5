"""A bad ``--db`` or a damaged archive ends every archive command in exit 2 with one line naming
the archive (and the table, row and column when one is at fault): never a traceback, never rows
printed from a damaged file, never a long wait for a server that does not answer. Nothing in
the archive is changed by finding it damaged."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from kubemedic.store.db import Archive
from tests.fuzz import servers
from tests.incidents import archived as incident_rows
from tests.incidents import builders as b
from tests.inprocess import kubemedic, one_error_line
from tests.store.archived import incident_archive

QUERIES = (
    ("events",),
    ("oom",),
    ("incidents", "list"),
    ("incidents", "show", "inc-0"),
    ("incidents", "export", "inc-0"),
    ("nodes",),
)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An archive of incident 3 with a finding, so incidents exist too."""
    path = incident_archive(tmp_path_factory.mktemp("good") / "kubemedic.db")
    with Archive.open(str(path)) as archive, archive.engine.begin() as connection:
        incident_rows.insert_findings(connection, [b.hog(b.T0)])
    return path


def copy(good: Path, tmp_path: Path) -> Path:
    target = tmp_path / "damaged.db"
    target.write_bytes(good.read_bytes())
    return target


def alter(path: Path, *statements: str) -> None:
    """Damage the archive by hand, as another program (or a person with sqlite3) could."""
    connection = sqlite3.connect(path)
    try:
        with connection:
            for statement in statements:
                connection.execute(statement)
    finally:
        connection.close()


# -- the URL ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("db", "named"),
    [
        ("postgresql://u:p@127.0.0.1:notaport/db", "the port is 'notaport'"),
        ("postgresql://u:p@127.0.0.1:99999/db", "port 99999"),
        ("postgresql://u:p@127.0.0.1:0/db", "port 0"),
        ("mysql://u:p@h/db", "unsupported database URL mysql://u:***@h/db"),
        ("foo://x", "unsupported database URL foo://x"),
    ],
)
@pytest.mark.parametrize("command", [("events",), ("oom",), ("incidents", "list")])
def test_a_bad_database_url_is_named(
    capsys: pytest.CaptureFixture[str], db: str, named: str, command: tuple[str, ...]
) -> None:
    code, out, err = kubemedic(capsys, *command, "--db", db)
    assert code == 2
    assert out == ""
    line = one_error_line(err)
    assert "--db" in line and named in line
    assert ":p@" not in line  # the password stays masked


def test_run_names_a_bad_database_url_too(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = kubemedic(capsys, "run", "--db", "postgresql://u:p@127.0.0.1:notaport/db")
    assert code == 2
    assert "the port is 'notaport'" in one_error_line(err)


def test_a_path_that_is_not_utf8_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff\xfe.db")
    code, _, err = kubemedic(capsys, "events", "--db", path)
    assert code == 2
    line = one_error_line(err)
    assert "not valid UTF-8" in line and "\\xff\\xfe.db" in line


def test_a_directory_is_no_archive(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for command in QUERIES[:3]:
        code, _, err = kubemedic(capsys, *command, "--db", str(tmp_path))
        assert code == 2
        assert f"--db {tmp_path}: is a directory" in one_error_line(err)


# -- a damaged archive ---------------------------------------------------------------------------


def test_the_good_archive_answers(capsys: pytest.CaptureFixture[str], good: Path) -> None:
    for command in (("events",), ("oom",), ("incidents", "list")):
        code, out, err = kubemedic(capsys, *command, "--db", str(good))
        assert (code, err) == (0, ""), err
        assert out


@pytest.mark.parametrize("table", ["events", "event_counts", "findings", "terminations"])
def test_a_dropped_table_is_named_by_every_command(
    capsys: pytest.CaptureFixture[str], good: Path, tmp_path: Path, table: str
) -> None:
    path = copy(good, tmp_path)
    alter(path, f"DROP TABLE {table}")
    before = path.read_bytes()
    for command in QUERIES:
        code, out, err = kubemedic(capsys, *command, "--db", str(path))
        assert code == 2, (command, out, err)
        assert out == ""
        line = one_error_line(err)
        assert str(path) in line and f"table {table} is missing" in line
    assert path.read_bytes() == before  # nothing repaired, nothing lost


def test_a_dropped_column_is_named(
    capsys: pytest.CaptureFixture[str], good: Path, tmp_path: Path
) -> None:
    path = copy(good, tmp_path)
    alter(path, "ALTER TABLE evictions DROP COLUMN threshold")
    code, _, err = kubemedic(capsys, "oom", "--db", str(path))
    assert code == 2
    assert "table evictions has no column threshold" in one_error_line(err)


@pytest.mark.parametrize(
    ("statement", "commands", "named"),
    [
        (
            "UPDATE events SET last_seen = 'abc' WHERE id = 2",
            QUERIES[:3],
            "table events, row 2: column last_seen: expected a time (seconds since 1970), "
            "found 'abc'",
        ),
        (
            "UPDATE events SET count = 'x' WHERE id = 3",
            (("events",),),
            "table events, row 3: column count: expected a whole number, found 'x'",
        ),
        (
            "UPDATE events SET message = x'ff00' WHERE id = 1",
            (("events",),),
            "table events, row 1: column message: expected text, found b'\\xff\\x00'",
        ),
        (
            "UPDATE terminations SET memory_limit = 'big' WHERE id = 1",
            (("oom",),),
            "column memory_limit: expected a whole number, found 'big'",
        ),
        (
            "UPDATE evictions SET at = 1e300 WHERE id = 1",
            (("oom",),),
            "table evictions, row 1: column at: expected a time (seconds since 1970) between",
        ),
        (
            "UPDATE findings SET evidence = '{not json'",
            (("incidents", "list"), ("incidents", "show", "inc-0")),
            "table findings, row 1: column evidence: expected a JSON object, found '{not json'",
        ),
    ],
)
def test_a_value_of_the_wrong_type_is_named_with_its_row_and_column(
    capsys: pytest.CaptureFixture[str],
    good: Path,
    tmp_path: Path,
    statement: str,
    commands: tuple[tuple[str, ...], ...],
    named: str,
) -> None:
    path = copy(good, tmp_path)
    alter(path, statement)
    for command in commands:
        code, out, err = kubemedic(capsys, *command, "--db", str(path))
        assert code == 2, (command, out, err)
        assert out == ""
        line = one_error_line(err)
        assert str(path) in line and named in line, line


def test_a_corrupted_page_is_reported_not_read_as_rows(
    capsys: pytest.CaptureFixture[str], good: Path, tmp_path: Path
) -> None:
    path = copy(good, tmp_path)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = bytes((i * 7 + 3) % 256 for i in range(8192))
    path.write_bytes(bytes(data))
    before = path.read_bytes()
    for command in QUERIES:
        code, out, err = kubemedic(capsys, *command, "--db", str(path))
        assert code == 2, (command, out, err)
        assert out == ""
        line = one_error_line(err)
        assert str(path) in line and "is damaged" in line
    assert path.read_bytes() == before


def test_a_file_that_is_not_a_database_is_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are notes, not a database\n" * 200)
    code, _, err = kubemedic(capsys, "events", "--db", str(path))
    assert code == 2
    assert str(path) in one_error_line(err)


def test_a_damaged_archive_on_postgresql_is_named(
    capsys: pytest.CaptureFixture[str], postgres_url: str
) -> None:
    with Archive.open(postgres_url) as archive, archive.engine.begin() as connection:
        connection.execute(sa.text("DROP TABLE event_counts"))
    code, _, err = kubemedic(capsys, "events", "--db", postgres_url)
    assert code == 2
    assert "table event_counts is missing" in one_error_line(err)


# -- a server that does not answer ---------------------------------------------------------------


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word."""
    with servers.silent_port() as port:
        yield port


def test_a_postgresql_port_that_never_answers_times_out_in_seconds(
    capsys: pytest.CaptureFixture[str], silent_port: int
) -> None:
    started = time.monotonic()
    code, _, err = kubemedic(
        capsys, "events", "--db", f"postgresql://u:p@127.0.0.1:{silent_port}/db"
    )
    elapsed = time.monotonic() - started
    assert code == 2
    line = one_error_line(err)
    assert f"127.0.0.1:{silent_port}" in line and "did not answer within 5 s" in line
    assert elapsed < 15


def test_the_connect_timeout_is_the_urls_when_it_sets_one(
    capsys: pytest.CaptureFixture[str], silent_port: int
) -> None:
    started = time.monotonic()
    url = f"postgresql://u:p@127.0.0.1:{silent_port}/db?connect_timeout=1"
    code, _, err = kubemedic(capsys, "oom", "--db", url)
    assert code == 2
    assert "did not answer" in one_error_line(err)
    assert time.monotonic() - started < 5
