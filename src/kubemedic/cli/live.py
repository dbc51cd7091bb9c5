"""Reading a live cluster for ``kubemedic scan`` (no subcommands of its own).

``read_cluster`` resolves the kubeconfig as kubectl does, checks the server answers, lists what
the checks read and closes the connection; every failure is a ``KubeAccessError`` whose message
names the file, context or server at fault (``scan`` prints it and exits 2).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

import typer

from kubemedic.kube import config as kubeconfig
from kubemedic.kube import snapshot

__all__ = ["LiveScan", "read_cluster", "register"]


@dataclass(frozen=True, slots=True)
class LiveScan:
    resolved: kubeconfig.Resolved
    snapshot: snapshot.LiveSnapshot


def read_cluster(
    kubeconfig_path: Path | None, context: str | None, *, timeout: float = 10.0
) -> LiveScan:
    """Resolve, connect, probe and list once (blocking)."""
    resolved = kubeconfig.resolve(kubeconfig_path, context)
    return asyncio.run(_read(resolved, timeout=timeout))


async def _read(resolved: kubeconfig.Resolved, *, timeout: float) -> LiveScan:
    api = kubeconfig.connect(resolved, timeout=timeout)
    try:
        await kubeconfig.probe(api, resolved, timeout=timeout)
        return LiveScan(resolved, await snapshot.fetch(api))
    finally:
        await api.close()


def register(app: typer.Typer) -> None:
    """Add this module's commands to ``app`` (none: live access is ``scan``'s default)."""
