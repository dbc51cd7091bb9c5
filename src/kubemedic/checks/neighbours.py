"""``memory-hog-neighbour``: a pod holding a large share of a node's memory beside a critical pod.

Incident 3: Prometheus (20Gi request, 22Gi limit) shared a core node with the JupyterHub hub
(128Mi). When Prometheus grew, the node ran short of memory and the hub, not Prometheus, was
evicted, because the kubelet's memory-pressure ranking (``rankMemoryPressure`` in
``pkg/kubelet/eviction/helpers.go``) orders pods by

1. whether working-set usage exceeds the memory request (those pods go first),
2. priority (lower first),
3. usage minus request (larger first),

so a hub a little over its small request goes before a giant that stays within its large one.
The kubelet then skips pods it will not evict (``IsCriticalPod``: static, mirror, priority >=
2,000,000,000); those are listed with ``evictable: false``.

A *hog* is a non-critical pod whose memory request, limit or usage is at least ``hog_percent``
(25) of the node's allocatable memory. A finding is made for each hog on a node that also runs a
critical pod (``criticality.criticality_of``) the kubelet may evict; critical pods it protects are
not threatened by eviction and do not count.

Without metrics.k8s.io usage (``usageKnown: false``, or for pods missing from the metrics) a pod is
ranked as if it used exactly its request, the scheduler's own assumption: no pod exceeds, ranking
falls to priority, and pods of equal priority share a rank (``rank`` is dense: equal keys, equal
rank). With usage for every pod the order is the kubelet's.

Severity: critical when the node can run out of memory because of the hog (it has no memory limit,
or its limit or usage, whichever is larger, plus every other pod's usage-or-request, whichever is
larger, exceeds allocatable), or when a threatened critical pod ranks strictly before the hog;
else warning.

Evidence: ``node``, ``nodePool``, ``allocatable``, ``hog`` (``{pod, owner, request, limit,
usage, percentOfAllocatable, measure}``: the largest of request/limit/usage and which it was;
``limit`` sums the limits that are set, null when none is; ``unbounded`` true when some
container sets none), ``critical`` (``[{pod, owner, role, reason, request, usage}]``),
``usageKnown``, ``nodeCanRunOut``, ``evictedBeforeHog`` (critical pod keys ranked before the hog),
``evictionOrder`` (``[{rank, pod, priority, request, usage, exceedsRequest, evictable,
critical}]``: the first ``eviction_order_limit`` pods plus the hog and the critical pods wherever
they rank; ``usage``/``exceedsRequest`` null when unknown), ``evictionOrderTotal``.

Cause: ``memory-hog:<namespace>/<Kind>/<name>@<pool>`` of the hog's workload, e.g.
``memory-hog:support/Deployment/support-prometheus-server@core-pool``: the same hog on the same
pool is the same cause, whichever pod or node it lands on next.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from kubemedic.checks import criticality
from kubemedic.checks.criticality import Criticality, CriticalPodPolicy
from kubemedic.checks.findings import Finding, Severity, cause_part, percent
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners, placement, resources, timing
from kubemedic.model.objects import Body
from kubemedic.model.quantities import Quantity
from kubemedic.model.view import ClusterView

__all__ = ["NeighbourConfig", "Resident", "eviction_ranks"]

CHECK = "memory-hog-neighbour"


@dataclass(frozen=True, slots=True)
class NeighbourConfig:
    hog_percent: float = 25.0
    eviction_order_limit: int = 20
    critical: CriticalPodPolicy = field(default_factory=CriticalPodPolicy)


@dataclass(frozen=True, slots=True)
class Resident:
    """A pod holding memory on the node, as the eviction manager sees it."""

    pod: Body
    key: str
    request: Quantity
    limit: Quantity | None  # the limits that are set, summed; None when none is
    unbounded: bool  # some container sets no memory limit: the pod may grow past ``limit``
    usage: Quantity | None  # None: no metrics
    priority: int
    why: Criticality | None
    evictable: bool

    @property
    def assumed_usage(self) -> Quantity:
        return self.request if self.usage is None else self.usage

    @property
    def eviction_key(self) -> tuple[int, int, Fraction]:
        used = self.assumed_usage
        return (0 if used > self.request else 1, self.priority, -(used - self.request).value)


def eviction_ranks(residents: list[Resident]) -> list[tuple[int, Resident]]:
    """``residents`` in the kubelet's memory-pressure order with dense ranks (1 = first)."""
    ordered = sorted(residents, key=lambda r: (r.eviction_key, r.key))
    ranked: list[tuple[int, Resident]] = []
    for resident in ordered:
        if not ranked:
            rank = 1
        else:
            previous_rank, previous = ranked[-1]
            same = previous.eviction_key == resident.eviction_key
            rank = previous_rank if same else previous_rank + 1
        ranked.append((rank, resident))
    return ranked


