"""The one typed interface through which the agent touches its host.

Every host command the agent runs goes through a :class:`Host`: the state of a systemd unit and
its restart, the container runtime's CRI, the kubelet's health endpoint, a reboot, and the boot
ID. The agent's logic never runs a process or opens a socket itself, so tests run it against a
fake host, and the real implementation (:mod:`kubemedic.agent.system`) is tested on its own
where the machine has the real thing.

The calls block (a ``systemctl`` process, a gRPC call, an HTTP request); the agent runs them in a
worker thread. A call that cannot be made raises :class:`HostError` naming what failed; a probe
never raises for an unhealthy daemon: it returns a :class:`Probe` saying so.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from kubemedic.errors import KubemedicError

__all__ = ["Host", "HostError", "Probe", "UnitStatus"]


class HostError(KubemedicError):
    """A host command could not be carried out (the message names the command and why)."""


@dataclass(frozen=True)
class UnitStatus:
    """What systemd says of one unit (``systemctl show``'s properties of the same names).

    ``started_at`` is ``InactiveExitTimestamp`` (when the unit last left ``inactive``: the start
    of its current run, node-problem-detector's uptime), ``active_since`` is
    ``ActiveEnterTimestamp``; either is None when systemd has none (never started)."""

    unit: str
    active_state: str
    sub_state: str = ""
    started_at: datetime | None = None
    active_since: datetime | None = None
    restarts: int = 0
    main_pid: int = 0

    @property
    def active(self) -> bool:
        return self.active_state == "active"


@dataclass(frozen=True)
class Probe:
    """One health check: ``healthy``, and in words what was seen (``detail``: "ok", "HTTP 500",
    "connection refused", "timed out after 10s")."""

    healthy: bool
    detail: str = ""


class Host(Protocol):
    """The node's host, as the agent sees it. Unit names are systemd's (``kubelet.service``)."""

    def unit_status(self, unit: str) -> UnitStatus:
        """The unit's state; :class:`HostError` when systemd cannot be asked."""
        ...

    def restart_unit(self, unit: str) -> None:
        """Restart the unit (``systemctl restart``); :class:`HostError` when it fails."""
        ...

    def probe_runtime(self, timeout: float) -> Probe:
        """Is the container runtime answering on its CRI socket (as ``crictl pods``)?"""
        ...

    def probe_kubelet(self, timeout: float) -> Probe:
        """Does the kubelet's health endpoint (``GET /healthz``, port 10248) answer ``ok``?"""
        ...

    def boot_id(self) -> str:
        """``/proc/sys/kernel/random/boot_id``: a new value after every boot."""
        ...

    def reboot(self) -> None:
        """Reboot the machine (returns when the reboot was started, or raises)."""
        ...
