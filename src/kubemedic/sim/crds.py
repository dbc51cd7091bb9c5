"""The Cluster API custom resources the emulator serves, as the CRDs a real cluster holds.

A management cluster running Cluster API (core provider, ``v1beta1`` storage, CAPI v1.9) has
CustomResourceDefinitions for ``machines``, ``machinesets`` and ``machinedeployments`` of
``cluster.x-k8s.io``: namespaced, in the ``cluster-api`` category (``kubectl get cluster-api``
lists them all), short names ``ma``, ``ms`` and ``md``. All three have the status subresource,
so a write to the object ignores ``status`` and a write to ``/status`` changes only ``status``.
MachineSets and MachineDeployments also have the scale subresource: ``kubectl scale md/x`` and
the cluster autoscaler read and write ``.spec.replicas`` through an ``autoscaling/v1`` Scale,
whose ``status.selector`` is the ``.status.selector`` string the controller publishes.

``additionalPrinterColumns`` are CAPI's own (``+kubebuilder:printcolumn`` markers of
``api/v1beta1``): what ``kubectl get machines`` prints when it asks the server for a Table.
:func:`printer_columns` applies the server's logical default (one ``Age`` column when a version
declares none) and :func:`table_column_definitions` gives the Table headers the server builds
from them (``pkg/registry/customresource/tableconvertor``): ``Name`` first, then each column,
described by its ``description`` or by its JSONPath. Columns with a ``priority`` above 0
(``Desired``) appear only with ``-o wide``.

The schemas describe the main fields with their real types (``clusterName``, ``bootstrap``,
``infrastructureRef``, ``providerID``, ``nodeRef``, ``phase``, ``replicas``, ``selector``,
``template``...) and keep ``x-kubernetes-preserve-unknown-fields`` on ``spec`` and ``status``,
so fields of other CAPI releases survive a write instead of being pruned. Only ``v1beta1`` is
listed (the real CRDs also carry unserved old versions and a conversion webhook, which nothing
here can call). The objects are what ``kubectl get crd -o json`` shows once the CRD is
established, including ``status``; the server adds uid, resourceVersion and timestamps.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "GROUP",
    "VERSION",
    "capi_crds",
    "printer_columns",
    "table_column_definitions",
]

GROUP: Final = "cluster.x-k8s.io"
VERSION: Final = "v1beta1"

Schema = dict[str, Any]

NAME_DESCRIPTION: Final = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name "
    "automatically. Name is primarily intended for creation idempotence and configuration "
    "definition. Cannot be updated. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
"""``ObjectMeta.name``'s documentation: the description of a Table's ``Name`` column."""

CREATION_TIMESTAMP_DESCRIPTION: Final = (
    "CreationTimestamp is a timestamp representing the server time when this object was "
    "created. It is not guaranteed to be set in happens-before order across separate "
    "operations. Clients may not set this value. It is represented in RFC3339 form and is in "
    "UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)
"""``ObjectMeta.creationTimestamp``'s documentation: the default ``Age`` column's description."""

_CLUSTERCTL_LABELS: Final = {
    "cluster.x-k8s.io/provider": "cluster-api",
    "clusterctl.cluster.x-k8s.io": "",
}
"""What ``clusterctl init`` labels every component of the core provider with."""


# Schemas: the main fields with their real types -------------------------------------------

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


def _machine_schema() -> Schema:
    spec = _machine_spec("MachineSpec defines the desired state of Machine.")
    return _root("Machine", spec=spec, status=_machine_status())


def _machineset_schema() -> Schema:
    spec = _replica_spec(
        "MachineSet", {"deletePolicy": _DELETE_POLICY}, required=("clusterName", "selector")
    )
    status = _replica_status(
        "MachineSet",
        {"failureMessage": "string", "failureReason": "string", "fullyLabeledReplicas": "int32"},
    )
    return _root("MachineSet", spec=spec, status=status)


def _machinedeployment_schema() -> Schema:
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


# Printer columns: CAPI v1.9's +kubebuilder:printcolumn markers of api/v1beta1 ------------------


def _column(name: str, type_: str, *, path: str, description: str, priority: int = 0) -> Schema:
    column: Schema = {"description": description, "jsonPath": path, "name": name}
    if priority:
        column["priority"] = priority
    column["type"] = type_
    return column


def _columns(kind: str, version_path: str, *middle: Schema) -> tuple[Schema, ...]:
    """Cluster, the kind's own columns, Age and Version: the layout all three share."""
    return (
        _column("Cluster", "string", path=".spec.clusterName", description="Cluster"),
        *middle,
        _column(
            "Age",
            "date",
            path=".metadata.creationTimestamp",
            description=f"Time duration since creation of {kind}",
        ),
        _column(
            "Version",
            "string",
            path=version_path,
            description=f"Kubernetes version associated with this {kind}",
        ),
    )


