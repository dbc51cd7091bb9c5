"""Fence and unfence a Node: the out-of-service taint of non-graceful node shutdown.

``node.kubernetes.io/out-of-service=nodeshutdown:NoExecute`` tells Kubernetes that the machine
is off (KEP-2268, GA in 1.28): the pods bound to the node are force-deleted (the pod GC
controller deletes terminating pods at once) and their volumes detached, so a StatefulSet's pod
and its ReadWriteOnce volume can start elsewhere. Applied to a machine that is in fact running,
two copies of a pod may write the same volume, so the policy asks for it only once the provider
reports the machine off, and removes it when the node is back.

``spec.taints`` is a list that a merge patch replaces whole, so both functions read the node,
change only this taint (every other taint is kept as it was, including the node lifecycle
controller's ``unreachable``/``not-ready`` taints), and write with the node's resourceVersion as
a precondition, reading again after a ``409 Conflict``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubemedic.kube.api import Api
from kubemedic.model.objects import format_time
from kubemedic.repair.providers import contract

__all__ = ["fence", "has_taint", "unfence"]


def _same(taint: Any, key: str, effect: str) -> bool:
    return isinstance(taint, dict) and taint.get("key") == key and taint.get("effect") == effect


def has_taint(node: dict[str, Any]) -> bool:
    """Whether the node carries the out-of-service taint (any value)."""
    key, _, effect = contract.OUT_OF_SERVICE
    return any(_same(t, key, effect) for t in (node.get("spec") or {}).get("taints") or ())


async def fence(api: Api, node: str, *, now: datetime) -> bool:
    """Add the out-of-service taint (``timeAdded`` ``now``); returns False when it was there
    already (nothing written)."""
    key, value, effect = contract.OUT_OF_SERVICE

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        taints = list((current.get("spec") or {}).get("taints") or ())
        if any(_same(t, key, effect) and t.get("value") == value for t in taints):
            return None
        kept = [t for t in taints if not _same(t, key, effect)]
        added = {"key": key, "value": value, "effect": effect, "timeAdded": format_time(now)}
        return {"spec": {"taints": [*kept, added]}}

    return await contract.patch_node_list(api, node, change) is not None


async def unfence(api: Api, node: str) -> bool:
    """Remove the out-of-service taint; returns False when it was not there."""
    key, _, effect = contract.OUT_OF_SERVICE

    def change(current: dict[str, Any]) -> dict[str, Any] | None:
        taints = list((current.get("spec") or {}).get("taints") or ())
        kept = [t for t in taints if not _same(t, key, effect)]
        if len(kept) == len(taints):
            return None
        return {"spec": {"taints": kept or None}}

    return await contract.patch_node_list(api, node, change) is not None
