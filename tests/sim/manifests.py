"""Manifests for tests that drive the emulator: builder objects stripped to what a user writes."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from tests.factories import container, deployment, node, pod

Obj = dict[str, Any]

_SERVER_SET = ("uid", "creationTimestamp", "resourceVersion", "generation", "managedFields")


def manifest(obj: Obj) -> Obj:
    """What a user would apply: no status, no server-set metadata."""
    out = copy.deepcopy(obj)
    out.pop("status", None)
    for key in _SERVER_SET:
        out.get("metadata", {}).pop(key, None)
    return out


def to_yaml(*objs: Obj) -> str:
    return yaml.safe_dump_all([manifest(o) for o in objs], sort_keys=False)


def web_deployment(name: str = "web", *, namespace: str = "default", replicas: int = 2) -> Obj:
    return manifest(
        deployment(
            name,
            namespace=namespace,
            replicas=replicas,
            containers=[container("web", requests={"memory": "64Mi"}, limits={"memory": "128Mi"})],
        )
    )


def running_pod(
    name: str, *, namespace: str = "default", node_name: str = "node-a", labels: dict[str, str]
) -> Obj:
    """A Running, Ready pod as a kubelet would have reported it (for loading)."""
    body = pod(name, namespace=namespace, node_name=node_name, labels=labels, phase="Running")
    body["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    return body


def ready_node(name: str) -> Obj:
    return node(name)


def pdb(
    name: str, *, namespace: str = "default", min_available: int, labels: dict[str, str]
) -> Obj:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": dict(labels)}},
    }
