"""Acceptance: node repair end to end, on the node-repair scenario served over HTTP.

The scenario (``sim/scenarios/bundled/node-repair.yaml``, whose header lists each node and the
rung that should cure it) breaks nodes of two Cluster API pools in every way incident 2 names,
and nothing in it repairs them. ``kubemedic run --config`` (its own process, following the
server's clock, with the ``openstack`` provider talking to the simulated Nova through
openstacksdk and the simulated node agent answering its requests) must:

- restart a stopped kubelet and a hung runtime through the agent, with no reboot;
- drain and reboot a transiently misconfigured node through Nova: new bootID, Ready, uncordoned;
- replace the Machine of a persistently misconfigured node, whose reboot cures nothing;
- quarantine the flapping node, and never reboot it;
- hold the 40% of zone-c that goes unreachable at once: no reboot, one alert;
- fence a powered-off node only once Nova reports it SHUTOFF, so its StatefulSet pod starts
  elsewhere, then power it on and unfence it;
- report a drain a PodDisruptionBudget blocks, naming the blocking pods.

The same run in dry run changes nothing in the cluster and records the same first decisions.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubemedic.sim import cluster
from kubemedic.sim.apiserver.serving import write_kubeconfig
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun

from ..run.harness import KUBEMEDIC, RecorderProcess, play_recorded

#: A whole scenario played over HTTP: minutes on a loaded 2-core machine, not the suite's 120 s.
pytestmark = pytest.mark.timeout(900)

SPEED = 100.0
"""Cluster seconds per wall second asked of the paced run.

The repairs of one pool queue behind each other (``maxInFlight`` 1), so the daemon's delays add
up along the queue, and a stalled second is 100 cluster seconds: at 300x a loaded machine pushed
the last repairs past the scenario's end. At 100x the ladder's shortest wait (Ready held 5m) is
3 wall seconds."""

KUBELET_STOPPED = "sim-workers-zone-a-mtpxj-5djxk"
FLAPPING = "sim-workers-zone-b-vgmg7-8qnxk"
POWERED_OFF = "sim-workers-zone-a-mtpxj-5fwn9"
RUNTIME_HUNG = "sim-workers-zone-b-vgmg7-cz4lt"
TRANSIENT = "sim-workers-zone-a-mtpxj-k8g8w"
PERSISTENT = "sim-workers-zone-b-vgmg7-dd47g"
PDB_BLOCKED = "sim-workers-zone-a-mtpxj-sddnv"


@dataclass
class Played:
    run: ScenarioRun
    nodes: dict[str, dict[str, Any]]
    events: list[dict[str, Any]]
    states: list[dict[str, Any]]
    log: str
    boot_ids: dict[str, str]


def _config(tmp: Path, clouds: Path, *, dry_run: bool) -> Path:
    config = tmp / "kubemedic.yaml"
    config.write_text(
        "repair:\n"
        f"  dryRun: {'true' if dry_run else 'false'}\n"
        "  provider: openstack\n"
        f"  openstack: {{cloud: kubemedic-sim, cloudsFile: {clouds}}}\n"
    )
    return config


async def _play(url: str, tmp: Path, *, dry_run: bool) -> Played:
    run = ScenarioRun(scenarios.load("node-repair"))
    server = run.sim.server
    cloud = cluster.Cloud(run.sim, run.cluster.hosts).serve_on(server)
    port = await server.start(port=0, tick=False)
    kubeconfig, clouds = tmp / "kubeconfig", tmp / "clouds.yaml"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    cloud.write_clouds_yaml(clouds, f"http://127.0.0.1:{port}")
    recorder = RecorderProcess(
        url,
        kubeconfig,
        tmp / "run.log",
        "--config",
        str(_config(tmp, clouds, dry_run=dry_run)),
        "--scan-interval",
        "30m",
        "--metrics-interval",
        "30m",
    )
    boot_ids = {n["metadata"]["name"]: _boot_id(n) for n in run.sim.objects("nodes")}
    # The faults start with the scenario's clock: the repair must be running by then.
    await play_recorded(run, recorder, ready="node repair on", speed=SPEED)
    states = json.loads(_kubemedic("nodes", "--db", url, "--output", "json"))
    # The Events kubemedic wrote, as the archive kept them: the API server forgot the early
    # ones an hour after they happened.
    archived = json.loads(_kubemedic("events", "--db", url, "--output", "json"))
    return Played(
        run=run,
        nodes={n["metadata"]["name"]: n for n in run.sim.objects("nodes")},
        events=[e for e in archived if _by_kubemedic(e)],
        states=states,
        log=(tmp / "run.log").read_text(errors="replace"),
        boot_ids=boot_ids,
    )


def _kubemedic(*args: str) -> str:
    done = subprocess.run(
        [*KUBEMEDIC, *args], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _by_kubemedic(event: dict[str, Any]) -> bool:
    return str(event.get("reason", "")).startswith("KubemedicRepair")


def _boot_id(node: dict[str, Any]) -> str:
    return str(node.get("status", {}).get("nodeInfo", {}).get("bootID", ""))


def _reasons(played: Played, node: str) -> list[str]:
    return [
        e["reason"]
        for e in sorted(played.events, key=lambda e: str(e.get("firstSeen") or ""))
        if e["object"]["name"] == node
    ]


def _messages(played: Played, node: str, reason: str) -> list[str]:
    return [
        str(e.get("message"))
        for e in played.events
        if e["object"]["name"] == node and e["reason"] == reason
    ]


def _host(played: Played, node: str) -> Any:
    host = played.run.cluster.hosts.find(node)
    assert host is not None, node
    return host


def _ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"])


def _ledger(played: Played, node: str) -> dict[str, Any]:
    return next(item for item in played.states if item["name"] == node)


def _story(played: Played, node: str) -> str:
    """What kubemedic did to ``node`` and why, for an assertion's message."""
    events = sorted(
        (e for e in played.events if e["object"]["name"] == node),
        key=lambda e: str(e.get("firstSeen") or ""),
    )
    lines = [f"{e.get('firstSeen')} {e['reason']}: {e.get('message')}" for e in events]
    ledger = json.dumps(_ledger(played, node), indent=1, default=str)
    return "\n".join([f"{node}:", *lines, ledger])


