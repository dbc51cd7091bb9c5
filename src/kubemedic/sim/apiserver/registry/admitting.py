"""What the API server does to a new or replaced object after defaulting: admission, strategy.

Defaulting (:mod:`kubemedic.sim.apiserver.registry.defaulting`) fills in what the types say; this is
the rest of what kube-apiserver 1.32 changes before it stores a write:

* **Admission** (:func:`admit_node`), on node creation only: ``TaintNodesByCondition`` adds
  the ``not-ready:NoSchedule`` taint.
* **Admission** (:func:`admit_pod`), on pod creation only: ``DefaultTolerationSeconds`` adds
  five-minute ``NoExecute`` tolerations for ``not-ready`` and ``unreachable`` nodes (that is
  the eviction delay of a dead node), ``Priority`` resolves ``priorityClassName`` into
  ``priority`` and ``preemptionPolicy``, and ``ServiceAccount`` names the ``default`` account.
* **Strategy** (:func:`prepare_for_create`, :func:`prepare_for_update`): status starts over on
  create (a pod is ``Pending`` with its QoS class, :func:`qos_class`), a namespace gets the
  ``kubernetes`` finalizer once (later writes keep the stored finalizers: only the namespace
  controller removes it, through ``/finalize``), and a Service keeps the cluster IPs and node
  ports it was allocated when an update omits them (``kubectl replace`` with the original
  manifest). Call :func:`prepare_for_update` before
  :func:`~kubemedic.sim.apiserver.registry.defaulting.default_object` so IP families are adopted
  from the stored Service rather than defaulted afresh.
* **Strategy** of Jobs: unless ``manualSelector`` is true, the selector is generated from the
  new uid (``batch.kubernetes.io/controller-uid``) and the template labelled to match.
* **Allocation**: cluster IPs come from the service CIDR ``10.96.0.0/12``
  (:func:`allocate_cluster_ip`), node ports from ``30000-32767`` (:func:`allocate_node_port`).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.machinery import errors

__all__ = [
    "admit_node",
    "admit_pod",
    "allocate_cluster_ip",
    "allocate_node_port",
    "prepare_for_create",
    "prepare_for_update",
    "qos_class",
    "system_priority_classes",
]

Obj = dict[str, Any]

_NOT_READY = "node.kubernetes.io/not-ready"
_UNREACHABLE = "node.kubernetes.io/unreachable"
_SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2000001000,
    "system-cluster-critical": 2000000000,
}
_SERVICE_CIDR = ipaddress.IPv4Network("10.96.0.0/12")
_NODE_PORTS = (30000, 32767)


# -- admission ----------------------------------------------------------------------------------


def admit_pod(pod: Obj, *, priority_classes: Mapping[str, Mapping[str, Any]] | None = None) -> None:
    """Run the mutating admission plugins a default kube-apiserver applies to a new pod.

    ``priority_classes`` maps PriorityClass names to their objects (the built-in
    ``system-node-critical`` and ``system-cluster-critical`` need not be given). Raises the
    ``Forbidden`` the ``Priority`` plugin answers for an unknown class or a mismatched
    ``priority``. The ``ServiceAccount`` plugin's token volume is not added.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    name = str(pod.get("metadata", {}).get("name") or "")
    _default_toleration_seconds(spec)
    _admit_priority(spec, name, priority_classes or {})
    account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = spec["serviceAccount"] = account


def _default_toleration_seconds(spec: Obj) -> None:
    tolerations = spec.get("tolerations")
    if not isinstance(tolerations, list):
        tolerations = []
    for key in (_NOT_READY, _UNREACHABLE):
        covered = any(
            isinstance(t, dict)
            and t.get("key", "") in (key, "")
            and t.get("effect", "") in ("NoExecute", "")
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations


def _admit_priority(spec: Obj, pod_name: str, classes: Mapping[str, Mapping[str, Any]]) -> None:
    class_name = spec.get("priorityClassName") or ""
    preemption = "PreemptLowerPriority"
    if not class_name:
        default = next((c for c in classes.values() if c.get("globalDefault")), None)
        if default is None:
            priority = 0
        else:
            class_name = str(default.get("metadata", {}).get("name", ""))
            priority = int(default.get("value", 0))
            preemption = str(default.get("preemptionPolicy") or preemption)
            spec["priorityClassName"] = class_name
    elif class_name in classes:
        found = classes[class_name]
        priority = int(found.get("value", 0))
        preemption = str(found.get("preemptionPolicy") or preemption)
    elif class_name in _SYSTEM_PRIORITY_CLASSES:
        priority = _SYSTEM_PRIORITY_CLASSES[class_name]
    else:
        raise errors.forbidden(
            "pods", pod_name, f"no PriorityClass with name {class_name} was found"
        )
    given = spec.get("priority")
    if given is not None and given != priority:
        raise errors.forbidden(
            "pods",
            pod_name,
            f"the integer value of priority ({given}) must not be provided in pod spec; priority "
            f"admission controller computed {priority} from the given PriorityClass name",
        )
    given_policy = spec.get("preemptionPolicy")
    if given_policy and given_policy != preemption:
        raise errors.forbidden(
            "pods",
            pod_name,
            f"the string value of PreemptionPolicy ({given_policy}) must not be provided in pod "
            f"spec; priority admission controller computed {preemption} from the given "
            "PriorityClass name",
        )
    spec["priority"] = priority
    spec["preemptionPolicy"] = preemption


def system_priority_classes() -> list[Obj]:
    """The PriorityClasses kube-apiserver creates at start-up (``SystemPriorityClasses`` of
    ``pkg/apis/scheduling``), as the bodies it posts."""
    descriptions = {
        "system-node-critical": "Used for system critical pods that must not be moved from "
        "their current node.",
        "system-cluster-critical": "Used for system critical pods that must run in the cluster, "
        "but can be moved to another node if necessary.",
    }
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "description": descriptions[name],
        }
        for name, value in _SYSTEM_PRIORITY_CLASSES.items()
    ]


NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def admit_node(obj: Obj) -> None:
    """``TaintNodesByCondition`` (``plugin/pkg/admission/nodetaint``), on node creation only: a new
    node gets the ``node.kubernetes.io/not-ready:NoSchedule`` taint, so nothing is scheduled on it
    before the node lifecycle controller has seen it Ready and lifted the taint."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    taints = spec.get("taints")
    if not isinstance(taints, list):
        taints = spec["taints"] = []
    for taint in taints:
        if (
            isinstance(taint, dict)
            and taint.get("key") == NOT_READY_TAINT["key"]
            and taint.get("effect") == NOT_READY_TAINT["effect"]
        ):
            return
    taints.append(dict(NOT_READY_TAINT))


# -- strategy -----------------------------------------------------------------------------------


def prepare_for_create(obj: Obj, *, group: str, version: str, kind: str) -> None:
    """The create strategy: status starts empty (or at its initial phase), finalizers set.

    Run after :func:`default_object` (the QoS class reads the defaulted requests).
    """
    if group == "" and kind == "Pod":
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(obj)}
    elif group == "" and kind == "Service":
        obj["status"] = {"loadBalancer": {}}
    elif group == "" and kind == "Namespace":
        obj["status"] = {"phase": "Active"}
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            spec = obj["spec"] = {}
        finalizers = spec.get("finalizers")
        if not isinstance(finalizers, list):
            finalizers = spec["finalizers"] = []
        if "kubernetes" not in finalizers:
            finalizers.append("kubernetes")
    elif (group, kind) in _EMPTY_STATUS:
        obj["status"] = dict.fromkeys(_EMPTY_STATUS[group, kind], 0)
    if group == "batch" and kind == "Job":
        spec = obj.get("spec")
        if isinstance(spec, dict) and spec.get("manualSelector") is not True:
            _generate_job_selector(obj, spec)


#: The labels a Job's generated selector puts on its pods (``batch.kubernetes.io/...`` and the
#: legacy unprefixed pair, both still written in 1.32).
JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
JOB_UID_LABELS = ("batch.kubernetes.io/controller-uid", "controller-uid")


def _generate_job_selector(job: Obj, spec: Obj) -> None:
    """``generateSelector`` of the Job strategy (run in its ``Validate``, once the uid exists):
    the template gets the job-name and controller-uid labels, the selector matches the uid.
    The Job's own labels, when it has none, become the template's: the defaults the real
    server applies again when it reads the stored Job back."""
    meta = job.get("metadata") or {}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    template_meta = template.get("metadata")
    if not isinstance(template_meta, dict):
        template_meta = template["metadata"] = {}
    labels = template_meta.get("labels")
    if not isinstance(labels, dict):
        labels = template_meta["labels"] = {}
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, name)
    for key in JOB_UID_LABELS:
        labels.setdefault(key, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(JOB_UID_LABELS[0], uid)
    if isinstance(meta, dict) and not meta.get("labels"):
        meta["labels"] = dict(labels)


#: Status counters without ``omitempty`` (``required`` in the OpenAPI schema): Go prints them
#: even when zero, so a new object shows them.
_EMPTY_STATUS: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps", "Deployment"): (),
    ("batch", "Job"): (),
    ("batch", "CronJob"): (),
    ("", "ReplicationController"): ("replicas",),
    ("apps", "ReplicaSet"): ("replicas",),
    ("apps", "StatefulSet"): ("replicas",),
    ("apps", "DaemonSet"): (
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
    ),
    ("policy", "PodDisruptionBudget"): (
        "disruptionsAllowed",
        "currentHealthy",
        "desiredHealthy",
        "expectedPods",
    ),
}


def prepare_for_update(
    new: Obj, old: Mapping[str, Any], *, group: str, version: str, kind: str
) -> None:
    """The update strategy's carry-overs from the stored object ``old`` into ``new``."""
    if group != "":
        return
    if kind == "Namespace":
        spec = new.get("spec")
        if not isinstance(spec, dict):
            spec = new["spec"] = {}
        kept = old.get("spec", {}).get("finalizers")
        if kept is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = list(kept)
    elif kind == "Service" and isinstance(new.get("spec"), dict):
        _carry_service_allocations(new["spec"], old.get("spec") or {})


