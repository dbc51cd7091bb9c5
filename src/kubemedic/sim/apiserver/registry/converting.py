"""One set of events, served as ``core/v1`` and as ``events.k8s.io/v1``.

The real API server stores every Event once (the internal ``core.Event``, persisted as
``core/v1``) and serves the same objects under ``/api/v1/.../events`` and
``/apis/events.k8s.io/v1/.../events``: the registry of ``events.k8s.io`` is the core event
storage. Reading through either API converts the stored object
(``pkg/apis/events/v1/conversion.go``); writing through ``events.k8s.io`` converts back before
storing, so an event written by the new ``client-go/tools/events`` recorder is listed by
``kubectl get events`` and one written by the legacy recorder is listed by
``kubectl get events.events.k8s.io``.

The conversion is a pure renaming, lossless both ways, and fills nothing in:

=====================================  =============================================
``core/v1``                            ``events.k8s.io/v1``
=====================================  =============================================
``involvedObject``                     ``regarding``
``message``                            ``note``
``source`` (``component``, ``host``)   ``deprecatedSource``
``firstTimestamp``                     ``deprecatedFirstTimestamp``
``lastTimestamp``                      ``deprecatedLastTimestamp``
``count``                              ``deprecatedCount``
``reportingComponent``                 ``reportingController``
=====================================  =============================================

``metadata``, ``eventTime``, ``series``, ``action``, ``reason``, ``related``, ``type`` and
``reportingInstance`` keep their names. No field is derived from another: an event written
through ``events.k8s.io`` has no ``source`` unless it set ``deprecatedSource``, and a legacy
event has no ``reportingController`` unless it set ``reportingComponent``.

Results are shaped as the real server serialises the Go structs, so a round trip through the
other form gives back :func:`canonical_core_event` of the input: empty strings, zero counts and
absent references are omitted (``omitempty``), except ``reportingComponent`` and
``reportingInstance`` of ``core/v1``, which carry no ``omitempty`` and always appear; unset
``metav1.Time``/``MicroTime`` fields appear as ``null`` (``eventTime``, ``firstTimestamp``...:
``omitempty`` never omits a struct); ``source``/``deprecatedSource``/``regarding`` appear as
``{}`` when empty. ``Time`` values print at second precision and ``MicroTime`` values at
microsecond precision, both in UTC. Unknown fields are dropped, as decoding into the Go struct
drops them.

Field selectors are evaluated on the stored (core) object: :func:`event_selectable_fields` is
the registry's ``ToSelectableFields`` (``pkg/registry/core/event/strategy.go``). Each API
accepts its own label names and converts them to the core ones first
(``AddFieldLabelConversionsForEvent`` of both versions): ``involvedObject.kind`` on ``core/v1``,
``regarding.kind`` on ``events.k8s.io/v1``, ``reportingComponent`` vs ``reportingController``;
any other label is a ``400 BadRequest`` ``field label not supported: <label>``. ``source``
matches ``source.component``, or ``reportingComponent`` when the event has no source, so a
selector on ``source=kubelet`` finds events of either recorder.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubemedic.model import objects
from kubemedic.sim.machinery import clock

__all__ = [
    "CORE_EVENT_FIELD_LABELS",
    "EVENTS_V1_FIELD_LABELS",
    "canonical_core_event",
    "core_to_events_v1",
    "event_selectable_fields",
    "events_v1_to_core",
]

Body = Mapping[str, Any]

_REFERENCE_KEYS: Final = (
    "kind",
    "namespace",
    "name",
    "uid",
    "apiVersion",
    "resourceVersion",
    "fieldPath",
)
"""``ObjectReference`` fields in Go struct order, all ``omitempty`` strings."""

CORE_EVENT_FIELD_LABELS: Final = frozenset(
    {
        *(f"involvedObject.{key}" for key in _REFERENCE_KEYS),
        "reason",
        "reportingComponent",
        "source",
        "type",
        "metadata.namespace",
        "metadata.name",
    }
)
"""Field selector labels ``core/v1`` events accept (and the keys of the selectable fields)."""

EVENTS_V1_FIELD_LABELS: Final[Mapping[str, str]] = {
    "reason": "reason",
    **{f"regarding.{key}": f"involvedObject.{key}" for key in _REFERENCE_KEYS},
    "reportingController": "reportingComponent",
    "source": "source",
    "type": "type",
    "metadata.namespace": "metadata.namespace",
    "metadata.name": "metadata.name",
}
"""Field selector labels ``events.k8s.io/v1`` accepts, mapped to the core labels they select."""

EVENTS_GROUP: Final = "events.k8s.io"


@dataclass(frozen=True, slots=True)
class _Event:
    """The internal ``core.Event``: what both served forms are made of."""

    metadata: dict[str, Any]
    involved: dict[str, Any]
    reason: str
    message: str
    source: dict[str, Any]
    first: str | None
    last: str | None
    count: int
    type: str
    event_time: str | None
    series: tuple[int, str | None] | None
    action: str
    related: dict[str, Any] | None
    reporting_controller: str
    reporting_instance: str


def _string(body: Body, key: str) -> str:
    value = body.get(key)
    return value if isinstance(value, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _time(value: Any, *, micro: bool) -> str | None:
    """A ``metav1.Time`` (or ``MicroTime``) as Go prints it; None for the zero time. A string
    that does not parse is kept as it is: the server would have refused it on the way in."""
    if value is None or value == "":
        return None
    parsed = objects.parse_time(value)
    if parsed is None:
        return str(value)
    return clock.rfc3339_micro(parsed) if micro else clock.rfc3339(parsed)


def _reference(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {key: value[key] for key in _REFERENCE_KEYS if value.get(key) not in (None, "")}


def _source(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        return {}
    return {key: value[key] for key in ("component", "host") if value.get(key) not in (None, "")}


def _series(value: Any) -> tuple[int, str | None] | None:
    if not isinstance(value, Mapping):
        return None
    return (_int(value.get("count")), _time(value.get("lastObservedTime"), micro=True))


def _metadata(body: Body) -> dict[str, Any]:
    meta = body.get("metadata")
    return copy.deepcopy(dict(meta)) if isinstance(meta, Mapping) else {}


def _from_core(core: Body) -> _Event:
    related = core.get("related")
    return _Event(
        metadata=_metadata(core),
        involved=_reference(core.get("involvedObject")),
        reason=_string(core, "reason"),
        message=_string(core, "message"),
        source=_source(core.get("source")),
        first=_time(core.get("firstTimestamp"), micro=False),
        last=_time(core.get("lastTimestamp"), micro=False),
        count=_int(core.get("count")),
        type=_string(core, "type"),
        event_time=_time(core.get("eventTime"), micro=True),
        series=_series(core.get("series")),
        action=_string(core, "action"),
        related=_reference(related) if isinstance(related, Mapping) else None,
        reporting_controller=_string(core, "reportingComponent"),
        reporting_instance=_string(core, "reportingInstance"),
    )


def _from_events_v1(ev: Body) -> _Event:
    related = ev.get("related")
    return _Event(
        metadata=_metadata(ev),
        involved=_reference(ev.get("regarding")),
        reason=_string(ev, "reason"),
        message=_string(ev, "note"),
        source=_source(ev.get("deprecatedSource")),
        first=_time(ev.get("deprecatedFirstTimestamp"), micro=False),
        last=_time(ev.get("deprecatedLastTimestamp"), micro=False),
        count=_int(ev.get("deprecatedCount")),
        type=_string(ev, "type"),
        event_time=_time(ev.get("eventTime"), micro=True),
        series=_series(ev.get("series")),
        action=_string(ev, "action"),
        related=_reference(related) if isinstance(related, Mapping) else None,
        reporting_controller=_string(ev, "reportingController"),
        reporting_instance=_string(ev, "reportingInstance"),
    )


def _to_core(event: _Event) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": "v1",
        "metadata": event.metadata,
        "involvedObject": event.involved,
    }
    if event.reason:
        out["reason"] = event.reason
    if event.message:
        out["message"] = event.message
    out["source"] = event.source
    out["firstTimestamp"] = event.first
    out["lastTimestamp"] = event.last
    if event.count:
        out["count"] = event.count
    if event.type:
        out["type"] = event.type
    out["eventTime"] = event.event_time
    if event.series is not None:
        count, observed = event.series
        # core/v1 EventSeries: count is omitempty, lastObservedTime a struct (never omitted).
        out["series"] = {**({"count": count} if count else {}), "lastObservedTime": observed}
    if event.action:
        out["action"] = event.action
    if event.related is not None:
        out["related"] = event.related
    out["reportingComponent"] = event.reporting_controller
    out["reportingInstance"] = event.reporting_instance
    return out


def _to_events_v1(event: _Event) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "Event",
        "apiVersion": f"{EVENTS_GROUP}/v1",
        "metadata": event.metadata,
        "eventTime": event.event_time,
    }
    if event.series is not None:
        count, observed = event.series
        out["series"] = {"count": count, "lastObservedTime": observed}
    if event.reporting_controller:
        out["reportingController"] = event.reporting_controller
    if event.reporting_instance:
        out["reportingInstance"] = event.reporting_instance
    if event.action:
        out["action"] = event.action
    if event.reason:
        out["reason"] = event.reason
    out["regarding"] = event.involved
    if event.related is not None:
        out["related"] = event.related
    if event.message:
        out["note"] = event.message
    if event.type:
        out["type"] = event.type
    out["deprecatedSource"] = event.source
    out["deprecatedFirstTimestamp"] = event.first
    out["deprecatedLastTimestamp"] = event.last
    if event.count:
        out["deprecatedCount"] = event.count
    return out


def core_to_events_v1(core: Body) -> dict[str, Any]:
    """The ``events.k8s.io/v1`` form of a ``core/v1`` Event (a new dict; the input is left
    alone)."""
    return _to_events_v1(_from_core(core))


def events_v1_to_core(ev: Body) -> dict[str, Any]:
    """The ``core/v1`` form of an ``events.k8s.io/v1`` Event, as it is stored and as
    ``/api/v1`` serves it."""
    return _to_core(_from_events_v1(ev))


def canonical_core_event(core: Body) -> dict[str, Any]:
    """A ``core/v1`` Event as the real server serialises it after decoding: the ``null`` times,
    ``{}`` source and empty ``reportingComponent`` a client may leave out, unknown fields
    dropped, times normalised. Converting to ``events.k8s.io/v1`` and back gives this."""
    return _to_core(_from_core(core))


def event_selectable_fields(core: Body) -> dict[str, str]:
    """The fields a selector can test on a stored (``core/v1``) Event, by core label, each
    present (``""`` when unset) as in the Go ``fields.Set``."""
    meta = core.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    involved = _reference(core.get("involvedObject"))
    source = _source(core.get("source"))
    reporting = _string(core, "reportingComponent")
    fields = {f"involvedObject.{key}": str(involved.get(key, "")) for key in _REFERENCE_KEYS}
    fields.update(
        {
            "reason": _string(core, "reason"),
            "reportingComponent": reporting,
            "source": str(source.get("component") or reporting),
            "type": _string(core, "type"),
            "metadata.name": _string(meta, "name"),
            "metadata.namespace": _string(meta, "namespace"),
        }
    )
    return fields
