"""Flux's ``GitRepository`` and ``Kustomization`` custom resources, as the CRDs Flux installs.

``gitrepositories.source.toolkit.fluxcd.io`` (source-controller's
``config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml``) and
``kustomizations.kustomize.toolkit.fluxcd.io`` (kustomize-controller's), version ``v1`` (served
and stored), namespaced, short names ``gitrepo`` and ``ks``, in the categories ``all`` and
``fluxcd`` and ``fluxcd-sources`` or ``fluxcd-appliers``. Both have the **status subresource**
(``+kubebuilder:subresource:status``): a write of the object ignores ``status`` and a write of
``/status`` changes only ``status``; the controllers write their status there. ``flux install``
labels each CRD with ``app.kubernetes.io/part-of: flux``, ``app.kubernetes.io/instance:
flux-system`` and its controller as ``app.kubernetes.io/component``.

Printer columns are Flux's ``+kubebuilder:printcolumn`` markers: ``URL`` (GitRepository only),
``Age``, ``Ready`` and ``Status`` (the ``Ready`` condition's status and message); none has a
description.

The schemas are the ``v1`` types' (``api/v1/gitrepository_types.go`` and
``kustomization_types.go``) with their validation markers as controller-gen writes them:
required fields (``interval`` and ``url`` of a GitRepository; ``interval``, ``prune`` and
``sourceRef`` of a Kustomization; ``kind`` and ``name`` of ``sourceRef``), enums, patterns (a
GitRepository's ``url`` must be ``http``, ``https`` or ``ssh``), lengths, and the defaults
(``timeout: 60s``, ``verify.mode: HEAD``, ``force: false``, ``status: {observedGeneration:
-1}``). The fields kubemedic and the simulator read are spelled out (``spec.url``, ``spec.ref``,
``spec.sourceRef``, ``spec.path``, ``spec.targetNamespace``, ``status.artifact``,
``status.lastAppliedRevision``, ``status.inventory``, ``status.conditions``); the nested
options nothing here reads (``decryption``, ``kubeConfig``, ``postBuild``, ``patches``,
``healthChecks``...) keep unknown fields rather than spell out every key. The emulator stores
custom resources schemaless, as it does Argo CD's Application: the schema is what ``kubectl get
crd`` and clients see; it neither prunes, defaults nor validates with it (a ``file://`` URL,
which a real server refuses, is stored as sent).
"""

from __future__ import annotations

import copy
from typing import Any, Final

from kubemedic.sim.apiserver.openapi import crds
from kubemedic.sim.apiserver.openapi.crd_schemas import Schema

__all__ = [
    "FLUX_VERSION",
    "KUSTOMIZE_GROUP",
    "SOURCE_GROUP",
    "flux_crds",
    "gitrepository_crd",
    "kustomization_crd",
]

SOURCE_GROUP: Final = "source.toolkit.fluxcd.io"
KUSTOMIZE_GROUP: Final = "kustomize.toolkit.fluxcd.io"
FLUX_VERSION: Final = "v1"

