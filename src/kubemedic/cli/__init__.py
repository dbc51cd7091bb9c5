"""The ``kubemedic`` command line: the app, its global options, and its command groups.

One module per command group (``scan`` with ``checks``, ``sim``, ``demo``, ``archive`` for
``events`` and ``oom``, ``daemon`` for ``run``, ``incidents``), sharing ``_common``; each
imports what its commands need when they run, so start-up (and ``--version``) loads typer and
the command definitions only. The command modules never import this package's own names.

Exit codes everywhere: 0 when nothing is at or above ``--fail-on``, 1 when something is, 2 for a
usage or input error (the message names the file, object or flag at fault).

May import: everything (it is the top layer); nothing imports it.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from kubemedic._version import __version__
from kubemedic.cli import _common, archive, daemon, demo, incidents, scan, sim
from kubemedic.errors import InputError

__all__ = ["app", "main"]

app = typer.Typer(
    name="kubemedic",
    help="Keeps Kubernetes clusters healthy and remembers what went wrong.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kubemedic {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "--quiet",
            "-q",
            help="Show no progress (it is shown on stderr only when stderr is a terminal).",
        ),
    ] = False,
) -> None:
    """Keeps Kubernetes clusters healthy and remembers what went wrong."""
    _common.begin(quiet=quiet)


# In the order `kubemedic --help` lists them.
for _group in (scan, sim, demo, archive, daemon, incidents):
    _group.register(app)


def main() -> None:
    try:
        app()
    except SystemExit as done:
        if _common.leaving_at_once() and (done.code is None or isinstance(done.code, int)):
            _leave(done.code or 0)
        raise
    except InputError as error:  # one a command did not word itself: still exit 2, no traceback
        _common.err_console().print(f"[bold red]error:[/] {error}", highlight=False)
        raise SystemExit(2) from None


def _leave(code: int) -> None:
    """End the process now with ``code``, after flushing what was printed; if flushing fails
    (a closed pipe), the ordinary exit reports it."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
