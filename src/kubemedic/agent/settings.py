"""The configuration file's ``agent:`` section, read and checked before the agent starts.

Keys are camelCase (snake_case is accepted too); an unknown key is an error naming the nearest
known one; every value is checked by type and range (:func:`kubemedic.config.read_section`).
The defaults are GKE's ``health-monitor.sh`` timings (:mod:`kubemedic.agent.policy`)::

    agent:
      selfRepair: true            # restart a failing kubelet/runtime on its own
      heartbeat: 30s              # KubemedicAgentReady is renewed at least this often
      stateFile: /var/lib/kubemedic/agent-state.json
      kubelet:
        unit: kubelet.service
        healthzUrl: http://127.0.0.1:10248/healthz
        period: 10s
        timeout: 10s
        startDelay: 2m
        failures: 1               # failed probes in a row before it is unhealthy
        cooldown: 1m              # the unit must have run this long before a restart
        maxRestarts: 3            # then give up: the controller reboots
        backoff: 2                # the n-th restart waits cooldown * backoff^(n-1)
        maxBackoff: 30m
        stable: 10m               # healthy this long starts the count over
      runtime:
        unit: containerd.service
        socket: unix:///run/containerd/containerd.sock
        timeout: 60s
        startDelay: 30s
        cooldown: 2m
      host:
        commandPrefix: []         # e.g. [nsenter, --target, "1", --mount, --]
        rebootCommand: [systemctl, reboot]
        bootIdPath: /proc/sys/kernel/random/boot_id
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kubemedic.agent.policy import KUBELET, RUNTIME, DaemonRules
from kubemedic.checks.settings import number
from kubemedic.config import ConfigError, Settings, read_section
from kubemedic.model.durations import short_duration as _d

__all__ = [
    "AgentConfig",
    "DaemonConfig",
    "HostConfig",
    "defaults_text",
    "load",
    "read",
    "rules_of",
]

_UNIT = re.compile(r"^[A-Za-z0-9:_.@\\-]{1,250}\.(service|socket|target|scope)$")


@dataclass(frozen=True, slots=True)
class DaemonConfig:
    """How one daemon is checked and repaired (see :class:`kubemedic.agent.policy.DaemonRules`)."""

    unit: str = KUBELET.unit
    period: timedelta = KUBELET.period
    timeout: timedelta = KUBELET.timeout
    start_delay: timedelta = KUBELET.start_delay
    failures: int = number(KUBELET.failures, low=1, high=100)
    cooldown: timedelta = KUBELET.cooldown
    max_restarts: int = number(KUBELET.max_restarts, low=0, high=100)
    backoff: float = number(KUBELET.backoff, low=1.0, high=10.0)
    max_backoff: timedelta = KUBELET.max_backoff
    stable: timedelta = KUBELET.stable


@dataclass(frozen=True, slots=True)
class KubeletConfig(DaemonConfig):
    """The kubelet's checks (``GET healthzUrl``)."""

    healthz_url: str = "http://127.0.0.1:10248/healthz"


@dataclass(frozen=True, slots=True)
class RuntimeConfig(DaemonConfig):
    """The container runtime's checks (the CRI's ``ListPodSandbox`` on ``socket``)."""

    unit: str = RUNTIME.unit
    timeout: timedelta = RUNTIME.timeout
    start_delay: timedelta = RUNTIME.start_delay
    cooldown: timedelta = RUNTIME.cooldown
    socket: str = "unix:///run/containerd/containerd.sock"


@dataclass(frozen=True, slots=True)
class HostConfig:
    """How the agent reaches its host from its container."""

    command_prefix: tuple[str, ...] = ()
    reboot_command: tuple[str, ...] = ("systemctl", "reboot")
    boot_id_path: str = "/proc/sys/kernel/random/boot_id"


@dataclass(frozen=True, slots=True)
class AgentConfig:
    """The ``agent:`` section (see the module docstring)."""

    self_repair: bool = True
    heartbeat: timedelta = timedelta(seconds=30)
    state_file: str = "/var/lib/kubemedic/agent-state.json"
    kubelet: KubeletConfig = field(default_factory=KubeletConfig)
    runtime: RuntimeConfig = field(default_factory=RuntimeConfig)
    host: HostConfig = field(default_factory=HostConfig)


def load(settings: Settings) -> AgentConfig:
    """The agent settings of a loaded configuration file (the defaults when it has none)."""
    if settings.agent is None:
        return AgentConfig()
    return read(settings.agent, source=settings.source or "configuration")


