"""``failed-pod-storm``: pods the kubelet rejected at admission, piling up under one owner.

Why it matters (incident 1): the kubelet runs its own admission check on every pod bound to it
(``pkg/kubelet/lifecycle/predicate.go`` and the other admit handlers). A rejected pod never runs:
the kubelet sets ``phase: Failed``, ``reason`` to a single word and ``message`` to
``"Pod was rejected: " + detail`` (``Kubelet.rejectPod``). ReplicaSets, ReplicationControllers and
StatefulSets do not count Failed pods as active and replace each one at once, with no backoff (up
to 500 creations per sync; kubernetes#72593, #120160, #114637, #131116). The pods are only
garbage-collected when the cluster holds more than ``--terminated-pod-gc-threshold`` (12,500)
terminated pods, so the storm also floods etcd, the API server and every client that lists pods.

What counts as an admission rejection: a Failed pod whose ``reason`` is

- ``OutOf<resource>``: insufficient resources (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``,
  ``OutOfephemeral-storage``, ``OutOfnvidia.com/gpu``...);
- a kubelet predicate or admit handler: ``NodeAffinity``, ``NodeName``, ``NodePorts``,
  ``TaintToleration``, ``PodOSSelectorNodeLabelDoesNotMatch``, ``PodOSNotSupported``,
  ``InvalidNodeInfo``, ``InitContainerRestartPolicyForbidden``,
  ``SupplementalGroupsPolicyNotSupported``, ``UnexpectedAdmissionError``, ``UnknownReason``,
  ``UnexpectedPredicateFailureType``, ``TopologyAffinityError``, ``SysctlForbidden``,
  ``NodeShutdown``; older kubelets' predicate names ``MatchNodeSelector``, ``HostName``,
  ``PodFitsHostPorts``, ``PodToleratesNodeTaints``, ``NodeSelectorMismatching``;
  plus ``extra_reasons`` from the config;
- anything else whose message starts with ``Pod was rejected:``. This takes in the eviction
  manager's admission refusals (``Evicted``, "Pod was rejected: The node had condition: ...")
  while leaving out ordinary evictions of running pods (``Evicted``, "The node was low on
  resource: ..."), which are not an admission storm.

Pods are grouped by their outermost controller (Pod -> ReplicaSet -> Deployment). When the
ReplicaSet is not in the view, its Deployment is inferred from the ``pod-template-hash`` label
(``<deployment>-<hash>``, ``owners.recover_deployment``). Pods with no controller cannot storm
and are left out.

Rates: ``perMinute`` is the number of rejected pods over the span of their creation times, the
span counted as at least one minute (so a burst does not read as an infinite rate);
``recentPerMinute`` counts only pods created in the ``recent_minutes`` before ``view.now``.

Severity: nothing below ``warning_pods`` (5) rejected pods; **critical** when the storm is live
(the newest rejected pod was created within ``recent_minutes``, 10) and there are at least
``critical_pods`` (20) of them or either rate reaches ``critical_per_minute`` (5); **warning**
otherwise (e.g. a storm that stopped but whose Failed pods still wait for garbage collection).

Evidence keys:

- ``owner``: the owner's object reference (``apiVersion``, ``kind``, ``namespace``, ``name``).
- ``failedPods``: rejected pods of the owner; ``reasons``: ``{reason: count}``.
- ``nodes``: ``{node: count}`` of the nodes that rejected them.
- ``perMinute``, ``recentPerMinute`` (1 decimal), ``windowMinutes`` (span of creation times),
  ``recentMinutes``.
- ``lastMessage``: the newest rejected pod's message; ``insufficientResource``: parsed from it
  when it reads ``Node didn't have enough resource: <resource>, requested: R, used: U,
  capacity: C`` (with or without the ``Pod was rejected:`` prefix): ``{resource, requested,
  used, capacity, shortBy}`` as integers in the kubelet's units (millicores for ``cpu``, bytes
  for memory and storage, a count for ``pods``); ``capacity`` is the node's allocatable and
  ``shortBy`` is ``requested - (capacity - used)``. Null when the message is another kind.
- ``pinnedNodeName``: the owner template's ``spec.nodeName`` when it has one (the usual cause;
  DaemonSet templates are not read, as in ``pinned-node-name``).
- ``gcThreshold`` (``terminated_pod_gc_threshold``) and ``terminatedPodsInCluster``: how far the
  cluster is from PodGC deleting terminated pods on its own.

Cause: ``pinned-node-name:<namespace>/<Kind>/<name>`` when the owner's template is pinned (the
same fingerprint as the ``pinned-node-name`` finding), else
``failed-pod-storm:<namespace>/<Kind>/<name>``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kubemedic.checks import settings
from kubemedic.checks.findings import Finding, Severity, pinned_cause, workload_cause
from kubemedic.checks.pinned import TEMPLATE_SPEC_PATHS
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners, placement, timing
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.view import ClusterView

__all__ = [
    "ADMISSION_REASONS",
    "FailedPodStormConfig",
    "failed_pod_storm",
    "parse_insufficient",
    "rejected_at_admission",
]

ADMISSION_REASONS = frozenset(
    {
        "NodeAffinity",
        "NodeName",
        "NodePorts",
        "TaintToleration",
        "PodOSSelectorNodeLabelDoesNotMatch",
        "PodOSNotSupported",
        "InvalidNodeInfo",
        "InitContainerRestartPolicyForbidden",
        "SupplementalGroupsPolicyNotSupported",
        "UnexpectedAdmissionError",
        "UnknownReason",
        "UnexpectedPredicateFailureType",
        "TopologyAffinityError",
        "SysctlForbidden",
        "NodeShutdown",
        "MatchNodeSelector",
        "HostName",
        "PodFitsHostPorts",
        "PodToleratesNodeTaints",
        "NodeSelectorMismatching",
    }
)
"""Admission failure reasons other than ``OutOf<resource>`` (see the module docstring)."""

_REJECTED_PREFIX = "Pod was rejected:"
_INSUFFICIENT = re.compile(
    r"Node didn't have enough resource: (?P<resource>[^,\s]+), requested: (?P<requested>-?\d+), "
    r"used: (?P<used>-?\d+), capacity: (?P<capacity>-?\d+)"
)


@dataclass(frozen=True, slots=True)
class FailedPodStormConfig:
    warning_pods: int = settings.number(5, low=1)
    """Rejected pods of one owner before anything is reported."""
    critical_pods: int = settings.number(20, low=1)
    """Rejected pods of one owner that make a live storm critical."""
    critical_per_minute: float = 5.0
    """Creation rate of rejected pods (overall or recent) that makes a live storm critical."""
    recent_minutes: float = 10.0
    """How far back from ``view.now`` a rejected pod keeps a storm live (and the recent rate)."""
    terminated_pod_gc_threshold: int = 12500
    """The kube-controller-manager's ``--terminated-pod-gc-threshold``, for the hint."""
    extra_reasons: tuple[str, ...] = ()
    """More pod ``status.reason`` values to read as admission rejections."""


