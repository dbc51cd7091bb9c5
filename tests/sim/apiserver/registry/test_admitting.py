"""Admission and strategy as kube-apiserver 1.32 applies them to a defaulted write: the
tolerations, priority and service account of a new pod, the status a create starts with, the
allocations a Service update keeps, and the cluster IPs and node ports handed out."""

from __future__ import annotations

import copy
import ipaddress
from typing import Any

import pytest

from kubemedic.sim.apiserver.registry import admitting, defaulting
from kubemedic.sim.machinery.errors import StatusError
from tests.factories import container, deployment, pod, priority_class
from tests.sim.manifests import manifest, pdb

Obj = dict[str, Any]

_GROUPS = {"Deployment": "apps", "PodDisruptionBudget": "policy"}


def defaulted(obj: Obj) -> Obj:
    out = copy.deepcopy(obj)
    group = _GROUPS.get(out["kind"], "")
    defaulting.default_object(out, group=group, version="v1", kind=out["kind"])
    return out


def service(name: str = "web", **spec: Any) -> Obj:
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": "default"},
    }
    body["spec"] = {"selector": {"app": name}, "ports": [{"port": 80}], **spec}
    return body


# -- admission ---------------------------------------------------------------------------------


def admitted(body: Obj, **kwargs: Any) -> Obj:
    out = defaulted(body)
    admitting.admit_pod(out, **kwargs)
    return out


_NOT_READY = {
    "key": "node.kubernetes.io/not-ready",
    "operator": "Exists",
    "effect": "NoExecute",
    "tolerationSeconds": 300,
}
_UNREACHABLE = {**_NOT_READY, "key": "node.kubernetes.io/unreachable"}


def test_new_pods_tolerate_dead_nodes_for_five_minutes() -> None:
    spec = admitted(manifest(pod("p")))["spec"]
    assert spec["tolerations"] == [_NOT_READY, _UNREACHABLE]


def test_pods_that_already_tolerate_dead_nodes_keep_their_own_tolerations() -> None:
    quick = {**_NOT_READY, "tolerationSeconds": 10}
    body = manifest(pod("p"))
    body["spec"]["tolerations"] = [quick]
    assert admitted(body)["spec"]["tolerations"] == [quick, _UNREACHABLE]

    everything = {"operator": "Exists"}
    body["spec"]["tolerations"] = [everything]
    assert admitted(body)["spec"]["tolerations"] == [everything]

    no_schedule_only = {
        "key": "node.kubernetes.io/not-ready",
        "operator": "Exists",
        "effect": "NoSchedule",
    }
    body["spec"]["tolerations"] = [no_schedule_only]
    assert admitted(body)["spec"]["tolerations"] == [no_schedule_only, _NOT_READY, _UNREACHABLE]


