"""Events on Nodes, aggregated as the kubelet's recorder does: the one Event writer.

Every ``core/v1`` Event kubemedic writes (the repair controller's, the node agent's) goes through
a :class:`NodeEvents`: ``involvedObject`` the Node (``uid`` the node's name, the kubelet's
convention for node events, which ``kubectl describe node`` finds), in the namespace
``default``, ``source.component`` and ``reportingComponent`` the writer's component (also its
field manager), ``reportingInstance`` its identity.

Like client-go's ``EventCorrelator``, the same ``key`` seen again with the same node, reason and
message within :data:`AGGREGATE_WINDOW` does not make a new object: the Event it made is patched,
``count`` one higher and ``lastTimestamp`` now. The cache of those Events is bounded
(:data:`CACHE_SIZE`, least recently used first out). An Event that expired meanwhile (the API
server's ``--event-ttl``) is created again. Names are client-go's ``<object>.<unix nanoseconds in
hex>``, strictly increasing per writer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.kube.api import Api, Conflict, NotFound
from kubemedic.model.objects import format_time

__all__ = ["AGGREGATE_WINDOW", "CACHE_SIZE", "EVENT_NAMESPACE", "MESSAGE_LIMIT", "NodeEvents"]

AGGREGATE_WINDOW = timedelta(minutes=10)
CACHE_SIZE = 4096
#: Events about cluster-scoped objects live in ``default`` (as the kubelet's node events do).
EVENT_NAMESPACE = "default"
MESSAGE_LIMIT = 1024
MERGE_PATCH = "application/merge-patch+json"


@dataclass
class _Sent:
    name: str
    node: str
    reason: str
    message: str
    count: int
    last: datetime


class NodeEvents:
    """Writes (or bumps) Events on Nodes as ``component`` (see the module docstring)."""

    def __init__(
        self, *, api: Api, component: str, identity: str, now: Callable[[], datetime]
    ) -> None:
        self.api = api
        self.component = component
        self.identity = identity
        self.now = now
        self._sent: OrderedDict[str, _Sent] = OrderedDict()
        self._last_stamp = 0

    async def record(
        self,
        node: str,
        reason: str,
        message: str,
        *,
        type_: str = "Normal",
        action: str = "",
        key: str = "",
    ) -> dict[str, Any]:
        """Write the Event (or bump the one ``key`` made); returns it as stored."""
        text = " ".join(message.split())[:MESSAGE_LIMIT]
        key = key or f"{node}|{reason}|{text}"
        now = self.now()
        sent = self._sent.get(key)
        if (
            sent is not None
            and (sent.node, sent.reason, sent.message) == (node, reason, text)
            and now - sent.last < AGGREGATE_WINDOW
        ):
            bumped = await self._bump(sent, now)
            if bumped is not None:
                self._sent.move_to_end(key)
                return bumped
        created = await self._create(node, reason, text, type_=type_, action=action, now=now)
        name = str((created.get("metadata") or {}).get("name") or "")
        self._sent[key] = _Sent(name, node, reason, text, 1, now)
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
                params={"fieldManager": self.component},
                body=patch,
                content_type=MERGE_PATCH,
            )
        except NotFound:
            return None  # expired (--event-ttl): a new one is made
        sent.count += 1
        sent.last = now
        return answer if isinstance(answer, dict) else {}

    def _name(self, node: str, now: datetime) -> str:
        # strictly increasing, since a paused simulated clock gives the same instant twice
        stamp = max(int(now.timestamp() * 1_000_000_000), self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{node}.{stamp:x}"

    async def _create(
        self, node: str, reason: str, text: str, *, type_: str, action: str, now: datetime
    ) -> dict[str, Any]:
        when = format_time(now)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": EVENT_NAMESPACE},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node},
            "reason": reason,
            "message": text,
            "type": type_,
            "source": {"component": self.component},
            "reportingComponent": self.component,
            "reportingInstance": self.identity[:128],
            "firstTimestamp": when,
            "lastTimestamp": when,
            "count": 1,
        }
        if action:
            body["action"] = action
        for _ in range(3):
            body["metadata"]["name"] = self._name(node, now)
            try:
                answer = await self.api.request(
                    "POST",
                    f"/api/v1/namespaces/{EVENT_NAMESPACE}/events",
                    params={"fieldManager": self.component},
                    body=body,
                )
            except Conflict:
                continue  # the name is taken (another writer's clock): the next one
            return answer if isinstance(answer, dict) else body
        raise Conflict(reason="AlreadyExists", message=f"no free Event name for node {node}")
