"""``pinned-node-name``: incident 1's pinned Deployment, predicted before the storm."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kubemedic.checks.findings import Finding, Severity
from kubemedic.checks.pinned import PinnedNodeNameConfig, pinned_node_name
from kubemedic.checks.registry import run_checks
from kubemedic.model import objects
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import ClusterView
from tests.factories import container, deployment, managed_entry, node, pod, replicaset, stamp

NOW = objects.parse_time(stamp(timedelta(minutes=30)))
NODE = "minikube-dev1-m02"
NODE_NAME_FIELDS = {"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}}


def nginx(**options: Any) -> dict[str, Any]:
    """The seed's Deployment: 12 x (100m, 800Mi), pinned by a kubectl edit 5 minutes in."""
    options.setdefault("replicas", 12)
    options.setdefault("node_name", NODE)
    options.setdefault(
        "managed",
        [
            managed_entry(manager="argocd-controller", fields={"f:spec": {"f:replicas": {}}}),
            managed_entry(
                manager="kubectl-edit", fields=NODE_NAME_FIELDS, time=timedelta(minutes=5)
            ),
        ],
    )
    resources = {"cpu": "100m", "memory": "800Mi"}
    return deployment(
        "nginx-deployment",
        containers=[container("nginx", requests=resources, limits=resources)],
        **options,
    )


def minikube_node(**options: Any) -> dict[str, Any]:
    """The seed's worker: 8 CPUs and 8027168Ki (~7.66 GiB) of memory."""
    return node(NODE, cpu="8", memory="8027168Ki", **options)


def run(*bodies: dict[str, Any], config: PinnedNodeNameConfig | None = None) -> list[Finding]:
    view = ClusterView.build(bodies, at=NOW)
    return pinned_node_name(view, config or PinnedNodeNameConfig())


def other_pod(name: str = "metrics-agent", **requests: str) -> dict[str, Any]:
    wanted = requests or {"cpu": "100m", "memory": "1Gi"}
    return pod(
        name, namespace="kube-system", node_name=NODE, containers=[container(requests=wanted)]
    )


def test_incident_12_replicas_of_800mi_on_an_8gib_node_is_critical_with_8_fitting() -> None:
    app = nginx()
    rs = replicaset(app)
    own = [pod(f"nginx-deployment-5d8f7c9b4-{i}", owner=rs, node_name=NODE) for i in range(3)]
    for running in own:
        running["spec"]["containers"][0]["resources"]["requests"] = {"memory": "800Mi"}

    [finding] = run(minikube_node(), app, rs, other_pod(), *own)

    assert finding.severity is Severity.CRITICAL
    assert finding.object.kind == "Deployment"
    assert finding.cause == "pinned-node-name:default/Deployment/nginx-deployment"
    evidence = finding.evidence
    # 8027168Ki - 1Gi (another pod) = 6978592Ki free; its own 3 running replicas are not counted.
    assert evidence["nodeName"] == NODE
    assert evidence["replicas"] == 12
    assert evidence["fitsReplicas"] == 8
    assert evidence["excessReplicas"] == 4
    assert evidence["limitingResource"] == "memory"
    assert evidence["requestsPerReplica"] == {"cpu": "100m", "memory": "800Mi"}
    assert evidence["nodeFree"] == {"cpu": "7900m", "memory": "6978592Ki", "pods": "109"}
    assert evidence["admissionBlockers"] == []
    assert evidence["nodeProblems"] == []
    assert evidence["setBy"] == {
        "manager": "kubectl-edit",
        "operation": "Update",
        "time": stamp(timedelta(minutes=5)),
    }
    assert finding.first_seen == objects.parse_time(stamp(timedelta(minutes=5)))
    assert finding.last_seen == NOW
    assert "only 8 fit" in finding.message
    assert "reject 4 with OutOfmemory" in finding.message
    assert "800Mi each" in finding.message


