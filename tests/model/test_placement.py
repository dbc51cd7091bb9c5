"""Placement facts: node pools across provisioners, resident pods, node selection rules."""

from __future__ import annotations

from typing import Any

import pytest

from kubemedic.model import placement
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import ClusterView
from tests.factories import container, node, pod, pod_metrics

# -- node pools -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "pool"),
    [
        ({"cloud.google.com/gke-nodepool": "core-pool"}, "core-pool"),
        ({"eks.amazonaws.com/nodegroup": "ng-1"}, "ng-1"),
        ({"alpha.eksctl.io/nodegroup-name": "ng-spot"}, "ng-spot"),
        ({"karpenter.sh/nodepool": "spot"}, "spot"),
        ({"kubernetes.azure.com/agentpool": "sys"}, "sys"),
        ({"agentpool": "nodepool1"}, "nodepool1"),
        ({"hub.jupyter.org/node-purpose": "user"}, "user"),
        ({"node.kubernetes.io/pool": "batch"}, "batch"),
        ({"node-role.kubernetes.io/control-plane": ""}, "control-plane"),
        ({"node.kubernetes.io/instance-type": "m5.large"}, "m5.large"),
        ({"beta.kubernetes.io/instance-type": "n1-standard-4"}, "n1-standard-4"),
        ({}, "default"),
    ],
)
def test_node_pool_reads_each_provisioners_label(labels: dict[str, str], pool: str) -> None:
    assert placement.node_pool(node("n", labels=labels)) == pool


def test_node_pool_prefers_the_pool_label_over_role_and_instance_type() -> None:
    labels = {
        "node.kubernetes.io/instance-type": "m5.large",
        "node-role.kubernetes.io/worker": "",
        "eks.amazonaws.com/nodegroup": "ng-1",
    }
    assert placement.node_pool(node("n", labels=labels)) == "ng-1"
    del labels["eks.amazonaws.com/nodegroup"]
    assert placement.node_pool(node("n", labels=labels)) == "worker"


def test_gke_label_wins_over_karpenter_and_aks_labels_on_the_same_node() -> None:
    labels = {
        "kubernetes.azure.com/agentpool": "sys",
        "karpenter.sh/nodepool": "spot",
        "cloud.google.com/gke-nodepool": "core-pool",
    }
    assert placement.node_pool(node("n", labels=labels)) == "core-pool"


def test_node_pool_takes_the_first_role_alphabetically_and_skips_empty_labels() -> None:
    labels = {
        "cloud.google.com/gke-nodepool": "",
        "node-role.kubernetes.io/": "",
        "node-role.kubernetes.io/worker": "",
        "node-role.kubernetes.io/infra": "",
    }
    assert placement.node_pool(node("n", labels=labels)) == "infra"


def test_node_pool_reads_the_common_provisioner_labels() -> None:
    assert placement.node_pool(node("a", labels={"eks.amazonaws.com/nodegroup": "ng-1"})) == "ng-1"
    assert placement.node_pool(node("b", labels={"karpenter.sh/nodepool": "spot"})) == "spot"
    assert placement.node_pool(node("c", labels={"kubernetes.azure.com/agentpool": "sys"})) == "sys"
    assert placement.node_pool(node("d", labels={"hub.jupyter.org/node-purpose": "core"})) == "core"
    assert placement.node_pool(node("e", labels={"node-role.kubernetes.io/worker": ""})) == "worker"
    typed = node("f", labels={"node.kubernetes.io/instance-type": "m5.large"})
    assert placement.node_pool(typed) == "m5.large"
    assert placement.node_pool(node("g")) == "default"


def test_node_without_labels_or_metadata_is_in_the_default_pool() -> None:
    assert placement.node_pool({"kind": "Node"}) == "default"


def test_pool_is_named_as_other_checks_name_it_or_by_node_when_gone() -> None:
    view = ClusterView.build(
        [
            node("gke", labels={"cloud.google.com/gke-nodepool": "core-pool"}),
            node("eks", labels={"eks.amazonaws.com/nodegroup": "ng-1"}),
            node("aks", labels={"kubernetes.azure.com/agentpool": "sys"}),
            node("role", labels={"node-role.kubernetes.io/infra": ""}),
        ]
    )
    pools = {name: placement.pool_of(view, name) for name in view.nodes}
    assert pools == {"gke": "core-pool", "eks": "ng-1", "aks": "sys", "role": "infra"}
    assert placement.pool_of(view, "deleted-by-autoscaler") == "deleted-by-autoscaler"


# -- resident pods ----------------------------------------------------------------------------


def test_only_bound_unfinished_pods_hold_resources() -> None:
    assert placement.holds_resources(pod("a", node_name="n1")) is True
    assert placement.holds_resources(pod("b", node_name="n1", phase="Pending")) is True
    assert placement.holds_resources(pod("c", node_name="n1", phase="Failed")) is False
    assert placement.holds_resources(pod("d", node_name="n1", phase="Succeeded")) is False
    assert placement.holds_resources(pod("e", phase="Pending")) is False


