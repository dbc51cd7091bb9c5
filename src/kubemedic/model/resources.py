"""Pod and node resources, computed exactly as the scheduler and the kubelet compute them.

A pod's *effective request* (what the scheduler's NodeResourcesFit filter and the kubelet's
admission check add up, ``resourcehelper.PodRequests``) is, per resource:

* the sum over regular containers,
* plus every restartable init container (a *sidecar*, ``restartPolicy: Always``), since it keeps
  running beside the regular containers,
* at least the largest single init container, where an ordinary init container also counts the
  sidecars started before it (they are already running while it runs),
* plus the pod overhead (``spec.overhead``, set from the RuntimeClass),

unless pod-level resources (``spec.resources``, Kubernetes 1.32+) are set, which then win for the
resources they name. Limits follow the same rules. Containers that set no value add nothing: for
limits that means the sum understates a pod that is in fact unbounded; ``unbounded_limits`` says
which resources that is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from kubemedic.model import objects
from kubemedic.model.quantities import Format, Quantity, QuantityError, parse_quantity

__all__ = [
    "ResourceList",
    "add_into",
    "container_resources",
    "node_allocatable",
    "node_capacity",
    "pod_limits",
    "pod_requests",
    "unbounded_limits",
]

ResourceList = dict[str, Quantity]
"""Resource name (``cpu``, ``memory``, ``nvidia.com/gpu``...) to quantity."""


@dataclass(frozen=True, slots=True)
class _Where:
    kind: str
    key: str

    def at(self, path: str) -> str:
        return f"{self.kind} {self.key}{'' if self.key.endswith('.') else ' '}{path}"


def _resource_list(raw: Any, *, where: str) -> ResourceList:
    if not isinstance(raw, Mapping):
        return {}
    return {
        str(name): parse_quantity(value, where=f"{where}.{name}") for name, value in raw.items()
    }


def add_into(total: ResourceList, extra: Mapping[str, Quantity]) -> None:
    """``total += extra``, per resource, in place."""
    for name, quantity in extra.items():
        current = total.get(name)
        total[name] = quantity if current is None else current + quantity


def _max_into(total: ResourceList, other: Mapping[str, Quantity]) -> None:
    for name, quantity in other.items():
        current = total.get(name)
        if current is None or quantity > current:
            total[name] = quantity


def container_resources(container: Any, field: str, *, where: str) -> ResourceList:
    """``resources.<field>`` of one container (``requests`` or ``limits``)."""
    return _resource_list(objects.get_map(container, "resources", field), where=where)


def _aggregate(pod: objects.Body, field: str, *, prefix: str = "") -> ResourceList:
    meta = objects.get_map(pod, "metadata")
    namespace = meta.get("namespace")
    key = f"{namespace}/{meta.get('name', '')}" if namespace else str(meta.get("name", ""))
    where = _Where(str(pod.get("kind") or "Pod"), f"{key} {prefix}".rstrip())
    spec = objects.get_map(pod, "spec")

    total: ResourceList = {}
    for container in objects.get_list(spec, "containers"):
        name = objects.get_str(container, "name") or "?"
        path = where.at(f"spec.containers[name={name}].resources.{field}")
        add_into(total, container_resources(container, field, where=path))

    running_sidecars: ResourceList = {}
    init_peak: ResourceList = {}
    for container in objects.get_list(spec, "initContainers"):
        name = objects.get_str(container, "name") or "?"
        path = where.at(f"spec.initContainers[name={name}].resources.{field}")
        own = container_resources(container, field, where=path)
        if objects.get_str(container, "restartPolicy") == "Always":
            add_into(total, own)
            add_into(running_sidecars, own)
            _max_into(init_peak, running_sidecars)
        else:
            while_running = dict(running_sidecars)
            add_into(while_running, own)
            _max_into(init_peak, while_running)
    _max_into(total, init_peak)

    pod_level = _resource_list(
        objects.get_map(spec, "resources", field), where=where.at(f"spec.resources.{field}")
    )
    total.update(pod_level)
    add_into(
        total, _resource_list(objects.get_map(spec, "overhead"), where=where.at("spec.overhead"))
    )
    return total


def pod_requests(pod: objects.Body, *, prefix: str = "") -> ResourceList:
    """The pod's effective requests (see the module docstring).

    ``pod`` may also be a workload body whose ``spec`` is a pod template's spec; ``prefix``
    (e.g. ``"spec.template."``) is then put before field paths in error messages. The result is
    the caller's to change; for a ``LoadedBody`` it is computed once and copied out."""
    if type(pod) is objects.LoadedBody and not prefix:
        return dict(_memoized(pod, "requests"))
    return _effective(pod, "requests", prefix=prefix)


