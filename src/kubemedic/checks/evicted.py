"""``evicted``: pods the kubelet evicted because their node ran short of a resource.

Sources: pods in ``phase: Failed`` with ``reason: Evicted`` (they stay until PodGC collects them
above ``--terminated-pod-gc-threshold``, so they outlive the events), pods still terminating with
a ``DisruptionTarget`` condition of reason ``TerminationByKubelet``, and ``Evicted`` events about
pods that are already gone (events live one hour, ``--event-ttl``). Messages are parsed by
``kubemedic.model.eviction``; API-initiated evictions (drains), preemptions and taint-manager
deletions are *not* node pressure and are left out.

One finding per workload, node and resource. The kubelet ranks eviction victims by usage above
request first, so the pod evicted is often the small, under-requested one (a hub at 128Mi) and
not the hog that caused the pressure (a Prometheus well inside a 20Gi request):
``nodeTopConsumer`` names the largest user of the resource on the node from PodMetrics.

Evidence keys:

- ``pod``: the most recently evicted pod; ``pods``: all of them (at most 20 listed); both as
  ``namespace/name``
- ``owner``: ``Kind namespace/name`` of the workload (``ownerGuessed`` when only an event named
  the pod and the Deployment was inferred from a ``<deployment>-<hash>-<suffix>`` name,
  ``owners.guess_deployment``)
- ``node``, ``pool``: the node and its pool (``placement.pool_of``, as every check names pools;
  the node's name when the node is no longer in the view)
- ``kind``: ``node-pressure``, ``local-storage-limit`` or ``admission-rejected``
- ``resource``, ``threshold``, ``available``: as the kubelet reported them (canonical quantities)
- ``conditions``: node conditions named by an admission rejection
- ``containers``: ``[{name, scope, resource, usage, request}]`` from the latest message
- ``limits``: local-storage limits exceeded (``[{scope, name, limit}]``)
- ``biggestConsumer``: the container the kubelet blamed (largest usage above request) or None
- ``nodeTopConsumer``: ``{pod, namespace, container, usage, request}`` (``pod`` as
  ``namespace/name``), the node's largest current user of the resource per PodMetrics, or None
- ``count``: evictions of this workload on this node
- ``critical``: why an evicted pod is critical (``criticality.criticality_of``), or None

Severity: warning; critical when an evicted pod is critical under ``critical`` (the shared
``CriticalPodPolicy``: hub/proxy/ingress/DNS role labels, a ``system-*`` PriorityClass, or priority
>= 1e9, the highest user-definable) or when one workload was evicted ``critical_count`` (5) or
more times from one node (it keeps coming back to be evicted again).

Cause: ``eviction:<resource>@<pool>`` for node pressure and admission rejections, so evictions of
different workloads on the same pressured pool link; ``eviction:ephemeral-storage-limit:<ns>/
<Kind>/<owner>`` for a pod over its own local-storage limit (its own doing, not the pool's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.checks import criticality
from kubemedic.checks.criticality import CriticalPodPolicy
from kubemedic.checks.findings import Finding, Severity, cause_part
from kubemedic.checks.registry import check
from kubemedic.model import containers, objects, owners, placement, resources, timing
from kubemedic.model.events import EventRecord
from kubemedic.model.eviction import Amount, DisruptionKind, Eviction, classify, pod_disruption
from kubemedic.model.eviction import with_annotations as eviction_with_annotations
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity
from kubemedic.model.view import ClusterView

__all__ = ["EvictedConfig", "evicted"]

_MAX_LISTED = 20
_FROM_EVICTION = (
    "kind",
    "threshold",
    "available",
    "conditions",
    "containers",
    "limits",
    "biggestConsumer",
)
"""Evidence keys taken as ``Eviction.to_json`` writes them (the latest eviction's own words)."""


@dataclass(frozen=True)
class EvictedConfig:
    critical: CriticalPodPolicy = field(default_factory=CriticalPodPolicy)
    """Which pods are critical (``criticality.criticality_of``)."""
    critical_count: int = 5
    """Evictions of one workload from one node that make the finding critical."""


# -- the check -------------------------------------------------------------------------------------


@dataclass
class _Group:
    owner: ObjectRef
    node: str
    resource: str
    guessed: bool = False
    pods: dict[str, datetime] = field(default_factory=dict)
    latest: Eviction | None = None
    latest_at: datetime | None = None
    first: datetime | None = None
    count: int = 0
    critical: str | None = None

    def add(self, pod: str, eviction: Eviction, *, first: datetime, last: datetime) -> None:
        self.count += 1
        self.pods[pod] = last
        self.first = first if self.first is None else min(self.first, first)
        if self.latest_at is None or last >= self.latest_at:
            self.latest, self.latest_at = eviction, last


@check("evicted", EvictedConfig)
def evicted(view: ClusterView, config: EvictedConfig) -> list[Finding]:
    """Pods evicted by the kubelet under node pressure or over local-storage limits."""
    groups: dict[tuple[ObjectRef, str, str], _Group] = {}
    seen: set[tuple[str | None, str]] = set()

    def group_for(owner: ObjectRef, node: str, found: Eviction) -> _Group:
        resource = found.resource or "unknown"
        key = (owner, node, resource)
        if key not in groups:
            groups[key] = _Group(owner=owner, node=node, resource=resource)
        return groups[key]

    for pod in view.pods:
        found = pod_disruption(pod)
        if found is None or not (found.by_kubelet or _is_evicted_status(pod)):
            continue
        ref = objects.ref_of(pod)
        seen.add((ref.namespace, ref.name))
        events = [e for e in view.events_about(ref) if e.reason == "Evicted"]
        if found.kind is DisruptionKind.UNKNOWN and events:
            found = _from_event(events[-1])  # an empty or odd status message: the event's words
        times = [t for e in events for t in (e.first_seen, e.last_seen) if t is not None]
        when = _evicted_at(pod) or view.now
        node = objects.get_str(pod, "spec", "nodeName") or next(
            (e.host for e in events if e.host), "unknown-node"
        )
        group = group_for(owners.workload_of(view, pod), node, found)
        group.add(ref.key, found, first=min(times, default=when), last=max(times, default=when))
        why = criticality.criticality_of(view, pod, policy=config.critical)
        group.critical = group.critical or (why.reason if why else None)

    for event in view.events:
        if event.reason != "Evicted" or event.object_kind != "Pod":
            continue
        if (event.object_namespace, event.object_name) in seen:
            continue
        found = _from_event(event)
        if not found.by_kubelet and found.kind is not DisruptionKind.UNKNOWN:
            continue
        guessed = owners.guess_deployment(event.object_namespace, event.object_name)
        owner = guessed or ObjectRef("Pod", event.object_name, event.object_namespace)
        group = group_for(owner, event.host or "unknown-node", found)
        group.guessed |= guessed is not None
        first = event.first_seen or event.last_seen or view.now
        pod_key = ObjectRef("Pod", event.object_name, event.object_namespace).key
        group.add(pod_key, found, first=first, last=event.last_seen or first)
        group.count += event.count - 1

    consumers: dict[tuple[str, str], dict[str, Any] | None] = {}  # groups share nodes
    findings = [_finding(view, group, config, consumers) for group in groups.values()]
    findings.sort(key=lambda finding: finding.sort_key)
    return findings


def _is_evicted_status(pod: Body) -> bool:
    status = objects.get_map(pod, "status")
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def _from_event(event: EventRecord) -> Eviction:
    found = classify(event.reason, event.message)
    annotations = event.annotations
    return eviction_with_annotations(found, annotations) if annotations else found


def _evicted_at(pod: Body) -> datetime | None:
    status = objects.get_map(pod, "status")
    for condition in objects.get_list(status, "conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == "DisruptionTarget":
            when = objects.parse_time(condition.get("lastTransitionTime"))
            if when is not None:
                return when
    finished = [
        objects.parse_time(objects.get_map(c, "state", "terminated").get("finishedAt"))
        for c in objects.get_list(status, "containerStatuses")
    ]
    known = [when for when in finished if when is not None]
    if known:
        return max(known)
    return objects.parse_time(status.get("startTime")) or timing.created_at(pod)


def _top_consumer(view: ClusterView, node: str, resource: str) -> dict[str, Any] | None:
    if resource not in ("memory", "cpu"):
        return None
    best: tuple[float, dict[str, Any]] | None = None
    for pod in view.pods_on(node):
        ref = objects.ref_of(pod)
        metrics = view.pod_metrics.get((ref.namespace or "", ref.name))
        if metrics is None:
            continue
        for entry in objects.get_list(metrics, "containers"):
            name = objects.get_str(entry, "name") or "?"
            raw = objects.get_map(entry, "usage").get(resource)
            if raw is None:
                continue
            usage = parse_quantity(raw, where=f"PodMetrics {ref.key} containers[name={name}].usage")
            if best is not None and float(usage) <= best[0]:
                continue
            requests = resources.container_resources(
                containers.spec(pod, name),
                "requests",
                where=f"Pod {ref.key} containers[name={name}]",
            )
            request = requests.get(resource)
            best = (
                float(usage),
                {
                    "pod": ref.key,
                    "namespace": ref.namespace,
                    "container": name,
                    "usage": str(usage),
                    "request": None if request is None else str(request),
                },
            )
    return best[1] if best else None


def _finding(
    view: ClusterView,
    group: _Group,
    config: EvictedConfig,
    consumers: dict[tuple[str, str], dict[str, Any] | None],
) -> Finding:
    found = group.latest or Eviction(kind=DisruptionKind.UNKNOWN)
    pool = placement.pool_of(view, group.node)
    latest_pod = max(group.pods, key=lambda key: group.pods[key])
    described = found.to_json()
    critical = group.critical is not None or group.count >= config.critical_count
    if found.kind is DisruptionKind.LOCAL_STORAGE_LIMIT:
        cause = f"eviction:ephemeral-storage-limit:{cause_part(owners.cause_key(group.owner))}"
    else:
        cause = f"eviction:{cause_part(group.resource)}@{cause_part(pool)}"
    evidence: dict[str, Any] = {
        "pod": latest_pod,
        "pods": sorted(group.pods)[:_MAX_LISTED],
        "owner": owners.owner_text(group.owner),
        "ownerGuessed": group.guessed,
        "node": group.node,
        "pool": pool,
        **{key: described[key] for key in _FROM_EVICTION},
        "resource": group.resource,
        "nodeTopConsumer": _top_consumer_once(view, group.node, group.resource, consumers),
        "count": group.count,
        "critical": group.critical,
    }
    first = group.first or view.now
    last = group.latest_at or first
    return Finding(
        check="evicted",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        object=group.owner,
        message=_message(group, found, pool=pool),
        cause=cause,
        first_seen=first,
        last_seen=last,
        evidence=evidence,
    )


def _top_consumer_once(
    view: ClusterView,
    node: str,
    resource: str,
    known: dict[tuple[str, str], dict[str, Any] | None],
) -> dict[str, Any] | None:
    """``_top_consumer_safe``, found once per node and resource (each finding gets a copy)."""
    key = (node, resource)
    if key not in known:
        known[key] = _top_consumer_safe(view, node, resource)
    found = known[key]
    return None if found is None else dict(found)


def _top_consumer_safe(view: ClusterView, node: str, resource: str) -> dict[str, Any] | None:
    """PodMetrics are optional context: a malformed one must not hide the eviction itself."""
    try:
        return _top_consumer(view, node, resource)
    except QuantityError:
        return None


def _message(group: _Group, found: Eviction, *, pool: str) -> str:
    owner = owners.owner_text(group.owner)
    where = f"node {group.node}" + (f" (pool {pool})" if pool != group.node else "")
    who = owner if group.owner.kind == "Pod" else f"{group.count} pod(s) of {owner}"
    if found.kind is DisruptionKind.LOCAL_STORAGE_LIMIT and found.limits:
        limit = found.limits[0]
        what = f"{limit.scope} {limit.name} " if limit.name else f"{limit.scope} "
        return f"{who} evicted from {where} for exceeding its {what}limit {_show(limit.limit)}."
    if found.kind is DisruptionKind.ADMISSION_REJECTED:
        conditions = ", ".join(found.conditions) or "a pressure condition"
        return f"{who} rejected by {where} with reason Evicted because it had {conditions}."
    if group.resource == "unknown":
        return f"{who} evicted from {where}; the kubelet's message did not name a resource."
    text = f"{who} evicted from {where}: the node was low on {group.resource}"
    if found.threshold is not None and found.available is not None:
        text += f" (threshold {_show(found.threshold)}, available {_show(found.available)})"
    biggest = found.biggest_consumer
    if biggest is not None:
        request = "no" if biggest.request is None else f"a {_show(biggest.request)}"
        text += (
            f"; {biggest.scope} {biggest.name} was using {_show(biggest.usage)} "
            f"against {request} request"
        )
    return text + "."


def _show(amount: Amount) -> str:
    return amount.human() if isinstance(amount, Quantity) else amount
