"""What the archive keeps, read from object bodies: one record type per table.

These are pure values (no I/O); ``kubemedic.store`` writes them and reads them back. Times are
timezone-aware datetimes here and epoch seconds in the database. Absent text is ``""`` (never
None) so records compare equal however they were produced.

The extraction functions below read watch and list bodies into records. They are total: any
input (missing fields, wrong types, invalid quantities, megabyte or badly decoded strings) gives
records or nothing and never raises, and every string they return is storable as it is in
SQLite and PostgreSQL (UTF-8 without lone surrogates, no NUL, bounded length) and every integer
fits its column (int32 for counts and codes, int64 for bytes).

Which body says what:

* **Events**: ``core/v1`` and ``events.k8s.io/v1`` are two views of one object
  (:func:`kubemedic.model.events.read_event` reads both); one row per uid.
* **Terminations**: the kubelet writes a container's exit into ``state.terminated`` and, once
  it restarts the container or backs off (``CrashLoopBackOff``), moves it to
  ``lastState.terminated`` (``convertToAPIContainerStatuses`` in ``pkg/kubelet/kubelet_pods.go``).
  A kernel OOM kill reads ``reason: OOMKilled``, ``exitCode: 137`` with the runtime's
  ``containerID`` (``containerd://<64 hex>``); a pod the eviction manager killed has its
  containers reported as ``ContainerStatusUnknown``, exit 137, without containerID or times.
* **Evictions**: the pod's status (``Failed``/``Evicted`` and a ``DisruptionTarget`` condition)
  and the kubelet's ``Evicted`` Warning event say the same thing; the store merges both by pod
  uid (see :mod:`kubemedic.model.eviction` for the wording).
* **Node conditions**: the node lifecycle and the kubelet rewrite ``lastHeartbeatTime`` on every
  status update but ``lastTransitionTime`` only when the status changes.
* **Metrics**: ``metrics.k8s.io/v1beta1`` PodMetrics (one usage per container) and NodeMetrics,
  each over a ``window`` ending at ``timestamp``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubemedic.model import eviction, objects
from kubemedic.model.durations import DurationError, parse_seconds
from kubemedic.model.events import read_event
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity

__all__ = [
    "EventRow",
    "EvictionRow",
    "MetricSample",
    "NodeTransition",
    "TerminationRow",
    "event_row",
    "eviction_from_event",
    "eviction_from_pod",
    "go_duration_seconds",
    "metric_samples",
    "node_transitions",
    "terminations",
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


# -- sanitising -------------------------------------------------------------------------------

MAX_TEXT = 1024
"""Characters kept of a name, kind, reason or key (Kubernetes names are at most 253)."""

MAX_MESSAGE = 4096
"""Characters kept of a message (the API server cuts event notes at 1 KiB; other stores need
not have)."""

_INT32 = 2**31 - 1
_INT64 = 2**63 - 1


def _text(value: object, limit: int = MAX_TEXT) -> str:
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


def _int(value: object, *, low: int = -_INT32 - 1, high: int = _INT32) -> int | None:
    """An integer within ``[low, high]`` (int32 by default), else None (booleans are not)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if low <= value <= high else None


def _bytes(value: object) -> int | None:
    """A quantity in whole bytes (rounded up, as ``Quantity.Value()``), or None when absent,
    invalid, negative or beyond int64."""
    if value is None:
        return None
    try:
        quantity = parse_quantity(value)
    except QuantityError:
        return None
    return _whole(quantity.value)


def _whole(value: Any) -> int | None:
    amount = math.ceil(value)
    return amount if 0 <= amount <= _INT64 else None


def _amount(amount: eviction.Amount | None, resource: str) -> int | None:
    """An eviction message's quantity in the archive's unit: millicores for ``cpu``, else
    bytes (memory, ephemeral-storage) or a plain count (pids); None for unparsed text."""
    if not isinstance(amount, Quantity):
        return None
    return _whole(amount.value * 1000 if resource == "cpu" else amount.value)


def _owner(meta: Mapping[str, Any]) -> tuple[str, str]:
    """Kind and name of the controller ``ownerReference`` (``controller: true``), else ""."""
    for ref in objects.get_list(meta, "ownerReferences"):
        if isinstance(ref, Mapping) and ref.get("controller") is True:
            return _text(ref.get("kind")), _text(ref.get("name"))
    return "", ""


# -- events -----------------------------------------------------------------------------------


