"""The one interface every provider implements, and how providers are found.

A provider is the hand that works on machines: it tells a machine's power state, reboots it,
powers it on, and (when it can) replaces it. kubemedic ships ``openstack`` (openstacksdk),
``clusterapi`` (delete the Machine), ``exec`` (a configured command) and ``agent`` (the node
agent reboots its own node). Others are found through the ``kubemedic.repair.providers`` entry
point group: the entry point names a factory ``(ProviderContext) -> Provider``.

A provider raises :class:`ProviderError` (with a sentence naming the node and what failed) when
it cannot do what was asked; it never returns a half answer. An action a provider cannot do at
all is not in its ``actions``, and the policy does not ask for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib import metadata
from typing import Any, Protocol

from kubemedic.errors import KubemedicError
from kubemedic.repair.policy.records import Action, MachineRef, Power

__all__ = [
    "ENTRY_POINTS",
    "Provider",
    "ProviderContext",
    "ProviderError",
    "Target",
    "factory",
]

ENTRY_POINTS = "kubemedic.repair.providers"


class ProviderError(KubemedicError):
    """A provider could not do what it was asked; ``str()`` says which node and why."""


@dataclass(frozen=True, slots=True)
class Target:
    """The machine under a node, as a provider finds it."""

    node: str
    provider_id: str = ""
    machine: MachineRef | None = None


@dataclass(frozen=True, slots=True)
class ProviderContext:
    """What a provider factory is given: the API client (for providers that act through the
    Kubernetes API), who is acting, and the provider's own settings."""

    api: Any
    identity: str
    settings: Any
    #: Anything a provider needs that the settings do not hold (tests pass a cloud's config).
    extra: dict[str, Any] = field(default_factory=dict)
    timeout: timedelta = timedelta(minutes=2)
    #: The cluster's clock (``kubemedic.kube.clock.Clock.now``): requests to the node agent
    #: are stamped with it, and the agent compares them with its own.
    now: Callable[[], datetime] = field(default=lambda: datetime.now(UTC))


class Provider(Protocol):
    """Reboot, power and replace the machine under a node."""

    name: str
    #: What this provider can do (a subset of REBOOT, POWER_ON, REPLACE).
    actions: frozenset[Action]

    async def power(self, target: Target) -> Power:
        """The machine's power as the provider sees it (``UNKNOWN`` when it cannot tell)."""
        ...

    async def reboot(self, target: Target) -> str:
        """Ask for a hard reboot; return what the provider said (for the ledger)."""
        ...

    async def power_on(self, target: Target) -> str:
        """Power a machine that is off back on."""
        ...

    async def replace(self, target: Target) -> str:
        """Replace the machine (its owner makes a new one)."""
        ...

    async def close(self) -> None:
        """Release connections."""
        ...


Factory = Callable[[ProviderContext], Provider]


def factory(name: str, builtin: dict[str, Factory]) -> Factory:
    """The factory of provider ``name``: a built-in one, else an installed entry point;
    ``ProviderError`` naming the known ones otherwise."""
    if name in builtin:
        return builtin[name]
    for entry in metadata.entry_points(group=ENTRY_POINTS):
        if entry.name == name:
            loaded = entry.load()
            if not callable(loaded):
                raise ProviderError(f"provider {name!r}: entry point {entry.value} is not callable")
            return loaded  # type: ignore[no-any-return]
    known = sorted({*builtin, *(e.name for e in metadata.entry_points(group=ENTRY_POINTS))})
    raise ProviderError(f"unknown repair provider {name!r}; known: {', '.join(known)}")
