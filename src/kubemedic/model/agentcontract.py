"""The controller-agent contract of docs/repair.md, from the agent's side: names and rules.

Everything goes through the Node object:

- the agent reports the conditions ``KubemedicAgentReady`` (a heartbeat), ``KubeletUnhealthy``
  and ``ContainerRuntimeUnhealthy`` through ``nodes/status`` as field manager
  ``kubemedic-agent``;
- the repair controller (field manager ``kubemedic-repair``) writes a request, the annotation
  ``kubemedic.io/agent-request``: ``{"id", "action", "requestedAt", "requester"}`` with
  ``action`` one of ``restart-kubelet``, ``restart-runtime``, ``reboot``;
- the agent answers with the annotation ``kubemedic.io/agent-ack``: ``{"id", "action", "state",
  "at", "message"}``, ``state`` one of ``accepted``, ``done``, ``failed``, ``refused``, and an
  Event (component ``kubemedic-agent``, reasons ``KubemedicAgentRestarted``,
  ``KubemedicAgentRefused``, ``KubemedicAgentRebooting``).

:func:`judge` is the agent's rule for a request, pure: it is carried out only when the
annotation's ``managedFields`` owner is ``kubemedic-repair`` alone, its ``id`` was never
answered, it is not older than :data:`MAX_AGE` and the rate limit (:data:`RATE_LIMIT` actions in
:data:`RATE_WINDOW`) allows it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.model.objects import parse_time

__all__ = [
    "ACK_ANNOTATION",
    "ACK_STATES",
    "ACTIONS",
    "AGENT_MANAGER",
    "AGENT_READY",
    "CONTROLLER_MANAGER",
    "GAVE_UP_REASONS",
    "GIVING_UP",
    "KUBELET_GAVE_UP",
    "KUBELET_UNHEALTHY",
    "MAX_AGE",
    "RATE_LIMIT",
    "RATE_WINDOW",
    "REBOOTING",
    "REFUSED",
    "REQUEST_ANNOTATION",
    "RESTARTED",
    "RUNTIME_GAVE_UP",
    "RUNTIME_UNHEALTHY",
    "Request",
    "annotation_owners",
    "judge",
    "parse_request",
    "written_at",
]

AGENT_MANAGER = "kubemedic-agent"
CONTROLLER_MANAGER = "kubemedic-repair"
REQUEST_ANNOTATION = "kubemedic.io/agent-request"
ACK_ANNOTATION = "kubemedic.io/agent-ack"
AGENT_READY = "KubemedicAgentReady"
KUBELET_UNHEALTHY = "KubeletUnhealthy"
RUNTIME_UNHEALTHY = "ContainerRuntimeUnhealthy"
RESTARTED = "KubemedicAgentRestarted"
REFUSED = "KubemedicAgentRefused"
REBOOTING = "KubemedicAgentRebooting"
#: Self-repair stopped restarting a daemon after its limit (a Warning; a person must look).
GIVING_UP = "KubemedicAgentGivingUp"
#: The reasons of ``KubeletUnhealthy``/``ContainerRuntimeUnhealthy`` once the agent gave up
#: restarting the daemon: a restart is known not to help, so the controller starts its ladder
#: at the next step (a reboot).
KUBELET_GAVE_UP = "KubeletRepairFailed"
RUNTIME_GAVE_UP = "ContainerRuntimeRepairFailed"
GAVE_UP_REASONS = frozenset({KUBELET_GAVE_UP, RUNTIME_GAVE_UP})
ACTIONS = ("restart-kubelet", "restart-runtime", "reboot")
#: The states of an acknowledgement (docs/repair.md, "Acknowledgements").
ACK_STATES = ("accepted", "done", "failed", "refused")
MAX_AGE = timedelta(minutes=5)
RATE_LIMIT = 3
RATE_WINDOW = timedelta(hours=1)


@dataclass(frozen=True)
class Request:
    """One request annotation, as parsed (``error`` says why it is malformed, if it is)."""

    id: str
    action: str
    requested_at: datetime | None
    requester: str = ""
    error: str = ""


def parse_request(text: str) -> Request:
    """The request in an annotation value; a malformed one has ``error`` set (and whatever id
    could be read, so the refusal names it)."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        return Request("", "", None, error="the request is not a JSON object")
    if not isinstance(body, dict):
        return Request("", "", None, error="the request is not a JSON object")
    rid, action = body.get("id"), body.get("action")
    requested_at = parse_time(body.get("requestedAt"))
    request = Request(
        str(rid or ""), str(action or ""), requested_at, str(body.get("requester") or "")
    )
    if not isinstance(rid, str) or not rid:
        return _malformed(request, "the request has no id")
    if action not in ACTIONS:
        return _malformed(request, f"unknown action {action!r} (known: {', '.join(ACTIONS)})")
    if requested_at is None:
        return _malformed(request, "the request has no valid requestedAt")
    return request


def _malformed(request: Request, error: str) -> Request:
    return Request(request.id, request.action, request.requested_at, request.requester, error)


def annotation_owners(node: Mapping[str, Any], annotation: str) -> set[str]:
    """The field managers whose ``managedFields`` own the annotation ``annotation``."""
    owners = set()
    for entry in (node.get("metadata") or {}).get("managedFields") or ():
        fields = (entry.get("fieldsV1") or {}).get("f:metadata") or {}
        if f"f:{annotation}" in (fields.get("f:annotations") or {}):
            owners.add(str(entry.get("manager") or ""))
    return owners


def written_at(node: Mapping[str, Any], annotation: str, manager: str) -> datetime | None:
    """When the API server recorded ``manager``'s last write of ``annotation`` (its
    ``managedFields`` entry's ``time``): the age of a request by the server's clock, which the
    node's and the controller's clocks need not agree with."""
    for entry in (node.get("metadata") or {}).get("managedFields") or ():
        fields = (entry.get("fieldsV1") or {}).get("f:metadata") or {}
        if entry.get("manager") == manager and f"f:{annotation}" in (
            fields.get("f:annotations") or {}
        ):
            return parse_time(entry.get("time"))
    return None


def judge(
    request: Request,
    *,
    owners: Collection[str],
    answered: Collection[str],
    actions: Sequence[datetime],
    now: datetime,
    written: datetime | None = None,
) -> str:
    """Why the agent refuses ``request`` ("" when it may carry it out): written by someone else
    than the controller, an id answered before, too old, or over the rate limit (``actions`` are
    the times of the actions the agent carried out). Age is judged from ``written``, the API
    server's time of the write, when known, else from the request's own ``requestedAt``."""
    if request.error:
        return request.error
    if set(owners) != {CONTROLLER_MANAGER}:
        who = ", ".join(sorted(owners)) or "nobody"
        return f"not from {CONTROLLER_MANAGER}: the annotation is owned by {who}"
    if request.id in answered:
        return f"repeated id {request.id}: a request is done at most once"
    assert request.requested_at is not None
    age = now - (written or request.requested_at)
    if age > MAX_AGE:
        return f"too old: requested {age.total_seconds():.0f}s ago (at most {MAX_AGE.seconds}s)"
    recent = [t for t in actions if now - t < RATE_WINDOW]
    if len(recent) >= RATE_LIMIT:
        return (
            f"rate-limited: {len(recent)} actions in the last "
            f"{RATE_WINDOW.seconds // 60} minutes (at most {RATE_LIMIT})"
        )
    return ""
