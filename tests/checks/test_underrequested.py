"""critical-pod-underrequested: critical pods asking for less than a floor or than they use."""

from __future__ import annotations

import json

import pytest

from kubemedic.checks import underrequested
from kubemedic.checks.criticality import CriticalPodPolicy, RoleSelector
from kubemedic.checks.findings import Severity
from kubemedic.checks.underrequested import RoleFloor, UnderrequestedConfig
from kubemedic.model.quantities import QuantityError
from kubemedic.model.view import ClusterView
from tests.checks import addons
from tests.factories import container, deployment, pod, pod_metrics, priority_class, replicaset

HUB_LABELS = {"app": "jupyterhub", "component": "hub"}


def hub(
    *,
    requests: dict[str, str] | None = None,
    replicas: int = 1,
    labels: dict[str, str] | None = None,
    name: str = "hub",
    namespace: str = "jhub",
) -> list[dict]:
    """The hub Deployment, its ReplicaSet and ``replicas`` running pods (10m/128Mi by default)."""
    requests = requests if requests is not None else {"cpu": "10m", "memory": "128Mi"}
    app = deployment(name, namespace=namespace, containers=[container("hub", requests=requests)])
    rs = replicaset(app, pod_hash="6c7f5d9f8")
    pods = [
        pod(
            f"{name}-6c7f5d9f8-{suffix}",
            namespace=namespace,
            node_name=f"core-{index}",
            owner=rs,
            labels=labels if labels is not None else HUB_LABELS,
            containers=[container("hub", requests=requests)],
        )
        for index, suffix in enumerate(("abcde", "fghij", "klmno")[:replicas])
    ]
    return [app, rs, *pods]


def run(bodies: list[dict], config: UnderrequestedConfig | None = None):
    view = ClusterView.build(bodies)
    return underrequested.critical_pod_underrequested(view, config or UnderrequestedConfig())


def test_incident_hub_at_10m_cpu_and_128mi_is_flagged() -> None:
    [finding] = run(hub())
    assert finding.severity is Severity.WARNING
    assert finding.object.kind == "Deployment"
    assert (finding.object.namespace, finding.object.name) == ("jhub", "hub")
    evidence = finding.evidence
    assert evidence["pod"] == "jhub/hub-6c7f5d9f8-abcde"
    assert evidence["owner"] == "Deployment jhub/hub"
    assert evidence["role"] == "jupyterhub"
    assert evidence["criticalBecause"] == "jupyterhub (labels app=jupyterhub, component=hub)"
    assert evidence["requests"] == {"cpu": "10m", "memory": "128Mi"}
    assert evidence["floors"] == {"cpu": "100m", "memory": "256Mi"}
    assert evidence["usage"] is None
    assert evidence["usageKnown"] is False
    assert evidence["shortfalls"] == [
        {
            "pod": "jhub/hub-6c7f5d9f8-abcde",
            "resource": "cpu",
            "kind": "floor",
            "request": "10m",
            "floor": "100m",
        },
        {
            "pod": "jhub/hub-6c7f5d9f8-abcde",
            "resource": "memory",
            "kind": "floor",
            "request": "128Mi",
            "floor": "256Mi",
        },
    ]
    assert finding.cause == "critical-underrequested:jhub/Deployment/hub"
    assert finding.message == (
        "Critical Deployment jhub/hub (jupyterhub, 1 pod) is under-requested: CPU request 10m "
        "is below the 100m floor and memory request 128Mi is below the 256Mi floor."
    )
    json.dumps(finding.to_json())


def test_hub_using_more_memory_than_it_requests_is_critical() -> None:
    bodies = hub()
    metrics = pod_metrics(bodies[2], {"hub": {"cpu": "40m", "memory": "300Mi"}})
    [finding] = run([*bodies, metrics])
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["usage"] == {"cpu": "40m", "memory": "300Mi"}
    assert finding.evidence["usageKnown"] is True
    kinds = [(s["resource"], s["kind"]) for s in finding.evidence["shortfalls"]]
    assert kinds == [("cpu", "floor"), ("cpu", "usage"), ("memory", "floor"), ("memory", "usage")]
    assert finding.evidence["shortfalls"][3]["usage"] == "300Mi"
    assert "memory use 300Mi exceeds its 128Mi request" in finding.message
    assert "the kubelet evicts it before pods within their requests" in finding.message


def test_generously_requested_hub_is_silent_even_with_metrics() -> None:
    bodies = hub(requests={"cpu": "500m", "memory": "1Gi"})
    metrics = pod_metrics(bodies[2], {"hub": {"cpu": "200m", "memory": "600Mi"}})
    assert run([*bodies, metrics]) == []


def test_cpu_usage_a_little_over_request_is_tolerated() -> None:
    bodies = hub(requests={"cpu": "100m", "memory": "512Mi"})
    tolerated = pod_metrics(bodies[2], {"hub": {"cpu": "105m", "memory": "300Mi"}})
    assert run([*bodies, tolerated]) == []
    starving = pod_metrics(bodies[2], {"hub": {"cpu": "150m", "memory": "300Mi"}})
    [finding] = run([*bodies, starving])
    assert finding.severity is Severity.WARNING
    assert finding.evidence["shortfalls"] == [
        {
            "pod": "jhub/hub-6c7f5d9f8-abcde",
            "resource": "cpu",
            "kind": "usage",
            "request": "100m",
            "usage": "150m",
        }
    ]