_STRING: Final = {"type": "string"}
_BOOLEAN: Final = {"type": "boolean"}
_INT64: Final = {"format": "int64", "type": "integer"}
_TIME: Final = {"format": "date-time", "type": "string"}
_STRING_MAP: Final = {"additionalProperties": {"type": "string"}, "type": "object"}
_DURATION: Final = {"pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$", "type": "string"}
_DIGEST: Final = {"pattern": r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$", "type": "string"}


def _object(
    properties: dict[str, Any],
    *,
    required: tuple[str, ...] = (),
    keep: bool = False,
    default: Any = None,
) -> Schema:
    schema: Schema = {"properties": properties, "type": "object"}
    if default is not None:
        schema["default"] = default
    if required:
        schema["required"] = list(required)
    if keep:
        schema["x-kubernetes-preserve-unknown-fields"] = True
    return schema


def _open() -> Schema:
    """A nested option spelled out upstream and read by nothing here: kept as sent."""
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def _array(items: Schema) -> Schema:
    return {"items": items, "type": "array"}


def _enum(*values: str, default: str | None = None) -> Schema:
    schema: Schema = {} if default is None else {"default": default}
    schema.update({"enum": list(values), "type": "string"})
    return schema


def _local_ref() -> Schema:
    """``meta.LocalObjectReference``: a Secret in the object's namespace."""
    return _object({"name": _STRING}, required=("name",))


def _conditions() -> Schema:
    """``[]metav1.Condition``, as controller-gen writes it."""
    condition = _object(
        {
            "lastTransitionTime": _TIME,
            "message": {"maxLength": 32768, "type": "string"},
            "observedGeneration": {"format": "int64", "minimum": 0, "type": "integer"},
            "reason": {
                "maxLength": 1024,
                "minLength": 1,
                "pattern": r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                "type": "string",
            },
            "status": _enum("True", "False", "Unknown"),
            "type": {
                "maxLength": 316,
                "pattern": (
                    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
                ),
                "type": "string",
            },
        },
        required=("lastTransitionTime", "message", "reason", "status", "type"),
    )
    return _array(condition)


def _artifact() -> Schema:
    """``meta.Artifact``: what source-controller packed, and the revision it holds."""
    return _object(
        {
            "digest": _DIGEST,
            "lastUpdateTime": _TIME,
            "metadata": _STRING_MAP,
            "path": _STRING,
            "revision": _STRING,
            "size": _INT64,
            "url": _STRING,
        },
        required=("digest", "lastUpdateTime", "path", "revision", "url"),
    )


def _include() -> Schema:
    return _object(
        {"fromPath": _STRING, "repository": _local_ref(), "toPath": _STRING},
        required=("repository",),
    )


def _gitrepository_schema() -> Schema:
    spec = _object(
        {
            "ignore": _STRING,
            "include": _array(_include()),
            "interval": _DURATION,
            "provider": _enum("generic", "aws", "azure", "github"),
            "proxySecretRef": _local_ref(),
            "recurseSubmodules": _BOOLEAN,
            "ref": _object(
                {
                    "branch": _STRING,
                    "commit": _STRING,
                    "name": _STRING,
                    "semver": _STRING,
                    "tag": _STRING,
                }
            ),
            "secretRef": _local_ref(),
            "serviceAccountName": _STRING,
            "sparseCheckout": _array(_STRING),
            "suspend": _BOOLEAN,
            "timeout": {
                "default": "60s",
                "pattern": r"^([0-9]+(\.[0-9]+)?(ms|s|m))+$",
                "type": "string",
            },
            "url": {"pattern": "^(http|https|ssh)://.*$", "type": "string"},
            "verify": _object(
                {
                    "mode": _enum("head", "HEAD", "Tag", "TagAndHEAD", default="HEAD"),
                    "secretRef": _local_ref(),
                },
                required=("secretRef",),
            ),
        },
        required=("interval", "url"),
    )
    spec["x-kubernetes-validations"] = [
        {
            "message": "serviceAccountName can only be set when provider is 'azure' or 'aws'",
            "rule": "!has(self.serviceAccountName) || (has(self.provider) && "
            "(self.provider == 'azure' || self.provider == 'aws'))",
        }
    ]
    status = _object(
        {
            "artifact": _artifact(),
            "conditions": _conditions(),
            "includedArtifacts": _array(_artifact()),
            "lastHandledReconcileAt": _STRING,
            "observedGeneration": _INT64,
            "observedIgnore": _STRING,
            "observedInclude": _array(_include()),
            "observedRecurseSubmodules": _BOOLEAN,
            "observedSparseCheckout": _array(_STRING),
            "sourceVerificationMode": _STRING,
        },
        default={"observedGeneration": -1},
    )
    return _top("GitRepository is the Schema for the gitrepositories API.", spec, status)


def _kustomization_schema() -> Schema:
    reference = _object({"name": _STRING, "namespace": _STRING}, required=("name",))  # a dependency
    spec = _object(
        {
            "buildMetadata": _array(_STRING),
            "commonMetadata": _object({"annotations": _STRING_MAP, "labels": _STRING_MAP}),
            "components": _array(_STRING),
            "decryption": _open(),
            "deletionPolicy": _enum("MirrorPrune", "Delete", "WaitForTermination", "Orphan"),
            "dependsOn": _array(reference),
            "force": {"default": False, "type": "boolean"},
            "healthCheckExprs": _array(_open()),
            "healthChecks": _array(_open()),
            "ignore": _array(_open()),
            "ignoreMissingComponents": _BOOLEAN,
            "images": _array(_open()),
            "interval": _DURATION,
            "kubeConfig": _open(),
            "namePrefix": {"maxLength": 200, "minLength": 1, "type": "string"},
            "nameSuffix": {"maxLength": 200, "minLength": 1, "type": "string"},
            "patches": _array(_open()),
            "path": _STRING,
            "postBuild": _open(),
            "prune": _BOOLEAN,
            "retryInterval": _DURATION,
            "serviceAccountName": _STRING,
            "sourceRef": _object(
                {
                    "apiVersion": _STRING,
                    "kind": _enum("OCIRepository", "GitRepository", "Bucket", "ExternalArtifact"),
                    "name": _STRING,
                    "namespace": _STRING,
                },
                required=("kind", "name"),
            ),
            "suspend": _BOOLEAN,
            "targetNamespace": {"maxLength": 63, "minLength": 1, "type": "string"},
            "timeout": _DURATION,
            "wait": _BOOLEAN,
        },
        required=("interval", "prune", "sourceRef"),
    )
    entry = _object({"id": _STRING, "v": _STRING}, required=("id", "v"))
    status = _object(
        {
            "conditions": _conditions(),
            "history": _array(_open()),
            "inventory": _object({"entries": _array(entry)}, required=("entries",)),
            "lastAppliedOriginRevision": _STRING,
            "lastAppliedRevision": _STRING,
            "lastAttemptedRevision": _STRING,
            "lastHandledReconcileAt": _STRING,
            "observedGeneration": _INT64,
        },
        default={"observedGeneration": -1},
    )
    return _top("Kustomization is the Schema for the kustomizations API.", spec, status)


def _top(description: str, spec: Schema, status: Schema) -> Schema:
    return {
        "description": description,
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
        "type": "object",
    }


_READY: Final = '.status.conditions[?(@.type=="Ready")]'
_AGE: Final = {"jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"}
_READY_COLUMNS: Final = (
    {"jsonPath": f"{_READY}.status", "name": "Ready", "type": "string"},
    {"jsonPath": f"{_READY}.message", "name": "Status", "type": "string"},
)


def _crd(
    *,
    group: str,
    kind: str,
    plural: str,
    short: str,
    category: str,
    controller: str,
    schema: Schema,
    columns: tuple[dict[str, Any], ...],
    established_at: str | None,
) -> dict[str, Any]:
    names = {
        "categories": ["all", "fluxcd", category],
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "shortNames": [short],
        "singular": kind.lower(),
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "annotations": {"controller-gen.kubebuilder.io/version": "v0.21.0"},
            "labels": {
                "app.kubernetes.io/component": controller,
                "app.kubernetes.io/instance": "flux-system",
                "app.kubernetes.io/part-of": "flux",
            },
            "name": f"{plural}.{group}",
        },
        "spec": {
            "conversion": {"strategy": "None"},
            "group": group,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {
                    "additionalPrinterColumns": [dict(column) for column in columns],
                    "name": FLUX_VERSION,
                    "schema": {"openAPIV3Schema": schema},
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                }
            ],
        },
        "status": {
            "acceptedNames": copy.deepcopy(names),
            "conditions": crds.established_conditions(established_at),
            "storedVersions": [FLUX_VERSION],
        },
    }


