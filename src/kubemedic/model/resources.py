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

from collections.abc import Callable, Mapping
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


Where = str | Callable[[], str]
"""Where a resource list sits, for error messages; a callable builds the text only on error (the
scan reads hundreds of thousands of containers and almost never needs it)."""


def _resource_list(raw: Any, *, where: Where) -> ResourceList:
    if not isinstance(raw, (dict, Mapping)):
        return {}
    parsed: ResourceList = {}
    for name, value in raw.items():
        try:
            parsed[str(name)] = parse_quantity(value)
        except QuantityError:
            place = where if isinstance(where, str) else where()
            parse_quantity(value, where=f"{place}.{name}")  # raises, naming the field
            raise
    return parsed


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


def container_resources(container: Any, field: str, *, where: Where) -> ResourceList:
    """``resources.<field>`` of one container (``requests`` or ``limits``)."""
    return _resource_list(objects.get_map(container, "resources", field), where=where)


def _locator(pod: objects.Body, prefix: str) -> Callable[[str], str]:
    """``path -> "Pod ns/name <prefix><path>"``, for error messages."""

    def at(path: str) -> str:
        meta = objects.get_map(pod, "metadata")
        namespace = meta.get("namespace")
        name = meta.get("name", "")
        key = f"{namespace}/{name}" if namespace else str(name)
        return f"{pod.get('kind') or 'Pod'} {key} {prefix}{path}"

    return at


def _aggregate(pod: objects.Body, field: str, *, prefix: str = "") -> ResourceList:
    return _aggregate_fields(pod, (field,), prefix=prefix)[0]


def _aggregate_fields(
    pod: objects.Body, fields: tuple[str, ...], *, prefix: str = ""
) -> list[ResourceList]:
    """``_aggregate`` of each of ``fields`` (``requests``, ``limits``), in one walk of the
    containers. Where several quantities are invalid, which one is reported may depend on the
    fields asked for together: ``_memoized`` asks again one field at a time to report it."""
    at = _locator(pod, prefix)
    spec = objects.get_map(pod, "spec")

    def where(key: str, container: Any, field: str) -> Where:
        return lambda: at(
            f"spec.{key}[name={objects.get_str(container, 'name') or '?'}].resources.{field}"
        )

    totals: list[ResourceList] = [{} for _ in fields]
    for container in objects.get_list(spec, "containers"):
        for field, total in zip(fields, totals, strict=True):
            add_into(
                total,
                container_resources(container, field, where=where("containers", container, field)),
            )

    init_containers = objects.get_list(spec, "initContainers")
    if init_containers:
        for field, total in zip(fields, totals, strict=True):
            running_sidecars: ResourceList = {}
            init_peak: ResourceList = {}
            for container in init_containers:
                own = container_resources(
                    container, field, where=where("initContainers", container, field)
                )
                if objects.get_str(container, "restartPolicy") == "Always":
                    add_into(total, own)
                    add_into(running_sidecars, own)
                    _max_into(init_peak, running_sidecars)
                else:
                    while_running = dict(running_sidecars)
                    add_into(while_running, own)
                    _max_into(init_peak, while_running)
            _max_into(total, init_peak)

    overhead = objects.get_map(spec, "overhead")
    for field, total in zip(fields, totals, strict=True):
        pod_level = objects.get_map(spec, "resources", field)
        if pod_level:
            total.update(_resource_list(pod_level, where=f"{at('spec.resources.')}{field}"))
        if overhead:
            add_into(total, _resource_list(overhead, where=lambda: at("spec.overhead")))
    return totals


def pod_requests(pod: objects.Body, *, prefix: str = "") -> ResourceList:
    """The pod's effective requests (see the module docstring).

    ``pod`` may also be a workload body whose ``spec`` is a pod template's spec; ``prefix``
    (e.g. ``"spec.template."``) is then put before field paths in error messages. The result is
    the caller's to change; for a ``LoadedBody`` it is computed once and copied out."""
    if type(pod) is objects.LoadedBody and not prefix:
        return dict(_memoized(pod)[0])
    return _aggregate(pod, "requests", prefix=prefix)


def pod_limits(pod: objects.Body, *, prefix: str = "") -> ResourceList:
    """The pod's effective limits, counting only containers that set one."""
    if type(pod) is objects.LoadedBody and not prefix:
        return dict(_memoized(pod)[1])
    return _aggregate(pod, "limits", prefix=prefix)


def _memoized(pod: objects.LoadedBody) -> tuple[ResourceList, ResourceList]:
    """Requests and limits of a loaded (never changed) body, computed once: a caller that wants
    one usually wants the other."""
    memo = pod.memo
    if memo is None:
        try:
            requests, limits = _aggregate_fields(pod, ("requests", "limits"))
        except QuantityError:  # report the invalid quantity a requests-then-limits walk meets
            requests, limits = _aggregate(pod, "requests"), _aggregate(pod, "limits")
        memo = pod.memo = (requests, limits)
    found: tuple[ResourceList, ResourceList] = memo
    return found


def unbounded_limits(pod: objects.Body, resources: tuple[str, ...] = ("cpu", "memory")) -> set[str]:
    """Resources for which some regular container sets no limit (so the pod may use the node)."""
    spec = objects.get_map(pod, "spec")
    pod_level = objects.get_map(spec, "resources", "limits")
    if pod_level:
        resources = tuple(r for r in resources if r not in pod_level)
    missing: set[str] = set()
    for container in objects.get_list(spec, "containers"):
        limits = objects.get_map(container, "resources", "limits")
        for resource in resources:
            if resource not in limits:
                missing.add(resource)
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
