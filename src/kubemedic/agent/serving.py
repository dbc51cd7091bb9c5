"""The agent's HTTP endpoints: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``
(:mod:`kubemedic.kube.endpoints`).

All are read-only and carry nothing secret. ``/healthz`` (and ``/readyz``, the same question)
answers ``200 ok`` while the checks run (the last one within three periods, or the start delay
not over), else ``503``, so the kubelet restarts an agent whose loop is stuck. The address is
``agent --listen`` (default ``0.0.0.0:9810``: on the host network, where Prometheus scrapes the
node).
"""

from __future__ import annotations

from aiohttp import web

from kubemedic.agent.daemon import Agent
from kubemedic.kube import endpoints

__all__ = ["serve"]


async def serve(agent: Agent, host: str, port: int) -> web.AppRunner:
    """Start serving ``agent``'s endpoints; the caller ends it with ``runner.cleanup()``."""

    def healthy() -> str | None:
        return None if agent.healthy() else "the agent's checks have stopped"

    return await endpoints.serve(host, port, registry=agent.metrics.registry, healthy=healthy)
