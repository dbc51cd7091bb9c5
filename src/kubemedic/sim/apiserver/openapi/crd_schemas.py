"""The OpenAPI schemas of Cluster API's ``v1beta1`` Machines, MachineSets and MachineDeployments.

The schemas describe the main fields with their real types (``clusterName``, ``bootstrap``,
``infrastructureRef``, ``providerID``, ``nodeRef``, ``phase``, ``replicas``, ``selector``,
``template``...) as the CRDs of CAPI v1.9 declare them, so the decoder and server-side apply
treat them as a real cluster does: object references and label selectors are atomic (applied
and owned as one value), and conditions carry CAPI's ``severity``. ``spec`` and ``status`` keep
``x-kubernetes-preserve-unknown-fields``, so fields of other CAPI releases survive a write
instead of being pruned. :mod:`kubemedic.sim.apiserver.openapi.crds` wraps them into the CRDs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["Schema", "machine", "machinedeployment", "machineset"]

Schema = dict[str, Any]

_SCALARS: Final[Mapping[str, Schema]] = {
    "string": {"type": "string"},
    "int32": {"format": "int32", "type": "integer"},
    "int64": {"format": "int64", "type": "integer"},
    "boolean": {"type": "boolean"},
    "date-time": {"format": "date-time", "type": "string"},
    "int-or-string": {
        "anyOf": [{"type": "integer"}, {"type": "string"}],
        "x-kubernetes-int-or-string": True,
    },
}

Field = str | Schema
"""A scalar's name in ``_SCALARS``, or a schema."""


def _object(
    fields: Mapping[str, Field],
    *,
    description: str | None = None,
    required: tuple[str, ...] = (),
    keep_unknown: bool = False,
    atomic: bool = False,
) -> Schema:
    """An object schema. ``keep_unknown``: fields the schema does not list survive (see the
    module docstring); ``atomic``: server-side apply owns the object as a whole."""
    schema: Schema = {} if description is None else {"description": description}
    schema["properties"] = {
        name: dict(_SCALARS[field]) if isinstance(field, str) else field
        for name, field in sorted(fields.items())
    }
    if required:
        schema["required"] = list(required)
    schema["type"] = "object"
    if atomic:
        schema["x-kubernetes-map-type"] = "atomic"
    if keep_unknown:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema


def _array(items: Field, *, atomic: bool = False) -> Schema:
    schema: Schema = {"items": dict(_SCALARS[items]) if isinstance(items, str) else items}
    schema["type"] = "array"
    if atomic:
        schema["x-kubernetes-list-type"] = "atomic"
    return schema


def _enum(*values: str) -> Schema:
    return {"enum": list(values), "type": "string"}


_STRING_MAP: Final = {"additionalProperties": {"type": "string"}, "type": "object"}
_CLUSTER_NAME: Final = {"maxLength": 63, "minLength": 1, "type": "string"}
_DELETE_POLICY: Final = _enum("Random", "Newest", "Oldest")


def _object_ref() -> Schema:
    keys = ("apiVersion", "fieldPath", "kind", "name", "namespace", "resourceVersion", "uid")
    return _object(dict.fromkeys(keys, "string"), atomic=True)


def _label_selector() -> Schema:
    requirement = _object(
        {"key": "string", "operator": "string", "values": _array("string", atomic=True)},
        required=("key", "operator"),
    )
    return _object(
        {"matchExpressions": _array(requirement, atomic=True), "matchLabels": _STRING_MAP},
        atomic=True,
    )


def _conditions() -> Schema:
    """CAPI's v1beta1 ``Conditions`` (with ``severity``; not ``metav1.Condition``)."""
    fields = ("message", "reason", "severity", "status", "type")
    condition = _object(
        {"lastTransitionTime": "date-time", **dict.fromkeys(fields, "string")},
        required=("lastTransitionTime", "status", "type"),
    )
    return _array(condition)


