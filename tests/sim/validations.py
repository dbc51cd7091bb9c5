"""Validation as the emulator runs it on a write, for the tests of the kinds' rules: the body
stored (defaulted) and checked as a create or an update, causes printed as ``field: message``."""

from __future__ import annotations

import copy
from typing import Any

from kubemedic.sim.apiserver.registry import defaulting, validating
from kubemedic.sim.machinery.errors import Cause

Obj = dict[str, Any]

_GROUPS = {
    "Deployment": "apps",
    "ReplicaSet": "apps",
    "StatefulSet": "apps",
    "DaemonSet": "apps",
    "PodDisruptionBudget": "policy",
    "Lease": "coordination.k8s.io",
}
_CLUSTER_SCOPED = {"Node", "Namespace"}


def stored(obj: Obj) -> Obj:
    """``obj`` as the emulator stores it: defaulted, server metadata kept."""
    out = copy.deepcopy(obj)
    kind = out["kind"]
    defaulting.default_object(out, group=_GROUPS.get(kind, ""), version="v1", kind=kind)
    return out


def check(obj: Obj, old: Obj | None = None) -> list[Cause]:
    kind = obj["kind"]
    return validating.validate(
        obj, old=old, group=_GROUPS.get(kind, ""), version="v1", kind=kind,
        namespaced=kind not in _CLUSTER_SCOPED,
    )  # fmt: skip


def messages(causes: list[Cause]) -> list[str]:
    return [f"{c.field}: {c.message}" if c.field else c.message for c in causes]


def service(name: str = "web", **spec: Any) -> Obj:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
    }
    body["spec"] = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return stored(body)


def as_kind(obj: Obj, kind: str) -> Obj:
    out = copy.deepcopy(obj)
    out["kind"] = kind
    return out
