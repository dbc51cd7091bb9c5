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
``kubemedic scan --snapshot``. A scenario with a ``gitops`` block syncs an Argo CD Application
from a real Git repository: ``--git-out DIR`` writes it at ``DIR`` as the story goes (and keeps
it), ``--git DIR`` follows an existing one (see ``kubemedic.sim.scenarios.gitops``).

Progress is drawn on stderr when it is a terminal (and ``--quiet`` is not given): the cluster
time reached against the scenario's end, the speed (x real time), and the nodes, pods and events
in the API.

An action the emulator refuses (a patch of an object that does not exist, a manifest it finds
invalid, a node selection that matches no node; see ``ScenarioRun.failures``) means the cluster
did not live the scenario as written. The run still goes on to its end and writes every output it
was asked for, and then :func:`run_scenario` raises :class:`RefusedError`: one line naming the
scenario file and each refused action (timeline entry, scenario time, what and why). With
``allow_refused`` it prints that line as a warning on ``err`` and returns instead. The timeline
logs each failure as it happens; while a run goes, that log is not printed by Python's
last-resort handler (an application that configures logging still gets it), so stderr carries
the one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kubemedic.errors import InputError
from kubemedic.output.progress import NO_PROGRESS, Bar, Progress
from kubemedic.sim import apiserver, cluster, scenarios

__all__ = ["GitOpsFlagError", "RefusedError", "RunOptions", "list_scenarios", "run_scenario"]

#: Pace of a served run when ``--speed`` is not given.
SERVED_SPEED = 10.0

#: Seconds between two updates of the progress bar.
_REFRESH = 0.1

#: Refused actions a ``RefusedError`` message lists (``run.failures`` holds them all).
_LISTED = 5


class RefusedError(InputError):
    """The emulator refused actions of a scenario that was otherwise played to its end (its
    outputs written): the message names the scenario file and each refused action; ``run`` is
    the finished run (``run.failures`` lists every refusal)."""

    def __init__(self, message: str, run: scenarios.ScenarioRun) -> None:
        super().__init__(message)
        self.run = run


class GitOpsFlagError(InputError):
    """``--git-out`` or ``--git`` cannot be used with this scenario or path."""


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
    #: Refused actions are a warning, not a :class:`RefusedError`.
    allow_refused: bool = False
    #: Write the scenario's GitOps repository here (a new or empty directory).
    git_out: Path | None = None
    #: Follow this existing Git repository instead (nothing is written to it).
    git: Path | None = None


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
    scenario's clock as it runs (it should draw on ``err``, where the run's notes go). Once the
    run is over and its outputs written, refused actions raise :class:`RefusedError` (a warning
    on ``err`` with ``options.allow_refused``)."""
    scenario = scenarios.load(options.scenario)
    if options.until is not None:
        scenarios.check_until(scenario, options.until)
    target = _git_target(scenario, options)
    with _timeline_log_held():
        run = scenarios.ScenarioRun(scenario, seed=options.seed, until=options.until, git=target)
        started = time.perf_counter()
        try:
            _play(run, options, err=err, progress=progress, started=started)
        finally:
            run.close()
    wall = time.perf_counter() - started
    simulated = run.elapsed().total_seconds()
    console.print(
        f"{scenario.name}: {_clock(run.elapsed())} of cluster time in {wall:.1f} s "
        f"({simulated / max(wall, 1e-9):.0f}x real time); "
        f"{run.sim.count('nodes')} nodes, {run.sim.count('pods')} pods, "
        f"{run.sim.count('events')} events in the API",
        highlight=False,
    )
    if run.gitops is not None and (options.git_out or options.git):
        app = run.scenario.gitops
        assert app is not None
        console.print(
            f"gitops: Application {app.namespace}/{app.application} synced "
            f"{run.gitops.synced or 'nothing'} from {run.gitops.repo_url}",
            highlight=False,
        )
    if options.snapshot_out is not None:
        items = apiserver.write_snapshot(options.snapshot_out, run.sim.server, force=options.force)
        console.print(
            f"snapshot: {items} objects written to {options.snapshot_out}", highlight=False
        )
    if run.failures:
        message = _refused_message(options.scenario, run.failures)
        if not options.allow_refused:
            raise RefusedError(
                f"{message} (the run went on and wrote its outputs; "
                "--allow-refused accepts refused actions)",
                run,
            )
        err.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return run


def _git_target(scenario: scenarios.Scenario, options: RunOptions) -> scenarios.GitTarget | None:
    """Where the run's GitOps repository is (``--git-out``, ``--git``), checked before the run:
    ``GitOpsFlagError`` for a scenario without a ``gitops`` block, both flags, a ``--git-out``
    that is not a new or empty directory, or a ``--git`` that is not a repository."""
    if options.git_out is None and options.git is None:
        return None
    flag = "--git-out" if options.git_out is not None else "--git"
    if options.git_out is not None and options.git is not None:
        raise GitOpsFlagError("--git-out and --git: give one (write a repository, or follow one)")
    if scenario.gitops is None:
        raise GitOpsFlagError(f"{flag}: the scenario {scenario.name} has no gitops block")
    if options.git_out is not None:
        path = options.git_out
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise GitOpsFlagError(f"--git-out {path}: not a new or empty directory")
        return scenarios.GitTarget(path.resolve(), write=True)
    assert options.git is not None
    if not (options.git / ".git").exists() and not (options.git / "HEAD").is_file():
        raise GitOpsFlagError(f"--git {options.git}: not a Git repository")
    return scenarios.GitTarget(options.git.resolve(), write=False)


def _refused_message(source: str, failures: Sequence[scenarios.Failure]) -> str:
    """One line: ``source`` (the scenario as the user named it) and its refused actions, each
    timeline entry once with its first scenario time and reason (200 characters at most; one
    that kept failing on repeat says how often), the first few listed."""
    by_where: dict[str, list[scenarios.Failure]] = {}
    for failure in failures:
        by_where.setdefault(failure.where, []).append(failure)
    items = []
    for where, each in by_where.items():
        first = each[0]
        again = ""
        if len(each) > 1:
            again = f" (and {len(each) - 1} more times, the last at {_clock(each[-1].elapsed)})"
        reason = first.message if len(first.message) <= 200 else f"{first.message[:197]}..."
        items.append(f"{where} at {_clock(first.elapsed)}{again}: {reason}")
    what = "1 scenario action" if len(items) == 1 else f"{len(items)} scenario actions"
    shown = "; ".join(items[:_LISTED])
    more = f"; and {len(items) - _LISTED} more" if len(items) > _LISTED else ""
    return (
        f"{source}: {what} refused by the simulated cluster, so the scenario did not happen "
        f"as written: {shown}{more}"
    )


def _play(
    run: scenarios.ScenarioRun,
    options: RunOptions,
    *,
    err: Console,
    progress: Progress,
    started: float,
) -> None:
    with progress.bar(run.scenario.name, total=run.duration.total_seconds()) as bar:
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


@contextlib.contextmanager
def _timeline_log_held() -> Iterator[None]:
    """While a run goes, keep Python's last-resort handler from printing the timeline's log of
    failures on stderr (the run reports them itself, in one line, at its end). A handler the
    application configured still receives the records."""
    logger = logging.getLogger(scenarios.ScenarioRun.__module__)
    if logger.hasHandlers():
        yield
        return
    held = logging.NullHandler()
    logger.addHandler(held)
    try:
        yield
    finally:
        logger.removeHandler(held)


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
            refused = f" ({len(run.failures)} refused, listed at exit)" if run.failures else ""
            err.print(f"scenario over{refused}; still serving until interrupted", highlight=False)
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
