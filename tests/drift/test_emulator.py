"""Drift of objects written by the real kubectl through the API emulator.

The GitOps tool applies Git (server-side apply, manager ``argocd-controller``), a person runs
``kubectl edit`` and ``kubectl scale``; the engine sees the edit with who and when, stops seeing
``replicas`` once the tool syncs again, and its revert patch, sent by kubectl, makes the object
equal to Git, or fails when the object changed since it was read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubemedic.drift import diff
from tests.drift.builders import deployment
from tests.sim.conftest import Running, kubectl_editor, needs_kubectl, start_emulator

pytestmark = needs_kubectl

NODE_NAME = "spec.template.spec.nodeName"
SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
    "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}]},
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


def _get(cluster: Running, kind: str, name: str) -> dict[str, Any]:
    out = cluster.kubectl("get", kind, name, "-o", "json", "--show-managed-fields").stdout
    body: dict[str, Any] = json.loads(out)
    return body


def test_a_kubectl_edit_is_drift_until_reverted(cluster: Running, tmp_path: Path) -> None:
    manifest = deployment("web")
    git = tmp_path / "git.yaml"
    git.write_text(yaml.safe_dump_all([manifest, SERVICE]))
    sync = ("apply", "-f", str(git), "--server-side", "--field-manager=argocd-controller")
    cluster.kubectl(*sync)
    assert diff(manifest, _get(cluster, "deployment", "web")).drifts == ()
    assert diff(SERVICE, _get(cluster, "service", "web")).drifts == ()

    env = kubectl_editor(tmp_path, "doc['spec']['template']['spec']['nodeName'] = 'core-2'")
    cluster.kubectl("edit", "deployment", "web", env=env)
    cluster.kubectl("scale", "deployment/web", "--replicas=5")
    live = _get(cluster, "deployment", "web")
    drift = diff(manifest, live)
    assert [(d.kind, str(d.path)) for d in drift.drifts] == [
        ("changed", "spec.replicas"),
        ("live-only", NODE_NAME),
    ]
    edit = next(m for m in live["metadata"]["managedFields"] if m["manager"] == "kubectl-edit")
    pin = drift.drifts[1].owner
    assert pin is not None
    assert (pin.manager, pin.operation, pin.time) == ("kubectl-edit", "Update", edit["time"])
    scaled = drift.drifts[0].owner  # kubectl scale sends no field manager: named by User-Agent
    assert scaled is not None
    assert (scaled.manager, scaled.subresource) == ("kubectl", "scale")

    cluster.kubectl(*sync, "--force-conflicts")  # the GitOps tool restores replicas
    drift = diff(manifest, _get(cluster, "deployment", "web"))
    assert [(d.kind, str(d.path)) for d in drift.drifts] == [("live-only", NODE_NAME)]

    patch = ("patch", "deployment", "web", "--type=json", "--field-manager=kubemedic")
    cluster.kubectl(*patch, "-p", json.dumps(drift.patch))
    assert diff(manifest, _get(cluster, "deployment", "web")).drifts == ()
    stale = cluster.kubectl(*patch, "-p", json.dumps(drift.patch), check=False)
    assert stale.returncode != 0  # the resourceVersion test refuses a patch of a newer object
