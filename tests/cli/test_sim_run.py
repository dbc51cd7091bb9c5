"""``kubemedic sim list`` / ``sim run`` as a user runs them: scenarios replayed, snapshots
scanned, the API served while a scenario runs and watched by the real kubectl, bad input."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubemedic.cli import app, main
from kubemedic.sim import scenarios
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


@pytest.mark.parametrize("until", ["5x", "inf", "-1s", "", "-5m", "nan", "1e400"])
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


def _refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """``kubemedic sim run ARGS`` in this process: exit 2 and one line on stderr, returned."""
    with pytest.raises(SystemExit) as done:
        main(["sim", "run", *args])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    assert "Input should be" not in err
    return err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--until", "1000000d"), "--until: expected a duration of at most 30d"),
        (("--speed", "nan"), "--speed: expected a number from 0.01 to 10,000"),
        (("--speed", "1e-300"), "--speed: expected a number from 0.01 to 10,000"),
        (("--speed", "inf"), "--speed: expected a number from 0.01 to 10,000"),
        (("--speed", "-1"), "--speed: expected a number from 0.01 to 10,000"),
        (("--serve", "--port", "99999"), "--port: expected a port from 0 to 65535, got 99999"),
        (("--serve", "--port", "-1"), "--port: expected a port from 0 to 65535, got -1"),
    ],
)
def test_a_bad_run_flag_is_one_line_naming_it(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    assert message in _refused(capsys, "healthy", *args)


def _healthy_with(tmp_path: Path, old: str, new: str) -> Path:
    text = Path(__file__).parents[2] / "src/kubemedic/sim/scenarios/bundled/healthy.yaml"
    changed = text.read_text().replace(old, new, 1)
    assert changed != text.read_text()
    path = tmp_path / "story.yaml"
    path.write_text(changed)
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "count: 6",
            "count: 1000000000",
            "pools[0].count: expected a whole number from 0 to 100,000",
        ),
        (
            "duration: 30m",
            "duration: 30m\ncluster: {resolution: 0s}",
            'cluster.resolution: expected a duration from 10ms to 1h, got "0s"',
        ),
        ("duration: 30m", "duration: -30m", 'duration: "-30m" is not a duration from 0s to 30d'),
        ("duration: 30m", "duration: .nan", "duration: NaN is not a duration"),
        ("duration: 30m", "duration: 1e9", 'duration: "1e9" is not a duration from 0s to 30d'),
        (
            "duration: 30m",
            "duration: 30d\ncluster: {resolution: 10ms}",
            "steps of cluster.resolution; at most 10,000,000",
        ),
        ("replicas: 2", "replicas: 100000000", "up to 1"),
        ("seed: 0", "seed: 1e400", "seed: expected a whole number"),
        ("seed: 0", "seed: [1]", "seed: expected a whole number"),
        ("name: healthy", "name: healthy\nbogus: 1", "bogus: unknown key"),
    ],
)
def test_a_scenario_out_of_bounds_is_refused_before_it_is_built(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, old: str, new: str, message: str
) -> None:
    err = _refused(capsys, str(_healthy_with(tmp_path, old, new)))
    assert "story.yaml" in err and message in err


def test_a_deep_or_alias_bomb_scenario_is_refused_at_once_with_the_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: x\nobjects: " + "[" * 5000 + "\n")
    assert "deep.yaml: line 2: nested deeper than 200 levels" in _refused(capsys, str(deep))
    bomb = tmp_path / "bomb.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    bomb.write_text("\n".join(lines) + "\n")
    assert "bomb.yaml: line 1: YAML aliases expand" in _refused(capsys, str(bomb))


def test_until_past_the_step_limit_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fine = _healthy_with(tmp_path, "duration: 30m", "duration: 1m\ncluster: {resolution: 10ms}")
    err = _refused(capsys, str(fine), "--until", "30d")
    assert "story.yaml: --until: 259,200,000 steps of cluster.resolution; at most 10,000,000" in err


REFUSED_STORY = """\
name: refused
duration: 10m
pools:
  - {name: general, count: 2, capacity: {cpu: "4", memory: 16Gi, pods: 110}}
