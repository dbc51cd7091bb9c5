"""``kubemedic demo``, the README's main job: the incidents replayed on the simulator, scanned."""

from __future__ import annotations

import subprocess
import sys

from typer.testing import CliRunner

from kubemedic.cli import app
from kubemedic.demo import SCENARIOS

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


def test_demo_can_scan_the_bundled_snapshots_instead() -> None:
    result = CliRunner().invoke(app, ["demo", "--snapshots"])
    assert result.exit_code == 0
    assert "failed-pod-storm" in result.output
    assert "0 findings: 0 critical, 0 warning, 0 info" in result.output
