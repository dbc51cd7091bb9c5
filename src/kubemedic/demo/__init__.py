"""``kubemedic demo``: the three incidents on the simulator, kubemedic acting on them, told.

One scratch directory, one SQLite archive (``--archive FILE`` keeps it). The dashboard
(``kubemedic web``) starts first, on 127.0.0.1, so a person can open it and watch; then three
acts, one after the other, each a scenario served over HTTP on its virtual clock, recorded by
``kubemedic run`` in its own process under its own ``--cluster`` name:

1. :mod:`~kubemedic.demo.storm`: a ``kubectl edit`` GitOps never saw, the Failed-pod storm it
   sets off, stopped by the storm breaker; the guard refuses the same edit afterwards.
2. :mod:`~kubemedic.demo.repair`: nodes failing in every way incident 2 names; node repair
   restarts, reboots, replaces, quarantines, and holds back where it should.
3. :mod:`~kubemedic.demo.memory`: the hub evicted beside Prometheus, explained from the archive
   after the API server expired its events, and sized by ``kubemedic recommend``.

Each act tells what happened, what kubemedic saw, what it did or held back and why, and where to
look on the dashboard; a table sums them up. Every child is a ``kubemedic`` command line
(:mod:`~kubemedic.demo.children`): one that dies is named and ends the demo with an error. With
``keep_running`` the dashboard stays up until SIGINT or SIGTERM; otherwise, and in every case
on the way out, every child is stopped.

``--snapshots`` scans the bundled snapshots instead (:mod:`~kubemedic.demo.snapshots`).

May import every layer below it, the simulator included (through its public faces).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from kubemedic.demo import dashboard
from kubemedic.demo.children import Children, DemoError
from kubemedic.demo.snapshots import bundled_snapshots, scan_bundled
from kubemedic.demo.staging import Stage
from kubemedic.demo.telling import Row, Teller
from kubemedic.output.progress import NO_PROGRESS, Progress
from kubemedic.store.db import Archive

__all__ = ["DONE", "DemoError", "Options", "bundled_snapshots", "run", "scan_bundled"]

DONE = "The demo is done."
"""The line that says so (what a script waiting for the demo looks for)."""


@dataclass(frozen=True)
class Options:
    archive: Path | None = None
    port: int = 8080
    keep_running: bool = False


def run(*, console: Console, options: Options, progress: Progress = NO_PROGRESS) -> int:
    """Play the three acts; the exit status (0; 130 when interrupted before the end).
    Raises :class:`DemoError` when a child dies or does not get ready."""
    with tempfile.TemporaryDirectory(prefix="kubemedic-demo-") as scratch:
        return asyncio.run(_demo(Path(scratch), console, options, progress))


async def _demo(scratch: Path, console: Console, options: Options, progress: Progress) -> int:
    db = options.archive.resolve() if options.archive else scratch / "demo.db"
    children = Children(scratch)
    started = time.monotonic()
    main = asyncio.current_task()
    assert main is not None
    interrupted: list[int] = []
    loop = asyncio.get_running_loop()

    def interrupt(number: int) -> None:
        interrupted.append(number)
        main.cancel()

    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, interrupt, number)
    try:
        with progress.task("creating the archive and starting the dashboard"):
            await asyncio.to_thread(_create, f"sqlite:///{db}")
            port = dashboard.choose_port(options.port)
            _, base = await dashboard.start(children, db_url=f"sqlite:///{db}", port=port)
        console.print(f"[bold]The dashboard: {base}[/bold]  (open it to watch the acts unfold)")
        console.print(f"The archive: {db}" + ("" if options.archive else " (temporary)"))
        stage = Stage(
            scratch=scratch,
            db=db,
            children=children,
            teller=Teller(console, base, db_shown=str(db) if options.archive else "demo.db"),
            progress=progress,
        )
        rows = await _acts(stage)
        stage.teller.summary(rows)
        wall = time.monotonic() - started
        console.print(f"{DONE} ({wall:.0f} s of wall time)")
        if not options.archive:
            console.print(
                "(kubemedic demo --archive demo.db keeps the archive; "
                "kubemedic web --db demo.db shows it again)",
                style="dim",
            )
        if options.keep_running:
            console.print(f"The dashboard stays up on {base} until Ctrl-C.", highlight=False)
            console.file.flush()
            with contextlib.suppress(asyncio.CancelledError):
                await _watch(children)
            return 0
        return 0
    except asyncio.CancelledError:
        if not interrupted:
            raise
        console.print("interrupted: stopping every process the demo started", style="bold")
        return 130
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)
        children.stop_all()


async def _acts(stage: Stage) -> list[Row]:
    from kubemedic.demo import memory, repair, storm  # noqa: PLC0415 - the simulator loads here

    rows: list[Row] = []
    for number, act in enumerate((storm, repair, memory), start=1):
        began = time.monotonic()
        rows += await act.play(stage)
        stage.teller.said(
            f"(act {number}: {time.monotonic() - began:.0f} s of wall time)", style="dim"
        )
    return rows


async def _watch(children: Children) -> None:
    """Until cancelled: the dashboard must stay up."""
    while True:
        children.check()
        await asyncio.sleep(0.5)


def _create(url: str) -> None:
    """Create and migrate the archive, so the dashboard can open it before anything runs."""
    Archive.open(url).close()
