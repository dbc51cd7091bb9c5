"""Cluster API: MachineDeployments become machines become nodes; machines are replaced."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubemedic.sim.apiserver.openapi import crds
from kubemedic.sim.apiserver.tables import tabulating
from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController
from kubemedic.sim.cluster.infra.clusterapi import ClusterAPI
from kubemedic.sim.cluster.infra.providers import ACTION_ANNOTATION, Flavor, Infrastructure
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.machinery.objects import Change, Obj

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
API = "cluster.x-k8s.io/v1beta1"
CLUSTER = "cluster.x-k8s.io/cluster-name"


def machine_deployment(
    name: str,
    *,
    replicas: int | None = 1,
    cluster: str = "prod",
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A MachineDeployment as ``clusterctl generate cluster`` writes one (defaulted)."""
    labels = {CLUSTER: cluster, "cluster.x-k8s.io/deployment-name": name}
    spec: dict[str, Any] = {
        "clusterName": cluster,
        "selector": {"matchLabels": labels},
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        },
        "template": {
            "metadata": {"labels": {**labels, "node-role.kubernetes.io/worker": ""}},
            "spec": {
                "clusterName": cluster,
                "version": "v1.32.0",
                "bootstrap": {
                    "configRef": {
                        "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
                        "kind": "KubeadmConfigTemplate",
                        "name": name,
                    }
                },
                "infrastructureRef": {
                    "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                    "kind": "OpenStackMachineTemplate",
                    "name": name,
                },
            },
        },
    }
    if replicas is not None:
        spec["replicas"] = replicas
    meta: dict[str, Any] = {"name": name, "namespace": "default", "labels": {CLUSTER: cluster}}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": API, "kind": "MachineDeployment", "metadata": meta, "spec": spec}


def setup(**infra: Any) -> tuple[Simulation, Hosts, ClusterAPI, Client]:
    sim = Simulation(start=START)
    hosts = Hosts()
    sim.add(Kubelets(hosts))
    sim.add(NodeLifecycleController())  # lifts the kubelet's not-ready registration taint
    capi = sim.add(ClusterAPI(hosts, infrastructure=Infrastructure(hosts, **infra)))
    return sim, hosts, capi, Client(sim.server, "kubectl")


def machines(sim: Simulation) -> list[Obj]:
    return list(sim.objects("machines.cluster.x-k8s.io"))


def md_status(sim: Simulation, name: str = "workers") -> dict[str, Any]:
    md = sim.get("machinedeployments.cluster.x-k8s.io", "default", name)
    assert md is not None
    return dict(md.get("status") or {})


def test_a_machine_deployment_becomes_machines_that_become_nodes_after_the_delay() -> None:
    sim, _, _, client = setup(provision_seconds=90)
    client.create(machine_deployment("workers", replicas=2))
    sim.run_for(10)
    (ms,) = sim.objects("machinesets.cluster.x-k8s.io")
    assert ms["metadata"]["name"].startswith("workers-") and len(ms["metadata"]["name"]) == 13
    assert ms["metadata"]["labels"]["machine-template-hash"].endswith(ms["metadata"]["name"][-5:])
    assert {m["manager"] for m in ms["metadata"]["managedFields"]} >= {"capi-machinedeployment"}
    assert [m["status"]["phase"] for m in machines(sim)] == ["Provisioning", "Provisioning"]
    assert md_status(sim)["phase"] == "ScalingUp"
    assert sim.count("nodes") == 0
    sim.run_for(90)
    assert [m["status"]["phase"] for m in machines(sim)] == ["Provisioned", "Provisioned"]
    assert all(m["spec"]["providerID"].startswith("openstack:///") for m in machines(sim))
    sim.run_for(90)  # the VM boots (60 s), the kubelet registers the node, the CNI comes up
    assert [m["status"]["phase"] for m in machines(sim)] == ["Running", "Running"]
    for machine in machines(sim):
        node = sim.get("nodes", "", machine["status"]["nodeRef"]["name"])
        assert node is not None and node["metadata"]["name"] == machine["metadata"]["name"]
        notes = node["metadata"]["annotations"]
        assert notes["cluster.x-k8s.io/machine"] == node["metadata"]["name"]
        assert notes["cluster.x-k8s.io/owner-name"] == ms["metadata"]["name"]
        assert node["metadata"]["labels"]["node-role.kubernetes.io/worker"] == ""
        assert not node["spec"].get("taints")  # the uninitialized taint is gone
    status = md_status(sim)
    assert (status["replicas"], status["readyReplicas"], status["phase"]) == (2, 2, "Running")
    reasons = {e["reason"] for e in sim.objects("events")}
    assert {"SuccessfulCreate", "SuccessfulSetNodeRef"} <= reasons