def event_row(body: objects.Body) -> EventRow | None:
    """The archive row of a ``core/v1`` or ``events.k8s.io/v1`` Event, or None without a uid
    (the row's identity). ``node`` is the object's name for an event about a Node (the
    ``NodeNotReady``, ``SystemOOM`` kind), else the reporting host (a kubelet's node)."""
    if not isinstance(body, Mapping):
        return None
    meta = objects.get_map(body, "metadata")
    uid = _text(meta.get("uid"))
    if not uid:
        return None
    record = read_event(body)
    api_version = _text(body.get("apiVersion")) or (
        "events.k8s.io/v1" if "regarding" in body or "note" in body else "v1"
    )
    object_kind = _text(record.object_kind)
    object_name = _text(record.object_name)
    host = _text(record.host)
    return EventRow(
        uid=uid,
        api_version=api_version,
        namespace=_text(record.namespace),
        name=_text(record.name),
        type=_text(record.type),
        reason=_text(record.reason),
        message=_text(record.message, MAX_MESSAGE),
        object_kind=object_kind,
        object_namespace=_text(record.object_namespace),
        object_name=object_name,
        object_uid=_text(record.object_uid),
        field_path=_text(record.field_path),
        source=_text(record.source),
        host=host,
        node=object_name if object_kind == "Node" else host,
        count=min(record.count, _INT32),
        first_seen=record.first_seen,
        last_seen=record.last_seen,
        resource_version=_text(meta.get("resourceVersion")),
    )


# -- terminations -----------------------------------------------------------------------------

_STATUS_LISTS = ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses")
_SPEC_LISTS = ("initContainers", "containers", "ephemeralContainers")


