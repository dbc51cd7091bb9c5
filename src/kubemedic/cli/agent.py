"""``kubemedic agent``: the node agent (docs/agent.md), one per node as a DaemonSet.

It checks the kubelet and the container runtime with health-monitor.sh's timings, restarts a
failing one within limits (cooldown, back-off, give-up), reports the conditions
``KubemedicAgentReady``, ``KubeletUnhealthy`` and ``ContainerRuntimeUnhealthy`` and Events on its
Node, and carries out the repair controller's requests under the contract of docs/repair.md.
``--once`` runs one round and prints it (exit 1 when a daemon is unhealthy), for a person
checking a node by hand.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kubemedic.cli._common import (
    ContextOption,
    KubeconfigOption,
    _fail,
    configure_logging,
    listen_address,
    out_console,
)

if TYPE_CHECKING:
    from kubemedic.agent.host import Host
    from kubemedic.agent.running import Round
    from kubemedic.agent.settings import AgentConfig

__all__ = ["register"]


def agent(
    *,
    node: Annotated[
        str | None,
        typer.Option(help="This node's name (default: $NODE_NAME, the Pod's spec.nodeName)."),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option("--config", "-c", help="YAML file with an agent: section (docs/agent.md)."),
    ] = None,
    kubeconfig: KubeconfigOption = None,
    context: ContextOption = None,
    listen: Annotated[
        str, typer.Option(help="Address of /metrics and /healthz (HOST:PORT).")
    ] = "0.0.0.0:9810",
    once: Annotated[
        bool, typer.Option("--once", help="Run one round, print it, and exit.")
    ] = False,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Run the node agent: health checks, self-repair, conditions and the controller's
    requests, on this node."""
    import asyncio  # noqa: PLC0415 - loaded when it runs

    from kubemedic import config as configuration  # noqa: PLC0415
    from kubemedic.agent import settings as agent_settings  # noqa: PLC0415
    from kubemedic.agent.running import AgentOptions, run_agent  # noqa: PLC0415
    from kubemedic.kube.config import KubeAccessError  # noqa: PLC0415

    configure_logging(log_level, quiet=("aiohttp.access",))
    name = node or os.environ.get("NODE_NAME", "")
    if not name:
        raise _fail("--node: give this node's name (or set NODE_NAME)")
    host_text, port = listen_address(listen, example="0.0.0.0:9810")
    settings = agent_settings.AgentConfig()
    if config is not None:
        try:
            settings = agent_settings.load(configuration.load_settings(config))
        except configuration.ConfigError as error:
            raise _fail(f"--config {error}") from None
    options = AgentOptions(
        node=name,
        config=settings,
        kubeconfig=kubeconfig,
        context=context,
        listen_host=host_text,
        listen_port=port,
        identity=os.environ.get("POD_NAME") or socket.gethostname(),
        once=once,
    )
    try:
        done = asyncio.run(run_agent(options, host=_system_host))
    except KubeAccessError as error:
        raise _fail(str(error)) from None
    if done is not None:
        raise typer.Exit(_print(done))


def _system_host(config: AgentConfig) -> Host:
    from kubemedic.agent.system import SystemHost, SystemSettings  # noqa: PLC0415

    return SystemHost(
        SystemSettings(
            kubelet_unit=config.kubelet.unit,
            runtime_unit=config.runtime.unit,
            cri_endpoint=config.runtime.socket,
            kubelet_healthz_url=config.kubelet.healthz_url,
            command_prefix=config.host.command_prefix,
            reboot_command=config.host.reboot_command,
            boot_id_path=Path(config.host.boot_id_path),
        )
    )


def _print(done: Round) -> int:
    console = out_console()
    unhealthy = False
    for name, verdict in done.verdicts.items():
        condition = verdict.condition
        unhealthy |= condition.status == "True"
        console.print(
            f"{name}: {condition.type}={condition.status} ({condition.reason}): "
            f"{condition.message}; {verdict.act}: {verdict.reason}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    if done.answer is not None:
        answer = done.answer
        console.print(
            f"request {answer.id} ({answer.action}): {answer.state}: {answer.message}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return 1 if unhealthy else 0


def register(app: typer.Typer) -> None:
    """Add ``agent`` to ``app``."""
    app.command(name="agent")(agent)
