"""``critical-pod-underrequested``: critical pods asking for less than they need.

A request is what the pod is *guaranteed*. Under CPU contention the kernel shares CPU in
proportion to requests (``cpu.shares``/``cpu.weight`` = milliCPU x 1024 / 1000): a 10m hub gets
about 1% of a busy core, enough to miss its liveness probe 30 times in a row (incident 3). Under
memory pressure the kubelet evicts first the pods whose usage exceeds their memory request
(``rankMemoryPressure``), whatever their importance; a request of zero is exceeded by any usage.

Critical pods come from ``criticality.criticality_of``. Pods the kubelet itself protects
(system priority classes, static and mirror pods) are left out unless they also match a role
selector, or ``include_system_critical`` is set: they are platform components (kube-proxy, CNI
and CSI agents) whose requests the vendor tunes and the kubelet never evicts.

A pod falls short when, for CPU or memory:

* its request is below the floor: ``cpu_floor`` 100m (a tenth of a core's weight) and
  ``memory_floor`` 256Mi (the working set of a hub, proxy or ingress controller serving a few
  hundred users), overridden per role by ``role_floors`` (default: ``dns`` 64Mi memory, since
  CoreDNS's upstream manifests request 70Mi and it stays well below that), or
* metrics.k8s.io usage is in the snapshot and exceeds the request: memory by any amount (the
  kubelet's test is strict), CPU by more than ``cpu_usage_tolerance_percent`` (10; a 30-second
  average a little over the request costs nothing until the node is contended).

One finding per workload (replicas aggregated; the Deployment even when only its ReplicaSet is in
the snapshot). Severity: critical when some pod the kubelet may evict has no memory request or
uses more memory than it requests (it is first in line under memory pressure); else warning.

Evidence: ``pod`` (the pod shown in the message: the one with the worst shortfall), ``owner``
(``Kind namespace/name``), ``role``, ``criticalBecause``, ``requests`` and ``usage``
(``{cpu, memory}`` of that pod; ``usage`` null without metrics), ``usageKnown``, ``floors``
(``{cpu, memory}`` applied), ``shortfalls`` (every pod's: ``{pod, resource, kind: floor|usage,
request, floor|usage}``), ``pods`` (``{pod, node, requests, usage}`` per replica).

Cause: ``critical-underrequested:<namespace>/<Kind>/<name>`` of the workload.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kubemedic.checks import criticality, settings
from kubemedic.checks.criticality import Criticality, CriticalPodPolicy
from kubemedic.checks.findings import Finding, Severity, cause_part
from kubemedic.checks.registry import check, config_quantity
from kubemedic.model import objects, owners, placement, resources, timing
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity
from kubemedic.model.view import ClusterView

__all__ = ["RoleFloor", "UnderrequestedConfig"]

CHECK = "critical-pod-underrequested"
_RESOURCES = ("cpu", "memory")


@dataclass(frozen=True, slots=True)
class RoleFloor:
    """Floors for one criticality role; ``None`` keeps the default floor for that resource."""

    role: str
    cpu: str | None = settings.quantity(None)
    memory: str | None = settings.quantity(None)


@dataclass(frozen=True, slots=True)
class UnderrequestedConfig:
    cpu_floor: str = settings.quantity("100m")
    memory_floor: str = settings.quantity("256Mi")
    role_floors: tuple[RoleFloor, ...] = (RoleFloor("dns", memory="64Mi"),)
    cpu_usage_tolerance_percent: float = 10.0
    include_system_critical: bool = False
    critical: CriticalPodPolicy = field(default_factory=CriticalPodPolicy)


@dataclass(frozen=True, slots=True)
class _Shortfall:
    pod: str
    resource: str
    kind: str  # "floor" or "usage"
    request: Quantity
    bound: Quantity  # the floor, or the usage

    @property
    def excess(self) -> Quantity:
        return self.bound - self.request

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "resource": self.resource,
            "kind": self.kind,
            "request": str(self.request),
            self.kind: str(self.bound),
        }


@dataclass(slots=True)
class _PodReport:
    pod: Body
    why: Criticality
    requests: dict[str, Quantity]
    usage: resources.ResourceList | None
    floors: dict[str, Quantity]
    shortfalls: list[_Shortfall]
    evicted_first: bool

    @property
    def rank(self) -> tuple[bool, int, str]:
        return (self.evicted_first, len(self.shortfalls), owners.pod_key(self.pod))


@check(CHECK, UnderrequestedConfig)
def critical_pod_underrequested(view: ClusterView, config: UnderrequestedConfig) -> list[Finding]:
    """Critical pods whose CPU or memory request is below a floor or below observed usage."""
    groups: dict[ObjectRef, list[_PodReport]] = defaultdict(list)
    for pod in view.pods:
        if placement.finished(pod):
            continue
        report = _assess(view, pod, config)
        if report is not None and report.shortfalls:
            groups[owners.workload_of(view, pod)].append(report)
    return [_finding(view, owner, groups[owner]) for owner in sorted(groups)]


def _floors(config: UnderrequestedConfig, role: str) -> dict[str, Quantity]:
    texts = {"cpu": config.cpu_floor, "memory": config.memory_floor}
    for override in config.role_floors:
        if override.role == role:
            texts["cpu"] = override.cpu or texts["cpu"]
            texts["memory"] = override.memory or texts["memory"]
    return {
        resource: config_quantity(text, check=CHECK, name=f"{resource} floor")
        for resource, text in texts.items()
    }


def _assess(view: ClusterView, pod: Body, config: UnderrequestedConfig) -> _PodReport | None:
    why = criticality.criticality_of(view, pod, policy=config.critical)
    if why is None:
        return None
    if why.basis != "selector" and why.kubelet_protected and not config.include_system_critical:
        return None
    declared = resources.pod_requests(pod)
    requests = {r: declared.get(r, resources.zero(r)) for r in _RESOURCES}
    usage = placement.pod_usage(view, pod)
    floors = _floors(config, why.role)
    key = owners.pod_key(pod)
    shortfalls: list[_Shortfall] = []
    for resource in _RESOURCES:
        request = requests[resource]
        if request < floors[resource]:
            shortfalls.append(_Shortfall(key, resource, "floor", request, floors[resource]))
        used = None if usage is None else usage.get(resource)
        if used is not None and _over(used, request, resource, config):
            shortfalls.append(_Shortfall(key, resource, "usage", request, used))
    memory_used = None if usage is None else usage.get("memory")
    memory_request = requests["memory"]
    evicted_first = not why.kubelet_protected and (
        not memory_request or (memory_used is not None and memory_used > memory_request)
    )
    return _PodReport(pod, why, requests, usage, floors, shortfalls, evicted_first)


def _over(used: Quantity, request: Quantity, resource: str, config: UnderrequestedConfig) -> bool:
    if resource == "memory":
        return used > request
    allowed = request.value * (1 + max(config.cpu_usage_tolerance_percent, 0.0) / 100)
    return float(used.value) > float(allowed)


def _quantities(values: resources.ResourceList | None) -> dict[str, str] | None:
    if values is None:
        return None
    return {r: str(values[r]) for r in _RESOURCES if r in values}


def _finding(view: ClusterView, owner: ObjectRef, reports: list[_PodReport]) -> Finding:
    reports.sort(key=lambda r: owners.pod_key(r.pod))
    shown = max(reports, key=lambda r: r.rank[:2])
    shortfalls = [item for report in reports for item in report.shortfalls]
    severity = Severity.CRITICAL if any(r.evicted_first for r in reports) else Severity.WARNING
    evidence: dict[str, Any] = {
        "pod": owners.pod_key(shown.pod),
        "owner": owners.owner_text(owner),
        "role": shown.why.role,
        "criticalBecause": shown.why.reason,
        "requests": _quantities(shown.requests),
        "usage": _quantities(shown.usage),
        "usageKnown": any(r.usage is not None for r in reports),
        "floors": _quantities(shown.floors),
        "shortfalls": [item.to_json() for item in shortfalls],
        "pods": [
            {
                "pod": owners.pod_key(r.pod),
                "node": objects.get_str(r.pod, "spec", "nodeName"),
                "requests": _quantities(r.requests),
                "usage": _quantities(r.usage),
            }
            for r in reports
        ],
    }
    created = [t for r in reports if (t := timing.created_at(r.pod))]
    first_seen = min(created) if created else view.now
    count = f"{len(reports)} pods" if len(reports) > 1 else "1 pod"
    message = (
        f"Critical {owners.owner_text(owner)} ({shown.why.role}, {count}) is "
        f"under-requested: {_describe(shortfalls, multiple=len(reports) > 1)}"
        + (
            ", so under memory pressure the kubelet evicts it before pods within their requests."
            if severity is Severity.CRITICAL
            else "."
        )
    )
    return Finding(
        check=CHECK,
        severity=severity,
        object=owner,
        message=message,
        cause=f"critical-underrequested:{cause_part(owners.cause_key(owner))}",
        first_seen=first_seen,
        last_seen=max(first_seen, view.now),
        evidence=evidence,
    )


def _describe(shortfalls: list[_Shortfall], *, multiple: bool) -> str:
    """One clause per (resource, kind): floors once, usage by its worst pod."""
    worst: dict[tuple[str, str], _Shortfall] = {}
    for item in shortfalls:
        current = worst.get((item.resource, item.kind))
        if current is None or item.excess > current.excess:
            worst[(item.resource, item.kind)] = item
    clauses = []
    for resource in _RESOURCES:
        label = "CPU" if resource == "cpu" else "memory"
        floor = worst.get((resource, "floor"))
        if floor is not None:
            clauses.append(
                f"{label} request {floor.request.human()} is below the {floor.bound.human()} floor"
            )
        used = worst.get((resource, "usage"))
        if used is not None:
            where = f" on pod {used.pod}" if multiple else ""
            clauses.append(
                f"{label} use {used.bound.human()}{where} exceeds its "
                f"{used.request.human()} request"
            )
    return clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
