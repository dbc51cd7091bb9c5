"""Events, recorded the way client-go's two recorders write them.

**core/v1** (``client-go/tools/record``, used by the kubelet and kube-controller-manager): every
event passes the ``EventCorrelator`` before it is written.

- *Spam filter*: per source and involved object, a token bucket of 25 with one token back every
  5 minutes; events beyond it are dropped (the real kubelet drops them too).
- *Aggregator*: events that differ only in their message are counted by distinct message; from
  the tenth distinct message for the same object, reason and type (the set resets after 10
  minutes without a similar event) they are folded into one event whose message reads
  ``(combined from similar events): <latest message>``. Identical events never combine.
- *Logger*: an event identical to one already written (same source, object, type, reason and
  message) PATCHes the existing one: ``count`` + 1 and a new ``lastTimestamp``. Names are
  ``<object name>.<hex of UnixNano>``.

**events.k8s.io/v1** (``client-go/tools/events``, used by kube-scheduler): an event isomorphic to
a cached one (same regarding object, action, reason, reporting controller and related object)
starts a series on its second occurrence (``series.count`` 2, written at once); later
occurrences only bump the cached count, which is written every 30 minutes and when the series
ends (no occurrence for 6 minutes).

Events are written into the one event store the API server keeps (core shape), so both APIs
list them, and they expire after the server's ``--event-ttl``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from kubemedic.sim.apiserver.registry import converting
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.clock import rfc3339, rfc3339_micro
from kubemedic.sim.machinery.objects import Obj

__all__ = ["EventRecorder", "SeriesRecorder", "reference"]

T = TypeVar("T")

_SPAM_BURST = 25
_SPAM_REFILL_SECONDS = 300.0
_AGGREGATE_WINDOW = 600.0
_AGGREGATE_MAX = 10
_CACHE_SECONDS = 600.0
_SERIES_FINISH = 360.0
_SERIES_REFRESH = 1800.0
_LRU_ENTRIES = 4096
COMBINED_PREFIX = "(combined from similar events): "


def reference(obj: Mapping[str, Any], *, field_path: str = "") -> dict[str, Any]:
    """An ObjectReference to ``obj`` (as ``ref.GetReference`` builds it)."""
    meta = obj.get("metadata") or {}
    ref: dict[str, Any] = {
        "kind": obj.get("kind", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": obj.get("apiVersion", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


class _Lru(OrderedDict[tuple[str, ...], T]):
    """client-go's caches: least-recently-used, 4,096 entries each."""

    def get(self, key: tuple[str, ...], default: T | None = None) -> T | None:  # type: ignore[override]
        value = super().get(key)
        if value is None:
            return default
        self.move_to_end(key)
        return value

    def put(self, key: tuple[str, ...], value: T) -> T:
        self[key] = value
        self.move_to_end(key)
        if len(self) > _LRU_ENTRIES:
            self.popitem(last=False)
        return value


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class _Similar:
    messages: set[str]
    at: float


@dataclass
class _Logged:
    name: str
    namespace: str
    count: int
    first: str
    at: float


