"""``node-memory-overcommit`` and ``node-cpu-overcommit``: how much of a node its pods have claimed.

Per node and resource, the effective requests and limits (``resources.pod_requests`` /
``pod_limits``: sidecars, init containers, pod overhead and pod-level resources counted as the
scheduler counts them) of every pod that *holds* resources there are summed and compared with the
node's allocatable. A pod holds resources when it is bound (``spec.nodeName``) and not
``Succeeded``/``Failed``. The sums match ``kubectl describe node``'s "Allocated resources": a
container without a limit adds nothing to the limits, so ``unboundedPods`` says how many pods may in
fact grow past what ``limits`` shows.

Why it matters: requests near 100% leave no room for the next pod (or for a replacement of a pod
that dies), and limits far above 100% mean the pods are *allowed* to use more memory than exists;
when they do, the kubelet evicts under memory pressure, or the kernel OOM-kills first. Incident 3's
core node ran at 93% requests and 124% limits and lost its hub.

Severity (``>=`` / ``>`` as written), per config:

* critical: limits >= ``limits_critical_percent`` (120 for both; CPU is compressible, so a
  team that accepts throttling may set it to ``null`` for CPU), or requests >
  ``requests_critical_percent`` (100: the kubelet admitted more than fits, e.g. after
  allocatable shrank or via ``nodeName``);
* warning: requests >= ``requests_warning_percent`` (90) or limits > ``limits_warning_percent``
  (100).

Nodes reporting no allocatable for the resource are skipped (the node is still registering; the
node-health checks speak for it).

Evidence: ``node``, ``nodePool``, ``resource``, ``allocatable``, ``requests``, ``limits``
(canonical quantities), ``requestsPercent``, ``limitsPercent`` (1 decimal), ``pods`` (pods
holding resources), ``unboundedPods`` (pods with a container lacking a limit for the resource),
``thresholds`` (the percentages applied), ``topConsumers``: up to ``top_consumers`` entries
``{pod, owner, request, limit, requestsPercent, limitsPercent, unbounded}``, largest first by the
larger of limit and request (``limit`` sums the limits that are set, null when none is;
``unbounded`` is true when some container sets none, so the pod may grow past it).

Cause: ``<resource>-overcommit:<namespace>/<Kind>/<name>@<pool>``: the workload of the top
consumer and the node pool, the two things that link recurrences (the same hog, the same pool),
e.g. ``memory-overcommit:support/Deployment/support-prometheus-server@core-pool``.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime
from fractions import Fraction
from typing import Any

from kubemedic.checks.findings import Finding, Severity, cause_part, percent
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners, placement, resources, timing
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity
from kubemedic.model.view import ClusterView

__all__ = ["CpuOvercommitConfig", "MemoryOvercommitConfig", "overcommit_findings"]


@dataclass(frozen=True, slots=True)
class MemoryOvercommitConfig:
    """Thresholds in percent of allocatable; ``None`` disables one."""

    requests_warning_percent: float | None = 90.0
    requests_critical_percent: float | None = 100.0
    limits_warning_percent: float | None = 100.0
    limits_critical_percent: float | None = 120.0
    top_consumers: int = 5


@dataclass(frozen=True, slots=True)
class CpuOvercommitConfig:
    """As ``MemoryOvercommitConfig``. CPU over its limit is throttled, not killed: set
    ``limits_critical_percent`` to None to keep CPU limit overcommit at warning."""

    requests_warning_percent: float | None = 90.0
    requests_critical_percent: float | None = 100.0
    limits_warning_percent: float | None = 100.0
    limits_critical_percent: float | None = 120.0
    top_consumers: int = 5


OvercommitConfig = MemoryOvercommitConfig | CpuOvercommitConfig


@dataclass(frozen=True, slots=True)
class _Consumer:
    pod: Body
    request: Quantity
    limit: Quantity | None  # the limits that are set, summed; None when no container sets one
    unbounded: bool  # some container sets no limit: the pod may grow past ``limit``

    @property
    def weight(self) -> tuple[Fraction, Fraction]:
        """The larger of limit and request, then the request (as exact values: quantities
        order by value)."""
        request = self.request.value
        biggest = request if self.limit is None else max(request, self.limit.value)
        return (biggest, request)


@check("node-memory-overcommit", MemoryOvercommitConfig)
def node_memory_overcommit(view: ClusterView, config: MemoryOvercommitConfig) -> list[Finding]:
    """Nodes whose pods' memory requests or limits approach or exceed allocatable."""
    return overcommit_findings(view, resource="memory", config=config)


@check("node-cpu-overcommit", CpuOvercommitConfig)
def node_cpu_overcommit(view: ClusterView, config: CpuOvercommitConfig) -> list[Finding]:
    """Nodes whose pods' CPU requests or limits approach or exceed allocatable."""
    return overcommit_findings(view, resource="cpu", config=config)


def overcommit_findings(
    view: ClusterView, *, resource: str, config: OvercommitConfig
) -> list[Finding]:
    findings = []
    for name in sorted(view.nodes):
        finding = _node_finding(view, view.nodes[name], resource=resource, config=config)
        if finding is not None:
            findings.append(finding)
    return findings


