"""``kubemedic run`` and the archive's queries refuse nonsensical flags naming the flag, refuse to
record into a damaged archive, and keep odd event messages (control characters, NUL, far too
long) safely: archived cut to size and printed without a terminal escape."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kubemedic.kube import config as kubeconfig
from kubemedic.kube import kinds
from kubemedic.kube.api import Kind
from kubemedic.run.daemon import _served
from kubemedic.store.records import MAX_MESSAGE
from kubemedic.testing import bodies
from tests.inprocess import kubemedic, one_error_line
from tests.sim.conftest import Running, start_emulator
from tests.store.archived import incident_archive


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--scan-interval", "-5m", "a duration of zero or more"),
        ("--scan-interval", "0", "longer than zero"),
        ("--scan-interval", "nan", "expected a duration"),
        ("--scan-interval", "0.001s", "at least 1s"),
        ("--metrics-interval", "1e-300s", "expected a duration"),
        ("--metrics-interval", "10ms", "at least 1s"),
        ("--retain", "-5m", "a duration of zero or more"),
        ("--retain", "5m", "at least 1h"),
    ],
)
def test_run_refuses_a_nonsensical_interval_naming_the_flag(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, value: str, named: str
) -> None:
    code, _, err = kubemedic(capsys, "run", "--db", str(tmp_path / "a.db"), flag, value)
    assert code == 2
    line = one_error_line(err)
    assert line.startswith(f"error: {flag}") and named in line
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize("command", ["events", "oom"])
@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--limit", "-1", "--limit '-1': expected a whole number of 1 or more"),
        ("--limit", "0", "--limit '0': expected a whole number of 1 or more"),
        ("--limit", "many", "--limit 'many': expected a whole number of 1 or more"),
        ("--since", "-5m", "--since '-5m': expected a duration"),
        ("--until", "nan", "--until 'nan': expected a duration"),
    ],
)
def test_the_queries_refuse_a_nonsensical_flag_naming_it(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    command: str,
    flag: str,
    value: str,
    named: str,
) -> None:
    db = incident_archive(tmp_path / "a.db")
    code, out, err = kubemedic(capsys, command, "--db", str(db), flag, value)
    assert (code, out) == (2, "")
    assert named in one_error_line(err)


def test_a_huge_limit_is_all_of_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    db = incident_archive(tmp_path / "a.db")
    code, out, _ = kubemedic(capsys, "events", "--db", str(db), "--limit", "9" * 40, "-o", "json")
    assert code == 0 and len(json.loads(out)) == 6


def test_run_refuses_to_record_into_a_damaged_archive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, emulator: Running
) -> None:
    db = incident_archive(tmp_path / "a.db")
    with sqlite3.connect(db) as connection:
        connection.execute("DROP TABLE evictions")
    connection.close()
    before = db.read_bytes()
    code, _, err = kubemedic(
        capsys, "run", "--db", str(db), "--kubeconfig", str(emulator.kubeconfig)
    )
    assert code == 2
    assert "table evictions is missing" in one_error_line(err)
    assert db.read_bytes() == before


def test_run_refuses_a_corrupted_archive(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, emulator: Running
) -> None:
    db = incident_archive(tmp_path / "a.db")
    data = bytearray(db.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 8192] = bytes((i * 7 + 3) % 256 for i in range(8192))
    db.write_bytes(bytes(data))
    code, _, err = kubemedic(
        capsys, "run", "--db", str(db), "--kubeconfig", str(emulator.kubeconfig)
    )
    assert code == 2
    assert f"{db} is damaged" in one_error_line(err)


# -- odd event messages ------------------------------------------------------------------------

ODD = "\x1b[31mred\x1b[0m, a NUL \x00, a bell \x07, a line\nbreak, \ufffd, 漢字, 🙂 "


def test_odd_and_huge_event_messages_are_archived_and_printed_safely(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    emulator: Running,
) -> None:
    at = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    pod = bodies.pod("hub-0", namespace="jhub", node_name="core-1")
    odd = bodies.event(involved=pod, reason="Odd", message=ODD, first=at, name_suffix="odd")
    huge = bodies.event(
        involved=pod, reason="Huge", message="x" * 200_000, first=at, name_suffix="huge"
    )
    emulator.load(odd, huge)
    db = tmp_path / "archive.db"
    log = (tmp_path / "run.log").open("wb")
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kubemedic.cli import main; main()",
            "run",
            "--db",
            str(db),
            "--kubeconfig",
            str(emulator.kubeconfig),
            "--no-leader-elect",
        ],
        stdout=log,
        stderr=log,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        deadline = time.monotonic() + 60
        found: list[dict[str, object]] = []
        while time.monotonic() < deadline and len(found) < 2:
            time.sleep(0.5)
            assert process.poll() is None, (tmp_path / "run.log").read_text()
            if db.exists():
                code, out, _ = kubemedic(capsys, "events", "--db", str(db), "-o", "json")
                found = json.loads(out) if code == 0 else []
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
        log.close()
    by_reason = {str(item["reason"]): item for item in found}
    assert set(by_reason) == {"Odd", "Huge"}
    # NUL (which PostgreSQL text refuses) is kept as U+FFFD; everything else as it was sent.
    assert by_reason["Odd"]["message"] == ODD.replace("\x00", "\ufffd")
    huge_message = str(by_reason["Huge"]["message"])
    assert huge_message.startswith("x" * 100) and len(huge_message) <= MAX_MESSAGE + 1
    monkeypatch.setenv("COLUMNS", "6000")
    code, out, err = kubemedic(capsys, "events", "--db", str(db))
    assert (code, err) == (0, "")
    assert "\x1b" not in out and "\x00" not in out and "\x07" not in out
    assert "?[31mred?[0m" in out


WIDGETS = Kind("example.com", "v1", "widgets", "Widget", namespaced=True)


@pytest.mark.parametrize("fault", [{"throttle_rate": 1.0, "retry_after": 1}, {"error_rate": 1.0}])
def test_a_throttled_or_failing_probe_leaves_a_kind_to_the_reflector(
    emulator: Running, fault: dict[str, float]
) -> None:
    """A leader starting again during an API server's bad minute keeps going: only a 403 or a
    404 says a kind is not served (the reflector retries the rest with back-off)."""

    async def probe() -> tuple[bool, bool]:
        api = kubeconfig.connect(kubeconfig.resolve(emulator.kubeconfig, None))
        try:
            return await _served(api, kinds.DEPLOYMENTS), await _served(api, WIDGETS)
        finally:
            await api.close()

    emulator.call(lambda: emulator.server.faults.update(fault))
    assert asyncio.run(probe()) == (True, True)
    emulator.call(lambda: emulator.server.faults.update({"throttle_rate": 0.0, "error_rate": 0.0}))
    assert asyncio.run(probe()) == (True, False)  # no such API here: a plain 404
