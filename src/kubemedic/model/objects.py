"""Kubernetes object bodies as kubemedic reads them, and references to them.

Bodies arrive as decoded JSON (``kubectl get -o json``, a watch event, a snapshot file). They are
kept as plain mappings, the way the API server serialised them, and read through the small
accessors here so that a missing or wrongly-typed field reads as "absent" rather than crashing a
check: a snapshot from an old or odd cluster must still be judged.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import gc
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "Body",
    "GcPause",
    "LoadedBody",
    "ObjectRef",
    "format_exact_time",
    "format_micro_time",
    "format_time",
    "gc_paused",
    "get_list",
    "get_map",
    "get_str",
    "labels",
    "parse_time",
    "ref_of",
]

Body = Mapping[str, Any]
"""A Kubernetes object as decoded JSON."""


class LoadedBody(dict[str, Any]):
    """A body as read from a snapshot (or received from the API): a plain ``dict`` that is never
    changed afterwards, so what is derived from it may be memoized on it in ``memo`` (which
    ``kubemedic.model.resources`` uses for a pod's effective requests and limits). Any copy
    (``dict(body)``, ``copy.copy``, ``copy.deepcopy``, pickling) is a plain ``dict`` without the
    memo, so an edited copy is never judged by its original's numbers."""

    __slots__ = ("memo",)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.memo: Any = None

    def __copy__(self) -> dict[str, Any]:
        return dict(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return copy.deepcopy(dict(self), memo)

    def __reduce__(self) -> tuple[Any, ...]:
        return (dict, (dict(self),))


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """Which object a finding is about (``object`` in the finding JSON)."""

    kind: str
    name: str
    namespace: str | None = None
    api_version: str = "v1"

    def to_json(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace,
            "name": self.name,
        }

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"

    def __lt__(self, other: ObjectRef) -> bool:
        return self.order < other.order

    @property
    def order(self) -> tuple[str, str, str, str]:
        """Sort order: kind, namespace (cluster-scoped first), name, apiVersion."""
        return (self.kind, self.namespace or "", self.name, self.api_version)

    @property
    def key(self) -> str:
        """``namespace/name`` (or ``name`` for cluster-scoped objects)."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name


# The accessors below run millions of times in a scan. Decoded JSON is dicts and a missing
# field is None: both are told apart without the ``Mapping`` ABC check, which is slow.


def get_map(body: Any, *keys: str) -> Mapping[str, Any]:
    """The mapping at ``body[k1][k2]...``, or an empty mapping if any step is missing."""
    node = body
    for key in keys:
        if isinstance(node, dict) or (node is not None and isinstance(node, Mapping)):
            node = node.get(key)
        else:
            return {}
    if isinstance(node, dict):
        return node
    return node if node is not None and isinstance(node, Mapping) else {}


def get_list(body: Any, *keys: str) -> list[Any]:
    """The list at ``body[k1][k2]...``, or an empty list."""
    node = body
    for key in keys:
        if isinstance(node, dict) or (node is not None and isinstance(node, Mapping)):
            node = node.get(key)
        else:
            return []
    return node if isinstance(node, list) else []


def get_str(body: Any, *keys: str) -> str | None:
    """The string at ``body[k1][k2]...``, or None."""
    node = body
    for key in keys:
        if isinstance(node, dict) or (node is not None and isinstance(node, Mapping)):
            node = node.get(key)
        else:
            return None
    return node if isinstance(node, str) else None


def labels(body: Body) -> Mapping[str, str]:
    return get_map(body, "metadata", "labels")


def ref_of(body: Body) -> ObjectRef:
    meta = get_map(body, "metadata")
    namespace = meta.get("namespace")
    return ObjectRef(
        kind=str(body.get("kind") or ""),
        name=str(meta.get("name") or ""),
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        api_version=str(body.get("apiVersion") or "v1"),
    )


@functools.lru_cache(maxsize=131072)
def _parse_time_cached(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``metav1.Time`` or ``MicroTime``) as an aware datetime, or None.

    Hand-written YAML with unquoted timestamps decodes to ``datetime`` already: accepted too."""
    if type(value) is str and 0 < len(value) <= 64:
        return _parse_time_cached(value)
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if not isinstance(value, str) or not value or len(value) > 64:
        return None
    return _parse_time_cached(value)


def format_time(value: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, seconds precision, as ``metav1.Time`` serialises
    (``2026-11-30T05:21:32Z``)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(value: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, microsecond precision, as ``metav1.MicroTime`` serialises
    (``2026-11-30T05:21:32.123456Z``: Lease renewals, events.k8s.io ``eventTime``)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def format_exact_time(value: datetime) -> str:
    """``format_time``, or ``format_micro_time`` when ``value`` has a fraction of a second: the
    exact instant in the shorter spelling (how kubemedic's own records write their times)."""
    return format_micro_time(value) if value.microsecond else format_time(value)


class GcPause:
    """Handed out by ``gc_paused``; set ``freeze`` to keep what was built out of later
    collections (``gc.freeze``): right for a snapshot that lives as long as the process's scan."""

    __slots__ = ("freeze",)

    def __init__(self) -> None:
        self.freeze = False


@contextlib.contextmanager
def gc_paused() -> Iterator[GcPause]:
    """Pause the cyclic garbage collector while a large tree of decoded JSON is built.

    Such trees hold no reference cycles (refcounting frees them), yet every collection of the
    oldest generation walks all of them: reading 150,000 pods would run it again and again and
    take several times longer, and the first collections after the pause would still walk every
    new object unless ``freeze`` is set. The collector's previous state is restored on exit."""
    pause = GcPause()
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield pause
    finally:
        if pause.freeze:
            gc.freeze()
        if enabled:
            gc.enable()
