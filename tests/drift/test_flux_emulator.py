"""``kubemedic drift`` without ``--git`` against a cluster run by Flux, through the API emulator.

The emulator serves Flux's ``GitRepository`` and ``Kustomization`` CRDs; the test plays Flux
with the real kubectl: the objects are created as ``flux create`` would, the controllers write
their status through ``/status`` (the source's artifact revision, the applied revision and the
inventory), and kustomize-controller's server-side apply (manager ``kustomize-controller``)
labels every object with ``kustomize.toolkit.fluxcd.io/name`` and ``.../namespace``. The
repository is a local one named by a ``file://`` URL (a real API server refuses it: the CRD's
pattern allows ``http``, ``https`` and ``ssh`` only; the emulator stores custom resources
schemaless), which kubemedic fetches into its cache as it would a remote.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.drift.builders import deployment
from tests.drift.sources.conftest import GitRepo
from tests.inprocess import kubemedic
from tests.sim.conftest import Running, kubectl_editor, needs_kubectl, start_emulator

pytestmark = needs_kubectl

FLUX_LABELS = {
    "kustomize.toolkit.fluxcd.io/name": "apps",
    "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
}
SETTINGS = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "settings", "namespace": "default"},
    "data": {"mode": "live"},
}


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    monkeypatch.setenv("KUBEMEDIC_GIT_CACHE", str(tmp_path / "cache"))
    yield from start_emulator(tmp_path)


def _apply(cluster: Running, manager: str, *bodies: dict[str, Any]) -> None:
    cluster.kubectl(
        "apply", "--server-side", f"--field-manager={manager}", "--force-conflicts", "-f", "-",
        input=yaml.safe_dump_all(bodies),
    )  # fmt: skip


def _status(cluster: Running, kind: str, name: str, status: dict[str, Any]) -> None:
    """The controller's status write, through ``/status``."""
    manager = "source-controller" if kind.startswith("git") else "kustomize-controller"
    cluster.kubectl(
        "patch", kind, name, "-n", "flux-system", "--subresource=status", "--type=merge",
        f"--field-manager={manager}", "-p", json.dumps({"status": status}),
    )  # fmt: skip


def _reconcile(cluster: Running, repo: GitRepo, revision: str) -> None:
    """What source-controller and kustomize-controller do for ``revision`` of ``apps/``."""
    applied = f"main@sha1:{revision}"
    _status(cluster, "gitrepositories.source.toolkit.fluxcd.io", "ops", {
        "artifact": {"revision": applied, "digest": "sha256:" + "0" * 64, "path": "ops.tar.gz",
                     "url": "http://source-controller/ops.tar.gz",
                     "lastUpdateTime": "2026-01-01T00:00:00Z"},
    })  # fmt: skip
    objects = []
    for name in ("web.yaml", "settings.yaml"):
        body = yaml.safe_load(repo.git("show", f"{revision}:apps/{name}"))
        body["metadata"].setdefault("namespace", "default")
        body["metadata"]["labels"] = {**body["metadata"].get("labels", {}), **FLUX_LABELS}
        objects.append(body)
    _apply(cluster, "kustomize-controller", *objects)
    _status(cluster, "kustomizations.kustomize.toolkit.fluxcd.io", "apps", {
        "lastAppliedRevision": applied,
        "inventory": {"entries": [
            {"id": "default_settings__ConfigMap", "v": "v1"},
            {"id": "default_web_apps_Deployment", "v": "v1"},
        ]},
    })  # fmt: skip


@pytest.fixture
def flux(cluster: Running, tmp_path: Path) -> tuple[Running, GitRepo, str]:
    """Git holds a Deployment and a ConfigMap under apps/; Flux reconciled its first commit."""
    repo = GitRepo(tmp_path / "ops")
    repo.write("apps/web.yaml", yaml.safe_dump(deployment("web")))
    repo.write("apps/settings.yaml", yaml.safe_dump(SETTINGS))
    repo.commit("apps")
    first = repo.git("rev-parse", "HEAD")
    cluster.kubectl("create", "namespace", "flux-system")
    _apply(cluster, "flux", {
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "ops", "namespace": "flux-system"},
        "spec": {"interval": "1m", "url": repo.url, "ref": {"branch": "main"}},
    }, {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": "flux-system"},
        "spec": {"interval": "10m", "path": "./apps", "prune": True,
                 "sourceRef": {"kind": "GitRepository", "name": "ops"}},
    })  # fmt: skip
    _reconcile(cluster, repo, first)
    return cluster, repo, first