def test_terminal_pods_on_the_node_free_their_requests() -> None:
    failed = other_pod("old-job")
    failed["status"] = {"phase": "Succeeded"}

    [finding] = run(minikube_node(), nginx(), failed)

    assert finding.evidence["fitsReplicas"] == 9  # 8027168Ki / 800Mi = 9.8
    assert finding.evidence["excessReplicas"] == 3


def test_replicas_that_all_fit_are_a_warning_because_nodename_bypasses_the_scheduler() -> None:
    [finding] = run(minikube_node(), nginx(replicas=2))

    assert finding.severity is Severity.WARNING
    assert finding.evidence["fitsReplicas"] == 9
    assert finding.evidence["excessReplicas"] == 0
    assert "all fit for now" in finding.message


def test_cpu_is_counted_in_millicores() -> None:
    small = node(NODE, cpu="2", memory="64Gi")
    app = deployment(
        "api",
        replicas=5,
        node_name=NODE,
        containers=[container("api", requests={"cpu": "500m", "memory": "64Mi"})],
    )

    [finding] = run(small, app, other_pod(cpu="250m"))

    assert finding.evidence["fitsReplicas"] == 3  # 1750m free / 500m
    assert finding.evidence["limitingResource"] == "cpu"
    assert finding.severity is Severity.CRITICAL


def test_pod_count_limits_a_template_that_requests_nothing() -> None:
    tiny = node(NODE, pods="3")
    app = deployment("sleeper", replicas=4, node_name=NODE)

    [finding] = run(tiny, app, other_pod())

    assert finding.evidence["requestsPerReplica"] == {}
    assert finding.evidence["fitsReplicas"] == 2
    assert finding.evidence["limitingResource"] == "pods"


def test_extended_resources_the_node_does_not_advertise_are_ignored_like_the_kubelet() -> None:
    app = nginx(replicas=2)
    app["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"][
        "example.com/dongle"
    ] = "1"

    [finding] = run(minikube_node(), app)

    assert finding.evidence["fitsReplicas"] == 9
    assert finding.evidence["requestsPerReplica"]["example.com/dongle"] == "1"


def test_template_without_nodename_is_silent() -> None:
    app = nginx(node_name=None)
    healthy = [pod(f"p{i}", owner=replicaset(app), node_name=NODE) for i in range(2)]

    assert run(minikube_node(), app, replicaset(app), *healthy) == []


def test_replicaset_of_a_reported_deployment_is_not_reported_twice() -> None:
    app = nginx()

    findings = run(minikube_node(), app, replicaset(app))

    assert [f.object.kind for f in findings] == ["Deployment"]


def test_replicaset_whose_deployment_is_not_in_the_view_is_reported_itself() -> None:
    [finding] = run(minikube_node(), replicaset(nginx()))

    assert finding.object.kind == "ReplicaSet"
    assert finding.cause == "pinned-node-name:default/ReplicaSet/nginx-deployment-5d8f7c9b4"
    assert finding.evidence["fitsReplicas"] == 9


def test_daemonset_with_nodename_is_excluded_because_it_runs_one_pod_there() -> None:
    daemon = nginx()
    daemon["kind"] = "DaemonSet"

    assert run(minikube_node(), daemon) == []


def test_statefulset_and_job_templates_are_checked() -> None:
    stateful = nginx()
    stateful["kind"] = "StatefulSet"
    job = nginx()
    job["kind"], job["apiVersion"] = "Job", "batch/v1"
    job["metadata"]["name"] = "batch"
    job["spec"] = {
        "parallelism": 4,
        "completions": 10,
        "template": job["spec"]["template"],
    }
    job["status"] = {"succeeded": 8}

    findings = {f.object.kind: f for f in run(minikube_node(), stateful, job)}

    assert findings["StatefulSet"].severity is Severity.CRITICAL
    assert findings["Job"].evidence["replicas"] == 2  # only 2 completions are still missing
    assert findings["Job"].severity is Severity.WARNING


def test_scaled_to_zero_is_info_and_can_be_left_out() -> None:
    [finding] = run(minikube_node(), nginx(replicas=0))

    assert finding.severity is Severity.INFO
    assert (
        run(
            minikube_node(),
            nginx(replicas=0),
            config=PinnedNodeNameConfig(report_zero_replicas=False),
        )
        == []
    )


