"""What the archive keeps: one record type per table.

These are pure values (no I/O): :mod:`kubemedic.store.extraction` reads them from watch and list
bodies, :mod:`kubemedic.store.writer` writes them and :mod:`kubemedic.store.queries` reads some
back. Times are timezone-aware datetimes here and epoch seconds in the database. Absent text is
``""`` (never None) so records compare equal however they were produced; ``storable_text`` and
``storable_int`` make any value fit its column.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "INT32",
    "INT64",
    "MAX_MESSAGE",
    "MAX_TEXT",
    "EventRow",
    "EvictionRow",
    "MetricSample",
    "NodeTransition",
    "TerminationRow",
    "storable_int",
    "storable_text",
]


@dataclass(frozen=True, slots=True)
class EventRow:
    """An Event object as archived: one per uid, its latest version."""

    uid: str
    api_version: str
    namespace: str
    name: str
    type: str
    reason: str
    message: str
    object_kind: str
    object_namespace: str
    object_name: str
    object_uid: str
    field_path: str
    source: str
    host: str
    node: str
    count: int
    first_seen: datetime | None
    last_seen: datetime | None
    resource_version: str


@dataclass(frozen=True, slots=True)
class TerminationRow:
    """One container termination (``state.terminated`` or ``lastState.terminated``)."""

    pod_uid: str
    namespace: str
    pod: str
    container: str
    key: str
    node: str
    owner_kind: str
    owner_name: str
    reason: str
    exit_code: int | None
    signal: int | None
    restart_count: int
    started_at: datetime | None
    finished_at: datetime | None
    message: str
    memory_request: int | None
    memory_limit: int | None


@dataclass(frozen=True, slots=True)
class EvictionRow:
    """A pod disrupted by the kubelet (node pressure, storage limits, admission under pressure)."""

    pod_uid: str
    namespace: str
    pod: str
    node: str
    owner_kind: str
    owner_name: str
    at: datetime | None
    kind: str
    resource: str
    threshold: str
    available: str
    container: str
    usage: int | None
    request: int | None
    message: str
    source: str


@dataclass(frozen=True, slots=True)
class NodeTransition:
    """A node condition's change of status, at its lastTransitionTime."""

    node: str
    condition: str
    status: str
    previous: str
    reason: str
    message: str
    at: datetime


@dataclass(frozen=True, slots=True)
class MetricSample:
    """One metrics.k8s.io usage sample: a container of a pod, or a node (``container`` "")."""

    kind: str
    namespace: str
    name: str
    container: str
    node: str
    at: datetime
    window_seconds: float | None
    cpu_millicores: float | None
    memory_bytes: int | None


# -- what a column holds --------------------------------------------------------------------------

MAX_TEXT = 1024
"""Characters kept of a name, kind, reason or key (Kubernetes names are at most 253)."""

MAX_MESSAGE = 4096
"""Characters kept of a message (the API server cuts event notes at 1 KiB; other stores need
not have)."""

INT32 = 2**31 - 1
"""The largest count or code a column holds."""
INT64 = 2**63 - 1
"""The largest byte count (or millicores) a column holds."""


def storable_text(value: object, limit: int = MAX_TEXT) -> str:
    """``value`` as storable text: "" unless a string, cut to ``limit`` characters, lone
    surrogates (a bad decode) as ``?`` and NUL (which PostgreSQL text refuses) as U+FFFD."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value[: limit * 4]).decode("utf-8", "replace")
    if not isinstance(value, str):
        return ""
    if len(value) > limit:
        value = value[:limit] + "…"
    if not value.isascii():
        value = value.encode("utf-8", "replace").decode("utf-8")
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def storable_int(value: object, *, low: int = -INT32 - 1, high: int = INT32) -> int | None:
    """An integer within ``[low, high]`` (int32 by default), else None (booleans are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if low <= value <= high else None
