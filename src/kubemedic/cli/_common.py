"""What the command modules share: the usage-error exit, output formats, consoles, progress, and
ending the process at once after a large scan.

Light on purpose (typer and the standard library): every command module imports it when the
command line starts, whatever command runs. Rich is imported when a console is first made.
"""

from __future__ import annotations

import enum
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console
    from rich.table import Table

    from kubemedic.output.progress import Progress

__all__ = [
    "ContextOption",
    "ForceOption",
    "KubeconfigOption",
    "OutputFormat",
    "_fail",
    "begin",
    "configure_logging",
    "debugging",
    "err_console",
    "leave_at_once",
    "leaving_at_once",
    "listen_address",
    "out_console",
    "plain_table",
    "progress",
    "say_error",
]


ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace an output path that is a symbolic link, named pipe, socket or device "
        "(never a directory); without it such a path is refused.",
    ),
]
"""``--force`` of every command that writes a file the user names (see ``output.files``)."""

KubeconfigOption = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster).",
    ),
]
"""``--kubeconfig`` of every command that talks to a cluster (resolved as kubectl does)."""

ContextOption = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context to use (default: current).")
]
"""``--context`` beside ``--kubeconfig``."""


class OutputFormat(enum.StrEnum):
    table = "table"
    json = "json"


class _State:
    quiet = False
    debug = False
    leave_at_once = False


def begin(*, quiet: bool, debug: bool = False) -> None:
    """A command line starts (the root callback): ``quiet`` is the global ``--quiet`` (no
    progress, whatever stderr is), ``debug`` the global ``--debug`` (tracebacks of bugs)."""
    _State.quiet = quiet
    _State.debug = debug
    _State.leave_at_once = False


def debugging() -> bool:
    """Whether a bug's traceback is printed: ``--debug`` or ``KUBEMEDIC_DEBUG`` set to 1."""
    return _State.debug or os.environ.get("KUBEMEDIC_DEBUG", "").strip() in {"1", "true", "yes"}


def leave_at_once() -> None:
    """Called by a command that has printed all it prints and holds a large structure (a scanned
    snapshot): ``main()`` then ends the process as soon as the command returns, rather than have
    the interpreter free every object one by one on the way out (a third of a second for 30,000
    pods, seconds for 150,000). Output is flushed first; the exit status is the command's."""
    _State.leave_at_once = True


def leaving_at_once() -> bool:
    return _State.leave_at_once


def out_console() -> Console:
    """A console on stdout (what a command prints)."""
    from rich.console import Console  # noqa: PLC0415 - Rich loads when a command prints

    return Console()


def plain_table(columns: Sequence[str], caption: str = "") -> Table:
    """The commands' table: no box, bold headers, the ``caption`` under it on the left; long
    cells fold onto more lines, except in ``MESSAGE`` and ``DETAILS`` columns, which wrap."""
    from rich.table import Table  # noqa: PLC0415 - Rich loads when a table is printed

    table = Table(box=None, header_style="bold", pad_edge=False, caption=caption)
    table.caption_justify = "left"
    for column in columns:
        table.add_column(column, overflow="fold", no_wrap=column not in ("MESSAGE", "DETAILS"))
    return table


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


def say_error(message: str, *, label: str = "error") -> None:
    """Print ``label: message`` on stderr, the message as it is (brackets are not markup)."""
    from rich.markup import escape  # noqa: PLC0415

    err_console().print(f"[bold red]{label}:[/] {escape(message)}", highlight=False, soft_wrap=True)


def _fail(message: str) -> typer.Exit:
    """Print ``error: message`` on stderr; the caller raises the returned exit (status 2)."""
    say_error(message)
    return typer.Exit(2)


def configure_logging(log_level: str, *, quiet: tuple[str, ...] = ()) -> int:
    """Set up the daemons' log lines at ``log_level`` (``--log-level``: debug, info, warning or
    error) and return the level; the HTTP clients' line-per-request loggers, and those named in
    ``quiet``, say only warnings. A bad level exits 2 naming the flag."""
    import logging  # noqa: PLC0415 - the daemons' commands only

    level = getattr(logging, log_level.upper(), None)
    if not isinstance(level, int):
        raise _fail(f"--log-level {log_level!r}: use debug, info, warning or error")
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for chatty in ("httpx2", "httpx", *quiet):
        logging.getLogger(chatty).setLevel(max(level, logging.WARNING))
    return level


def listen_address(listen: str, *, example: str, flag: str = "--listen") -> tuple[str, int]:
    """``--listen HOST:PORT`` (or ``flag``) as ``(host, port)`` (an IPv6 host may be
    bracketed); exit 2 naming the flag and showing ``example`` otherwise."""
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise _fail(f"{flag} {listen!r}: expected HOST:PORT such as {example}")
    return host.strip("[]"), int(port)
