"""The demo's child processes: ``kubemedic`` command lines, started, watched and stopped.

Every long-lived part of the demo (the dashboard, ``kubemedic run``, the guard) is a child
process running this interpreter's ``kubemedic``, exactly as a user would start it, with its
output in a log file of the demo's scratch directory. A child that ends while the demo still
needs it is a :class:`DemoError` naming it, its exit status and the last lines of its log: the
demo never goes on, or fails, silently. :meth:`Children.stop_all` ends every child still
running (SIGTERM, then SIGKILL after a grace period), newest first, so that no process outlives
the demo.

Short commands (``kubemedic drift``, ``kubemedic nodes``...) run through :func:`command`, on the
event loop, so a simulated API server the loop serves keeps answering them. Every child is in
its own process group, so a Ctrl-C on the terminal reaches the demo alone, and the demo stops
them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubemedic.errors import KubemedicError

__all__ = ["KUBEMEDIC", "Child", "Children", "DemoError", "command", "until"]

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]
"""``kubemedic`` on this interpreter (the installed entry point may be another one)."""

#: Seconds a child has to exit after SIGTERM before it is killed.
GRACE = 15.0


class DemoError(KubemedicError):
    """The demo could not go on: a child process died or never got ready; the message names
    it and ends with the last lines of its log."""


@dataclass
class Child:
    """One running ``kubemedic`` command; ``name`` is how the demo names it to the user."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path
    #: Expected to run until the demo stops it (False once it is being stopped).
    needed: bool = True

    def alive(self) -> bool:
        return self.process.poll() is None

    def tail(self, lines: int = 12) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def logged(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def check(self) -> None:
        """Raise :class:`DemoError` if this child has ended while still needed."""
        if self.needed and not self.alive():
            raise DemoError(
                f"{self.name} exited unexpectedly (status {self.process.returncode}); "
                f"the last lines of {self.log}:\n{self.tail()}"
            )


@dataclass
class Children:
    """The children of one demo, their logs under ``scratch``."""

    scratch: Path
    started: list[Child] = field(default_factory=list)

    def start(self, name: str, args: Sequence[str], *, log: str) -> Child:
        path = self.scratch / log
        with path.open("ab") as out:
            process = subprocess.Popen(  # noqa: S603 - our own interpreter and command line
                [*KUBEMEDIC, *args],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
                # Its own process group: a Ctrl-C reaches the demo alone, which then stops its
                # children itself (instead of finding them dead and reporting it).
                process_group=0,
            )
        child = Child(name, process, path)
        self.started.append(child)
        return child

    def check(self) -> None:
        """Raise :class:`DemoError` for the first needed child that has ended."""
        for child in self.started:
            child.check()

    async def stop(self, child: Child) -> int:
        """SIGTERM, then SIGKILL after :data:`GRACE` seconds; the exit status."""
        child.needed = False
        if child.alive():
            with contextlib.suppress(ProcessLookupError):
                child.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + GRACE
            while child.alive() and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            if child.alive():
                with contextlib.suppress(ProcessLookupError):
                    child.process.kill()
        return child.process.wait()

    def stop_all(self) -> None:
        """End every child still running, newest first, and wait for each (not async: this
        runs on the way out, whatever happened)."""
        for child in reversed(self.started):
            child.needed = False
            if child.alive():
                with contextlib.suppress(ProcessLookupError):
                    child.process.send_signal(signal.SIGTERM)
        for child in reversed(self.started):
            try:
                child.process.wait(timeout=GRACE)
            except subprocess.TimeoutExpired:
                child.process.kill()
                child.process.wait()


async def until(
    ready: Callable[[], bool],
    *,
    what: str,
    children: Children,
    timeout: float = 120.0,
    blame: Child | None = None,
) -> None:
    """Poll ``ready`` (in a thread: it may read the archive) until true; :class:`DemoError`
    when a child dies meanwhile or after ``timeout`` seconds (naming ``blame``'s log)."""
    deadline = time.monotonic() + timeout
    while not await asyncio.to_thread(ready):
        children.check()
        if time.monotonic() > deadline:
            tail = f"; the last lines of {blame.log}:\n{blame.tail()}" if blame else ""
            raise DemoError(f"{what} did not happen within {timeout:.0f} s{tail}")
        await asyncio.sleep(0.2)


async def command(
    args: Sequence[str],
    *,
    width: int = 120,
    ok: Sequence[int] = (0,),
    env: dict[str, str] | None = None,
    program: Sequence[str] = KUBEMEDIC,
) -> tuple[int, str, str]:
    """Run a short command (``kubemedic ARGS`` unless ``program`` names another) to its end
    without blocking the event loop: (status, stdout, stderr). A status not in ``ok`` is a
    :class:`DemoError` with its stderr. Cancelled, it kills the command."""
    process = await asyncio.create_subprocess_exec(
        *program,
        *args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "COLUMNS": str(max(width, 100)), **(env or {})},
        process_group=0,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=300)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        raise
    status = process.returncode
    assert status is not None
    shown = " ".join(args)
    if status not in ok:
        name = "kubemedic" if program is KUBEMEDIC else Path(program[0]).name
        raise DemoError(
            f"{name} {shown} failed (status {status}): {err.decode(errors='replace').strip()}"
        )
    return status, out.decode(errors="replace"), err.decode(errors="replace")