def test_scaling_the_machine_deployment_scales_its_machine_set() -> None:
    sim, _, _, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers", replicas=1))
    sim.run_for(120)
    client.patch(
        API,
        "MachineDeployment",
        "workers",
        {"spec": {"replicas": 3}},
        namespace="default",
        patch_type="merge",
    )
    sim.run_for(5)
    assert len(machines(sim)) == 3
    (event,) = [e for e in sim.objects("events") if e["reason"] == "SuccessfulScale"]
    assert event["message"].startswith("Scaled up MachineSet default/workers-")
    assert event["message"].endswith(" to 3")
    sim.run_for(120)
    assert md_status(sim)["readyReplicas"] == 3
    assert sim.count("nodes") == 3


def test_kubectl_get_machines_shows_cluster_node_provider_id_phase_and_version() -> None:
    sim, _, _, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers"))
    sim.run_for(120)
    (crd,) = [c for c in crds.capi_crds() if c["spec"]["names"]["kind"] == "Machine"]
    table = tabulating.table(
        "machines",
        "cluster.x-k8s.io",
        machines(sim),
        now=sim.now(),
        list_meta={},
        printer_columns=crds.printer_columns(crd, "v1beta1"),
    )
    (row,) = table["rows"]
    name, cluster, node, provider, phase, _, version = row["cells"]
    assert (cluster, node, phase, version) == ("prod", name, "Running", "v1.32.0")
    assert provider.startswith("openstack:///")


def test_deleting_a_machine_drains_and_removes_its_node_and_the_set_replaces_it() -> None:
    sim, hosts, _, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers", replicas=2))
    sim.run_for(120)
    victim, survivor = sorted(m["metadata"]["name"] for m in machines(sim))
    client.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web"},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]},
        }
    )
    client.bind("default", "web", victim)
    client.delete(API, "Machine", victim, namespace="default")
    sim.run_for(1)
    node = sim.get("nodes", "", victim)
    assert node is not None and node["spec"]["unschedulable"] is True
    pod = sim.get("pods", "default", "web")
    assert pod is None or pod["metadata"].get("deletionTimestamp")
    machine = sim.get("machines.cluster.x-k8s.io", "default", victim)
    assert machine is not None and machine["status"]["phase"] == "Deleting"
    assert len(machines(sim)) == 2  # a machine being deleted still counts
    sim.run_for(60)
    assert sim.get("machines.cluster.x-k8s.io", "default", victim) is None
    assert sim.get("nodes", "", victim) is None
    assert hosts.find(victim) is None
    names = {m["metadata"]["name"] for m in machines(sim)}
    assert survivor in names and len(names) == 2
    reasons = [e["reason"] for e in sim.objects("events")]
    assert "SuccessfulDrainNode" in reasons
    sim.run_for(120)
    assert md_status(sim)["readyReplicas"] == 2


