"""Finding sources in the cluster: Argo CD Applications and Flux Kustomizations (objects shaped as
the projects' documentation shows them) mapped to sources, managed objects and owners."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kubemedic.drift import sources
from kubemedic.drift.sources.discovering import (
    parse_flux_revision,
    parse_inventory_id,
    parse_tracking_id,
)
from tests.drift.sources.conftest import GitRepo, deployment, dump

SHA = "450796ddb2ab6724ee1cc32a4be56da032d1cca0"
OTHER = "67e2c98a60dc92283531412a9e604dd4bae005a9"
Ref = sources.ObjectRef


def application(
    name: str = "guestbook",
    *,
    source: dict[str, Any] | None = None,
    sources_: list[dict[str, Any]] | None = None,
    revision: str | None = SHA,
    revisions: list[str] | None = None,
    resources: list[dict[str, Any]] | None = None,
    namespace: str = "argocd",
) -> dict[str, Any]:
    """An Argo CD Application as in its user guide (guestbook from argocd-example-apps)."""
    spec: dict[str, Any] = {
        "project": "default",
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "guestbook"},
    }
    if sources_ is not None:
        spec["sources"] = sources_
    else:
        spec["source"] = source or {
            "repoURL": "https://github.com/argoproj/argocd-example-apps.git",
            "targetRevision": "HEAD",
            "path": "guestbook",
        }
    sync: dict[str, Any] = {"status": "Synced"}
    if revisions is not None:
        sync["revisions"] = revisions
    elif revision is not None:
        sync["revision"] = revision
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {
            "sync": sync,
            "resources": resources
            if resources is not None
            else [
                {
                    "version": "v1",
                    "kind": "Service",
                    "namespace": "guestbook",
                    "name": "guestbook-ui",
                    "status": "Synced",
                    "health": {"status": "Healthy"},
                },
                {
                    "group": "apps",
                    "version": "v1",
                    "kind": "Deployment",
                    "namespace": "guestbook",
                    "name": "guestbook-ui",
                    "status": "Synced",
                    "health": {"status": "Healthy"},
                },
            ],
        },
    }


def git_repository(
    name: str = "podinfo",
    *,
    ref: dict[str, Any] | None = None,
    artifact: str | None = None,
    url: str = "https://github.com/stefanprodan/podinfo",
    namespace: str = "flux-system",
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"interval": "5m", "url": url, "ref": ref or {"branch": "master"}},
    }
    if artifact:
        body["status"] = {"artifact": {"revision": artifact}}
    return body


def kustomization(
    name: str = "podinfo",
    *,
    spec: dict[str, Any] | None = None,
    applied: str | None = f"master@sha1:{SHA}",
    namespace: str = "flux-system",
) -> dict[str, Any]:
    """A Flux Kustomization as in kustomize-controller's spec (podinfo)."""
    status: dict[str, Any] = {
        "inventory": {
            "entries": [
                {"id": "default_podinfo__Service", "v": "v1"},
                {"id": "default_podinfo_apps_Deployment", "v": "v1"},
                {"id": "default_podinfo_autoscaling_HorizontalPodAutoscaler", "v": "v2"},
            ]
        },
    }
    if applied:
        status["lastAppliedRevision"] = applied
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec
        or {
            "interval": "10m",
            "targetNamespace": "default",
            "sourceRef": {"kind": "GitRepository", "name": "podinfo"},
            "path": "./kustomize",
            "prune": True,
            "timeout": "1m",
        },
        "status": status,
    }


def test_an_argo_cd_application_maps_to_its_synced_revision_and_resources() -> None:
    [managed] = sources.discover([application()])

    assert managed.tool == "argocd"
    assert managed.owner == Ref("argoproj.io", "Application", "argocd", "guestbook")
    assert managed.sources == (
        sources.Source(
            repository="https://github.com/argoproj/argocd-example-apps.git",
            path="guestbook",
            revision=SHA,
            recurse=False,
            namespace="guestbook",
        ),
    )
    assert managed.objects == {
        Ref("", "Service", "guestbook", "guestbook-ui"),
        Ref("apps", "Deployment", "guestbook", "guestbook-ui"),
    }
    assert managed.in_cluster and managed.notes == ()