def _replica_columns(owner: str) -> tuple[Schema, ...]:
    """Desired (shown with ``-o wide`` only) and Replicas, worded with ``owner`` as CAPI does."""
    return (
        _column(
            "Desired",
            "integer",
            path=".spec.replicas",
            description=f"Total number of machines desired by this {owner}",
            priority=10,
        ),
        _column(
            "Replicas",
            "integer",
            path=".status.replicas",
            description=f"Total number of non-terminated machines targeted by this {owner}",
        ),
    )


_MACHINE_COLUMNS: Final = _columns(
    "Machine",
    ".spec.version",
    _column(
        "NodeName",
        "string",
        path=".status.nodeRef.name",
        description="Node name associated with this machine",
    ),
    _column("ProviderID", "string", path=".spec.providerID", description="Provider ID"),
    _column(
        "Phase",
        "string",
        path=".status.phase",
        description="Machine status such as Terminating/Pending/Running/Failed etc",
    ),
)

_MACHINESET_COLUMNS: Final = _columns(
    "MachineSet",
    ".spec.template.spec.version",
    *_replica_columns("machineset"),
    _column(
        "Ready",
        "integer",
        path=".status.readyReplicas",
        description="Total number of ready machines targeted by this machineset.",
    ),
    _column(
        "Available",
        "integer",
        path=".status.availableReplicas",
        description="Total number of available machines (ready for at least minReadySeconds)",
    ),
)

_MACHINEDEPLOYMENT_COLUMNS: Final = _columns(
    "MachineDeployment",
    ".spec.template.spec.version",
    *_replica_columns("MachineDeployment"),
    _column(
        "Ready",
        "integer",
        path=".status.readyReplicas",
        description="Total number of ready machines targeted by this MachineDeployment",
    ),
    _column(
        "Updated",
        "integer",
        path=".status.updatedReplicas",
        description="Total number of non-terminated machines targeted by this deployment that "
        "have the desired template spec",
    ),
    _column(
        "Unavailable",
        "integer",
        path=".status.unavailableReplicas",
        description="Total number of unavailable machines targeted by this MachineDeployment",
    ),
    _column(
        "Phase",
        "string",
        path=".status.phase",
        description="MachineDeployment status such as ScalingUp/ScalingDown/Running/Failed/Unknown",
    ),
)


# The CRDs ----------------------------------------------------------------------------------

_SCALE: Final = {
    "labelSelectorPath": ".status.selector",
    "specReplicasPath": ".spec.replicas",
    "statusReplicasPath": ".status.replicas",
}


def _condition(type_: str, reason: str, *, message: str, at: str | None) -> dict[str, str]:
    condition = {"type": type_, "status": "True"}
    if at is not None:
        condition["lastTransitionTime"] = at
    return {**condition, "reason": reason, "message": message}


