"""``kubemedic demo``: the incidents replayed on the simulated cluster and scanned (see
``kubemedic.demo``), loaded when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kubemedic.cli._common import _fail, out_console, progress

__all__ = ["demo", "register"]


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command(name="demo")(demo)


def demo(
    *,
    snapshots: Annotated[
        bool,
        typer.Option(
            "--snapshots", help="Scan the bundled snapshots instead of replaying the scenarios."
        ),
    ] = False,
    archive: Annotated[
        Path | None,
        typer.Option(
            help="Keep the archive `kubemedic run` records during the demo in this SQLite file."
        ),
    ] = None,
) -> None:
    """Replay the three incidents (and a healthy control) on the simulated cluster and scan
    what each leaves behind; the memory incident is recorded by `kubemedic run` over HTTP and
    asked of the archive two hours later, when the API server has forgotten it."""
    if archive is not None and archive.exists():
        raise _fail(f"--archive {archive}: the file exists; the demo records into a new one")
    from kubemedic import demo as demo_module  # noqa: PLC0415 - the simulator, when it runs

    demo_module.run(
        console=out_console(), snapshots=snapshots, archive=archive, progress=progress()
    )