def read(raw: Mapping[str, Any], *, source: str) -> AgentConfig:
    """Validate an ``agent:`` mapping; ``ConfigError`` naming ``source`` and the key path."""
    where = f"{source}: agent"
    loaded: AgentConfig = read_section(raw, AgentConfig, where=where)
    for key, daemon in (("kubelet", loaded.kubelet), ("runtime", loaded.runtime)):
        _check_daemon(daemon, where=f"{where}.{key}")
    if not loaded.kubelet.healthz_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.kubelet.healthzUrl: expected an http:// or https:// URL")
    if not loaded.runtime.socket.startswith(("unix://", "/")):
        raise ConfigError(f"{where}.runtime.socket: expected unix:///path/to/cri.sock")
    if not loaded.host.reboot_command:
        raise ConfigError(f"{where}.host.rebootCommand: expected a command (a list of words)")
    if loaded.heartbeat < timedelta(seconds=1) or loaded.heartbeat > timedelta(minutes=2):
        raise ConfigError(
            f"{where}.heartbeat: expected 1s to 2m (the controller counts the agent as gone "
            "after 2 minutes without a heartbeat)"
        )
    if not loaded.state_file.startswith("/"):
        raise ConfigError(f"{where}.stateFile: expected an absolute path")
    return loaded


def _check_daemon(daemon: DaemonConfig, *, where: str) -> None:
    if not _UNIT.match(daemon.unit):
        raise ConfigError(f"{where}.unit: expected a systemd unit name such as kubelet.service")
    for name in ("period", "timeout"):
        if getattr(daemon, name) < timedelta(seconds=0.1):
            raise ConfigError(f"{where}.{_camel(name)}: expected at least 100ms")
    if daemon.max_backoff < daemon.cooldown:
        raise ConfigError(f"{where}.maxBackoff: expected at least the cooldown")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def rules_of(config: AgentConfig) -> tuple[DaemonRules, DaemonRules]:
    """The policy's rules for the kubelet and the runtime."""
    return _rules("kubelet", config.kubelet), _rules("runtime", config.runtime)


def _rules(name: str, daemon: DaemonConfig) -> DaemonRules:
    base = KUBELET if name == "kubelet" else RUNTIME
    return DaemonRules(
        base.name,
        daemon.unit,
        period=daemon.period,
        timeout=daemon.timeout,
        start_delay=daemon.start_delay,
        failures=daemon.failures,
        cooldown=daemon.cooldown,
        max_restarts=daemon.max_restarts,
        backoff=daemon.backoff,
        max_backoff=daemon.max_backoff,
        stable=daemon.stable,
    )


def defaults_text() -> str:
    """The defaults as an ``agent:`` section (for ``kubemedic config show-defaults``)."""
    d = AgentConfig()

    def daemon(c: DaemonConfig) -> str:
        return (
            f"    unit: {c.unit}\n"
            f"    period: {_d(c.period)}\n"
            f"    timeout: {_d(c.timeout)}\n"
            f"    startDelay: {_d(c.start_delay)}\n"
            f"    failures: {c.failures}             # failed checks in a row: unhealthy\n"
            f"    cooldown: {_d(c.cooldown)}          # the unit must have run this long first\n"
            f"    maxRestarts: {c.max_restarts}          # then give up: the controller reboots\n"
            f"    backoff: {c.backoff:g}              # restart n waits cooldown * backoff^(n-1)\n"
            f"    maxBackoff: {_d(c.max_backoff)}\n"
            f"    stable: {_d(c.stable)}            # healthy this long: the count starts over\n"
        )

    def words(items: tuple[str, ...]) -> str:
        return "[" + ", ".join(f'"{w}"' for w in items) + "]"

    return (
        "agent:\n"
        f"  selfRepair: {str(d.self_repair).lower()}\n"
        f"  heartbeat: {_d(d.heartbeat)}\n"
        f"  stateFile: {d.state_file}\n"
        "  kubelet:\n"
        f"{daemon(d.kubelet)}"
        f"    healthzUrl: {d.kubelet.healthz_url}\n"
        "  runtime:\n"
        f"{daemon(d.runtime)}"
        f"    socket: {d.runtime.socket}\n"
        "  host:\n"
        f"    commandPrefix: {words(d.host.command_prefix)}\n"
        f"    rebootCommand: {words(d.host.reboot_command)}\n"
        f"    bootIdPath: {d.host.boot_id_path}\n"
    )
