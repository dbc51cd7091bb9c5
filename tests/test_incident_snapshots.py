"""The bundled snapshots reproduce INCIDENTS.md, and the checks find each incident in them.

Every snapshot is read the way a user's dump is read (``load_snapshot`` on the directory), then
all checks run. Each incident must raise its findings with the incident's own numbers; the
healthy control must raise nothing at warning or above. The committed files must be exactly
what ``kubemedic.testing.incidents`` generates, so data and generator cannot drift apart.
"""

from __future__ import annotations

import functools
import gzip
import importlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from kubemedic.checks import Finding, Severity, run_checks
from kubemedic.model.view import ClusterView
from kubemedic.snapshot.loading import load_snapshot
from kubemedic.testing import incidents
from tests.incident3 import FIT_ERROR_REASONS

CHECK_MODULES = (
    "overcommit", "criticality", "underrequested", "neighbours", "pinned", "storm", "outofband",
    "notready", "unschedulable", "burst", "oom", "evicted", "probes",
)  # fmt: skip
for _module in CHECK_MODULES:
    importlib.import_module(f"kubemedic.checks.{_module}")

ROOT = incidents.DEFAULT_ROOT
NAMES = [snapshot.name for snapshot in incidents.SNAPSHOTS]


@functools.cache
def scan(name: str) -> tuple[ClusterView, tuple[Finding, ...]]:
    view = load_snapshot(ROOT / name).view()
    return view, tuple(run_checks(view))


def one(
    findings: Iterable[Finding], check: str, name: str | None = None, *, namespace: str = ""
) -> Finding:
    chosen = [
        f
        for f in findings
        if f.check == check
        and (name is None or f.object.name == name)
        and (not namespace or f.object.namespace == namespace)
    ]
    assert len(chosen) == 1, f"expected one {check} finding about {name}, got {chosen}"
    return chosen[0]


def serious(findings: Iterable[Finding]) -> set[str]:
    return {f.check for f in findings if f.severity >= Severity.WARNING}


def _plain(name: str, content: bytes) -> bytes:
    return gzip.decompress(content) if name.endswith(".gz") else content


# -- the files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("snapshot", incidents.SNAPSHOTS, ids=NAMES)
def test_committed_snapshot_is_exactly_what_the_generator_writes(
    snapshot: incidents.Snapshot,
) -> None:
    expected = incidents.render(snapshot)
    directory = ROOT / snapshot.name
    assert sorted(p.name for p in directory.iterdir()) == sorted(expected)
    for name, content in expected.items():
        committed = (directory / name).read_bytes()
        assert _plain(name, committed) == _plain(name, content), (
            f"{directory / name} is stale: run PYTHONPATH=src python -m kubemedic.testing.incidents"
        )


def test_generator_writes_identical_bytes_every_time(tmp_path: Path) -> None:
    first = incidents.write_snapshots(tmp_path / "a")
    second = incidents.write_snapshots(tmp_path / "b")
    assert [p.relative_to(tmp_path / "a") for p in first] == [
        p.relative_to(tmp_path / "b") for p in second
    ]
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_snapshots_exercise_json_gzip_and_multi_document_yaml() -> None:
    names = {d: sorted(p.name for p in (ROOT / d).iterdir()) for d in NAMES}
    assert "pods.json.gz" in names["1-live-edit-storm"]
    assert names["2-node-repair"] == [
        "ABOUT", "events.yaml", "metrics.yaml", "nodes.yaml", "pods.yaml", "workloads.yaml",
    ]  # fmt: skip
    nodes = (ROOT / "2-node-repair" / "nodes.yaml").read_text()
    assert nodes.startswith("# kubectl get nodes")
    assert nodes.count("\n---\n") == 11
    assert all(n.endswith(".json") for n in names["4-healthy-control"] if n != "ABOUT")


def test_demo_shows_the_incidents_in_order_and_the_control_last() -> None:
    assert sorted(NAMES) == NAMES
    assert NAMES[-1] == "4-healthy-control"
    for snapshot in incidents.SNAPSHOTS:
        title = (ROOT / snapshot.name / "ABOUT").read_text().splitlines()[0]
        assert title == snapshot.title


@pytest.mark.parametrize("name", NAMES)
def test_every_object_is_of_a_kind_kubemedic_reads(name: str) -> None:
    loaded = load_snapshot(ROOT / name)
    assert not loaded.unknown_kinds
    assert [p.name for p in loaded.skipped_files] == ["ABOUT"]
    kinds = {body["kind"] for body in loaded.bodies}
    assert {"Node", "Pod", "Deployment", "ReplicaSet", "DaemonSet", "NodeMetrics"} <= kinds


