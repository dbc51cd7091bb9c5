"""The shared critical-pod policy: role selectors, system priority classes, priority threshold."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.checks import criticality
from kubemedic.checks.criticality import CriticalPodPolicy, RoleSelector
from kubemedic.model.view import ClusterView
from tests.checks.addons import coredns, kube_proxy
from tests.factories import (
    pod,
    priority_class,
)


def _why(body: dict, *extra: dict, policy: CriticalPodPolicy | None = None):
    view = ClusterView.build([body, *extra])
    return criticality.criticality_of(view, body, policy=policy)


@pytest.mark.parametrize("component", ["hub", "proxy", "autohttps"])
def test_jupyterhub_hub_proxy_and_autohttps_are_critical(component: str) -> None:
    body = pod(
        f"{component}-1", namespace="jhub", labels={"app": "jupyterhub", "component": component}
    )
    why = _why(body)
    assert why is not None
    assert why.role == "jupyterhub"
    assert why.basis == "selector"
    assert why.reason == f"jupyterhub (labels app=jupyterhub, component={component})"
    assert why.kubelet_protected is False


def test_jupyterhub_user_servers_and_scheduler_are_not_critical() -> None:
    for component in ("singleuser-server", "user-scheduler", "continuous-image-puller"):
        body = pod("jupyter-ada", labels={"app": "jupyterhub", "component": component})
        assert _why(body) is None


def test_jupyterhub_recommended_labels_of_newer_charts_match() -> None:
    body = pod(
        "hub-0",
        labels={"app.kubernetes.io/name": "jupyterhub", "app.kubernetes.io/component": "hub"},
    )
    why = _why(body)
    assert why is not None and why.role == "jupyterhub"


@pytest.mark.parametrize(
    ("labels", "role"),
    [
        (
            {
                "app.kubernetes.io/name": "ingress-nginx",
                "app.kubernetes.io/component": "controller",
            },
            "ingress-nginx",
        ),
        ({"app": "nginx-ingress", "component": "controller"}, "ingress-nginx"),
        ({"k8s-app": "kube-dns"}, "dns"),
        ({"k8s-app": "coredns"}, "dns"),
        ({"app.kubernetes.io/name": "coredns"}, "dns"),
        ({"app.kubernetes.io/name": "traefik"}, "traefik"),
        ({"istio": "ingressgateway", "app": "istio-ingressgateway"}, "istio-gateway"),
        (
            {
                "app.kubernetes.io/name": "envoy",
                "app.kubernetes.io/component": "proxy",
                "app.kubernetes.io/managed-by": "envoy-gateway",
            },
            "envoy-gateway",
        ),
        ({"gateway.networking.k8s.io/gateway-name": "public"}, "gateway"),
        ({"app.kubernetes.io/name": "kong"}, "kong"),
        (
            {"ingresscontroller.operator.openshift.io/deployment-ingresscontroller": "default"},
            "openshift-router",
        ),
    ],
)
def test_common_ingress_gateway_and_dns_conventions_are_critical(
    labels: dict[str, str], role: str
) -> None:
    why = _why(pod("p", labels=labels))
    assert why is not None
    assert why.role == role


def test_ingress_nginx_admission_webhook_job_is_not_critical() -> None:
    labels = {
        "app.kubernetes.io/name": "ingress-nginx",
        "app.kubernetes.io/component": "admission-webhook",
    }
    assert _why(pod("ingress-nginx-admission-create-x", labels=labels)) is None


def test_dns_autoscaler_is_not_mistaken_for_dns() -> None:
    assert _why(pod("kube-dns-autoscaler-1", labels={"k8s-app": "kube-dns-autoscaler"})) is None


def test_system_priority_class_is_critical_and_protected_by_the_kubelet() -> None:
    body = kube_proxy("kube-proxy-abc")
    body["spec"].pop("priority")  # not yet admitted: resolved from the class
    why = _why(body)
    assert why is not None
    assert why.role == "system"
    assert why.basis == "priority-class"
    assert why.reason == "priority class system-node-critical (2000001000)"
    assert why.kubelet_protected is True


def test_selector_match_wins_over_priority_class_as_the_reason() -> None:
    body = coredns("coredns-1")
    why = _why(body)
    assert why is not None
    assert (why.role, why.basis, why.kubelet_protected) == ("dns", "selector", True)


def test_priority_at_highest_user_definable_value_is_critical() -> None:
    body = pod("api", priority_class="business-critical", priority=1_000_000_000)
    why = _why(body, priority_class("business-critical", 1_000_000_000))
    assert why is not None
    assert why.basis == "priority"
    assert why.reason == "priority 1000000000 >= 1000000000 (class business-critical)"
    assert why.kubelet_protected is False


def test_priority_below_threshold_is_not_critical_unless_threshold_lowered() -> None:
    body = pod("api", priority=100_000)
    assert _why(body) is None
    why = _why(body, policy=CriticalPodPolicy(priority_threshold=100_000))
    assert why is not None and why.role == "high-priority"


def test_priority_comes_from_the_global_default_class_when_unset() -> None:
    body = pod("api")
    body["spec"].pop("priority")
    why = _why(
        body,
        priority_class("everything-important", 1_500_000_000, global_default=True),
    )
    assert why is not None and why.basis == "priority"


def test_extra_selectors_add_roles_and_replacing_selectors_drops_defaults() -> None:
    mine = RoleSelector("gateway", "app.kubernetes.io/name=api-gateway")
    body = pod("api-gateway-1", labels={"app.kubernetes.io/name": "api-gateway"})
    why = _why(body, policy=CriticalPodPolicy(extra_selectors=(mine,)))
    assert why is not None and why.role == "gateway"
    hub = pod("hub-1", labels={"app": "jupyterhub", "component": "hub"})
    assert _why(hub, policy=CriticalPodPolicy(selectors=())) is None


def test_mirror_and_static_pods_are_kubelet_protected() -> None:
    mirror = pod("etcd-cp-1", namespace="kube-system")
    mirror["metadata"]["annotations"] = {
        "kubernetes.io/config.mirror": "abc",
        "kubernetes.io/config.source": "file",
    }
    view = ClusterView.build([mirror])
    assert criticality.kubelet_protected(view, mirror) is True
    assert criticality.kubelet_protected(view, pod("web")) is False


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("a=1", {"a": "1"}, True),
        ("a==1", {"a": "2"}, False),
        ("a!=1", {}, True),
        ("a!=1", {"a": "1"}, False),
        ("a in (1, 2)", {"a": "2"}, True),
        ("a notin (1,2)", {"a": "3"}, True),
        ("a notin (1,2)", {}, True),
        ("a", {"a": ""}, True),
        ("!a", {"a": "x"}, False),
        ("!a,b", {"b": "x"}, True),
    ],
)
def test_label_selector_operators_follow_kubernetes_semantics(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    requirements = criticality.parse_selector(selector)
    assert all(r.matches(labels) for r in requirements) is expected


@pytest.mark.parametrize("selector", ["", "a=1,,b", "a in 1", "=x", "a=(1)"])
def test_invalid_selector_raises_naming_it(selector: str) -> None:
    with pytest.raises(ValueError, match="invalid label selector"):
        criticality.parse_selector(selector)


def test_a_role_selector_refuses_a_selector_the_api_server_would_refuse() -> None:
    with pytest.raises(ValueError, match="invalid label selector 'app in \\(a'"):
        RoleSelector("broken", "app in (a")
    with pytest.raises(ValueError, match="empty"):
        RoleSelector("everything", " ")


def test_default_selectors_all_parse() -> None:
    for rule in criticality.DEFAULT_SELECTORS:
        assert criticality.parse_selector(rule.selector)


# -- the rule index: only the rules a pod may match are tried, with the same outcome ------------

_POLICY = CriticalPodPolicy(
    extra_selectors=(
        RoleSelector("tiers", "tier notin (web),app"),
        RoleSelector("untagged", "!app,team=ops"),
        RoleSelector("anything", "tier!=web"),
    )
)
_REQUIREMENTS = [
    r for rule in criticality.DEFAULT_SELECTORS for r in criticality.parse_selector(rule.selector)
]
_KEYS = sorted({r.key for r in _REQUIREMENTS} | {"team", "tier"})
_VALUES = sorted({v for r in _REQUIREMENTS for v in r.values} | {"web", "ops", "other"})


def _first_rule_in_order(labels: dict[str, str], policy: CriticalPodPolicy) -> str | None:
    for rule in (*policy.selectors, *policy.extra_selectors):
        if criticality._matched_labels(rule.selector, labels) is not None:
            return rule.role
    return None


@settings(max_examples=300, deadline=None)
@given(labels=st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_VALUES), max_size=5))
def test_the_rule_index_finds_the_rule_trying_every_rule_in_order_finds(
    labels: dict[str, str],
) -> None:
    body = pod("p", labels=labels)
    for policy in (CriticalPodPolicy(), _POLICY):
        expected = _first_rule_in_order(labels, policy)
        why = _why(body, policy=policy)
        assert (why.role if why is not None and why.basis == "selector" else None) == expected


def test_the_reason_shows_the_labels_in_the_order_the_selector_writes_them() -> None:
    policy = CriticalPodPolicy(
        selectors=(RoleSelector("edge", "tier=edge,app in (gateway)"),), extra_selectors=()
    )
    body = pod("gw-1", labels={"app": "gateway", "tier": "edge"})
    why = _why(body, policy=policy)
    assert why is not None
    assert why.reason == "edge (labels tier=edge, app=gateway)"