def _machine_spec(description: str) -> Schema:
    bootstrap = _object({"configRef": _object_ref(), "dataSecretName": "string"})
    durations = ("nodeDeletionTimeout", "nodeDrainTimeout", "nodeVolumeDetachTimeout")
    return _object(
        {
            "bootstrap": bootstrap,
            "clusterName": _CLUSTER_NAME,
            "failureDomain": "string",
            "infrastructureRef": _object_ref(),
            "providerID": "string",
            "version": "string",
            **dict.fromkeys(durations, "string"),
        },
        description=description,
        required=("bootstrap", "clusterName", "infrastructureRef"),
        keep_unknown=True,
    )


def _machine_status() -> Schema:
    address = _object({"address": "string", "type": "string"}, required=("address", "type"))
    return _object(
        {
            "addresses": _array(address),
            "bootstrapReady": "boolean",
            "certificatesExpiryDate": "date-time",
            "conditions": _conditions(),
            "failureMessage": "string",
            "failureReason": "string",
            "infrastructureReady": "boolean",
            "lastUpdated": "date-time",
            "nodeInfo": _object({}, keep_unknown=True),
            "nodeRef": _object_ref(),
            "observedGeneration": "int64",
            "phase": "string",
        },
        description="MachineStatus defines the observed state of Machine.",
        keep_unknown=True,
    )


def _replica_spec(kind: str, extra: Mapping[str, Field], *, required: tuple[str, ...]) -> Schema:
    template = _object(
        {
            "metadata": _object({"annotations": _STRING_MAP, "labels": _STRING_MAP}),
            "spec": _machine_spec("MachineSpec defines the desired state of Machine."),
        }
    )
    return _object(
        {
            "clusterName": _CLUSTER_NAME,
            "minReadySeconds": "int32",
            "replicas": "int32",
            "selector": _label_selector(),
            "template": template,
            **extra,
        },
        description=f"{kind}Spec defines the desired state of {kind}.",
        required=required,
        keep_unknown=True,
    )


def _replica_status(kind: str, extra: Mapping[str, Field]) -> Schema:
    counts = ("availableReplicas", "readyReplicas", "replicas")
    return _object(
        {
            "conditions": _conditions(),
            "observedGeneration": "int64",
            # The label selector as a string: what the scale subresource reports.
            "selector": "string",
            **dict.fromkeys(counts, "int32"),
            **extra,
        },
        description=f"{kind}Status defines the observed state of {kind}.",
        keep_unknown=True,
    )


def _root(kind: str, *, spec: Schema, status: Schema) -> Schema:
    return _object(
        {
            "apiVersion": "string",
            "kind": "string",
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        description=f"{kind} is the Schema for the {kind.lower()}s API.",
    )


def machine() -> Schema:
    """The ``openAPIV3Schema`` of ``machines`` (a new object on every call)."""
    spec = _machine_spec("MachineSpec defines the desired state of Machine.")
    return _root("Machine", spec=spec, status=_machine_status())


def machineset() -> Schema:
    """The ``openAPIV3Schema`` of ``machinesets`` (a new object on every call)."""
    spec = _replica_spec(
        "MachineSet", {"deletePolicy": _DELETE_POLICY}, required=("clusterName", "selector")
    )
    status = _replica_status(
        "MachineSet",
        {"failureMessage": "string", "failureReason": "string", "fullyLabeledReplicas": "int32"},
    )
    return _root("MachineSet", spec=spec, status=status)


def machinedeployment() -> Schema:
    """The ``openAPIV3Schema`` of ``machinedeployments`` (a new object on every call)."""
    rolling = _object(
        {
            "deletePolicy": _DELETE_POLICY,
            "maxSurge": "int-or-string",
            "maxUnavailable": "int-or-string",
        }
    )
    strategy = _object({"rollingUpdate": rolling, "type": _enum("RollingUpdate", "OnDelete")})
    spec = _replica_spec(
        "MachineDeployment",
        {
            "paused": "boolean",
            "progressDeadlineSeconds": "int32",
            "revisionHistoryLimit": "int32",
            "rolloutAfter": "date-time",
            "strategy": strategy,
        },
        required=("clusterName", "selector", "template"),
    )
    status = _replica_status(
        "MachineDeployment",
        {"phase": "string", "unavailableReplicas": "int32", "updatedReplicas": "int32"},
    )
    return _root("MachineDeployment", spec=spec, status=status)
