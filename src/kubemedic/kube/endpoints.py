"""The HTTP endpoints a kubemedic process serves beside its work: ``/metrics``, ``/healthz`` and
``/readyz`` (aiohttp, in the process's own event loop).

* ``GET /metrics``: the process's Prometheus registry in the text exposition format (one
  registry per process, never the library's global one, so tests and several processes in one
  interpreter do not mix their series);
* ``GET /healthz``: the liveness probe. ``200 ok`` while ``healthy()`` says nothing is wrong,
  else ``503`` and the reason: the kubelet restarts the container after ``failureThreshold``
  of those. The handler runs in the same event loop as the process's work, so a wedged loop
  answers nothing at all and the probe's ``timeoutSeconds`` fails it the same way;
* ``GET /readyz``: the readiness probe. ``200 ok`` while ``ready()`` says nothing is wrong,
  else ``503`` and the reason: a Service sends nothing to a Pod that is not ready, and a
  rolling update waits for it.

Everything served is read-only and carries nothing secret. ``routes`` adds a process's own
handlers (the guard's ``POST /validate``); ``ssl_context`` serves HTTPS.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable, Sequence

from aiohttp import web
from prometheus_client import CollectorRegistry, generate_latest

__all__ = ["EXPOSITION", "Check", "bound_port", "serve"]

EXPOSITION = "text/plain; version=0.0.4; charset=utf-8"
"""The Content-Type of Prometheus' text format, as Prometheus asks for it."""

Check = Callable[[], str | None]
"""A probe's question: None when all is well, else the sentence served with the ``503``."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _probe(check: Check) -> Handler:
    async def handle(_: web.Request) -> web.Response:
        problem = check()
        if problem is None:
            return web.Response(text="ok")
        return web.Response(status=503, text=problem)

    return handle


def _always() -> str | None:
    return None


async def serve(
    host: str,
    port: int,
    *,
    registry: CollectorRegistry,
    healthy: Check = _always,
    ready: Check | None = None,
    routes: Sequence[tuple[str, str, Handler]] = (),
    ssl_context: ssl.SSLContext | None = None,
    client_max_size: int = 1024**2,
) -> web.AppRunner:
    """Start serving on ``host:port`` (port 0: any free one, see :func:`bound_port`); the caller
    ends it with ``runner.cleanup()``. ``ready`` defaults to ``healthy``. ``routes`` are
    ``(method, path, handler)``. ``OSError`` when the address cannot be bound."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(body=generate_latest(registry), headers={"Content-Type": EXPOSITION})

    app = web.Application(client_max_size=client_max_size)
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", _probe(healthy))
    app.router.add_get("/readyz", _probe(ready or healthy))
    for method, path, handler in routes:
        app.router.add_route(method, path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port, ssl_context=ssl_context).start()
    except BaseException:
        await runner.cleanup()
        raise
    return runner


def bound_port(runner: web.AppRunner) -> int:
    """The port ``runner`` listens on (the one chosen when asked for port 0)."""
    address = runner.addresses[0]
    return int(address[1])
