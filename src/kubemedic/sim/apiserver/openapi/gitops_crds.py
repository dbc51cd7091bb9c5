"""Argo CD's ``Application`` custom resource, as the CRD an Argo CD installation holds.

``applications.argoproj.io`` (Argo CD's ``manifests/crds/application-crd.yaml``): group
``argoproj.io``, version ``v1alpha1``, namespaced, plural ``applications``, short names ``app``
and ``apps``, labelled ``app.kubernetes.io/name`` and ``app.kubernetes.io/part-of: argocd``.
Its printer columns are Argo CD's: ``Sync Status`` (``.status.sync.status``) and ``Health
Status`` (``.status.health.status``), then ``Revision`` and ``Project`` shown with ``-o wide``
only (priority 10); none has a description, so the Table describes each by its JSONPath. The CRD
declares **no subresources** (``subresources: {}``): the application controller writes
``status`` with the object itself, and a write of the object keeps the ``status`` it sends.

The schema names the fields kubemedic and the simulator read with their real types
(``spec.source`` and ``spec.sources`` with ``repoURL``, ``path``, ``targetRevision``,
``directory``; ``spec.destination``; ``spec.project``; ``status.sync``, ``status.health``,
``status.resources``, ``status.operationState``) and requires what Argo CD's requires
(``metadata`` and ``spec``; ``spec.destination``, ``spec.project``; ``repoURL`` of a source;
``status.sync.status``). Argo CD's own CRD spells out every field (400 KB of schema) and keeps
unknown fields only under ``helm.valuesObject`` and a few plugin fields; here ``spec``,
``status`` and ``operation`` keep unknown fields (``x-kubernetes-preserve-unknown-fields``) so
that any real Application (Helm, Kustomize, plugin and sync options of any Argo CD release)
is stored as sent rather than pruned.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from kubemedic.sim.apiserver.openapi import crds, flux_crds
from kubemedic.sim.apiserver.openapi.crd_schemas import Schema

__all__ = ["ARGOCD_GROUP", "ARGOCD_VERSION", "application_crd", "gitops_crds"]

ARGOCD_GROUP: Final = "argoproj.io"
ARGOCD_VERSION: Final = "v1alpha1"

_STRING: Final = {"type": "string"}
_KEEP: Final = {"x-kubernetes-preserve-unknown-fields": True}


def _object(
    properties: dict[str, Any], *, required: tuple[str, ...] = (), keep: bool = False
) -> Schema:
    schema: Schema = {"properties": properties, "type": "object"}
    if required:
        schema["required"] = list(required)
    if keep:
        schema.update(_KEEP)
    return schema


def _array(items: Schema) -> Schema:
    return {"items": items, "type": "array"}


def _source() -> Schema:
    """``ApplicationSource``: a repository, a path in it and a revision (or a chart)."""
    return _object(
        {
            "chart": _STRING,
            "directory": _object(
                {
                    "exclude": _STRING,
                    "include": _STRING,
                    "recurse": {"type": "boolean"},
                    "jsonnet": _object({}, keep=True),
                }
            ),
            "helm": _object({}, keep=True),
            "kustomize": _object({}, keep=True),
            "name": _STRING,
            "path": _STRING,
            "plugin": _object({}, keep=True),
            "ref": _STRING,
            "repoURL": _STRING,
            "targetRevision": _STRING,
        },
        required=("repoURL",),
        keep=True,
    )


def _resource_status() -> Schema:
    """``ResourceStatus``: one object the application manages, as ``status.resources`` lists
    it."""
    return _object(
        {
            "group": _STRING,
            "health": _object({"message": _STRING, "status": _STRING}, keep=True),
            "hook": {"type": "boolean"},
            "kind": _STRING,
            "name": _STRING,
            "namespace": _STRING,
            "requiresPruning": {"type": "boolean"},
            "status": _STRING,
            "syncWave": {"format": "int64", "type": "integer"},
            "version": _STRING,
        },
        keep=True,
    )


def _schema() -> Schema:
    destination = _object({"name": _STRING, "namespace": _STRING, "server": _STRING})
    compared = _object(
        {"destination": destination, "source": _source(), "sources": _array(_source())},
        required=("destination",),
        keep=True,
    )
    spec = _object(
        {
            "destination": destination,
            "ignoreDifferences": _array(_object({}, keep=True)),
            "info": _array(_object({"name": _STRING, "value": _STRING})),
            "project": _STRING,
            "revisionHistoryLimit": {"format": "int64", "type": "integer"},
            "source": _source(),
            "sources": _array(_source()),
            "syncPolicy": _object({}, keep=True),
        },
        required=("destination", "project"),
        keep=True,
    )
    status = _object(
        {
            "conditions": _array(_object({}, keep=True)),
            "health": _object({"lastTransitionTime": _STRING, "status": _STRING}, keep=True),
            "history": _array(_object({}, keep=True)),
            "operationState": _object({}, keep=True),
            "reconciledAt": {"format": "date-time", "type": "string"},
            "resources": _array(_resource_status()),
            "sourceType": _STRING,
            "summary": _object({}, keep=True),
            "sync": _object(
                {
                    "comparedTo": compared,
                    "revision": _STRING,
                    "revisions": _array(_STRING),
                    "status": _STRING,
                },
                required=("status",),
                keep=True,
            ),
        },
        keep=True,
    )
    return {
        "description": "Application is a definition of Application resource.",
        "properties": {
            "apiVersion": _STRING,
            "kind": _STRING,
            "metadata": {"type": "object"},
            "operation": _object({}, keep=True),
            "spec": spec,
            "status": status,
        },
        "required": ["metadata", "spec"],
        "type": "object",
    }


_COLUMNS: Final = (
    {"jsonPath": ".status.sync.status", "name": "Sync Status", "type": "string"},
    {"jsonPath": ".status.health.status", "name": "Health Status", "type": "string"},
    {"jsonPath": ".status.sync.revision", "name": "Revision", "priority": 10, "type": "string"},
    {"jsonPath": ".spec.project", "name": "Project", "priority": 10, "type": "string"},
)


def application_crd(*, established_at: str | None = None) -> dict[str, Any]:
    """The ``applications.argoproj.io`` CRD once established (a new object on every call);
    ``established_at`` stamps its conditions as in :func:`crds.capi_crds`."""
    names = {
        "kind": "Application",
        "listKind": "ApplicationList",
        "plural": "applications",
        "shortNames": ["app", "apps"],
        "singular": "application",
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "labels": {
                "app.kubernetes.io/name": f"applications.{ARGOCD_GROUP}",
                "app.kubernetes.io/part-of": "argocd",
            },
            "name": f"applications.{ARGOCD_GROUP}",
        },
        "spec": {
            "conversion": {"strategy": "None"},
            "group": ARGOCD_GROUP,
            "names": names,
            "scope": "Namespaced",
            "versions": [
                {
                    "additionalPrinterColumns": [dict(column) for column in _COLUMNS],
                    "name": ARGOCD_VERSION,
                    "schema": {"openAPIV3Schema": _schema()},
                    "served": True,
                    "storage": True,
                    "subresources": {},
                }
            ],
        },
        "status": {
            "acceptedNames": copy.deepcopy(names),
            "conditions": crds.established_conditions(established_at),
            "storedVersions": [ARGOCD_VERSION],
        },
    }


def gitops_crds(*, established_at: str | None = None) -> list[dict[str, Any]]:
    """The GitOps tools' CRDs the emulator serves: Argo CD's Application, and Flux's
    GitRepository and Kustomization (:mod:`kubemedic.sim.apiserver.openapi.flux_crds`)."""
    return [
        application_crd(established_at=established_at),
        *flux_crds.flux_crds(established_at=established_at),
    ]