def _memory(spec: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """Memory request and limit in bytes. A limit without a request means a request equal to
    the limit: the API server defaults it so (``SetDefaults_Container``), a snapshot written
    by hand may not have."""
    resources = objects.get_map(spec, "resources")
    limits = objects.get_map(resources, "limits")
    requests = objects.get_map(resources, "requests")
    limit = _bytes(limits.get("memory"))
    request = _bytes(requests["memory"]) if "memory" in requests else limit
    return request, limit


def terminations(pod: objects.Body) -> list[TerminationRow]:
    """Every ``state.terminated`` and ``lastState.terminated`` of the pod's init, app and
    ephemeral containers.

    ``key`` is the terminated state's ``containerID`` (one per container instance) when the
    runtime gave one, else ``"<startedAt>/<finishedAt>"`` as written.

    ``restart_count`` is the container status's ``restartCount`` as read beside the
    termination: the restart count the kubelet's runtime labelled the newest container
    instance with. For ``state.terminated`` that is the dead instance's own count; once the
    kubelet starts the next instance the same termination moves to ``lastState`` and the count
    is one higher (during ``CrashLoopBackOff`` it is not yet). So a termination read again later
    can only carry a larger count: writers keep the largest.
    """
    if not isinstance(pod, Mapping):
        return []
    meta = objects.get_map(pod, "metadata")
    pod_uid = _text(meta.get("uid"))
    if not pod_uid:
        return []
    namespace, name = _text(meta.get("namespace")), _text(meta.get("name"))
    node = _text(objects.get_str(pod, "spec", "nodeName"))
    owner_kind, owner_name = _owner(meta)
    specs: dict[str, Mapping[str, Any]] = {}
    for field in _SPEC_LISTS:
        for spec in objects.get_list(pod, "spec", field):
            if isinstance(spec, Mapping) and isinstance(spec.get("name"), str):
                specs.setdefault(spec["name"], spec)
    rows: dict[tuple[str, str], TerminationRow] = {}
    for field in _STATUS_LISTS:
        for status in objects.get_list(pod, "status", field):
            if not isinstance(status, Mapping) or not isinstance(status.get("name"), str):
                continue
            container = _text(status["name"])
            request, limit = _memory(specs.get(status["name"], {}))
            restarts = _int(status.get("restartCount"), low=0) or 0
            for which in ("state", "lastState"):
                terminated = objects.get_map(status, which).get("terminated")
                if not isinstance(terminated, Mapping):
                    continue
                started = terminated.get("startedAt")
                finished = terminated.get("finishedAt")
                key = _text(terminated.get("containerID")) or (
                    f"{_text(started, 64)}/{_text(finished, 64)}"
                )
                rows.setdefault(
                    (container, key),
                    TerminationRow(
                        pod_uid=pod_uid,
                        namespace=namespace,
                        pod=name,
                        container=container,
                        key=key,
                        node=node,
                        owner_kind=owner_kind,
                        owner_name=owner_name,
                        reason=_text(terminated.get("reason")),
                        exit_code=_int(terminated.get("exitCode")),
                        signal=_int(terminated.get("signal")),
                        restart_count=restarts,
                        started_at=objects.parse_time(started),
                        finished_at=objects.parse_time(finished),
                        message=_text(terminated.get("message"), MAX_MESSAGE),
                        memory_request=request,
                        memory_limit=limit,
                    ),
                )
    return list(rows.values())


# -- evictions --------------------------------------------------------------------------------


def _eviction_row(
    found: eviction.Eviction,
    *,
    pod_uid: str,
    namespace: str,
    pod: str,
    node: str,
    owner: tuple[str, str],
    at: datetime | None,
    message: object,
    source: str,
) -> EvictionRow:
    """The row of a kubelet eviction. The consumer named is the one the kubelet ranked first
    (furthest above its request; a pod-level consumer leaves ``container`` ""); a storage-limit
    eviction names the limit it went over as its ``threshold`` (and the container, when the
    limit was a container's)."""
    biggest = found.biggest_consumer
    container, usage, request = "", None, None
    if biggest is not None:
        container = biggest.name if biggest.scope == "container" else ""
        usage = _amount(biggest.usage, biggest.resource)
        request = _amount(biggest.request, biggest.resource)
    threshold = found.threshold
    if threshold is None and found.limits:
        threshold = found.limits[0].limit
        if not container and found.limits[0].scope == "container":
            container = found.limits[0].name or ""
    return EvictionRow(
        pod_uid=pod_uid,
        namespace=namespace,
        pod=pod,
        node=node,
        owner_kind=owner[0],
        owner_name=owner[1],
        at=at,
        kind=str(found.kind),
        resource=_text(found.resource),
        threshold=_text(str(threshold) if threshold is not None else ""),
        available=_text(str(found.available) if found.available is not None else ""),
        container=_text(container),
        usage=usage,
        request=request,
        message=_text(message, MAX_MESSAGE) or _text(found.message, MAX_MESSAGE),
        source=source,
    )


def _evicted_at(status: Mapping[str, Any]) -> datetime | None:
    """When the kubelet evicted the pod: its ``DisruptionTarget`` condition's transition (1.26+),
    else the latest ``finishedAt`` of its containers."""
    for condition in objects.get_list(status, "conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            at = objects.parse_time(condition.get("lastTransitionTime"))
            if at is not None:
                return at
    finished = []
    for field in _STATUS_LISTS:
        for container in objects.get_list(status, field):
            for which in ("state", "lastState"):
                at = objects.parse_time(
                    objects.get_map(container, which, "terminated").get("finishedAt")
                )
                if at is not None:
                    finished.append(at)
    return max(finished, default=None)


def eviction_from_pod(pod: objects.Body) -> EvictionRow | None:
    """The kubelet eviction a pod's status records (node pressure, a local-storage limit,
    admission rejected under pressure), or None: no disruption, another kind (Eviction API,
    preemption, taint manager, PodGC, shutdown) or no uid."""
    if not isinstance(pod, Mapping):
        return None
    found = eviction.pod_disruption(pod)
    meta = objects.get_map(pod, "metadata")
    pod_uid = _text(meta.get("uid"))
    if found is None or not found.by_kubelet or not pod_uid:
        return None
    status = objects.get_map(pod, "status")
    message = status.get("message")
    if not isinstance(message, str) or not message:
        message = found.message
    return _eviction_row(
        found,
        pod_uid=pod_uid,
        namespace=_text(meta.get("namespace")),
        pod=_text(meta.get("name")),
        node=_text(objects.get_str(pod, "spec", "nodeName")),
        owner=_owner(meta),
        at=_evicted_at(status),
        message=message,
        source="pod-status",
    )


def eviction_from_event(event_body: objects.Body) -> EvictionRow | None:
    """The kubelet eviction an ``Evicted`` event about a Pod records, or None. Gaps in a
    truncated message are filled from the event's annotations (``starved_resource``,
    ``offending_containers``...). The node is the reporting host; the owner is unknown here
    (the pod's status row has it)."""
    if not isinstance(event_body, Mapping):
        return None
    record = read_event(event_body)
    if record.reason != "Evicted" or record.object_kind != "Pod":
        return None
    pod_uid = _text(record.object_uid)
    if not pod_uid:
        return None
    found = eviction.with_annotations(
        eviction.classify("Evicted", record.message), record.annotations
    )
    if not found.by_kubelet:
        return None
    return _eviction_row(
        found,
        pod_uid=pod_uid,
        namespace=_text(record.object_namespace or record.namespace),
        pod=_text(record.object_name),
        node=_text(record.host),
        owner=("", ""),
        at=record.first_seen or record.last_seen,
        message=record.message,
        source="event",
    )


# -- node conditions --------------------------------------------------------------------------


def _conditions(node: object) -> dict[str, Mapping[str, Any]]:
    found: dict[str, Mapping[str, Any]] = {}
    for condition in objects.get_list(node, "status", "conditions"):
        if isinstance(condition, Mapping) and isinstance(condition.get("type"), str):
            found.setdefault(condition["type"], condition)
    return found


def node_transitions(old: objects.Body | None, new: objects.Body) -> list[NodeTransition]:
    """The condition changes between two versions of a Node: each condition of ``new`` whose
    ``(status, lastTransitionTime)`` differs from ``old``'s (every condition when ``old`` is
    None, with ``previous`` ""). A condition without a valid ``lastTransitionTime`` is dated by
    its ``lastHeartbeatTime``, and skipped when it has neither."""
    if not isinstance(new, Mapping):
        return []
    node = _text(objects.get_str(new, "metadata", "name"))
    before = _conditions(old) if isinstance(old, Mapping) else {}
    found: list[NodeTransition] = []
    for kind, condition in _conditions(new).items():
        status = condition.get("status")
        transition = condition.get("lastTransitionTime")
        previous = before.get(kind)
        if (
            previous is not None
            and previous.get("status") == status
            and previous.get("lastTransitionTime") == transition
        ):
            continue
        at = objects.parse_time(transition) or objects.parse_time(
            condition.get("lastHeartbeatTime")
        )
        if at is None:
            continue
        found.append(
            NodeTransition(
                node=node,
                condition=_text(kind),
                status=_text(status),
                previous=_text(previous.get("status")) if previous is not None else "",
                reason=_text(condition.get("reason")),
                message=_text(condition.get("message"), MAX_MESSAGE),
                at=at,
            )
        )
    return found


# -- metrics ----------------------------------------------------------------------------------


def go_duration_seconds(text: object) -> float | None:
    """Seconds of a Go ``time.Duration`` string (``30s``, ``1m0s``, ``1.5s``, ``300ms``), as
    metrics-server writes ``window``; None when it is not one or is negative."""
    if not isinstance(text, str) or not 0 < len(text) <= 64:
        return None
    try:
        return parse_seconds(text)
    except DurationError:
        return None


def _usage(usage: object) -> tuple[float | None, int | None]:
    """CPU in millicores and memory in bytes of a metrics ``usage`` map."""
    cpu: float | None = None
    if isinstance(usage, Mapping) and usage.get("cpu") is not None:
        try:
            cpu = float(parse_quantity(usage["cpu"]).value * 1000)
        except (QuantityError, OverflowError):
            cpu = None
        if cpu is not None and not 0 <= cpu < float(_INT64):
            cpu = None
    memory = _bytes(usage.get("memory")) if isinstance(usage, Mapping) else None
    return cpu, memory


def metric_samples(body: objects.Body, *, node: str = "") -> list[MetricSample]:
    """The samples of a ``metrics.k8s.io`` PodMetrics (one per container; ``node`` as given,
    metrics do not say where a pod runs) or NodeMetrics (container "", node its own name). The
    time is ``timestamp`` (the end of ``window``), else the creation time; without either, no
    sample."""
    if not isinstance(body, Mapping):
        return []
    meta = objects.get_map(body, "metadata")
    at = objects.parse_time(body.get("timestamp")) or objects.parse_time(
        meta.get("creationTimestamp")
    )
    if at is None:
        return []
    name = _text(meta.get("name"))
    window = go_duration_seconds(body.get("window"))
    kind = body.get("kind")
    if kind == "NodeMetrics" or (kind != "PodMetrics" and "usage" in body):
        cpu, memory = _usage(body.get("usage"))
        return [MetricSample("node", "", name, "", _text(node) or name, at, window, cpu, memory)]
    namespace = _text(meta.get("namespace"))
    samples: list[MetricSample] = []
    seen: set[str] = set()
    for container in objects.get_list(body, "containers"):
        if not isinstance(container, Mapping) or not isinstance(container.get("name"), str):
            continue
        container_name = _text(container["name"])
        if container_name in seen:
            continue
        seen.add(container_name)
        cpu, memory = _usage(container.get("usage"))
        samples.append(
            MetricSample(
                "pod", namespace, name, container_name, _text(node), at, window, cpu, memory
            )
        )
    return samples
