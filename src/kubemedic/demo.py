"""``kubemedic demo``: the three incidents, replayed on the simulated cluster and scanned.

By default each incident of INCIDENTS.md is played as a scenario on the simulator (scheduler,
kubelets, controllers, node lifecycle on a virtual clock: minutes to hours of cluster time in
seconds), and the cluster it leaves behind is scanned exactly as ``kubemedic scan`` scans a
``kubectl get -o json`` dump; the last scenario is a healthy control that must come out clean.

``--snapshots`` scans the bundled snapshots instead (``kubemedic/data/snapshots/<name>/``): the
same incidents caught mid-way and dumped as ``kubectl get -o json`` prints them, without running
anything. The first line of a snapshot's ``ABOUT`` file is its title, the rest a short story.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.text import Text

from kubemedic import checks
from kubemedic.checks.findings import Finding
from kubemedic.model.view import ClusterView
from kubemedic.output import rendering
from kubemedic.snapshot import loading

__all__ = ["SCENARIOS", "bundled_snapshots", "replay", "run"]

#: The scenarios the demo replays, in order: the three incidents, then the healthy control.
SCENARIOS = ("gitops-nodename-storm", "node-failures", "core-node-prometheus", "healthy")


def bundled_snapshots() -> list[Path]:
    """The bundled snapshot directories, in the order the demo shows them."""
    root = Path(str(resources.files("kubemedic") / "data" / "snapshots"))
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith("_")
    )


def run(*, console: Console, snapshots: bool = False, err: Console | None = None) -> int:
    """Show every incident with its findings; returns the number of findings."""
    if snapshots:
        return _scan_bundled(console=console)
    total = 0
    for name in SCENARIOS:
        title, story, findings = replay(name, status=err or Console(stderr=True))
        total += len(findings)
        rendering.render_table(findings, console=console, title=title)
        console.print(Text(story, style="dim"))
        console.print()
    return total


def replay(name: str, *, status: Console | None = None) -> tuple[str, str, list[Finding]]:
    """Play one scenario to its end and scan the cluster it leaves: (title, story, findings)."""
    from kubemedic.sim import scenarios, snapshotting, timeline  # noqa: PLC0415

    scenario = scenarios.load(name)
    run_ = timeline.ScenarioRun(scenario)
    end = run_.duration.total_seconds()
    if status is not None and status.is_terminal:
        with status.status(f"replaying {name} on the simulated cluster") as shown:

            def on_step() -> None:
                done = run_.elapsed().total_seconds()
                shown.update(f"replaying {name}: {_clock(done)} of {_clock(end)} cluster time")

            run_.run(on_step=on_step)
    else:
        run_.run()
    body = snapshotting.snapshot(run_.sim.server)
    view = ClusterView.build(body["items"])
    findings = checks.run_checks(view)
    info = {i.name: i for i in scenarios.available()}.get(name)
    title = f"{name}: {info.title}" if info is not None else name
    story = (
        f"{scenario.description} (replayed: {_clock(end)} of cluster time, "
        f"{run_.sim.count('nodes')} nodes, {run_.sim.count('pods')} pods at the end)"
    )
    return title, story, findings


def _scan_bundled(*, console: Console) -> int:
    total = 0
    for directory in bundled_snapshots():
        about = directory / "ABOUT"
        lines = about.read_text(encoding="utf-8").splitlines() if about.exists() else []
        title = lines[0] if lines else directory.name
        loaded = loading.load_snapshot(directory)
        view = loaded.view()
        findings = checks.run_checks(view)
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
