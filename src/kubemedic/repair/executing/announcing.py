"""Events on the Node for the repair's decisions, aggregated as the kubelet's recorder does.

Every decision (taken or held back) becomes a ``core/v1`` Event on its Node: ``involvedObject``
the Node (``uid`` the node's name, the kubelet's convention for node events, which ``kubectl
describe node`` finds), in the namespace ``default``, ``source.component`` and
``reportingComponent`` ``kubemedic-repair``, ``reportingInstance`` the replica's identity,
``reason`` the decision's (``KubemedicRepair...``), ``type`` ``Warning`` for what a person
should look at (holds, escalations, quarantines, alerts, failed actions) and ``Normal``
otherwise.

The same decision repeats every round while it stands (a hold, a drain blocked by a budget).
Like client-go's ``EventCorrelator``, a decision seen again with the same node, reason and
message within :data:`AGGREGATE_WINDOW` does not make a new object: the Event it made is
patched, ``count`` one higher and ``lastTimestamp`` now. The cache of those Events is keyed by
the decision's ``key`` (stable while the decision repeats) and bounded
(:data:`CACHE_SIZE`, least recently used first out). An Event that expired meanwhile (the API
server's ``--event-ttl``) is created again.

A decision without a node (a global pause) has no object to hang an Event on; it is logged and
recorded by the controller only.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.kube.api import Api, Conflict, NotFound
from kubemedic.model.objects import format_time
from kubemedic.repair.policy.records import Action, Decision, Kind, Outcome
from kubemedic.repair.providers import contract

__all__ = ["AGGREGATE_WINDOW", "CACHE_SIZE", "EVENT_NAMESPACE", "Announcer", "event_type"]

LOG = logging.getLogger("kubemedic.repair")

AGGREGATE_WINDOW = timedelta(minutes=10)
CACHE_SIZE = 4096
#: Events about cluster-scoped objects live in ``default`` (as the kubelet's node events do).
EVENT_NAMESPACE = "default"
MESSAGE_LIMIT = 1024

_WARNING_KINDS = frozenset({Kind.HOLD, Kind.ESCALATE})
_WARNING_ACTIONS = frozenset({Action.QUARANTINE, Action.ALERT})
_WARNING_OUTCOMES = frozenset({"quarantined", "abandoned", "failed"})


def event_type(decision: Decision, outcome: Outcome | None = None) -> str:
    """``Warning`` for holds, escalations, quarantines, alerts and failed actions."""
    if (
        decision.kind in _WARNING_KINDS
        or decision.action in _WARNING_ACTIONS
        or decision.outcome in _WARNING_OUTCOMES
        or (outcome is not None and not outcome.ok)
    ):
        return "Warning"
    return "Normal"


@dataclass
class _Sent:
    name: str
    node: str
    reason: str
    message: str
    count: int
    last: datetime


class Announcer:
    """Writes the Events of decisions on their Nodes (:meth:`announce`)."""

    def __init__(self, *, api: Api, identity: str, now: Callable[[], datetime]) -> None:
        self.api = api
        self.identity = identity
        self.now = now
        self._sent: OrderedDict[str, _Sent] = OrderedDict()
        self._last_stamp = 0

    async def announce(
        self, decision: Decision, *, message: str = "", outcome: Outcome | None = None
    ) -> dict[str, Any] | None:
        """Write (or bump) the Event of ``decision``; ``message`` replaces the decision's
        own. Returns the Event as stored, or None for a decision without a node."""
        if not decision.node:
            LOG.info("%s: %s", decision.reason, message or decision.message)
            return None
        text = " ".join((message or decision.message).split())[:MESSAGE_LIMIT]
        kind = event_type(decision, outcome)
        key = decision.key or f"{decision.node}|{decision.reason}|{text}"
        now = self.now()
        sent = self._sent.get(key)
        if (
            sent is not None
            and (sent.node, sent.reason, sent.message) == (decision.node, decision.reason, text)
            and now - sent.last < AGGREGATE_WINDOW
        ):
            bumped = await self._bump(sent, now)
            if bumped is not None:
                self._sent.move_to_end(key)
                return bumped
        created = await self._create(decision, text, kind, now)
        name = str((created.get("metadata") or {}).get("name") or "")
        self._sent[key] = _Sent(name, decision.node, decision.reason, text, 1, now)
        self._sent.move_to_end(key)
        while len(self._sent) > CACHE_SIZE:
            self._sent.popitem(last=False)
        return created

    async def _bump(self, sent: _Sent, now: datetime) -> dict[str, Any] | None:
        patch = {"count": sent.count + 1, "lastTimestamp": format_time(now)}
        try:
            answer = await self.api.request(
                "PATCH",
                f"/api/v1/namespaces/{EVENT_NAMESPACE}/events/{sent.name}",
                params={"fieldManager": contract.FIELD_MANAGER},
                body=patch,
                content_type=contract.MERGE_PATCH,
            )
        except NotFound:
            return None  # expired (--event-ttl): a new one is made
        sent.count += 1
        sent.last = now
        return answer if isinstance(answer, dict) else {}

    def _name(self, node: str, now: datetime) -> str:
        # client-go names events "<object>.<unix nanoseconds in hex>"; strictly increasing
        # here, since a paused simulated clock gives the same instant twice.
        stamp = max(int(now.timestamp() * 1_000_000_000), self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{node}.{stamp:x}"

    async def _create(
        self, decision: Decision, text: str, kind: str, now: datetime
    ) -> dict[str, Any]:
        node = str(decision.node)
        when = format_time(now)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": EVENT_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
            "reason": decision.reason,
            "message": text,
            "type": kind,
            "source": {"component": contract.FIELD_MANAGER},
            "reportingComponent": contract.FIELD_MANAGER,
            "reportingInstance": self.identity[:128],
            "action": (decision.action or decision.kind).value,
            "firstTimestamp": when,
            "lastTimestamp": when,
            "count": 1,
        }
        for _ in range(3):
            body["metadata"]["name"] = self._name(node, now)
            try:
                answer = await self.api.request(
                    "POST",
                    f"/api/v1/namespaces/{EVENT_NAMESPACE}/events",
                    params={"fieldManager": contract.FIELD_MANAGER},
                    body=body,
                )
            except Conflict:
                continue  # the name is taken (another replica's clock): the next one
            return answer if isinstance(answer, dict) else body
        raise Conflict(reason="AlreadyExists", message=f"no free Event name for node {node}")
