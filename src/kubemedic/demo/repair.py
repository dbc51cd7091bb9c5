"""Act 2: nodes failing in every way incident 2 names, and node repair climbing its ladder.

The node-repair scenario (two Cluster API pools; the header of its YAML lists each fault and
the rung that should cure it) is served over HTTP with the simulated OpenStack cloud (Keystone
and Nova on the same port, ``clouds.yaml`` in the scratch directory) and nothing in it repairs
anything. ``kubemedic run`` repairs with the ``openstack`` provider, not in dry run. Afterwards,
for each fault of the scenario's timeline, the demo tells what happened (the timeline's note),
what kubemedic did or held back and why (``kubemedic nodes --output json``: the node's state and
ledger; the archived ``KubemedicRepair*`` Events), and what the cluster shows for it (restarts
and reboots the hosts counted, the bootID before and after, a Machine replaced).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from kubemedic.demo.staging import Stage, stopped
from kubemedic.demo.telling import Row, clock, moment
from kubemedic.sim import apiserver, cluster, scenarios

__all__ = ["CLUSTER", "play"]

CLUSTER = "node-repair"
SCENARIO = "node-repair"
SPEED = 200.0
"""Cluster seconds per wall second. The repairs of a pool queue behind each other: the drain the
budget blocks starts after the replacement (near 1h) and is first reported 10 minutes later,
well before the scenario's end (90m) at 200x."""

CONFIG = """repair:
  dryRun: false
  provider: openstack
  openstack: {{cloud: kubemedic-sim, cloudsFile: {clouds}}}
"""
#: Events that only say a repair is under way: the rest say what was done or held back.
ROUTINE = ("KubemedicRepairStarted", "KubemedicRepairWaiting")


async def play(stage: Stage) -> list[Row]:
    teller = stage.teller
    teller.act(2, "nodes failing in every way, and node repair climbing its ladder")
    scratch = stage.scratch / "act2"
    scratch.mkdir()
    scenario = scenarios.load(SCENARIO)
    run = scenarios.ScenarioRun(scenario)
    server = run.sim.server
    cloud = cluster.Cloud(run.sim, run.cluster.hosts).serve_on(server)
    port = await server.start(port=0, tick=False)
    kubeconfig, clouds = scratch / "kubeconfig", scratch / "clouds.yaml"
    apiserver.write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    cloud.write_clouds_yaml(clouds, f"http://127.0.0.1:{port}")
    boot_ids = {n["metadata"]["name"]: _boot_id(n) for n in run.sim.objects("nodes")}
    teller.said(
        f"Cluster {CLUSTER}: {len(boot_ids)} nodes in Cluster API pools on OpenStack (Nova "
        f"simulated). {scenario.description} kubemedic run repairs with the openstack "
        f"provider, not in dry run; {run.duration.total_seconds() / 60:g} minutes of cluster "
        f"time at {SPEED:g}x real time.",
        style="dim",
    )
    try:
        recorder = await stage.recorder(
            act=2,
            cluster=CLUSTER,
            kubeconfig=kubeconfig,
            config=CONFIG.format(clouds=clouds),
            marker="node repair on",
            extra=["--scan-interval", "30m", "--metrics-interval", "30m"],
        )
        await stage.play(run, speed=SPEED, label="act 2")
        await stopped(stage, recorder)
    finally:
        await server.stop()
        run.close()
    with stage.progress.task("act 2: asking the archive what node repair did"):
        listed, archived = await asyncio.gather(
            stage.json("nodes", "--cluster", CLUSTER), stage.json("events", "--cluster", CLUSTER)
        )
    ledger = {n["name"]: n for n in listed}
    events = [e for e in archived if str(e.get("reason", "")).startswith("KubemedicRepair")]
    teller.said(
        "Per fault: what happened, what kubemedic did (the ledger of "
        f"`{' '.join(stage.shown('nodes', '--cluster', CLUSTER))}`), what the cluster shows, "
        "and why (the last KubemedicRepair Event).",
        style="dim",
    )
    nodes_now = {n["metadata"]["name"]: n for n in run.sim.objects("nodes")}
    rows: list[Row] = []
    for entry in scenario.timeline:
        names = list(getattr(getattr(entry, "nodes", None), "names", None) or [])
        if getattr(entry, "action", "") != "fault" or not names:
            continue
        note = str(getattr(entry, "note", "") or getattr(entry, "fault", ""))
        teller.heading(f"[{clock(entry.at)}] {note}")
        told = [
            _node(
                stage,
                run,
                name,
                ledger=ledger,
                events=events,
                boot_ids=boot_ids,
                nodes_now=nodes_now,
                why=len(names) == 1,
            )
            for name in names
        ]
        held = _alerts(events, names)
        for message in held:
            teller.item("held back", message)
        rows.append(_row(note, names, told, held))
    successors = sorted(set(nodes_now) - set(boot_ids))
    if successors:
        teller.item("new nodes", f"{', '.join(successors)} (Machines the cluster created)")
    quarantined = [n for n, item in ledger.items() if item["state"] == "quarantined"]
    replaced = [n for n, item in ledger.items() if item["state"] == "gone"]
    links = [("every node by repair state", teller.url("/", CLUSTER))]
    for name in quarantined:
        links.append((f"{name}: quarantined, its ladder", teller.url(f"/nodes/{name}", CLUSTER)))
    for name in replaced:
        links.append((f"{name}: its Machine replaced", teller.url(f"/nodes/{name}", CLUSTER)))
    links.append(("the repairs' warnings", teller.url("/events", CLUSTER, type="Warning")))
    teller.look(links)
    return rows


