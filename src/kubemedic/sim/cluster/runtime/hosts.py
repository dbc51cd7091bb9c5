"""The machines under the nodes: what a kubelet runs on, and what breaks.

A :class:`Host` is the simulator's stand-in for one VM or server: whether it is powered, whether
the node can reach the API server, and the state of the two daemons that make it a node (the
kubelet and the container runtime). Faults are set here (by scenarios, by tests, through the
infrastructure provider) and the kubelet acts on them:

- ``kubelet="stopped"``: no heartbeats, no status updates (the node goes ``Unknown`` after the
  grace period); ``"hung"``: the process is alive but does nothing (same outside view);
- ``runtime="hung"``: the kubelet keeps posting status but reports ``Ready=False`` with
  ``container runtime is down`` and starts no containers;
- ``misconfig``: ``"transient"`` is undone by a reboot (it lived in memory or on a tmpfs
  overlay), ``"persistent"`` survives reboots (written to disk); either makes the kubelet report
  ``Ready=False`` (``KubeletNotReady``);
- ``reachable=False``: a network or control-plane fault; the kubelet runs but cannot post.

A reboot takes ``boot_seconds`` of cluster time, gives the host a new ``bootID`` (as
``/proc/sys/kernel/random/boot_id`` changes), restarts both daemons and clears transient
misconfiguration; it does not fix persistent misconfiguration or unreachability.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

__all__ = ["Host", "Hosts"]

DaemonState = Literal["running", "stopped", "hung"]
RuntimeState = Literal["running", "hung"]
Misconfig = Literal["", "transient", "persistent"]


@dataclass
class Host:
    name: str
    #: Where new boot IDs come from (seeded by :class:`Hosts`, so runs repeat exactly).
    ids: random.Random = field(default_factory=random.Random, repr=False, compare=False)
    boot_id: str = ""
    powered: bool = True
    reachable: bool = True
    kubelet: DaemonState = "running"
    runtime: RuntimeState = "running"
    misconfig: Misconfig = ""
    #: Set while the host is rebooting or booting: cluster seconds when it comes up.
    booting_until: float = 0.0
    boot_seconds: float = 60.0
    reboots: int = 0
    #: How many times the kubelet / runtime were restarted (node agent repairs).
    kubelet_restarts: int = 0
    runtime_restarts: int = 0

    def __post_init__(self) -> None:
        if not self.boot_id:
            self.boot_id = self._new_id()

    def _new_id(self) -> str:
        return str(uuid.UUID(int=self.ids.getrandbits(128), version=4))

    def up(self, now: float) -> bool:
        """Powered and done booting."""
        return self.powered and now >= self.booting_until

    def posting(self, now: float) -> bool:
        """Whether the kubelet is posting heartbeats and status at ``now``."""
        return self.up(now) and self.reachable and self.kubelet == "running"

    def reboot(self, now: float) -> None:
        """Restart the OS: new bootID, daemons restarted, transient faults gone."""
        self.powered = True
        self.booting_until = now + self.boot_seconds
        self.boot_id = self._new_id()
        self.kubelet = "running"
        self.runtime = "running"
        if self.misconfig == "transient":
            self.misconfig = ""
        self.reboots += 1

    def power_off(self) -> None:
        self.powered = False

    def power_on(self, now: float) -> None:
        if not self.powered:
            self.reboot(now)

    def restart_kubelet(self) -> None:
        self.kubelet_restarts += 1
        if self.kubelet in ("stopped", "hung"):
            self.kubelet = "running"

    def restart_runtime(self) -> None:
        self.runtime_restarts += 1
        self.runtime = "running"


class Hosts:
    """Every host by node name; a node the kubelets adopt gets a healthy host on first sight."""

    def __init__(self, *, seed: int = 0) -> None:
        self._hosts: dict[str, Host] = {}
        self._ids = random.Random(seed)  # noqa: S311 (identifiers in a simulation)

    def get(self, name: str) -> Host:
        host = self._hosts.get(name)
        if host is None:
            ids = random.Random(self._ids.getrandbits(64))  # noqa: S311
            host = self._hosts[name] = Host(name, ids=ids)
        return host

    def find(self, name: str) -> Host | None:
        return self._hosts.get(name)

    def remove(self, name: str) -> None:
        self._hosts.pop(name, None)

    def __iter__(self) -> Iterator[Host]:
        return iter(list(self._hosts.values()))

    def __len__(self) -> int:
        return len(self._hosts)
