"""Acceptance: notifications from ``kubemedic run`` (its own process, leader, following the
server's clock) on the gitops-nodename-storm scenario served over HTTP, to a local receiver.

The scenario's Failed-pod storm is an incident and a storm the breaker reverts; the receiver
(aiohttp on 127.0.0.1, in the test's process) must get one firing message per group, never a
second one, and the storm's resolve once the breaker ends it.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import GitTarget
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun
from tests.notify.builders import Receiver
from tests.sim.conftest import needs_kubectl

from ..run.harness import RecorderProcess, play_recorded

pytestmark = [pytest.mark.timeout(600), needs_kubectl]

SPEED = 30.0
UNTIL = timedelta(minutes=14)
OWNER = "gateway/Deployment/api-gateway"


@dataclass
class Received:
    bodies: list[dict[str, Any]]
    log: str


async def _play(tmp: Path) -> Received:
    receiver = await Receiver().start()
    run = ScenarioRun(
        scenarios.load("gitops-nodename-storm"), git=GitTarget(tmp / "gateway-ops"), until=UNTIL
    )
    port = await run.sim.server.start(port=0, tick=False)
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    config = tmp / "kubemedic.yaml"
    url_file = tmp / "hook-url"
    url_file.write_text(receiver.url("hook") + "\n")
    config.write_text(
        "breaker:\n"
        "  actions: [alert, revert-out-of-band]\n"
        "  dryRun: false\n"
        "  calmSeconds: 60s\n"
        "notify:\n"
        "  receivers:\n"
        f"    - {{name: hook, format: webhook, urlFile: {url_file}}}\n"
        "  resolveAfter: 3m\n"
        "  intervalSeconds: 10s\n"
        "  backoffSeconds: 0.1s\n"
    )
    log = tmp / "run.log"
    recorder = RecorderProcess(
        f"sqlite:///{tmp}/archive.db",
        kubeconfig,
        log,
        "--config",
        str(config),
        "--scan-interval",
        "1m",
    )
    try:
        await play_recorded(run, recorder, ready="storm breaker on", speed=SPEED)
    finally:
        await receiver.stop()
        run.close()
    return Received(bodies=receiver.bodies.get("hook", []), log=log.read_text(errors="replace"))


@pytest.fixture(scope="module")
def received(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Received]:
    yield asyncio.run(_play(tmp_path_factory.mktemp("notify")))


def _told(received: Received) -> list[tuple[str, str, str]]:
    return [(b["subject"]["key"], b["change"], b["status"]) for b in received.bodies]


def test_every_group_is_sent_firing_once_and_resolved_at_most_once(received: Received) -> None:
    told = _told(received)
    assert told, received.log[-3000:]
    new = Counter(key for key, change, _ in told if change == "new")
    resolved = Counter(key for key, change, _ in told if change == "resolve")
    assert set(new.values()) == {1}, told
    assert not resolved or set(resolved.values()) == {1}, told
    assert set(resolved) <= set(new), told


def test_the_storm_goes_out_once_as_an_incident_and_once_as_a_storm(received: Received) -> None:
    """The storm's incident (the pinned Deployment) and the breaker's storm each fire once and
    resolve once: the revert stops the storm, the breaker ends it after its calm minute, and the
    incident ends ``resolveAfter`` after its last finding."""
    told = _told(received)
    incident = f"incident:pinned-node-name:{OWNER}"
    assert [(c, s) for k, c, s in told if k == incident] == [
        ("new", "firing"),
        ("resolve", "resolved"),
    ], told
    assert [(c, s) for k, c, s in told if k == f"storm:{OWNER}"] == [
        ("new", "firing"),
        ("resolve", "resolved"),
    ], told
    fired = next(b for b in received.bodies if b["subject"]["key"] == incident)
    assert fired["subject"]["ref"].startswith("inc-")
    assert fired["subject"]["severity"] in ("warning", "critical")
