"""Node liveness in live scans, against the emulator over HTTP: node Leases are read from
``kube-node-lease`` and judged with the status heartbeat, and a scan whose lists take cluster
time does not age healthy nodes into ``heartbeat-stale``."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import lightkube
import pytest
from typer.testing import CliRunner

from kubemedic.checks import run_checks
from kubemedic.checks.findings import Finding
from kubemedic.cli import app
from kubemedic.kube import config, kinds, livescan
from kubemedic.kube.api import Api, Kind
from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.machinery.clock import VirtualClock
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import node, node_lease
from tests.sim.conftest import Running, start_emulator

runner = CliRunner()
NODE_LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"


@contextlib.contextmanager
def serve_scenario(tmp_path: Path, run: ScenarioRun) -> Iterator[Running]:
    """The scenario's API server over HTTP on a loop of its own; the simulation steps only
    when the test plays it (``Running.call``), so cluster time stands still in between."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    server = run.sim.server
    port = asyncio.run_coroutine_threadsafe(server.start(port=0, tick=False), loop).result(30)
    kubeconfig = tmp_path / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    try:
        yield Running(server, loop, kubeconfig)
    finally:
        asyncio.run_coroutine_threadsafe(server.stop(), loop).result(timeout=30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


def api_for(running: Running, cls: type[Api] = Api) -> Api:
    resolved = config.resolve(running.kubeconfig)
    return cls(lightkube.AsyncClient(resolved.config), cluster=resolved.cluster)


def live_findings(api: Api) -> tuple[livescan.LiveSnapshot, list[Finding]]:
    async def main() -> livescan.LiveSnapshot:
        try:
            return await livescan.fetch(api)
        finally:
            await api.close()

    fetched = asyncio.run(main())
    return fetched, run_checks(fetched.view(), names=["node-not-ready"])


def test_a_live_scan_of_the_storm_scenario_finds_its_healthy_nodes_alive(
    tmp_path: Path,
) -> None:
    """The bug as reported: ``sim run gitops-nodename-storm --serve`` and a live scan minutes
    later said "Ready but its last heartbeat is 6m27s old" of healthy nodes. The pods of the
    storm take a while to list, the simulated cluster goes on meanwhile, and the nodes were
    read at the start of the scan but judged at its end."""
    run = ScenarioRun(scenarios.load("gitops-nodename-storm"), until=timedelta(minutes=8))
    run.run(until=run.origin + timedelta(minutes=5))
    with serve_scenario(tmp_path, run) as running:

        class ClusterGoesOn(Api):
            """After the first page of pods, three minutes of cluster time pass (a pod list
            of a big cluster, served slowly, while the simulation plays on)."""

            played = False

            async def list_page(self, kind: Kind, **kwargs: Any) -> dict[str, Any]:
                page = await super().list_page(kind, **kwargs)
                if kind == kinds.PODS and not ClusterGoesOn.played:
                    ClusterGoesOn.played = True
                    until = run.origin + timedelta(minutes=8)
                    await asyncio.to_thread(running.call, functools.partial(run.run, until=until))
                return page

        fetched, findings = live_findings(api_for(running, ClusterGoesOn))
        assert ClusterGoesOn.played
        assert fetched.at == run.origin + timedelta(minutes=8)
        assert fetched.counts["coordination.k8s.io/v1/leases"] == 3
        assert findings == [], [finding.message for finding in findings]
        view = fetched.view()
        for name in ("workers-1", "workers-2", "workers-3"):
            lease = view.node_lease(name)
            assert lease is not None and lease["spec"]["holderIdentity"] == name


@contextlib.contextmanager
def serve_objects(tmp_path: Path, *bodies: dict[str, Any], now: datetime) -> Iterator[Running]:
    emulators = start_emulator(tmp_path, clock=VirtualClock(now, paused=True))
    running = next(emulators)
    try:
        running.load(*bodies)
        yield running
    finally:
        emulators.close()


NOW = BASE_TIME + timedelta(minutes=30)


def quiet_node(name: str) -> dict[str, Any]:
    """Ready, its unchanged status last posted 6m27s ago."""
    return node(name, heartbeat=NOW - timedelta(minutes=6, seconds=27), created=timedelta(0))


def scan_json(running: Running) -> list[dict[str, Any]]:
    result = runner.invoke(
        app, ["scan", "--kubeconfig", str(running.kubeconfig), "-o", "json"], terminal_width=200
    )
    assert result.exit_code in (0, 1), result.stderr
    findings: list[dict[str, Any]] = json.loads(result.stdout)["findings"]
    return [finding for finding in findings if finding["check"] == "node-not-ready"]


def test_a_fresh_node_lease_served_over_http_keeps_a_quiet_node_healthy(tmp_path: Path) -> None:
    fresh = node_lease("w-1", renewed=NOW - timedelta(seconds=6))
    leader = node_lease("w-1", renewed=NOW - timedelta(hours=2), namespace="kube-system")
    with serve_objects(tmp_path, quiet_node("w-1"), fresh, leader, now=NOW) as running:
        assert scan_json(running) == []
        status, listed, _ = running.request("GET", NODE_LEASES)
        assert status == 200 and len(listed["items"]) == 1


def test_without_a_lease_a_live_scan_judges_the_status_heartbeat_and_says_so(
    tmp_path: Path,
) -> None:
    with serve_objects(tmp_path, quiet_node("w-1"), now=NOW) as running:
        [finding] = scan_json(running)
    assert finding["evidence"]["causeClass"] == "heartbeat-stale"
    assert finding["evidence"]["heartbeatAgeSeconds"] == 387
    assert finding["evidence"]["leaseSeen"] is False
    assert "6m27s old" in finding["message"]


@pytest.mark.parametrize(
    ("renewed", "holder", "words"),
    [
        (timedelta(minutes=-2), None, "not been heard from for 2m"),
        (timedelta(0), "someone-else", "held by 'someone-else'"),
    ],
)
def test_a_stale_or_foreign_lease_leaves_the_node_stale(
    tmp_path: Path, renewed: timedelta, holder: str | None, words: str
) -> None:
    lease = node_lease("w-1", renewed=NOW + renewed, holder=holder)
    with serve_objects(tmp_path, quiet_node("w-1"), lease, now=NOW) as running:
        [finding] = scan_json(running)
    assert finding["evidence"]["leaseSeen"] is True
    assert words in finding["message"] + str(finding["evidence"]["leaseIgnored"])