objects:
  - manager: kubectl
    operation: Apply
    manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: Not_A_Name, namespace: default}}
timeline:
  - at: 1m
    action: patch
    target: {kind: Deployment, namespace: default, name: nope}
    patch: {spec: {replicas: 2}}
  - {at: 2m, action: reboot, nodes: {selector: "team=db"}, repeat: {every: 2m}}
  - {at: 3m, action: mark, note: still here}
"""


@pytest.mark.parametrize("paced", [(), ("--serve", "--speed", "5000")], ids=["fast", "served"])
def test_refused_actions_exit_2_naming_each_after_the_outputs_are_written(
    tmp_path: Path, paced: tuple[str, ...]
) -> None:
    story = tmp_path / "story.yaml"
    story.write_text(REFUSED_STORY)
    snapshot = tmp_path / "out.json"
    done = _kubemedic("sim", "run", str(story), "--snapshot-out", str(snapshot), *paced)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("serving ")]
    assert len(lines) == 1, done.stderr
    (line,) = lines
    assert line.startswith(
        f"error: {story}: 3 scenario actions refused by the simulated cluster, so the scenario "
        "did not happen as written: setup at 00:00:00: ConfigMap Not_A_Name: "
    ), line
    assert "; timeline[0] at 00:01:00: patch Deployment default/nope as kubectl-patch: " in line
    assert '404 NotFound: deployments.apps "nope" not found; ' in line
    assert (
        "; timeline[1] at 00:02:00 (and 4 more times, the last at 00:10:00): reboot: no node "
        "matches (the run went on and wrote its outputs; --allow-refused accepts refused "
        "actions)"
    ) in line
    assert "timeline[2]" not in line
    # Nothing lost: the run went to its end and the snapshot was written.
    assert "refused: 00:10:00 of cluster time" in done.stdout
    assert {"Node", "Namespace"} <= {
        item["kind"] for item in json.loads(snapshot.read_text())["items"]
    }


def test_allow_refused_makes_the_refusals_a_warning_and_exits_0(tmp_path: Path) -> None:
    story = tmp_path / "story.yaml"
    story.write_text(REFUSED_STORY)
    done = _kubemedic("sim", "run", str(story), "--allow-refused")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith(f"warning: {story}: 3 scenario actions refused")
    assert done.stderr.count("\n") == 1 and "--allow-refused" not in done.stderr


#: Cluster time each bundled scenario is played for below: all of a short one, the first 6
#: minutes (the start of its story, a few seconds of wall time) of a long one.
BUNDLED_PLAYED = timedelta(minutes=6)


@pytest.mark.parametrize("info", scenarios.available(), ids=lambda info: info.name)
def test_no_bundled_scenario_has_a_refused_action(
    capsys: pytest.CaptureFixture[str], info: scenarios.ScenarioInfo
) -> None:
    until = min(info.duration, BUNDLED_PLAYED)
    with pytest.raises(SystemExit) as done:
        main(["sim", "run", info.name, "--until", f"{until.total_seconds():.0f}s"])
    assert (done.value.code, capsys.readouterr().err) == (0, "")


def test_many_refused_actions_are_still_one_line_listing_the_first_five(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    story = tmp_path / "many.yaml"
    misses = "".join(
        f'  - {{at: {minute}m, action: reboot, nodes: {{selector: "team=t{minute}"}}}}\n'
        for minute in range(1, 8)
    )
    story.write_text(REFUSED_STORY.partition("objects:")[0] + "timeline:\n" + misses)
    err = _refused(capsys, str(story))
    assert f"{story}: 7 scenario actions refused by the simulated cluster" in err
    assert "timeline[4] at 00:05:00: reboot: no node matches; and 2 more (the run went on" in err
    assert "timeline[5]" not in err
