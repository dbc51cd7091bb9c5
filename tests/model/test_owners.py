"""Owners: the stable workload of a pod, and guesses for pods known only by name."""

from __future__ import annotations

from typing import Any

import pytest

from kubemedic.model import objects, owners
from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView
from tests.factories import deployment, pod, replicaset


def _as(body: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    """``body`` (built as a Deployment) re-kinded: the builders have no StatefulSet/Job/CronJob."""
    return {**body, "kind": kind, "apiVersion": api_version}


def _owned_by(body: dict[str, Any], owner: dict[str, Any]) -> dict[str, Any]:
    meta = owner["metadata"]
    reference = {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }
    return {**body, "metadata": {**body["metadata"], "ownerReferences": [reference]}}


def _key(ref: ObjectRef | None) -> tuple[str, str | None, str] | None:
    return None if ref is None else (ref.kind, ref.namespace, ref.name)


# -- the workload of a pod --------------------------------------------------------------------


def test_workload_recovers_deployment_name_when_only_replicaset_reference_is_known() -> None:
    app = deployment("prometheus-server", namespace="support")
    rs = replicaset(app, pod_hash="7f9c8d6b5")
    body = pod("prometheus-server-7f9c8d6b5-x2x9k", namespace="support", owner=rs)
    for bodies in ([body], [body, rs], [body, rs, app]):
        ref = owners.workload_of(ClusterView.build(bodies), body)
        assert (ref.kind, ref.namespace, ref.name) == (
            "Deployment",
            "support",
            "prometheus-server",
        )
    assert owners.cause_key(ref) == "support/Deployment/prometheus-server"
    assert owners.owner_text(ref) == "Deployment support/prometheus-server"


def test_bare_pod_is_its_own_workload() -> None:
    body = pod("debug", namespace="ops")
    ref = owners.workload_of(ClusterView.build([body]), body)
    assert owners.cause_key(ref) == "ops/Pod/debug"


def test_orphaned_replicaset_in_the_view_stays_a_replicaset() -> None:
    rs = replicaset(deployment("api", namespace="prod"), pod_hash="6d9f8b7c5")
    del rs["metadata"]["ownerReferences"]  # kubectl delete deployment --cascade=orphan
    body = pod("api-6d9f8b7c5-q7z2m", namespace="prod", owner=rs)
    ref = owners.workload_of(ClusterView.build([body, rs]), body)
    assert _key(ref) == ("ReplicaSet", "prod", "api-6d9f8b7c5")


def test_missing_replicaset_without_a_matching_hash_label_is_kept() -> None:
    rs = replicaset(deployment("api", namespace="prod"), pod_hash="6d9f8b7c5")
    body = pod("api-6d9f8b7c5-q7z2m", namespace="prod", owner=rs)
    body["metadata"]["labels"]["pod-template-hash"] = "other"
    ref = owners.workload_of(ClusterView.build([body]), body)
    assert _key(ref) == ("ReplicaSet", "prod", "api-6d9f8b7c5")


def test_job_pod_belongs_to_its_cronjob_when_both_are_in_the_view() -> None:
    cronjob = _as(deployment("nightly", namespace="ops"), "CronJob", "batch/v1")
    job = _owned_by(
        _as(deployment("nightly-28391040", namespace="ops"), "Job", "batch/v1"), cronjob
    )
    body = pod("nightly-28391040-x7k2p", namespace="ops", owner=job)
    assert _key(owners.workload_of(ClusterView.build([body, job, cronjob]), body)) == (
        "CronJob",
        "ops",
        "nightly",
    )


def test_pod_template_specs_cover_every_workload_kind() -> None:
    assert owners.POD_TEMPLATE_SPECS["StatefulSet"] == ("spec", "template", "spec")
    assert owners.POD_TEMPLATE_SPECS["CronJob"] == (
        "spec",
        "jobTemplate",
        "spec",
        "template",
        "spec",
    )
    assert set(owners.POD_TEMPLATE_SPECS) == {
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "ReplicationController",
        "Job",
        "CronJob",
    }


# -- pods known only by name ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "workload", "pod_name", "expected"),
    [
        ("Deployment", "hub", "hub-5d8f7c9b4-x2x9k", True),
        ("Deployment", "hub", "hub-x2x9k", False),
        ("Deployment", "hub", "hub-5d8f7c9b4-x2x9k-extra", False),
        ("ReplicaSet", "hub-5d8f7c9b4", "hub-5d8f7c9b4-x2x9k", True),
        ("DaemonSet", "fluent-bit", "fluent-bit-zv7tq", True),
        ("Job", "backup-28391040", "backup-28391040-x7k2p", True),
        ("ReplicationController", "legacy", "legacy-b4c6d", True),
        ("StatefulSet", "web", "web-0", True),
        ("StatefulSet", "web", "web-12", True),
        ("StatefulSet", "web", "web-x2x9k", False),
        ("StatefulSet", "web", "webapp-0", False),
        ("CronJob", "nightly", "nightly-x7k2p", False),
    ],
)
def test_generated_names(kind: str, workload: str, pod_name: str, expected: bool) -> None:
    assert owners.generated_by(kind, workload, pod_name=pod_name) is expected


