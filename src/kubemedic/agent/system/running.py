"""One child process, from an argument list, within a deadline.

Commands are started directly (``subprocess`` with a list, never a shell), so nothing in a unit
name or a configured path is parsed as shell syntax. The child leads its own session; at its
deadline, or if the caller is interrupted, the whole process group is killed (an ``nsenter``
prefix and the ``systemctl`` it started alike). Standard input is empty.

Exit status 0 gives standard output. Anything else is a :class:`CommandError` (a
:class:`~kubemedic.agent.host.HostError`) whose message names the command, its exit status (or
the signal that ended it) and the first line it wrote to standard error, at most 200 characters.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from collections.abc import Mapping, Sequence
from datetime import timedelta

from kubemedic.agent.host import HostError
from kubemedic.model.timing import human_duration

__all__ = ["CommandError", "first_line", "run", "shown"]

#: After killing a timed-out command, how long to wait for its pipes to close.
_REAP_SECONDS = 5.0


class CommandError(HostError):
    """A host command failed: ``command`` (as shown), ``status`` (the exit status, negative for
    a signal, None when it never ran or was killed at its deadline) and ``said`` (the first line
    of its standard error)."""

    def __init__(self, message: str, *, command: str, status: int | None, said: str) -> None:
        super().__init__(message)
        self.command = command
        self.status = status
        self.said = said


def shown(argv: Sequence[str]) -> str:
    """The command as a shell would spell it (for messages only; nothing runs through one)."""
    text = shlex.join(argv)
    return text if len(text) <= 200 else text[:200] + "…"


def first_line(data: bytes) -> str:
    """The first non-blank line of ``data``, stripped, at most 200 characters."""
    for line in data.decode("utf-8", "replace").splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _ended(status: int) -> str:
    if status < 0:
        try:
            return f"was killed by {signal.Signals(-status).name}"
        except ValueError:
            return f"was killed by signal {-status}"
    return f"exited with status {status}"


def run(argv: Sequence[str], *, timeout: timedelta, env: Mapping[str, str] | None = None) -> str:
    """Run ``argv`` to its end within ``timeout``; its standard output (UTF-8, undecodable bytes
    replaced) when it exits with status 0, else :class:`CommandError`. ``env`` replaces the
    environment (None: this process's)."""
    command = shown(argv)
    try:
        # An argument list, no shell: the program and its arguments come from the settings and
        # validated unit names.
        process = subprocess.Popen(  # noqa: S603
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            env=dict(env) if env is not None else None,
        )
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise CommandError(
            f"`{command}` could not be started: {reason}", command=command, status=None, said=""
        ) from exc
    seconds = timeout.total_seconds()
    try:
        out, err = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.communicate(timeout=_REAP_SECONDS)
        limit = human_duration(seconds) if seconds >= 1 else f"{seconds:g}s"
        raise CommandError(
            f"`{command}` did not finish within {limit} and was killed",
            command=command,
            status=None,
            said="",
        ) from None
    finally:
        if process.returncode is None:  # interrupted or timed out: leave nothing running
            _kill_group(process)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=_REAP_SECONDS)
    if process.returncode != 0:
        said = first_line(err)
        raise CommandError(
            f"`{command}` {_ended(process.returncode)}" + (f": {said}" if said else ""),
            command=command,
            status=process.returncode,
            said=said,
        )
    return out.decode("utf-8", "replace")