def test_without_a_synced_revision_the_target_revision_and_directory_options_are_used() -> None:
    source = {
        "repoURL": "https://git.example.com/ops.git",
        "path": "apps/web",
        "targetRevision": "release-1.4",
        "directory": {"recurse": True, "include": "{a.yaml,b/*}", "exclude": "*.md"},
    }
    [managed] = sources.discover([application(source=source, revision=None)])
    assert managed.sources == (
        sources.Source(
            repository="https://git.example.com/ops.git",
            path="apps/web",
            revision="release-1.4",
            recurse=True,
            include="{a.yaml,b/*}",
            exclude="*.md",
            namespace="guestbook",
        ),
    )


def test_multiple_sources_take_their_own_revisions_and_what_is_left_out_is_noted() -> None:
    app = application(
        sources_=[
            {
                "repoURL": "https://charts.example.com",
                "chart": "redis",
                "targetRevision": "17.0.0",
                "helm": {"valueFiles": ["$values/redis/values.yaml"]},
            },
            {
                "repoURL": "https://git.example.com/values.git",
                "targetRevision": "main",
                "ref": "values",
            },
            {
                "repoURL": "https://git.example.com/ops.git",
                "targetRevision": "main",
                "path": "web",
                "kustomize": {"namePrefix": "prod-", "images": ["web=web:2"]},
            },
        ],
        revisions=["17.0.0", OTHER, SHA],
    )
    [managed] = sources.discover([app])

    assert [(s.repository, s.path, s.revision) for s in managed.sources] == [
        ("https://git.example.com/ops.git", "web", SHA),
    ]
    assert managed.notes == (
        "spec.sources[0] is the Helm chart redis of https://charts.example.com: charts are not "
        "read",
        "spec.sources[2]: kustomize options (namePrefix, images) are not applied; the directory "
        "is read as kubectl kustomize renders it",
    )


def test_a_flux_kustomization_maps_through_its_git_repository() -> None:
    [managed] = sources.discover([kustomization(), git_repository()])

    assert managed.tool == "flux"
    assert managed.owner == Ref(
        "kustomize.toolkit.fluxcd.io", "Kustomization", "flux-system", "podinfo"
    )
    assert managed.sources == (
        sources.Source(
            repository="https://github.com/stefanprodan/podinfo",
            path="kustomize",
            revision=SHA,
            recurse=True,
            target_namespace="default",
        ),
    )
    assert managed.objects == {
        Ref("", "Service", "default", "podinfo"),
        Ref("apps", "Deployment", "default", "podinfo"),
        Ref("autoscaling", "HorizontalPodAutoscaler", "default", "podinfo"),
    }
    assert managed.notes == ()


@pytest.mark.parametrize(
    ("ref", "artifact", "revision"),
    [
        ({"branch": "main"}, None, "main"),
        ({"branch": "main", "tag": "v6.0.0"}, None, "v6.0.0"),
        ({"branch": "main", "commit": OTHER}, None, OTHER),
        ({"name": "refs/heads/release"}, None, "refs/heads/release"),
        ({}, None, "master"),
        ({"semver": ">=6.0.0"}, f"v6.1.0@sha1:{OTHER}", OTHER),
    ],
)
def test_without_an_applied_revision_the_reference_decides(
    ref: dict[str, Any], artifact: str | None, revision: str
) -> None:
    objects = [kustomization(applied=None), git_repository(ref=ref, artifact=artifact)]
    [managed] = sources.discover(objects)
    assert [source.revision for source in managed.sources] == [revision]


def test_what_flux_discovery_cannot_follow_is_noted() -> None:
    semver = [kustomization(applied=None), git_repository(ref={"semver": ">=6.0.0"})]
    [managed] = sources.discover(semver)
    assert managed.sources == ()
    assert "follows the semver range '>=6.0.0'" in managed.notes[0]

    [missing] = sources.discover([kustomization()])
    assert missing.notes == (
        "spec.sourceRef names the GitRepository flux-system/podinfo, not found",
    )
    oci = kustomization(
        spec={
            "sourceRef": {"kind": "OCIRepository", "name": "podinfo"},
            "postBuild": {"substitute": {"cluster": "prod"}},
        }
    )
    [managed] = sources.discover([oci])
    assert managed.notes == (
        "spec.sourceRef is the OCIRepository flux-system/podinfo: only Git sources are read",
        "spec.postBuild not applied: fields they set or change will differ",
    )


def test_a_cross_namespace_source_reference_is_followed() -> None:
    spec = {
        "sourceRef": {"kind": "GitRepository", "name": "webapp", "namespace": "shared"},
        "path": "./deploy",
        "interval": "5m",
    }
    objects = [
        kustomization("webapp", spec=spec, namespace="apps"),
        git_repository("webapp", namespace="shared", url="https://git.example.com/webapp"),
    ]
    [managed] = sources.discover(objects)
    assert [(s.repository, s.path) for s in managed.sources] == [
        ("https://git.example.com/webapp", "deploy")
    ]


