"""kube-scheduler's filter and score plugins over one pod and one node's state."""

from __future__ import annotations

from typing import Any

from kubemedic.sim.cluster.scheduler import filtering
from kubemedic.sim.cluster.scheduler.framework import Code, Status
from kubemedic.testing import bodies as b

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def _pod(
    *,
    requests: dict[str, str] | None = None,
    spec: dict[str, Any] | None = None,
    init: list[dict[str, Any]] | None = None,
    overhead: dict[str, str] | None = None,
) -> filtering.PodInfo:
    body = b.pod(
        "p",
        phase="Pending",
        containers=[b.container("main", requests=requests)],
        init_containers=init,
        overhead=overhead,
    )
    body["spec"].update(spec or {})
    return filtering.pod_info(body)


def _node(**kwargs: Any) -> filtering.NodeInfo:
    return filtering.node_info(b.node("n1", **kwargs))


def _tolerating(key: str, effect: str, **extra: Any) -> dict[str, Any]:
    return {"tolerations": [{"key": key, "operator": "Exists", "effect": effect, **extra}]}


def _affinity(*terms: dict[str, Any]) -> dict[str, Any]:
    required = {"nodeSelectorTerms": list(terms)}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}
    }


# -- NodeUnschedulable, NodeName --------------------------------------------------------------


def test_cordoned_node_rejects_pods_that_do_not_tolerate_the_unschedulable_taint() -> None:
    node = _node(unschedulable=True)
    assert filtering.node_unschedulable(_pod(), node) == Status(
        UNRESOLVABLE, ("node(s) were unschedulable",), "NodeUnschedulable"
    )
    tolerant = _pod(spec=_tolerating("node.kubernetes.io/unschedulable", "NoSchedule"))
    assert filtering.node_unschedulable(tolerant, node) is None


def test_node_name_must_match_when_the_pod_names_one() -> None:
    assert filtering.node_name(_pod(spec={"nodeName": "n1"}), _node()) is None
    status = filtering.node_name(_pod(spec={"nodeName": "n2"}), _node())
    assert status is not None and status.reasons == (
        "node(s) didn't match the requested node name",
    )


# -- TaintToleration --------------------------------------------------------------------------


def test_first_untolerated_blocking_taint_is_reported_in_node_order() -> None:
    node = _node(
        taints=[
            {"key": "soft", "effect": "PreferNoSchedule"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
            {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
            {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
        ]
    )
    not_ready = "node.kubernetes.io/not-ready"
    pod = _pod(spec=_tolerating(not_ready, "NoExecute", tolerationSeconds=300))
    assert filtering.taint_toleration(pod, node) == Status(
        UNRESOLVABLE,
        ("node(s) had untolerated taint {node.kubernetes.io/not-ready: }",),
        "TaintToleration",
    )


def test_prefer_no_schedule_taints_never_reject() -> None:
    node = _node(taints=[{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}])
    assert filtering.taint_toleration(_pod(), node) is None


def test_equal_toleration_needs_the_same_value() -> None:
    node = _node(
        taints=[{"key": "hub.jupyter.org_dedicated", "value": "user", "effect": "NoSchedule"}]
    )
    key = "hub.jupyter.org_dedicated"
    wrong = _pod(spec=_tolerating(key, "NoSchedule", operator="Equal", value="core"))
    right = _pod(spec=_tolerating(key, "NoSchedule", operator="Equal", value="user"))
    status = filtering.taint_toleration(wrong, node)
    assert status is not None
    assert status.reasons == ("node(s) had untolerated taint {hub.jupyter.org_dedicated: user}",)
    assert filtering.taint_toleration(right, node) is None


# -- NodeAffinity -----------------------------------------------------------------------------


def test_node_selector_needs_every_label() -> None:
    node = _node(labels={"pool": "user", "zone": "a"})
    assert filtering.node_affinity(_pod(spec={"nodeSelector": {"pool": "user"}}), node) is None
    status = filtering.node_affinity(_pod(spec={"nodeSelector": {"pool": "core"}}), node)
    assert status == Status(
        UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",), "NodeAffinity"
    )


def test_required_terms_are_ored_and_their_expressions_anded() -> None:
    node = _node(labels={"pool": "user", "cores": "16"})
    either = _affinity(
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["core"]}]},
        {"matchExpressions": [{"key": "pool", "operator": "Exists"},
                              {"key": "cores", "operator": "Gt", "values": ["8"]}]},
    )  # fmt: skip
    both = _affinity(
        {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["user"]},
                              {"key": "gpu", "operator": "DoesNotExist"}]},
    )  # fmt: skip
    assert filtering.node_affinity(_pod(spec=either), node) is None
    assert filtering.node_affinity(_pod(spec=both), node) is not None


def test_gt_and_lt_compare_integers_and_fail_on_missing_labels() -> None:
    node = _node(labels={"cores": "16"})
    lt = _affinity({"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["32"]}]})
    missing = _affinity({"matchExpressions": [{"key": "ram", "operator": "Lt", "values": ["3"]}]})
    assert filtering.node_affinity(_pod(spec=lt), node) is None
    assert filtering.node_affinity(_pod(spec=missing), node) is not None


def test_empty_or_invalid_term_matches_no_node() -> None:
    node = _node(labels={"pool": "user"})
    empty = _affinity({})
    invalid = _affinity({"matchExpressions": [{"key": "pool", "operator": "In", "values": []}]})
    assert filtering.node_affinity(_pod(spec=empty), node) is not None
    assert filtering.node_affinity(_pod(spec=invalid), node) is not None


def test_match_fields_select_by_node_name_and_narrow_the_prefilter() -> None:
    pinned = _affinity(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]},
    )
    pod = _pod(spec=pinned)
    assert pod.node_names == frozenset({"n1", "n7"})
    assert filtering.node_affinity(pod, _node()) is None
    other = filtering.node_info(b.node("n2"))
    assert filtering.node_affinity(pod, other) is not None
    labels_only = _pod(spec=_affinity({"matchExpressions": [{"key": "a", "operator": "Exists"}]}))
    assert labels_only.node_names is None