PROXY = deployment("proxy", namespace="jhub")


@pytest.mark.parametrize(
    "in_view",
    [[PROXY], [replicaset(PROXY, pod_hash="7c9d5b8f6")]],
    ids=["deployment", "its-replicaset-only"],
)
def test_gone_deployment_pod_is_placed_under_its_deployment(in_view: list[Any]) -> None:
    view = ClusterView.build(in_view)
    guessed = owners.guess_owner(view, namespace="jhub", pod_name="proxy-7c9d5b8f6-hw2zt")
    assert _key(guessed) == ("Deployment", "jhub", "proxy")


def test_gone_statefulset_and_job_pods_are_placed_by_ordinal_and_suffix() -> None:
    web = _as(deployment("web", namespace="shop"), "StatefulSet", "apps/v1")
    job = _as(deployment("migrate", namespace="shop"), "Job", "batch/v1")
    view = ClusterView.build([web, job])
    assert _key(owners.guess_owner(view, namespace="shop", pod_name="web-0")) == (
        "StatefulSet",
        "shop",
        "web",
    )
    assert _key(owners.guess_owner(view, namespace="shop", pod_name="migrate-c5v8n")) == (
        "Job",
        "shop",
        "migrate",
    )


def test_the_longest_matching_workload_name_wins() -> None:
    app = deployment("app", namespace="default")
    bare = replicaset(app, pod_hash="xyzwv")
    del bare["metadata"]["ownerReferences"]
    view = ClusterView.build([app, bare])
    assert _key(owners.guess_owner(view, namespace="default", pod_name="app-xyzwv-abcde")) == (
        "ReplicaSet",
        "default",
        "app-xyzwv",
    )


def test_bare_or_foreign_pods_are_not_guessed() -> None:
    view = ClusterView.build([deployment("proxy", namespace="jhub")])
    assert owners.guess_owner(view, namespace="jhub", pod_name="debug") is None
    assert owners.guess_owner(view, namespace="other", pod_name="proxy-7c9d5b8f6-hw2zt") is None
    assert (
        owners.guess_owner(
            ClusterView.build([]), namespace="jhub", pod_name="proxy-7c9d5b8f6-hw2zt"
        )
        is None
    )


@pytest.mark.parametrize(
    ("pod_name", "deployment_name"),
    [
        ("prometheus-server-7f9c8d6b5-x2x9k", "prometheus-server"),
        ("hub-5d8f7-x2x9k", "hub"),
        ("api.v2-6d9f8b7c5c-q7z2m", "api.v2"),
        ("web-0", None),
        ("migrate-c5v8n", None),
        ("debug", None),
        ("hub-5d8f7c9b4-x2x9", None),
        ("Hub-5d8f7c9b4-x2x9k", None),
    ],
)
def test_deployment_is_read_from_a_pod_name_alone(
    pod_name: str, deployment_name: str | None
) -> None:
    expected = (
        None
        if deployment_name is None
        else ObjectRef("Deployment", deployment_name, "ns", "apps/v1")
    )
    assert owners.guess_deployment("ns", pod_name) == expected


# -- naming -----------------------------------------------------------------------------------


def test_names_for_evidence_and_causes() -> None:
    namespaced = ObjectRef("StatefulSet", "web", "shop", "apps/v1")
    assert owners.owner_text(namespaced) == "StatefulSet shop/web"
    assert owners.cause_key(namespaced) == "shop/StatefulSet/web"
    cluster_scoped = ObjectRef("Node", "core-1")
    assert owners.owner_text(cluster_scoped) == "Node core-1"
    assert owners.cause_key(cluster_scoped) == "Node/core-1"
    assert owners.pod_key(pod("hub-0", namespace="jhub")) == "jhub/hub-0"


@pytest.mark.parametrize(
    "metadata",
    [
        {"name": "web-1", "namespace": "shop"},
        {"name": "web-1"},
        {"name": "web-1", "namespace": ""},
        {"name": "web-1", "namespace": 7},
        {"namespace": "shop"},
        {},
    ],
)
def test_pod_key_is_the_key_of_the_pods_reference(metadata: dict) -> None:
    body = {"kind": "Pod", "metadata": metadata}
    assert owners.pod_key(body) == objects.ref_of(body).key