@pytest.fixture(scope="module")
def acting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    tmp = tmp_path_factory.mktemp("acting")
    yield asyncio.run(_play(f"sqlite:///{tmp}/archive.db", tmp, dry_run=False))


@pytest.fixture(scope="module")
def dry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Played]:
    tmp = tmp_path_factory.mktemp("dry")
    yield asyncio.run(_play(f"sqlite:///{tmp}/archive.db", tmp, dry_run=True))


def test_a_stopped_kubelet_and_a_hung_runtime_are_restarted_not_rebooted(acting: Played) -> None:
    for node, restarts in (
        (KUBELET_STOPPED, "kubelet_restarts"),
        (RUNTIME_HUNG, "runtime_restarts"),
    ):
        host = _host(acting, node)
        assert getattr(host, restarts) >= 1, acting.log[-3000:]
        assert host.reboots == 0
        assert _ready(acting.nodes[node])
        (step,) = _ledger(acting, node)["repairs"]
        assert step["action"].startswith("restart-") and step["outcome"] == "repaired"
        assert step["finished"] > step["started"]  # the step lasts until Ready has held


def test_a_transient_misconfiguration_is_drained_rebooted_and_uncordoned(acting: Played) -> None:
    node = acting.nodes[TRANSIENT]
    story = _story(acting, TRANSIENT)
    assert _host(acting, TRANSIENT).reboots == 1, story
    assert _boot_id(node) != acting.boot_ids[TRANSIENT], story
    assert _ready(node) and not node["spec"].get("unschedulable"), story
    reasons = _reasons(acting, TRANSIENT)
    for step in (
        "KubemedicRepairCordon",
        "KubemedicRepairDrain",
        "KubemedicRepairReboot",
        "KubemedicRepairUncordon",
        "KubemedicRepairSucceeded",
    ):
        assert step in reasons, reasons


def test_a_persistent_misconfiguration_gets_its_machine_replaced(acting: Played) -> None:
    story = _story(acting, PERSISTENT)
    assert PERSISTENT not in acting.nodes, story
    ledger = _ledger(acting, PERSISTENT)
    assert ledger["state"] == "gone", story
    steps = [(s["action"], s["outcome"]) for s in ledger["repairs"]]
    assert steps == [
        ("cordon", "done"),
        ("drain", "done"),
        ("reboot", "failed"),
        ("replace", "replaced"),
    ], story
    successors = [
        n
        for n in acting.nodes.values()
        if n["metadata"]["name"] not in acting.boot_ids and _ready(n)
    ]
    assert successors, "a new node took its place"


