"""The agent's HTTP endpoints: ``/metrics`` (Prometheus) and ``/healthz`` (the liveness probe).

Both are read-only and carry nothing secret. ``/healthz`` answers ``200 ok`` while the checks
run (the last one within three periods, or the start delay not over), else ``503``, so the
kubelet restarts an agent whose loop is stuck. The address is ``agent --listen`` (default
``0.0.0.0:9810``: on the host network, where Prometheus scrapes the node).
"""

from __future__ import annotations

from aiohttp import web

from kubemedic.agent.daemon import Agent

__all__ = ["serve"]


async def serve(agent: Agent, host: str, port: int) -> web.AppRunner:
    """Start serving ``agent``'s endpoints; the caller ends it with ``runner.cleanup()``."""

    async def metrics(_: web.Request) -> web.Response:
        return web.Response(
            body=agent.metrics.exposition(),
            headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
        )

    async def healthz(_: web.Request) -> web.Response:
        if agent.healthy():
            return web.Response(text="ok")
        return web.Response(status=503, text="the agent's checks have stopped")

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/healthz", healthz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
