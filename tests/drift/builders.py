"""Builders for drift tests: manifests as Git holds them, live objects as the API server shows
them (defaults filled in, managedFields written from field paths)."""

from __future__ import annotations

import copy
from typing import Any

from kubemedic.model.defaults import default_object
from kubemedic.model.fieldpaths import FieldPath
from kubemedic.model.managedfields import encode_fieldsv1

Obj = dict[str, Any]


def deployment(name: str = "web", *, image: str = "nginx:1.27", replicas: int = 2) -> Obj:
    """A minimal manifest, as written in Git."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": image,
                            "ports": [{"containerPort": 8080}],
                            "resources": {"requests": {"cpu": "0.5", "memory": "1Gi"}},
                        }
                    ]
                },
            },
        },
    }


def entry(
    manager: str, *paths: str, operation: str = "Update", time: str = "2026-01-01T00:00:00Z"
) -> Obj:
    return {
        "apiVersion": "apps/v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": encode_fieldsv1(FieldPath.parse(p) for p in paths),
        "manager": manager,
        "operation": operation,
        "time": time,
    }


def live_of(manifest: Obj, *entries: Obj, resource_version: str = "100") -> Obj:
    """The manifest as stored: defaults applied, server metadata and managedFields added."""
    live = copy.deepcopy(manifest)
    group, _, version = live["apiVersion"].rpartition("/")
    default_object(live, group=group, version=version, kind=live["kind"])
    live["metadata"].update(
        {
            "uid": "0b5c",
            "resourceVersion": resource_version,
            "generation": 3,
            "creationTimestamp": "2026-01-01T00:00:00Z",
            "managedFields": list(entries),
        }
    )
    live["status"] = {"replicas": manifest.get("spec", {}).get("replicas", 1)}
    return live


_APPLIED_PATHS = (
    "metadata.labels.app",
    "spec.replicas",
    "spec.selector",
    "spec.template.metadata.labels.app",
    "spec.template.spec.containers[name=app].image",
    "spec.template.spec.containers[name=app].name",
    "spec.template.spec.containers[name=app].ports[containerPort=8080,protocol=TCP].containerPort",
    "spec.template.spec.containers[name=app].resources.requests.cpu",
    "spec.template.spec.containers[name=app].resources.requests.memory",
)


def applied(*, without: tuple[str, ...] = ()) -> Obj:
    """Argo CD's server-side apply entry for :func:`deployment`, less the fields another
    manager took over since (an ``Update`` takes a field away from its previous owners)."""
    paths = [p for p in _APPLIED_PATHS if p not in without]
    return entry("argocd-controller", *paths, operation="Apply")


APPLIED = applied()


def container(live: Obj, name: str = "app") -> Obj:
    found: Obj = next(
        c for c in live["spec"]["template"]["spec"]["containers"] if c["name"] == name
    )
    return found
