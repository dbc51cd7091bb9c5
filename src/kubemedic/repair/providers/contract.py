"""The names docs/repair.md fixes, and the one way the repair writes a Node.

Every write of the repair goes through :func:`patch_node` (or sends the same ``fieldManager``
itself): a JSON merge patch (RFC 7386) with the query parameter ``fieldManager=kubemedic-repair``,
so ``metadata.managedFields`` names the repair as the writer of each field it set. The node agent
checks exactly that before it obeys a request (docs/repair.md, "Requests"), and an operator reads
it to tell a cordon by the repair from a cordon by a person.

A merge patch replaces lists whole (``spec.taints``), so writers of lists send the node's
``metadata.resourceVersion`` with the patch: the API server then refuses the write with ``409
Conflict`` when the node changed since it was read (optimistic concurrency), and the writer
reads again and retries (:func:`patch_node_list`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubemedic.kube.api import Api, Conflict
from kubemedic.model import agentcontract

__all__ = [
    "ACK_ANNOTATION",
    "DO_NOT_REPAIR_ANNOTATION",
    "FIELD_MANAGER",
    "MERGE_PATCH",
    "OUT_OF_SERVICE",
    "QUARANTINED_LABEL",
    "QUARANTINE_REASON_ANNOTATION",
    "REPAIR_ANNOTATION",
    "REQUEST_ANNOTATION",
    "get_node",
    "node_path",
    "patch_node",
    "patch_node_list",
]

#: The field manager of every write the controller makes (``kubemedic-agent`` is the agent's).
FIELD_MANAGER = agentcontract.CONTROLLER_MANAGER
REQUEST_ANNOTATION = agentcontract.REQUEST_ANNOTATION
ACK_ANNOTATION = agentcontract.ACK_ANNOTATION
REPAIR_ANNOTATION = "kubemedic.io/repair"
QUARANTINED_LABEL = "kubemedic.io/quarantined"
QUARANTINE_REASON_ANNOTATION = "kubemedic.io/quarantine-reason"
DO_NOT_REPAIR_ANNOTATION = "kubemedic.io/do-not-repair"
#: The non-graceful node shutdown taint (key, value, effect): the machine is confirmed off, so
#: the pods bound to the node may be force-deleted and their volumes detached.
OUT_OF_SERVICE = ("node.kubernetes.io/out-of-service", "nodeshutdown", "NoExecute")
MERGE_PATCH = "application/merge-patch+json"

#: How many times a list write is retried after ``409 Conflict`` before it gives up.
CONFLICT_RETRIES = 5


def node_path(node: str) -> str:
    return f"/api/v1/nodes/{node}"


async def get_node(api: Api, node: str) -> dict[str, Any]:
    """The Node ``node`` as the API server has it (``NotFound`` when it is gone)."""
    body = await api.request("GET", node_path(node))
    return body if isinstance(body, dict) else {}


async def patch_node(api: Api, node: str, patch: Mapping[str, Any]) -> dict[str, Any]:
    """Merge-patch the Node as ``kubemedic-repair``; returns the node as written. A ``None``
    value removes a key (a label, an annotation, ``spec.unschedulable``)."""
    body = await api.request(
        "PATCH",
        node_path(node),
        params={"fieldManager": FIELD_MANAGER},
        body=dict(patch),
        content_type=MERGE_PATCH,
    )
    return body if isinstance(body, dict) else {}


async def patch_node_list(
    api: Api,
    node: str,
    change: Callable[[dict[str, Any]], Mapping[str, Any] | None],
) -> dict[str, Any] | None:
    """Read the node, let ``change(node)`` build a patch (``None``: nothing to change), and
    write it with the node's resourceVersion as a precondition; on ``409 Conflict`` read and
    try again, up to :data:`CONFLICT_RETRIES` times (the last ``Conflict`` is raised). Returns
    the node as written, or None when there was nothing to change."""
    for attempt in range(CONFLICT_RETRIES + 1):
        current = await get_node(api, node)
        patch = change(current)
        if patch is None:
            return None
        version = (current.get("metadata") or {}).get("resourceVersion")
        body = dict(patch)
        body["metadata"] = {**dict(body.get("metadata") or {}), "resourceVersion": version}
        try:
            return await patch_node(api, node, body)
        except Conflict:
            if attempt == CONFLICT_RETRIES:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