@dataclass(slots=True)
class _Storm:
    owner: ObjectRef
    pods: list[Body]


def parse_insufficient(message: str) -> dict[str, Any] | None:
    """The numbers of a kubelet ``InsufficientResourceError`` message, or None."""
    match = _INSUFFICIENT.search(message)
    if match is None:
        return None
    requested, used, capacity = (int(match[name]) for name in ("requested", "used", "capacity"))
    return {
        "resource": match["resource"],
        "requested": requested,
        "used": used,
        "capacity": capacity,
        "shortBy": requested - (capacity - used),
    }


@check("failed-pod-storm", FailedPodStormConfig)
def failed_pod_storm(view: ClusterView, config: FailedPodStormConfig) -> list[Finding]:
    """Owners whose pods the kubelet keeps rejecting at admission (Failed, OutOf<resource>...)."""
    storms: dict[tuple[str, str, str], _Storm] = {}
    extra = frozenset(config.extra_reasons)
    for pod in view.pods:
        if not rejected_at_admission(pod, extra):
            continue
        owner = _owner(view, pod)
        if owner is None:
            continue
        key = (owner.kind, owner.namespace or "", owner.name)
        storms.setdefault(key, _Storm(owner, [])).pods.append(pod)
    terminated = sum(1 for pod in view.pods if placement.finished(pod))
    findings = []
    for key in sorted(storms):
        storm = storms[key]
        if len(storm.pods) >= config.warning_pods:
            findings.append(_assess(view, storm, config=config, terminated=terminated))
    return findings