def test_resident_pods_are_the_nodes_own_unfinished_pods() -> None:
    bodies = [
        node("n1"),
        node("n2"),
        pod("running", node_name="n1"),
        pod("rejected", node_name="n1", phase="Failed", reason="OutOfmemory"),
        pod("done", node_name="n1", phase="Succeeded"),
        pod("elsewhere", node_name="n2"),
        pod("pending"),
    ]
    view = ClusterView.build(bodies)
    names = [body["metadata"]["name"] for body in placement.resident_pods(view, "n1")]
    assert names == ["running"]
    assert placement.resident_pods(view, "gone") == []


def test_finished_is_true_only_for_terminal_phases() -> None:
    assert [placement.finished(pod(p, phase=p)) for p in ("Pending", "Running", "Unknown")] == [
        False,
        False,
        False,
    ]
    assert placement.finished(pod("s", phase="Succeeded")) is True
    assert placement.finished(pod("f", phase="Failed")) is True
    assert placement.finished({"kind": "Pod"}) is False


def test_pod_usage_sums_containers_from_pod_metrics() -> None:
    body = pod("hub-1", namespace="jhub", containers=[container("hub"), container("sidecar")])
    metrics = pod_metrics(
        body,
        {
            "hub": {"cpu": "250m", "memory": "300Mi"},
            "sidecar": {"cpu": "1500000n", "memory": "20Mi"},
        },
    )
    view = ClusterView.build([body, metrics])
    usage = placement.pod_usage(view, body)
    assert usage is not None
    assert str(usage["memory"]) == "320Mi"
    assert usage["cpu"].milli == 252
    assert placement.pod_usage(ClusterView.build([body]), body) is None


def test_invalid_metrics_usage_raises_naming_the_pod_metrics() -> None:
    body = pod("hub-1", namespace="jhub")
    metrics = pod_metrics(body, {"main": {"memory": "lots"}})
    with pytest.raises(QuantityError, match=r"PodMetrics jhub/hub-1 containers\[name=main\]"):
        placement.pod_usage(ClusterView.build([body, metrics]), body)


# -- node selection ---------------------------------------------------------------------------

REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": list(terms)}
    return {"affinity": {"nodeAffinity": {REQUIRED: required}}}


def _expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    expression: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        expression["values"] = list(values)
    return expression


GPU_NODE = node("gpu-1", labels={"pool": "gpu", "cores": "64"})


def test_node_selector_needs_every_label() -> None:
    assert placement.selector_matches({}, GPU_NODE) is True
    assert placement.selector_matches({"nodeSelector": {"pool": "gpu"}}, GPU_NODE) is True
    mismatch = {"nodeSelector": {"pool": "gpu", "zone": "a"}}
    assert placement.selector_matches(mismatch, GPU_NODE) is False
    assert placement.affinity_matches(mismatch, GPU_NODE) is False


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (_expression("pool", "In", "gpu", "cpu"), True),
        (_expression("pool", "In", "cpu"), False),
        (_expression("pool", "NotIn", "cpu"), True),
        (_expression("zone", "NotIn", "a"), True),
        (_expression("pool", "Exists"), True),
        (_expression("zone", "Exists"), False),
        (_expression("zone", "DoesNotExist"), True),
        (_expression("cores", "Gt", "32"), True),
        (_expression("cores", "Lt", "32"), False),
        (_expression("pool", "Gt", "1"), False),  # not an integer: no match, no crash
        (_expression("pool", "Matches", "gpu"), False),
    ],
)
def test_required_node_affinity_operators(expression: dict[str, Any], expected: bool) -> None:
    spec = _required({"matchExpressions": [expression]})
    assert placement.affinity_matches(spec, GPU_NODE) is expected


def test_required_node_affinity_terms_are_ored_and_an_empty_term_matches_nothing() -> None:
    miss = {"matchExpressions": [_expression("pool", "In", "cpu")]}
    by_name = {"matchFields": [_expression("metadata.name", "In", "gpu-1")]}
    assert placement.affinity_matches(_required(miss, by_name), GPU_NODE) is True
    assert placement.affinity_matches(_required(miss), GPU_NODE) is False
    assert placement.affinity_matches(_required({}), GPU_NODE) is False


def test_tolerations_follow_tolerates_taint() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
    assert placement.tolerates({"operator": "Exists"}, taint) is True
    assert placement.tolerates({"key": "dedicated", "operator": "Exists"}, taint) is True
    assert placement.tolerates({"key": "dedicated", "value": "gpu"}, taint) is True
    assert placement.tolerates({"key": "dedicated", "value": "cpu"}, taint) is False
    wrong_effect = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    assert placement.tolerates(wrong_effect, taint) is False
    assert not placement.tolerates({"key": "other", "operator": "Exists"}, taint)
    assert (
        placement.tolerates({"key": "dedicated", "operator": "Gt", "value": "gpu"}, taint) is False
    )


def test_taint_text_reads_like_kubectl_describe() -> None:
    assert (
        placement.taint_text({"key": "a", "value": "b", "effect": "NoSchedule"}) == "a=b:NoSchedule"
    )
    assert placement.taint_text({"key": "a", "effect": "NoExecute"}) == "a:NoExecute"
