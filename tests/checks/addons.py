"""Pods of the cluster add-ons every cluster runs, as kubeadm and the managed clouds deploy them.

They are critical by Kubernetes' own marks rather than by a label convention of ours: the
``system-cluster-critical`` (2000000000) and ``system-node-critical`` (2000001000) priority
classes, which the kubelet also protects from node-pressure eviction.
"""

from __future__ import annotations

from typing import Any

from tests.factories import pod


def coredns(name: str, **extra: Any) -> dict[str, Any]:
    """A CoreDNS pod: in ``kube-system``, labelled ``k8s-app=kube-dns`` (the label the
    ``kube-dns`` Service selects, kept by CoreDNS for compatibility), priority class
    ``system-cluster-critical``; ``extra`` goes to the pod builder."""
    return pod(
        name,
        namespace="kube-system",
        labels={"k8s-app": "kube-dns"},
        priority_class="system-cluster-critical",
        priority=2_000_000_000,
        **extra,
    )


def kube_proxy(name: str, **extra: Any) -> dict[str, Any]:
    """A kube-proxy pod (one per node, from its DaemonSet): in ``kube-system``, priority class
    ``system-node-critical``; ``extra`` goes to the pod builder."""
    return pod(
        name,
        namespace="kube-system",
        priority_class="system-node-critical",
        priority=2_000_001_000,
        **extra,
    )
