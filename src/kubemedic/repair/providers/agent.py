"""The node agent as a provider, and the controller's half of the agent contract.

The controller asks the agent on a node to act by writing one annotation on the Node,
``kubemedic.io/agent-request``, a JSON object ``{"id", "action", "requestedAt", "requester"}``,
as a merge patch with the field manager ``kubemedic-repair`` (the agent refuses a request whose
annotation another manager wrote). A new request replaces the old one. The agent answers in
``kubemedic.io/agent-ack`` (``{"id", "action", "state", "at", "message"}``, ``state`` one of
``accepted``, ``done``, ``failed``, ``refused``). docs/repair.md is the contract.

An acknowledgement is never proof of a cure: the policy verifies (Ready held, a new bootID).

As a provider, the agent can only reboot its own node (the request ``reboot``); it cannot tell
the machine's power (``UNKNOWN``: a node whose agent does not answer may be off or cut off),
power a machine on, or replace it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from kubemedic.kube.api import Api
from kubemedic.model import agentcontract
from kubemedic.model.documents import DocumentError, load_json
from kubemedic.model.objects import format_time, parse_time
from kubemedic.repair.policy.records import Action, Power
from kubemedic.repair.providers import contract
from kubemedic.repair.providers.base import ProviderContext, ProviderError, Target

__all__ = [
    "ACK_STATES",
    "AGENT_ACTIONS",
    "Ack",
    "AgentProvider",
    "Request",
    "ack_of",
    "make",
    "new_request_id",
    "parse_ack",
    "read_ack",
    "write_request",
]

#: What the agent can be asked to do.
AGENT_ACTIONS = frozenset(agentcontract.ACTIONS)
ACK_STATES = frozenset(agentcontract.ACK_STATES)


@dataclass(frozen=True, slots=True)
class Request:
    """A request as written to ``kubemedic.io/agent-request``."""

    id: str
    action: str
    requested_at: datetime
    requester: str

    def to_json(self) -> str:
        return orjson.dumps(
            {
                "id": self.id,
                "action": self.action,
                "requestedAt": format_time(self.requested_at),
                "requester": self.requester,
            }
        ).decode()


@dataclass(frozen=True, slots=True)
class Ack:
    """The agent's answer in ``kubemedic.io/agent-ack``."""

    id: str
    action: str
    state: str
    at: datetime | None = None
    message: str = ""


def new_request_id() -> str:
    """A fresh request id (128 random bits, hex): the agent acts on each id at most once."""
    return uuid.uuid4().hex


async def write_request(
    api: Api,
    node: str,
    *,
    action: str,
    requester: str,
    now: datetime,
    request_id: str = "",
) -> Request:
    """Write the request ``action`` on ``node`` (a new id unless ``request_id`` is given) and
    return it. ``ValueError`` for an action the agent does not know."""
    if action not in AGENT_ACTIONS:
        raise ValueError(f"the node agent has no action {action!r}")
    request = Request(request_id or new_request_id(), action, now, requester)
    patch = {"metadata": {"annotations": {contract.REQUEST_ANNOTATION: request.to_json()}}}
    await contract.patch_node(api, node, patch)
    return request


def parse_ack(text: object, *, node: str = "") -> Ack | None:
    """The acknowledgement in an annotation's value, or None when it is not one (missing id or
    state, an unknown state, not JSON). Total: never raises."""
    if not isinstance(text, str) or not text:
        return None
    try:
        body: Any = load_json(text, where=f"node {node} annotation {contract.ACK_ANNOTATION}")
    except DocumentError:
        return None
    if not isinstance(body, dict):
        return None
    ack_id, state = body.get("id"), body.get("state")
    if not isinstance(ack_id, str) or not ack_id or state not in ACK_STATES:
        return None
    action, message = body.get("action"), body.get("message")
    return Ack(
        id=ack_id,
        action=action if isinstance(action, str) else "",
        state=str(state),
        at=parse_time(body.get("at")),
        message=message if isinstance(message, str) else "",
    )


def ack_of(node_body: dict[str, Any], request_id: str) -> Ack | None:
    """The acknowledgement of ``request_id`` on a Node body already read, if the agent wrote
    one (an acknowledgement of another id is not this request's)."""
    annotations = (node_body.get("metadata") or {}).get("annotations") or {}
    name = str((node_body.get("metadata") or {}).get("name") or "")
    ack = parse_ack(annotations.get(contract.ACK_ANNOTATION), node=name)
    return ack if ack is not None and ack.id == request_id else None


async def read_ack(api: Api, node: str, request_id: str) -> Ack | None:
    """Read the Node and return the agent's acknowledgement of ``request_id``, or None when the
    agent has not answered that request (yet)."""
    return ack_of(await contract.get_node(api, node), request_id)


class AgentProvider:
    """Reboot through the node agent (the request ``reboot``)."""

    name = "agent"
    actions = frozenset({Action.REBOOT})
    #: Whether ``power`` can answer anything but UNKNOWN (the controller asks only then).
    tells_power = False

    def __init__(self, *, api: Api, identity: str, context: ProviderContext) -> None:
        self.api = api
        self.identity = identity
        self.context = context

    async def power(self, target: Target) -> Power:
        return Power.UNKNOWN

    async def reboot(self, target: Target) -> str:
        request = await write_request(
            self.api,
            target.node,
            action="reboot",
            requester=self.identity,
            now=self.context.now(),
        )
        return f"asked the node agent on {target.node} to reboot (request {request.id})"

    async def power_on(self, target: Target) -> str:
        raise ProviderError(
            f"node {target.node}: the node agent cannot power a machine on (it runs on it)"
        )

    async def replace(self, target: Target) -> str:
        raise ProviderError(f"node {target.node}: the node agent cannot replace a machine")

    async def close(self) -> None:
        return None


def make(context: ProviderContext) -> AgentProvider:
    """The ``agent`` provider: ``context.api`` is the Kubernetes API client."""
    return AgentProvider(api=context.api, identity=context.identity, context=context)
