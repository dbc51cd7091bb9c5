"""Cluster API: replace a machine by deleting its ``Machine`` (``cluster.x-k8s.io/v1beta1``).

Deleting a Machine is a replacement only when something makes a new one: its controller, a
``MachineSet`` (itself usually owned by a ``MachineDeployment``), sees one replica missing and
creates another, while the Machine controller drains the node (honouring PodDisruptionBudgets),
deletes the infrastructure and then the Node. A Machine without such an owner would just be
gone, so this provider reads the Machine first and refuses unless its controlling owner is a
MachineSet; it deletes with the Machine's uid as a precondition, so a Machine recreated under
the same name in the meantime is never the one deleted.

Cluster API has no reboot and no power control of its own (those are the infrastructure
provider's), so ``power`` is ``UNKNOWN`` and only ``replace`` is offered.
"""

from __future__ import annotations

from typing import Any

from kubemedic.kube.api import Api, NotFound
from kubemedic.repair.policy.records import Action, MachineRef, Power
from kubemedic.repair.providers.base import ProviderContext, ProviderError, Target

__all__ = ["ClusterApiProvider", "machine_path", "make"]

GROUP_VERSION = "cluster.x-k8s.io/v1beta1"
#: The owners that recreate a deleted Machine.
REPLACING_OWNERS = frozenset({"MachineSet"})


def machine_path(ref: MachineRef) -> str:
    return f"/apis/{GROUP_VERSION}/namespaces/{ref.namespace}/machines/{ref.name}"


def _controller(machine: dict[str, Any]) -> dict[str, Any] | None:
    for owner in (machine.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(owner, dict) and owner.get("controller") is True:
            return owner
    return None


class ClusterApiProvider:
    """Replace a node's machine by deleting its Cluster API Machine."""

    name = "clusterapi"
    actions = frozenset({Action.REPLACE})
    #: Whether ``power`` can answer anything but UNKNOWN (the controller asks only then).
    tells_power = False

    def __init__(self, *, api: Api) -> None:
        self.api = api

    async def power(self, target: Target) -> Power:
        return Power.UNKNOWN

    async def reboot(self, target: Target) -> str:
        raise ProviderError(f"node {target.node}: Cluster API cannot reboot a machine")

    async def power_on(self, target: Target) -> str:
        raise ProviderError(f"node {target.node}: Cluster API cannot power a machine on")

    async def replace(self, target: Target) -> str:
        ref = target.machine
        if ref is None or not ref.name:
            raise ProviderError(f"node {target.node}: no Cluster API Machine is known for it")
        where = f"Machine {ref.namespace}/{ref.name} of node {target.node}"
        try:
            machine = await self.api.request("GET", machine_path(ref))
        except NotFound as exc:
            raise ProviderError(f"{where} does not exist") from exc
        if not isinstance(machine, dict):
            raise ProviderError(f"{where}: the API server answered with no Machine")
        meta = machine.get("metadata") or {}
        if meta.get("deletionTimestamp"):
            return f"{where} is already being deleted"
        owner = _controller(machine)
        if owner is None or owner.get("kind") not in REPLACING_OWNERS:
            owned = f"{owner.get('kind')}/{owner.get('name')}" if owner else "nothing"
            raise ProviderError(
                f"{where} is controlled by {owned}, not a MachineSet: deleting it would not "
                "replace it"
            )
        options = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "preconditions": {"uid": meta.get("uid")},
        }
        try:
            await self.api.request("DELETE", machine_path(ref), body=options)
        except NotFound:
            return f"{where} was already gone"
        return f"deleted {where}; MachineSet {owner.get('name')} creates its replacement"

    async def close(self) -> None:
        return None


def make(context: ProviderContext) -> ClusterApiProvider:
    """The ``clusterapi`` provider: ``context.api`` is the Kubernetes API client."""
    return ClusterApiProvider(api=context.api)
