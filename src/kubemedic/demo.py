"""``kubemedic demo``: the three incidents, replayed on the simulated cluster and scanned.

By default each incident of INCIDENTS.md is played as a scenario on the simulator (scheduler,
kubelets, controllers, node lifecycle on a virtual clock: minutes to hours of cluster time in
seconds), and the cluster it leaves behind is scanned exactly as ``kubemedic scan`` scans a
``kubectl get -o json`` dump; the last scenario is a healthy control that must come out clean.

The memory incident (seed 003) is played differently: its API is served over HTTP and
``kubemedic run`` records it from another process, exactly as it would record a real cluster;
two hours on, when the API server has long expired every OOM and eviction event, the demo asks
the archive (``kubemedic events``, ``kubemedic oom``, ``kubemedic incidents``) what happened.

``--snapshots`` scans the bundled snapshots instead (``kubemedic/data/snapshots/<name>/``): the
same incidents caught mid-way and dumped as ``kubectl get -o json`` prints them, without running
anything. The first line of a snapshot's ``ABOUT`` file is its title, the rest a short story.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import timedelta
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import sqlalchemy as sa
from rich.console import Console
from rich.text import Text

from kubemedic import checks
from kubemedic.checks.findings import Finding
from kubemedic.model.view import ClusterView
from kubemedic.output import rendering
from kubemedic.output.progress import NO_PROGRESS, Progress, Task
from kubemedic.snapshot import loading
from kubemedic.store import schema

if TYPE_CHECKING:
    from kubemedic.sim.machinery import Change
    from kubemedic.sim.scenarios import ScenarioRun

__all__ = ["SCENARIOS", "bundled_snapshots", "replay", "run"]

#: The scenarios the demo replays, in order: the three incidents, then the healthy control.
SCENARIOS = ("gitops-nodename-storm", "node-failures", "core-node-prometheus", "healthy")

#: The scenario recorded by ``kubemedic run`` over HTTP, and for how long (past the one-hour
#: event TTL, so the API server has forgotten what the archive kept).
RECORDED = "core-node-prometheus"
RECORDED_FOR = timedelta(hours=2)

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]


def bundled_snapshots() -> list[Path]:
    """The bundled snapshot directories, in the order the demo shows them."""
    root = Path(str(resources.files("kubemedic") / "data" / "snapshots"))
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith("_")
    )


def run(
    *,
    console: Console,
    snapshots: bool = False,
    archive: Path | None = None,
    progress: Progress = NO_PROGRESS,
) -> int:
    """Show every incident with its findings; returns the number of findings. The recorded
    incident's archive is written to ``archive`` (kept) or to a temporary file. ``progress``
    shows each step (replaying, recording, scanning, asking the archive) while it runs."""
    if snapshots:
        return _scan_bundled(console=console, progress=progress)
    total = 0
    with tempfile.TemporaryDirectory(prefix="kubemedic-demo-") as scratch:
        for name in SCENARIOS:
            kept = archive or Path(scratch) / "archive.db"
            recorded = Path(scratch) if name == RECORDED else None
            title, story, findings = replay(name, progress=progress, recorded=recorded, db=kept)
            total += len(findings)
            rendering.render_table(findings, console=console, title=title)
            console.print(Text(story, style="dim"))
            console.print()
            if recorded is not None:
                _ask_the_archive(console, kept, keep=archive is not None, progress=progress)
    return total


def replay(
    name: str,
    *,
    progress: Progress = NO_PROGRESS,
    recorded: Path | None = None,
    db: Path | None = None,
) -> tuple[str, str, list[Finding]]:
    """Play one scenario to its end and scan the cluster it leaves: (title, story, findings).
    With ``recorded`` (a scratch directory) and ``db``, the scenario is served over HTTP for
    two hours of cluster time while ``kubemedic run`` records it into ``db``."""
    from kubemedic.sim import apiserver, scenarios  # noqa: PLC0415

    verb = "recording" if recorded is not None else "replaying"
    with progress.task(f"{verb} {name} on the simulated cluster") as task:
        scenario = scenarios.load(name)
        until = RECORDED_FOR if recorded is not None else None
        run_ = scenarios.ScenarioRun(scenario, until=until)
        end = run_.duration.total_seconds()
        if recorded is not None:
            task.phase(f"{verb} {name}: starting kubemedic run to record it over HTTP")

        def on_step() -> None:
            done = run_.elapsed().total_seconds()
            task.update(f"{verb} {name}: {_clock(done)} of {_clock(end)} cluster time")

        _play(run_, on_step if progress.active else None, recorded, db)
        task.phase(f"scanning the cluster {name} left behind")
        body = apiserver.snapshot(run_.sim.server)
        view = ClusterView.build(body["items"])
        findings = checks.run_checks(view, progress=_checking(task) if progress.active else None)
    info = {i.name: i for i in scenarios.available()}.get(name)
    title = f"{name}: {info.title}" if info is not None else name
    story = (
        f"{scenario.description} (replayed: {_clock(end)} of cluster time, "
        f"{run_.sim.count('nodes')} nodes, {run_.sim.count('pods')} pods at the end)"
    )
    return title, story, findings


def _play(
    run_: ScenarioRun,
    on_step: Callable[[], None] | None,
    recorded: Path | None,
    db: Path | None,
) -> None:
    if recorded is None or db is None:
        run_.run(on_step=on_step)
        return
    asyncio.run(_record(run_, on_step, recorded, db))


async def _record(
    run_: ScenarioRun, on_step: Callable[[], None] | None, scratch: Path, db: Path
) -> None:
    """Serve ``run_`` and play it while ``kubemedic run`` records it into ``db``; returns when
    the recorder has caught up with the last change and stopped."""
    from kubemedic.sim.apiserver import write_kubeconfig  # noqa: PLC0415

    last: dict[str, int] = {}

    def follow(store: str, stream: str) -> None:
        def note(change: Change) -> None:
            last[stream] = change.rv

        run_.sim.watch(store, note)

    streams = (("events", "v1/events"), ("pods", "v1/pods"), ("nodes", "v1/nodes"))
    for store, stream in streams:
        follow(store, stream)
    server = run_.sim.server
    port = await server.start(port=0, tick=False)
    kubeconfig = scratch / "kubeconfig"
    write_kubeconfig(kubeconfig, f"http://127.0.0.1:{port}")
    url = f"sqlite:///{db}"
    log = (scratch / "run.log").open("wb")
    args = ["run", "--db", url, "--kubeconfig", str(kubeconfig), "--clock", "server"]
    args += ["--no-leader-elect", "--scan-interval", "1m", "--log-level", "warning"]
    args += ["--listen", "127.0.0.1:0"]  # /metrics on any free port: 9808 may be taken
    recorder = await asyncio.create_subprocess_exec(*KUBEMEDIC, *args, stdout=log, stderr=log)
    try:
        # Listed and checkpointed every stream: recording from here on.
        await _wait_for(lambda: len(_checkpoints(url)) >= len(streams), recorder, scratch)
        await run_.run_paced(speed=400.0, on_step=on_step)
        await _wait_for(
            lambda: all(int(_checkpoints(url).get(s, "0")) >= rv for s, rv in last.items()),
            recorder,
            scratch,
        )
        recorder.send_signal(signal.SIGTERM)
        await asyncio.wait_for(recorder.wait(), timeout=60)
    finally:
        if recorder.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                recorder.kill()
            await recorder.wait()
        log.close()
        await server.stop()


async def _wait_for(
    ready: Callable[[], bool], recorder: asyncio.subprocess.Process, scratch: Path
) -> None:
    deadline = time.monotonic() + 120
    while not await asyncio.to_thread(_safely, ready):
        if recorder.returncode is not None or time.monotonic() > deadline:
            tail = (scratch / "run.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"kubemedic run did not keep up with the demo:\n{tail}")
        await asyncio.sleep(0.3)


def _safely(ready: Callable[[], bool]) -> bool:
    try:
        return ready()
    except sa.exc.SQLAlchemyError:
        return False  # not created or migrated yet


def _checkpoints(url: str) -> dict[str, str]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(schema.checkpoints.c.stream, schema.checkpoints.c.resource_version)
            ).all()
    finally:
        engine.dispose()
    return {stream: version for stream, version in rows}


def _checking(task: Task) -> Callable[[str], None]:
    def running(check: str) -> None:
        task.update(f"scanning: {check}")

    return running


def _ask_the_archive(console: Console, db: Path, *, keep: bool, progress: Progress) -> None:
    """What the API server forgot, asked of the archive with the commands a user would type."""
    url = f"sqlite:///{db}"
    console.rule("[bold]An hour later: the API server has forgotten; the archive has not")
    shown = "demo.db" if not keep else str(db)
    for args in (
        ["events", "--reason", "Evicted", "--limit", "5"],
        ["oom", "--node", "core-2"],
        ["incidents", "list"],
    ):
        console.print(f"[bold]$ kubemedic {' '.join(args)} --db {shown}[/bold]")
        with progress.task(f"asking the archive: kubemedic {args[0]}"):
            answer = _cli([*args, "--db", url], width=console.width)
        _raw(console, answer)
    with progress.task("asking the archive: kubemedic incidents list --output json"):
        listed = orjson.loads(_cli(["incidents", "list", "--db", url, "--output", "json"]))
    console.print()
    worst = [i for i in listed["incidents"] if i["kind"] == "incident"]
    if worst:
        chosen = max(worst, key=lambda i: (i["severity"] == "critical", i["confidence"]))
        args = ["incidents", "export", chosen["id"], "--format", "markdown"]
        console.print(f"[bold]$ kubemedic {' '.join(args)} --db {shown}[/bold]  (first lines)")
        with progress.task("asking the archive: kubemedic incidents export"):
            draft = _cli([*args, "--db", url], width=console.width).splitlines()
        _raw(console, "\n".join(draft[:30]) + "\n")
        console.print(Text(f"... {len(draft) - 30} more lines", style="dim"))
    if not keep:
        console.print(
            Text("(kubemedic demo --archive demo.db keeps this archive to explore)", style="dim")
        )
    console.print()


def _raw(console: Console, text: str) -> None:
    """Another command's output as it printed it (already laid out for this width)."""
    console.file.write(text if text.endswith("\n") else text + "\n")
    console.file.flush()


def _cli(args: list[str], *, width: int = 120) -> str:
    # Our own interpreter and flags; the only other argument is the demo's archive path.
    done = subprocess.run(  # noqa: S603
        [*KUBEMEDIC, *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "COLUMNS": str(max(width, 100))},
    )
    if done.returncode != 0:
        raise RuntimeError(f"kubemedic {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def _scan_bundled(*, console: Console, progress: Progress) -> int:
    total = 0
    for directory in bundled_snapshots():
        about = directory / "ABOUT"
        lines = about.read_text(encoding="utf-8").splitlines() if about.exists() else []
        title = lines[0] if lines else directory.name
        with progress.task(f"scanning the snapshot {directory.name}") as task:
            loaded = loading.load_snapshot(directory)
            view = loaded.view()
            findings = checks.run_checks(
                view, progress=_checking(task) if progress.active else None
            )
        total += len(findings)
        rendering.render_table(findings, console=console, title=title)
        story = " ".join(line.strip() for line in lines[1:] if line.strip())
        if story:
            console.print(Text(story, style="dim"))
        console.print()
    return total


def _clock(seconds: float) -> str:
    whole = int(seconds)
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