def _carry_service_allocations(spec: Obj, old: Mapping[str, Any]) -> None:
    """NormalizeClusterIPs and patchAllocatedValues of the service registry."""
    old_ips = list(old.get("clusterIPs") or [])
    old_ip = old.get("clusterIP") or ""
    ip = spec.get("clusterIP") or ""
    if old_ips and not spec.get("clusterIPs") and old_ip == ip:
        spec["clusterIPs"] = list(old_ips)
    if old_ip != ip:
        same_ips = list(spec.get("clusterIPs") or []) == old_ips
        if old_ip and not ip and same_ips:
            spec.pop("clusterIPs", None)
        elif same_ips:
            spec["clusterIPs"] = [ip]
    if old.get("type", "ClusterIP") != "ExternalName" and spec.get("type", "ClusterIP") != (
        "ExternalName"
    ):
        if not spec.get("clusterIP") and old_ip:
            spec["clusterIP"] = old_ip
        if not spec.get("clusterIPs") and old_ips:
            spec["clusterIPs"] = list(old_ips)
        for key in ("ipFamilyPolicy", "ipFamilies"):
            if not spec.get(key) and old.get(key):
                spec[key] = old[key] if isinstance(old[key], str) else list(old[key])
    if _needs_node_ports(old) and _needs_node_ports(spec):
        old_ports = [p for p in old.get("ports") or [] if isinstance(p, dict)]
        new_ports = list(_dicts(spec, "ports"))
        used = {p.get("nodePort") for p in old_ports} & {p.get("nodePort") for p in new_ports}
        by_name = {p.get("name", ""): p.get("nodePort") for p in old_ports}
        for port in new_ports:
            if not port.get("nodePort"):
                carried = by_name.get(port.get("name", ""))
                if carried and carried not in used:
                    port["nodePort"] = carried


def _needs_node_ports(spec: Mapping[str, Any]) -> bool:
    kind = spec.get("type", "ClusterIP")
    return kind == "NodePort" or (
        kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts", True) is not False
    )


def qos_class(pod: Mapping[str, Any]) -> str:
    """``status.qosClass`` as the API server computes it (``qos.ComputePodQOS``).

    Only cpu and memory count. BestEffort: no positive request or limit anywhere. Guaranteed:
    every container limits both, and the summed requests equal the summed limits. Otherwise
    Burstable.
    """
    spec = pod.get("spec") or {}
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    for container in _dicts(spec, "containers", "initContainers"):
        resources = container.get("resources") or {}
        for part, totals in (("requests", requests), ("limits", limits)):
            found = set()
            for name, raw in (resources.get(part) or {}).items():
                if name not in ("cpu", "memory"):
                    continue
                try:
                    value = parse_quantity(raw).value
                except QuantityError:
                    continue
                if value > 0:
                    totals[name] = totals.get(name, Fraction(0)) + value
                    found.add(name)
            if part == "limits" and found != {"cpu", "memory"}:
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    balanced = all(limits.get(name) == value for name, value in requests.items())
    if guaranteed and balanced and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


# -- allocation ---------------------------------------------------------------------------------

# Multipliers coprime with the pool sizes (2 * 524287 addresses, 2768 ports) spread allocations
# over the range, as the real allocators' random picks do, deterministic and collision-free.
_IP_STRIDE = 40503
_PORT_STRIDE = 1009


def allocate_cluster_ip(index: int) -> str:
    """The ``index``-th cluster IP of ``10.96.0.0/12``; distinct for distinct indexes.

    Index 0 is ``10.96.0.1``, the address kube-apiserver reserves for the ``kubernetes``
    Service in ``default``; later indexes are spread over the range like the allocator's
    random picks (``10.96.158.56``, ``10.97.60.111``...). ``ValueError`` once the range is full.
    """
    usable = _SERVICE_CIDR.num_addresses - 2  # neither the network nor the broadcast address
    if not 0 <= index < usable:
        raise ValueError(f"the service IP range {_SERVICE_CIDR} is full")
    offset = (index * _IP_STRIDE) % usable
    return str(_SERVICE_CIDR.network_address + 1 + offset)


def allocate_node_port(index: int) -> int:
    """The ``index``-th node port of ``30000-32767``; distinct for distinct indexes."""
    low, high = _NODE_PORTS
    size = high - low + 1
    if not 0 <= index < size:
        raise ValueError(f"the node port range {low}-{high} is full")
    return low + (index * _PORT_STRIDE) % size


def _dicts(holder: Mapping[str, Any], *keys: str) -> Iterator[Obj]:
    for key in keys:
        items = holder.get(key)
        if isinstance(items, list):
            yield from (item for item in items if isinstance(item, dict))
