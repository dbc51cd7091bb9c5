"""Workload and disruption budget validation worded as kube-apiserver 1.32 words it."""

from __future__ import annotations

import copy

from tests.factories import deployment
from tests.sim.manifests import pdb
from tests.sim.validations import as_kind, check, messages, stored

# -- workloads ---------------------------------------------------------------------------------


def test_a_deployment_needs_a_selector_matching_its_template() -> None:
    body = stored(deployment("web"))
    del body["spec"]["selector"]
    assert messages(check(body)) == [
        "spec.selector: Required value",
        "spec.template.metadata.labels: Invalid value: "
        'map[string]string{"app.kubernetes.io/name":"web"}: `selector` does not match template '
        "`labels`",
    ]
    body["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/name": "api"}}
    assert messages(check(body))[-1].endswith("`selector` does not match template `labels`")
    body["spec"]["selector"] = {
        "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": ["web"]}]
    }
    assert check(body) == []


def test_an_empty_selector_is_refused() -> None:
    body = stored(deployment("web"))
    body["spec"]["selector"] = {}
    assert messages(check(body)) == [
        "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for "
        "deployment"
    ]


def test_selector_expressions_are_checked() -> None:
    body = stored(deployment("web"))
    body["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "In"}]}
    assert messages(check(body)) == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'"
    ]


def test_a_workload_selector_is_immutable() -> None:
    for kind in ("Deployment", "ReplicaSet", "DaemonSet"):
        old = stored(as_kind(deployment("web"), kind))
        new = copy.deepcopy(old)
        new["spec"]["replicas"] = 5
        assert check(new, old) == [], kind
        new["spec"]["selector"]["matchLabels"]["tier"] = "front"
        new["spec"]["template"]["metadata"]["labels"]["tier"] = "front"
        assert messages(check(new, old)) == [
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"
            '"app.kubernetes.io/name":"web", "tier":"front"}, '
            "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
        ], kind


def test_replicas_may_not_be_negative() -> None:
    body = stored(deployment("web"))
    body["spec"]["replicas"] = -1
    assert messages(check(body)) == [
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    ]


def test_workload_pods_must_restart_always() -> None:
    body = stored(deployment("web"))
    body["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert messages(check(body)) == [
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
    ]


def test_recreate_deployments_take_no_rolling_update_parameters() -> None:
    body = stored(deployment("web"))
    body["spec"]["strategy"]["type"] = "Recreate"
    assert messages(check(body)) == [
        "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is "
        "'Recreate'"
    ]
    del body["spec"]["strategy"]["rollingUpdate"]
    assert check(body) == []


def test_rolling_update_parameters() -> None:
    body = stored(deployment("web"))
    body["spec"]["strategy"]["rollingUpdate"] = {"maxUnavailable": "120%", "maxSurge": 0}
    assert messages(check(body)) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 120%: must not be greater "
        "than 100%"
    ]
    body["spec"]["strategy"]["rollingUpdate"] = {"maxUnavailable": 0, "maxSurge": "0%"}
    assert messages(check(body)) == [
        "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when "
        "`maxSurge` is 0"
    ]


def test_statefulset_updates_are_limited_to_a_few_fields() -> None:
    old = stored(as_kind(deployment("db"), "StatefulSet"))
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "db:2"
    assert check(new, old) == []
    new["spec"]["serviceName"] = "other"
    assert messages(check(new, old)) == [
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', "
        "'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
        "'minReadySeconds' are forbidden"
    ]


def test_statefulset_pod_management_policy() -> None:
    body = stored(as_kind(deployment("db"), "StatefulSet"))
    body["spec"]["podManagementPolicy"] = "Random"
    assert messages(check(body)) == [
        "spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"
    ]


def test_disruption_budget_takes_one_of_min_available_and_max_unavailable() -> None:
    budget = pdb("web", min_available=1, labels={"app": "web"})
    budget["spec"]["maxUnavailable"] = "10%"
    causes = check(budget)
    assert [(c.reason, c.field) for c in causes] == [("FieldValueInvalid", "spec")]
    assert causes[0].message.startswith("Invalid value: policy.PodDisruptionBudgetSpec{")
    assert causes[0].message.endswith(": minAvailable and maxUnavailable cannot be both set")
    del budget["spec"]["minAvailable"]
    assert check(budget) == []
    budget["spec"]["maxUnavailable"] = "ten"
    assert messages(check(budget)) == [
        "spec.maxUnavailable: Invalid value: ten: a valid percent string must be a numeric "
        "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is "
        "'[0-9]+%')"
    ]
