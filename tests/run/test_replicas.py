"""Two replicas of ``kubemedic run`` on one cluster: only the Lease holder records; when it dies
(SIGKILL, no release) the other takes over after the lease runs out and the archive stays
complete."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path

from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun

from .harness import RecorderProcess, Truth, archive_mismatch, eventually


def test_only_the_leader_records_and_the_other_takes_over(sqlite_url: str, tmp_path: Path) -> None:
    logs = asyncio.run(_two_replicas(sqlite_url, tmp_path))
    first, second = logs
    recording = [name for name, log in (("a", first), ("b", second)) if "is the leader" in log]
    # a led first; b waited, saw a as the leader, and took over only after a died.
    assert "replica-a is the leader: recording" in first
    assert re.search(r"the leader of default/kubemedic is replica-a", second)
    assert "replica-b is the leader: recording" in second
    assert recording == ["a", "b"]
    before_kill = second[: second.index("replica-b is the leader")]
    assert "scan " not in before_kill  # a standby neither records nor scans


async def _two_replicas(url: str, tmp: Path) -> tuple[str, str]:
    run = ScenarioRun(scenarios.load("node-failures"))
    truth = Truth()
    truth.attach(run.sim)
    server = run.sim.server
    port = await server.start(port=0, tick=False)
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    a = RecorderProcess(url, kubeconfig, tmp / "a.log", "--scan-interval", "5m")
    b = RecorderProcess(url, kubeconfig, tmp / "b.log", "--scan-interval", "5m")
    a.identity, b.identity = "replica-a", "replica-b"
    minute = timedelta(minutes=1)
    try:
        await a.start()
        await eventually(
            lambda: None if "is the leader" in _read(a) else "a not leading", timeout=60, recorder=a
        )
        await b.start()
        await eventually(
            lambda: None if "the leader of" in _read(b) else "b not campaigning",
            timeout=60,
            recorder=b,
        )
        await run.run_paced(200.0, until=run.origin + 10 * minute)
        await eventually(lambda: archive_mismatch(truth, url), timeout=90, recorder=a)
        await a.kill()
        await run.run_paced(200.0, until=run.origin + 20 * minute)
        await eventually(lambda: archive_mismatch(truth, url), timeout=120, recorder=b)
        assert await b.stop() == 0
    finally:
        for replica in (a, b):
            if replica.alive():
                await replica.kill()
        await server.stop()
    return _read(a), _read(b)


def _read(recorder: RecorderProcess) -> str:
    return recorder.log.read_text(errors="replace") if recorder.log.exists() else ""
