"""Where pods run and what they hold there: node pools, resident pods, node selection rules.

**Node pools.** A cause fingerprint names the pool a node belongs to, not the node: nodes come
and go (autoscalers, repairs), the pool and its sizing stay. Every provisioner labels its nodes
differently, so ``node_pool`` reads, most specific first, the labels in ``POOL_LABELS``: GKE
(``cloud.google.com/gke-nodepool``), EKS managed node groups (``eks.amazonaws.com/nodegroup``)
and eksctl (``alpha.eksctl.io/nodegroup-name``), Karpenter (``karpenter.sh/nodepool``), AKS
(``kubernetes.azure.com/agentpool``, and the older bare ``agentpool``), zero-to-jupyterhub's
``hub.jupyter.org/node-purpose`` and the generic ``node.kubernetes.io/pool``; then the
alphabetically first ``node-role.kubernetes.io/<role>`` (kubeadm, k3s, OpenShift), then the
instance type (``node.kubernetes.io/instance-type``, or the deprecated ``beta.`` label), else
``default``.

**Resident pods.** A pod counts against its node's allocatable (as the scheduler and the kubelet
count it) from the moment it is bound (``spec.nodeName``) until it reaches a terminal phase:
``Succeeded`` and ``Failed`` pods, the kubelet's admission rejections included, release their
resources even though they stay listed until PodGC deletes them; ``Pending``-but-bound and
terminating pods still hold theirs.

**Node selection.** ``selector_matches`` and ``affinity_matches`` are the kubelet's
``NodeAffinity`` admission rule (``nodeSelector`` plus required node affinity), and ``tolerates``
is ``Toleration.ToleratesTaint``: what a pod bound with ``spec.nodeName``, bypassing the
scheduler, is still judged by.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.model import objects, resources
from kubemedic.model.objects import Body
from kubemedic.model.quantities import parse_quantity
from kubemedic.model.view import ClusterView

__all__ = [
    "DEFAULT_TOLERATED_TAINTS",
    "POOL_LABELS",
    "TERMINAL_PHASES",
    "affinity_matches",
    "finished",
    "holds_resources",
    "node_pool",
    "pod_usage",
    "pool_of",
    "resident_pods",
    "selector_matches",
    "taint_text",
    "tolerates",
]

POOL_LABELS = (
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "karpenter.sh/nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "hub.jupyter.org/node-purpose",
    "node.kubernetes.io/pool",
)
"""Labels naming a node's pool, most specific first (then ``node-role.kubernetes.io/<role>``,
then ``node.kubernetes.io/instance-type``, else ``default``)."""

_ROLE_PREFIX = "node-role.kubernetes.io/"

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
"""Pod phases after which the pod holds nothing on its node and never runs again."""

DEFAULT_TOLERATED_TAINTS = frozenset(
    {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
)
"""``NoExecute`` taints every pod tolerates for a while: the DefaultTolerationSeconds admission
plugin gives each pod 300 s for them, so they do not reject a pod at admission."""

_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


# -- node pools -------------------------------------------------------------------------------


def node_pool(node: Body) -> str:
    """The pool a node belongs to, from the usual provisioner labels (see ``POOL_LABELS``)."""
    node_labels = objects.labels(node)
    for key in POOL_LABELS:
        value = node_labels.get(key)
        if isinstance(value, str) and value:
            return value
    roles = sorted(
        key.removeprefix(_ROLE_PREFIX)
        for key in node_labels
        if key.startswith(_ROLE_PREFIX) and len(key) > len(_ROLE_PREFIX)
    )
    if roles:
        return roles[0]
    instance_type = node_labels.get("node.kubernetes.io/instance-type") or node_labels.get(
        "beta.kubernetes.io/instance-type"
    )
    if isinstance(instance_type, str) and instance_type:
        return instance_type
    return "default"


def pool_of(view: ClusterView, node_name: str) -> str:
    """The pool of the node named ``node_name`` (``node_pool``), or the node's own name when it
    is gone from the view (an autoscaler may have removed a pressured node since)."""
    node = view.nodes.get(node_name)
    return node_pool(node) if node is not None else node_name


# -- resident pods ----------------------------------------------------------------------------


def finished(pod: Body) -> bool:
    """Whether the pod is in a terminal phase (``TERMINAL_PHASES``)."""
    return objects.get_str(pod, "status", "phase") in TERMINAL_PHASES


def holds_resources(pod: Body) -> bool:
    """Whether ``pod`` counts against its node: bound (``spec.nodeName``) and not terminal.
    Succeeded and Failed pods (the admission-rejected pods of a ``nodeName`` storm included)
    release their resources; Pending-but-bound and terminating pods still hold them."""
    return bool(objects.get_str(pod, "spec", "nodeName")) and not finished(pod)


def resident_pods(view: ClusterView, node_name: str) -> list[Body]:
    """The pods bound to ``node_name`` that hold resources there (``holds_resources``)."""
    return [pod for pod in view.pods_on(node_name) if holds_resources(pod)]


def pod_usage(view: ClusterView, pod: Body) -> resources.ResourceList | None:
    """The pod's usage from its ``metrics.k8s.io`` PodMetrics (the sum of its containers' working
    set and CPU), or None when the snapshot has none for it. An invalid sample raises
    ``QuantityError`` naming the PodMetrics and container."""
    meta = objects.get_map(pod, "metadata")
    namespace, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
    metrics = view.pod_metrics.get((namespace, name))
    if metrics is None:
        return None
    total: resources.ResourceList = {}
    for entry in objects.get_list(metrics, "containers"):
        container = objects.get_str(entry, "name") or "?"
        where = f"PodMetrics {namespace}/{name} containers[name={container}].usage"
        usage = objects.get_map(entry, "usage")
        resources.add_into(
            total, {str(k): parse_quantity(v, where=f"{where}.{k}") for k, v in usage.items()}
        )
    return total


# -- node selection ---------------------------------------------------------------------------


def selector_matches(pod_spec: Mapping[str, Any], node: Body) -> bool:
    """Whether the node carries every label of the pod spec's ``nodeSelector``."""
    node_labels = objects.labels(node)
    return all(
        node_labels.get(key) == value
        for key, value in objects.get_map(pod_spec, "nodeSelector").items()
    )


