"""``kubemedic demo``: the three incidents, replayed from bundled snapshots and scanned.

Each bundled snapshot (``kubemedic/data/snapshots/<name>/``) is a cluster caught in the middle of
one incident from INCIDENTS.md, dumped the way ``kubectl get -o json`` prints it; the last one is a
healthy control that must come out clean. The first line of a snapshot's ``ABOUT`` file is its
title, the rest a short story of what happened.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.text import Text

from kubemedic import checks
from kubemedic.output import rendering
from kubemedic.snapshot import loading

__all__ = ["bundled_snapshots", "run"]


def bundled_snapshots() -> list[Path]:
    """The bundled snapshot directories, in the order the demo shows them."""
    root = Path(str(resources.files("kubemedic") / "data" / "snapshots"))
    return sorted(
        path for path in root.iterdir() if path.is_dir() and not path.name.startswith("_")
    )


def run(*, console: Console) -> int:
    """Scan every bundled snapshot and print its findings; returns the number of findings."""
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
