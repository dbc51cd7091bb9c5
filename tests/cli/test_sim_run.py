"""``kubemedic sim list`` / ``sim run`` as a user runs them: scenarios replayed, snapshots
scanned, the API served while a scenario runs and watched by the real kubectl, bad input."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubemedic.cli import app
from tests.cli.terminal import fake_terminal, shown
from tests.sim.conftest import KUBECTL, needs_kubectl

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]


def _kubemedic(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBEMEDIC, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def _scan(snapshot: Path) -> tuple[int, dict[str, object]]:
    done = _kubemedic("scan", "--snapshot", str(snapshot), "--output", "json")
    return done.returncode, json.loads(done.stdout)


def test_sim_list_names_every_bundled_scenario() -> None:
    done = _kubemedic("sim", "list")
    assert done.returncode == 0, done.stderr
    for name in ("gitops-nodename-storm", "node-failures", "core-node-prometheus", "healthy"):
        assert name in done.stdout


def test_the_storm_scenario_snapshot_scans_as_the_incident(tmp_path: Path) -> None:
    snapshot = tmp_path / "storm.json.gz"
    done = _kubemedic("sim", "run", "gitops-nodename-storm", "--snapshot-out", str(snapshot))
    assert done.returncode == 0, done.stderr
    assert "gitops-nodename-storm: 00:10:00 of cluster time" in done.stdout
    code, report = _scan(snapshot)
    assert code == 1
    found = {(f["check"], f["severity"]) for f in report["findings"]}  # type: ignore[union-attr]
    assert {
        ("failed-pod-storm", "critical"),
        ("out-of-band-edit", "critical"),
        ("pinned-node-name", "critical"),
    } <= found
    [edit] = [f for f in report["findings"] if f["check"] == "out-of-band-edit"]  # type: ignore[union-attr]
    assert "kubectl-edit" in json.dumps(edit["evidence"])
    assert "spec.template.spec.nodeName" in json.dumps(edit["evidence"])


def test_the_healthy_scenario_scans_clean(tmp_path: Path) -> None:
    snapshot = tmp_path / "healthy.json"
    done = _kubemedic("sim", "run", "healthy", "--until", "10m", "--snapshot-out", str(snapshot))
    assert done.returncode == 0, done.stderr
    code, report = _scan(snapshot)
    assert code == 0
    assert report["summary"] == {"critical": 0, "warning": 0, "info": 0}


def test_a_bad_scenario_file_is_an_input_error_naming_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nduration: 10m\ntimeline:\n  - {at: 5x, action: edit}\n")
    done = _kubemedic("sim", "run", str(bad))
    assert done.returncode == 2
    assert "bad.yaml" in done.stderr
    assert "timeline[0].at" in done.stderr


def test_an_unknown_scenario_is_an_input_error() -> None:
    done = _kubemedic("sim", "run", "no-such-scenario")
    assert done.returncode == 2
    assert "no-such-scenario" in done.stderr


@pytest.mark.parametrize("until", ["5x", "inf", "-1s", ""])
def test_a_bad_duration_is_an_input_error_naming_the_flag(until: str) -> None:
    done = _kubemedic("sim", "run", "healthy", "--until", until)
    assert done.returncode == 2
    assert done.stderr.startswith("error: --until: expected a duration")
    assert "Traceback" not in done.stderr


def test_serving_options_need_serve(tmp_path: Path) -> None:
    done = _kubemedic("sim", "run", "healthy", "--kubeconfig-out", str(tmp_path / "kc"))
    assert done.returncode == 2
    assert "--serve" in done.stderr


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"sim run exited early: {err}")
        assert time.monotonic() < deadline, "no kubeconfig written"
        time.sleep(0.1)


def _watch_until(command: list[str], wanted: str, *, timeout: float) -> str:
    """Run a watching kubectl until ``wanted`` shows in its output (or time runs out)."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        try:
            while time.monotonic() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                seen.append(line)
                if wanted in line:
                    break
        finally:
            proc.kill()
    return "".join(seen)


@needs_kubectl
def test_kubectl_watches_the_storm_while_the_scenario_runs(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    with subprocess.Popen(
        [
            *KUBEMEDIC, "sim", "run", "gitops-nodename-storm", "--serve", "--speed", "40",
            "--kubeconfig-out", str(kubeconfig), "--hold",
        ],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ) as proc:  # fmt: skip
        try:
            _check_watching(kubeconfig, proc)
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                pytest.fail("sim run did not stop on SIGINT")
        assert proc.returncode == 0, err


def _check_watching(kubeconfig: Path, proc: subprocess.Popen[str]) -> None:
    _wait_for(kubeconfig, proc)
    kubectl = [KUBECTL, "--kubeconfig", str(kubeconfig)]
    pods = _watch_until([*kubectl, "get", "pods", "-n", "gateway", "-w"], "OutOfmemory", timeout=60)
    assert "OutOfmemory" in pods
    events = _watch_until(
        [*kubectl, "get", "events", "-n", "gateway", "-w"], "OutOfmemory", timeout=30
    )
    assert "OutOfmemory" in events
    top = subprocess.run(
        [*kubectl, "top", "nodes"], capture_output=True, text=True, timeout=30, check=False
    )
    assert top.returncode == 0, top.stderr
    assert "workers-" in top.stdout
    assert "MEMORY(bytes)" in top.stdout
    assert proc.poll() is None


# -- progress -----------------------------------------------------------------------------------


def test_progress_is_silent_when_stderr_is_a_pipe() -> None:
    done = _kubemedic("sim", "run", "healthy", "--until", "2m")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "healthy: 00:02:00 of cluster time" in done.stdout


def test_on_a_terminal_progress_shows_cluster_time_speed_and_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    buffer = fake_terminal(monkeypatch)
    result = CliRunner().invoke(app, ["sim", "run", "healthy", "--until", "2m"])
    assert result.exit_code == 0, result.output
    text = shown(buffer)
    assert "healthy" in text
    assert "T+00:02:00 / 00:02:00" in text
    assert "x real time" in text
    assert re.search(r"\d+ nodes \d+ pods \d+ events", text)


def test_quiet_keeps_the_terminal_free_of_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    buffer = fake_terminal(monkeypatch)
    result = CliRunner().invoke(app, ["--quiet", "sim", "run", "healthy", "--until", "2m"])
    assert result.exit_code == 0, result.output
    assert buffer.getvalue() == ""
    assert "healthy: 00:02:00 of cluster time" in result.stdout
