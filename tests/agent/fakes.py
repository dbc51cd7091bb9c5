"""A host for the agent's tests: daemons that hang, restarts that cure or do not, reboots.

Everything the agent does to the host is recorded (``restarted``, ``reboots``), so a test asserts
what was done, and the daemons' health follows what was done: a restart cures a hung daemon when
``cures`` says so and starts its unit anew at the host's time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from kubemedic.agent.host import HostError, Probe, UnitStatus


@dataclass
class FakeDaemon:
    unit: str
    healthy: bool = True
    active: bool = True
    started_at: datetime | None = None
    #: A restart makes the daemon healthy.
    cures: bool = True


@dataclass
class FakeHost:
    now: Callable[[], datetime]
    kubelet: FakeDaemon = field(default_factory=lambda: FakeDaemon("kubelet.service"))
    runtime: FakeDaemon = field(default_factory=lambda: FakeDaemon("containerd.service"))
    boot: str = "9d1c6a3e-1b7f-4c55-a0a4-0d7b3c1f2e11"
    restart_fails: bool = False
    reboot_fails: bool = False
    restarted: list[str] = field(default_factory=list)
    reboots: int = 0

    def _daemon(self, unit: str) -> FakeDaemon:
        for daemon in (self.kubelet, self.runtime):
            if daemon.unit == unit:
                return daemon
        raise HostError(f"systemctl show {unit}: Unit {unit} could not be found.")

    def unit_status(self, unit: str) -> UnitStatus:
        daemon = self._daemon(unit)
        return UnitStatus(
            unit,
            "active" if daemon.active else "inactive",
            "running" if daemon.active else "dead",
            started_at=daemon.started_at,
            active_since=daemon.started_at,
        )

    def restart_unit(self, unit: str) -> None:
        daemon = self._daemon(unit)
        if self.restart_fails:
            raise HostError(f"systemctl restart {unit}: exit status 1: Job failed.")
        self.restarted.append(unit)
        daemon.started_at = self.now()
        daemon.active = True
        if daemon.cures:
            daemon.healthy = True

    def probe_runtime(self, timeout: float) -> Probe:
        del timeout
        ok = self.runtime.healthy
        return Probe(ok, "ok" if ok else "DEADLINE_EXCEEDED: no answer in 60s")

    def probe_kubelet(self, timeout: float) -> Probe:
        del timeout
        if not self.kubelet.active:
            return Probe(False, "connection refused")
        ok = self.kubelet.healthy
        return Probe(ok, "ok" if ok else "timed out after 10s")

    def boot_id(self) -> str:
        return self.boot

    def reboot(self) -> None:
        if self.reboot_fails:
            raise HostError("systemctl reboot: exit status 1: Access denied")
        self.reboots += 1
