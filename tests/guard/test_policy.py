"""The guard's verdicts: imperative edits of GitOps-managed objects, pins that cannot fit."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubemedic.guard import Outcome, Policy, ReviewError, decide, parse_review
from kubemedic.guard.policy import GuardSettings, StaticKnowledge
from tests.factories import container, node, pod
from tests.guard.builders import (
    ARGO_SA,
    argo_deployment,
    flux_deployment,
    pinned,
    plain_deployment,
    review,
)

SMALL = node("small-node", cpu="2", memory="2Gi")
BIG = node("big-node", cpu="64", memory="256Gi")
KNOWN = StaticKnowledge(nodes=[SMALL, BIG])


def judge(body: dict[str, Any], *, settings: GuardSettings | None = None, knowledge: Any = KNOWN):
    return decide(parse_review(body), knowledge=knowledge, settings=settings or GuardSettings())


def edited(body: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    out["spec"].update(changes)
    return out


def test_kubectl_edit_of_an_argo_cd_deployment_is_warned_naming_object_manager_and_owner() -> None:
    old = argo_deployment()
    verdict = judge(review(edited(old, replicas=5), old=old))
    assert verdict.outcome is Outcome.WARNED and verdict.allowed
    (warning,) = verdict.warnings
    assert warning == (
        "Deployment shop/web is managed by Argo CD (application shop); kubectl-edit changes it "
        "outside Git; change it in Git instead"
    )
    answer = verdict.response("u1")["response"]
    assert answer == {"uid": "u1", "allowed": True, "warnings": [warning]}


def test_with_policy_deny_the_edit_is_refused_with_403() -> None:
    old = argo_deployment()
    verdict = judge(
        review(edited(old, replicas=5), old=old, manager="kubectl-patch"),
        settings=GuardSettings(policy=Policy.DENY),
    )
    assert verdict.outcome is Outcome.DENIED and not verdict.allowed
    status = verdict.response("u2")["response"]["status"]
    assert status["code"] == 403 and status["reason"] == "Forbidden"
    assert "kubectl-patch changes it outside Git: change it in Git instead" in status["message"]


def test_flux_labels_mark_the_owner() -> None:
    old = flux_deployment()
    verdict = judge(review(edited(old, replicas=3), old=old, manager="kubectl-client-side-apply"))
    assert "is managed by Flux (application flux-system/apps)" in verdict.warnings[0]


@pytest.mark.parametrize(
    ("manager", "user", "groups"),
    [
        ("argocd-controller", ARGO_SA, ()),  # the tool itself
        ("kubectl-edit", ARGO_SA, ()),  # its account, whatever manager it names
        ("kube-controller-manager", "system:kube-controller-manager", ()),  # a controller
        (None, "kubernetes-admin", ()),  # no field manager: nothing to name
        ("kubectl-edit", "alice", ("platform",)),  # an exempt group
    ],
)
def test_the_tool_controllers_and_exemptions_are_not_judged(
    manager: str | None, user: str, groups: tuple[str, ...]
) -> None:
    old = argo_deployment()
    settings = GuardSettings(policy=Policy.DENY, exempt_groups=("platform",))
    verdict = judge(
        review(edited(old, replicas=5), old=old, manager=manager, user=user, groups=groups),
        settings=settings,
    )
    assert verdict.outcome is Outcome.ALLOWED and verdict.warnings == ()


def test_an_unmanaged_object_gets_neither() -> None:
    old = plain_deployment()
    verdict = judge(
        review(edited(old, replicas=5), old=old), settings=GuardSettings(policy=Policy.DENY)
    )
    assert verdict.outcome is Outcome.ALLOWED
    assert verdict.response("u")["response"] == {"uid": "u", "allowed": True}


def test_configured_imperative_managers_count() -> None:
    old = argo_deployment()
    request = review(edited(old, replicas=5), old=old, manager="deploy-script")
    assert judge(request).outcome is Outcome.ALLOWED
    settings = GuardSettings(imperative_managers=("deploy-script",))
    assert judge(request, settings=settings).outcome is Outcome.WARNED


def test_a_pin_the_node_cannot_hold_is_warned_with_replicas_fit_and_resource() -> None:
    old = plain_deployment(
        replicas=12, containers=[container("app", requests={"cpu": "100m", "memory": "800Mi"})]
    )
    verdict = judge(
        review(pinned(old, "small-node"), old=old, manager="kubectl-patch"),
        settings=GuardSettings(policy=Policy.DENY),
    )
    assert verdict.outcome is Outcome.WARNED  # never denied, whatever the policy
    (warning,) = verdict.warnings
    assert "pins 12 replica(s) to node small-node" in warning
    assert "only 2 fit its free memory" in warning
    assert "reject 10 with OutOfmemory" in warning


def test_the_node_s_other_pods_count_but_the_workload_s_own_do_not() -> None:
    old = plain_deployment(
        replicas=2, containers=[container("app", requests={"cpu": "100m", "memory": "800Mi"})]
    )
    hog = pod("hog", namespace="other", node_name="small-node",
              containers=[container("hog", requests={"memory": "1Gi"})])  # fmt: skip
    own = pod("tool-abc", namespace="shop", node_name="small-node",
              labels={"app.kubernetes.io/name": "tool"},
              containers=[container("app", requests={"memory": "1500Mi"})])  # fmt: skip
    knowledge = StaticKnowledge(nodes=[SMALL], pods=[own])
    assert judge(review(pinned(old, "small-node"), old=old), knowledge=knowledge).warnings == ()
    knowledge = StaticKnowledge(nodes=[SMALL], pods=[hog, own])
    (warning,) = judge(review(pinned(old, "small-node"), old=old), knowledge=knowledge).warnings
    assert "only 1 fit its free memory" in warning


def test_a_pin_to_a_node_that_holds_it_or_an_unchanged_pin_is_not_warned() -> None:
    old = plain_deployment(replicas=3)
    assert judge(review(pinned(old, "big-node"), old=old)).warnings == ()
    already = pinned(plain_deployment(replicas=30, containers=[
        container("app", requests={"memory": "1Gi"})]), "small-node")  # fmt: skip
    assert judge(review(edited(already, replicas=31), old=already)).warnings == ()


def test_a_pin_to_a_missing_node_and_a_created_pinned_workload_are_warned() -> None:
    body = pinned(plain_deployment(), "ghost")
    (warning,) = judge(review(body, operation="CREATE", manager="kubectl-create")).warnings
    assert "pins its pods to node ghost" in warning and "no node ghost exists" in warning


def test_capacity_is_not_judged_before_the_caches_are_filled() -> None:
    body = pinned(plain_deployment(), "ghost")
    unsynced = StaticKnowledge(synced=False)
    assert judge(review(body, operation="CREATE"), knowledge=unsynced).warnings == ()


def test_an_argo_cd_edit_that_pins_gets_both_warnings() -> None:
    old = argo_deployment(replicas=12)
    verdict = judge(review(pinned(old, "small-node"), old=old))
    assert len(verdict.warnings) == 2
    assert "small-node" in verdict.warnings[0] and "Argo CD" in verdict.warnings[1]


class Broken:
    synced = True

    def node(self, name: str) -> None:
        raise RuntimeError("cache torn")

    def pods_on(self, name: str) -> list[Any]:
        return []


def test_an_internal_error_fails_open_unless_told_otherwise() -> None:
    old = plain_deployment()
    request = review(pinned(old, "small-node"), old=old)
    verdict = judge(request, knowledge=Broken())
    assert verdict.outcome is Outcome.ERROR and verdict.allowed
    assert "RuntimeError: cache torn" in verdict.reasons[0]
    closed = judge(request, knowledge=Broken(), settings=GuardSettings(fail_open=False))
    assert not closed.allowed and closed.code == 500


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([], "the body must be an object"),
        ({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"},
         "expected apiVersion"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
         "request must be an object"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {}},
         "request.uid must be a non-empty string"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "x", "operation": "PATCH"}}, "request.operation must be CREATE"),
        ({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
          "request": {"uid": "x", "operation": "UPDATE", "kind": {}, "object": "text"}},
         "request.object must be an object"),
    ],
)  # fmt: skip
def test_a_malformed_review_is_an_error_saying_what_is_wrong(body: Any, message: str) -> None:
    with pytest.raises(ReviewError, match="malformed AdmissionReview") as caught:
        parse_review(body)
    assert message in str(caught.value)
