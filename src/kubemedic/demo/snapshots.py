"""``kubemedic demo --snapshots``: the bundled snapshots scanned, without running anything.

The snapshots (``kubemedic/data/snapshots/<name>/``) are the incidents caught mid-way and dumped
as ``kubectl get -o json`` prints them. The first line of a snapshot's ``ABOUT`` file is its
title, the rest a short story.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.text import Text

from kubemedic import checks
from kubemedic.output import rendering
from kubemedic.output.progress import NO_PROGRESS, Progress, Task
from kubemedic.snapshot import loading

__all__ = ["bundled_snapshots", "scan_bundled"]


def bundled_snapshots() -> list[Path]:
    """The bundled snapshot directories, in the order the demo shows them."""
    root = Path(str(resources.files("kubemedic") / "data" / "snapshots"))
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith("_")
    )


def scan_bundled(*, console: Console, progress: Progress = NO_PROGRESS) -> int:
    """Scan every bundled snapshot and show its findings; the number of findings."""
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


def _checking(task: Task) -> Callable[[str], None]:
    def running(check: str) -> None:
        task.update(f"scanning: {check}")

    return running
