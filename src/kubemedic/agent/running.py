"""``kubemedic agent``'s process: connect, check the Node exists, serve the endpoints, run.

At start, what cannot work ends the agent at once with the reason (exit 2): an unreadable
kubeconfig (in a Pod, the ServiceAccount's token), an API server that refuses, a Node that does
not exist (``--node``, from the Pod's ``spec.nodeName`` through the downward API), a port that is
taken. Once running, a lost API server is retried with back-off while the checks and self-repair
go on (self-repair needs no API server: it is what keeps a node alive when the control plane is
away).

``--once`` runs one round and prints it: each daemon checked at once (no start delay), the
conditions written, the Node's request judged, for an operator checking a node by hand.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kubemedic import __version__
from kubemedic.agent.daemon import Agent, Answer
from kubemedic.agent.host import Host
from kubemedic.agent.policy import Verdict
from kubemedic.agent.serving import serve
from kubemedic.agent.settings import AgentConfig
from kubemedic.kube import config as kubeconfig
from kubemedic.kube.api import NotFound
from kubemedic.kube.config import KubeAccessError

__all__ = ["AgentOptions", "Round", "run_agent"]

LOG = logging.getLogger("kubemedic.agent")


@dataclass(frozen=True)
class AgentOptions:
    node: str
    config: AgentConfig
    kubeconfig: Path | None = None
    context: str | None = None
    listen_host: str = "0.0.0.0"  # noqa: S104 - on the node's network, for Prometheus
    listen_port: int = 9810
    identity: str = ""
    once: bool = False


@dataclass(frozen=True)
class Round:
    """What ``--once`` did."""

    verdicts: dict[str, Verdict]
    answer: Answer | None


async def run_agent(options: AgentOptions, *, host: Callable[[AgentConfig], Host]) -> Round | None:
    """Run the agent until cancelled (or one round with ``once``)."""
    resolved = kubeconfig.resolve(options.kubeconfig, options.context)
    api = kubeconfig.connect(resolved)
    try:
        await kubeconfig.probe(api, resolved)
        try:
            node = await api.request("GET", f"/api/v1/nodes/{options.node}")
        except NotFound:
            raise KubeAccessError(
                f"node {options.node!r} does not exist on {resolved.server} (--node, or "
                "NODE_NAME from the Pod's spec.nodeName)"
            ) from None
        agent = Agent(
            api=api,
            host=host(options.config),
            node=options.node,
            config=options.config,
            identity=options.identity,
            version=__version__,
        )
        if options.once:
            verdicts = {name: await agent.check(name) for name in agent.rules}
            await agent.report(force=True)
            answer = await agent.handle(agent.node_body or node)
            return Round(verdicts, answer)
        try:
            runner = await serve(agent, options.listen_host, options.listen_port)
        except OSError as error:
            raise KubeAccessError(
                f"--listen {options.listen_host}:{options.listen_port}: cannot serve: "
                f"{error.strerror or error}"
            ) from None
        LOG.info(
            "agent for node %s: /metrics and /healthz on %s:%d",
            options.node,
            options.listen_host,
            options.listen_port,
        )
        try:
            await agent.run()
        finally:
            await runner.cleanup()
        return None
    finally:
        await asyncio.shield(api.close())
