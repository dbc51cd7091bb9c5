"""The kubelet eviction manager's choices under memory pressure: whom to evict, and what it says.

Pure functions after ``pkg/kubelet/eviction/helpers.go`` (Kubernetes 1.32):

- :func:`rank_memory_pressure` is ``rankMemoryPressure``: pods whose memory usage exceeds their
  request come first, then lower priority, then the larger usage above request. A pod with no
  stats is ranked before all others (``exceedMemoryRequests`` and ``memory`` both prefer it).
  Usage and request are pod-wide: the pod's working set against ``GetResourceRequestQuantity``
  (sum of the containers' requests, at least the largest init container's, plus overhead). So
  a hub using 300Mi of a 128Mi request goes before a Prometheus using 19Gi of a 20Gi request,
  whatever their sizes.
- :func:`evicted_status` and :func:`evicted_event` are what ``evictPod`` writes: the pod's
  status (``Failed``/``Evicted``, the message, a ``DisruptionTarget`` condition with reason
  ``TerminationByKubelet``, ``Ready``/``ContainersReady`` ``False`` ``PodCompleted``, and its
  killed containers as the runtime then reports them: ``terminated``, ``exitCode: 137``,
  ``ContainerStatusUnknown``), and the ``Evicted`` Warning with the annotations
  (``recorder.AnnotatedEventf``).
- :func:`eviction_message` is ``evictionMessage``: ``The node was low on resource: memory. ``
  then ``Threshold quantity: <threshold>, available: <available>. `` then, for each container
  using more than its request, ``Container <name> was using <usage>, request is <request>, has
  larger consumption of memory. `` (each sentence ends with a space, as the real one does). It
  also returns the annotations the kubelet puts on the ``Evicted`` event
  (``offending_containers``, ``offending_containers_usage``, ``starved_resource``).

Quantities print as ``resource.Quantity.String()`` prints them: usage and ``available`` are
built from byte counts in the binary format (``312344Ki``; a count that is not a multiple of
1024 prints as plain bytes), the threshold and the request keep the format they were written in
(``100Mi``, ``128Mi``, ``1G``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from typing import Any

from kubemedic.model.objects import format_time
from kubemedic.model.quantities import Format, Quantity, QuantityError, parse_quantity

__all__ = [
    "REASON",
    "SYSTEM_CRITICAL_PRIORITY",
    "Stats",
    "binary",
    "evicted_event",
    "evicted_status",
    "eviction_message",
    "is_critical",
    "pod_request",
    "rank_memory_pressure",
]

#: ``status.reason`` of an evicted pod and the reason of its event.
REASON = "Evicted"
#: ``scheduling.SystemCriticalPriority``: pods at or above it are never evicted by the kubelet.
SYSTEM_CRITICAL_PRIORITY = 2_000_000_000

#: Working set in bytes of each running container of a pod, by container name.
Stats = Mapping[str, int]
StatsFunc = Callable[[Mapping[str, Any]], Stats | None]


def binary(amount: int) -> str:
    """``resource.NewQuantity(amount, resource.BinarySI).String()``."""
    return Quantity(Fraction(amount), Format.BINARY_SI).canonical()


def _request(container: Mapping[str, Any], resource: str) -> Quantity | None:
    raw = ((container.get("resources") or {}).get("requests") or {}).get(resource)
    if raw is None:
        return None
    try:
        return parse_quantity(raw)
    except QuantityError:
        return None


def pod_request(pod: Mapping[str, Any], resource: str = "memory") -> int:
    """``GetResourceRequestQuantity``: the pod's request of ``resource`` in base units (bytes;
    for ``cpu``, cores rounded up), summing regular containers, taking the largest init
    container when bigger, plus the pod overhead."""
    spec = pod.get("spec") or {}
    total = Fraction(0)
    for container in spec.get("containers") or ():
        quantity = _request(container, resource)
        if quantity is not None:
            total += quantity.value
    for container in spec.get("initContainers") or ():
        quantity = _request(container, resource)
        if quantity is not None and total < quantity.value:
            total = quantity.value
    overhead = (spec.get("overhead") or {}).get(resource)
    if overhead is not None:
        with contextlib.suppress(QuantityError):
            total += parse_quantity(overhead).value
    return -(-total.numerator // total.denominator)


def _priority(pod: Mapping[str, Any]) -> int:
    value = (pod.get("spec") or {}).get("priority")
    return int(value) if isinstance(value, int) else 0


def is_critical(pod: Mapping[str, Any]) -> bool:
    """``kubelettypes.IsCriticalPod``: static and mirror pods, and pods at system-critical
    priority, which the eviction manager refuses to evict."""
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if annotations.get("kubernetes.io/config.source", "api") != "api":
        return True
    if "kubernetes.io/config.mirror" in annotations:
        return True
    return _priority(pod) >= SYSTEM_CRITICAL_PRIORITY


def rank_memory_pressure(
    pods: Sequence[Mapping[str, Any]], stats: StatsFunc
) -> list[Mapping[str, Any]]:
    """``rankMemoryPressure``: the pods in eviction order (first is evicted first)."""

    def key(pod: Mapping[str, Any]) -> tuple[int, int, int]:
        found = stats(pod)
        if found is None:
            # No stats: evicted before anything that has some.
            return (0, 0, 0)
        usage = sum(found.values())
        request = pod_request(pod, "memory")
        exceeds = usage > request
        return (1 if exceeds else 2, _priority(pod), -(usage - request))

    return sorted(pods, key=key)


def eviction_message(
    pod: Mapping[str, Any],
    stats: Stats | None,
    *,
    threshold: str,
    available: int,
    resource: str = "memory",
) -> tuple[str, dict[str, str]]:
    """``evictionMessage`` for evicting ``pod`` to reclaim ``resource`` and the event's
    annotations. ``threshold`` is the threshold as configured (``100Mi``), ``available`` the
    observed bytes available."""
    message = f"The node was low on resource: {resource}. "
    message += f"Threshold quantity: {threshold}, available: {binary(max(0, available))}. "
    annotations: dict[str, str] = {}
    if stats is None:
        return message, annotations
    spec = pod.get("spec") or {}
    containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
    offending: list[str] = []
    usages: list[str] = []
    for container in containers:
        name = str(container.get("name", ""))
        if name not in stats:
            continue
        usage = stats[name]
        request = _request(container, resource)
        requested = request.value if request is not None else Fraction(0)
        if usage > requested:
            shown = request.canonical() if request is not None else "0"
            message += (
                f"Container {name} was using {binary(usage)}, request is {shown}, "
                f"has larger consumption of {resource}. "
            )
            offending.append(name)
            usages.append(binary(usage))
    annotations["offending_containers"] = ",".join(offending)
    annotations["offending_containers_usage"] = ",".join(usages)
    annotations["starved_resource"] = resource
    return message, annotations


def evicted_status(pod: Mapping[str, Any], message: str, *, now: str) -> dict[str, Any]:
    """The ``status`` patch of a pod the eviction manager killed (``now`` is RFC 3339)."""
    statuses = []
    for status in (pod.get("status") or {}).get("containerStatuses") or ():
        state = status.get("state") or {}
        if "running" in state or "waiting" in state:
            state = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                                    "message": _UNKNOWN}}  # fmt: skip
        statuses.append({**status, "state": state, "ready": False, "started": False})
    conditions: list[dict[str, Any]] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
         "message": message, "lastTransitionTime": now, "lastProbeTime": None},
    ]  # fmt: skip
    for kind in ("Ready", "ContainersReady"):
        conditions.append(
            {"type": kind, "status": "False", "reason": "PodCompleted", "message": None,
             "lastTransitionTime": now, "lastProbeTime": None}
        )  # fmt: skip
    return {
        "phase": "Failed",
        "reason": REASON,
        "message": message,
        "conditions": conditions,
        "containerStatuses": statuses,
    }


_UNKNOWN = "The container could not be located when the pod was terminated"


def evicted_event(
    pod: Mapping[str, Any],
    message: str,
    annotations: Mapping[str, str],
    *,
    node: str,
    moment: datetime,
) -> dict[str, Any]:
    """The ``Evicted`` core/v1 Event the kubelet on ``node`` records at ``moment``, with the
    annotations from :func:`eviction_message` in its metadata."""
    meta = pod.get("metadata") or {}
    stamp = format_time(moment)
    involved = {
        "kind": pod.get("kind", "Pod"),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "apiVersion": pod.get("apiVersion", "v1"),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    event_meta: dict[str, Any] = {
        "name": f"{meta.get('name', '')}.{int(moment.timestamp() * 1e9):x}",
        "namespace": meta.get("namespace") or "default",
    }
    if annotations:
        event_meta["annotations"] = dict(annotations)
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": event_meta,
        "involvedObject": {k: v for k, v in involved.items() if v},
        "reason": REASON,
        "message": message,
        "source": {"component": "kubelet", "host": node},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
        "type": "Warning",
        "eventTime": None,
        "reportingComponent": "kubelet",
        "reportingInstance": node,
    }
