"""A configured command as the provider (``repair.provider: exec``).

Each action runs ``repair.exec.command`` (a list: the program and its own arguments) with six
more arguments, each its own argv entry::

    COMMAND... --node NAME --provider-id ID --action ACTION

``ACTION`` is ``reboot``, ``power-on``, ``replace`` or ``status``. The command is started
directly, never through a shell, so nothing in a node name or a provider ID is ever parsed as
shell syntax; a value that begins with ``-`` (which the command's option parser could take for
an option) is refused before anything runs. Standard input is empty; the environment is the
controller's.

Exit status 0 means done. Any other status is a :class:`ProviderError` naming the status and
the last line the command wrote to standard error. A command still running after the timeout
(``ProviderContext.timeout``, from ``repair.exec.timeout``) is killed with its whole process
group and the action fails. ``status`` prints the machine's power on standard output: its first
word is ``on``, ``off``, ``rebooting`` or ``absent``; anything else reads as ``unknown``.

At most the last 64 KiB of each output stream is kept, so a chatty command cannot fill the
controller's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence
from datetime import timedelta

from kubemedic.model.timing import human_duration
from kubemedic.repair.policy.records import Action, Power
from kubemedic.repair.providers.base import ProviderContext, ProviderError, Target

__all__ = ["ExecProvider", "make"]

#: How much of each output stream is kept (the tail).
KEEP_BYTES = 64 * 1024
_READ_CHUNK = 8192


async def _tail(stream: asyncio.StreamReader | None) -> bytes:
    """Read ``stream`` to its end, keeping the last :data:`KEEP_BYTES`."""
    if stream is None:
        return b""
    kept = bytearray()
    while chunk := await stream.read(_READ_CHUNK):
        kept += chunk
        if len(kept) > KEEP_BYTES:
            del kept[: len(kept) - KEEP_BYTES]
    return bytes(kept)


def _last_line(data: bytes) -> str:
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return last[:300]


def _kill_group(process: asyncio.subprocess.Process) -> None:
    """Kill the process and everything it started (it leads its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


class ExecProvider:
    """Run a configured command for each action."""

    name = "exec"
    actions = frozenset({Action.REBOOT, Action.POWER_ON, Action.REPLACE})
    #: Whether ``power`` can answer anything but UNKNOWN (the controller asks only then).
    tells_power = True

    def __init__(self, *, command: Sequence[str], timeout: timedelta) -> None:
        if not command or not command[0]:
            raise ProviderError("the exec provider needs repair.exec.command (a program to run)")
        self.command = tuple(command)
        self.timeout = timeout

    def argv(self, target: Target, action: str) -> list[str]:
        """The command line for ``action`` on ``target``; ``ProviderError`` for a value the
        command could take for an option."""
        for what, value in (("node name", target.node), ("provider ID", target.provider_id)):
            if value.startswith("-"):
                raise ProviderError(f"node {target.node!r}: refusing a {what} that begins with '-'")
        return [
            *self.command,
            "--node",
            target.node,
            "--provider-id",
            target.provider_id,
            "--action",
            action,
        ]

    async def run(self, target: Target, action: str) -> str:
        """Run the command for ``action``; its standard output (the kept tail) when it exits
        with status 0, else ``ProviderError``."""
        argv = self.argv(target, action)
        where = f"node {target.node}: {self.command[0]} --action {action}"
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ProviderError(f"{where} could not be started: {exc.strerror or exc}") from exc
        try:
            async with asyncio.timeout(self.timeout.total_seconds()):
                out, err = await asyncio.gather(_tail(process.stdout), _tail(process.stderr))
                status = await process.wait()
        except TimeoutError:
            _kill_group(process)
            await process.wait()
            limit = human_duration(self.timeout.total_seconds())
            raise ProviderError(f"{where} did not finish within {limit} and was killed") from None
        finally:
            if process.returncode is None:  # cancelled: leave nothing running
                _kill_group(process)
                with contextlib.suppress(ProcessLookupError):
                    await process.wait()
        if status != 0:
            said = _last_line(err)
            raise ProviderError(
                f"{where} exited with status {status}" + (f": {said}" if said else "")
            )
        return out.decode("utf-8", "replace")

    async def power(self, target: Target) -> Power:
        words = (await self.run(target, "status")).split()
        try:
            return Power(words[0].lower()) if words else Power.UNKNOWN
        except ValueError:
            return Power.UNKNOWN

    async def reboot(self, target: Target) -> str:
        return self._said(await self.run(target, "reboot"), "reboot")

    async def power_on(self, target: Target) -> str:
        return self._said(await self.run(target, "power-on"), "power-on")

    async def replace(self, target: Target) -> str:
        return self._said(await self.run(target, "replace"), "replace")

    def _said(self, out: str, action: str) -> str:
        last = _last_line(out.encode())
        return f"{self.command[0]} --action {action}: done" + (f": {last}" if last else "")

    async def close(self) -> None:
        return None


def make(context: ProviderContext) -> ExecProvider:
    """The ``exec`` provider: the command is ``repair.exec.command`` of the settings (or
    ``context.extra["command"]``), the timeout ``context.timeout``."""
    configured = getattr(getattr(context.settings, "exec", None), "command", None)
    command: Sequence[str] = context.extra.get("command") or configured or ()
    return ExecProvider(command=tuple(command), timeout=context.timeout)