@pytest.mark.parametrize(
    ("value", "sha"),
    [
        (f"master@sha1:{SHA}", SHA),
        (f"v1.0.1@sha1:{SHA}", SHA),
        (f"refs/heads/main@sha1:{SHA}", SHA),
        (f"sha1:{SHA}", SHA),
        (f"master/{SHA}", SHA),
        ("main@sha1:abc", None),
        ("sha256:" + "0" * 64, "0" * 64),
        ("", None),
    ],
)
def test_flux_revisions_are_read_in_every_format(value: str, sha: str | None) -> None:
    assert parse_flux_revision(value) == sha


@pytest.mark.parametrize(
    ("value", "ref"),
    [
        ("default_podinfo__Service", Ref("", "Service", "default", "podinfo")),
        ("default_podinfo_apps_Deployment", Ref("apps", "Deployment", "default", "podinfo")),
        ("_podinfo__Namespace", Ref("", "Namespace", "", "podinfo")),
        (
            "_system__reader_rbac.authorization.k8s.io_ClusterRole",
            Ref("rbac.authorization.k8s.io", "ClusterRole", "", "system:reader"),
        ),
        ("nonsense", None),
        ("a_b", None),
    ],
)
def test_flux_inventory_ids_are_parsed_as_cli_utils_writes_them(
    value: str, ref: Ref | None
) -> None:
    assert parse_inventory_id(value) == ref


def test_argo_cd_tracking_ids_are_parsed() -> None:
    assert parse_tracking_id("my-app:apps/Deployment:default/my-deployment") == (
        "my-app",
        Ref("apps", "Deployment", "default", "my-deployment"),
    )
    assert parse_tracking_id("my-app:/ConfigMap:default/cm") == (
        "my-app",
        Ref("", "ConfigMap", "default", "cm"),
    )
    assert parse_tracking_id("my-app") is None
    assert parse_tracking_id("my-app:apps/Deployment/default/x") is None


def live(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    namespace: str = "web",
) -> dict[str, Any]:
    body = deployment(name, namespace=namespace)
    body["metadata"]["labels"] = labels or {}
    body["metadata"]["annotations"] = annotations or {}
    return body


def test_the_owner_of_a_live_object_follows_status_then_tracking_then_labels() -> None:
    managed = sources.discover(
        [
            application(
                resources=[
                    {"group": "apps", "kind": "Deployment", "namespace": "web", "name": "listed"}
                ]
            ),
            application("shop", namespace="team-a", resources=[]),
            kustomization(),
            git_repository(),
        ]
    )
    guestbook, shop, podinfo = managed

    assert sources.owner_of(live("listed"), managed) is guestbook
    tracked = {"argocd.argoproj.io/tracking-id": "team-a_shop:apps/Deployment:web/tracked"}
    assert sources.owner_of(live("tracked", annotations=tracked), managed) is shop
    copied = {"argocd.argoproj.io/tracking-id": "team-a_shop:apps/Deployment:web/original"}
    assert sources.owner_of(live("copy", annotations=copied), managed) is None
    labelled = {"app.kubernetes.io/instance": "guestbook"}
    assert sources.owner_of(live("labelled", labels=labelled), managed) is guestbook
    flux = {
        "kustomize.toolkit.fluxcd.io/name": "podinfo",
        "kustomize.toolkit.fluxcd.io/namespace": "flux-system",
    }
    assert sources.owner_of(live("by-flux", labels=flux), managed) is podinfo
    assert sources.owner_of(live("podinfo", namespace="default"), managed) is podinfo
    assert sources.owner_of(live("nobody"), managed) is None


def test_a_discovered_source_reads_the_synced_commit_not_the_branch_tip(
    repo: GitRepo, tmp_path: Path
) -> None:
    repo.write("guestbook/deploy.yaml", dump(deployment("guestbook-ui", replicas=1)))
    synced = repo.commit("synced")
    repo.write("guestbook/deploy.yaml", dump(deployment("guestbook-ui", replicas=3)))
    repo.commit("not synced yet")
    app = application(
        source={"repoURL": repo.url, "path": "guestbook", "targetRevision": "main"}, revision=synced
    )

    [managed] = sources.discover([app])
    [desired] = [sources.load(source, cache=tmp_path / "cache") for source in managed.sources]

    assert desired.commit == synced
    [web] = desired.objects
    assert web.body["spec"]["replicas"] == 1
