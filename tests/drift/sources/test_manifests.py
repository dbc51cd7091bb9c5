"""Manifests in a repository: multi-document YAML, JSON, Lists flattened, files that are not
manifests skipped with a reason, malformed files named with their line, the directory walk."""

from __future__ import annotations

import json

import pytest

from kubemedic.drift import sources
from kubemedic.drift.sources.loading import matches_glob
from kubemedic.errors import InputError
from tests.drift.sources.conftest import GitRepo, configmap, deployment, dump


def load(repo: GitRepo, **kwargs: object) -> sources.DesiredSet:
    options = {k: v for k, v in kwargs.items() if k == "skip_malformed"}
    fields = {k: v for k, v in kwargs.items() if k != "skip_malformed"}
    return sources.load(sources.Source(repository=str(repo.path), **fields), **options)  # type: ignore[arg-type]


def skipped(desired: sources.DesiredSet) -> dict[str, str]:
    return {
        str(item.file) + (f"#{item.document}" if item.document else ""): item.reason
        for item in desired.skipped
    }


def test_multi_document_yaml_json_and_lists_are_flattened_into_objects(repo: GitRepo) -> None:
    repo.write("multi.yaml", "# comment\n---\n" + dump(configmap("a"), configmap("b")) + "---\n")
    repo.write("one.json", json.dumps(deployment("api")))
    repo.write(
        "list.yaml",
        dump({"apiVersion": "v1", "kind": "List", "items": [configmap("c"), deployment("d")]}),
    )
    repo.write(
        "typed.yml",
        dump(
            {
                "apiVersion": "v1",
                "kind": "ConfigMapList",
                "items": [{"metadata": {"name": "e"}, "data": {"k": "v"}}],
            }
        ),
    )
    repo.commit("manifests")

    desired = load(repo)

    found = [
        (item.kind, item.name, item.origin.file, item.origin.document) for item in desired.objects
    ]
    assert found == [
        ("ConfigMap", "c", "list.yaml", 1),
        ("Deployment", "d", "list.yaml", 1),
        ("ConfigMap", "a", "multi.yaml", 1),
        ("ConfigMap", "b", "multi.yaml", 2),
        ("Deployment", "api", "one.json", 1),
        ("ConfigMap", "e", "typed.yml", 1),
    ]
    typed = desired.objects[-1]
    assert typed.api_version == "v1" and typed.body["data"] == {"k": "v"}
    assert desired.skipped == ()


def test_files_that_are_not_manifests_are_skipped_with_a_reason(repo: GitRepo) -> None:
    repo.write("README.md", "# ops\n")
    repo.write("apps/values.yaml", "replicaCount: 3\nimage: {tag: '1.2'}\n")
    repo.write("apps/empty.yaml", "# nothing yet\n")
    repo.write("apps/app.yaml", dump(configmap("kept")))
    repo.write("charts/web/Chart.yaml", "apiVersion: v2\nname: web\nversion: 1.0.0\n")
    repo.write("charts/web/templates/deploy.yaml", "kind: {{ .Values.kind }}\n")
    repo.write(".github/workflows/ci.yaml", "on: push\n")
    repo.write(
        "apps/job.yaml",
        dump({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "migrate-"}}),
    )
    repo.commit("mixed")

    desired = load(repo)

    assert [item.name for item in desired.objects] == ["kept"]
    reasons = skipped(desired)
    assert reasons["README.md"] == "not a .yaml, .yml or .json file"
    assert reasons["apps/values.yaml"].startswith("not a Kubernetes manifest: no document has")
    assert reasons["apps/empty.yaml"].startswith("no YAML document")
    assert reasons["charts/web"] == "a Helm chart (Chart.yaml): charts are not rendered"
    assert reasons[".github"] == "a hidden directory, not read"
    assert "generateName and no name" in reasons["apps/job.yaml#1"]
    assert not any(item.malformed for item in desired.skipped)


def test_malformed_yaml_is_an_input_error_naming_the_file_and_line(repo: GitRepo) -> None:
    repo.write("apps/ok.yaml", dump(configmap("ok")))
    repo.write("apps/bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: [x\n")
    commit = repo.commit("bad")

    with pytest.raises(sources.ManifestError) as caught:
        load(repo)

    message = str(caught.value)
    assert isinstance(caught.value, InputError)
    assert message.startswith(f"{repo.path}@{commit[:12]}:apps/bad.yaml: line ")
    assert "invalid YAML" in message


