"""The recorder's own rules: what a scan's "now" is while streams lag, and the daemon's bad
input (a kubeconfig or archive URL that cannot work) ending in exit code 2 with the reason."""

from __future__ import annotations

import asyncio
import subprocess
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kubemedic.kube import kinds
from kubemedic.run.recorder import Recorder

from .harness import KUBEMEDIC

NOW = datetime(2026, 1, 1, 1, 0, tzinfo=UTC)


def _node(name: str, written: datetime) -> dict[str, object]:
    stamp = written.strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "managedFields": [{"manager": "kubelet", "operation": "Update", "time": stamp}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def _recorder() -> Recorder:
    return Recorder(archive=None, cluster="c", now=lambda: NOW)  # type: ignore[arg-type]


def test_a_stream_still_pouring_in_holds_the_scan_back_to_its_newest_write() -> None:
    recorder = _recorder()
    two_minutes_ago = NOW - timedelta(minutes=2)
    asyncio.run(recorder.changed(kinds.NODES, "MODIFIED", _node("a", two_minutes_ago), "5"))
    assert recorder.as_of(NOW) == two_minutes_ago


def test_a_quiet_watching_stream_is_caught_up() -> None:
    recorder = _recorder()
    asyncio.run(
        recorder.changed(kinds.NODES, "MODIFIED", _node("a", NOW - timedelta(minutes=2)), "5")
    )
    time.sleep(0.05)
    assert recorder.as_of(NOW, idle=0.01) == NOW


def test_a_stream_not_watching_is_behind_even_when_quiet() -> None:
    recorder = _recorder()
    written = NOW - timedelta(minutes=3)
    asyncio.run(recorder.changed(kinds.NODES, "MODIFIED", _node("a", written), "5"))
    time.sleep(0.05)
    assert recorder.as_of(NOW, idle=0.01, behind={kinds.NODES.stream}) == written


def test_deletions_and_long_silent_kinds_say_nothing_about_lag() -> None:
    recorder = _recorder()
    # An hour-old object deleted now (an Event's TTL) is not a sign the stream lags.
    asyncio.run(recorder.changed(kinds.NODES, "DELETED", _node("a", NOW - timedelta(hours=1)), "6"))
    assert recorder.as_of(NOW) == NOW
    # Nor is a kind last written long ago, even while its watch reconnects.
    asyncio.run(
        recorder.changed(kinds.NODES, "MODIFIED", _node("b", NOW - timedelta(hours=1)), "7")
    )
    assert recorder.as_of(NOW, behind={kinds.NODES.stream}) == NOW


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*KUBEMEDIC, "run", *args], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_missing_kubeconfig_exits_2_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    done = _run("--db", str(tmp_path / "a.db"), "--kubeconfig", str(missing))
    assert done.returncode == 2
    assert "nope.yaml" in done.stderr


def test_an_unusable_archive_url_exits_2_naming_it(tmp_path: Path) -> None:
    done = _run("--db", "mysql://someone@somewhere/db", "--kubeconfig", str(tmp_path / "k"))
    assert done.returncode == 2
    assert "mysql" in done.stderr