def _crd(
    kind: str,
    *,
    short_name: str,
    schema: Schema,
    columns: tuple[Schema, ...],
    scale: bool,
    established_at: str | None,
) -> dict[str, Any]:
    plural = f"{kind.lower()}s"
    names = {
        "categories": ["cluster-api"],
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "shortNames": [short_name],
        "singular": kind.lower(),
    }
    subresources: Schema = {"status": {}}
    if scale:
        subresources = {"scale": dict(_SCALE), **subresources}
    conditions = [
        _condition("NamesAccepted", "NoConflicts", message="no conflicts found", at=established_at),
        _condition(
            "Established",
            "InitialNamesAccepted",
            message="the initial names have been accepted",
            at=established_at,
        ),
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"labels": dict(_CLUSTERCTL_LABELS), "name": f"{plural}.{GROUP}"},
        "spec": {
            "conversion": {"strategy": "None"},
            "group": GROUP,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {
                    "additionalPrinterColumns": [dict(column) for column in columns],
                    "name": VERSION,
                    "schema": {"openAPIV3Schema": schema},
                    "served": True,
                    "storage": True,
                    "subresources": subresources,
                }
            ],
        },
        "status": {
            "acceptedNames": copy.deepcopy(names),
            "conditions": conditions,
            "storedVersions": [VERSION],
        },
    }


def capi_crds(*, established_at: str | None = None) -> list[dict[str, Any]]:
    """The CRDs of ``machines``, ``machinesets`` and ``machinedeployments`` (new objects on every
    call). ``established_at`` (RFC 3339) stamps the ``NamesAccepted`` and ``Established``
    conditions' ``lastTransitionTime``; without it the conditions carry none."""
    kinds = (
        ("Machine", "ma", _machine_schema(), _MACHINE_COLUMNS, False),
        ("MachineSet", "ms", _machineset_schema(), _MACHINESET_COLUMNS, True),
        ("MachineDeployment", "md", _machinedeployment_schema(), _MACHINEDEPLOYMENT_COLUMNS, True),
    )
    return [
        _crd(
            kind,
            short_name=short_name,
            schema=schema,
            columns=columns,
            scale=scale,
            established_at=established_at,
        )
        for kind, short_name, schema, columns, scale in kinds
    ]


def printer_columns(crd: Mapping[str, Any], version: str) -> list[dict[str, Any]]:
    """The ``additionalPrinterColumns`` the server prints ``version`` of ``crd`` with (copies):
    the declared ones, or a lone ``Age`` column when the version declares none
    (``serveDefaultColumnsIfEmpty``). KeyError when the CRD has no such version."""
    for entry in crd.get("spec", {}).get("versions", ()):
        if entry.get("name") == version:
            declared = entry.get("additionalPrinterColumns") or ()
            if declared:
                return [dict(column) for column in declared]
            return [
                {
                    "description": CREATION_TIMESTAMP_DESCRIPTION,
                    "jsonPath": ".metadata.creationTimestamp",
                    "name": "Age",
                    "type": "date",
                }
            ]
    name = crd.get("metadata", {}).get("name", "")
    raise KeyError(f"version {version} not found in CustomResourceDefinition: {name}")


def table_column_definitions(crd: Mapping[str, Any], version: str) -> list[dict[str, Any]]:
    """The ``columnDefinitions`` of the ``meta.k8s.io/v1`` Table the server returns for custom
    resources of ``version`` of ``crd``: ``Name``, then every printer column (all five fields
    always present, as ``TableColumnDefinition`` has no ``omitempty``). Cells follow the same
    order: the object's name, then each column's JSONPath value (None when missing)."""
    headers = [
        {
            "name": "Name",
            "type": "string",
            "format": "name",
            "description": NAME_DESCRIPTION,
            "priority": 0,
        }
    ]
    for column in printer_columns(crd, version):
        path = str(column.get("jsonPath", ""))
        headers.append(
            {
                "name": str(column.get("name", "")),
                "type": str(column.get("type", "")),
                "format": str(column.get("format", "")),
                "description": str(
                    column.get("description")
                    or f"Custom resource definition column (in JSONPath format): {path}"
                ),
                "priority": int(column.get("priority", 0)),
            }
        )
    return headers