@check(CHECK, NeighbourConfig)
def memory_hog_neighbour(view: ClusterView, config: NeighbourConfig) -> list[Finding]:
    """Pods holding a large share of a node's memory beside a critical pod."""
    findings: list[Finding] = []
    for name in sorted(view.nodes):
        findings.extend(_node_findings(view, view.nodes[name], config))
    return findings


def _resident(view: ClusterView, pod: Body, why: criticality.Criticality | None) -> Resident:
    request = resources.pod_requests(pod).get("memory", resources.zero("memory"))
    unbounded = "memory" in resources.unbounded_limits(pod, ("memory",))
    usage = placement.pod_usage(view, pod)
    return Resident(
        pod=pod,
        key=owners.pod_key(pod),
        request=request,
        limit=resources.pod_limits(pod).get("memory"),
        unbounded=unbounded,
        usage=None if usage is None else usage.get("memory"),
        priority=view.priority_of(pod),
        why=why,
        evictable=not criticality.kubelet_protected(view, pod),
    )


def _measure(resident: Resident) -> tuple[str, Quantity]:
    """The largest of the hog's request, limit and usage, and which it was."""
    measures = [("request", resident.request)]
    if resident.limit is not None:
        measures.append(("limit", resident.limit))
    if resident.usage is not None:
        measures.append(("usage", resident.usage))
    return max(measures, key=lambda item: item[1])


def _node_findings(view: ClusterView, node: Body, config: NeighbourConfig) -> list[Finding]:
    name = objects.get_str(node, "metadata", "name") or ""
    allocatable = resources.node_allocatable(node).get("memory")
    if allocatable is None or allocatable.value <= 0:
        return []
    pods = placement.resident_pods(view, name)
    whys = [criticality.criticality_of(view, pod, policy=config.critical) for pod in pods]
    if not any(
        why is not None and not criticality.kubelet_protected(view, pod)
        for pod, why in zip(pods, whys, strict=True)
    ):
        return []  # most nodes: nothing critical to threaten, so no need to weigh every pod
    residents = [_resident(view, pod, why) for pod, why in zip(pods, whys, strict=True)]
    threatened = [r for r in residents if r.why is not None and r.evictable]
    threshold = allocatable.value * Fraction(config.hog_percent) / 100
    hogs = [r for r in residents if r.why is None and _measure(r)[1].value >= threshold]
    if not hogs:
        return []
    ranked = eviction_ranks(residents)
    rank_of = {r.key: rank for rank, r in ranked}
    usage_known = all(r.usage is not None for r in residents)
    return [
        _finding(
            view,
            node,
            hog=hog,
            context=_NodeContext(allocatable, residents, threatened, ranked, rank_of, usage_known),
            config=config,
        )
        for hog in sorted(hogs, key=lambda r: r.key)
    ]


@dataclass(frozen=True, slots=True)
class _NodeContext:
    allocatable: Quantity
    residents: list[Resident]
    threatened: list[Resident]
    ranked: list[tuple[int, Resident]]
    rank_of: dict[str, int]
    usage_known: bool


