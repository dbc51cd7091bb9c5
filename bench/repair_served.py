"""Node repair over HTTP: threshold crossed -> first action, with ``kubemedic run`` as deployed.

    python bench/repair_served.py                 # the node-repair scenario at 20x
    python bench/repair_served.py --speed 5

The ``node-repair`` scenario is served over HTTP (Kubernetes API, simulated Nova) at ``--speed``
cluster seconds per wall second, and ``kubemedic run --config`` records and repairs it from its
own process (the ``openstack`` provider through openstacksdk, ``--clock server``). Afterwards,
from the archive: for every repair started, when its trigger's condition took the status that
triggered it (the archive's node transitions), plus the rule's duration, is the threshold;
the repair's start decision is the first action (repairs a brake held first are left out: they
start when the brake lets go). The start is stamped by the controller's clock, which follows
the server's by extrapolating between synchronisations, so the figure includes that error and
the event loop's delays, magnified by the speed (10 ms of wall time is 0.2 s at 20x). Printed:
each repair's latency in cluster seconds, and the median and maximum (target: <= 1 s). The
in-process figures (and a polling baseline) are ``bench/repair.py``'s. Timing is never
asserted in the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import sqlalchemy as sa

from kubemedic.repair.policy.settings import RepairSettings
from kubemedic.sim import apiserver, cluster, scenarios
from kubemedic.store import schema
from kubemedic.store.db import Archive

TARGET = 1.0
TRIGGER = re.compile(r"\((?P<type>\w+)=(?P<status>\w+) for ")


async def _serve(speed: float, tmp: Path, until: timedelta | None) -> float:
    run = scenarios.ScenarioRun(scenarios.load("node-repair"), until=until)
    server = run.sim.server
    cloud = cluster.Cloud(run.sim, run.cluster.hosts).serve_on(server)
    port = await server.start(port=0, tick=False)
    url = f"http://127.0.0.1:{port}"
    apiserver.write_kubeconfig(tmp / "kubeconfig", url)
    cloud.write_clouds_yaml(tmp / "clouds.yaml", url)
    (tmp / "kubemedic.yaml").write_text(
        "repair:\n  dryRun: false\n  provider: openstack\n"
        f"  openstack: {{cloud: kubemedic-sim, cloudsFile: {tmp / 'clouds.yaml'}}}\n"
    )
    log = (tmp / "run.log").open("wb")
    daemon = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kubemedic.cli import main; main()",
            "run",
            "--db",
            f"sqlite:///{tmp}/archive.db",
            "--kubeconfig",
            str(tmp / "kubeconfig"),
            "--clock",
            "server",
            "--config",
            str(tmp / "kubemedic.yaml"),
            "--scan-interval",
            "30m",
            "--metrics-interval",
            "30m",
        ],
        stdout=log,
        stderr=log,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")},
    )
    started = time.perf_counter()
    try:
        while b"node repair on" not in (tmp / "run.log").read_bytes():
            if daemon.poll() is not None:
                raise SystemExit(f"kubemedic run exited:\n{(tmp / 'run.log').read_text()}")
            await asyncio.sleep(0.2)
        await run.run_paced(speed)
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
        await server.stop()
    return time.perf_counter() - started


def _latencies(tmp: Path) -> list[tuple[str, str, float]]:
    archive = Archive.open(f"sqlite:///{tmp}/archive.db")
    rules = {rule.type: rule.after.total_seconds() for rule in RepairSettings().conditions}
    found = []
    try:
        with archive.engine.connect() as connection:
            rows = connection.execute(
                sa.select(
                    schema.node_transitions.c.node,
                    schema.node_transitions.c.condition,
                    schema.node_transitions.c.status,
                    schema.node_transitions.c.at,
                )
            ).all()
            clusters = {
                row[0] for row in connection.execute(sa.select(schema.checkpoints.c.cluster))
            }
        decisions = [d for c in sorted(clusters) for d in archive.repair_decisions(c)]
        for decision in decisions:
            if decision["kind"] != "start" or decision["message"].startswith("quarantine "):
                continue
            held = [
                d
                for d in decisions
                if d["kind"] == "hold"
                and d["node"] == decision["node"]
                and d["at"] < decision["at"]
            ]
            if held:
                continue  # started when a brake let go (a slot freed), not at its threshold
            match = TRIGGER.search(decision["message"])
            if match is None or match["type"] not in rules:
                continue
            at = datetime.fromisoformat(decision["at"].replace("Z", "+00:00")).timestamp()
            began = [
                t
                for node, condition, status, t in rows
                if node == decision["node"]
                and condition == match["type"]
                and status == match["status"]
                and t <= at
            ]
            if began:
                threshold = max(began) + rules[match["type"]]
                found.append((decision["node"], match["type"], at - threshold))
    finally:
        archive.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--speed", type=float, default=20.0)
    parser.add_argument("--keep", type=Path, help="keep the archive and log in this directory")
    parser.add_argument("--minutes", type=int, help="play only this much of the scenario")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = args.keep or Path(scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        until = timedelta(minutes=args.minutes) if args.minutes else None
        wall = asyncio.run(_serve(args.speed, tmp, until))
        found = _latencies(tmp)
    for node, condition, late in found:
        print(f"{node}: {condition} threshold -> repair started {late:+.2f}s")
    late = [max(0.0, x) for _, _, x in found]
    if not late:
        print("no repair started")
        return 1
    print(
        f"\n{len(late)} repairs at {args.speed:g}x ({datetime.now(UTC):%Y-%m-%d}, "
        f"{wall:.0f}s wall): threshold -> first action median {statistics.median(late):.2f}s, "
        f"max {max(late):.2f}s of cluster time (target <= {TARGET:g}s)"
    )
    return 0 if max(late) <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
