"""Kustomize directories rendered by the real ``kubectl kustomize``, at revisions that are not
checked out, and the errors when kubectl fails or is missing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubemedic.drift import sources
from tests.drift.sources.conftest import (
    KUBECTL,
    GitRepo,
    configmap,
    deployment,
    dump,
    needs_kubectl,
)

BASE = "resources:\n  - deploy.yaml\n  - cm.yaml\n"


def overlay(replicas: int) -> str:
    return (
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
        "namespace: prod\nnamePrefix: prod-\nresources:\n  - ../../base\n"
        f"replicas:\n  - name: web\n    count: {replicas}\n"
    )


def with_overlay(repo: GitRepo) -> str:
    repo.write("base/kustomization.yaml", BASE)
    repo.write("base/deploy.yaml", dump(deployment("web", namespace="default")))
    repo.write("base/cm.yaml", dump(configmap("web-settings", level="info")))
    repo.write("overlays/prod/kustomization.yaml", overlay(5))
    repo.write("README.md", "how to deploy\n")
    return repo.commit("base and prod overlay")


@needs_kubectl
def test_an_overlay_is_rendered_at_a_revision_that_is_not_checked_out(repo: GitRepo) -> None:
    first = with_overlay(repo)
    repo.tag("v1")
    repo.write("overlays/prod/kustomization.yaml", overlay(9))
    repo.commit("scale prod")
    repo.write("base/cm.yaml", "this is not YAML: [\n")  # the work tree: never rendered

    desired = sources.load(
        sources.Source(repository=str(repo.path), path="overlays/prod", revision="v1"),
        kubectl=str(KUBECTL),
    )

    assert desired.commit == first
    by_kind = {item.kind: item for item in desired.objects}
    assert set(by_kind) == {"Deployment", "ConfigMap"}
    web = by_kind["Deployment"]
    assert (web.name, web.namespace, web.body["spec"]["replicas"]) == ("prod-web", "prod", 5)
    assert web.origin.rendered and web.origin.file == "overlays/prod"
    assert str(web.origin).endswith(
        f"@{first[:12]}:kubectl kustomize overlays/prod#{web.origin.document}"
    )
    assert desired.skipped == ()


@needs_kubectl
def test_nested_kustomize_directories_are_rendered_as_units_when_recursing(repo: GitRepo) -> None:
    with_overlay(repo)
    repo.write("plain/cm.yaml", dump(configmap("plain")))
    repo.commit("plain too")

    desired = sources.load(sources.Source(repository=str(repo.path)), kubectl=str(KUBECTL))

    found = sorted((item.origin.file, item.name) for item in desired.objects)
    assert found == [
        ("base", "web"),
        ("base", "web-settings"),
        ("overlays/prod", "prod-web"),
        ("overlays/prod", "prod-web-settings"),
        ("plain/cm.yaml", "plain"),
    ]


@needs_kubectl
def test_a_kustomize_failure_carries_kubectls_first_line(repo: GitRepo) -> None:
    repo.write("app/kustomization.yaml", "resources:\n  - missing.yaml\n")
    repo.commit("broken")

    with pytest.raises(sources.KustomizeError) as caught:
        sources.load(sources.Source(repository=str(repo.path), path="app"), kubectl=str(KUBECTL))

    message = str(caught.value)
    assert message.startswith(f"kubectl kustomize {repo.path}@")
    assert ":app failed: " in message and "missing.yaml" in message
    assert "\n" not in message


def test_without_kubectl_the_error_says_what_to_do(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with_overlay(repo)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))

    with pytest.raises(sources.KubectlMissingError) as caught:
        sources.load(sources.Source(repository=str(repo.path), path="overlays/prod"))

    message = str(caught.value)
    assert message.startswith(f"kubectl is needed to render the Kustomize directory {repo.path}@")
    assert ":overlays/prod (install kubectl or set --kubectl;" in message
    assert isinstance(caught.value, sources.SourceError)


def test_a_kubectl_path_that_does_not_exist_gives_the_same_error(repo: GitRepo) -> None:
    with_overlay(repo)
    with pytest.raises(sources.KubectlMissingError, match="install kubectl or set --kubectl"):
        sources.load(
            sources.Source(repository=str(repo.path), path="overlays/prod"),
            kubectl=os.path.join(str(repo.path), "no-kubectl"),
        )


@needs_kubectl
def test_the_caller_may_skip_a_directory_kubectl_cannot_render(repo: GitRepo) -> None:
    repo.write("broken/kustomization.yaml", "resources:\n  - missing.yaml\n")
    repo.write("plain/cm.yaml", dump(configmap("plain")))
    repo.commit("plain")

    desired = sources.load(
        sources.Source(repository=str(repo.path)), kubectl=str(KUBECTL), skip_malformed=True
    )

    assert [item.name for item in desired.objects] == ["plain"]
    [broken] = desired.skipped
    assert broken.file == "broken" and broken.malformed and "missing.yaml" in broken.reason


def test_a_missing_kubectl_is_not_skipped_even_when_malformed_files_are(
    repo: GitRepo, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with_overlay(repo)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(sources.KubectlMissingError):
        sources.load(sources.Source(repository=str(repo.path)), skip_malformed=True)
