"""``pinned-node-name``: workload templates that bypass the scheduler with ``spec.nodeName``.

Why (incident 1): a pod created with ``spec.nodeName`` set is never seen by the scheduler; the
node's kubelet admits it or not (``pkg/kubelet/lifecycle/predicate.go``: resources and pod count,
required node affinity / ``nodeSelector``, untolerated ``NoExecute`` taints). A rejected pod is
``Failed`` (reason ``OutOf<resource>``, ``NodeAffinity``, ``TaintToleration``...) and never
retried; ReplicaSets, ReplicationControllers and StatefulSets replace it at once, pinned again,
without backoff: the ``failed-pod-storm``. Cordons and ``NoSchedule`` taints do not stop it (only
the scheduler reads them).

Templates: Deployment; ReplicaSet unless its Deployment is in the view (reported instead);
StatefulSet; ReplicationController; Job unless its CronJob is in the view; CronJob. DaemonSet is
excluded: its controller reads a template ``nodeName`` as "only on that node" (one pod at most)
and backs off before recreating failed daemon pods, so it cannot storm. Replicas:
``spec.replicas`` (default 1); a Job's ``parallelism`` (default 1) capped by the completions still
missing, 0 when suspended or finished; a CronJob's job template's, 0 when suspended.

Free allocatable: ``status.allocatable`` minus the effective requests of the node's non-terminal
pods (phase not Succeeded/Failed) other than the workload's own (their places are what is
predicted); ``pods`` counts them. A replica needs its requests plus one ``pods`` slot; extended
resources the node does not advertise are ignored (as by the kubelet), a missing native resource
has none free, CPU is compared in millicores. ``NoExecute`` taints ``node.kubernetes.io/not-ready``
and ``unreachable`` count as tolerated: DefaultTolerationSeconds gives every pod 300 s for them.

Severity: **critical** when ``fitsReplicas < replicas`` (including ``admissionBlockers``, which
reject every replica); **info** when no replicas are asked for; else **warning** (the scheduler
is bypassed; ``nodeProblems`` says if the node is missing, NotReady, cordoned or tainted).

Evidence: ``nodeName``; ``replicas``; ``fitsReplicas`` (replicas the node admits now, not capped
at ``replicas``, equal to it when nothing is requested; null when the node or its allocatable is
unknown); ``excessReplicas`` (``replicas - fitsReplicas``, at least 0; null when unknown);
``requestsPerReplica`` and ``nodeFree`` (``{resource: quantity}``, free may be negative);
``limitingResource`` (fits the fewest replicas; null when unknown or blocked);
``admissionBlockers`` (``NodeAffinity``, ``TaintToleration``); ``nodeProblems`` (plain-language
list); ``setBy`` (``{manager, operation, time}`` of the managedFields entry owning the template's
``nodeName``: who pinned it and when, also ``firstSeen``; null when not recorded).

Cause: ``pinned-node-name:<namespace>/<Kind>/<name>``, shared with the ``failed-pod-storm`` and
``out-of-band-edit`` findings of the same pin.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from kubemedic.checks.findings import Finding, Severity, pinned_cause
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners, placement, resources
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity, QuantityError
from kubemedic.model.view import ClusterView, controller_of

__all__ = ["TEMPLATE_SPEC_PATHS", "PinnedNodeNameConfig", "pinned_node_name"]

TEMPLATE_SPEC_PATHS: Mapping[str, tuple[str, ...]] = {
    kind: path for kind, path in owners.POD_TEMPLATE_SPECS.items() if kind != "DaemonSet"
}
"""The kinds checked (every workload kind but DaemonSet) and where they keep their pod template's
spec; ``failed-pod-storm`` looks for a pin in the same places."""

_REPORTED_BY_OWNER = {"ReplicaSet": "Deployment", "Job": "CronJob"}
_RECREATE_AT_ONCE = frozenset({"Deployment", "ReplicaSet", "ReplicationController", "StatefulSet"})
_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class PinnedNodeNameConfig:
    """The node's free allocatable is the threshold; nothing to tune but what to report."""

    report_zero_replicas: bool = True
    """Report pinned templates that ask for no replicas (as info): a scale-up would storm."""


@check("pinned-node-name", PinnedNodeNameConfig)
def pinned_node_name(view: ClusterView, config: PinnedNodeNameConfig) -> list[Finding]:
    """Workload templates pinned to a node with spec.nodeName, and whether their replicas fit."""
    findings: list[Finding] = []
    for (kind, namespace, _name), body in sorted(
        view.workloads.items(), key=lambda item: (item[0][0], item[0][1] or "", item[0][2])
    ):
        path = TEMPLATE_SPEC_PATHS.get(kind)
        if path is None:
            continue
        template = objects.get_map(body, *path)
        node_name = objects.get_str(template, "nodeName")
        if not node_name or _reported_by_owner(view, body, kind=kind, namespace=namespace):
            continue
        replicas = _replicas(body, kind)
        if replicas == 0 and not config.report_zero_replicas:
            continue
        findings.append(
            _assess(view, body=body, template=template, node_name=node_name, replicas=replicas)
        )
    return findings


