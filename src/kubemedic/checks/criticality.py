"""Which pods are critical, and why.

A pod is **critical** (its loss takes a service down for everyone, as the hub's did in incident 3)
when, in this order of precedence (the first match is the reason reported):

1. its labels match one of the policy's *role selectors* (Kubernetes label-selector syntax:
   ``k=v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``; all requirements must
   hold). The defaults cover the hub/proxy/ingress/DNS roles of common charts: JupyterHub
   (``app=jupyterhub`` and the ``app.kubernetes.io/*`` labels of z2jh 4+, components ``hub``,
   ``proxy``, ``autohttps``), ingress-nginx (both the current and the old ``nginx-ingress``
   chart), CoreDNS/kube-dns (``k8s-app`` as kubeadm, GKE, EKS, AKS and k3s set it), Traefik,
   Kong, HAProxy ingress, Contour, the OpenShift router, Istio gateways, Envoy Gateway proxies
   and any Gateway API implementation that labels its pods with
   ``gateway.networking.k8s.io/gateway-name``;
2. its PriorityClass name starts with ``system-`` (the API server reserves that prefix for
   ``system-cluster-critical`` and ``system-node-critical``);
3. its priority is at least ``priority_threshold``. The default, 1,000,000,000, is
   ``HighestUserDefinablePriority``: the top value a user-defined PriorityClass may take, so only
   classes an administrator deliberately put at the top (and the system classes above them)
   qualify; lower it to count your own "high" classes.

``Criticality.kubelet_protected`` says whether the kubelet itself shields the pod
(``kubelettypes.IsCriticalPod``: static and mirror pods, priority >= 2,000,000,000): the eviction
manager refuses to evict such pods and the OOM killer scores them like Guaranteed pods. Checks about
eviction risk only worry about critical pods that are *not* protected.

Where pods run and what they hold is ``kubemedic.model.placement``; which workload a pod belongs
to is ``kubemedic.model.owners``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubemedic.model import objects
from kubemedic.model.objects import Body
from kubemedic.model.selectors import (
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    LabelSelector,
    Requirement,
    SelectorError,
)
from kubemedic.model.view import ClusterView

__all__ = [
    "DEFAULT_SELECTORS",
    "HIGHEST_USER_DEFINABLE_PRIORITY",
    "SYSTEM_CRITICAL_PRIORITY",
    "CriticalPodPolicy",
    "Criticality",
    "RoleSelector",
    "criticality_of",
    "kubelet_protected",
    "parse_selector",
]

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
"""``scheduling.SystemCriticalPriority``: at or above it the kubelet never evicts the pod."""
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
"""``scheduling.HighestUserDefinablePriority``: the top value of a user-defined PriorityClass."""


@dataclass(frozen=True, slots=True)
class RoleSelector:
    """Pods matching ``selector`` (label-selector syntax) are critical in ``role``."""

    role: str
    selector: str


DEFAULT_SELECTORS: tuple[RoleSelector, ...] = (
    RoleSelector("jupyterhub", "app=jupyterhub,component in (hub,proxy,autohttps)"),
    RoleSelector(
        "jupyterhub",
        "app.kubernetes.io/name=jupyterhub,app.kubernetes.io/component in (hub,proxy,autohttps)",
    ),
    RoleSelector(
        "ingress-nginx",
        "app.kubernetes.io/name=ingress-nginx,app.kubernetes.io/component=controller",
    ),
    RoleSelector("ingress-nginx", "app=nginx-ingress,component=controller"),
    RoleSelector("dns", "k8s-app in (kube-dns,coredns)"),
    RoleSelector("dns", "app.kubernetes.io/name=coredns"),
    RoleSelector("traefik", "app.kubernetes.io/name=traefik"),
    RoleSelector("kong", "app.kubernetes.io/name=kong"),
    RoleSelector(
        "haproxy-ingress", "app.kubernetes.io/name in (kubernetes-ingress,haproxy-ingress)"
    ),
    RoleSelector("contour", "app.kubernetes.io/name=contour"),
    RoleSelector(
        "openshift-router", "ingresscontroller.operator.openshift.io/deployment-ingresscontroller"
    ),
    RoleSelector("istio-gateway", "istio in (ingressgateway,egressgateway)"),
    RoleSelector(
        "envoy-gateway",
        "app.kubernetes.io/managed-by=envoy-gateway,app.kubernetes.io/component=proxy",
    ),
    RoleSelector("gateway", "gateway.networking.k8s.io/gateway-name"),
)


@dataclass(frozen=True, slots=True)
class CriticalPodPolicy:
    """What makes a pod critical. ``selectors`` replaces the defaults; ``extra_selectors`` adds
    to them (the usual way to name your own critical workloads)."""

    priority_threshold: int = HIGHEST_USER_DEFINABLE_PRIORITY
    system_class_prefix: str = "system-"
    selectors: tuple[RoleSelector, ...] = DEFAULT_SELECTORS
    extra_selectors: tuple[RoleSelector, ...] = ()


@dataclass(frozen=True, slots=True)
class Criticality:
    """Why a pod is critical. ``basis`` is ``selector``, ``priority-class`` or ``priority``."""

    role: str
    reason: str
    basis: str
    kubelet_protected: bool


# -- label selectors --------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def parse_selector(text: str) -> tuple[Requirement, ...]:
    """A role's label selector, read by the one parser (:mod:`kubemedic.model.selectors`).
    Raises ``ValueError`` naming the selector: one the API server would refuse, or an empty one
    (it would make every pod critical)."""
    if not text.strip():
        raise ValueError(f"invalid label selector {text!r}: empty (it would match every pod)")
    try:
        return LabelSelector.parse(text).requirements
    except SelectorError as error:
        raise ValueError(f"invalid label selector {text!r}: {error.message}") from None


#: Operators a label must be present to satisfy.
_PRESENT = frozenset({IN, EQUALS, DOUBLE_EQUALS, EXISTS, GREATER_THAN, LESS_THAN})


@functools.lru_cache(maxsize=1024)
def _required_keys(selector: str) -> frozenset[str]:
    """Labels a pod must carry to match at all: a cheap first test for the many pods that match
    no role (a scan asks this of every pod, for every role, in several checks)."""
    return frozenset(r.key for r in parse_selector(selector) if r.operator in _PRESENT)


def _matched_labels(selector: str, labels: Mapping[str, Any]) -> str | None:
    if not _required_keys(selector).issubset(labels.keys()):
        return None
    requirements = parse_selector(selector)
    if not all(requirement.matches(labels) for requirement in requirements):
        return None
    shown = [f"{r.key}={labels[r.key]}" for r in requirements if r.key in labels]
    return ", ".join(shown)


# -- the policy -------------------------------------------------------------------------------


def kubelet_protected(view: ClusterView, pod: Body) -> bool:
    """``IsCriticalPod`` as the kubelet decides it: static pods (``kubernetes.io/config.source``
    other than ``api``), mirror pods, and pods at system-critical priority."""
    annotations = objects.get_map(pod, "metadata", "annotations")
    source = annotations.get("kubernetes.io/config.source")
    if "kubernetes.io/config.mirror" in annotations or (source is not None and source != "api"):
        return True
    return view.priority_of(pod) >= SYSTEM_CRITICAL_PRIORITY


def criticality_of(
    view: ClusterView, pod: Body, *, policy: CriticalPodPolicy | None = None
) -> Criticality | None:
    """Why ``pod`` is critical under ``policy`` (see the module docstring), or None."""
    policy = policy or CriticalPodPolicy()
    protected = kubelet_protected(view, pod)
    labels = objects.labels(pod)
    for rule in (*policy.selectors, *policy.extra_selectors):
        shown = _matched_labels(rule.selector, labels)
        if shown is not None:
            return Criticality(rule.role, f"{rule.role} (labels {shown})", "selector", protected)
    priority = view.priority_of(pod)
    class_name = objects.get_str(pod, "spec", "priorityClassName") or ""
    if policy.system_class_prefix and class_name.startswith(policy.system_class_prefix):
        reason = f"priority class {class_name} ({priority})"
        return Criticality("system", reason, "priority-class", protected)
    if priority >= policy.priority_threshold:
        reason = f"priority {priority} >= {policy.priority_threshold}"
        if class_name:
            reason += f" (class {class_name})"
        return Criticality("high-priority", reason, "priority", protected)
    return None
