"""``kubemedic demo``: the three incidents on the simulator with kubemedic acting on them, told
with the dashboard open (see ``kubemedic.demo``), loaded when the command runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kubemedic.cli._common import _fail, leave_at_once, out_console, progress

__all__ = ["demo", "register"]


def register(app: typer.Typer) -> None:
    """Add ``demo`` to ``app``."""
    app.command(name="demo")(demo)


def demo(
    *,
    snapshots: Annotated[
        bool,
        typer.Option(
            "--snapshots", help="Scan the bundled snapshots instead of playing the incidents."
        ),
    ] = False,
    archive: Annotated[
        Path | None,
        typer.Option(help="Keep the archive the demo records in this new SQLite file."),
    ] = None,
    port: Annotated[
        int,
        typer.Option(
            min=0,
            max=65535,
            help="The dashboard's port on 127.0.0.1 (0, or a port in use: any free one).",
        ),
    ] = 8080,
    keep_running: Annotated[
        bool,
        typer.Option("--keep-running", help="Keep the dashboard up after the demo, until Ctrl-C."),
    ] = False,
) -> None:
    """Play the three incidents on the simulated cluster with kubemedic run acting on them
    (storm breaker, guard, node repair, the archive), the dashboard open on 127.0.0.1, and tell
    what happened, what kubemedic saw, what it did and where to look."""
    if archive is not None and archive.exists():
        raise _fail(f"--archive {archive}: the file exists; the demo records into a new one")
    if archive is not None and not archive.parent.is_dir():
        raise _fail(f"--archive {archive}: the directory {archive.parent} does not exist")
    from kubemedic import demo as demo_module  # noqa: PLC0415 - the simulator, when it runs

    if snapshots:
        demo_module.scan_bundled(console=out_console(), progress=progress())
        return
    options = demo_module.Options(archive=archive, port=port, keep_running=keep_running)
    # A DemoError (a child died or never got ready) is a KubemedicError: main() prints it and
    # exits non-zero.
    status = demo_module.run(console=out_console(), options=options, progress=progress())
    # Every child is stopped and the scratch directory gone: nothing is left to tidy but the
    # simulations' objects, which the interpreter would free one by one for seconds.
    leave_at_once()
    if status:
        raise typer.Exit(status)