def test_object_counts_match_the_stories() -> None:
    counts = {}
    for name in NAMES:
        view, _ = scan(name)
        counts[name] = (len(view.nodes), len(view.pods))
    assert counts["1-live-edit-storm"] == (6, 244)
    assert counts["2-node-repair"] == (11, 79)
    assert counts["3-hub-eviction"][0] == 126
    assert counts["4-healthy-control"][0] == 7


# -- incident 1: the live edit GitOps never saw -------------------------------------------------


def test_live_edit_storm_pins_twelve_replicas_where_one_fits() -> None:
    view, findings = scan("1-live-edit-storm")
    finding = one(findings, "pinned-node-name", "api-gateway")
    evidence = finding.evidence
    assert finding.severity is Severity.CRITICAL
    assert evidence["nodeName"].startswith("gke-apigw-stg-apigw-pool-")
    assert evidence["nodeName"] in view.nodes
    assert (evidence["replicas"], evidence["fitsReplicas"], evidence["excessReplicas"]) == (
        12, 1, 11,
    )  # fmt: skip
    assert evidence["requestsPerReplica"]["memory"] == "800Mi"
    assert evidence["limitingResource"] == "memory"
    assert evidence["setBy"] == {
        "manager": "kubectl-edit", "operation": "Update", "time": "2024-12-10T05:04:18Z",
    }  # fmt: skip
    assert finding.cause == "pinned-node-name:gateway/Deployment/api-gateway"


def test_live_edit_storm_names_the_kubectl_edit_argo_cd_did_not_see() -> None:
    _, findings = scan("1-live-edit-storm")
    finding = one(findings, "out-of-band-edit", "api-gateway")
    evidence = finding.evidence
    assert finding.severity is Severity.CRITICAL
    assert (evidence["manager"], evidence["operation"]) == ("kubectl-edit", "Update")
    assert evidence["time"] == "2024-12-10T05:04:18Z"
    assert evidence["fieldPaths"] == ["spec.template.spec.nodeName"]
    assert evidence["gitops"]["tool"] == "argocd"
    assert evidence["gitops"]["app"] == "api-gateway"
    assert finding.cause == "pinned-node-name:gateway/Deployment/api-gateway"


def test_live_edit_storm_is_a_live_failed_pod_storm_with_the_kubelets_numbers() -> None:
    view, findings = scan("1-live-edit-storm")
    finding = one(findings, "failed-pod-storm", "api-gateway")
    evidence = finding.evidence
    node = evidence["pinnedNodeName"]
    allocatable = view.nodes[node]["status"]["allocatable"]["memory"]
    assert finding.severity is Severity.CRITICAL
    assert evidence["failedPods"] == 200
    assert evidence["reasons"] == {"OutOfmemory": 200}
    assert evidence["nodes"] == {node: 200}
    assert evidence["perMinute"] >= 30
    assert evidence["insufficientResource"]["resource"] == "memory"
    assert evidence["insufficientResource"]["requested"] == 800 * 1024**2
    assert (
        evidence["insufficientResource"]["capacity"] == int(allocatable.removesuffix("Ki")) * 1024
    )
    assert evidence["insufficientResource"]["shortBy"] > 0
    assert evidence["lastMessage"].startswith(
        "Pod was rejected: Node didn't have enough resource: memory, requested: 838860800, used: "
    )
    running = [
        p
        for p in view.pods_on(node)
        if p["metadata"].get("labels", {}).get("app.kubernetes.io/name") == "api-gateway"
        and p["status"]["phase"] == "Running"
    ]
    assert len(running) == 1
    assert finding.cause == "pinned-node-name:gateway/Deployment/api-gateway"


def test_live_edit_storm_raises_only_the_three_linked_findings() -> None:
    _, findings = scan("1-live-edit-storm")
    assert serious(findings) == {"pinned-node-name", "out-of-band-edit", "failed-pod-storm"}
    assert {f.cause for f in findings} == {"pinned-node-name:gateway/Deployment/api-gateway"}


# -- incident 2: repairing worker nodes ---------------------------------------------------------


