"""The registry's side of validating admission webhooks: when a write is sent to them.

kube-apiserver calls validating webhooks after the object has been decoded, defaulted, admitted,
validated and had its managedFields recorded, just before it is stored (dry-run writes too, with
``dryRun: true``). :func:`admit` gathers the stored ``ValidatingWebhookConfiguration`` objects
and the request's attributes for :func:`kubemedic.sim.apiserver.webhooks.dispatch`; with no
configuration stored it costs one dictionary lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.sim.apiserver.storage import Store
from kubemedic.sim.apiserver.webhooks import Attributes, dispatch
from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.objects import Key, Obj

__all__ = ["CONFIGURATIONS", "admit", "options"]

#: The store of ``admissionregistration.k8s.io/v1`` ``ValidatingWebhookConfiguration`` objects.
CONFIGURATIONS = "validatingwebhookconfigurations.admissionregistration.k8s.io"


def options(kind: str, *, manager: str = "", dry_run: bool = False, **extra: Any) -> Obj:
    """The ``options`` of an admission request (``CreateOptions``, ``UpdateOptions``,
    ``DeleteOptions``), as the handler decoded them from the query."""
    out: Obj = {"kind": kind, "apiVersion": "meta.k8s.io/v1"}
    if dry_run:
        out["dryRun"] = ["All"]
    if manager:
        out["fieldManager"] = manager
    out.update({k: v for k, v in extra.items() if v is not None})
    return out


def admit(
    store: Store,
    res: Resource,
    operation: str,
    key: Key,
    *,
    obj: Obj | None,
    old: Obj | None,
    dry_run: bool,
    request_options: Obj,
    subresource: str = "",
) -> list[str]:
    """Send a write to the matching validating webhooks; their warnings, or the refusal
    (:class:`~kubemedic.sim.machinery.errors.StatusError`). ``key`` is the request's namespace and
    name (the name is empty on a create by ``generateName``)."""
    if not store.count(CONFIGURATIONS):
        return []
    configurations = [entry.obj for _, entry in store.scan(CONFIGURATIONS)]
    is_namespace = res.group == "" and res.plural == "namespaces"
    attrs = Attributes(
        operation=operation, group=res.group, version=res.version, kind=res.kind,
        resource=res.plural, subresource=subresource, name=key[1],
        namespace=key[1] if is_namespace else key[0], obj=obj, old=old, dry_run=dry_run,
        options=request_options,
    )  # fmt: skip

    def namespace_labels(name: str) -> Mapping[str, str] | None:
        entry = store.get("namespaces", ("", name))
        if entry is None:
            return None
        labels = entry.obj.get("metadata", {}).get("labels")
        return labels if isinstance(labels, dict) else {}

    return dispatch(configurations, attrs, namespace_labels)
