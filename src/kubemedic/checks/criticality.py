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

from kubemedic.checks import settings
from kubemedic.model import objects
from kubemedic.model.objects import Body
from kubemedic.model.selectors import (
    DOUBLE_EQUALS,
    EQUALS,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    Requirement,
    SelectorError,
    parse_requirements,
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


@functools.lru_cache(maxsize=256)
def parse_selector(text: str) -> tuple[Requirement, ...]:
    """A role's label selector, read by the one parser (:mod:`kubemedic.model.selectors`).
    Raises ``ValueError`` naming the selector: one the API server would refuse, or an empty one
    (it would make every pod critical)."""
    shown = repr(text) if len(text) <= 200 else repr(text[:200]) + "…"
    if not text.strip():
        raise ValueError(f"invalid label selector {shown}: empty (it would match every pod)")
    try:
        return tuple(parse_requirements(text))  # in the order written: the reason shows them so
    except SelectorError as error:
        reason = error.message if len(error.message) <= 200 else error.message[:200] + "…"
        raise ValueError(f"invalid label selector {shown}: {reason}") from None


@dataclass(frozen=True, slots=True)
class RoleSelector:
    """Pods matching ``selector`` (label-selector syntax) are critical in ``role``. A selector
    the API server would refuse, or an empty one, is refused here (``ValueError``), so a bad
    one in the configuration is named when it is read rather than when a scan meets it."""

    role: str
    selector: str

    def __post_init__(self) -> None:
        parse_selector(self.selector)


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

    priority_threshold: int = settings.number(
        HIGHEST_USER_DEFINABLE_PRIORITY, low=-(2**31), high=2**31 - 1
    )
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


@dataclass(frozen=True, slots=True)
class _Rules:
    """A policy's role selectors, indexed so that a pod is tested only against the selectors it
    may match (by a label value, or a label, the selector requires): most pods match none."""

    rules: tuple[RoleSelector, ...]
    always: tuple[int, ...]
    """Rules requiring no label (or that do not parse: tried, and fail, in their turn)."""
    by_value: tuple[tuple[str, dict[str, tuple[int, ...]]], ...]
    """Label -> value -> the rules (indexes, in policy order) requiring that value (``k=v``,
    ``k in (...)``)."""
    by_label: tuple[tuple[str, tuple[int, ...]], ...]
    """Label -> the rules requiring only that it exists (``k``)."""


_INDEXED: dict[int, tuple[CriticalPodPolicy, _Rules]] = {}


def _rules_of(policy: CriticalPodPolicy) -> _Rules:
    """``policy``'s rules indexed, once per policy object (a scan asks for every pod)."""
    known = _INDEXED.get(id(policy))
    if known is not None and known[0] is policy:
        return known[1]
    if len(_INDEXED) >= 64:
        _INDEXED.clear()
    indexed = _index((*policy.selectors, *policy.extra_selectors))
    _INDEXED[id(policy)] = (policy, indexed)  # the policy is kept: its id is not reused
    return indexed


def _index(rules: tuple[RoleSelector, ...]) -> _Rules:
    always: list[int] = []
    by_value: dict[str, dict[str, list[int]]] = {}
    by_label: dict[str, list[int]] = {}
    for index, rule in enumerate(rules):
        requirements = parse_selector(rule.selector)  # valid: a RoleSelector checks its own
        valued = [r for r in requirements if r.operator in (IN, EQUALS, DOUBLE_EQUALS)]
        present = [r for r in requirements if r.operator in (EXISTS, GREATER_THAN, LESS_THAN)]
        if valued:
            values = by_value.setdefault(valued[0].key, {})
            for value in valued[0].values:
                values.setdefault(value, []).append(index)
        elif present:
            by_label.setdefault(present[0].key, []).append(index)
        else:
            always.append(index)
    return _Rules(
        rules,
        tuple(always),
        tuple(
            (key, {value: tuple(found) for value, found in values.items()})
            for key, values in by_value.items()
        ),
        tuple((key, tuple(found)) for key, found in by_label.items()),
    )


def criticality_of(
    view: ClusterView, pod: Body, *, policy: CriticalPodPolicy | None = None
) -> Criticality | None:
    """Why ``pod`` is critical under ``policy`` (see the module docstring), or None."""
    policy = policy or _DEFAULT_POLICY
    labels = objects.labels(pod)
    indexed = _rules_of(policy)
    candidates = list(indexed.always)
    for key, by_value in indexed.by_value:
        value = labels.get(key)
        if type(value) is str and value in by_value:
            candidates.extend(by_value[value])
    for key, found in indexed.by_label:
        if key in labels:
            candidates.extend(found)
    candidates.sort()  # the first matching rule in policy order is the reason
    for index in candidates:
        rule = indexed.rules[index]
        shown = _matched_labels(rule.selector, labels)
        if shown is not None:
            protected = kubelet_protected(view, pod)
            return Criticality(rule.role, f"{rule.role} (labels {shown})", "selector", protected)
    priority = view.priority_of(pod)
    class_name = objects.get_str(pod, "spec", "priorityClassName") or ""
    if policy.system_class_prefix and class_name.startswith(policy.system_class_prefix):
        reason = f"priority class {class_name} ({priority})"
        return Criticality("system", reason, "priority-class", kubelet_protected(view, pod))
    if priority >= policy.priority_threshold:
        reason = f"priority {priority} >= {policy.priority_threshold}"
        if class_name:
            reason += f" (class {class_name})"
        return Criticality("high-priority", reason, "priority", kubelet_protected(view, pod))
    return None


_DEFAULT_POLICY = CriticalPodPolicy()