def test_node_repair_unreachable_node_is_past_the_ten_minute_repair_threshold() -> None:
    view, findings = scan("2-node-repair")
    unreachable = [f for f in findings if f.check == "node-not-ready" and f.evidence.get(
        "causeClass") == "kubelet-stopped-posting"]  # fmt: skip
    assert len(unreachable) == 1
    finding = unreachable[0]
    evidence = finding.evidence
    assert finding.severity is Severity.CRITICAL
    assert (evidence["status"], evidence["reason"]) == ("Unknown", "NodeStatusUnknown")
    assert evidence["message"] == "Kubelet stopped posting node status."
    assert evidence["notReadyForSeconds"] == 12 * 60 + 5
    assert evidence["notReadyForSeconds"] >= 600
    assert "node.kubernetes.io/unreachable:NoExecute" in evidence["taints"]
    assert (
        view.nodes[finding.object.name]["metadata"]["annotations"]["cluster.x-k8s.io/owner-kind"]
        == "MachineSet"
    )


def test_node_repair_runtime_down_node_is_reported_but_not_yet_due_for_repair() -> None:
    _, findings = scan("2-node-repair")
    runtime = [f for f in findings if f.check == "node-not-ready" and f.evidence.get(
        "causeClass") == "runtime-not-ready"]  # fmt: skip
    assert len(runtime) == 1
    evidence = runtime[0].evidence
    assert runtime[0].severity is Severity.WARNING
    assert evidence["status"] == "False"
    assert evidence["message"].startswith("[container runtime is down, PLEG is not healthy")
    assert evidence["notReadyForSeconds"] == 4 * 60 + 2
    assert evidence["heartbeatAgeSeconds"] == 0
    assert "node.kubernetes.io/not-ready:NoExecute" in evidence["taints"]


def test_node_repair_two_of_eleven_nodes_do_not_trigger_the_repair_brake() -> None:
    _, findings = scan("2-node-repair")
    assert [f.object.kind for f in findings if f.check == "node-not-ready"] == ["Node", "Node"]
    assert serious(findings) == {"node-not-ready"}


# -- incident 3: the monitoring that evicted the hub --------------------------------------------


def _core_node(view: ClusterView) -> str:
    (pod,) = [p for p in view.pods if p["metadata"]["name"].startswith("support-prometheus-server")]
    return str(pod["spec"]["nodeName"])


def test_hub_eviction_core_node_is_at_93_percent_requests_and_124_percent_limits() -> None:
    view, findings = scan("3-hub-eviction")
    finding = one(findings, "node-memory-overcommit", _core_node(view))
    evidence = finding.evidence
    assert evidence["nodePool"] == "core-pool"
    assert evidence["requestsPercent"] == 93.0
    assert evidence["limitsPercent"] == 124.0
    assert finding.severity is Severity.CRITICAL
    assert evidence["topConsumers"][0]["request"] == "20Gi"
    assert evidence["topConsumers"][0]["limit"] == "22Gi"
    assert (
        finding.cause == "memory-overcommit:support/Deployment/support-prometheus-server@core-pool"
    )


def test_hub_eviction_prometheus_is_a_memory_hog_beside_the_hub() -> None:
    view, findings = scan("3-hub-eviction")
    finding = one(findings, "memory-hog-neighbour")
    evidence = finding.evidence
    assert finding.severity is Severity.CRITICAL
    assert evidence["node"] == _core_node(view)
    assert evidence["hog"]["owner"] == "Deployment support/support-prometheus-server"
    assert evidence["hog"]["request"] == "20Gi"
    assert [c["owner"] for c in evidence["critical"]] == ["Deployment prod/hub"]
    assert evidence["critical"][0]["request"] == "128Mi"
    assert evidence["nodeCanRunOut"] is True
    assert len(evidence["evictedBeforeHog"]) == 1
    assert finding.cause == "memory-hog:support/Deployment/support-prometheus-server@core-pool"


def test_hub_eviction_hub_requests_10m_cpu_and_128mi_memory() -> None:
    _, findings = scan("3-hub-eviction")
    finding = one(findings, "critical-pod-underrequested", "hub", namespace="prod")
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["requests"] == {"cpu": "10m", "memory": "128Mi"}
    assert finding.evidence["role"] == "jupyterhub"