def _reported_by_owner(view: ClusterView, body: Body, *, kind: str, namespace: str | None) -> bool:
    owner = controller_of(body)
    if owner is None or owner.kind != _REPORTED_BY_OWNER.get(kind):
        return False
    return view.workload(owner.kind, namespace, owner.name) is not None


def _count(value: Any, default: int) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return default


def _replicas(body: Body, kind: str) -> int:
    spec = objects.get_map(body, "spec")
    if kind == "Job":
        return _job_replicas(spec, objects.get_map(body, "status"))
    if kind == "CronJob":
        if spec.get("suspend") is True:
            return 0
        return _job_replicas(objects.get_map(spec, "jobTemplate", "spec"), {})
    return _count(spec.get("replicas"), 1)


def _job_replicas(spec: Mapping[str, Any], status: Mapping[str, Any]) -> int:
    if spec.get("suspend") is True:
        return 0
    finished = {"Complete": "True", "Failed": "True"}
    if any(_condition(status, kind) == value for kind, value in finished.items()):
        return 0
    parallelism = _count(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if isinstance(completions, int) and not isinstance(completions, bool):
        remaining = completions - _count(status.get("succeeded"), 0)
        parallelism = min(parallelism, max(remaining, 0))
    return parallelism


def _assess(
    view: ClusterView, *, body: Body, template: Mapping[str, Any], node_name: str, replicas: int
) -> Finding:
    ref = objects.ref_of(body)
    per_replica = _template_requests(ref, template)
    node = view.nodes.get(node_name)
    problems: list[str] = []
    blockers: list[str] = []
    free: dict[str, Quantity] = {}
    fits: int | None = None
    limiting: str | None = None
    if node is None:
        problems.append(f"node {node_name} is not in the snapshot")
    else:
        problems.extend(_node_problems(node))
        blockers = _admission_blockers(node, template, problems)
        free = _node_free(view, node=node, workload=ref)
        if free:
            fits, limiting = _fits(per_replica, free, replicas=replicas)
        else:
            problems.append("node reports no allocatable resources")
        if blockers:
            fits, limiting = 0, None
    excess = None if fits is None else max(replicas - fits, 0)
    set_by = _set_by(body, TEMPLATE_SPEC_PATHS[ref.kind])
    first_seen = view.now
    if set_by is not None:
        first_seen = objects.parse_time(set_by["time"]) or view.now
    severity = Severity.WARNING
    if replicas == 0:
        severity = Severity.INFO
    elif excess:
        severity = Severity.CRITICAL
    evidence = {
        "nodeName": node_name,
        "replicas": replicas,
        "fitsReplicas": fits,
        "excessReplicas": excess,
        "requestsPerReplica": {name: str(q) for name, q in sorted(per_replica.items())},
        "nodeFree": {name: str(q) for name, q in sorted(free.items())},
        "limitingResource": limiting,
        "admissionBlockers": blockers,
        "nodeProblems": problems,
        "setBy": set_by,
    }
    return Finding(
        check="pinned-node-name",
        severity=severity,
        object=ref,
        message=_message(ref, evidence, per_replica=per_replica, free=free),
        cause=pinned_cause(ref),
        first_seen=min(first_seen, view.now),
        last_seen=view.now,
        evidence=evidence,
    )


def _template_requests(ref: ObjectRef, template: Mapping[str, Any]) -> dict[str, Quantity]:
    pod = {"metadata": {"namespace": ref.namespace, "name": ref.name}, "spec": template}
    try:
        requests = resources.pod_requests(pod)
    except QuantityError as error:
        raise QuantityError(f"{ref} pod template: {error}") from None
    return {name: quantity for name, quantity in requests.items() if quantity.value > 0}


def _node_free(view: ClusterView, *, node: Body, workload: ObjectRef) -> dict[str, Quantity]:
    node_name = objects.get_str(node, "metadata", "name") or ""
    allocatable = resources.node_allocatable(node)
    used: dict[str, Quantity] = {}
    count = 0
    for pod in placement.resident_pods(view, node_name):
        if _belongs(view, pod, workload):
            continue
        resources.add_into(used, resources.pod_requests(pod))
        count += 1
    free = {
        name: quantity - used[name] if name in used else quantity
        for name, quantity in allocatable.items()
    }
    if "pods" in free:
        free["pods"] = allocatable["pods"] - Quantity.from_number(count)
    return free


def _belongs(view: ClusterView, pod: Body, workload: ObjectRef) -> bool:
    return any(
        (owner.kind, owner.namespace, owner.name)
        == (workload.kind, workload.namespace, workload.name)
        for owner in view.owner_chain(pod)
    )


def _is_extended(resource: str) -> bool:
    """``v1helper.IsExtendedResourceName``: a qualified name outside ``kubernetes.io/``."""
    native = "/" not in resource or resource.startswith("kubernetes.io/")
    return not native and not resource.startswith("requests.")


def _fits(
    per_replica: Mapping[str, Quantity], free: Mapping[str, Quantity], *, replicas: int
) -> tuple[int, str | None]:
    needs = dict(per_replica)
    if "pods" in free:
        needs["pods"] = Quantity.from_number(1)
    best: int | None = None
    limiting: str | None = None
    for resource, need in sorted(needs.items()):
        if resource not in free and _is_extended(resource):
            continue
        available = free[resource].value if resource in free else Fraction(0)
        if resource == "cpu":
            count = math.floor(available * 1000) // need.milli
        else:
            count = math.floor(available / need.value)
        count = max(count, 0)
        if best is None or count < best:
            best, limiting = count, resource
    return (replicas if best is None else best), limiting


def _condition(status: Mapping[str, Any], kind: str) -> str | None:
    """The ``status`` of the condition of type ``kind``, or None when there is none."""
    for condition in objects.get_list(status, "conditions"):
        if isinstance(condition, Mapping) and condition.get("type") == kind:
            return str(condition.get("status"))
    return None


def _node_problems(node: Body) -> list[str]:
    problems: list[str] = []
    ready = _condition(objects.get_map(node, "status"), "Ready")
    if ready != "True":
        problems.append(f"node is NotReady (Ready={ready or 'missing'})")
    if objects.get_map(node, "spec").get("unschedulable") is True:
        problems.append("node is cordoned (spec.unschedulable), which nodeName bypasses")
    for taint in objects.get_list(node, "spec", "taints"):
        if isinstance(taint, Mapping) and taint.get("effect") in ("NoSchedule", "PreferNoSchedule"):
            problems.append(f"taint {placement.taint_text(taint)} is bypassed by nodeName")
    return problems


def _admission_blockers(node: Body, template: Mapping[str, Any], problems: list[str]) -> list[str]:
    """Kubelet admission predicates every replica fails, explained into ``problems``."""
    blockers: list[str] = []
    if not placement.affinity_matches(template, node):
        blockers.append("NodeAffinity")
        problems.append("the template's nodeSelector / required node affinity does not match")
    tolerations = [t for t in objects.get_list(template, "tolerations") if isinstance(t, Mapping)]
    for taint in objects.get_list(node, "spec", "taints"):
        if (
            isinstance(taint, Mapping)
            and taint.get("effect") == "NoExecute"
            and taint.get("key") not in placement.DEFAULT_TOLERATED_TAINTS
            and not any(placement.tolerates(toleration, taint) for toleration in tolerations)
        ):
            if "TaintToleration" not in blockers:
                blockers.append("TaintToleration")
            problems.append(f"taint {placement.taint_text(taint)} is not tolerated")
    return blockers


def _set_by(body: Body, template_path: tuple[str, ...]) -> dict[str, Any] | None:
    """The managedFields entry (latest, if several) that owns the template's ``nodeName``."""
    wanted = [f"f:{key}" for key in template_path] + ["f:nodeName"]
    owners: list[Mapping[str, Any]] = []
    for entry in objects.get_list(body, "metadata", "managedFields"):
        node: Any = objects.get_map(entry, "fieldsV1")
        for key in wanted:
            node = node.get(key) if isinstance(node, Mapping) else None
        if node is not None:
            owners.append(entry)
    if not owners:
        return None
    latest = max(owners, key=lambda entry: objects.parse_time(entry.get("time")) or _NEVER)
    return {key: objects.get_str(latest, key) for key in ("manager", "operation", "time")}


def _message(
    ref: ObjectRef,
    evidence: Mapping[str, Any],
    *,
    per_replica: Mapping[str, Quantity],
    free: Mapping[str, Quantity],
) -> str:
    replicas, fits = evidence["replicas"], evidence["fitsReplicas"]
    limiting, problems = evidence["limitingResource"], "; ".join(evidence["nodeProblems"])
    pinned = f"{ref} pins {replicas} replica(s) to node {evidence['nodeName']} with spec.nodeName"
    churn = ", and its controller will recreate them without backoff"
    churn = churn if ref.kind in _RECREATE_AT_ONCE else ""
    if replicas == 0:
        return f"{pinned}; scaling it up will bypass the scheduler."
    if fits is None:
        return f"{pinned}, bypassing the scheduler; whether they fit is unknown ({problems})."
    if evidence["admissionBlockers"]:
        return f"{pinned}, but the kubelet there rejects every replica ({problems}){churn}."
    if fits < replicas and limiting is not None:
        need = per_replica.get(limiting, Quantity.from_number(1))
        have = free.get(limiting, Quantity.from_number(0))
        return (
            f"{pinned}, bypassing the scheduler, but only {fits} fit its free {limiting} "
            f"({need.human()} each, {have.human()} free), so the kubelet will reject "
            f"{replicas - fits} with OutOf{limiting}{churn}."
        )
    notes = f" ({problems})" if problems else ""
    return f"{pinned}, bypassing the scheduler; all fit for now ({fits} would){notes}."
