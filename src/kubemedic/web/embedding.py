"""The dashboard inside another program's event loop (``kubemedic run --web``).

``start`` binds the address at once (so a port in use is an error naming the flag, before the
program goes on), then runs uvicorn's server as a task of the running loop over the program's
own open archive; ``Dashboard.stop`` asks it to finish its requests and waits for it. The same
rule as ``kubemedic web`` applies (``serving.check_listen``). The host program owns the
process's signals: this server installs no handler of its own, and stops when told.

The dashboard's requests run in the loop's worker threads (the pages read the archive with
blocking calls); grouping the incidents of a large archive for the first time holds the
interpreter for seconds, which the host's loop shares.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator

import uvicorn

from kubemedic.store.db import Archive
from kubemedic.web.app import create_app
from kubemedic.web.serving import WebError, check_listen

__all__ = ["Dashboard", "start"]

log = logging.getLogger("kubemedic.web")

GRACE = 5.0
"""Seconds the server gives open requests when stopping."""


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: the host program's stop stops it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Dashboard:
    """A dashboard served by a task of the running loop."""

    def __init__(self, server: uvicorn.Server, task: asyncio.Task[None], port: int) -> None:
        self._server = server
        self._task = task
        self.port = port
        """The port it listens on (the one asked for, or the one given for port 0)."""

    @property
    def done(self) -> bool:
        return self._task.done()

    async def stop(self) -> None:
        """Finish open requests (at most ``GRACE`` seconds) and stop listening."""
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), timeout=GRACE + 5)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def start(
    archive: Archive,
    *,
    host: str,
    port: int,
    token: str | None,
    cluster: str | None = None,
    flag: str = "--web",
) -> Dashboard:
    """Serve the dashboard over ``archive`` on ``host:port`` from the running loop;
    ``WebError`` naming ``flag`` when the address is refused or cannot be bound."""
    check_listen(
        host,
        token,
        flag=flag,
        file_flag=f"{flag}-token-file",
        example=f"{flag} 127.0.0.1:{port}",
    )
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        bound = socket.create_server((host, port), family=family)
    except OSError as error:
        raise WebError(
            f"{flag} {host}:{port}: cannot serve the dashboard: {error.strerror or error}"
        ) from None
    config = uvicorn.Config(
        create_app(archive, token=token, cluster=cluster),
        log_config=None,  # the host's logging stays as it is; uvicorn's loggers propagate
        log_level="warning",
        access_log=False,
        lifespan="off",
        timeout_graceful_shutdown=int(GRACE),
    )
    server = _Server(config)
    task = asyncio.get_running_loop().create_task(server.serve(sockets=[bound]))
    while not server.started and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        bound.close()
        failure = task.exception()
        raise WebError(f"{flag} {host}:{port}: the dashboard did not start ({failure})")
    actual = int(bound.getsockname()[1])
    guarded = " (token required)" if token is not None else ""
    shown = f"[{host}]" if ":" in host else host
    log.info("dashboard on http://%s:%d/%s over %s", shown, actual, guarded, archive.url)
    return Dashboard(server, task, actual)
