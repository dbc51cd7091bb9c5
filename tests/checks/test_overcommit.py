"""node-memory-overcommit / node-cpu-overcommit: pods' requests and limits against allocatable."""

from __future__ import annotations

import json

import pytest

from kubemedic.checks import overcommit
from kubemedic.checks.findings import Severity
from kubemedic.checks.overcommit import CpuOvercommitConfig, MemoryOvercommitConfig
from kubemedic.checks.registry import REGISTRY, run_checks
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import ClusterView
from tests.factories import container, deployed, node, pod
from tests.incident3 import prometheus_beside_hub


def incident_core_node() -> list[dict]:
    """Incident 3's core node: 25Gi allocatable, requests 93%, limits 124%."""
    bodies = prometheus_beside_hub()
    bodies += deployed(
        "support-ingress-nginx-controller",
        namespace="support",
        node_name="core-1",
        requests={"cpu": "100m", "memory": "1Gi"},
        limits={"memory": "2Gi"},
    )
    bodies += deployed(
        "support-grafana",
        namespace="support",
        node_name="core-1",
        requests={"cpu": "100m", "memory": "2112Mi"},
        limits={"memory": "5632Mi"},
    )
    return bodies


def memory_findings(bodies: list[dict], config: MemoryOvercommitConfig | None = None):
    return overcommit.node_memory_overcommit(
        ClusterView.build(bodies), config or MemoryOvercommitConfig()
    )


def cpu_findings(bodies: list[dict], config: CpuOvercommitConfig | None = None):
    return overcommit.node_cpu_overcommit(
        ClusterView.build(bodies), config or CpuOvercommitConfig()
    )


def test_incident_core_node_is_critical_at_93_percent_requests_and_124_percent_limits() -> None:
    [finding] = memory_findings(incident_core_node())
    assert finding.severity is Severity.CRITICAL
    assert finding.object.kind == "Node" and finding.object.name == "core-1"
    evidence = finding.evidence
    assert evidence["requestsPercent"] == 93.0
    assert evidence["limitsPercent"] == 124.0
    assert evidence["allocatable"] == "25Gi"
    assert evidence["requests"] == "23808Mi"
    assert evidence["limits"] == "31Gi"
    assert evidence["pods"] == 5
    assert evidence["unboundedPods"] == 0
    assert evidence["nodePool"] == "core-pool"
    assert evidence["node"] == "core-1"
    top = evidence["topConsumers"][0]
    assert top == {
        "pod": "support/support-prometheus-server-5d8f7c9b4-x7k2p",
        "owner": "Deployment support/support-prometheus-server",
        "request": "20Gi",
        "limit": "22Gi",
        "requestsPercent": 80.0,
        "limitsPercent": 88.0,
        "unbounded": False,
    }
    assert [c["owner"] for c in evidence["topConsumers"][1:]] == [
        "Deployment support/support-grafana",
        "Deployment support/support-ingress-nginx-controller",
        "Deployment jhub/hub",
        "Deployment jhub/proxy",
    ]
    assert (
        finding.cause == "memory-overcommit:support/Deployment/support-prometheus-server@core-pool"
    )
    assert "93.0%" in finding.message and "124.0%" in finding.message
    assert "22Gi limit" in finding.message
    json.dumps(finding.to_json())


def test_incident_cause_is_the_same_when_snapshot_holds_only_pods() -> None:
    only_pods = [b for b in incident_core_node() if b["kind"] in ("Node", "Pod")]
    [finding] = memory_findings(only_pods)
    assert (
        finding.cause == "memory-overcommit:support/Deployment/support-prometheus-server@core-pool"
    )


def test_cpu_is_silent_on_the_incident_node() -> None:
    assert cpu_findings(incident_core_node()) == []


def test_healthy_node_is_silent() -> None:
    bodies = [node("n1", memory="16Gi")]
    bodies += deployed(
        "web", namespace="web", node_name="n1", requests={"memory": "4Gi"}, limits={"memory": "8Gi"}
    )
    assert memory_findings(bodies) == []
    assert cpu_findings(bodies) == []


def test_requests_at_90_percent_warn() -> None:
    bodies = [node("n1", memory="10Gi")]
    bodies += deployed(
        "db", namespace="db", node_name="n1", requests={"memory": "9Gi"}, limits={"memory": "9Gi"}
    )
    [finding] = memory_findings(bodies)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["requestsPercent"] == 90.0


