"""``kubemedic run``'s /metrics, /healthz and /readyz, scraped for real: the node-failures
scenario served over HTTP, ``kubemedic run --config`` (repair in dry run, the breaker alerting)
recording it in its own process with ``--listen 127.0.0.1:0``, and a second replica waiting as
a standby.

The leader's scrape shows every family with values: findings of its scans, nodes by repair
state with the zone-c outage held as a correlated failure, archive rows by table, the reflectors'
synced streams, leadership; the standby is ready, and not the leader.
"""

from __future__ import annotations

import asyncio
import re
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun

from .harness import RecorderProcess

pytestmark = pytest.mark.timeout(600)

SPEED = 300.0
SERVING = re.compile(r"serving /metrics, /healthz and /readyz on 127\.0\.0\.1:(\d+)")

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def test_the_leader_exports_its_work_and_the_standby_is_ready(tmp_path: Path) -> None:
    leader, standby, probes = asyncio.run(_play(tmp_path))

    assert probes == {"leader": (200, 200), "standby": (200, 200)}
    assert value(leader, "kubemedic_leader") == 1
    assert value(standby, "kubemedic_leader") == 0
    assert not any(name == "kubemedic_findings" for name, _ in standby)  # a standby scans nothing

    assert value(leader, "kubemedic_scans_total") >= 1
    assert value(leader, "kubemedic_last_scan_timestamp_seconds") > 0
    findings = {labels: v for (name, labels), v in leader.items() if name == "kubemedic_findings"}
    assert sum(findings.values()) > 0, findings
    not_ready = {
        dict(labels)["severity"]: v
        for labels, v in findings.items()
        if dict(labels)["check"] == "node-not-ready"
    }
    assert set(not_ready) == {"critical", "warning", "info"}, findings

    # 40% of zone-c lost the control plane at once: a correlated failure, held and announced.
    assert value(leader, "kubemedic_repair_held_nodes", brake="correlated") >= 2
    assert value(leader, "kubemedic_nodes", state="held") >= 2
    assert value(leader, "kubemedic_nodes", state="healthy") > 0
    assert value(leader, "kubemedic_repair_holds_total", brake="correlated") >= 1
    assert (
        value(leader, "kubemedic_repair_decisions_total", kind="act", reason="KubemedicRepairAlert")
        >= 1
    )
    assert value(leader, "kubemedic_breaker_storms") == 0

    for table in ("events", "node_transitions", "checkpoints"):
        assert value(leader, "kubemedic_archive_rows_total", table=table) > 0, table
    assert value(leader, "kubemedic_archive_writes_total") > 0
    assert value(leader, "kubemedic_archive_last_write_timestamp_seconds") > 0
    assert value(leader, "kubemedic_archive_lag_seconds") >= 0
    for resource in ("v1/events", "v1/pods", "v1/nodes"):
        assert value(leader, "kubemedic_watch_synced", resource=resource) == 1
        assert value(leader, "kubemedic_watch_relists_total", resource=resource) >= 0
        assert value(leader, "kubemedic_watch_restarts_total", resource=resource) >= 0


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample ``name{labels}`` (AssertionError naming what is there when it is absent)."""
    key = (name, tuple(sorted(labels.items())))
    if key not in samples:
        there = sorted(str(k) for k in samples if k[0] == name)
        raise AssertionError(f"no {key}; {name} has {there or 'no samples'}")
    return samples[key]


def scrape(port: int) -> Samples:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def status(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def _port(recorder: RecorderProcess) -> int | None:
    text = recorder.log.read_text(errors="replace") if recorder.log.exists() else ""
    found = SERVING.search(text)
    return int(found.group(1)) if found else None


async def _play(tmp: Path) -> tuple[Samples, Samples, dict[str, tuple[int, int]]]:
    run = ScenarioRun(scenarios.load("node-failures"))
    server = run.sim.server
    port = await server.start(port=0, tick=False)
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    config = tmp / "kubemedic.yaml"
    config.write_text("repair:\n  dryRun: true\nbreaker:\n  actions: [alert]\n")
    extra = ("--config", str(config), "--scan-interval", "1m", "--metrics-interval", "5m")
    url = f"sqlite:///{tmp}/archive.db"
    a = RecorderProcess(url, kubeconfig, tmp / "a.log", *extra)
    b = RecorderProcess(url, kubeconfig, tmp / "b.log", *extra)
    a.identity, b.identity = "replica-a", "replica-b"
    try:
        await a.start()

        async def leader_ready() -> str | None:
            served = _port(a)
            if served is None or "node repair on" not in a.log.read_text(errors="replace"):
                return "starting"
            answer = await asyncio.to_thread(status, served, "/readyz")
            return None if answer == 200 else f"/readyz {answer}"

        await _until(leader_ready, a)
        await b.start()

        async def standby_waiting() -> str | None:
            text = b.log.read_text(errors="replace") if b.log.exists() else ""
            return None if "the leader of" in text and _port(b) else "b not campaigning"

        await _until(standby_waiting, b)
        await run.run_paced(SPEED, until=run.origin + timedelta(minutes=20))
        leader_port, standby_port = _port(a), _port(b)
        assert leader_port is not None and standby_port is not None

        async def held() -> str | None:
            samples = await asyncio.to_thread(scrape, leader_port)
            key = ("kubemedic_repair_held_nodes", (("brake", "correlated"),))
            return None if samples.get(key, 0) >= 2 else "no correlated hold yet"

        await _until(held, a)
        leader = await asyncio.to_thread(scrape, leader_port)
        standby = await asyncio.to_thread(scrape, standby_port)
        probes = {
            name: (
                await asyncio.to_thread(status, served, "/healthz"),
                await asyncio.to_thread(status, served, "/readyz"),
            )
            for name, served in (("leader", leader_port), ("standby", standby_port))
        }
        assert await b.stop() == 0
        assert await a.stop() == 0
    finally:
        for replica in (a, b):
            if replica.alive():
                await replica.kill()
        await server.stop()
    run.close()
    return leader, standby, probes


async def _until(
    check: Callable[[], Awaitable[str | None]], recorder: RecorderProcess, timeout: float = 120.0
) -> None:
    """Await ``check()`` (None when satisfied) until ``timeout``; the process must stay up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    problem = "never checked"
    while loop.time() < deadline:
        problem = await check()
        if problem is None:
            return
        if not recorder.alive():
            raise AssertionError(f"kubemedic run exited; log:\n{recorder.tail()}")
        await asyncio.sleep(0.5)
    raise AssertionError(f"{problem}\nlog:\n{recorder.tail()}")