# -- NodeResourcesFit -------------------------------------------------------------------------


def test_node_short_of_cpu_and_memory_reports_both() -> None:
    node = _node(cpu="2", memory="4Gi")
    node.add_pod(_pod(requests={"cpu": "1500m", "memory": "3Gi"}))
    status = filtering.node_resources_fit(_pod(requests={"cpu": "1", "memory": "2Gi"}), node)
    assert status == Status(
        Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory"), "NodeResourcesFit"
    )


def test_pod_bigger_than_the_whole_node_is_still_resolvable_in_1_32() -> None:
    status = filtering.node_resources_fit(_pod(requests={"cpu": "64"}), _node(cpu="4"))
    assert status is not None and status.code == Code.UNSCHEDULABLE


def test_full_node_reports_too_many_pods_even_for_a_pod_requesting_nothing() -> None:
    node = _node(pods="2")
    node.add_pod(_pod())
    assert filtering.node_resources_fit(_pod(), node) is None
    node.add_pod(filtering.PodInfo(uid="other", namespace="ns", name="other"))
    status = filtering.node_resources_fit(_pod(), node)
    assert status is not None and status.reasons == ("Too many pods",)


def test_ephemeral_storage_and_extended_resources_count_only_when_requested() -> None:
    node = _node()
    assert filtering.node_resources_fit(_pod(requests={"cpu": "100m"}), node) is None
    status = filtering.node_resources_fit(
        _pod(requests={"ephemeral-storage": "1Gi", "nvidia.com/gpu": "1"}), node
    )
    assert status is not None
    assert status.reasons == ("Insufficient ephemeral-storage", "Insufficient nvidia.com/gpu")


def test_requests_take_the_largest_init_container_and_add_sidecars_and_overhead() -> None:
    init = [
        b.container("migrate", requests={"cpu": "2", "memory": "1Gi"}),
        {
            **b.container("proxy", requests={"cpu": "100m", "memory": "64Mi"}),
            "restartPolicy": "Always",
        },
        b.container("warm", requests={"cpu": "500m", "memory": "3Gi"}),
    ]
    pod = _pod(requests={"cpu": "1", "memory": "1Gi"}, init=init, overhead={"cpu": "250m"})
    assert pod.cpu == 2000 + 250  # the first init container needs more than the rest together
    assert pod.memory == (3 << 30) + (64 << 20)  # "warm" runs beside the proxy sidecar


def test_limits_stand_in_for_missing_requests_and_scores_use_non_zero_defaults() -> None:
    body = b.pod("p", phase="Pending", containers=[b.container("main", limits={"memory": "1Gi"})])
    pod = filtering.pod_info(body)
    assert (pod.cpu, pod.memory) == (0, 1 << 30)
    assert pod.nonzero_cpu == filtering.DEFAULT_MILLI_CPU
    assert pod.nonzero_memory == 1 << 30


def test_node_totals_follow_pods_added_and_removed() -> None:
    node = _node()
    pod = _pod(requests={"cpu": "300m", "memory": "1Gi"})
    node.add_pod(pod)
    node.add_pod(pod)  # the informer seeing an assumed pod again changes nothing
    assert (node.cpu, node.memory, len(node.pods)) == (300, 1 << 30, 1)
    node.remove_pod(pod.uid)
    assert (node.cpu, node.memory, len(node.pods)) == (0, 0, 0)


# -- all filters ------------------------------------------------------------------------------


def test_first_failing_filter_wins_unless_all_filters_run() -> None:
    taint = {"key": "dedicated", "value": "core", "effect": "NoSchedule"}
    node = _node(cpu="1", labels={"pool": "core"}, taints=[taint])
    pod = _pod(requests={"cpu": "2"}, spec={"nodeSelector": {"pool": "user"}})
    first = filtering.run_filters(pod, node)
    assert first is not None and first.plugin == "TaintToleration"
    every = filtering.run_filters(pod, node, run_all=True)
    assert every is not None
    assert every.code == UNRESOLVABLE
    assert every.reasons == (
        "node(s) had untolerated taint {dedicated: core}",
        "node(s) didn't match Pod's node affinity/selector",
        "Insufficient cpu",
    )


# -- scores -----------------------------------------------------------------------------------


def test_emptier_and_better_balanced_node_scores_higher() -> None:
    busy, idle = filtering.node_info(b.node("busy")), filtering.node_info(b.node("idle"))
    busy.add_pod(_pod(requests={"cpu": "3", "memory": "2Gi"}))
    pod = _pod(requests={"cpu": "500m", "memory": "1Gi"})
    scores = filtering.score(pod, [busy, idle])
    # idle: cpu (4000-500)/4000 -> 87, memory (16-1)/16 -> 93, mean 90; fractions 0.125 and
    # 0.0625 -> balance 96. busy: 12 and 81 -> 46; 0.875 and 0.1875 -> 65.
    assert scores == [46 + 65, 90 + 96]


def test_untolerated_prefer_no_schedule_taints_lower_the_score() -> None:
    plain = filtering.node_info(b.node("plain"))
    soft = filtering.node_info(b.node("soft", taints=[{"key": "x", "effect": "PreferNoSchedule"}]))
    scores = filtering.score(_pod(), [plain, soft])
    assert scores[0] - scores[1] == 300
