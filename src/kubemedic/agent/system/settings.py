"""Where the real host's things are, and how long each call on them may take.

The defaults fit a kubeadm node with containerd, the agent running in a privileged DaemonSet
with ``hostPID: true``. Reaching the host's systemd from inside a container takes one of two
things (docs/agent.md ("Host access")):

- ``command_prefix = ("nsenter", "--target", "1", "--mount", "--")``: each ``systemctl`` (and
  the reboot command) runs in the host's mount namespace, so it finds the host's binary, its
  unit files and ``/run/systemd/private``; needs ``hostPID`` and ``CAP_SYS_ADMIN``;
- or an empty prefix and the host's ``/run/systemd`` (plus ``/var/run/dbus`` for ``systemctl``'s
  fallback to the system bus) mounted at the same paths in an image that ships ``systemctl``.

cri-o's socket is ``unix:///var/run/crio/crio.sock`` (``runtime_unit="crio.service"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

from kubemedic.agent.system.systemd import unit_name_problem
from kubemedic.errors import InputError

__all__ = ["CONTAINERD_SOCKET", "CRIO_SOCKET", "SystemSettings", "SystemSettingsError"]

CONTAINERD_SOCKET = "unix:///run/containerd/containerd.sock"
CRIO_SOCKET = "unix:///var/run/crio/crio.sock"


class SystemSettingsError(InputError, ValueError):
    """A :class:`SystemSettings` value cannot be used (the message names the field and value)."""


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"


@dataclass(frozen=True, slots=True)
class SystemSettings:
    """The real host's settings; every field has the default a kubeadm + containerd node needs.

    ``kubelet_unit`` and ``runtime_unit`` are the only units :meth:`SystemHost.restart_unit
    <kubemedic.agent.system.machine.SystemHost.restart_unit>` will restart. ``cri_endpoint`` is
    crictl's ``--runtime-endpoint`` form (``unix:///path``; a bare absolute path is read as a
    unix socket). ``command_prefix`` goes before ``systemctl`` (the program and its global
    options: ``("systemctl", "--user")`` reaches a user manager) and before ``reboot_command``.
    ``query_timeout`` bounds ``systemctl show``, ``restart_timeout`` a ``systemctl restart``
    (which waits for the unit's start job, so it should exceed the unit's ``TimeoutStartSec``,
    90 s by default), ``reboot_timeout`` the reboot command (``systemctl reboot`` returns once
    the reboot job is queued). Probes take their timeout from the caller."""

    kubelet_unit: str = "kubelet.service"
    runtime_unit: str = "containerd.service"
    cri_endpoint: str = CONTAINERD_SOCKET
    kubelet_healthz_url: str = "http://127.0.0.1:10248/healthz"
    command_prefix: tuple[str, ...] = ()
    systemctl: tuple[str, ...] = ("systemctl",)
    reboot_command: tuple[str, ...] = ("systemctl", "reboot")
    boot_id_path: Path = Path("/proc/sys/kernel/random/boot_id")
    query_timeout: timedelta = timedelta(seconds=10)
    restart_timeout: timedelta = timedelta(minutes=2)
    reboot_timeout: timedelta = timedelta(minutes=1)

    def __post_init__(self) -> None:
        units = (("kubelet_unit", self.kubelet_unit), ("runtime_unit", self.runtime_unit))
        for field, unit in units:
            problem = unit_name_problem(unit)
            if problem:
                raise SystemSettingsError(f"{field} {_shown(unit)}: {problem}")
        self.cri_socket  # noqa: B018 - validates cri_endpoint
        url = urlsplit(self.kubelet_healthz_url)
        try:
            port = url.port
        except ValueError:
            port = None
        if url.scheme != "http" or not url.hostname or port is None:
            raise SystemSettingsError(
                f"kubelet_healthz_url {_shown(self.kubelet_healthz_url)}: expected an http URL "
                "with a host and a port, such as http://127.0.0.1:10248/healthz"
            )
        if not self.systemctl or not self.systemctl[0]:
            raise SystemSettingsError(
                f"systemctl {_shown(self.systemctl)}: expected the program and its options, "
                "such as ['systemctl']"
            )
        if not self.reboot_command or not self.reboot_command[0]:
            raise SystemSettingsError(
                f"reboot_command {_shown(self.reboot_command)}: expected a program and its "
                "arguments, such as ['systemctl', 'reboot']"
            )
        if any(not part for part in self.command_prefix):
            raise SystemSettingsError(
                f"command_prefix {_shown(self.command_prefix)}: an empty argument; expected "
                "such as ['nsenter', '--target', '1', '--mount', '--'] or []"
            )
        for field, limit in (
            ("query_timeout", self.query_timeout),
            ("restart_timeout", self.restart_timeout),
            ("reboot_timeout", self.reboot_timeout),
        ):
            if limit <= timedelta(0):
                raise SystemSettingsError(f"{field} {limit}: expected a positive duration")

    @property
    def cri_socket(self) -> Path:
        """The CRI socket's path (``cri_endpoint`` without ``unix://``)."""
        endpoint = self.cri_endpoint
        path = endpoint.removeprefix("unix://")
        if not path.startswith("/") or "://" in path or "\x00" in path:
            raise SystemSettingsError(
                f"cri_endpoint {_shown(endpoint)}: expected a unix socket such as "
                f"{CONTAINERD_SOCKET} or {CRIO_SOCKET}"
            )
        return Path(path)

    @property
    def restartable_units(self) -> frozenset[str]:
        """The units the host restarts: the kubelet's and the container runtime's."""
        return frozenset({self.kubelet_unit, self.runtime_unit})
