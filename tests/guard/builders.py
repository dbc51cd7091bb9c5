"""Builders of AdmissionReviews as kube-apiserver sends them to the guard."""

from __future__ import annotations

import copy
from typing import Any

from tests.factories import container, deployment, managed_entry

Obj = dict[str, Any]

ARGO_APP = "shop"
ARGO_SA = "system:serviceaccount:argocd:argocd-application-controller"


def argo_deployment(name: str = "web", *, replicas: int = 2, **options: Any) -> Obj:
    """A Deployment Argo CD applied: its tracking annotation and its managedFields entry."""
    body = deployment(
        name,
        namespace="shop",
        replicas=replicas,
        containers=[container(name, requests={"cpu": "100m", "memory": "800Mi"})],
        annotations={"argocd.argoproj.io/tracking-id": f"{ARGO_APP}:apps/Deployment:shop/{name}"},
        managed=[managed_entry(manager="argocd-controller", fields={"f:spec": {}})],
        **options,
    )
    return body


def flux_deployment(name: str = "api") -> Obj:
    return deployment(
        name,
        namespace="shop",
        labels={
            "kustomize.toolkit.fluxcd.io/name": "apps",
            "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
        },
    )


def plain_deployment(name: str = "tool", **options: Any) -> Obj:
    return deployment(name, namespace="shop", **options)


def pinned(body: Obj, node: str) -> Obj:
    """``body`` with its pod template pinned to ``node``."""
    out = copy.deepcopy(body)
    out["spec"]["template"]["spec"]["nodeName"] = node
    return out


def review(
    obj: Obj | None,
    *,
    old: Obj | None = None,
    operation: str = "UPDATE",
    manager: str | None = "kubectl-edit",
    user: str = "kubernetes-admin",
    groups: tuple[str, ...] = ("system:masters", "system:authenticated"),
) -> Obj:
    """The AdmissionReview of a write of ``obj`` (over ``old``) by ``manager``."""
    body = obj or old or {}
    meta = body.get("metadata", {})
    options: Obj = {"kind": "UpdateOptions" if operation == "UPDATE" else "CreateOptions"}
    options["apiVersion"] = "meta.k8s.io/v1"
    if manager is not None:
        options["fieldManager"] = manager
    group, _, version = body.get("apiVersion", "apps/v1").rpartition("/")
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": group, "version": version, "kind": body.get("kind")},
            "resource": {"group": group, "version": version, "resource": "deployments"},
            "name": meta.get("name", ""),
            "namespace": meta.get("namespace"),
            "operation": operation,
            "userInfo": {"username": user, "groups": list(groups)},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
            "options": options,
        },
    }
