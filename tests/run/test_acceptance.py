"""Acceptance: ``kubemedic run`` keeps what the API server forgets, through every fault.

The core-node-prometheus scenario (seed 003) is served over HTTP and played for two hours of
cluster time while ``kubemedic run`` records it from another process through lightkube. Along the
way the API server throttles (429 with Retry-After), fails (500), drops watch streams, compacts
its history (410 Gone on resume), and the recorder is killed with SIGKILL and restarted. At the
end the API server holds none of the OOM or eviction events (their one-hour TTL ran out) and the
archive equals the ground truth: every event object once, with its final count; every container
termination once; every evicted pod.

Runs on SQLite and on PostgreSQL (``archive_url``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Coroutine
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun

from .harness import KUBEMEDIC, RecorderProcess, Truth, archive_mismatch, eventually

#: A whole scenario played over HTTP: minutes on a loaded 2-core machine, not the suite's 120 s.
pytestmark = pytest.mark.timeout(900)

SPEED = 400.0
"""Cluster seconds per wall second asked of the paced run (it goes as fast as it can)."""


def test_two_hours_of_seed_003_survive_faults_and_restarts(
    archive_url: str, tmp_path: Path
) -> None:
    truth, evicted_in_api = asyncio.run(_play(archive_url, tmp_path))

    # The faults reached the recorder: it was throttled, failed, cut off, sent to relist, and
    # restarted (and then resumed from its checkpoints, replaying what it had missed).
    log = (tmp_path / "run.log").read_text()
    pods = [line for line in log.splitlines() if "v1/pods:" in line and "lists" in line]
    assert pods, log[-3000:]
    assert "'429'" in log and "'500'" in log, pods
    assert any(int(line.split("(")[1].split()[0]) > 0 for line in pods), pods  # relists
    assert "--- start 3" in log
    assert any(" 0 replayed" not in line for line in pods), pods
    assert len(truth.events) > 1000 and len(truth.terminations) > 10

    events = _cli("events", "--db", archive_url, "--reason", "Evicted", "--output", "json")
    archived_evicted = {item["uid"] for item in events}
    expected_evicted = {
        uid for uid, body in truth.events.items() if body.get("reason") == "Evicted"
    }
    assert expected_evicted, "the scenario evicts the hub"
    assert evicted_in_api == 0
    assert archived_evicted == expected_evicted

    oom = _cli("oom", "--db", archive_url, "--output", "json")
    assert truth.oom_kills, "the scenario OOM-kills workers"
    assert len([i for i in oom if i["kind"] == "oom-kill"]) == len(truth.oom_kills)
    _incident_export_reads_like_the_report(archive_url)
    assert {i["pod"] for i in oom if i["kind"] == "eviction"} >= {
        str(body["involvedObject"]["name"])
        for body in truth.events.values()
        if body.get("reason") == "Evicted"
    }


def _incident_export_reads_like_the_report(url: str) -> None:
    """Seed 003's report, as the daemon's own scans and archive tell it: the hub evicted from
    the overcommitted core node, Prometheus beside it, the burst of nodes, the follow-ups."""
    listed = json.loads(_run("incidents", "list", "--db", url, "--output", "json"))["incidents"]
    hub = [i for i in listed if "hub" in i["title"].lower() and "evict" in i["title"].lower()]
    assert len(hub) == 1, [i["title"] for i in listed]
    draft = _run("incidents", "export", hub[0]["id"], "--db", url, "--format", "markdown")
    lowered = draft.lower()
    for words in ("timeline", "cause", "follow-up", "prometheus", "core", "evict"):
        assert words in lowered, f"{words!r} missing from the draft:\n{draft}"
    assert "100 nodes" in draft or "nodes added" in lowered or "scale" in lowered, draft


async def _kill_during(recorder: RecorderProcess, playing: Coroutine[Any, Any, None]) -> None:
    """SIGKILL the recorder while the cluster is changing, then let the play finish."""
    task = asyncio.ensure_future(playing)
    await asyncio.sleep(0.5)
    assert not task.done(), "kill the recorder while the cluster changes, not after"
    await recorder.kill()
    await task


def _run(*args: str) -> str:
    done = subprocess.run(
        [*KUBEMEDIC, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _cli(*args: str) -> list[dict[str, Any]]:
    loaded = json.loads(_run(*args))
    assert isinstance(loaded, list)
    return loaded


async def _play(url: str, tmp: Path) -> tuple[Truth, int]:
    run = ScenarioRun(scenarios.load("core-node-prometheus"), until=timedelta(hours=2))
    truth = Truth()
    truth.attach(run.sim)
    server = run.sim.server
    port = await server.start(port=0, tick=False)
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    recorder = RecorderProcess(url, kubeconfig, tmp / "run.log", "--scan-interval", "1m")
    recorder.identity = "kubemedic-replica-a"
    minute = timedelta(minutes=1)

    async def play_until(minutes: int) -> None:
        await run.run_paced(SPEED, until=run.origin + minutes * minute)

    async def caught_up() -> None:
        await eventually(lambda: archive_mismatch(truth, url), timeout=90, recorder=recorder)

    try:
        await recorder.start()
        await play_until(6)  # the core pool fills, 100 nodes arrive: the busiest minutes
        await caught_up()

        # Throttling and failures while the cluster goes on (watches end every 50 events, so
        # the recorder keeps asking again and meets them).
        server.faults.update(
            {"throttle_rate": 0.3, "retry_after": 1, "error_rate": 0.2, "watch_drop_after": 50}
        )
        await play_until(12)
        server.faults.update({"throttle_rate": 0.0, "error_rate": 0.0, "watch_drop_after": 0})
        await caught_up()

        # Watch streams cut every few events.
        server.faults.update({"watch_drop_after": 25})
        await play_until(18)
        server.faults.update({"watch_drop_after": 0})
        await caught_up()

        # History compacted: every resumed watch gets 410 Gone and must relist.
        server.faults.update({"force_gone": True, "watch_drop_after": 40})
        server.store.compact()
        await play_until(22)
        server.faults.update({"force_gone": False, "watch_drop_after": 0})
        await caught_up()

        # kill -9 in the middle of the stream while the cluster goes on; the same replica
        # (same identity, as a StatefulSet pod's name) restarts and resumes from checkpoints.
        await _kill_during(recorder, play_until(26))
        await play_until(32)
        await recorder.start()
        await caught_up()

        # Again while the API server expires the events (TTL); this time a new replica,
        # which must wait for the dead one's Lease to expire before it records.
        await play_until(62)
        await _kill_during(recorder, play_until(66))
        recorder.identity = "kubemedic-replica-b"
        await play_until(72)
        await recorder.start()
        await caught_up()

        await play_until(120)
        await caught_up()
        assert await recorder.stop() == 0
    finally:
        if recorder.alive():
            await recorder.kill()
        await server.stop()
    left = [
        obj
        for obj in run.sim.objects("events")
        if obj.get("reason") in ("Evicted", "SystemOOM") or "OOM" in str(obj.get("message"))
    ]
    return truth, len(left)
