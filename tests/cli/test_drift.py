"""``kubemedic drift`` end to end: a Git repository made with the git CLI, the API emulator over
HTTP with objects written by the real kubectl (a GitOps sync as ``argocd-controller``, then a
person's ``kubectl edit``), and the command's table, JSON and diff outputs and exit codes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.drift.builders import deployment
from tests.drift.sources.conftest import GitRepo
from tests.inprocess import kubemedic, one_error_line
from tests.sim.conftest import Running, kubectl_editor, needs_kubectl, start_emulator

pytestmark = needs_kubectl


@pytest.fixture
def cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Running]:
    monkeypatch.setenv("COLUMNS", "250")  # the table fits the terminal; this one is wide
    yield from start_emulator(tmp_path)


@pytest.fixture
def synced(cluster: Running, tmp_path: Path) -> tuple[Running, GitRepo]:
    """Git holds a Deployment and a ConfigMap under apps/; the GitOps tool applied them."""
    repo = GitRepo(tmp_path / "ops")
    repo.write("apps/web.yaml", yaml.safe_dump(deployment("web")))
    repo.write(
        "apps/settings.yaml",
        yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
             "data": {"mode": "live"}}
        ),
    )  # fmt: skip
    repo.write("README.md", "# ops\n")
    repo.commit("web")
    cluster.kubectl(
        "apply", "-n", "default", "-f", str(repo.path / "apps"), "--server-side",
        "--field-manager=argocd-controller",
    )  # fmt: skip
    return cluster, repo


def drift_cli(
    capsys: pytest.CaptureFixture[str], cluster: Running, repo: GitRepo, *args: str
) -> tuple[int, str, str]:
    return kubemedic(
        capsys, "drift", "--git", str(repo.path), "--path", "apps",
        "--kubeconfig", str(cluster.kubeconfig), *args,
    )  # fmt: skip


def test_no_drift_right_after_a_sync(
    capsys: pytest.CaptureFixture[str], synced: tuple[Running, GitRepo]
) -> None:
    code, out, err = drift_cli(capsys, *synced)
    assert code == 0, err
    assert "0 of 2 objects drifted" in out


def test_a_kubectl_edit_is_found_with_who_and_when(
    capsys: pytest.CaptureFixture[str], synced: tuple[Running, GitRepo], tmp_path: Path
) -> None:
    cluster, repo = synced
    env = kubectl_editor(tmp_path, "doc['spec']['template']['spec']['nodeName'] = 'core-2'")
    cluster.kubectl("edit", "deployment", "web", env=env)
    code, out, err = drift_cli(capsys, cluster, repo)
    assert code == 1, err
    (row,) = [line for line in out.splitlines() if "nodeName" in line]
    assert "live-only" in row and "core-2" in row and "kubectl-edit" in row
    assert "1 of 2 objects drifted" in out

    code, out, _ = drift_cli(capsys, cluster, repo, "-o", "json")
    assert code == 1
    body = json.loads(out)
    (found,) = body["drift"]
    assert found["object"]["name"] == "web" and found["origin"].endswith("apps/web.yaml#1")
    (field,) = found["drifts"]
    assert (field["path"], field["kind"], field["manager"]) == (
        "spec.template.spec.nodeName",
        "live-only",
        "kubectl-edit",
    )
    assert field["time"]
    assert {"op": "remove", "path": "/spec/template/spec/nodeName"} in found["patch"]
    assert body["compared"] == 2

    code, out, _ = drift_cli(capsys, cluster, repo, "-o", "diff")
    assert code == 1
    assert "+spec.template.spec.nodeName: core-2  # kubectl-edit" in out
    assert "revert: " in out


def test_a_value_changed_live_and_an_object_missing(
    capsys: pytest.CaptureFixture[str], synced: tuple[Running, GitRepo]
) -> None:
    cluster, repo = synced
    cluster.kubectl("patch", "configmap", "settings", "-p", '{"data":{"mode":"debug"}}')
    cluster.kubectl("delete", "deployment", "web")
    code, out, _ = drift_cli(capsys, cluster, repo, "-o", "json")
    assert code == 1
    by_name = {d["object"]["name"]: d for d in json.loads(out)["drift"]}
    assert by_name["web"]["missing"] is True
    (changed,) = by_name["settings"]["drifts"]
    assert (changed["path"], changed["kind"], changed["live"], changed["desired"]) == (
        "data.mode",
        "changed",
        "debug",
        "live",
    )
    assert changed["manager"] == "kubectl-patch"


def test_a_revision_is_compared_as_committed(
    capsys: pytest.CaptureFixture[str], synced: tuple[Running, GitRepo]
) -> None:
    cluster, repo = synced
    first = repo.git("rev-parse", "HEAD")
    repo.write("apps/settings.yaml", yaml.safe_dump(
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
         "data": {"mode": "next"}}
    ))  # fmt: skip
    repo.commit("next")
    code, out, _ = drift_cli(capsys, cluster, repo, "--revision", first)
    assert code == 0, out
    code, out, _ = drift_cli(capsys, cluster, repo)
    assert code == 1 and "data.mode" in out


def test_bad_sources_end_in_one_clear_line(
    capsys: pytest.CaptureFixture[str], synced: tuple[Running, GitRepo], tmp_path: Path
) -> None:
    cluster, repo = synced
    code, _, err = drift_cli(capsys, cluster, repo, "--revision", "no-such-branch")
    assert code == 2 and "no-such-branch" in one_error_line(err)
    bad = tmp_path / "bad.yaml"
    bad.write_text("drift:\n  ignoreDifferences:\n    - jsonPointers: [spec/replicas]\n")
    code, _, err = drift_cli(capsys, cluster, repo, "--config", str(bad))
    assert code == 2 and "jsonPointers[0]" in one_error_line(err)
    code, _, err = kubemedic(capsys, "drift", "--kubeconfig", str(cluster.kubeconfig))
    assert code == 2 and "no --git given" in one_error_line(err)


def test_an_ignore_rule_hides_a_field(
    capsys: pytest.CaptureFixture[str], synced: tuple[Running, GitRepo], tmp_path: Path
) -> None:
    cluster, repo = synced
    cluster.kubectl("patch", "configmap", "settings", "-p", '{"data":{"mode":"debug"}}')
    config = tmp_path / "drift.yaml"
    config.write_text(
        "drift:\n  ignoreDifferences:\n    - kind: ConfigMap\n      jsonPointers: [/data/mode]\n"
    )
    code, out, err = drift_cli(capsys, cluster, repo, "--config", str(config))
    assert code == 0, out + err


def test_many_objects_of_a_kind_are_listed_not_read_one_by_one(
    capsys: pytest.CaptureFixture[str], cluster: Running, tmp_path: Path
) -> None:
    """12 ConfigMaps (from 10 of a kind, the kind is listed): one changed live, one missing, one
    in another namespace: each found as with single reads. (The key is not ``n``: kubectl reads
    YAML 1.1's ``n`` as the boolean false, PyYAML as the string; a real trap in manifests.)"""
    repo = GitRepo(tmp_path / "many")
    cluster.kubectl("create", "namespace", "other")
    for n in range(12):
        namespace = "other" if n == 11 else "default"
        repo.write(f"maps/m{n}.yaml", yaml.safe_dump(
            {"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": f"m{n}", "namespace": namespace}, "data": {"value": str(n)}}
        ))  # fmt: skip
    repo.commit("maps")
    cluster.kubectl(
        "apply", "-f", str(repo.path / "maps"), "--server-side", "--field-manager=argocd-controller"
    )
    cluster.kubectl("patch", "configmap", "m3", "-p", '{"data":{"value":"33"}}')
    cluster.kubectl("delete", "configmap", "m5")
    code, out, _ = kubemedic(
        capsys, "drift", "--git", str(repo.path), "--kubeconfig", str(cluster.kubeconfig),
        "-o", "json",
    )  # fmt: skip
    assert code == 1
    body = json.loads(out)
    assert body["compared"] == 12
    found = {d["object"]["name"]: d for d in body["drift"]}
    assert set(found) == {"m3", "m5"}
    assert found["m5"]["missing"] is True
    assert found["m3"]["drifts"][0]["path"] == "data.value"
