"""A pod's containers found by name, app and init containers alike.

Checks learn a container's name from an event (``involvedObject.fieldPath``
``spec.containers{hub}`` or ``spec.initContainers{proxy}``, a ``Killing`` message) or from a
status, and then need its spec (probes, resources) and its status (restarts, last termination).
Init containers count: a native sidecar (an init container with ``restartPolicy: Always``, on by
default since Kubernetes 1.29) runs for the pod's whole life with its own liveness probe,
resources and restart count, and is OOM-killed like any other container. Names are unique across
a pod's ``containers`` and ``initContainers`` (API validation), so a name finds at most one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.model import objects
from kubemedic.model.objects import Body

__all__ = ["restarts", "spec", "status"]


def _named(items: list[Any], name: str) -> Mapping[str, Any] | None:
    for item in items:
        if isinstance(item, Mapping) and item.get("name") == name:
            return item
    return None


def spec(pod: Body, name: str) -> Mapping[str, Any] | None:
    """Container ``name`` from ``spec.containers`` or ``spec.initContainers``, or None."""
    return _named(objects.get_list(pod, "spec", "containers"), name) or _named(
        objects.get_list(pod, "spec", "initContainers"), name
    )


def status(pod: Body, name: str) -> Mapping[str, Any] | None:
    """Container ``name`` from ``status.containerStatuses`` or ``initContainerStatuses``, or
    None (a pod not yet started by the kubelet has no statuses)."""
    return _named(objects.get_list(pod, "status", "containerStatuses"), name) or _named(
        objects.get_list(pod, "status", "initContainerStatuses"), name
    )


def restarts(container_status: object) -> int:
    """``restartCount`` of a container status, 0 when the status or the count is missing or not
    an integer."""
    if not isinstance(container_status, Mapping):
        return 0
    count = container_status.get("restartCount")
    return count if isinstance(count, int) and not isinstance(count, bool) else 0