def gitrepository_crd(*, established_at: str | None = None) -> dict[str, Any]:
    """The ``gitrepositories.source.toolkit.fluxcd.io`` CRD once established (a new object on
    every call); ``established_at`` stamps its conditions as in :func:`crds.capi_crds`."""
    return _crd(
        group=SOURCE_GROUP,
        kind="GitRepository",
        plural="gitrepositories",
        short="gitrepo",
        category="fluxcd-sources",
        controller="source-controller",
        schema=_gitrepository_schema(),
        columns=(
            {"jsonPath": ".spec.url", "name": "URL", "type": "string"},
            _AGE,
            *_READY_COLUMNS,
        ),
        established_at=established_at,
    )


def kustomization_crd(*, established_at: str | None = None) -> dict[str, Any]:
    """The ``kustomizations.kustomize.toolkit.fluxcd.io`` CRD once established (as
    :func:`gitrepository_crd`)."""
    return _crd(
        group=KUSTOMIZE_GROUP,
        kind="Kustomization",
        plural="kustomizations",
        short="ks",
        category="fluxcd-appliers",
        controller="kustomize-controller",
        schema=_kustomization_schema(),
        columns=(_AGE, *_READY_COLUMNS),
        established_at=established_at,
    )


def flux_crds(*, established_at: str | None = None) -> list[dict[str, Any]]:
    """Flux's CRDs the emulator serves: GitRepository and Kustomization."""
    return [
        gitrepository_crd(established_at=established_at),
        kustomization_crd(established_at=established_at),
    ]