def test_a_document_that_is_not_an_object_is_named_with_its_number_and_line(
    repo: GitRepo,
) -> None:
    repo.write(
        "apps/two.yaml",
        dump(configmap("a")) + "---\n# second\napiVersion: v1\nmetadata:\n  name: b\n",
    )
    repo.commit("no kind")

    with pytest.raises(
        sources.ManifestError, match=r"apps/two\.yaml: document 2 \(line 8\): no kind"
    ):
        load(repo)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("apiVersion: v1\nkind: ConfigMap\n", "ConfigMap with no metadata"),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "ConfigMap with no metadata.name"),
        ("kind: ConfigMap\nmetadata: {name: x}\n", "ConfigMap with no apiVersion"),
        ("apiVersion: v1\nkind: 3\n", "kind a number"),
        ("apiVersion: v1\nkind: List\nitems: 3\n", "items: expected a list of objects"),
        ("apiVersion: v1\nkind: List\nitems: [3]\n", "items[0]: expected a Kubernetes object"),
    ],
)
def test_objects_that_cannot_be_placed_are_refused(repo: GitRepo, text: str, problem: str) -> None:
    repo.write("x.yaml", text)
    repo.commit("x")
    with pytest.raises(sources.ManifestError, match="x.yaml: .*" + problem.replace("[", r"\[")):
        load(repo)


def test_the_caller_may_skip_malformed_files_and_see_why(repo: GitRepo) -> None:
    repo.write("good.yaml", dump(configmap("good")))
    repo.write("bad.json", '{"apiVersion": "v1",\n "kind": }')
    repo.commit("mixed")

    desired = load(repo, skip_malformed=True)

    assert [item.name for item in desired.objects] == ["good"]
    [bad] = desired.skipped
    assert bad.file == "bad.json" and bad.malformed
    assert "bad.json: line 2" in bad.reason and "invalid JSON" in bad.reason


def test_an_object_declared_twice_is_refused_naming_both_places(repo: GitRepo) -> None:
    repo.write("a.yaml", dump(configmap("same", namespace="ns")))
    repo.write("b/c.yaml", dump(configmap("other"), configmap("same", namespace="ns")))
    repo.commit("twice")

    with pytest.raises(
        sources.ManifestError,
        match=r"ConfigMap ns/same is declared twice: in "
        r".*:a\.yaml#1 and in .*:b/c\.yaml#2",
    ):
        load(repo)
    desired = load(repo, skip_malformed=True)
    assert [item.origin.file for item in desired.objects] == ["a.yaml", "b/c.yaml"]
    assert [item.malformed for item in desired.skipped] == [True]


def test_recurse_include_and_exclude_select_files_as_argo_cd_does(repo: GitRepo) -> None:
    repo.write("app/top.yaml", dump(configmap("top")))
    repo.write("app/sub/deep.yaml", dump(configmap("deep")))
    repo.write("app/sub/secret.enc.yaml", dump(configmap("encrypted")))
    repo.write("app/other/more.json", json.dumps(configmap("more")))
    repo.commit("tree")

    def found(**kwargs: object) -> list[str]:
        return sorted(item.name for item in load(repo, path="app", **kwargs).objects)

    assert found(recurse=False) == ["top"]
    assert found() == ["deep", "encrypted", "more", "top"]
    assert found(include="*.yaml") == ["deep", "encrypted", "top"]
    assert found(include="{top.yaml,other/*}") == ["more", "top"]
    assert found(exclude="*.enc.yaml") == ["deep", "more", "top"]
    assert found(include="sub/*", exclude="*.enc.yaml") == ["deep"]


@pytest.mark.parametrize(
    ("pattern", "path", "matched"),
    [
        ("*.yaml", "a.yaml", True),
        ("*.yaml", "dir/a.yaml", True),  # '*' crosses '/' (Argo CD's glob)
        ("*.yaml", "a.json", False),
        ("{a,b}.yaml", "b.yaml", True),
        ("config/?.yaml", "config/x.yaml", True),
        ("[!x]*.yaml", "x.yaml", False),
        ("[!x]*.yaml", "y.yaml", True),
        ("dir/*", "dir", False),
        ("a+b.yaml", "a+b.yaml", True),
    ],
)
def test_globs_match_whole_paths(pattern: str, path: str, matched: bool) -> None:
    assert matches_glob(pattern, path) is matched


def test_kustomize_configuration_alone_in_a_file_is_skipped_not_applied(repo: GitRepo) -> None:
    repo.write("app.yaml", dump(configmap("app")))
    repo.write(
        "components/comp.yaml",
        dump({"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component"}),
    )
    repo.commit("config")

    desired = load(repo)

    assert [item.name for item in desired.objects] == ["app"]
    assert skipped(desired)["components/comp.yaml"].startswith(
        "Kustomize configuration (Component)"
    )
