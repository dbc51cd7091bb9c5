"""The providers kubemedic ships, by the name ``repair.provider`` gives, and the one way to make
the configured one (built-in first, then the ``kubemedic.repair.providers`` entry points).

``openstack`` is imported only when it is chosen: it pulls in openstacksdk, which the other
providers do not need.
"""

from __future__ import annotations

import importlib

from kubemedic.repair.providers import agent, clusterapi, exec
from kubemedic.repair.providers.base import Factory, Provider, ProviderContext, factory

__all__ = ["BUILTIN", "make_provider"]


def _openstack(context: ProviderContext) -> Provider:
    module = importlib.import_module("kubemedic.repair.providers.openstack")
    made: Provider = module.make(context)
    return made


#: The built-in providers' factories.
BUILTIN: dict[str, Factory] = {
    "openstack": _openstack,
    "clusterapi": clusterapi.make,
    "exec": exec.make,
    "agent": agent.make,
}


def make_provider(name: str, context: ProviderContext) -> Provider:
    """The provider ``name`` (``ProviderError`` naming the known ones when there is none)."""
    return factory(name, BUILTIN)(context)
