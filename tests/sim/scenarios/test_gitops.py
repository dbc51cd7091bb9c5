"""A scenario's ``gitops`` block: the repository written as the story goes, the Application and
its syncs (server-side apply as argocd-controller with the tracking annotation, the status that
records the commit), a commit made by someone else picked up at the next reconcile, the
Application CRD as the real kubectl sees it, and the scenario checks."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pygit2
import pytest

from kubemedic.sim import scenarios
from kubemedic.sim.scenarios import ScenarioError, ScenarioRun
from kubemedic.sim.scenarios.gitops import GitTarget
from kubemedic.sim.scenarios.gitrepo import GitRepository
from tests.sim.conftest import KUBECTL, needs_kubectl, start_emulator

SCENARIO = """
duration: 20m
pools:
  - {name: workers, count: 1, capacity: {cpu: "4", memory: 8Gi}}
gitops:
  application: web
  path: apps
  destinationNamespace: web
  syncInterval: 3m
  commits:
    - message: web, 1 replica
      files:
        apps/web.yaml:
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: web}
            data: {mode: one}
        README.md: "# ops"
timeline:
  - at: 2m
    action: push
    message: web in two modes
    author: Ann Ops <ann@example.com>
    files:
      apps/web.yaml: {apiVersion: v1, kind: ConfigMap, metadata: {name: web}, data: {mode: two}}
  - at: 4m
    action: sync