def test_non_critical_pods_are_never_flagged() -> None:
    tiny = pod("jupyter-ada", labels={"app": "jupyterhub", "component": "singleuser-server"})
    assert run([tiny]) == []


def test_replicas_are_one_finding_with_every_pods_numbers() -> None:
    bodies = hub(replicas=2)
    metrics = pod_metrics(bodies[3], {"hub": {"cpu": "5m", "memory": "200Mi"}})
    [finding] = run([*bodies, metrics])
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["pod"] == "jhub/hub-6c7f5d9f8-fghij"  # the worse of the two
    assert [p["pod"] for p in finding.evidence["pods"]] == [
        "jhub/hub-6c7f5d9f8-abcde",
        "jhub/hub-6c7f5d9f8-fghij",
    ]
    assert finding.evidence["pods"][0]["usage"] is None
    assert finding.evidence["pods"][1]["usage"] == {"cpu": "5m", "memory": "200Mi"}
    assert finding.evidence["pods"][1]["node"] == "core-1"
    assert len(finding.evidence["shortfalls"]) == 5
    assert "2 pods" in finding.message
    assert "memory use 200Mi on pod jhub/hub-6c7f5d9f8-fghij exceeds" in finding.message


def test_proxy_without_any_request_is_critical() -> None:
    bodies = hub(name="proxy", requests={}, labels={"app": "jupyterhub", "component": "proxy"})
    [finding] = run(bodies)
    assert finding.severity is Severity.CRITICAL
    assert finding.evidence["requests"] == {"cpu": "0", "memory": "0"}


def test_finished_pods_are_ignored() -> None:
    failed = pod("hub-old", namespace="jhub", labels=HUB_LABELS, phase="Failed")
    assert run([failed]) == []


def test_sidecar_requests_count_towards_the_pod() -> None:
    body = pod(
        "hub-1",
        namespace="jhub",
        labels=HUB_LABELS,
        containers=[container("hub", requests={"cpu": "50m", "memory": "200Mi"})],
        init_containers=[
            container(
                "auth-proxy",
                requests={"cpu": "50m", "memory": "100Mi"},
                restart_policy="Always",
            )
        ],
    )
    assert run([body]) == []


def test_coredns_at_its_upstream_requests_is_silent_and_platform_pods_are_left_out() -> None:
    coredns = addons.coredns(
        "coredns-5d78c9869d-abcde",
        containers=[container("coredns", requests={"cpu": "100m", "memory": "70Mi"})],
    )
    kube_proxy = addons.kube_proxy("kube-proxy-x1")
    assert run([coredns, kube_proxy]) == []
    [finding] = run([coredns, kube_proxy], UnderrequestedConfig(include_system_critical=True))
    assert finding.evidence["owner"] == "Pod kube-system/kube-proxy-x1"
    assert finding.evidence["criticalBecause"] == "priority class system-node-critical (2000001000)"
    assert finding.severity is Severity.WARNING  # the kubelet never evicts it


def test_role_floors_override_the_defaults() -> None:
    config = UnderrequestedConfig(role_floors=(RoleFloor("jupyterhub", cpu="5m", memory="100Mi"),))
    assert run(hub(), config) == []


def test_high_user_priority_pods_get_the_default_floors() -> None:
    body = pod(
        "payments-1",
        namespace="pay",
        priority_class="business-critical",
        priority=1_000_000_000,
        containers=[container("api", requests={"cpu": "1", "memory": "128Mi"})],
    )
    [finding] = run([body, priority_class("business-critical", 1_000_000_000)])
    assert finding.evidence["role"] == "high-priority"
    assert [s["resource"] for s in finding.evidence["shortfalls"]] == ["memory"]
    assert finding.message.endswith("memory request 128Mi is below the 256Mi floor.")


def test_custom_selector_makes_own_workload_critical() -> None:
    policy = CriticalPodPolicy(
        extra_selectors=(RoleSelector("gateway", "app.kubernetes.io/name=api-gateway"),)
    )
    bodies = hub(name="api-gateway", labels={"app.kubernetes.io/name": "api-gateway"})
    [finding] = run(bodies, UnderrequestedConfig(critical=policy))
    assert finding.evidence["role"] == "gateway"
    assert finding.cause == "critical-underrequested:jhub/Deployment/api-gateway"


def test_invalid_floor_in_config_is_named() -> None:
    with pytest.raises(QuantityError, match="config of check critical-pod-underrequested"):
        run(hub(), UnderrequestedConfig(memory_floor="a lot"))


def test_invalid_request_names_pod_and_field() -> None:
    bad = pod(
        "hub-1",
        namespace="jhub",
        labels=HUB_LABELS,
        containers=[container("hub", requests={"cpu": "ten"})],
    )
    with pytest.raises(QuantityError, match=r"Pod jhub/hub-1 spec.containers\[name=hub\]"):
        run([bad])
