"""``kubemedic demo``, the README's main job: the incidents replayed on the simulator, scanned."""

from __future__ import annotations

import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.demo import SCENARIOS, bundled_snapshots, replay
from kubemedic.output import progress
from tests.cli.terminal import fake_terminal, shown

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]


def test_demo_replays_each_incident_then_the_healthy_control() -> None:
    done = subprocess.run(
        [*KUBEMEDIC, "demo"], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    positions = [out.index(f"─ {name}: ") for name in SCENARIOS]
    assert positions == sorted(positions)
    storm, failures, hub, healthy = (
        out[start:end] for start, end in zip(positions, [*positions[1:], len(out)], strict=True)
    )
    assert "failed-pod-storm" in storm
    assert "out-of-band-edit" in storm
    assert "node-not-ready" in failures
    assert "memory-hog-neighbour" in hub
    assert "evicted" in hub
    assert "0 findings: 0 critical, 0 warning, 0 info" in healthy
    assert "replayed: 00:10:00 of cluster time" in storm
    # The memory incident, recorded by `kubemedic run` over HTTP and asked of the archive two
    # hours on, when the API server has expired every eviction event.
    archive = hub[hub.index("An hour later") :]
    assert "$ kubemedic events --reason Evicted" in archive
    assert "gone" in archive  # deleted by the API server, kept by the archive
    assert "hub-" in archive and "core-2" in archive
    assert "0 OOM kill(s), 10 eviction(s)" in archive
    assert "# JupyterHub hub evicted: memory overcommit on core pool, Prometheus beside it" in (
        archive
    )


def test_demo_keeps_the_archive_when_asked(tmp_path: Path) -> None:
    kept = tmp_path / "demo.db"
    kept.write_bytes(b"")
    result = CliRunner().invoke(app, ["demo", "--archive", str(kept)])
    assert result.exit_code == 2
    assert "exists" in result.output


def test_demo_can_scan_the_bundled_snapshots_instead() -> None:
    result = CliRunner().invoke(app, ["demo", "--snapshots"])
    assert result.exit_code == 0
    assert "failed-pod-storm" in result.output
    assert "0 findings: 0 critical, 0 warning, 0 info" in result.output


def test_on_a_terminal_the_demo_names_each_step_and_quiet_silences_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = fake_terminal(monkeypatch)
    result = CliRunner().invoke(app, ["demo", "--snapshots"])
    assert result.exit_code == 0
    text = shown(buffer)
    for directory in bundled_snapshots():
        assert f"scanning the snapshot {directory.name}" in text
    buffer.truncate(0)
    quiet = CliRunner().invoke(app, ["-q", "demo", "--snapshots"])
    assert quiet.exit_code == 0
    assert buffer.getvalue() == ""
    assert quiet.stdout == result.stdout


def test_a_replay_on_a_terminal_names_the_replay_then_the_scan() -> None:
    buffer = StringIO()
    terminal = Console(file=buffer, force_terminal=True, width=200)
    title, _, findings = replay("healthy", progress=progress.on_terminal(terminal))
    assert title.startswith("healthy")
    assert findings == []
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", buffer.getvalue())
    assert "replaying healthy on the simulated cluster" in text
    assert "scanning the cluster healthy left behind" in text