def test_node_missing_from_the_snapshot_is_a_warning_with_unknown_fit() -> None:
    [finding] = run(nginx())

    assert finding.severity is Severity.WARNING
    assert finding.evidence["fitsReplicas"] is None
    assert finding.evidence["excessReplicas"] is None
    assert finding.evidence["nodeProblems"] == [f"node {NODE} is not in the snapshot"]


def test_cordoned_notready_tainted_node_is_reported_as_bypassed() -> None:
    sick = minikube_node(
        ready="Unknown",
        unschedulable=True,
        taints=[{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}],
    )

    [finding] = run(sick, nginx(replicas=2))

    assert finding.severity is Severity.WARNING
    assert finding.evidence["nodeProblems"] == [
        "node is NotReady (Ready=Unknown)",
        "node is cordoned (spec.unschedulable), which nodeName bypasses",
        "taint dedicated=infra:NoSchedule is bypassed by nodeName",
    ]


def test_untolerated_noexecute_taint_rejects_every_replica() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}

    [finding] = run(minikube_node(taints=[taint]), nginx(replicas=2))

    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["admissionBlockers"] == ["TaintToleration"]
    assert finding.evidence["fitsReplicas"] == 0
    assert "taint dedicated=gpu:NoExecute is not tolerated" in finding.message


def test_tolerated_and_default_tolerated_noexecute_taints_do_not_block() -> None:
    taints = [
        {"key": "dedicated", "value": "gpu", "effect": "NoExecute"},
        {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"},
    ]
    app = nginx(replicas=2)
    app["spec"]["template"]["spec"]["tolerations"] = [{"key": "dedicated", "operator": "Exists"}]

    [finding] = run(minikube_node(taints=taints), app)

    assert finding.evidence["admissionBlockers"] == []
    assert finding.severity is Severity.WARNING


def test_node_selector_or_required_affinity_mismatch_rejects_every_replica() -> None:
    by_selector = nginx(replicas=1)
    by_selector["spec"]["template"]["spec"]["nodeSelector"] = {"disktype": "ssd"}
    by_affinity = nginx(replicas=1)
    by_affinity["metadata"]["name"] = "by-affinity"
    by_affinity["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["16"]}]}
                ]
            }
        }
    }
    labelled = minikube_node(labels={"disktype": "hdd", "cores": "8"})

    findings = run(labelled, by_selector, by_affinity)

    assert [f.evidence["admissionBlockers"] for f in findings] == [["NodeAffinity"]] * 2
    assert all(f.severity is Severity.CRITICAL for f in findings)


def test_matching_affinity_does_not_block() -> None:
    app = nginx(replicas=1)
    app["spec"]["template"]["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]},
                ]
            }
        }
    }

    [finding] = run(minikube_node(), app)

    assert finding.evidence["admissionBlockers"] == []


def test_odd_fields_read_as_absent() -> None:
    app = nginx(managed=None)
    app["spec"]["replicas"] = "twelve"
    app["metadata"]["managedFields"] = "not a list"
    bare = minikube_node()
    del bare["status"]

    [finding] = run(bare, app)

    assert finding.evidence["replicas"] == 1
    assert finding.evidence["setBy"] is None
    assert finding.evidence["fitsReplicas"] is None
    assert "node reports no allocatable resources" in finding.evidence["nodeProblems"]
    assert finding.first_seen == NOW


def test_invalid_quantity_in_the_template_names_the_workload_and_field() -> None:
    app = nginx()
    app["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "lots"
    view = ClusterView.build([minikube_node(), app], at=NOW)

    with pytest.raises(QuantityError, match=r"Deployment default/nginx-deployment pod template"):
        pinned_node_name(view, PinnedNodeNameConfig())
    [finding] = run_checks(view, names=["pinned-node-name"])
    assert finding.check == "invalid-input"
    assert "resources.requests.memory" in finding.message