def affinity_matches(pod_spec: Mapping[str, Any], node: Body) -> bool:
    """The kubelet's ``NodeAffinity`` admission rule: ``nodeSelector`` matches and, when the pod
    has required node affinity, at least one of its ``nodeSelectorTerms`` does."""
    if not selector_matches(pod_spec, node):
        return False
    required = objects.get_map(pod_spec, "affinity", "nodeAffinity", _REQUIRED)
    terms = objects.get_list(required, "nodeSelectorTerms")
    if not terms:
        return True
    node_labels = objects.labels(node)
    node_name = objects.get_str(node, "metadata", "name")
    return any(_term_matches(term, node_labels, node_name) for term in terms)


def _term_matches(term: Any, node_labels: Mapping[str, str], node_name: str | None) -> bool:
    """A node selector term: all requirements hold; an empty term matches no node."""
    expressions = objects.get_list(term, "matchExpressions")
    fields = objects.get_list(term, "matchFields")
    if not expressions and not fields:
        return False
    for expression in expressions:
        key = objects.get_str(expression, "key") or ""
        if not _requirement(expression, node_labels.get(key)):
            return False
    for expression in fields:
        value = node_name if objects.get_str(expression, "key") == "metadata.name" else None
        if not _requirement(expression, value):
            return False
    return True


def _requirement(expression: Any, value: str | None) -> bool:
    operator = objects.get_str(expression, "operator")
    values = [v for v in objects.get_list(expression, "values") if isinstance(v, str)]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            have, want = int(value), int(values[0])
        except ValueError:
            return False
        return have > want if operator == "Gt" else have < want
    return False


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint`` from k8s.io/api/core/v1: an empty effect or key matches
    any; ``Exists`` ignores the value; ``Equal`` (the default operator) compares it."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and (toleration.get("value") or "") == (taint.get("value") or "")


def taint_text(taint: Mapping[str, Any]) -> str:
    """``key=value:Effect`` (``key:Effect`` without a value), as ``kubectl describe`` shows it."""
    value = taint.get("value")
    shown = f"{taint.get('key')}={value}" if value else str(taint.get("key"))
    return f"{shown}:{taint.get('effect')}"
