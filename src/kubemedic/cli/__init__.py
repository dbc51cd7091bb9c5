"""The ``kubemedic`` command line: the app, its global options, and its command groups.

One module per command group (``scan`` with ``checks``, ``sim``, ``demo``, ``archive`` for
``events`` and ``oom``, ``daemon`` for ``run``, ``incidents``, ``nodes`` for node repair,
``agent`` for the node agent, ``rollback`` for the filesystem rollback kit, ``drift`` against
Git, ``guard`` for the admission webhook, ``recommend`` for right-sizing, ``web`` for the
dashboard), sharing ``_common``; each imports what its commands need when they run, so start-up
(and ``--version``) loads typer and the command definitions only. The command modules never
import this package's own names.

Exit codes everywhere: 0 when nothing is at or above ``--fail-on``, 1 when something is, 2 for a
usage or input error or a cluster or archive kubemedic could not use (one line naming the file,
object, field or flag at fault and what was expected), 3 for a bug in kubemedic (one line; the
traceback only under ``--debug`` or ``KUBEMEDIC_DEBUG=1``), 130 when interrupted. A traceback
never exits 1, so a CI gate on ``--fail-on`` never mistakes a crash for a finding.

May import: everything (it is the top layer); nothing imports it.
"""

from __future__ import annotations

import errno
import os
import re
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated, NoReturn

import typer
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError

from kubemedic._version import __version__
from kubemedic.cli import (
    _common,
    agent,
    archive,
    daemon,
    demo,
    drift,
    guard,
    incidents,
    nodes,
    recommend,
    rollback,
    scan,
    sim,
    web,
)
from kubemedic.errors import KubemedicError

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
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            help="On an internal error (exit 3), print the traceback (also KUBEMEDIC_DEBUG=1).",
        ),
    ] = False,
) -> None:
    """Keeps Kubernetes clusters healthy and remembers what went wrong."""
    _common.begin(quiet=quiet, debug=debug)


# In the order `kubemedic --help` lists them.
for _group in (
    scan,
    drift,
    sim,
    demo,
    archive,
    daemon,
    incidents,
    nodes,
    agent,
    rollback,
    guard,
    web,
):
    _group.register(app)
recommend.register(app)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the command line on ``argv`` (default: the process's arguments) and end with its exit
    status; every way out is one of the statuses in this module's docstring."""
    code = _run(list(argv) if argv is not None else sys.argv[1:])
    if _common.leaving_at_once():
        _leave(code)
    raise SystemExit(code)


def _run(args: list[str]) -> int:
    try:
        outcome = app(args=args, prog_name="kubemedic", standalone_mode=False)
    except SystemExit as done:  # a command that ended itself with sys.exit
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        return _error(str(done.code))
    except (typer.Abort, KeyboardInterrupt):
        return 130
    except NoArgsIsHelpError as bare:  # `kubemedic` or `kubemedic sim` alone: the help
        typer.echo(bare.ctx.get_help(), err=True)
        return 2
    except ClickException as usage:  # a bad flag, a missing argument: one line, no box
        context = usage.ctx if isinstance(usage, UsageError) else None
        where = f"{context.command_path}: " if context is not None else ""
        hint = f" (see '{context.command_path} --help')" if context is not None else ""
        message = _plain(usage.format_message(), _given(usage, args))
        return _error(f"{where}{message}{hint}", code=usage.exit_code)
    except KubemedicError as error:  # one a command did not word itself: still exit 2
        return _error(str(error))
    except BrokenPipeError:  # `kubemedic ... | head`: the reader left; say nothing
        return _closed_pipe()
    except OSError as error:
        if error.errno == errno.EPIPE:
            return _closed_pipe()
        return _bug(error)
    except UnicodeEncodeError as error:
        undecodable = _undecodable(args)
        if error.reason != "surrogates not allowed" or not undecodable:
            return _bug(error)
        # An argument that was not UTF-8 (the OS handed its bytes over as surrogates) reached
        # something that must write text: a name, a filter, a database value.
        return _error(f"{undecodable}: not valid UTF-8 text")
    except Exception as error:  # the one place a bug becomes exit 3
        return _bug(error)
    return outcome if isinstance(outcome, int) and not isinstance(outcome, bool) else 0


def _undecodable(args: Sequence[str]) -> str:
    """The first argument holding bytes that were not UTF-8, named by its flag (``--cluster``)
    or shown as it was given; "" when every argument is text."""
    for index, arg in enumerate(args):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            flag, equals, value = arg.partition("=")
            if equals and flag.startswith("--"):
                return f"{flag} {ascii(value)[:200]}"
            shown = ascii(arg)[:200]
            before = args[index - 1] if index else ""
            return f"{before} {shown}" if before.startswith("-") else f"argument {shown}"
    return ""


# Typer checks option values with pydantic and words its errors so; said here as the README does.
_PYDANTIC = (
    (re.compile(r"Input should be a valid integer[^']*"), "expected a whole number"),
    (re.compile(r"Input should be a valid number[^']*"), "expected a number"),
    (re.compile(r"Input should be a valid boolean[^']*"), "expected true or false"),
    (re.compile(r"Input should be a finite number[^']*"), "expected a finite number"),
    (re.compile(r"Input should be "), "expected "),
    (re.compile(r"Value error, "), ""),
)


def _plain(message: str, given: str | None) -> str:
    """A usage error's message without pydantic's words, with the value given (200 chars)."""
    plain = message
    for pattern, words in _PYDANTIC:
        plain = pattern.sub(words, plain)
    plain = plain.rstrip()
    if plain != message and given is not None and repr(given[:200]) not in plain:
        plain = f"{plain.rstrip('.')}, got {given[:200]!r}"
    return plain


def _given(usage: ClickException, args: list[str]) -> str | None:
    """The value the user gave the option a usage error is about, read back from ``args``."""
    param = getattr(usage, "param", None)
    names = list(getattr(param, "opts", []) or [])
    for index, arg in enumerate(args):
        for name in names:
            if arg == name and index + 1 < len(args):
                return args[index + 1]
            if arg.startswith(name + "="):
                return arg[len(name) + 1 :]
    return None


def _error(message: str, *, code: int = 2) -> int:
    _common.say_error(message)
    return code


def _bug(error: BaseException) -> int:
    """An exception nothing expected: one line saying it is a bug, the traceback on request."""
    summary = " ".join(str(error).split())[:200]
    kind = type(error).__name__
    if _common.debugging():
        traceback.print_exception(error, file=sys.stderr)
        hint = ""
    else:
        hint = "; run again with --debug (or KUBEMEDIC_DEBUG=1) for the traceback"
    _common.say_error(
        f"this is a bug in kubemedic {__version__}: {kind}{': ' if summary else ''}{summary}{hint}",
        label="internal error",
    )
    return 3


def _closed_pipe() -> int:
    # Whatever is still buffered for the closed pipe must not fail again at exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 141


def _leave(code: int) -> None:
    """End the process now with ``code``, after flushing what was printed; if flushing fails
    (a closed pipe), the ordinary exit reports it."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    os._exit(code)
