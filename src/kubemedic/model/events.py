"""Events, read the same way whichever API they came from.

The API server keeps one kind of event object and serves it both as ``core/v1`` ``Event``
(``involvedObject``, ``message``, ``count``, ``firstTimestamp``/``lastTimestamp``, ``source``) and
as ``events.k8s.io/v1`` ``Event`` (``regarding``, ``note``, ``series.count``, ``eventTime``,
``reportingController``/``reportingInstance``, ``deprecated*`` copies of the old fields). A
snapshot may hold either or both: ``EventRecord`` is the one shape checks read.

Times: a deduplicated event's ``count`` says how often it happened between its first and last
timestamp; newer clients leave ``firstTimestamp`` empty and set ``eventTime`` (a ``MicroTime``)
plus ``series.lastObservedTime`` instead, so every field is consulted in that order.

Liveness kills: when a container fails its liveness probe ``failureThreshold`` times in a row the
kubelet kills it and records a ``Killing`` event, ``Container <name> failed liveness probe, will be
restarted`` (without ``, will be restarted`` under ``restartPolicy: Never``).
``liveness_killed_container`` reads the container's name from it. A container that ignores the
SIGTERM is SIGKILLed after its grace period and exits 137 like an OOM kill: this event is what
tells the two apart.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from kubemedic.model import objects

__all__ = ["EventRecord", "liveness_killed_container", "read_event"]

MAX_MESSAGE = 4096
"""Event messages longer than this are cut (the API server itself truncates notes at 1 KiB, but
snapshots of other tools' stores need not have)."""

_LIVENESS_KILL = re.compile(r"^Container (?P<container>\S{1,253}) failed liveness probe")
"""The kubelet's ``Killing`` message (``kuberuntime_manager.go``, ``computePodActions``)."""


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One event, normalised. ``object_*`` describe the object the event is about."""

    uid: str
    namespace: str | None
    name: str
    reason: str
    message: str
    type: str
    object_kind: str
    object_name: str
    object_namespace: str | None
    object_uid: str | None
    count: int
    first_seen: datetime | None
    last_seen: datetime | None
    source: str
    host: str | None
    field_path: str | None = None
    """``involvedObject.fieldPath``: which container, e.g. ``spec.containers{hub}``."""
    annotations: Mapping[str, str] | None = None
    """The event's own annotations (the kubelet puts ``starved_resource``,
    ``offending_containers``... on Evicted events)."""

    @property
    def object_key(self) -> tuple[str, str | None, str]:
        return (self.object_kind, self.object_namespace, self.object_name)


def _clean(text: str) -> str:
    if len(text) > MAX_MESSAGE:
        text = text[:MAX_MESSAGE] + "…"
    return text


def read_event(body: objects.Body) -> EventRecord:
    """Normalise a ``core/v1`` or ``events.k8s.io/v1`` Event body."""
    meta = objects.get_map(body, "metadata")
    involved = objects.get_map(body, "involvedObject") or objects.get_map(body, "regarding")
    series = objects.get_map(body, "series")
    source = objects.get_map(body, "source") or objects.get_map(body, "deprecatedSource")

    message = objects.get_str(body, "message")
    if message is None:
        message = objects.get_str(body, "note") or ""

    count_raw = body.get("count") or series.get("count") or body.get("deprecatedCount") or 1
    count = count_raw if isinstance(count_raw, int) and count_raw > 0 else 1

    first = (
        objects.parse_time(body.get("firstTimestamp"))
        or objects.parse_time(body.get("deprecatedFirstTimestamp"))
        or objects.parse_time(body.get("eventTime"))
        or objects.parse_time(meta.get("creationTimestamp"))
    )
    last = (
        objects.parse_time(body.get("lastTimestamp"))
        or objects.parse_time(series.get("lastObservedTime"))
        or objects.parse_time(body.get("deprecatedLastTimestamp"))
        or objects.parse_time(body.get("eventTime"))
        or first
    )
    component = (
        objects.get_str(source, "component")
        or objects.get_str(body, "reportingController")
        or objects.get_str(body, "reportingComponent")
        or ""
    )
    # core/v1 always carries reportingInstance (no omitempty): an empty one is no host.
    host = objects.get_str(source, "host") or objects.get_str(body, "reportingInstance") or None
    namespace = meta.get("namespace")
    involved_ns = involved.get("namespace")
    return EventRecord(
        uid=str(meta.get("uid") or ""),
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        name=str(meta.get("name") or ""),
        reason=str(body.get("reason") or ""),
        message=_clean(message),
        type=str(body.get("type") or "Normal"),
        object_kind=str(involved.get("kind") or ""),
        object_name=str(involved.get("name") or ""),
        object_namespace=involved_ns if isinstance(involved_ns, str) and involved_ns else None,
        object_uid=involved.get("uid") if isinstance(involved.get("uid"), str) else None,
        count=count,
        first_seen=first,
        last_seen=last,
        source=component,
        host=host,
        field_path=objects.get_str(involved, "fieldPath"),
        annotations=objects.get_map(meta, "annotations") or None,
    )


def liveness_killed_container(event: EventRecord) -> str | None:
    """The container a ``Killing`` event says the kubelet killed for failing its liveness probe,
    or None for any other event (startup probe failures, spec changes, pod deletion)."""
    if event.reason != "Killing":
        return None
    match = _LIVENESS_KILL.match(event.message)
    return match.group("container") if match else None
