"""Records for the archive (:mod:`kubemedic.store.records`), read from watch and list bodies.

The functions here are total: any
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

import functools
import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubemedic.model import eviction, objects
from kubemedic.model.durations import DurationError, parse_seconds
from kubemedic.model.events import read_event
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity
from kubemedic.store.records import (
    INT32,
    INT64,
    MAX_MESSAGE,
    EventRow,
    EvictionRow,
    MetricSample,
    NodeTransition,
    TerminationRow,
    storable_int,
    storable_text,
)

__all__ = [
    "event_row",
    "eviction_from_event",
    "eviction_from_pod",
    "metric_samples",
    "node_transitions",
    "terminations",
]


# -- quantities and owners ------------------------------------------------------------------------


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
    return amount if 0 <= amount <= INT64 else None


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
            return storable_text(ref.get("kind")), storable_text(ref.get("name"))
    return "", ""


# -- events ---------------------------------------------------------------------------------------


def event_row(body: objects.Body) -> EventRow | None:
    """The archive row of a ``core/v1`` or ``events.k8s.io/v1`` Event, or None without a uid
    (the row's identity). ``node`` is the object's name for an event about a Node (the
    ``NodeNotReady``, ``SystemOOM`` kind), else the reporting host (a kubelet's node)."""
    if not isinstance(body, Mapping):
        return None
    meta = objects.get_map(body, "metadata")
    uid = storable_text(meta.get("uid"))
    if not uid:
        return None
    record = read_event(body)
    api_version = storable_text(body.get("apiVersion")) or (
        "events.k8s.io/v1" if "regarding" in body or "note" in body else "v1"
    )
    object_kind = storable_text(record.object_kind)
    object_name = storable_text(record.object_name)
    host = storable_text(record.host)
    return EventRow(
        uid=uid,
        api_version=api_version,
        namespace=storable_text(record.namespace),
        name=storable_text(record.name),
        type=storable_text(record.type),
        reason=storable_text(record.reason),
        message=storable_text(record.message, MAX_MESSAGE),
        object_kind=object_kind,
        object_namespace=storable_text(record.object_namespace),
        object_name=object_name,
        object_uid=storable_text(record.object_uid),
        field_path=storable_text(record.field_path),
        source=storable_text(record.source),
        host=host,
        node=object_name if object_kind == "Node" else host,
        count=min(record.count, INT32),
        first_seen=record.first_seen,
        last_seen=record.last_seen,
        resource_version=storable_text(meta.get("resourceVersion")),
    )


# -- terminations ---------------------------------------------------------------------------------

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
    pod_uid = storable_text(meta.get("uid"))
    if not pod_uid:
        return []
    namespace, name = storable_text(meta.get("namespace")), storable_text(meta.get("name"))
    node = storable_text(objects.get_str(pod, "spec", "nodeName"))
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
            container = storable_text(status["name"])
            request, limit = _memory(specs.get(status["name"], {}))
            restarts = storable_int(status.get("restartCount"), low=0) or 0
            for which in ("state", "lastState"):
                terminated = objects.get_map(status, which).get("terminated")
                if not isinstance(terminated, Mapping):
                    continue
                started = terminated.get("startedAt")
                finished = terminated.get("finishedAt")
                key = storable_text(terminated.get("containerID")) or (
                    f"{storable_text(started, 64)}/{storable_text(finished, 64)}"
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
                        reason=storable_text(terminated.get("reason")),
                        exit_code=storable_int(terminated.get("exitCode")),
                        signal=storable_int(terminated.get("signal")),
                        restart_count=restarts,
                        started_at=objects.parse_time(started),
                        finished_at=objects.parse_time(finished),
                        message=storable_text(terminated.get("message"), MAX_MESSAGE),
                        memory_request=request,
                        memory_limit=limit,
                    ),
                )
    return list(rows.values())


# -- evictions ------------------------------------------------------------------------------------


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
        resource=storable_text(found.resource),
        threshold=storable_text(str(threshold) if threshold is not None else ""),
        available=storable_text(str(found.available) if found.available is not None else ""),
        container=storable_text(container),
        usage=usage,
        request=request,
        message=storable_text(message, MAX_MESSAGE) or storable_text(found.message, MAX_MESSAGE),
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
    pod_uid = storable_text(meta.get("uid"))
    if found is None or not found.by_kubelet or not pod_uid:
        return None
    status = objects.get_map(pod, "status")
    message = status.get("message")
    if not isinstance(message, str) or not message:
        message = found.message
    return _eviction_row(
        found,
        pod_uid=pod_uid,
        namespace=storable_text(meta.get("namespace")),
        pod=storable_text(meta.get("name")),
        node=storable_text(objects.get_str(pod, "spec", "nodeName")),
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
    pod_uid = storable_text(record.object_uid)
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
        namespace=storable_text(record.object_namespace or record.namespace),
        pod=storable_text(record.object_name),
        node=storable_text(record.host),
        owner=("", ""),
        at=record.first_seen or record.last_seen,
        message=record.message,
        source="event",
    )


# -- node conditions ------------------------------------------------------------------------------


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
    node = storable_text(objects.get_str(new, "metadata", "name"))
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
                condition=storable_text(kind),
                status=storable_text(status),
                previous=storable_text(previous.get("status")) if previous is not None else "",
                reason=storable_text(condition.get("reason")),
                message=storable_text(condition.get("message"), MAX_MESSAGE),
                at=at,
            )
        )
    return found


# -- metrics --------------------------------------------------------------------------------------


def _window(text: object) -> float | None:
    """Seconds of the Go ``time.Duration`` metrics-server writes as ``window`` (``30s``,
    ``1m0s``, ``1.5s``); None when it is not one or is negative."""
    if not isinstance(text, str) or not 0 < len(text) <= 64:
        return None
    return _window_seconds(text)


@functools.lru_cache(maxsize=4096)
def _window_seconds(text: str) -> float | None:
    """:func:`_window` of a string, remembered: the same few windows repeat across every sample
    of a poll, and the exact parser costs ~14 us a call (tens of thousands of pods per poll)."""
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
        if cpu is not None and not 0 <= cpu < float(INT64):
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
    name = storable_text(meta.get("name"))
    window = _window(body.get("window"))
    kind = body.get("kind")
    if kind == "NodeMetrics" or (kind != "PodMetrics" and "usage" in body):
        cpu, memory = _usage(body.get("usage"))
        return [
            MetricSample("node", "", name, "", storable_text(node) or name, at, window, cpu, memory)
        ]
    namespace = storable_text(meta.get("namespace"))
    samples: list[MetricSample] = []
    seen: set[str] = set()
    for container in objects.get_list(body, "containers"):
        if not isinstance(container, Mapping) or not isinstance(container.get("name"), str):
            continue
        container_name = storable_text(container["name"])
        if container_name in seen:
            continue
        seen.add(container_name)
        cpu, memory = _usage(container.get("usage"))
        samples.append(
            MetricSample(
                "pod", namespace, name, container_name, storable_text(node), at, window, cpu, memory
            )
        )
    return samples
