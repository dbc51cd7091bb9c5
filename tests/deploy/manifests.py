"""deploy/ as `kubectl kustomize` renders it, and what its RBAC grants each ServiceAccount.

A grant is ``(verb, group, resource[/subresource], namespace)``, ``namespace`` empty for a
ClusterRole bound by a ClusterRoleBinding (every namespace, and cluster-scoped resources); a
call (:class:`kubemedic.sim.apiserver.http.ApiCall`'s ``rule``) is allowed by a grant of its
verb, group and resource cluster-wide or in its namespace, as the RBAC authorizer decides.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.paths import ROOT

DEPLOY = ROOT / "deploy"
NAMESPACE = "kubemedic"
KUBECTL = shutil.which("kubectl") or (
    "/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None
)

Grant = tuple[str, str, str, str]


def render(directory: Path = DEPLOY) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize DIRECTORY` prints (the test skips without kubectl)."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed: the base is rendered with `kubectl kustomize`")
    out = subprocess.run(
        [KUBECTL, "kustomize", str(directory)],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def overlay(tmp: Path, *components: str) -> Path:
    """An overlay of the base with ``components`` (names under deploy/components/), written in
    ``tmp``; Kustomize takes only relative paths to other kustomizations."""
    directory = tmp / "overlay"
    directory.mkdir()
    base = os.path.relpath(DEPLOY, directory)
    (directory / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [base],
                "components": [f"{base}/components/{c}" for c in components],
            }
        )
    )
    return directory


def find(objects: Iterable[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} rendered"
    return found[0]


def grants(objects: list[dict[str, Any]], account: str) -> set[Grant]:
    """What the rendered bindings give the ServiceAccount ``kubemedic/ACCOUNT``."""
    roles = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objects
        if o["kind"] in ("Role", "ClusterRole")
    }
    out: set[Grant] = set()
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subjects = binding.get("subjects") or []
        if not any(
            s["kind"] == "ServiceAccount"
            and s["name"] == account
            and s.get("namespace") == NAMESPACE
            for s in subjects
        ):
            continue
        ref = binding["roleRef"]
        scope = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        role_ns = scope if ref["kind"] == "Role" else ""
        role = roles[(ref["kind"], role_ns, ref["name"])]
        for rule in role.get("rules") or []:
            assert "resourceNames" not in rule, rule
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        out.add((verb, group, resource, scope))
    return out


def allowed(call: Grant, granted: set[Grant]) -> bool:
    verb, group, resource, namespace = call
    return (verb, group, resource, "") in granted or (
        bool(namespace) and (verb, group, resource, namespace) in granted
    )


def used(grant: Grant, calls: set[Grant]) -> set[Grant]:
    """The calls ``grant`` allows."""
    verb, group, resource, scope = grant
    return {c for c in calls if c[:3] == (verb, group, resource) and (not scope or c[3] == scope)}
