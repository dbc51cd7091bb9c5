"""Which fields a resource can be selected by, and the values its objects have for them.

A field selector (:class:`~kubemedic.sim.machinery.selecting.FieldSelector`) goes through the
resource's *field label conversion* (:func:`check_supported`) before any object is looked at: labels
the kind does not support are a 400, with the kind-specific wording ("field label not supported: x"
for kinds that register a conversion in ``pkg/apis/core/v1/conversion.go`` or
``pkg/apis/events/v1/conversion.go``, the generic ``"x" is not a known field selector: only
"metadata.name", "metadata.namespace"`` for the rest, e.g. every ``apps/v1`` kind, so
``status.replicas`` on ReplicaSets is refused even though the registry computes it). Custom
resources accept ``metadata.name``, ``metadata.namespace`` when namespaced, and the CRD's
``selectableFields``.

Matching uses :func:`selectable_fields`, the registries' ``GetAttrs``: a label that is accepted
but absent from the object's field set compares as the empty string (``status.podIPs`` on
pods).

``events.k8s.io/v1`` events share the core event store: their selector labels (``regarding.kind``,
``reportingController`` ...) are renamed by :func:`check_supported` to the core names, and the
object side is the core event's field set
(``kubemedic.sim.apiserver.registry.converting.event_selectable_fields`` computes it for events;
:func:`selectable_fields` gives the same set for core-shaped events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubemedic.sim.machinery import errors, naming
from kubemedic.sim.machinery.selecting import FieldSelector

__all__ = ["check_supported", "selectable_fields"]

_META = ("metadata.name", "metadata.namespace")
_SUFFIXES = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
#: Kinds with a registered field label conversion (pkg/apis/core/v1/conversion.go and
#: pkg/apis/events/v1/conversion.go): accepted label -> the label the registry matches on.
_CONVERSIONS: Final[dict[tuple[str, str], dict[str, str]]] = {
    ("", "pods"): {
        **{
            label: label
            for label in (
                *_META,
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
            )
        },
        "spec.host": "spec.nodeName",  # old v1 clients
    },
    ("", "nodes"): {"metadata.name": "metadata.name", "spec.unschedulable": "spec.unschedulable"},
    ("", "replicationcontrollers"): {k: k for k in (*_META, "status.replicas")},
    ("", "events"): {k: k for k in (*_EVENT_FIELDS, *_META)},
    ("", "namespaces"): {"status.phase": "status.phase", "metadata.name": "metadata.name"},
    ("", "secrets"): {k: k for k in ("type", *_META)},
    ("", "services"): {k: k for k in (*_META, "spec.clusterIP", "spec.type")},
    ("events.k8s.io", "events"): {
        "reason": "reason",
        **{f"regarding.{k}": f"involvedObject.{k}" for k in _SUFFIXES},
        "reportingController": "reportingComponent",
        "source": "source",
        "type": "type",
        "metadata.namespace": "metadata.namespace",
        "metadata.name": "metadata.name",
    },
}


def check_supported(
    resource_plural: str,
    group: str,
    selector: FieldSelector,
    *,
    namespaced: bool = True,
    custom: bool = False,
    selectable: Sequence[str] = (),
) -> FieldSelector:
    """Run the kind's field label conversion over ``selector``; return it with labels renamed
    to the names :func:`selectable_fields` uses (``spec.host`` -> ``spec.nodeName``,
    ``regarding.kind`` -> ``involvedObject.kind``), or raise the server's 400.

    ``custom`` marks a CustomResourceDefinition's resource: it accepts ``metadata.name``,
    ``metadata.namespace`` when ``namespaced``, and the CRD's ``selectableFields`` paths
    (``selectable``, without the leading dot), else "field label not supported: x".
    """
    conversion = _CONVERSIONS.get((group, resource_plural))

    def convert(label: str, value: str) -> tuple[str, str]:
        if custom:
            if label in selectable or label == "metadata.name":
                return label, value
            if namespaced and label == "metadata.namespace":
                return label, value
            raise errors.bad_request(f"field label not supported: {label}")
        if conversion is not None:
            if label not in conversion:
                raise errors.bad_request(f"field label not supported: {label}")
            return conversion[label], value
        if label in _META:
            return label, value
        raise errors.bad_request(
            f"{naming.go_quote(label)} is not a known field selector: only "
            '"metadata.name", "metadata.namespace"'
        )

    return selector.transform(convert)


def _dig(obj: Mapping[str, Any], path: str) -> Any:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def selectable_fields(
    resource_plural: str,
    group: str,
    obj: Mapping[str, Any],
    *,
    extra_fields: Sequence[str] = (),
) -> dict[str, str]:
    """The field set a registry's ``GetAttrs`` computes for ``obj`` (what field selectors are
    matched against): ``metadata.name`` always, ``metadata.namespace`` for namespaced objects,
    plus the kind's own fields as the registry renders them (booleans ``"true"``/``"false"``,
    counts as decimal strings, the pod IP as the first pod IP). ``extra_fields`` are a CRD's
    ``selectableFields`` paths (``spec.color``), read from the object."""
    meta = obj.get("metadata") or {}
    found = {"metadata.name": str(meta.get("name", ""))}
    if meta.get("namespace"):
        found["metadata.namespace"] = str(meta["namespace"])
    key = (group, resource_plural)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    if key == ("", "pods"):
        pod_ips = status.get("podIPs") or []
        pod_ip = status.get("podIP") or (pod_ips[0].get("ip", "") if pod_ips else "")
        found.update(
            {
                "spec.nodeName": _text(spec.get("nodeName")),
                "spec.restartPolicy": _text(spec.get("restartPolicy")),
                "spec.schedulerName": _text(spec.get("schedulerName")),
                "spec.serviceAccountName": _text(spec.get("serviceAccountName")),
                "spec.hostNetwork": _text(bool(spec.get("hostNetwork"))),
                "status.phase": _text(status.get("phase")),
                "status.podIP": _text(pod_ip),
                "status.nominatedNodeName": _text(status.get("nominatedNodeName")),
            }
        )
    elif key == ("", "nodes"):
        found["spec.unschedulable"] = _text(bool(spec.get("unschedulable")))
    elif key == ("", "namespaces"):
        found["status.phase"] = _text(status.get("phase"))
    elif key in (("", "events"), ("events.k8s.io", "events")):
        involved = obj.get("involvedObject") or {}
        source = obj.get("source") or {}
        reporting = _text(obj.get("reportingComponent"))
        found.update({f"involvedObject.{k}": _text(involved.get(k)) for k in _SUFFIXES})
        found.update(
            {
                "reason": _text(obj.get("reason")),
                "reportingComponent": reporting,
                "source": _text(source.get("component")) or reporting,
                "type": _text(obj.get("type")),
            }
        )
    elif key in (("apps", "replicasets"), ("", "replicationcontrollers")):
        found["status.replicas"] = str(int(status.get("replicas") or 0))
    elif key == ("", "secrets"):
        found["type"] = _text(obj.get("type"))
    elif key == ("", "services"):
        found["spec.clusterIP"] = _text(spec.get("clusterIP"))
        found["spec.type"] = _text(spec.get("type"))
    for path in extra_fields:
        found[path] = _text(_dig(obj, path))
    return found
