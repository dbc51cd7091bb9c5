"""``kubemedic sim list`` and ``kubemedic sim run``: replay a scenario on the simulator.

A run builds the simulated cluster, schedules the scenario's timeline on its virtual clock and
runs it to the end (or ``--until``): as fast as the machine allows by default, or paced at
``--speed`` times real time. With ``--serve`` the API is served on 127.0.0.1 while the scenario
runs (a kubeconfig is written to ``--kubeconfig-out`` once it answers), so ``kubectl get pods -w``,
``kubectl get events -w``, ``kubectl top nodes`` or kubemedic itself can watch the incident
unfold. The same port serves the simulated OpenStack cloud (Keystone under ``/identity``, Nova
under ``/compute``) over the cluster's machines; ``--clouds-out`` writes a ``clouds.yaml`` whose
cloud ``kubemedic-sim`` reaches it with an application credential. A served run is paced (10x
real time unless ``--speed`` says otherwise) and ``--hold`` keeps serving after the end until
interrupted. ``--snapshot-out`` writes what ``kubectl get -o json`` would print at the end, for
``kubemedic scan --snapshot``.

Progress is drawn on stderr when it is a terminal (and ``--quiet`` is not given): the cluster
time reached against the scenario's end, the speed (x real time), and the nodes, pods and events
in the API.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kubemedic.output.progress import NO_PROGRESS, Bar, Progress
from kubemedic.sim import apiserver, cluster, scenarios

__all__ = ["RunOptions", "list_scenarios", "run_scenario"]

#: Pace of a served run when ``--speed`` is not given.
SERVED_SPEED = 10.0

#: Seconds between two updates of the progress bar.
_REFRESH = 0.1


@dataclass
class RunOptions:
    scenario: str
    speed: float | None = None
    until: timedelta | None = None
    serve: bool = False
    port: int = 0
    kubeconfig_out: Path | None = None
    #: With ``serve``: where to write the ``clouds.yaml`` of the simulated OpenStack cloud.
    clouds_out: Path | None = None
    snapshot_out: Path | None = None
    #: Replace an output path that is a link or special file (never a directory).
    force: bool = False
    hold: bool = False
    #: Overrides the scenario's own seed when given.
    seed: int | None = None


def list_scenarios(*, console: Console) -> None:
    table = Table(title="Scenarios", title_justify="left")
    table.add_column("Name", no_wrap=True)
    table.add_column("Duration", no_wrap=True)
    table.add_column("What happens")
    for info in scenarios.available():
        table.add_row(info.name, _clock(info.duration), info.title)
    console.print(table)


def run_scenario(
    options: RunOptions,
    *,
    console: Console,
    err: Console,
    progress: Progress = NO_PROGRESS,
) -> scenarios.ScenarioRun:
    """Run a scenario (raises ``scenarios.ScenarioError`` on a bad one). ``progress`` shows the
    scenario's clock as it runs (it should draw on ``err``, where the run's notes go)."""
    scenario = scenarios.load(options.scenario)
    if options.until is not None:
        scenarios.check_until(scenario, options.until)
    run = scenarios.ScenarioRun(scenario, seed=options.seed, until=options.until)
    started = time.perf_counter()
    with progress.bar(scenario.name, total=run.duration.total_seconds()) as bar:
        shown = [0.0]

        def on_step() -> None:
            now = time.perf_counter()
            if now - shown[0] >= _REFRESH:  # counting the API's objects is not free
                shown[0] = now
                _update(bar, run, started)

        stepped = on_step if progress.active else None
        if options.serve or options.speed is not None:
            asyncio.run(_run_paced(run, options, err=err, on_step=stepped))
        else:
            run.run(on_step=stepped)
        _update(bar, run, started)
    wall = time.perf_counter() - started
    simulated = run.elapsed().total_seconds()
    console.print(
        f"{scenario.name}: {_clock(run.elapsed())} of cluster time in {wall:.1f} s "
        f"({simulated / max(wall, 1e-9):.0f}x real time); "
        f"{run.sim.count('nodes')} nodes, {run.sim.count('pods')} pods, "
        f"{run.sim.count('events')} events in the API",
        highlight=False,
    )
    if options.snapshot_out is not None:
        items = apiserver.write_snapshot(options.snapshot_out, run.sim.server, force=options.force)
        console.print(
            f"snapshot: {items} objects written to {options.snapshot_out}", highlight=False
        )
    return run


async def _run_paced(
    run: scenarios.ScenarioRun,
    options: RunOptions,
    *,
    err: Console,
    on_step: Callable[[], None] | None,
) -> None:
    speed = options.speed if options.speed is not None else SERVED_SPEED
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    server = run.sim.server
    if options.serve:
        cloud = cluster.Cloud(run.sim, run.cluster.hosts).serve_on(server)
        # The simulation runs the server's control loops on its own passes.
        port = await server.start(port=options.port, tick=False)
        url = f"http://127.0.0.1:{port}"
        if options.kubeconfig_out is not None:
            apiserver.write_kubeconfig(options.kubeconfig_out, url, force=options.force)
        if options.clouds_out is not None:
            cloud.write_clouds_yaml(options.clouds_out, url, force=options.force)
        err.print(f"serving the cluster's API on {server.url}", highlight=False)
    try:
        await run.run_paced(speed=speed, stop=stop, on_step=on_step)
        if options.serve and options.hold and not stop.is_set():
            err.print("scenario over; still serving until interrupted", highlight=False)
            await stop.wait()
    finally:
        if options.serve:
            await server.stop()


def _update(bar: Bar, run: scenarios.ScenarioRun, started: float) -> None:
    elapsed = run.elapsed()
    sim = run.sim
    speed = elapsed.total_seconds() / max(time.perf_counter() - started, 1e-9)
    bar.update(
        elapsed.total_seconds(),
        f"T+{_clock(elapsed)} / {_clock(run.duration)}  {speed:,.0f}x real time  "
        f"{sim.count('nodes')} nodes {sim.count('pods')} pods {sim.count('events')} events",
    )


def _clock(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    return f"{seconds // 3600:02d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