def test_pods_without_a_priority_class_get_priority_zero() -> None:
    body = manifest(pod("p"))
    del body["spec"]["priority"]
    spec = admitted(body)["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in spec


def test_priority_comes_from_the_class() -> None:
    critical = manifest(pod("p", priority_class="system-node-critical"))
    del critical["spec"]["priority"]
    assert admitted(critical)["spec"]["priority"] == 2000001000

    batch = priority_class("batch", 100)
    batch["preemptionPolicy"] = "Never"
    body = manifest(pod("p", priority_class="batch"))
    del body["spec"]["priority"]
    spec = admitted(body, priority_classes={"batch": batch})["spec"]
    assert (spec["priority"], spec["preemptionPolicy"]) == (100, "Never")


def test_a_global_default_class_is_named_on_the_pod() -> None:
    body = manifest(pod("p"))
    del body["spec"]["priority"]
    classes = {"normal": priority_class("normal", 1000, global_default=True)}
    spec = admitted(body, priority_classes=classes)["spec"]
    assert (spec["priorityClassName"], spec["priority"]) == ("normal", 1000)


def test_priority_admission_refuses_unknown_classes_and_hand_set_priorities() -> None:
    unknown = manifest(pod("p", priority_class="gold"))
    with pytest.raises(StatusError) as refused:
        admitted(unknown)
    assert refused.value.code == 403
    assert refused.value.message == (
        'pods "p" is forbidden: no PriorityClass with name gold was found'
    )

    forged = manifest(pod("p", priority=1000))
    with pytest.raises(StatusError) as refused:
        admitted(forged)
    assert refused.value.message == (
        'pods "p" is forbidden: the integer value of priority (1000) must not be provided in '
        "pod spec; priority admission controller computed 0 from the given PriorityClass name"
    )


def test_pods_run_as_the_default_service_account_unless_they_name_one() -> None:
    spec = admitted(manifest(pod("p")))["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("default", "default")
    named = manifest(pod("p"))
    named["spec"]["serviceAccount"] = "builder"  # only the deprecated field, as old clients do
    spec = admitted(named)["spec"]
    assert (spec["serviceAccountName"], spec["serviceAccount"]) == ("builder", "builder")


# -- strategy ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([container("a")], "BestEffort"),
        ([container("a", requests={"cpu": "0"})], "BestEffort"),  # zero does not count
        ([container("a", requests={"cpu": "100m"})], "Burstable"),
        ([container("a", limits={"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
        (
            [container("a", requests={"cpu": "500m"}, limits={"cpu": "1", "memory": "1Gi"})],
            "Burstable",
        ),
        ([container("a", limits={"cpu": "1", "memory": "1Gi"}), container("b")], "Burstable"),
        (
            [container("a", limits={"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": "1"})],
            "Guaranteed",
        ),
    ],
)
def test_a_new_pod_is_pending_with_its_qos_class(containers: list[Obj], qos: str) -> None:
    body = defaulted(manifest(pod("p", containers=containers)))
    admitting.prepare_for_create(body, group="", version="v1", kind="Pod")
    assert body["status"] == {"phase": "Pending", "qosClass": qos}


def test_create_strategy_starts_status_over() -> None:
    app = defaulted(deployment("web"))  # the builder carries a status
    admitting.prepare_for_create(app, group="apps", version="v1", kind="Deployment")
    assert app["status"] == {}
    svc = defaulted(service())
    admitting.prepare_for_create(svc, group="", version="v1", kind="Service")
    assert svc["status"] == {"loadBalancer": {}}
    budget = pdb("web", min_available=1, labels={"app": "web"})
    admitting.prepare_for_create(budget, group="policy", version="v1", kind="PodDisruptionBudget")
    assert budget["status"] == {
        "currentHealthy": 0,
        "desiredHealthy": 0,
        "disruptionsAllowed": 0,
        "expectedPods": 0,
    }


def _stored_service() -> Obj:
    stored = defaulted(service(clusterIP="10.96.158.56", type="NodePort"))
    stored["spec"]["ports"][0]["nodePort"] = 31009
    return stored


def test_a_service_update_without_allocations_keeps_them() -> None:
    stored = _stored_service()
    replaced = service(type="NodePort")  # kubectl replace with the original manifest

    admitting.prepare_for_update(replaced, stored, group="", version="v1", kind="Service")
    spec = defaulted(replaced)["spec"]

    assert (spec["clusterIP"], spec["clusterIPs"]) == ("10.96.158.56", ["10.96.158.56"])
    assert spec["ports"][0]["nodePort"] == 31009
    assert spec == stored["spec"]


def test_changing_only_cluster_ip_moves_cluster_ips_along() -> None:
    """What ``kubectl edit`` sends: a strategic merge patch of ``clusterIP`` alone."""
    stored = _stored_service()
    patched = copy.deepcopy(stored)
    patched["spec"]["clusterIP"] = "10.96.0.99"

    admitting.prepare_for_update(patched, stored, group="", version="v1", kind="Service")

    assert patched["spec"]["clusterIPs"] == ["10.96.0.99"]


def test_ip_families_are_adopted_from_the_stored_service() -> None:
    stored = _stored_service()
    stored["spec"]["ipFamilyPolicy"] = "PreferDualStack"
    replaced = service(type="NodePort")
    admitting.prepare_for_update(replaced, stored, group="", version="v1", kind="Service")
    assert defaulted(replaced)["spec"]["ipFamilyPolicy"] == "PreferDualStack"


# -- allocation --------------------------------------------------------------------------------


def test_cluster_ips_are_distinct_addresses_of_the_service_range() -> None:
    assert admitting.allocate_cluster_ip(0) == "10.96.0.1"
    ips = [admitting.allocate_cluster_ip(i) for i in range(20000)]
    assert len(set(ips)) == len(ips)
    network = ipaddress.ip_network("10.96.0.0/12")
    assert all(ipaddress.ip_address(ip) in network for ip in ips)
    assert "10.96.0.0" not in ips and "10.111.255.255" not in ips
    with pytest.raises(ValueError, match="full"):
        admitting.allocate_cluster_ip(network.num_addresses)


def test_node_ports_are_distinct_ports_of_the_node_port_range() -> None:
    ports = [admitting.allocate_node_port(i) for i in range(2768)]
    assert sorted(ports) == list(range(30000, 32768))
    with pytest.raises(ValueError, match="full"):
        admitting.allocate_node_port(2768)


# -- namespaces --------------------------------------------------------------------------------


def test_namespace_finalizer_is_added_on_create_and_kept_from_storage_on_update() -> None:
    ns = defaulted({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}})
    admitting.prepare_for_create(ns, group="", version="v1", kind="Namespace")
    assert ns["spec"] == {"finalizers": ["kubernetes"]}

    finalized = copy.deepcopy(ns)
    finalized["spec"]["finalizers"] = []
    edited = copy.deepcopy(ns)  # a client still holding the finalizer
    admitting.prepare_for_update(edited, finalized, group="", version="v1", kind="Namespace")
    assert edited["spec"] == {"finalizers": []}
