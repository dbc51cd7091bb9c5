"""Act 3: the hub evicted beside Prometheus, explained from the archive after the API server
forgot it (incident 3), and the memory request that would have kept it.

The core-node-prometheus scenario is served over HTTP for two hours of cluster time while
``kubemedic run`` records it, exactly as it would record a real cluster. By then the API server
has expired every eviction Event (its one-hour TTL); the demo asks the archive what happened
with the commands a user would type (``kubemedic events``, ``oom``, ``incidents``), and
``kubemedic recommend`` sizes the hub from the usage samples and the eviction: a memory request
above what it used when the kubelet evicted it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from kubemedic.demo.children import DemoError, until
from kubemedic.demo.staging import Stage, stopped
from kubemedic.demo.telling import Row, clock
from kubemedic.sim import apiserver, scenarios
from kubemedic.store import schema

if TYPE_CHECKING:
    from kubemedic.sim.machinery import Change

__all__ = ["CLUSTER", "play"]

CLUSTER = "jupyterhub"
SCENARIO = "core-node-prometheus"
#: Past the API server's one-hour event TTL after the last eviction (31m): it has forgotten
#: what the archive kept.
UNTIL = timedelta(minutes=95)
SPEED = 400.0
SCAN_INTERVAL = "2m"
STREAMS = (("events", "v1/events"), ("pods", "v1/pods"), ("nodes", "v1/nodes"))
MI = 1024 * 1024


async def play(stage: Stage) -> list[Row]:
    teller = stage.teller
    teller.act(3, "the hub evicted beside Prometheus, explained after its events expired")
    scratch = stage.scratch / "act3"
    scratch.mkdir()
    run = scenarios.ScenarioRun(scenarios.load(SCENARIO), until=UNTIL)
    last: dict[str, int] = {}
    for store, stream in STREAMS:
        run.sim.watch(store, _noting(last, stream))
    server = run.sim.server
    port = await server.start(port=0, tick=False)
    kubeconfig = scratch / "kubeconfig"
    apiserver.write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    teller.said(
        f"Cluster {CLUSTER}: {run.scenario.description} kubemedic run records it for "
        f"{UNTIL.total_seconds() / 60:g} minutes of cluster time ({SPEED:g}x real time).",
        style="dim",
    )
    try:
        recorder = await stage.recorder(
            act=3,
            cluster=CLUSTER,
            kubeconfig=kubeconfig,
            config="{}\n",
            marker=f"cluster {CLUSTER} (",
            extra=["--scan-interval", SCAN_INTERVAL, "--metrics-interval", "1m"],
        )
        await until(
            lambda: len(_checkpoints(stage.url, CLUSTER)) >= len(STREAMS),
            what="kubemedic run listing every stream",
            children=stage.children,
            blame=recorder,
        )
        await stage.play(run, speed=SPEED, label="act 3")
        with stage.progress.task("act 3: kubemedic run catching up with the last change"):
            await until(
                lambda: all(
                    int(_checkpoints(stage.url, CLUSTER).get(s, "0")) >= rv
                    for s, rv in last.items()
                ),
                what="kubemedic run catching up with the last change",
                children=stage.children,
                blame=recorder,
            )
        events_left = run.sim.count("events")
        await stopped(stage, recorder)
    finally:
        await server.stop()
        run.close()
    teller.heading(
        f"{clock(UNTIL.total_seconds())} on: the API server holds {events_left} events, none "
        "of the evictions (its event TTL is one hour); the archive has them all"
    )
    asked = (
        ["events", "--cluster", CLUSTER, "--reason", "Evicted", "--limit", "3"],
        ["oom", "--cluster", CLUSTER, "--node", "core-2"],
        ["incidents", "list", "--cluster", CLUSTER],
    )
    sizing = ["recommend", "--cluster", CLUSTER, "-n", "prod", "--workload", "deployment/hub"]
    with stage.progress.task("act 3: asking the archive what happened"):
        # The questions are independent: asked at once, told in order.
        *answers, listed, document, evicted = await asyncio.gather(
            *(stage.kubemedic(*args) for args in (*asked, sizing)),
            stage.json("incidents", "list", "--cluster", CLUSTER),
            stage.json(*sizing),
            stage.json("oom", "--cluster", CLUSTER, "-n", "prod"),
        )
        hub = _hub_incident(listed)
        if hub is None:
            raise DemoError("the archive holds no incident for the hub's eviction")
        export = ["incidents", "export", str(hub["id"]), "--cluster", CLUSTER]
        draft = await stage.kubemedic(*export)
    for args, answer in zip(asked, answers, strict=False):
        teller.command(stage.shown(*args))
        teller.raw(answer)
    teller.command([*stage.shown(*export), "  # a postmortem draft, first lines"])
    teller.raw(draft, lines=30)
    teller.command(stage.shown(*sizing))
    teller.raw(answers[-1])
    memory, used = _hub_memory(document, evicted)
    teller.item(
        "what kubemedic recommends",
        f"a hub memory request of {memory // MI}Mi, above the {used // MI}Mi it used when it "
        "was evicted (its 128Mi request made it the kubelet's first choice)",
    )
    incident = teller.url(f"/incidents/{hub['id']}", CLUSTER)
    teller.look(
        [
            ("the hub's incident: timeline, cause, evidence", incident),
            ("the node the hub was evicted from", teller.url("/nodes/core-2", CLUSTER)),
            ("the expired evictions", teller.url("/events", CLUSTER, reason="Evicted")),
        ]
    )
    return [
        Row(
            "3. JupyterHub's hub evicted from a core node beside Prometheus",
            f"{hub.get('title')}; the evictions kept after the API server expired them",
            f"explained from the archive two hours on; recommends a hub memory request of "
            f"{memory // MI}Mi (it used {used // MI}Mi when evicted)",
        )
    ]


def _noting(last: dict[str, int], stream: str) -> Callable[[Change], None]:
    """A watcher keeping the last resourceVersion of ``stream`` in ``last``."""

    def note(change: Change) -> None:
        last[stream] = change.rv

    return note


def _hub_incident(listed: dict[str, Any]) -> dict[str, Any] | None:
    incidents = [i for i in listed.get("incidents", []) if i["kind"] == "incident"]
    hubs = [i for i in incidents if "hub" in str(i.get("title", "")).lower()]
    chosen = hubs or incidents
    if not chosen:
        return None
    found: dict[str, Any] = max(
        chosen, key=lambda i: (i["severity"] == "critical", i["confidence"])
    )
    return found


def _hub_memory(document: dict[str, Any], evicted: list[dict[str, Any]]) -> tuple[int, int]:
    """(the recommended memory request, the most the hub used when evicted) in bytes, from
    ``kubemedic recommend`` and ``kubemedic oom`` (what the kubelet said it used)."""
    used = max(
        (
            int(e["usage"])
            for e in evicted
            if e["kind"] == "eviction" and e.get("container") == "hub" and e.get("usage")
        ),
        default=0,
    )
    for found in document.get("recommendations", []):
        if found["container"] != "hub":
            continue
        (memory,) = [
            c for c in found["changes"] if (c["resource"], c["field"]) == ("memory", "request")
        ]
        if used == 0 or memory["recommended"] <= used:
            raise DemoError(
                f"kubemedic recommend asked {memory['recommended']} bytes for the hub, not "
                f"above what it used when evicted ({used})"
            )
        return int(memory["recommended"]), used
    raise DemoError("kubemedic recommend gave nothing for the hub")


def _checkpoints(url: str, cluster: str) -> dict[str, str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            if not sa.inspect(connection).has_table(schema.checkpoints.name):
                return {}
            table = schema.checkpoints
            rows = connection.execute(
                sa.select(table.c.stream, table.c.resource_version).where(
                    table.c.cluster == cluster
                )
            ).all()
    finally:
        engine.dispose()
    return {stream: version for stream, version in rows}
