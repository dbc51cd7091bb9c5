"""The drift engine's rules, one by one, on built objects."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemedic.drift import (
    DriftRules,
    IgnoreRule,
    ManagerClass,
    ManagerClasses,
    diff,
    diff_objects,
    drift_finding,
    drift_to_json,
)
from kubemedic.drift.engine import DriftError
from tests.drift.builders import APPLIED, applied, container, deployment, entry, live_of

NODE_NAME = "spec.template.spec.nodeName"


def paths(drift: object) -> list[tuple[str, str]]:
    return [(d.kind, str(d.path)) for d in drift.drifts]  # type: ignore[attr-defined]


def test_server_defaults_and_metadata_are_not_drift() -> None:
    manifest = deployment()
    assert diff(manifest, live_of(manifest, APPLIED)).drifts == ()


def test_node_name_added_by_kubectl_edit_is_live_only_with_who_and_when() -> None:
    manifest = deployment()
    live = live_of(manifest, APPLIED, entry("kubectl-edit", NODE_NAME, time="2026-03-01T10:00:00Z"))
    live["spec"]["template"]["spec"]["nodeName"] = "core-2"
    drift = diff(manifest, live)
    assert paths(drift) == [("live-only", NODE_NAME)]
    found = drift.drifts[0]
    assert found.live == "core-2" and not found.in_git
    assert found.owner is not None
    assert (found.owner.manager, found.owner.operation, found.owner.time) == (
        "kubectl-edit",
        "Update",
        "2026-03-01T10:00:00Z",
    )
    assert drift.patch == [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "100"},
        {"op": "remove", "path": "/spec/template/spec/nodeName"},
    ]


def test_a_value_changed_by_hand_is_changed_and_replaced_back() -> None:
    manifest = deployment(replicas=2)
    live = live_of(
        manifest, applied(without=("spec.replicas",)), entry("kubectl-scale", "spec.replicas")
    )
    live["spec"]["replicas"] = 7
    drift = diff(manifest, live)
    assert paths(drift) == [("changed", "spec.replicas")]
    assert drift.drifts[0].owner.manager == "kubectl-scale"  # type: ignore[union-attr]
    assert {"op": "replace", "path": "/spec/replicas", "value": 2} in drift.patch


def test_a_list_item_missing_live_is_removed_and_appended_back() -> None:
    manifest = deployment()
    live = live_of(manifest, APPLIED)
    container(live)["ports"] = []
    drift = diff(manifest, live)
    assert paths(drift) == [("removed", "spec.template.spec.containers[name=app].ports")]
    manifest_two = deployment()
    container(manifest_two)["ports"].append({"containerPort": 9090, "name": "metrics"})
    drift = diff(manifest_two, live_of(deployment(), APPLIED))
    port = "spec.template.spec.containers[name=app].ports[containerPort=9090,protocol=TCP]"
    assert paths(drift) == [("removed", port)]
    add = {
        "op": "add",
        "path": "/spec/template/spec/containers/0/ports/-",
        "value": {"containerPort": 9090, "name": "metrics", "protocol": "TCP"},
    }
    assert add in drift.patch


def test_list_order_of_keyed_lists_is_not_drift() -> None:
    manifest = deployment()
    container(manifest)["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    live = live_of(manifest, APPLIED)
    container(live)["env"].reverse()
    assert diff(manifest, live).drifts == ()


def test_quantities_compare_by_value() -> None:
    manifest = deployment()
    live = live_of(manifest, APPLIED)
    container(live)["resources"]["requests"] = {"cpu": "500m", "memory": "1073741824"}
    assert diff(manifest, live).drifts == ()


@pytest.mark.parametrize(
    ("manager", "operation", "reported"),
    [
        ("kube-controller-manager", "Update", False),
        ("mutating-webhook", "Update", False),
        ("argocd-controller", "Update", False),
        ("argocd-controller", "Apply", True),
        ("kubectl", "Apply", True),
        ("kubectl-patch", "Update", True),
        ("Mozilla", "Update", True),
    ],
)
def test_live_only_fields_count_by_manager_class(
    manager: str, operation: str, reported: bool
) -> None:
    manifest = deployment()
    path = 'spec.template.metadata.annotations["example.com/x"]'
    live = live_of(
        manifest, APPLIED, entry(manager, path, operation=operation, time="2026-02-01T00:00:00Z")
    )
    live["spec"]["template"]["metadata"]["annotations"] = {"example.com/x": "y"}
    assert bool(diff(manifest, live).drifts) is reported


def test_a_live_only_field_nobody_owns_is_a_server_value() -> None:
    manifest = deployment()
    live = live_of(manifest, APPLIED)
    live["spec"]["template"]["spec"]["hostname"] = "allocated"
    assert diff(manifest, live).drifts == ()


def test_manager_classes_are_configurable() -> None:
    manifest = deployment()
    live = live_of(manifest, APPLIED, entry("ops-script", NODE_NAME))
    live["spec"]["template"]["spec"]["nodeName"] = "core-2"
    assert diff(manifest, live).drifts == ()
    people = ManagerClasses(imperative=frozenset({"ops-script"}))
    assert people.classify("ops-script") is ManagerClass.IMPERATIVE
    assert paths(diff(manifest, live, rules=DriftRules(managers=people))) == [
        ("live-only", NODE_NAME)
    ]


def test_a_default_overridden_by_hand_is_drift_but_not_by_a_controller() -> None:
    manifest = deployment()
    path = "spec.template.spec.dnsPolicy"
    for manager, reported in (("kubectl-edit", True), ("some-operator", False)):
        live = live_of(manifest, APPLIED, entry(manager, path))
        live["spec"]["template"]["spec"]["dnsPolicy"] = "Default"
        assert bool(diff(manifest, live).drifts) is reported, manager


IMAGE = "spec.template.spec.containers[name=app].image"


def _edited() -> tuple[dict[str, Any], dict[str, Any]]:
    """``kubectl edit`` changed the image and pinned the template to a node."""
    manifest = deployment()
    live = live_of(manifest, applied(without=(IMAGE,)), entry("kubectl-edit", IMAGE, NODE_NAME))
    container(live)["image"] = "nginx:debug"
    live["spec"]["template"]["spec"]["nodeName"] = "core-2"
    return manifest, live


@pytest.mark.parametrize(
    "rule",
    [
        IgnoreRule(kind="Deployment", json_pointers=("/spec/template/spec/containers/0/image",)),
        IgnoreRule(
            group="apps",
            jq_path_expressions=(
                '.spec.template.spec.containers[] | select(.name == "app") | .image',
            ),
        ),
        IgnoreRule(
            name="web",
            namespace="default",
            jq_path_expressions=(".spec.template.spec.containers[0].image",),
        ),
    ],
)
def test_ignore_rules_drop_what_they_reach(rule: IgnoreRule) -> None:
    manifest, live = _edited()
    drift = diff(manifest, live, rules=DriftRules(ignore=(rule,)))
    assert paths(drift) == [("live-only", NODE_NAME)]


def test_ignore_rules_apply_only_to_their_objects() -> None:
    manifest, live = _edited()
    other = IgnoreRule(kind="StatefulSet", json_pointers=("/spec/template/spec/nodeName",))
    assert len(diff(manifest, live, rules=DriftRules(ignore=(other,))).drifts) == 2
    by_manager = IgnoreRule(managed_fields_managers=("kubectl-edit",))
    assert diff(manifest, live, rules=DriftRules(ignore=(by_manager,))).drifts == ()


def test_a_jq_expression_outside_the_subset_is_an_input_error() -> None:
    manifest, live = _edited()
    rule = IgnoreRule(jq_path_expressions=(".spec | keys",))
    with pytest.raises(ValueError, match="jq path expression"):
        diff(manifest, live, rules=DriftRules(ignore=(rule,)))


def test_secret_string_data_is_data_and_null_is_empty() -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default"},
        "stringData": {"password": "hunter2"},
        "data": {"empty": ""},
    }
    live = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s", "namespace": "default", "resourceVersion": "9"},
        "type": "Opaque",
        "data": {"password": "aHVudGVyMg==", "empty": None},
    }
    assert diff(manifest, live).drifts == ()


def test_removals_run_last_and_from_the_highest_position() -> None:
    manifest = deployment()
    live = live_of(
        manifest,
        APPLIED,
        entry(
            "kubectl-patch",
            "spec.template.spec.containers[name=a]",
            "spec.template.spec.containers[name=b]",
        ),
    )
    spec = live["spec"]["template"]["spec"]
    spec["containers"] += [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]
    container(live)["image"] = "nginx:other"
    ops = diff(manifest, live).patch
    assert [op["op"] for op in ops] == ["test", "replace", "remove", "remove"]
    assert [op["path"] for op in ops[2:]] == [
        "/spec/template/spec/containers/2",
        "/spec/template/spec/containers/1",
    ]


def test_diff_objects_looks_each_object_up_and_reports_missing_ones() -> None:
    present, absent = deployment("web"), deployment("api")
    store = {("default", "web"): live_of(present, APPLIED)}
    calls: list[tuple[str, str, str | None, str]] = []

    def lookup(
        api_version: str, kind: str, namespace: str | None, name: str
    ) -> dict[str, object] | None:
        calls.append((api_version, kind, namespace, name))
        return store.get((namespace or "default", name))  # type: ignore[return-value]

    drifts = diff_objects([present, absent], lookup, DriftRules())
    assert [(d.name, d.drifted, d.missing) for d in drifts] == [
        ("web", False, False),
        ("api", True, True),
    ]
    assert calls[0] == ("apps/v1", "Deployment", "default", "web")
    assert drifts[1].patch == []


def test_a_desired_object_without_a_name_is_an_input_error() -> None:
    with pytest.raises(DriftError):
        diff({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}, {})


def test_the_finding_names_the_pin_and_is_critical() -> None:
    manifest, live = _edited()
    drift = diff(manifest, live)
    now = datetime(2026, 3, 1, tzinfo=UTC)
    finding = drift_finding(drift, now=now)
    assert finding is not None
    out = finding.to_json()
    assert out["check"] == "drift" and out["severity"] == "critical"
    assert out["cause"] == "pinned-node-name:default/Deployment/web"
    assert "kubectl-edit" in out["message"]
    assert out["evidence"] == drift_to_json(drift)
    assert out["evidence"]["drifts"][1]["path"] == NODE_NAME
    assert drift_finding(diff(copy.deepcopy(manifest), live_of(manifest, APPLIED)), now=now) is None


def test_endpoints_compare_sorted_and_revert_their_subsets_whole() -> None:
    def endpoints(*ips: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "Endpoints",
            "metadata": {"name": "solr", "namespace": "default", "resourceVersion": "5"},
            "subsets": [{"addresses": [{"ip": ip} for ip in ips], "ports": [{"port": 8080}]}],
        }

    assert diff(endpoints("10.0.0.1", "10.0.0.2"), endpoints("10.0.0.2", "10.0.0.1")).drifts == ()
    drift = diff(endpoints("10.0.0.1", "10.0.0.2"), endpoints("10.0.0.3", "10.0.0.1"))
    assert paths(drift) == [("changed", "subsets")]
    assert drift.patch[1]["path"] == "/subsets"