def _node_finding(
    view: ClusterView, node: Body, *, resource: str, config: OvercommitConfig
) -> Finding | None:
    name = objects.get_str(node, "metadata", "name") or ""
    allocatable = resources.node_allocatable(node).get(resource)
    if allocatable is None or allocatable.value <= 0:
        return None
    nothing = resources.zero(resource)
    only = (resource,)
    consumers = []
    for pod in placement.resident_pods(view, name):
        request = resources.pod_requests(pod).get(resource, nothing)
        limit = resources.pod_limits(pod).get(resource)
        unbounded = bool(resources.unbounded_limits(pod, only))
        consumers.append(_Consumer(pod, request, limit, unbounded))
    # Summed as exact fractions, then wrapped once (what adding the quantities one by one gives).
    requests = Quantity(sum((c.request.value for c in consumers), nothing.value), nothing.format)
    # As ``kubectl describe node``: every limit that is set counts, even when another container of
    # the same pod sets none (that pod is then also counted in ``unboundedPods``).
    limits = Quantity(
        sum((c.limit.value for c in consumers if c.limit is not None), nothing.value),
        nothing.format,
    )
    requests_pct, limits_pct = percent(requests, allocatable), percent(limits, allocatable)
    severity = _severity(requests_pct, limits_pct, config)
    if severity is None:
        return None

    # The largest first (what sorting them all in reverse and taking the first few gives).
    top = heapq.nlargest(
        max(config.top_consumers, 0), consumers, key=lambda c: (c.weight, owners.pod_key(c.pod))
    )
    pool = placement.node_pool(node)
    label = "CPU" if resource == "cpu" else resource
    evidence: dict[str, Any] = {
        "node": name,
        "nodePool": pool,
        "resource": resource,
        "allocatable": str(allocatable),
        "requests": str(requests),
        "limits": str(limits),
        "requestsPercent": requests_pct,
        "limitsPercent": limits_pct,
        "pods": len(consumers),
        "unboundedPods": sum(1 for c in consumers if c.unbounded),
        "thresholds": _thresholds(config),
        "topConsumers": [_consumer_json(view, c, allocatable) for c in top],
    }
    lead = ""
    if top:
        first = top[0]
        amount = first.request if first.limit is None else first.limit
        kind = "request" if first.limit is None else "limit"
        share = percent(amount, allocatable)
        lead = (
            f"; the largest, {owners.pod_key(first.pod)}, alone has a {amount.human()} "
            f"{kind} ({share}%)"
        )
    message = (
        f"Node {name} ({pool}) has {label} requests at {requests_pct}% and limits at "
        f"{limits_pct}% of its {allocatable.human()} allocatable across {len(consumers)} pods"
        f"{lead}."
    )
    culprit = owners.workload_of(view, top[0].pod) if top else None
    culprit_key = owners.cause_key(culprit) if culprit else "none"
    first_seen, last_seen = _seen(view, consumers)
    return Finding(
        check=f"node-{resource}-overcommit",
        severity=severity,
        object=ObjectRef(kind="Node", name=name),
        message=message,
        cause=f"{resource}-overcommit:{cause_part(culprit_key)}@{cause_part(pool)}",
        first_seen=first_seen,
        last_seen=last_seen,
        evidence=evidence,
    )


def _severity(requests_pct: float, limits_pct: float, config: OvercommitConfig) -> Severity | None:
    def at_least(value: float, threshold: float | None) -> bool:
        return threshold is not None and value >= threshold

    def above(value: float, threshold: float | None) -> bool:
        return threshold is not None and value > threshold

    if at_least(limits_pct, config.limits_critical_percent) or above(
        requests_pct, config.requests_critical_percent
    ):
        return Severity.CRITICAL
    if at_least(requests_pct, config.requests_warning_percent) or above(
        limits_pct, config.limits_warning_percent
    ):
        return Severity.WARNING
    return None


def _thresholds(config: OvercommitConfig) -> dict[str, float | None]:
    return {
        "requestsWarningPercent": config.requests_warning_percent,
        "requestsCriticalPercent": config.requests_critical_percent,
        "limitsWarningPercent": config.limits_warning_percent,
        "limitsCriticalPercent": config.limits_critical_percent,
    }


def _consumer_json(view: ClusterView, consumer: _Consumer, allocatable: Quantity) -> dict[str, Any]:
    return {
        "pod": owners.pod_key(consumer.pod),
        "owner": owners.owner_text(owners.workload_of(view, consumer.pod)),
        "request": str(consumer.request),
        "limit": None if consumer.limit is None else str(consumer.limit),
        "requestsPercent": percent(consumer.request, allocatable),
        "limitsPercent": (None if consumer.limit is None else percent(consumer.limit, allocatable)),
        "unbounded": consumer.unbounded,
    }


def _seen(view: ClusterView, consumers: list[_Consumer]) -> tuple[datetime, datetime]:
    """Since when the current set of pods has been together (the newest pod's creation)."""
    created = [t for c in consumers if (t := timing.created_at(c.pod))]
    first = max(created) if created else view.now
    return first, max(first, view.now)
