"""``kubemedic sim serve`` as a user runs it: a process, a kubeconfig, signals, bad input."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import datetime, timedelta
from pathlib import Path

import pytest
import yaml

from kubemedic.cli import main
from kubemedic.snapshot.loading import load_snapshot
from tests.factories import node, pod
from tests.sim.conftest import KUBECTL, needs_kubectl

COMMAND = [sys.executable, "-c", "from kubemedic.cli import main; main()", "sim", "serve"]


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*COMMAND, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _wait_for(path: Path, proc: subprocess.Popen[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(
                f"server exited early: {proc.stderr.read() if proc.stderr else ''}"
            )
        assert time.monotonic() < deadline, "no kubeconfig written"
        time.sleep(0.05)


@needs_kubectl
def test_serve_loads_a_snapshot_writes_a_kubeconfig_and_stops_on_sigterm(tmp_path: Path) -> None:
    snapshot = tmp_path / "snap.json"
    snapshot.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "List",
                "items": [node("node-a"), pod("api-0", namespace="shop", node_name="node-a")],
            }
        )
    )
    kubeconfig = tmp_path / "kc"
    proc = _start("--port", "0", "--kubeconfig-out", str(kubeconfig), "--load", str(snapshot))
    try:
        _wait_for(kubeconfig, proc)
        server = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        assert server.startswith("http://127.0.0.1:")
        out = subprocess.run(
            [
                KUBECTL or "kubectl",
                "--kubeconfig",
                str(kubeconfig),
                "get",
                "pods",
                "-A",
                "-o",
                "json",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        items = json.loads(out)["items"]
        assert [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in items] == [
            ("shop", "api-0")
        ]
        # The loaded pod keeps what the snapshot said about it.
        assert items[0]["status"]["phase"] == "Running"
        # Virtual time starts where the snapshot ends (its newest timestamp), as scan sees it.
        with urllib.request.urlopen(server + "/kubemedic.io/v1/clock", timeout=10) as resp:
            clock = json.loads(resp.read())
        newest = load_snapshot(snapshot).view().now
        started = datetime.fromisoformat(clock["now"].replace("Z", "+00:00"))
        assert timedelta(0) <= started - newest < timedelta(minutes=1)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "listening on http://127.0.0.1:" in err


def test_serve_rejects_a_malformed_snapshot_with_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Pod\nmetadata: {name: [unclosed\n")
    result = subprocess.run(
        [*COMMAND, "--load", str(bad)], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert "bad.yaml" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--fault", "nonsense=1"), "unknown fault"),
        (("--fault", "error-rate=2"), "--fault error-rate: expected a rate from 0 to 1"),
        (("--event-ttl", "soon"), "duration"),
        (("--speed", "0"), "--speed: expected a number from 0.01"),
        (("--clock-start", "yesterday"), "RFC 3339"),
    ],
)
def test_serve_rejects_bad_options(args: tuple[str, ...], message: str) -> None:
    result = subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 2
    assert message in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--port", "99999"), "--port: expected a port from 0 to 65535, got 99999"),
        (("--port", "-1"), "--port: expected a port from 0 to 65535, got -1"),
        (("--history", "-1"), "--history: expected a number of changes from 1 to 10,000,000"),
        (("--history", "0"), "--history: expected a number of changes"),
        (("--event-ttl", "-5m"), "--event-ttl: expected a duration of zero or more"),
        (("--event-ttl", "1000000d"), "--event-ttl: expected a duration of at most 30d"),
        (("--speed", "nan"), "--speed: expected a number from 0.01 to 10,000"),
        (("--speed", "inf"), "--speed: expected a number from 0.01 to 10,000"),
        (("--speed", "1e-300"), "--speed: expected a number from 0.01 to 10,000"),
        (("--clock-start", "9999-12-31T23:59:59Z"), "expected a time from 1970-01-01T00:00:00Z"),
        (("--clock-start", "0001-01-01T00:00:00Z"), "expected a time from 1970-01-01T00:00:00Z"),
        (
            ("--fault", "unknown=1"),
            "--fault: unknown fault 'unknown'; known: error-rate, force-gone, latency,",
        ),
        (("--fault", "error-rate"), "--fault: expected NAME=VALUE such as error-rate=0.1"),
        (("--fault", "error-rate=x"), "--fault error-rate: expected a rate from 0 to 1, got 'x'"),
        (("--fault", "error-rate=nan"), "--fault error-rate: expected a rate from 0 to 1"),
        (("--fault", "throttle_rate=-0.1"), "--fault throttle-rate: expected a rate from 0 to 1"),
        (("--fault", "latency=nan"), "--fault latency: expected a number of seconds from 0"),
        (("--fault", "timeout-seconds=inf"), "--fault timeout-seconds: expected a number of"),
        (("--fault", "watch-drop-after=-1"), "--fault watch-drop-after: expected a whole number"),
        (("--fault", "retry-after=1.5"), "--fault retry-after: expected a whole number"),
        (("--fault", "watch-stall=maybe"), "--fault watch-stall: expected true or false"),
    ],
)
def test_a_bad_flag_is_one_line_naming_it_before_anything_is_served(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["sim", "serve", *args])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    assert message in err
    assert "Input should be" not in err and "error_rate" not in err
