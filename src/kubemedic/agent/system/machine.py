"""The real host: :class:`SystemHost`, the :class:`~kubemedic.agent.host.Host` of a node.

Every call is bounded: ``systemctl`` by the settings' timeouts, probes by the caller's. A call
that cannot be carried out raises :class:`~kubemedic.agent.host.HostError` naming the command or
file and why; a probe never raises for an unhealthy daemon.

The boot ID is read from ``/proc/sys/kernel/random/boot_id``, which the kernel does not
namespace: a container reads its host's, with no mount. A reboot is the settings'
``reboot_command`` (``systemctl reboot``: it returns once the reboot job is queued, and the
machine goes down after). Whether it happened is for the caller to see in the next boot ID.
"""

from __future__ import annotations

import re

from kubemedic.agent.host import HostError, Probe, UnitStatus
from kubemedic.agent.system import cri, healthz, running
from kubemedic.agent.system.settings import SystemSettings
from kubemedic.agent.system.systemd import Systemctl

__all__ = ["SystemHost"]

_BOOT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class SystemHost:
    """The node this process runs on (or whose systemd ``settings.command_prefix`` reaches).

    Implements :class:`kubemedic.agent.host.Host`. Only ``settings.kubelet_unit`` and
    ``settings.runtime_unit`` are restarted; any other unit is refused, whoever asks."""

    def __init__(self, settings: SystemSettings | None = None) -> None:
        self.settings = settings or SystemSettings()
        self.systemctl = Systemctl(
            program=self.settings.systemctl,
            prefix=self.settings.command_prefix,
            query_timeout=self.settings.query_timeout,
            restart_timeout=self.settings.restart_timeout,
        )

    def unit_status(self, unit: str) -> UnitStatus:
        """``systemctl show`` of ``unit`` (:func:`kubemedic.agent.system.systemd.parse_show`)."""
        return self.systemctl.show(unit)

    def restart_unit(self, unit: str) -> None:
        """``systemctl restart -- unit``, waiting for its start job; only the kubelet's and the
        runtime's units (:attr:`SystemSettings.restartable_units`)."""
        allowed = self.settings.restartable_units
        if unit not in allowed:
            raise HostError(
                f"refusing to restart {unit[:200]!r}: this host restarts only "
                + " and ".join(sorted(allowed))
            )
        self.systemctl.restart(unit)

    def probe_runtime(self, timeout: float) -> Probe:
        """The CRI's ``ListPodSandbox`` on ``settings.cri_endpoint`` (:mod:`.cri`)."""
        return cri.probe_cri(self.settings.cri_socket, timeout)

    def probe_kubelet(self, timeout: float) -> Probe:
        """``GET settings.kubelet_healthz_url`` (:mod:`.healthz`)."""
        return healthz.probe_healthz(self.settings.kubelet_healthz_url, timeout)

    def boot_id(self) -> str:
        """The kernel's boot ID (a lowercase UUID, new at every boot)."""
        path = self.settings.boot_id_path
        try:
            text = path.read_text(encoding="ascii", errors="replace").strip()
        except OSError as exc:
            raise HostError(f"cannot read the boot ID from {path}: {exc.strerror or exc}") from exc
        if not _BOOT_ID.fullmatch(text):
            raise HostError(f"{path} holds {text[:60]!r}, not a boot ID (a UUID)")
        return text

    def reboot(self) -> None:
        """Run ``settings.reboot_command`` (after ``settings.command_prefix``, in systemctl's
        environment); returns when it exits with status 0, which for ``systemctl reboot`` means
        the reboot job is queued."""
        argv = [*self.settings.command_prefix, *self.settings.reboot_command]
        running.run(argv, timeout=self.settings.reboot_timeout, env=Systemctl.environment())