@dataclass
class EventRecorder:
    """A core/v1 event recorder for one component (``kubelet`` on a host, or a controller)."""

    sim: Simulation
    component: str
    host: str = ""
    manager: str = ""
    _client: Client = field(init=False)
    _buckets: _Lru[_Bucket] = field(default_factory=_Lru)
    _similar: _Lru[_Similar] = field(default_factory=_Lru)
    _logged: _Lru[_Logged] = field(default_factory=_Lru)
    dropped: int = 0

    def __post_init__(self) -> None:
        self._client = Client(self.sim.server, self.manager or self.component)

    def event(
        self,
        obj: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        *,
        field_path: str = "",
    ) -> None:
        """Record one event about ``obj`` (``type_`` is ``Normal`` or ``Warning``)."""
        now = self.sim.seconds()
        ref = reference(obj, field_path=field_path)
        obj_key = (
            ref.get("kind", ""), ref.get("namespace", ""), ref.get("name", ""),
            ref.get("uid", ""), ref.get("apiVersion", ""),
        )  # fmt: skip
        if not self._allow(obj_key, now):
            self.dropped += 1
            return
        similar_key = (*obj_key, type_, reason, ref.get("fieldPath", ""))
        similar = self._similar.get(similar_key)
        if similar is None or now - similar.at >= _AGGREGATE_WINDOW:
            similar = self._similar.put(similar_key, _Similar(set(), now))
        similar.at = now
        similar.messages.add(message)
        if len(similar.messages) >= _AGGREGATE_MAX:
            # The aggregator keeps at most ten distinct messages per key.
            similar.messages.discard(message)
            message = COMBINED_PREFIX + message
            log_key = (*similar_key, COMBINED_PREFIX)
        else:
            log_key = (*similar_key, message)
        stamp = rfc3339(self.sim.now())
        logged = self._logged.get(log_key)
        if logged is not None and now - logged.at < _CACHE_SECONDS:
            patch = {"count": logged.count + 1, "lastTimestamp": stamp, "message": message}
            try:
                self._client.patch("v1", "Event", logged.name, patch, namespace=logged.namespace)
                logged.count += 1
                logged.at = now
                return
            except errors.StatusError as exc:
                if exc.code != 404:  # expired: write a new one, as the recorder does
                    raise
        namespace = str(ref.get("namespace") or "default")
        name = f"{ref.get('name', '')}.{self.sim.nanos():x}"
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": ref,
            "reason": reason,
            "message": message,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
            "type": type_,
            "eventTime": None,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        try:
            self._client.create(body)
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
            return
        self._logged.put(log_key, _Logged(name, namespace, 1, stamp, now))

    def _allow(self, key: tuple[str, ...], now: float) -> bool:
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets.put(key, _Bucket(_SPAM_BURST, now))
        bucket.tokens = min(_SPAM_BURST, bucket.tokens + (now - bucket.at) / _SPAM_REFILL_SECONDS)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True


@dataclass
class _Series:
    name: str
    namespace: str
    count: int
    last: datetime
    written_count: int
    written_at: float


@dataclass
class SeriesRecorder:
    """An events.k8s.io/v1 recorder (kube-scheduler's): series instead of counts."""

    sim: Simulation
    controller: str
    instance: str
    manager: str = ""
    _client: Client = field(init=False)
    _cache: dict[tuple[str, ...], _Series] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._client = Client(self.sim.server, self.manager or self.controller)
        self.sim.every(60.0, self._maintain, name=f"{self.controller} event series")

    def event(
        self,
        regarding: Mapping[str, Any],
        type_: str,
        reason: str,
        action: str,
        note: str,
    ) -> None:
        ref = reference(regarding)
        key = (
            action, reason, self.controller, ref.get("kind", ""), ref.get("namespace", ""),
            ref.get("name", ""), ref.get("uid", ""),
        )  # fmt: skip
        moment = self.sim.now()
        cached = self._cache.get(key)
        if cached is not None:
            cached.count = max(cached.count, 1) + 1
            cached.last = moment
            if cached.count == 2:
                self._write_series(cached)
            return
        namespace = str(ref.get("namespace") or "default")
        name = f"{ref.get('name', '')}.{self.sim.nanos():x}"
        ev: Obj = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": namespace},
            "eventTime": rfc3339_micro(moment),
            "reportingController": self.controller,
            "reportingInstance": self.instance,
            "action": action,
            "reason": reason,
            "regarding": ref,
            "note": note,
            "type": type_,
        }
        try:
            self._client.create(converting.events_v1_to_core(ev))
        except errors.StatusError as exc:
            if exc.code != 409:
                raise
            return
        self._cache[key] = _Series(name, namespace, 1, moment, 1, self.sim.seconds())

    def _write_series(self, series: _Series) -> None:
        patch = {"series": {"count": series.count, "lastObservedTime": rfc3339_micro(series.last)}}
        try:
            self._client.patch(
                "v1", "Event", series.name, patch, namespace=series.namespace, patch_type="merge"
            )
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
        series.written_count = series.count
        series.written_at = self.sim.seconds()

    def _maintain(self) -> None:
        """Refresh long series every 30 minutes; finish those idle for 6 minutes."""
        now = self.sim.now()
        seconds = now.timestamp()
        for key, series in list(self._cache.items()):
            idle = (now - series.last).total_seconds()
            if idle >= _SERIES_FINISH:
                if series.count > series.written_count and series.count > 1:
                    self._write_series(series)
                del self._cache[key]
            elif series.count > 1 and seconds - series.written_at >= _SERIES_REFRESH:
                self._write_series(series)