def test_limits_just_over_100_percent_warn_and_at_120_are_critical() -> None:
    bodies = [node("n1", memory="10Gi")]
    bodies += deployed(
        "a", namespace="x", node_name="n1", requests={"memory": "1Gi"}, limits={"memory": "11Gi"}
    )
    [finding] = memory_findings(bodies)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["limitsPercent"] == 110.0
    bodies = [node("n1", memory="10Gi")]
    bodies += deployed(
        "a", namespace="x", node_name="n1", requests={"memory": "1Gi"}, limits={"memory": "12Gi"}
    )
    [finding] = memory_findings(bodies)
    assert finding.severity is Severity.CRITICAL


def test_thresholds_are_configurable_and_can_be_disabled() -> None:
    config = MemoryOvercommitConfig(limits_critical_percent=None, limits_warning_percent=150.0)
    [finding] = memory_findings(incident_core_node(), config)
    assert finding.severity is Severity.WARNING  # only the 93% requests remain
    assert finding.evidence["thresholds"]["limitsCriticalPercent"] is None


def test_failed_succeeded_and_unbound_pods_are_not_counted() -> None:
    bodies = [node("n1", memory="8Gi")]
    bodies += deployed("api", namespace="gw", node_name="n1", requests={"memory": "800Mi"})
    rs = bodies[2]
    for index in range(20):
        bodies.append(
            pod(
                f"api-5d8f7c9b4-f{index:03d}",
                namespace="gw",
                node_name="n1",
                owner=rs,
                phase="Failed",
                reason="OutOfmemory",
                containers=[container("api", requests={"memory": "800Mi"})],
            )
        )
    bodies.append(
        pod(
            "job-1",
            node_name="n1",
            phase="Succeeded",
            containers=[container(requests={"memory": "8Gi"})],
        )
    )
    bodies.append(
        pod("pending", phase="Pending", containers=[container(requests={"memory": "8Gi"})])
    )
    assert memory_findings(bodies) == []


def test_bound_pending_pod_still_counts() -> None:
    bodies = [node("n1", memory="8Gi")]
    bodies.append(
        pod(
            "starting",
            node_name="n1",
            phase="Pending",
            containers=[container(requests={"memory": "7600Mi"})],
        )
    )
    [finding] = memory_findings(bodies)
    assert finding.evidence["pods"] == 1


def test_sidecars_and_init_containers_are_counted_as_the_scheduler_counts_them() -> None:
    with_sidecar = pod(
        "app-1",
        node_name="n1",
        containers=[container("app", requests={"memory": "7Gi"}, limits={"memory": "7Gi"})],
        init_containers=[
            container("setup", requests={"memory": "1Gi"}),
            container(
                "proxy",
                requests={"memory": "2Gi"},
                limits={"memory": "2Gi"},
                restart_policy="Always",
            ),
        ],
    )
    [finding] = memory_findings([node("n1", memory="10Gi"), with_sidecar])
    assert finding.evidence["requests"] == "9Gi"  # 7Gi app + 2Gi sidecar
    assert finding.evidence["limits"] == "9Gi"
    big_init = pod(
        "migrate-1",
        node_name="n1",
        containers=[container("app", requests={"memory": "1Gi"})],
        init_containers=[container("migrate", requests={"memory": "9500Mi"})],
    )
    [finding] = memory_findings([node("n1", memory="10Gi"), big_init])
    assert finding.evidence["requests"] == "9500Mi"
    assert finding.evidence["requestsPercent"] == 92.8


def test_pod_without_limit_is_reported_unbounded() -> None:
    bodies = [node("n1", memory="10Gi")]
    bodies.append(
        pod(
            "greedy",
            namespace="ml",
            node_name="n1",
            containers=[container(requests={"memory": "9500Mi"})],
        )
    )
    [finding] = memory_findings(bodies)
    assert finding.evidence["unboundedPods"] == 1
    assert finding.evidence["limits"] == "0"
    assert finding.evidence["topConsumers"][0]["limit"] is None
    assert finding.evidence["topConsumers"][0]["unbounded"] is True
    assert finding.evidence["topConsumers"][0]["limitsPercent"] is None
    assert finding.cause == "memory-overcommit:ml/Pod/greedy@default"