"""


def configmap(run: ScenarioRun) -> dict[str, Any]:
    body = run.sim.get("configmaps", "web", "web")
    assert body is not None
    return body


def application(run: ScenarioRun) -> dict[str, Any]:
    body = run.sim.get("applications.argoproj.io", "argocd", "web")
    assert body is not None
    return body


def test_the_applier_syncs_the_branch_head_and_records_it(tmp_path: Path) -> None:
    run = ScenarioRun(scenarios.parse(SCENARIO), git=GitTarget(tmp_path / "ops"))
    repo = pygit2.Repository(str(tmp_path / "ops"))
    first = str(repo.head.target)
    assert configmap(run)["data"] == {"mode": "one"}
    app = application(run)
    assert app["spec"]["source"] == {
        "repoURL": str((tmp_path / "ops").resolve()), "path": "apps", "targetRevision": "main",
    }  # fmt: skip
    assert app["status"]["sync"]["revision"] == first
    assert app["status"]["sync"]["status"] == "Synced"
    assert app["status"]["operationState"]["phase"] == "Succeeded"
    assert app["status"]["resources"] == [
        {"version": "v1", "kind": "ConfigMap", "namespace": "web", "name": "web",
         "status": "Synced"},
    ]  # fmt: skip
    meta = configmap(run)["metadata"]
    assert meta["annotations"]["argocd.argoproj.io/tracking-id"] == "web:/ConfigMap:web/web"
    assert {(m["manager"], m["operation"]) for m in meta["managedFields"]} == {
        ("argocd-controller", "Apply")
    }

    # The push at 2m is a commit (no webhook: not synced yet); the reconcile at 3m syncs it.
    run.run(until=run.origin + timedelta(minutes=2, seconds=30))
    pushed = repo.revparse_single("main")
    assert pushed.message == "web in two modes" and pushed.author.name == "Ann Ops"
    assert pushed.commit_time == int((run.origin + timedelta(minutes=2)).timestamp())
    assert configmap(run)["data"] == {"mode": "one"}
    run.run(until=run.origin + timedelta(minutes=3, seconds=30))
    assert configmap(run)["data"] == {"mode": "two"}
    assert application(run)["status"]["sync"]["revision"] == str(pushed.id)
    assert len(application(run)["status"]["history"]) == 2
    assert run.failures == []


def test_an_edit_of_a_field_git_sets_is_out_of_sync_a_live_only_field_is_not(
    tmp_path: Path,
) -> None:
    run = ScenarioRun(scenarios.parse(SCENARIO), git=GitTarget(tmp_path / "ops"))
    client = run._client("kubectl-edit")
    client.patch("v1", "ConfigMap", "web", {"data": {"extra": "x"}}, namespace="web")
    run.run(until=run.origin + timedelta(minutes=1, seconds=1))
    run.gitops._refresh()  # type: ignore[union-attr]
    assert application(run)["status"]["sync"]["status"] == "Synced"
    client.patch("v1", "ConfigMap", "web", {"data": {"mode": "debug"}}, namespace="web")
    run.gitops._refresh()  # type: ignore[union-attr]
    assert application(run)["status"]["sync"]["status"] == "OutOfSync"


def test_a_commit_made_by_someone_else_is_synced_at_the_next_reconcile(tmp_path: Path) -> None:
    path = tmp_path / "ops"
    repo = GitRepository.create(path, branch="main")
    manifest = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"},
                "data": {"mode": "theirs"}}  # fmt: skip
    when = datetime(2026, 1, 1, tzinfo=UTC)
    theirs = repo.commit({"apps/web.yaml": [manifest]}, message="theirs", author="A <a@b.c>",
                         when=when)  # fmt: skip
    run = ScenarioRun(
        scenarios.parse(SCENARIO.split("timeline:", maxsplit=1)[0]),
        git=GitTarget(path, write=False),
    )
    assert application(run)["status"]["sync"]["revision"] == theirs  # --git: commits not written
    manifest["data"] = {"mode": "later"}
    later = repo.commit({"apps/web.yaml": [manifest]}, message="later", author="A <a@b.c>",
                        when=when)  # fmt: skip
    run.run(until=run.origin + timedelta(minutes=3, seconds=1))
    assert application(run)["status"]["sync"]["revision"] == later
    assert configmap(run)["data"] == {"mode": "later"}


def test_without_a_target_the_repository_is_temporary_and_named_by_repo_url() -> None:
    run = ScenarioRun(scenarios.parse(SCENARIO))
    assert application(run)["spec"]["source"]["repoURL"] == "https://git.example.com/web.git"
    assert run.gitops is not None
    root = run.gitops.repository.root
    assert root.exists()
    run.close()
    assert not root.exists()


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("timeline: [{at: 1m, action: sync}]", "timeline[0].action", "needs a gitops block"),
        (
            "gitops: {application: a, commits: [{message: m, files: {../x.yaml: 'a'}}]}",
            'gitops.commits[0].files["../x.yaml"]',
            "a relative path",
        ),
        (
            "gitops: {application: a, commits: [{message: m, author: nobody, files: {a: b}}]}",
            "gitops.commits[0].author",
            "is not an author",
        ),
        (
            "gitops: {application: a, commits: [{message: m, files: {a.yaml: {apiVersion: v9, "
            "kind: Nope, metadata: {name: x}}}}]}",
            'gitops.commits[0].files["a.yaml"].kind',
            "does not serve",
        ),
    ],
)
def test_bad_gitops_blocks_are_refused_by_field(text: str, where: str, what: str) -> None:
    with pytest.raises(ScenarioError) as caught:
        scenarios.parse(text)
    assert any(w == where and what in m for w, m in caught.value.problems), caught.value.problems


@needs_kubectl
def test_kubectl_lists_applications_with_argo_cds_columns(tmp_path: Path) -> None:
    assert KUBECTL is not None
    for running in start_emulator(tmp_path):
        app = {
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": "web", "namespace": "argocd"},
            "spec": {"project": "default", "destination": {"namespace": "web"},
                     "source": {"repoURL": "https://git.example.com/ops.git", "path": "apps",
                                "helm": {"valuesObject": {"any": {"thing": 1}}}}},
            "status": {"sync": {"status": "Synced", "revision": "abc"},
                       "health": {"status": "Healthy"}},
        }  # fmt: skip
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}}
        running.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(namespace))
        running.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(app))
        table = running.kubectl("get", "apps.argoproj.io", "-n", "argocd", "-o", "wide").stdout
        header, row = table.splitlines()
        assert header.split() == ["NAME", "SYNC", "STATUS", "HEALTH", "STATUS", "REVISION",
                                  "PROJECT"]  # fmt: skip
        assert row.split() == ["web", "Synced", "Healthy", "abc", "default"]
        short = running.kubectl("get", "app", "-n", "argocd", "-o", "json").stdout
        (item,) = json.loads(short)["items"]
        assert item["spec"]["source"]["helm"]["valuesObject"] == {"any": {"thing": 1}}
        names = subprocess.run(
            [KUBECTL, "--kubeconfig", str(running.kubeconfig), "api-resources",
             "--api-group", "argoproj.io"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert "applications" in names and "app,apps" in names