def _finding(
    view: ClusterView, node: Body, *, hog: Resident, context: _NodeContext, config: NeighbourConfig
) -> Finding:
    name = objects.get_str(node, "metadata", "name") or ""
    pool = placement.node_pool(node)
    allocatable = context.allocatable
    others = sum(
        (max(r.request, r.assumed_usage) for r in context.residents if r.key != hog.key),
        resources.zero("memory"),
    )
    ceiling = None if hog.unbounded or hog.limit is None else max(hog.limit, hog.assumed_usage)
    can_run_out = ceiling is None or ceiling + others > allocatable
    hog_rank = context.rank_of[hog.key]
    before = [r for r in context.threatened if context.rank_of[r.key] < hog_rank]
    severity = Severity.CRITICAL if can_run_out or before else Severity.WARNING

    measure, amount = _measure(hog)
    share = percent(amount, allocatable)
    owner = owners.workload_of(view, hog.pod)
    named = [f"{r.key} ({r.why.role if r.why else '?'})" for r in context.threatened[:3]]
    if len(context.threatened) > 3:
        named.append(f"{len(context.threatened) - 3} more")
    shown = _and(named)
    noun = "pod" if len(context.threatened) == 1 else "pods"
    tails = []
    if before:
        tails.append(
            "the kubelet would evict "
            + _and(r.key for r in before)
            + " before it under memory pressure"
        )
    if ceiling is None and hog.limit is not None:
        tails.append(
            f"a container of it sets no memory limit, so it can grow past its {hog.limit.human()} "
            "of limits and fill the node"
        )
    elif ceiling is None:
        tails.append("it has no memory limit to stop it filling the node")
    elif can_run_out:
        tails.append(
            f"at its {ceiling.human()} {'limit' if ceiling == hog.limit else 'usage'} the node's "
            f"pods would need {(ceiling + others).human()} of {allocatable.human()}"
        )
    message = (
        f"Pod {hog.key} ({owners.owner_text(owner)}) holds {share}% of node {name}'s "
        f"{allocatable.human()} allocatable memory ({measure} {amount.human()}) beside critical "
        f"{noun} {shown}" + ("; " + " and ".join(tails) if tails else "") + "."
    )
    critical_pods = [hog.pod, *(r.pod for r in context.threatened)]
    created = [t for pod in critical_pods if (t := timing.created_at(pod))]
    first_seen = max(created) if created else view.now
    evidence: dict[str, Any] = {
        "node": name,
        "nodePool": pool,
        "allocatable": str(allocatable),
        "hog": {
            "pod": hog.key,
            "owner": owners.owner_text(owner),
            "request": str(hog.request),
            "limit": None if hog.limit is None else str(hog.limit),
            "unbounded": hog.unbounded,
            "usage": None if hog.usage is None else str(hog.usage),
            "percentOfAllocatable": share,
            "measure": measure,
        },
        "critical": [
            {
                "pod": r.key,
                "owner": owners.owner_text(owners.workload_of(view, r.pod)),
                "role": r.why.role if r.why else None,
                "reason": r.why.reason if r.why else None,
                "request": str(r.request),
                "usage": None if r.usage is None else str(r.usage),
            }
            for r in context.threatened
        ],
        "usageKnown": context.usage_known,
        "nodeCanRunOut": can_run_out,
        "evictedBeforeHog": [r.key for r in before],
        "evictionOrder": _order_json(context, hog=hog, limit=config.eviction_order_limit),
        "evictionOrderTotal": len(context.ranked),
    }
    return Finding(
        check=CHECK,
        severity=severity,
        object=objects.ref_of(hog.pod),
        message=message,
        cause=(f"memory-hog:{cause_part(owners.cause_key(owner))}@{cause_part(pool)}"),
        first_seen=first_seen,
        last_seen=max(first_seen, view.now),
        evidence=evidence,
    )


def _and(items: Iterable[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    listed = list(items)
    return listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + " and " + listed[-1]


def _order_json(context: _NodeContext, *, hog: Resident, limit: int) -> list[dict[str, Any]]:
    keep = {hog.key, *(r.key for r in context.threatened)}
    entries = []
    for index, (rank, r) in enumerate(context.ranked):
        if index >= limit and r.key not in keep:
            continue
        entries.append(
            {
                "rank": rank,
                "pod": r.key,
                "priority": r.priority,
                "request": str(r.request),
                "usage": None if r.usage is None else str(r.usage),
                "exceedsRequest": None if r.usage is None else r.usage > r.request,
                "evictable": r.evictable,
                "critical": r.why is not None,
            }
        )
    return entries
