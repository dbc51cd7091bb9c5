"""What is not a difference: normalising a desired and a live object before they are compared.

* **Server defaults** are applied to the desired object exactly as kube-apiserver 1.32 applies
  them on write (:mod:`kubemedic.model.defaults`, the emulator's own knowledge): a manifest
  without ``dnsPolicy`` does not differ from a live pod template showing ``ClusterFirst``, and
  ``cpu: 0.5`` does not differ from ``500m``.
* **Server-managed metadata** is dropped from both sides: ``uid``, ``resourceVersion``,
  ``generation``, ``creationTimestamp`` (``null`` in rendered manifests), ``deletionTimestamp``,
  ``deletionGracePeriodSeconds``, ``managedFields``, ``selfLink``, the kubectl
  ``last-applied-configuration`` annotation, and the whole ``status``; so are ``apiVersion`` and
  ``kind`` (the object was looked up by them) and ``metadata.namespace`` (a manifest without a
  namespace is applied to the default namespace; a cluster-scoped object has none).
* **The GitOps tool's bookkeeping** is dropped from both sides: what the tool adds to every
  object it applies and Git never holds, Argo CD's ``argocd.argoproj.io/tracking-id``
  annotation and Flux's ``kustomize.toolkit.fluxcd.io/name`` and ``.../namespace`` labels (a
  revert must not remove them: the tool would lose track of the object).
* **Secrets**: ``stringData`` is folded into ``data`` (base64), as the API server stores it, and
  a ``null`` data value equals ``""``.
* **Endpoints**: addresses and ports are compared in order of their IPs and ports (the API
  server repacks subsets, so their order means nothing).
* **Aggregated ClusterRoles**: ``rules`` are dropped when ``ignore_aggregated_roles`` (the
  aggregation controller fills them in).
"""

from __future__ import annotations

import base64
import copy
from typing import Any

from kubemedic.model.defaults import default_object

__all__ = ["LAST_APPLIED", "group_version", "normalise"]

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_TOOL_ANNOTATIONS = ("argocd.argoproj.io/tracking-id",)
_TOOL_LABELS = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")
_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "namespace",
)


def group_version(api_version: str) -> tuple[str, str]:
    group, slash, version = api_version.rpartition("/")
    return (group, version) if slash else ("", api_version)


def normalise(
    obj: dict[str, Any],
    *,
    gvk: tuple[str, str, str],
    desired: bool,
    ignore_aggregated_roles: bool,
) -> dict[str, Any]:
    """A normalised deep copy of ``obj`` (``desired``: apply the server's defaults first).

    ``gvk`` is the group, version and kind the object is read as: the served version of its
    type when it was written in a retired one (``apps/v1beta1`` is read as ``apps/v1``, whose
    fields and defaults it shares).
    """
    out = copy.deepcopy(obj)
    group, version, kind = gvk
    if desired:
        default_object(out, group=group, version=version, kind=kind)
        if group == "" and kind == "Secret":
            _fold_string_data(out)
    for key in ("apiVersion", "kind", "status"):
        out.pop(key, None)
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in _SERVER_METADATA:
            meta.pop(key, None)
        for field, dropped in (
            ("annotations", (LAST_APPLIED, *_TOOL_ANNOTATIONS)),
            ("labels", _TOOL_LABELS),
        ):
            values = meta.get(field)
            if isinstance(values, dict):
                for key in dropped:
                    values.pop(key, None)
                if not values:
                    meta.pop(field)
    if group == "" and kind == "Secret" and isinstance(out.get("data"), dict):
        out["data"] = {k: "" if v is None else v for k, v in out["data"].items()}
    if group == "" and kind == "Endpoints":
        _sort_subsets(out)
    if kind == "ClusterRole" and ignore_aggregated_roles and out.get("aggregationRule"):
        out.pop("rules", None)
    return out


def _fold_string_data(secret: dict[str, Any]) -> None:
    string_data = secret.pop("stringData", None)
    if not isinstance(string_data, dict):
        return
    data = secret.get("data")
    if not isinstance(data, dict):
        data = secret["data"] = {}
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()


def _sort_subsets(endpoints: dict[str, Any]) -> None:
    for subset in endpoints.get("subsets") or ():
        if not isinstance(subset, dict):
            continue
        for key in ("addresses", "notReadyAddresses"):
            if isinstance(subset.get(key), list):
                subset[key].sort(key=lambda a: str(a.get("ip")) if isinstance(a, dict) else "")
        if isinstance(subset.get("ports"), list):
            subset["ports"].sort(key=_port_order)


def _port_order(port: Any) -> tuple[str, int, str]:
    if not isinstance(port, dict):
        return ("", 0, "")
    number = port.get("port")
    return (
        str(port.get("name") or ""),
        number if isinstance(number, int) else 0,
        str(port.get("protocol") or "TCP"),
    )