def _drift(capsys: pytest.CaptureFixture[str], cluster: Running) -> tuple[int, dict[str, Any]]:
    code, out, err = kubemedic(
        capsys, "drift", "--kubeconfig", str(cluster.kubeconfig), "-o", "json"
    )
    assert code in (0, 1), err
    body: dict[str, Any] = json.loads(out)
    return code, body


def test_the_flux_objects_are_served_with_their_status_subresource(
    flux: tuple[Running, GitRepo, str],
) -> None:
    cluster, repo, first = flux
    table = cluster.kubectl("get", "gitrepo", "-n", "flux-system").stdout
    header, row = table.splitlines()
    assert header.split() == ["NAME", "URL", "AGE", "READY", "STATUS"]
    assert row.split()[:2] == ["ops", repo.url]
    ks = json.loads(cluster.kubectl("get", "ks", "apps", "-n", "flux-system", "-o", "json").stdout)
    assert ks["status"]["lastAppliedRevision"] == f"main@sha1:{first}"
    # A write of the object leaves the status alone: only /status writes it.
    _apply(cluster, "flux", {**ks, "metadata": {"name": "apps", "namespace": "flux-system"},
                             "status": {"lastAppliedRevision": "other"}})  # fmt: skip
    ks = json.loads(cluster.kubectl("get", "ks", "apps", "-n", "flux-system", "-o", "json").stdout)
    assert ks["status"]["lastAppliedRevision"] == f"main@sha1:{first}"
    crd = json.loads(
        cluster.kubectl(
            "get", "crd", "kustomizations.kustomize.toolkit.fluxcd.io", "-o", "json"
        ).stdout
    )
    (version,) = crd["spec"]["versions"]
    assert version["subresources"] == {"status": {}}
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["interval", "prune", "sourceRef"]
    names = cluster.kubectl("api-resources", "--api-group", "kustomize.toolkit.fluxcd.io").stdout
    assert "kustomizations" in names and " ks " in names


def test_drift_finds_its_sources_from_flux_and_reports_a_kubectl_edit(
    capsys: pytest.CaptureFixture[str], flux: tuple[Running, GitRepo, str], tmp_path: Path
) -> None:
    cluster, repo, first = flux
    code, report = _drift(capsys, cluster)
    assert code == 0, report  # Flux's own labels, live only, are not drift
    assert report["compared"] == 2 and report["notes"] == []

    # A commit Flux has not applied yet is not what the live objects are compared with.
    repo.write("apps/settings.yaml", yaml.safe_dump({**SETTINGS, "data": {"mode": "next"}}))
    repo.commit("next")
    assert _drift(capsys, cluster)[0] == 0

    env = kubectl_editor(tmp_path, "doc['spec']['template']['spec']['nodeName'] = 'core-2'")
    cluster.kubectl("edit", "deployment", "web", env=env)
    code, report = _drift(capsys, cluster)
    assert code == 1
    (found,) = report["drift"]
    assert found["object"]["name"] == "web" and found["origin"].endswith("apps/web.yaml#1")
    (field,) = found["drifts"]
    live = json.loads(
        cluster.kubectl("get", "deployment", "web", "-o", "json", "--show-managed-fields").stdout
    )
    (edit,) = [m for m in live["metadata"]["managedFields"] if m["manager"] == "kubectl-edit"]
    assert (field["path"], field["kind"], field["live"], field["manager"], field["time"]) == (
        "spec.template.spec.nodeName", "live-only", "core-2", "kubectl-edit", edit["time"],
    )  # fmt: skip
    assert live["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"] == "apps"
    assert not any("fluxcd" in p["path"] for p in found["patch"])  # the revert keeps them

    # Flux applies the next commit: the ConfigMap follows it, the pin stays drift.
    _reconcile(cluster, repo, repo.git("rev-parse", "HEAD"))
    code, report = _drift(capsys, cluster)
    assert code == 1
    assert [d["object"]["name"] for d in report["drift"]] == ["web"]
    assert first != repo.git("rev-parse", "HEAD")