def pod_limits(pod: objects.Body, *, prefix: str = "") -> ResourceList:
    """The pod's effective limits, counting only containers that set one."""
    if type(pod) is objects.LoadedBody and not prefix:
        return dict(_memoized(pod, "limits"))
    return _effective(pod, "limits", prefix=prefix)


def _memoized(pod: objects.LoadedBody, field: str) -> ResourceList:
    memo = pod.memo
    if memo is None:
        memo = pod.memo = {}
    found: ResourceList | None = memo.get(field)
    if found is None:
        found = memo[field] = _effective(pod, field)
    return found


def _effective(pod: objects.Body, field: str, *, prefix: str = "") -> ResourceList:
    # The quick sum builds no field paths; on an invalid quantity the careful one runs again
    # to raise the error naming the object and the field.
    try:
        return _quick_sum(objects.get_map(pod, "spec"), field)
    except QuantityError:
        pass
    return _aggregate(pod, field, prefix=prefix)


def _quick_add(total: ResourceList, raw: Any) -> None:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return
    for name, value in raw.items():
        quantity = parse_quantity(value)
        key = name if type(name) is str else str(name)
        current = total.get(key)
        total[key] = quantity if current is None else current + quantity


def _quick_resources(container: Any, field: str) -> ResourceList:
    own: ResourceList = {}
    _quick_add(own, objects.get_map(container, "resources").get(field))
    return own


def _quick_sum(spec: Mapping[str, Any], field: str) -> ResourceList:
    """``_aggregate`` without the error locations: the same rules, in the same order."""
    total: ResourceList = {}
    for container in objects.get_list(spec, "containers"):
        if type(container) is dict or isinstance(container, Mapping):
            _quick_add(total, objects.get_map(container, "resources").get(field))
    init_containers = objects.get_list(spec, "initContainers")
    if init_containers:
        running_sidecars: ResourceList = {}
        init_peak: ResourceList = {}
        for container in init_containers:
            own = _quick_resources(container, field)
            if objects.get_str(container, "restartPolicy") == "Always":
                add_into(total, own)
                add_into(running_sidecars, own)
                _max_into(init_peak, running_sidecars)
            else:
                while_running = dict(running_sidecars)
                add_into(while_running, own)
                _max_into(init_peak, while_running)
        _max_into(total, init_peak)
    pod_level = objects.get_map(spec, "resources").get(field)
    if pod_level:
        parsed: ResourceList = {}
        _quick_add(parsed, pod_level)
        total.update(parsed)
    overhead = spec.get("overhead")
    if overhead:
        _quick_add(total, overhead)
    return total


def unbounded_limits(pod: objects.Body, resources: tuple[str, ...] = ("cpu", "memory")) -> set[str]:
    """Resources for which some regular container sets no limit (so the pod may use the node)."""
    spec = objects.get_map(pod, "spec")
    if objects.get_map(spec, "resources", "limits"):
        pod_level = objects.get_map(spec, "resources", "limits")
        resources = tuple(r for r in resources if r not in pod_level)
    missing: set[str] = set()
    for container in objects.get_list(spec, "containers"):
        limits = objects.get_map(container, "resources", "limits")
        missing.update(r for r in resources if r not in limits)
    return missing


def node_allocatable(node: objects.Body) -> ResourceList:
    """``status.allocatable`` (falling back to capacity, as the scheduler does for old nodes)."""
    name = objects.get_str(node, "metadata", "name") or "?"
    raw = objects.get_map(node, "status", "allocatable") or objects.get_map(
        node, "status", "capacity"
    )
    return _resource_list(raw, where=f"Node {name} status.allocatable")


def node_capacity(node: objects.Body) -> ResourceList:
    name = objects.get_str(node, "metadata", "name") or "?"
    raw = objects.get_map(node, "status", "capacity")
    return _resource_list(raw, where=f"Node {name} status.capacity")


def zero(resource: str) -> Quantity:
    """A zero quantity printed the way that resource usually is (bytes for memory)."""
    fmt = Format.BINARY_SI if resource in ("memory", "ephemeral-storage") else Format.DECIMAL_SI
    return Quantity(Fraction(0), fmt)