def _node(
    stage: Stage,
    run: scenarios.ScenarioRun,
    name: str,
    *,
    ledger: dict[str, dict[str, Any]],
    events: Sequence[dict[str, Any]],
    boot_ids: dict[str, str],
    nodes_now: dict[str, dict[str, Any]],
    why: bool,
) -> tuple[str, str]:
    """Tell one node's repair; (what kubemedic saw, what it did) for the closing table."""
    teller = stage.teller
    item = ledger.get(name) or {"state": "unknown", "repairs": []}
    mine = sorted(
        (e for e in events if (e.get("object") or {}).get("name") == name),
        key=lambda e: str(e.get("firstSeen") or ""),
    )
    did = _steps(item.get("repairs") or [])
    host = run.cluster.hosts.find(name)
    facts = []
    if host is not None:
        for count, what in (
            (host.kubelet_restarts, "kubelet restart"),
            (host.runtime_restarts, "runtime restart"),
            (host.reboots, "reboot"),
        ):
            if count:
                facts.append(f"{count} {what}{'s' if count > 1 else ''}")
    now = nodes_now.get(name)
    if now is None:
        facts.append("its Machine deleted and replaced")
    elif _boot_id(now) != boot_ids.get(name):
        facts.append(f"bootID {boot_ids.get(name, '?')[:8]} -> {_boot_id(now)[:8]}")
    telling = [e for e in mine if e["reason"] not in ROUTINE]
    last = telling[-1] if telling and why else None
    teller.item(name, f"{item['state']}; {did}")
    if facts:
        teller.item("  the cluster shows", ", ".join(facts))
    if last is not None:
        when = moment(last.get("lastSeen") or last.get("firstSeen"))
        teller.item("  why", f"{when} {last['reason']}: {last.get('message')}")
    repairs = item.get("repairs") or []
    saw = str(repairs[0]["trigger"]) if repairs else (str(item.get("reason") or "") or "-")
    return saw, f"{item['state']}: {did}"


def _steps(repairs: Sequence[dict[str, Any]]) -> str:
    """The ledger's steps in order, a step repeated in a row counted once (a drain that a
    budget blocks is tried again every round)."""
    shown: list[tuple[str, int]] = []
    for step in repairs:
        text = f"{step['action'] or step['trigger']} {step['outcome'] or 'in flight'}"
        if shown and shown[-1][0] == text:
            shown[-1] = (text, shown[-1][1] + 1)
        else:
            shown.append((text, 1))
    return ", ".join(f"{t} (x{n})" if n > 1 else t for t, n in shown) or "no repair step"


def _alerts(events: Sequence[dict[str, Any]], names: Sequence[str]) -> list[str]:
    """The correlated-failure alerts about these nodes (one each, however many nodes)."""
    found = []
    for event in events:
        message = str(event.get("message") or "")
        if event["reason"] == "KubemedicRepairAlert" and any(n in message for n in names):
            when = moment(event.get("firstSeen"))
            found.append(f"{when} {message} (count {event.get('count')})")
    return sorted(set(found))


def _row(
    note: str, names: Sequence[str], told: Sequence[tuple[str, str]], held: Sequence[str]
) -> Row:
    """The closing table's line for one fault: what kubemedic saw and what it did."""
    if len(names) == 1:
        (saw, did), what = told[0], note.split(": ", 1)[-1]
        return Row(f"2. {names[0]}: {what}", saw, did)
    saw = f"{len(names)} nodes NotReady at once: a correlated failure"
    did = f"held every repair, {len(held)} alert; " + "; ".join(d for _, d in told)
    return Row(f"2. {note}", saw, did)


def _boot_id(node: dict[str, Any]) -> str:
    return str(((node.get("status") or {}).get("nodeInfo") or {}).get("bootID") or "")
