"""The guard's ``ValidatingWebhookConfiguration`` (``admissionregistration.k8s.io/v1``).

One webhook, ``guard.kubemedic.io``, called at ``/validate``:

- **rules**: ``CREATE`` and ``UPDATE`` of the workload kinds (``apps/v1`` deployments,
  statefulsets, replicasets, daemonsets; ``batch/v1`` jobs and cronjobs; ``v1``
  replicationcontrollers): the capacity rule judges creates too; ``UPDATE`` of the further
  ``kinds`` of the settings (``RESOURCE`` or ``RESOURCE.GROUP``, such as ``configmaps`` or
  ``ingresses.networking.k8s.io``), judged by the GitOps rule only. Subresources are not
  sent: a ``scale`` carries a ``Scale`` object, without the workload's GitOps markers;
- **clientConfig**: a service reference (``SERVICE.NAMESPACE.svc``, port 443, path
  ``/validate``) or a URL, and the ``caBundle`` (the guard's authority, base64);
- **failurePolicy** ``Ignore`` by default: when the guard is down, slow or broken, writes go on
  (kube-apiserver logs the failed call). ``Fail`` refuses every matching write while the guard
  cannot answer: choose it only with the guard highly available;
- **timeoutSeconds** 5 by default (1 to 30): the longest a write waits for the guard before the
  failure policy applies; the guard answers from its caches, well within it;
- **sideEffects** ``None`` (the guard changes nothing, so server-side dry runs reach it too),
  **admissionReviewVersions** ``[v1]``, **matchPolicy** ``Equivalent``;
- **namespaceSelector**: every namespace but ``kube-system`` and the guard's own (by the
  ``kubernetes.io/metadata.name`` label every namespace carries), so the guard never stands in
  the way of its own recovery.

Pure: values in, a manifest out.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

__all__ = ["WEBHOOK_NAME", "WORKLOAD_RESOURCES", "parse_kind", "render_configuration"]

WEBHOOK_NAME = "guard.kubemedic.io"
WORKLOAD_RESOURCES: dict[str, tuple[str, ...]] = {
    "apps": ("deployments", "statefulsets", "replicasets", "daemonsets"),
    "batch": ("jobs", "cronjobs"),
    "": ("replicationcontrollers",),
}
"""The workload collections, by API group (all served as ``v1``)."""


def parse_kind(text: str) -> tuple[str, str]:
    """``RESOURCE.GROUP`` (or ``RESOURCE`` for the core group) as ``(group, resource)``;
    ``ValueError`` naming the text when it is not one."""
    resource, _, group = text.strip().partition(".")
    if not resource or not resource.islower() or not resource.replace("-", "").isalnum():
        raise ValueError(
            f"{text!r}: expected a resource such as configmaps or ingresses.networking.k8s.io"
        )
    return group, resource


def render_configuration(
    *,
    ca_bundle: bytes,
    service: tuple[str, str] | None = None,
    url: str | None = None,
    port: int = 443,
    kinds: Sequence[str] = (),
    guard_namespace: str | None = None,
    failure_policy: str = "Ignore",
    timeout_seconds: int = 5,
    name: str = "kubemedic-guard",
) -> dict[str, Any]:
    """The configuration calling the guard at ``service`` (``(name, namespace)``) or ``url``
    (exactly one), trusting ``ca_bundle`` (PEM). ``ValueError`` on a bad argument."""
    if (service is None) == (url is None):
        raise ValueError("give either a service (name and namespace) or a URL, not both")
    if failure_policy not in ("Ignore", "Fail"):
        raise ValueError(f"failurePolicy {failure_policy!r}: expected Ignore or Fail")
    if not 1 <= timeout_seconds <= 30:
        raise ValueError(f"timeoutSeconds {timeout_seconds}: expected 1 to 30 (kube-apiserver)")
    if url is not None and not url.startswith("https://"):
        raise ValueError(f"{url!r}: kube-apiserver calls webhooks over https only")
    client: dict[str, Any] = {"caBundle": base64.b64encode(ca_bundle).decode("ascii")}
    if service is not None:
        client["service"] = {
            "name": service[0],
            "namespace": service[1],
            "path": "/validate",
            "port": port,
        }
        guard_namespace = guard_namespace or service[1]
    else:
        client["url"] = url
    excluded = sorted({"kube-system", *([guard_namespace] if guard_namespace else [])})
    rules: list[dict[str, Any]] = [
        _rule(("CREATE", "UPDATE"), group, resources)
        for group, resources in WORKLOAD_RESOURCES.items()
    ]
    extra: dict[str, list[str]] = {}
    workloads = {(g, r) for g, rs in WORKLOAD_RESOURCES.items() for r in rs}
    for text in kinds:
        group, resource = parse_kind(text)
        if (group, resource) not in workloads:
            extra.setdefault(group, []).append(resource)
    rules += [
        _rule(("UPDATE",), group, tuple(sorted(set(r))), versions="*") for group, r in extra.items()
    ]
    webhook = {
        "name": WEBHOOK_NAME,
        "clientConfig": client,
        "rules": rules,
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "namespaceSelector": {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": excluded}
            ]
        },
        "objectSelector": {},
        "sideEffects": "None",
        "timeoutSeconds": timeout_seconds,
        "admissionReviewVersions": ["v1"],
    }
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "kubemedic-guard"}},
        "webhooks": [webhook],
    }


def _rule(
    operations: tuple[str, ...], group: str, resources: tuple[str, ...], *, versions: str = "v1"
) -> dict[str, Any]:
    return {
        "operations": list(operations),
        "apiGroups": [group],
        "apiVersions": [versions],
        "resources": list(resources),
        "scope": "Namespaced",
    }