def test_hub_eviction_one_hundred_nodes_arrive_within_one_minute() -> None:
    _, findings = scan("3-hub-eviction")
    finding = one(findings, "node-scale-burst")
    evidence = finding.evidence
    assert finding.severity is Severity.CRITICAL
    assert evidence["nodesAdded"] == 100
    assert evidence["spanSeconds"] <= 60
    assert (evidence["nodesBefore"], evidence["nodesAfter"]) == (26, 126)
    assert evidence["nodePools"] == {"dask-medium": 100}
    assert evidence["loadGrowsWith"][0]["name"] == "support-prometheus-server"
    assert evidence["loadGrowsWith"][0]["pods"][0]["pod"].startswith(
        "support/support-prometheus-server-"
    )


def test_hub_eviction_dask_workers_carry_the_incidents_failed_scheduling_message() -> None:
    _, findings = scan("3-hub-eviction")
    finding = one(findings, "unschedulable-pods")
    evidence = finding.evidence
    assert evidence["pods"] == 100
    assert evidence["nodesTotal"] == 126
    assert evidence["reasons"] == FIT_ERROR_REASONS
    assert evidence["lastMessage"].startswith("0/126 nodes are available: 14 node(s) didn't")


def test_hub_eviction_hub_failed_its_liveness_probe_30_times_in_5_minutes() -> None:
    _, findings = scan("3-hub-eviction")
    finding = one(findings, "probe-restarts", "hub", namespace="prod")
    evidence = finding.evidence
    assert (evidence["container"], evidence["failures"], evidence["kills"]) == ("hub", 30, 1)
    assert evidence["pod"].startswith("prod/hub-")
    assert evidence["pods"] == [evidence["pod"]]
    assert evidence["window"]["seconds"] <= 300
    assert evidence["probe"]["periodSeconds"] == 10
    assert evidence["probe"]["failureThreshold"] == 30
    assert evidence["cpuRequest"] == "10m"
    assert evidence["cpuStarvationLikely"] is True


def test_hub_eviction_hub_was_evicted_while_prometheus_stayed_under_its_request() -> None:
    _, findings = scan("3-hub-eviction")
    finding = one(findings, "evicted", "hub", namespace="prod")
    evidence = finding.evidence
    assert (evidence["kind"], evidence["resource"]) == ("node-pressure", "memory")
    assert evidence["pod"].startswith("prod/hub-")
    assert evidence["pods"] == [evidence["pod"]]
    assert evidence["threshold"] == "100Mi"
    assert evidence["biggestConsumer"]["name"] == "hub"
    assert evidence["biggestConsumer"]["request"] == "128Mi"
    top = evidence["nodeTopConsumer"]
    assert (top["container"], top["request"]) == ("prometheus-server", "20Gi")
    assert top["pod"].startswith("support/support-prometheus-server-")
    assert finding.cause == "eviction:memory@core-pool"


def test_hub_eviction_prometheus_was_oom_killed_at_its_22gi_limit() -> None:
    _, findings = scan("3-hub-eviction")
    finding = one(findings, "oom-killed", "support-prometheus-server")
    evidence = finding.evidence
    assert (evidence["container"], evidence["reason"], evidence["exitCode"]) == (
        "prometheus-server", "OOMKilled", 137,
    )  # fmt: skip
    assert (evidence["memoryRequest"], evidence["memoryLimit"]) == ("20Gi", "22Gi")
    assert evidence["pod"].startswith("support/support-prometheus-server-")
    assert [kill["pod"] for kill in evidence["pods"]] == [evidence["pod"]]
    assert evidence["likelyOOM"] is False


def test_hub_eviction_findings_share_the_prometheus_cause() -> None:
    _, findings = scan("3-hub-eviction")
    causes = {f.cause for f in findings}
    assert "memory-hog:support/Deployment/support-prometheus-server@core-pool" in causes
    assert "memory-overcommit:support/Deployment/support-prometheus-server@core-pool" in causes


# -- the healthy control ------------------------------------------------------------------------


def test_healthy_control_raises_nothing_at_warning_or_above() -> None:
    _, findings = scan("4-healthy-control")
    assert [f.to_json() for f in findings if f.severity >= Severity.WARNING] == []


def test_healthy_control_has_the_incidents_workloads_done_right() -> None:
    view, findings = scan("4-healthy-control")
    assert findings == ()
    gateway = view.workload("Deployment", "gateway", "api-gateway")
    assert gateway is not None
    assert "nodeName" not in gateway["spec"]["template"]["spec"]
    managers = {e["manager"] for e in gateway["metadata"]["managedFields"]}
    assert managers == {"argocd-controller", "kube-controller-manager"}
    assert all(p["status"]["phase"] == "Running" for p in view.pods)
    assert len(view.pod_metrics) == len(view.pods)
