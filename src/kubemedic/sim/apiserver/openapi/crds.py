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

The schemas are :mod:`kubemedic.sim.apiserver.openapi.crd_schemas`'. Only ``v1beta1`` is listed (the
real CRDs also carry unserved old versions and a conversion webhook, which nothing here can call).
The objects are what ``kubectl get crd -o json`` shows once the CRD is established, including
``status``; the server adds uid, resourceVersion and timestamps.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from kubemedic.sim.apiserver.openapi import crd_schemas

__all__ = [
    "GROUP",
    "VERSION",
    "capi_crds",
    "established_conditions",
    "printer_columns",
    "table_column_definitions",
]

GROUP: Final = "cluster.x-k8s.io"
VERSION: Final = "v1beta1"

Schema = crd_schemas.Schema

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


def established_conditions(at: str | None) -> list[dict[str, str]]:
    """The ``NamesAccepted`` and ``Established`` conditions of an established CRD, with
    ``lastTransitionTime`` ``at`` (none when ``at`` is None)."""
    return [
        _condition("NamesAccepted", "NoConflicts", message="no conflicts found", at=at),
        _condition(
            "Established",
            "InitialNamesAccepted",
            message="the initial names have been accepted",
            at=at,
        ),
    ]


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
    conditions = established_conditions(established_at)
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
        ("Machine", "ma", crd_schemas.machine(), _MACHINE_COLUMNS, False),
        ("MachineSet", "ms", crd_schemas.machineset(), _MACHINESET_COLUMNS, True),
        (
            "MachineDeployment",
            "md",
            crd_schemas.machinedeployment(),
            _MACHINEDEPLOYMENT_COLUMNS,
            True,
        ),
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
