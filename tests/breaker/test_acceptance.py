"""Acceptance: the storm breaker end to end, on the gitops-nodename-storm scenario served over
HTTP.

The scenario (``sim/scenarios/bundled/gitops-nodename-storm.yaml``) has its Argo CD applier sync
from a real Git repository the run writes: at 4m ``kubectl edit`` adds the template ``nodeName``,
at 5m a push makes the sync restore 12 replicas on the one node, and the kubelet's
``OutOfmemory`` rejections become a Failed-pod storm. ``kubemedic run --config`` (its own
process, following the server's clock) must:

- with ``revert-out-of-band`` acting: find the Application in the cluster, read the repository
  at its synced revision, see that ``nodeName`` is absent from Git and was written by
  ``kubectl-edit``, and remove it with a resourceVersion-guarded JSON patch, once; the Failed
  pods stop growing within a minute of cluster time of the storm's detection and the
  Deployment becomes available;
- with ``alert`` only: announce the storm with exactly one Event (count 1), and the archive
  holds one incident for the storm (``kubemedic incidents list``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import GitTarget
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun
from kubemedic.store.db import Archive
from tests.sim.conftest import needs_kubectl

from ..run.harness import KUBEMEDIC, RecorderProcess, play_recorded

pytestmark = [pytest.mark.timeout(600), needs_kubectl]

SPEED = 30.0
"""Cluster seconds per wall second asked of the paced run."""

UNTIL = timedelta(minutes=12)
NAMESPACE, NAME = "gateway", "api-gateway"


@dataclass
class Played:
    run: ScenarioRun
    pods: list[dict[str, Any]]
    events: list[dict[str, Any]]
    deployment: dict[str, Any]
    decisions: list[dict[str, Any]]
    url: str
    log: str


async def _play(tmp: Path, section: str) -> Played:
    url = f"sqlite:///{tmp}/archive.db"
    run = ScenarioRun(
        scenarios.load("gitops-nodename-storm"), git=GitTarget(tmp / "gateway-ops"), until=UNTIL
    )
    port = await run.sim.server.start(port=0, tick=False)
    kubeconfig = tmp / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    config = tmp / "kubemedic.yaml"
    config.write_text(section)
    log = tmp / "run.log"
    recorder = RecorderProcess(
        url, kubeconfig, log, "--config", str(config), "--scan-interval", "1m"
    )
    await play_recorded(run, recorder, ready="storm breaker on", speed=SPEED)
    archive = Archive.open(url)
    try:
        decisions = archive.breaker_decisions(archive_cluster(archive))
    finally:
        archive.close()
    (deployment,) = [
        d for d in run.sim.objects("deployments.apps") if d["metadata"]["name"] == NAME
    ]
    run.close()
    return Played(
        run=run,
        pods=[p for p in run.sim.objects("pods") if p["metadata"]["namespace"] == NAMESPACE],
        events=[
            e for e in run.sim.objects("events") if e.get("reason", "").startswith("Kubemedic")
        ],
        deployment=deployment,
        decisions=decisions,
        url=url,
        log=log.read_text(errors="replace"),
    )


def archive_cluster(archive: Archive) -> str:
    from kubemedic.store import schema

    with archive.transaction(write=False) as connection:
        row = connection.execute(schema.breaker_state.select()).first()
    assert row is not None, "the breaker saved no state"
    return str(row.cluster)


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _kubemedic(*args: str) -> str:
    done = subprocess.run(
        [*KUBEMEDIC, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def reverting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    tmp = tmp_path_factory.mktemp("reverting")
    section = "breaker:\n  actions: [alert, revert-out-of-band]\n  dryRun: false\n"
    yield asyncio.run(_play(tmp, section))


@pytest.fixture(scope="module")
def alerting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    tmp = tmp_path_factory.mktemp("alerting")
    yield asyncio.run(_play(tmp, "breaker:\n  actions: [alert]\n  dryRun: false\n"))


def _reasons(played: Played, reason: str) -> list[dict[str, Any]]:
    return [e for e in played.events if e["reason"] == reason]


def _failed(played: Played) -> list[dict[str, Any]]:
    return [p for p in played.pods if p.get("status", {}).get("phase") == "Failed"]


def test_the_revert_stops_the_storm_within_a_minute_of_its_detection(reverting: Played) -> None:
    (storm,) = _reasons(reverting, "KubemedicBreakerStorm")
    assert storm["involvedObject"]["kind"] == "Deployment", storm
    assert storm["involvedObject"]["uid"] == reverting.deployment["metadata"]["uid"]
    assert storm["reportingComponent"] == "kubemedic-breaker"
    detected = _time(storm["firstTimestamp"])
    failed = _failed(reverting)
    assert len(failed) >= 10, reverting.log[-3000:]
    last = max(_time(p["metadata"]["creationTimestamp"]) for p in failed)
    stopped_after = (last - detected).total_seconds()
    print(f"storm detected at {detected}, last Failed pod created {stopped_after:g}s later")
    assert stopped_after <= 60, reverting.log[-3000:]


def test_the_template_nodename_is_gone_and_the_deployment_is_available(reverting: Played) -> None:
    spec = reverting.deployment["spec"]["template"]["spec"]
    assert "nodeName" not in spec
    status = reverting.deployment["status"]
    available = {c["type"]: c["status"] for c in status.get("conditions", [])}
    assert available.get("Available") == "True", status
    assert status.get("availableReplicas") == 12, status
    managers = [m for m in reverting.deployment["metadata"]["managedFields"]]
    assert all("nodeName" not in json.dumps(m.get("fieldsV1")) for m in managers)


def test_the_revert_is_announced_and_never_repeated(reverting: Played) -> None:
    (event,) = _reasons(reverting, "KubemedicBreakerRevertOutOfBand")
    assert event["count"] == 1
    assert "/spec/template/spec/nodeName" in event["message"], event["message"]
    assert "kubectl-edit" in event["message"]
    reverts = [d for d in reverting.decisions if d["action"] == "revert-out-of-band"]
    assert len(reverts) == 1, reverts
    assert reverts[0]["outcome"].startswith("done"), reverts
    assert reverts[0]["patch"][0] == {
        "op": "test",
        "path": "/metadata/resourceVersion",
        "value": reverts[0]["resourceVersion"],
    }


def test_alert_only_makes_one_event_and_one_incident(alerting: Played) -> None:
    (storm,) = _reasons(alerting, "KubemedicBreakerStorm")
    assert storm["count"] == 1
    assert not _reasons(alerting, "KubemedicBreakerRevertOutOfBand")
    assert "nodeName" in json.dumps(alerting.deployment["spec"]["template"]["spec"])
    listed = json.loads(_kubemedic("incidents", "list", "--db", alerting.url, "-o", "json"))
    storms = [
        i
        for i in listed["incidents"]
        if i["kind"] == "incident" and NAME in i["cause"] and "failed pod storm" in i["symptoms"]
    ]
    assert len(storms) == 1, json.dumps(listed, indent=1)[:4000]
    # The breaker's alert is part of the storm's own story, on its timeline.
    exported = json.loads(
        _kubemedic("incidents", "export", storms[0]["id"], "--db", alerting.url, "-f", "json")
    )
    told = json.dumps(exported)
    assert "KubemedicBreakerStorm" in told, told[:4000]
