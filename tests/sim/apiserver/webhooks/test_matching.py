"""Which requests go to which webhook: the rule, scope and selector matchers, unit by unit."""

from __future__ import annotations

from typing import Any

from kubemedic.sim.apiserver.webhooks.calling import Attributes, denial, review_request
from kubemedic.sim.apiserver.webhooks.matching import matches, rule_matches

_DEPLOYMENTS = {
    "operations": ["UPDATE"],
    "apiGroups": ["apps"],
    "apiVersions": ["v1"],
    "resources": ["deployments"],
}


def _rule(**changes: Any) -> dict[str, Any]:
    return {**_DEPLOYMENTS, **changes}


def _request(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "operation": "UPDATE", "group": "apps", "version": "v1", "resource": "deployments",
        "subresource": "", "namespace": "shop",
    }  # fmt: skip
    return {**base, **changes}


def test_a_rule_names_operations_groups_versions_and_resources() -> None:
    assert rule_matches(_rule(), **_request())
    assert not rule_matches(_rule(), **_request(operation="CREATE"))
    assert rule_matches(_rule(operations=["*"]), **_request(operation="DELETE"))
    assert not rule_matches(_rule(), **_request(group="batch"))
    assert not rule_matches(_rule(), **_request(resource="replicasets"))
    assert rule_matches(_rule(apiGroups=["*"], apiVersions=["*"]), **_request(group="batch"))


def test_subresources_match_only_when_named() -> None:
    status = _request(subresource="status")
    assert not rule_matches(_rule(), **status)
    assert not rule_matches(_rule(resources=["*"]), **status)
    assert rule_matches(_rule(resources=["deployments/status"]), **status)
    assert rule_matches(_rule(resources=["deployments/*"]), **status)
    # ``sub == "*" || sub == opSub``: a wildcard subresource matches the resource itself too.
    assert rule_matches(_rule(resources=["deployments/*"]), **_request())
    assert rule_matches(_rule(resources=["*/*"]), **status)
    assert rule_matches(_rule(resources=["*/status"]), **status)
    assert not rule_matches(_rule(resources=["*/scale"]), **status)


def test_scope_namespaced_cluster_and_the_namespace_object() -> None:
    namespaces = {"apiGroups": [""], "resources": ["namespaces"], "operations": ["*"],
                  "apiVersions": ["v1"]}  # fmt: skip
    ns_request = _request(group="", resource="namespaces", namespace="shop")
    assert rule_matches({**namespaces, "scope": "Cluster"}, **ns_request)
    assert not rule_matches({**namespaces, "scope": "Namespaced"}, **ns_request)
    assert rule_matches(_rule(scope="Namespaced"), **_request())
    assert not rule_matches(_rule(scope="Cluster"), **_request())
    assert rule_matches(_rule(scope="*"), **_request())


def _webhook(**changes: Any) -> dict[str, Any]:
    return {"name": "w.example.com", "rules": [_rule(operations=["*"])], **changes}


def _matches(
    webhook: dict[str, Any],
    *,
    labels: dict[str, str] | None = None,
    old_labels: dict[str, str] | None = None,
    namespace_labels: dict[str, str] | None = None,
    **request: Any,
) -> bool:
    obj = None if labels is None else {"metadata": {"labels": labels}}
    old = None if old_labels is None else {"metadata": {"labels": old_labels}}
    return matches(
        webhook, **_request(**request), obj=obj, old=old,
        namespace_labels=lambda _ns: namespace_labels or {},
    )  # fmt: skip


def test_namespace_selector_reads_the_namespace_labels() -> None:
    hook = _webhook(namespaceSelector={"matchLabels": {"guard": "on"}})
    assert _matches(hook, labels={}, namespace_labels={"guard": "on"})
    assert not _matches(hook, labels={}, namespace_labels={"guard": "off"})
    assert _matches(_webhook(namespaceSelector={}), labels={}, namespace_labels={})
    expression = {"matchExpressions": [{"key": "guard", "operator": "DoesNotExist"}]}
    assert _matches(_webhook(namespaceSelector=expression), labels={}, namespace_labels={})


def test_object_selector_matches_the_new_or_the_old_labels() -> None:
    hook = _webhook(objectSelector={"matchLabels": {"app": "web"}})
    assert _matches(hook, labels={"app": "web"})
    assert _matches(hook, labels={"app": "db"}, old_labels={"app": "web"})
    assert not _matches(hook, labels={"app": "db"}, old_labels={"app": "db"})
    assert _matches(hook, operation="DELETE", old_labels={"app": "web"})
    assert _matches(_webhook(objectSelector={}), operation="DELETE", old_labels={})


def test_the_configuration_objects_are_never_sent() -> None:
    hook = _webhook(rules=[{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                            "resources": ["*/*"]}])  # fmt: skip
    assert _matches(hook, labels={}, group="apps")
    assert not _matches(
        hook, labels={}, group="admissionregistration.k8s.io",
        resource="validatingwebhookconfigurations", namespace="",
    )  # fmt: skip


def test_the_review_carries_what_kube_apiserver_sends() -> None:
    attrs = Attributes(
        operation="DELETE", group="apps", version="v1", kind="Deployment",
        resource="deployments", subresource="", name="web", namespace="shop", obj=None,
        old={"metadata": {"name": "web"}}, options={"kind": "DeleteOptions"},
    )  # fmt: skip
    review = review_request(attrs, "0f0e")
    assert review["apiVersion"] == "admission.k8s.io/v1"
    assert review["kind"] == "AdmissionReview"
    request = review["request"]
    assert request["uid"] == "0f0e"
    assert request["kind"] == request["requestKind"] == {
        "group": "apps", "version": "v1", "kind": "Deployment"
    }  # fmt: skip
    assert request["resource"] == {"group": "apps", "version": "v1", "resource": "deployments"}
    assert "subResource" not in request
    assert request["object"] is None
    assert request["oldObject"] == {"metadata": {"name": "web"}}
    assert request["dryRun"] is False
    assert request["userInfo"]["username"] == "kubernetes-admin"
    assert (request["name"], request["namespace"], request["operation"]) == (
        "web", "shop", "DELETE"
    )  # fmt: skip


def test_a_denial_is_worded_as_to_status_err() -> None:
    coded = denial("g.example.com", {"code": 403, "reason": "Forbidden", "message": "no"})
    assert (coded.code, coded.reason) == (403, "Forbidden")
    assert coded.message == 'admission webhook "g.example.com" denied the request: no'
    bare = denial("g.example.com", None)
    assert bare.code == 400  # codes below 400 (or none) become 400
    assert (
        bare.message == 'admission webhook "g.example.com" denied the request without explanation'
    )
    assert denial("g.example.com", {"reason": "Pinned"}).message.endswith("request: Pinned")
