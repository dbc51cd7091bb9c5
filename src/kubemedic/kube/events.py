"""Events, aggregated as client-go's recorder does: the one Event writer.

Every ``core/v1`` Event kubemedic writes goes through an :class:`ObjectEvents`:
``involvedObject`` the object the Event is about (a Node, a Deployment...), in that object's
namespace (:data:`EVENT_NAMESPACE`, ``default``, for a cluster-scoped object, as the kubelet's
node events are), ``source.component`` and ``reportingComponent`` the writer's component (also
its field manager), ``reportingInstance`` its identity. :class:`NodeEvents` (the repair
controller's, the node agent's) writes on Nodes: ``uid`` the node's name, the kubelet's
convention for node events, which ``kubectl describe node`` finds.

Like client-go's ``EventCorrelator``, the same ``key`` seen again with the same object, reason
and message within :data:`AGGREGATE_WINDOW` does not make a new object: the Event it made is
patched, ``count`` one higher and ``lastTimestamp`` now. The cache of those Events is bounded
(:data:`CACHE_SIZE`, least recently used first out). An Event that expired meanwhile (the API
server's ``--event-ttl``) is created again. Names are client-go's ``<object>.<unix nanoseconds in
hex>``, strictly increasing per writer.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.kube.api import Api, Conflict, NotFound
from kubemedic.model.objects import format_time

__all__ = [
    "AGGREGATE_WINDOW",
    "CACHE_SIZE",
    "EVENT_NAMESPACE",
    "MESSAGE_LIMIT",
    "NodeEvents",
    "ObjectEvents",
    "involved",
]

AGGREGATE_WINDOW = timedelta(minutes=10)
CACHE_SIZE = 4096
#: Events about cluster-scoped objects live in ``default`` (as the kubelet's node events do).
EVENT_NAMESPACE = "default"
MESSAGE_LIMIT = 1024
MERGE_PATCH = "application/merge-patch+json"


def involved(body: Mapping[str, Any]) -> dict[str, Any]:
    """The ``involvedObject`` reference of an object body (apiVersion, kind, namespace, name,
    uid and resourceVersion, those it has)."""
    meta = body.get("metadata") or {}
    ref: dict[str, Any] = {
        "apiVersion": str(body.get("apiVersion") or "v1"),
        "kind": str(body.get("kind") or ""),
        "name": str(meta.get("name") or ""),
    }
    for key in ("namespace", "uid", "resourceVersion"):
        if meta.get(key):
            ref[key] = str(meta[key])
    return ref


@dataclass
class _Sent:
    name: str
    namespace: str
    subject: str
    reason: str
    message: str
    count: int
    last: datetime


def _subject(ref: Mapping[str, Any]) -> str:
    return "/".join(str(ref.get(k) or "") for k in ("apiVersion", "kind", "namespace", "name"))


class ObjectEvents:
    """Writes (or bumps) Events on any object as ``component`` (see the module docstring)."""

    def __init__(
        self, *, api: Api, component: str, identity: str, now: Callable[[], datetime]
    ) -> None:
        self.api = api
        self.component = component
        self.identity = identity
        self.now = now
        self._sent: OrderedDict[str, _Sent] = OrderedDict()
        self._last_stamp = 0

    async def record_on(
        self,
        ref: Mapping[str, Any],
        reason: str,
        message: str,
        *,
        type_: str = "Normal",
        action: str = "",
        key: str = "",
    ) -> dict[str, Any]:
        """Write the Event about ``ref`` (an ``involvedObject``: :func:`involved`), or bump the
        one ``key`` made; returns it as stored."""
        text = " ".join(message.split())[:MESSAGE_LIMIT]
        subject = _subject(ref)
        key = key or f"{subject}|{reason}|{text}"
        now = self.now()
        sent = self._sent.get(key)
        if (
            sent is not None
            and (sent.subject, sent.reason, sent.message) == (subject, reason, text)
            and now - sent.last < AGGREGATE_WINDOW
        ):
            bumped = await self._bump(sent, now)
            if bumped is not None:
                self._sent.move_to_end(key)
                return bumped
        namespace = str(ref.get("namespace") or EVENT_NAMESPACE)
        created = await self._create(
            dict(ref), namespace, reason, text, type_=type_, action=action, now=now
        )
        name = str((created.get("metadata") or {}).get("name") or "")
        self._sent[key] = _Sent(name, namespace, subject, reason, text, 1, now)
        self._sent.move_to_end(key)
        while len(self._sent) > CACHE_SIZE:
            self._sent.popitem(last=False)
        return created

    async def _bump(self, sent: _Sent, now: datetime) -> dict[str, Any] | None:
        patch = {"count": sent.count + 1, "lastTimestamp": format_time(now)}
        try:
            answer = await self.api.request(
                "PATCH",
                f"/api/v1/namespaces/{sent.namespace}/events/{sent.name}",
                params={"fieldManager": self.component},
                body=patch,
                content_type=MERGE_PATCH,
            )
        except NotFound:
            return None  # expired (--event-ttl): a new one is made
        sent.count += 1
        sent.last = now
        return answer if isinstance(answer, dict) else {}

    def _name(self, name: str, now: datetime) -> str:
        # strictly increasing, since a paused simulated clock gives the same instant twice
        stamp = max(int(now.timestamp() * 1_000_000_000), self._last_stamp + 1)
        self._last_stamp = stamp
        return f"{name}.{stamp:x}"

    async def _create(
        self,
        ref: dict[str, Any],
        namespace: str,
        reason: str,
        text: str,
        *,
        type_: str,
        action: str,
        now: datetime,
    ) -> dict[str, Any]:
        when = format_time(now)
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"namespace": namespace},
            "involvedObject": ref,
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
        subject = str(ref.get("name") or "")
        for _ in range(3):
            body["metadata"]["name"] = self._name(subject, now)
            try:
                answer = await self.api.request(
                    "POST",
                    f"/api/v1/namespaces/{namespace}/events",
                    params={"fieldManager": self.component},
                    body=body,
                )
            except Conflict:
                continue  # the name is taken (another writer's clock): the next one
            return answer if isinstance(answer, dict) else body
        raise Conflict(
            reason="AlreadyExists",
            message=f"no free Event name for {ref.get('kind', 'object').lower()} {subject}",
        )


class NodeEvents(ObjectEvents):
    """Writes (or bumps) Events on Nodes (``involvedObject.uid`` the node's name)."""

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
        ref = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node}
        return await self.record_on(
            ref, reason, message, type_=type_, action=action, key=key or f"{node}|{reason}|"
            f"{' '.join(message.split())[:MESSAGE_LIMIT]}",
        )  # fmt: skip