def test_a_disruption_budget_holds_the_drain_until_it_allows_the_eviction() -> None:
    sim, _, _, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers", replicas=1))
    sim.run_for(120)
    (machine,) = machines(sim)
    name = machine["metadata"]["name"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db", "labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "image": "postgres"}]},
    }
    client.create(pod)
    client.bind("default", "db", name)
    client.patch(
        "v1",
        "Pod",
        "db",
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        namespace="default",
        subresource="status",
    )
    client.create(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "db"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
        }
    )
    sim.run_for(5)
    client.delete(API, "Machine", name, namespace="default")
    sim.run_for(120)
    held = sim.get("machines.cluster.x-k8s.io", "default", name)
    assert held is not None
    draining = next(c for c in held["status"]["conditions"] if c["type"] == "DrainingSucceeded")
    assert (draining["status"], draining["reason"]) == ("False", "Draining")
    assert sim.get("pods", "default", "db") is not None
    client.delete("policy/v1", "PodDisruptionBudget", "db", namespace="default")
    sim.run_for(60)
    assert sim.get("machines.cluster.x-k8s.io", "default", name) is None


def test_a_reboot_changes_the_boot_id_and_the_node_recovers() -> None:
    sim, hosts, capi, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers"))
    sim.run_for(150)
    (machine,) = machines(sim)
    name = machine["metadata"]["name"]
    before = hosts.get(name).boot_id
    seen: list[str] = []

    def record(change: Change) -> None:
        ready = next(c for c in change.obj["status"]["conditions"] if c["type"] == "Ready")
        seen.append(ready["status"])

    sim.watch("nodes", record)
    capi.infrastructure.reboot(machine)
    sim.run_for(100)  # 60 s of booting without heartbeats, then the kubelet is back
    assert "Unknown" in seen and seen[-1] == "True"
    node = sim.get("nodes", "", name)
    assert node is not None
    assert node["status"]["nodeInfo"]["bootID"] == hosts.get(name).boot_id != before
    assert hosts.get(name).reboots == 1


def test_an_action_annotation_powers_a_machine_off_and_on() -> None:
    sim, hosts, _, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers"))
    sim.run_for(150)
    (machine,) = machines(sim)
    name = machine["metadata"]["name"]
    patch = {"metadata": {"annotations": {ACTION_ANNOTATION: "power-off"}}}
    client.patch(API, "Machine", name, patch, namespace="default", patch_type="merge")
    sim.run_for(1)
    assert hosts.get(name).powered is False
    annotated = sim.get("machines.cluster.x-k8s.io", "default", name)
    assert annotated is not None
    assert ACTION_ANNOTATION not in (annotated["metadata"].get("annotations") or {})
    patch = {"metadata": {"annotations": {ACTION_ANNOTATION: "power-on"}}}
    client.patch("v1", "Node", name, patch)
    sim.run_for(1)
    assert hosts.get(name).powered is True


def test_vm_size_comes_from_the_autoscaler_capacity_annotations() -> None:
    sim, _, capi, client = setup(provision_seconds=30)
    notes = {
        "capacity.cluster-autoscaler.kubernetes.io/memory": "64Gi",
        "capacity.cluster-autoscaler.kubernetes.io/cpu": "16",
        "capacity.cluster-autoscaler.kubernetes.io/labels": "pool=big",
        "capacity.cluster-autoscaler.kubernetes.io/taints": "dedicated=db:NoSchedule",
    }
    client.create(machine_deployment("big", annotations=notes))
    capi.infrastructure.flavors["small"] = Flavor(cpu="2", memory="4Gi")
    client.create(machine_deployment("small"))
    sim.run_for(150)
    sizes = {}
    for node in sim.objects("nodes"):
        pool = node["metadata"]["labels"].get("pool", "small")
        sizes[pool] = (node["status"]["capacity"]["cpu"], node["status"]["capacity"]["memory"])
        if pool == "big":
            taint = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
            assert node["spec"]["taints"] == [taint]
    assert sizes == {"big": ("16", "64Gi"), "small": ("2", "4Gi")}


def test_deleting_a_machine_through_the_infrastructure_hook_replaces_it() -> None:
    sim, _, capi, client = setup(provision_seconds=30)
    client.create(machine_deployment("workers"))
    sim.run_for(150)
    (machine,) = machines(sim)
    capi.infrastructure.delete(machine["metadata"]["name"])
    sim.run_for(200)
    (replacement,) = machines(sim)
    assert replacement["metadata"]["name"] != machine["metadata"]["name"]
    assert replacement["status"]["phase"] == "Running"