def test_top_consumers_are_capped() -> None:
    bodies = [node("n1", memory="10Gi")]
    for index in range(8):
        bodies.append(
            pod(f"p{index}", node_name="n1", containers=[container(requests={"memory": "1200Mi"})])
        )
    [finding] = memory_findings(bodies)
    assert finding.evidence["pods"] == 8
    assert len(finding.evidence["topConsumers"]) == 5


@pytest.mark.parametrize("allocatable", ["0", None])
def test_node_without_allocatable_memory_is_skipped(allocatable: str | None) -> None:
    empty = node("new-node", memory="16Gi")
    if allocatable is None:
        del empty["status"]
    else:
        empty["status"]["allocatable"]["memory"] = allocatable
    bodies = [
        empty,
        pod("p", node_name="new-node", containers=[container(requests={"memory": "1Gi"})]),
    ]
    assert memory_findings(bodies) == []


def test_cpu_requests_near_full_warn_and_over_full_are_critical() -> None:
    bodies = [node("n1", cpu="4")]
    bodies += deployed("batch", namespace="b", node_name="n1", requests={"cpu": "3800m"})
    [finding] = cpu_findings(bodies)
    assert finding.severity is Severity.WARNING
    assert finding.evidence["requests"] == "3800m"
    assert finding.evidence["requestsPercent"] == 95.0
    assert finding.cause == "cpu-overcommit:b/Deployment/batch@default"
    assert "CPU requests at 95.0%" in finding.message
    bodies.append(pod("pinned", node_name="n1", containers=[container(requests={"cpu": "1"})]))
    [finding] = cpu_findings(bodies)
    assert finding.severity is Severity.CRITICAL


def test_cpu_limits_far_over_allocatable_are_critical_unless_configured_off() -> None:
    bodies = [node("n1", cpu="4")]
    bodies += deployed(
        "spiky", namespace="s", node_name="n1", requests={"cpu": "1"}, limits={"cpu": "16"}
    )
    [finding] = cpu_findings(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["limitsPercent"] == 400.0
    [relaxed] = cpu_findings(bodies, CpuOvercommitConfig(limits_critical_percent=None))
    assert relaxed.severity is Severity.WARNING


def test_pool_falls_back_to_other_conventions() -> None:
    bodies = [node("ip-10-0-1-5", memory="10Gi", labels={"eks.amazonaws.com/nodegroup": "system"})]
    bodies.append(
        pod(
            "p",
            namespace="x",
            node_name="ip-10-0-1-5",
            containers=[container(requests={"memory": "9Gi"})],
        )
    )
    [finding] = memory_findings(bodies)
    assert finding.evidence["nodePool"] == "system"
    assert finding.cause.endswith("@system")


def test_invalid_quantity_names_pod_and_field() -> None:
    bodies = [
        node("n1"),
        pod(
            "bad",
            namespace="x",
            node_name="n1",
            containers=[container("c", requests={"memory": "lots"})],
        ),
    ]
    with pytest.raises(
        QuantityError, match=r"Pod x/bad spec.containers\[name=c\].resources.requests.memory"
    ):
        memory_findings(bodies)
    [error] = run_checks(ClusterView.build(bodies), names=["node-memory-overcommit"])
    assert error.check == "invalid-input"


def test_checks_are_registered() -> None:
    assert REGISTRY["node-memory-overcommit"].config_type is MemoryOvercommitConfig
    assert REGISTRY["node-cpu-overcommit"].config_type is CpuOvercommitConfig


def test_a_limitless_sidecar_does_not_hide_the_main_containers_limit() -> None:
    # Prometheus charts ship a config-reloader sidecar with no resources: `kubectl describe node`
    # still adds the server's 22Gi limit, and so must we.
    bodies = [node("core-2", memory="20Gi")]
    bodies.append(
        pod(
            "prometheus-server-0",
            namespace="support",
            node_name="core-2",
            containers=[
                container(
                    "prometheus-server", requests={"memory": "16Gi"}, limits={"memory": "22Gi"}
                ),
                container("configmap-reload"),
            ],
        )
    )
    [finding] = memory_findings(bodies)
    assert finding.evidence["limits"] == "22Gi"
    assert finding.evidence["limitsPercent"] == 110.0
    assert finding.evidence["unboundedPods"] == 1
    assert finding.evidence["topConsumers"][0]["limit"] == "22Gi"
    assert finding.evidence["topConsumers"][0]["unbounded"] is True
