"""What the command modules share: the usage-error exit, output formats, the consoles, progress.

Light on purpose (typer and the standard library): every command module imports it when the
command line starts, whatever command runs. Rich is imported when a console is first made.
"""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from kubemedic.output.progress import Progress

__all__ = ["OutputFormat", "err_console", "out_console", "progress", "set_quiet"]


class OutputFormat(enum.StrEnum):
    table = "table"
    json = "json"


class _State:
    quiet = False


def set_quiet(quiet: bool) -> None:
    """The global ``--quiet``: no progress, whatever stderr is."""
    _State.quiet = quiet


def out_console() -> Console:
    """A console on stdout (what a command prints)."""
    from rich.console import Console  # noqa: PLC0415 - Rich loads when a command prints

    return Console()


def err_console() -> Console:
    """A console on stderr (errors, notes and progress)."""
    from rich.console import Console  # noqa: PLC0415

    return Console(stderr=True)


def progress(err: Console | None = None) -> Progress:
    """Progress drawn on ``err`` (default: stderr) when it is a terminal and ``--quiet`` was not
    given; otherwise one that shows nothing."""
    from kubemedic.output import progress as progressing  # noqa: PLC0415

    if _State.quiet:
        return progressing.NO_PROGRESS
    return progressing.on_terminal(err if err is not None else err_console())


def _fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; the caller raises the returned exit (status 2)."""
    err_console().print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(2)