def rejected_at_admission(pod: Body, extra: frozenset[str] = frozenset()) -> bool:
    """A Failed pod the kubelet refused at admission (the module docstring's rules)."""
    status = objects.get_map(pod, "status")
    if status.get("phase") != "Failed":
        return False
    reason = objects.get_str(status, "reason") or ""
    message = objects.get_str(status, "message") or ""
    return (
        (reason.startswith("OutOf") and len(reason) > len("OutOf"))
        or reason in ADMISSION_REASONS
        or reason in extra
        or message.startswith(_REJECTED_PREFIX)
    )


def _owner(view: ClusterView, pod: Body) -> ObjectRef | None:
    chain = view.owner_chain(pod)
    return owners.recover_deployment(view, chain[-1], pod=pod) if chain else None


def _pinned(view: ClusterView, storm: _Storm) -> tuple[ObjectRef, str] | None:
    """The outermost controller in the view whose pod template sets ``nodeName``."""
    for ref in [storm.owner, *reversed(view.owner_chain(storm.pods[0]))]:
        body = view.workload(ref.kind, ref.namespace, ref.name)
        path = TEMPLATE_SPEC_PATHS.get(ref.kind)
        if body is None or path is None:
            continue
        node_name = objects.get_str(body, *path, "nodeName")
        if node_name:
            return objects.ref_of(body), node_name
    return None


def _assess(
    view: ClusterView, storm: _Storm, *, config: FailedPodStormConfig, terminated: int
) -> Finding:
    owner = storm.owner
    pods = sorted(
        storm.pods,
        key=lambda pod: (
            timing.created_at(pod) or view.now,
            objects.get_str(pod, "metadata", "name") or "",
        ),
    )
    times = [when for when in (timing.created_at(pod) for pod in pods) if when is not None]
    first, last = (times[0], times[-1]) if times else (view.now, view.now)
    window = (last - first).total_seconds() / 60
    per_minute = round(len(pods) / max(window, 1.0), 1) if times else 0.0
    recent_since = view.now - timedelta(minutes=config.recent_minutes)
    recent = sum(1 for when in times if when >= recent_since)
    recent_per_minute = round(recent / config.recent_minutes, 1) if config.recent_minutes else 0.0
    live = bool(times) and last >= recent_since
    reasons = Counter(objects.get_str(pod, "status", "reason") or "" for pod in pods)
    nodes = Counter(objects.get_str(pod, "spec", "nodeName") or "" for pod in pods)
    nodes.pop("", None)
    last_message = objects.get_str(pods[-1], "status", "message") or ""
    insufficient = parse_insufficient(last_message)
    pinned = _pinned(view, storm)
    severity = Severity.WARNING
    if live and (
        len(pods) >= config.critical_pods
        or per_minute >= config.critical_per_minute
        or recent_per_minute >= config.critical_per_minute
    ):
        severity = Severity.CRITICAL
    if pinned is not None:
        cause = pinned_cause(pinned[0])
    else:
        cause = workload_cause("failed-pod-storm", owner)
    top_reasons = ", ".join(f"{count} {reason}" for reason, count in reasons.most_common(3))
    where = f" on node {', '.join(sorted(nodes))}" if 0 < len(nodes) <= 3 else ""
    pin = f" (its template pins spec.nodeName {pinned[1]})" if pinned is not None else ""
    message = (
        f"{owner} has {len(pods)} Failed pods rejected by the kubelet at admission "
        f"({top_reasons}){where}{pin}, created at {per_minute} per minute; Failed pods are only "
        f"garbage-collected above {config.terminated_pod_gc_threshold} terminated pods "
        f"(the cluster holds {terminated})."
    )
    return Finding(
        check="failed-pod-storm",
        severity=severity,
        object=owner,
        message=message,
        cause=cause,
        first_seen=first,
        last_seen=last,
        evidence={
            "owner": owner.to_json(),
            "failedPods": len(pods),
            "reasons": dict(sorted(reasons.items())),
            "nodes": dict(sorted(nodes.items())),
            "perMinute": per_minute,
            "recentPerMinute": recent_per_minute,
            "windowMinutes": round(window, 1),
            "recentMinutes": config.recent_minutes,
            "lastMessage": last_message,
            "insufficientResource": insufficient,
            "pinnedNodeName": pinned[1] if pinned is not None else None,
            "gcThreshold": config.terminated_pod_gc_threshold,
            "terminatedPodsInCluster": terminated,
        },
    )
