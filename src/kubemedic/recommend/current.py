"""What a workload's containers ask for now, and which workload a pod is, read from a cluster
view (a snapshot or a live scan; pure: no I/O).

A workload's pods get the resources of its pod template (``spec.template.spec``, a CronJob's
``spec.jobTemplate.spec.template.spec``: :data:`kubemedic.model.owners.POD_TEMPLATE_SPECS`), so
that is the spec a recommendation is compared with; a bare pod (no controller) is its own spec.
Values are read as the checks read them (:func:`kubemedic.model.resources.container_resources`):
CPU in millicores rounded up, memory in bytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from kubemedic.model import objects, owners, resources
from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView
from kubemedic.recommend.policy import Resources

__all__ = ["Key", "from_view", "placer"]

Key = tuple[str, str, str, str]
"""``(namespace, kind, name, container)`` of a workload's container."""


def _amount(found: resources.ResourceList, resource: str) -> int | None:
    quantity = found.get(resource)
    if quantity is None:
        return None
    return quantity.milli if resource == "cpu" else math.ceil(quantity.value)


def _containers(
    spec: Mapping[str, Any], *, namespace: str, kind: str, name: str, source: str
) -> dict[Key, Resources]:
    found: dict[Key, Resources] = {}
    for container in objects.get_list(spec, "containers"):
        if not isinstance(container, Mapping) or not isinstance(container.get("name"), str):
            continue
        where = f"{kind} {namespace}/{name} container {container['name']}"
        requests = resources.container_resources(container, "requests", where=where)
        limits = resources.container_resources(container, "limits", where=where)
        found[(namespace, kind, name, container["name"])] = Resources(
            cpu_request=_amount(requests, "cpu"),
            cpu_limit=_amount(limits, "cpu"),
            memory_request=_amount(requests, "memory"),
            memory_limit=_amount(limits, "memory"),
            source=source,
        )
    return found


def from_view(view: ClusterView, *, source: str = "snapshot") -> dict[Key, Resources]:
    """Every workload container's requests and limits in ``view``, and every bare pod's."""
    found: dict[Key, Resources] = {}
    for (kind, namespace, name), body in view.workloads.items():
        path = owners.POD_TEMPLATE_SPECS.get(kind)
        if path is None:
            continue
        spec = objects.get_map(body, *path)
        where = f"{source} ({kind} {namespace or ''}/{name} pod template)"
        found.update(
            _containers(spec, namespace=namespace or "", kind=kind, name=name, source=where)
        )
    for pod in view.pods:
        if view.owner_chain(pod):
            continue
        meta = objects.get_map(pod, "metadata")
        namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
        spec = objects.get_map(pod, "spec")
        found.update(
            _containers(spec, namespace=namespace, kind="Pod", name=name, source=f"{source} (pod)")
        )
    return found


def placer(view: ClusterView) -> Callable[[str, str], tuple[str, str] | None]:
    """``(namespace, pod) -> (kind, name)`` of the pod's workload as ``view`` shows it: a pod
    in the view by its owner chain (:func:`kubemedic.model.owners.workload_of`), a pod gone
    since by the workload in the view whose generated names fit it
    (:func:`kubemedic.model.owners.guess_owner`); None when the view cannot tell."""
    pods: dict[tuple[str, str], objects.Body] = {}
    for pod in view.pods:
        meta = objects.get_map(pod, "metadata")
        pods[(str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = pod

    def place(namespace: str, pod: str) -> tuple[str, str] | None:
        body = pods.get((namespace, pod))
        if body is not None:
            ref: ObjectRef | None = owners.workload_of(view, body)
        else:
            ref = owners.guess_owner(view, namespace=namespace or None, pod_name=pod)
        return None if ref is None else (ref.kind, ref.name)

    return place