def test_the_flapping_node_is_quarantined_and_never_rebooted(acting: Played) -> None:
    node = acting.nodes[FLAPPING]
    story = _story(acting, FLAPPING)
    assert node["metadata"]["labels"].get("kubemedic.io/quarantined") == "true", story
    assert node["spec"].get("unschedulable") is True
    assert _host(acting, FLAPPING).reboots == 0
    assert _ledger(acting, FLAPPING)["state"] == "quarantined"


def test_a_zone_going_dark_at_once_is_held_with_one_alert(acting: Played) -> None:
    zone_c = [n for n in acting.nodes if n.startswith("sim-batch-zone-c")]
    assert all(_host(acting, n).reboots == 0 for n in zone_c)
    alerts = [
        e
        for e in acting.events
        if e["reason"] == "KubemedicRepairAlert" and "correlated failure" in str(e.get("message"))
    ]
    assert len(alerts) == 1 and alerts[0]["count"] == 1, alerts


def test_a_powered_off_node_is_fenced_after_shutoff_then_powered_on(acting: Played) -> None:
    reasons, story = _reasons(acting, POWERED_OFF), _story(acting, POWERED_OFF)
    assert "KubemedicRepairFence" in reasons and "KubemedicRepairPowerOn" in reasons, story
    assert reasons.index("KubemedicRepairFence") < reasons.index("KubemedicRepairPowerOn")
    assert "KubemedicRepairUnfence" in reasons, story
    node = acting.nodes[POWERED_OFF]
    assert _ready(node) and not any(
        t.get("key") == "node.kubernetes.io/out-of-service" for t in node["spec"].get("taints", [])
    )
    db = acting.run.sim.get("pods", "shop", "db-0")
    assert db is not None and db["spec"]["nodeName"] != POWERED_OFF
    assert db["status"]["phase"] == "Running"


def test_a_drain_blocked_by_a_budget_is_reported_with_the_pods(acting: Played) -> None:
    messages = _messages(acting, PDB_BLOCKED, "KubemedicRepairDrainBlocked")
    assert messages, _story(acting, PDB_BLOCKED)
    (message, *_) = messages
    assert "payments/ledger" in message
    assert _host(acting, PDB_BLOCKED).reboots == 0


def test_a_dry_run_changes_nothing_and_decides_the_same(acting: Played, dry: Played) -> None:
    for name, node in dry.nodes.items():
        assert not node["spec"].get("unschedulable"), name
        assert "kubemedic.io/quarantined" not in node["metadata"].get("labels", {}), name
        host = dry.run.cluster.hosts.find(name)
        assert host is None or (host.kubelet_restarts, host.runtime_restarts) == (0, 0), name
    assert all(
        str(e.get("message", "")).startswith("dry run")
        or e["reason"]
        in ("KubemedicRepairStarted", "KubemedicRepairHeld", "KubemedicRepairSkipped")
        for e in dry.events
        if e["reason"] != "KubemedicRepairAlert"
    )

    def first(played: Played, node: str) -> str:
        acted = [
            r
            for r in _reasons(played, node)
            if r
            not in (
                "KubemedicRepairStarted",
                "KubemedicRepairHeld",
                "KubemedicRepairWaiting",
                "KubemedicRepairAlert",
            )
        ]
        return acted[0] if acted else ""

    # The same first decisions while the two runs see the same cluster: the first repairs, the
    # flapping node's quarantine, the correlated failure's alert.
    for node in (KUBELET_STOPPED, POWERED_OFF, FLAPPING):
        assert first(dry, node) == first(acting, node) != "", node

    def correlated(played: Played) -> list[list[str]]:
        return [
            sorted(set(re.findall(r"sim-batch-zone-c-[\w-]+", e["message"])))
            for e in played.events
            if e["reason"] == "KubemedicRepairAlert" and "correlated" in e["message"]
        ]

    (zone_c,) = correlated(acting)
    assert set(zone_c) <= {name for names in correlated(dry) for name in names}
    # Then they part: nothing is cured in a dry run, so the unhealthy budget holds the rest,
    # and it says so.
    held = _messages(dry, TRANSIENT, "KubemedicRepairHeld")
    assert any("maxUnhealthy" in m or "maxInFlight" in m for m in held), held
