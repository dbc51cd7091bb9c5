"""Fuzzing the archive: random damage to an archive file (bytes overwritten, tables dropped, column
values replaced by values of any type) never ends a query command, or what ``kubemedic run`` does
with the archive, in a traceback (exit 3) or a hang: each answers (exit 0) or exits 2 with one
line naming the archive. Bounded: a few dozen examples per test, each within seconds."""

from __future__ import annotations

import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic.checks.findings import Finding, Severity
from kubemedic.cli import main
from kubemedic.errors import InputError
from kubemedic.model.objects import ObjectRef
from kubemedic.store import schema
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from tests.factories import event
from tests.incidents import archived as incident_rows
from tests.incidents import builders as b
from tests.store.archived import incident_archive

COMMANDS = (("events",), ("oom",), ("incidents", "list"), ("incidents", "export", "inc-0"))
SLOWEST = 10.0
"""Seconds any one command may take on the small archive (a hang fails the test)."""

FUZZ = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = incident_archive(tmp_path_factory.mktemp("fuzz") / "kubemedic.db")
    with Archive.open(str(path)) as archive, archive.engine.begin() as connection:
        incident_rows.insert_findings(connection, [b.hog(b.T0)])
    with sqlite3.connect(path) as connection:  # everything in the main file, none in the log
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.close()
    return path


def fresh(good: Path, tmp_path: Path) -> Path:
    path = tmp_path / "fuzzed.db"
    for suffix in ("-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    path.write_bytes(good.read_bytes())
    return path


def answers_or_names_the_archive(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every query command, then what ``run`` does with its archive: success or exit 2."""
    for command in COMMANDS:
        started = time.monotonic()
        with pytest.raises(SystemExit) as ended:
            main([*command, "--db", str(path)])
        captured = capsys.readouterr()
        assert time.monotonic() - started < SLOWEST, command
        code = ended.value.code
        assert code in (0, 1, 2), (command, code, captured.err)
        if code == 2:
            lines = captured.err.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
            missing_id = command[-1] == "inc-0" and "no incident" in lines[0]
            assert str(path) in lines[0] or missing_id, lines[0]
    recorded_by_run(path)


def recorded_by_run(path: Path) -> None:
    """``kubemedic run``'s archive work: open (migrate, check), write a batch and findings."""
    at = datetime(2023, 2, 1, 20, 0, tzinfo=UTC)
    started = time.monotonic()
    try:
        with Archive.open(str(path)) as archive:
            archive.write(Batch(cluster="leap", events=[_event_row()], checkpoints={"v1/x": "9"}))
            archive.record_findings("leap", [_finding(at)], at)
            archive.checkpoints("leap")
    except InputError as error:
        assert str(path) in str(error), error
        assert "\n" not in str(error)
    assert time.monotonic() - started < SLOWEST


def _event_row():  # type: ignore[no-untyped-def]
    from kubemedic.store import extraction
    from tests.factories import pod

    row = extraction.event_row(
        event(involved=pod("fuzz-0"), reason="Fuzz", message="m", first=b.T0)
    )
    assert row is not None
    return row


def _finding(at: datetime) -> Finding:
    return Finding(
        check="oom-killed",
        severity=Severity.WARNING,
        object=ObjectRef(kind="Pod", name="fuzz-0", namespace="default"),
        message="fuzz",
        evidence={},
        cause="fuzz",
        first_seen=at,
        last_seen=at,
    )


@FUZZ
@given(
    where=st.floats(min_value=0.0, max_value=0.999),
    length=st.integers(min_value=1, max_value=8192),
    fill=st.binary(min_size=1, max_size=64),
)
def test_overwritten_bytes(
    good: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: float,
    length: int,
    fill: bytes,
) -> None:
    path = fresh(good, tmp_path)
    data = bytearray(path.read_bytes())
    size = len(data)
    start = int(size * where)
    data[start : start + length] = (fill * (length // len(fill) + 1))[:length]
    path.write_bytes(bytes(data[:size]))
    answers_or_names_the_archive(path, capsys)


TABLES = sorted(schema.metadata.tables)


@FUZZ
@given(dropped=st.lists(st.sampled_from([*TABLES, "alembic_version"]), min_size=1, unique=True))
def test_dropped_tables(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], dropped: list[str]
) -> None:
    path = fresh(good, tmp_path)
    connection = sqlite3.connect(path)
    try:
        with connection:
            for table in dropped:
                connection.execute(f'DROP TABLE "{table}"')
    finally:
        connection.close()
    answers_or_names_the_archive(path, capsys)


VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.binary(max_size=30),
    st.sampled_from(["{", "[]", "null", "abc", "1e999", "-1", "", '{"a": 1}']),
)
COLUMNS = [(table, column.name) for table in TABLES for column in schema.metadata.tables[table].c]


@FUZZ
@given(
    changes=st.lists(st.tuples(st.sampled_from(COLUMNS), VALUES), min_size=1, max_size=4),
    everywhere=st.booleans(),
)
def test_altered_values(
    good: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    changes: list[tuple[tuple[str, str], object]],
    everywhere: bool,
) -> None:
    path = fresh(good, tmp_path)
    connection = sqlite3.connect(path)
    try:
        for (table, column), value in changes:
            which = (
                ""
                if everywhere
                else " WHERE rowid = (SELECT min(rowid) FROM t)".replace("t", f'"{table}"')
            )
            try:
                with connection:
                    connection.execute(f'UPDATE "{table}" SET "{column}" = ?{which}', (value,))
            except (sqlite3.IntegrityError, OverflowError):
                continue  # NOT NULL or a unique key held: the damage did not happen
    finally:
        connection.close()
    answers_or_names_the_archive(path, capsys)
