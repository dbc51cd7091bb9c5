"""``kubemedic run --web``: the daemon serves the dashboard over the archive it records, from
its own event loop, with the same loopback-unless-token rule as ``kubemedic web``."""

from __future__ import annotations

import asyncio
import json
import socket
import urllib.error
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun
from tests.inprocess import kubemedic, one_error_line

from .harness import RecorderProcess

#: A scenario played over HTTP with the recorder in its own process.
pytestmark = pytest.mark.timeout(600)

SPEED = 400.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def fetch(url: str) -> tuple[int, str, str]:
    """Status, content type and body of a GET (an HTTP error's too)."""
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.headers["content-type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["content-type"] or "", error.read().decode()


async def until_served(
    url: str, recorder: RecorderProcess, *, wanted: Any, timeout: float = 240
) -> tuple[int, str, str]:
    """GET ``url`` until ``wanted(status, type, body)`` holds (the daemon still running)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    seen: object = "nothing"
    while loop.time() < deadline:
        if not recorder.alive():
            raise AssertionError(f"kubemedic run exited; log:\n{recorder.tail()}")
        try:
            answer = await asyncio.to_thread(fetch, url)
        except OSError as error:  # not listening yet
            seen = error
        else:
            if wanted(*answer):
                return answer
            seen = answer[:2], answer[2][:300]
        await asyncio.sleep(0.5)
    raise AssertionError(f"{url}: never as wanted (last: {seen}); log:\n{recorder.tail()}")


def test_run_serves_the_dashboard_of_what_it_records(sqlite_url: str, tmp_path: Path) -> None:
    overview, recording, incidents, after = asyncio.run(_play(sqlite_url, tmp_path))
    assert "text/html" in overview[1]
    assert "kubemedic" in overview[2] and "core-pool" in overview[2], overview[2][:2000]
    assert isinstance(recording["items"], list) and "continue" in recording
    # What the daemon scanned and recorded is on the dashboard: the hub evicted.
    assert any("evict" in item["title"].lower() for item in incidents["items"]), incidents
    assert after is None  # the dashboard stopped with the daemon


def _titles(body: str) -> list[str]:
    return [str(item["title"]).lower() for item in json.loads(body)["items"]]


async def _play(
    url: str, tmp: Path
) -> tuple[tuple[int, str, str], dict[str, Any], dict[str, Any], object]:
    run = ScenarioRun(scenarios.load("core-node-prometheus"), until=timedelta(minutes=40))
    server = run.sim.server
    port = await server.start(port=0, tick=False)
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    web = free_port()
    base = f"http://127.0.0.1:{web}"
    recorder = RecorderProcess(
        url, kubeconfig, tmp / "run.log", "--scan-interval", "1m", "--web", f"127.0.0.1:{web}"
    )
    playing = None
    try:
        await recorder.start()
        await until_served(f"{base}/", recorder, wanted=lambda s, t, b: s == 200)
        # The cluster goes on while the dashboard is asked: the pages are read beside the
        # recorder's writes (how much of the play is left by then depends on the machine).
        playing = asyncio.ensure_future(run.run_paced(SPEED))
        await until_served(f"{base}/", recorder, wanted=lambda s, t, b: s == 200)
        _, _, listed = await until_served(
            f"{base}/api/v1/incidents", recorder, wanted=lambda s, t, b: s == 200
        )
        await playing
        # The daemon goes on recording and scanning what the play left: the eviction's
        # incident appears once a scan has found it (and the dashboard grouped again).
        _, _, body = await until_served(
            f"{base}/api/v1/incidents",
            recorder,
            wanted=lambda s, t, b: s == 200 and any("evict" in x for x in _titles(b)),
        )
        overview = await until_served(f"{base}/", recorder, wanted=lambda s, t, b: s == 200)
        assert await recorder.stop() == 0
        try:
            after: object = await asyncio.to_thread(fetch, f"{base}/")
        except OSError:
            after = None
        return overview, json.loads(listed), json.loads(body), after
    finally:
        if playing is not None and not playing.done():
            playing.cancel()
        if recorder.alive():
            await recorder.kill()
        await server.stop()


def test_run_refuses_a_dashboard_beyond_loopback_without_a_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = kubemedic(capsys, "run", "--db", str(tmp_path / "a.db"), "--web", "0.0.0.0:1")
    assert code == 2
    line = one_error_line(err)
    assert line.startswith("error: --web '0.0.0.0' is not a loopback address"), line
    assert "--web-token-file FILE" in line
    assert not (tmp_path / "a.db").exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--web", "nowhere"], "error: --web 'nowhere': expected HOST:PORT"),
        (["--web", "127.0.0.1:99999"], "error: --web '127.0.0.1:99999': expected HOST:PORT"),
        (["--web-token-file", "t"], "error: --web-token-file: the dashboard's token needs --web"),
        (
            ["--web", "0.0.0.0:8080", "--web-token-file", "short"],
            "error: --web-token-file short: the token (its first line) must be at least 16",
        ),
        (["--web", "0.0.0.0:8080", "--web-token-file", "absent"], "error: --web-token-file "),
    ],
)
def test_run_refuses_bad_dashboard_flags_naming_them(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "short").write_text("too-short\n")
    code, _, err = kubemedic(capsys, "run", "--db", str(tmp_path / "a.db"), *args)
    assert code == 2
    assert one_error_line(err).startswith(named)
    assert not (tmp_path / "a.db").exists()
