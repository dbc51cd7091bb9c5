"""The cluster-autoscaler: node groups grow for unschedulable pods, never beyond their max."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController
from kubemedic.sim.cluster.infra.autoscaling import MAX_SIZE, MIN_SIZE, Autoscaler
from kubemedic.sim.cluster.infra.clusterapi import ClusterAPI
from kubemedic.sim.cluster.infra.providers import Infrastructure
from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.machinery.clock import rfc3339
from tests.sim.cluster.infra.test_clusterapi import machine_deployment

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
API = "cluster.x-k8s.io/v1beta1"
SIXTEEN_GI = {
    "capacity.cluster-autoscaler.kubernetes.io/cpu": "4",
    "capacity.cluster-autoscaler.kubernetes.io/memory": "16Gi",
}


def setup(*, replicas: int, low: int, high: int, **notes: str) -> tuple[Simulation, Client]:
    sim = Simulation(start=START)
    hosts = Hosts()
    sim.add(Kubelets(hosts))
    sim.add(NodeLifecycleController())  # lifts the kubelet's not-ready registration taint
    sim.add(ClusterAPI(hosts, infrastructure=Infrastructure(hosts, provision_seconds=30)))
    sim.add(Autoscaler())
    client = Client(sim.server, "kubectl")
    annotations = {MIN_SIZE: str(low), MAX_SIZE: str(high), **SIXTEEN_GI, **notes}
    client.create(machine_deployment("workers", replicas=replicas, annotations=annotations))
    sim.run_for(150)  # provisioning, boot, registration, the CNI coming up
    return sim, client


def pending(client: Client, name: str, *, memory: str = "12Gi", **spec: Any) -> None:
    """A pod the scheduler found no node for."""
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"memory": memory}}}
    client.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {"containers": [container], **spec},
        }
    )
    condition = {
        "type": "PodScheduled",
        "status": "False",
        "reason": "Unschedulable",
        "message": "0/1 nodes are available: 1 Insufficient memory.",
        "lastTransitionTime": rfc3339(client.server.clock.now()),
    }
    client.patch(
        "v1",
        "Pod",
        name,
        {"status": {"conditions": [condition]}},
        namespace="default",
        subresource="status",
    )


def replicas(sim: Simulation) -> int:
    md = sim.get("machinedeployments.cluster.x-k8s.io", "default", "workers")
    assert md is not None
    return int(md["spec"]["replicas"])


def messages(sim: Simulation, reason: str) -> list[str]:
    found = {e["message"] for e in sim.objects("events") if e["reason"] == reason}
    return sorted({m.removeprefix("(combined from similar events): ") for m in found})


def test_unschedulable_pods_scale_the_group_up_by_what_they_need() -> None:
    sim, client = setup(replicas=1, low=1, high=5)
    for i in range(3):
        pending(client, f"big-{i}")  # 12Gi each: one per 16Gi node, one fits the empty node
    sim.run_for(11)
    assert replicas(sim) == 3
    assert messages(sim, "TriggeredScaleUp") == [
        "pod triggered scale-up: [{MachineDeployment/default/workers 1->3 (max: 5)}]"
    ]
    assert messages(sim, "ScaledUpGroup") == [
        "Scale-up: setting group MachineDeployment/default/workers size to 3 instead of 1 (max: 5)"
    ]
    md = sim.get("machinedeployments.cluster.x-k8s.io", "default", "workers")
    assert md is not None
    (entry,) = [m for m in md["metadata"]["managedFields"] if m["manager"] == "cluster-autoscaler"]
    assert entry["subresource"] == "scale"
    sim.run_for(120)
    assert sim.count("nodes") == 3  # the new machines became nodes
    assert replicas(sim) == 3  # pods that fit on nodes there or coming do not scale up again


def test_the_group_never_grows_past_its_max_size() -> None:
    sim, client = setup(replicas=1, low=1, high=2)
    for i in range(3):
        pending(client, f"big-{i}")
    sim.run_for(11)
    assert replicas(sim) == 2
    sim.run_for(300)
    assert replicas(sim) == 2
    assert messages(sim, "NotTriggerScaleUp") == [
        "pod didn't trigger scale-up: 1 max node group size reached"
    ]


def test_pods_no_group_can_take_say_why() -> None:
    sim, client = setup(replicas=1, low=1, high=5)
    pending(client, "huge", memory="64Gi")
    pending(client, "picky", memory="1Gi", nodeSelector={"disk": "ssd"})
    sim.run_for(11)
    assert replicas(sim) == 1
    assert messages(sim, "NotTriggerScaleUp") == [
        "pod didn't trigger scale-up: 1 Insufficient memory",
        "pod didn't trigger scale-up: 1 node(s) didn't match Pod's node affinity/selector",
    ]


def test_an_empty_group_scales_from_zero_using_its_capacity_annotations() -> None:
    labels = {"capacity.cluster-autoscaler.kubernetes.io/labels": "pool=batch"}
    sim, client = setup(replicas=0, low=0, high=3, **labels)
    assert sim.count("nodes") == 0
    pending(client, "job", memory="8Gi", nodeSelector={"pool": "batch"})
    sim.run_for(11)
    assert replicas(sim) == 1
    sim.run_for(120)
    (node,) = sim.objects("nodes")
    assert node["status"]["capacity"]["memory"] == "16Gi"
    assert node["metadata"]["labels"]["pool"] == "batch"


def test_untolerated_taints_of_the_group_are_a_reason() -> None:
    taints = {"capacity.cluster-autoscaler.kubernetes.io/taints": "gpu=true:NoSchedule"}
    sim, client = setup(replicas=0, low=0, high=3, **taints)
    pending(client, "plain", memory="1Gi")
    sim.run_for(11)
    assert replicas(sim) == 0
    assert messages(sim, "NotTriggerScaleUp") == [
        "pod didn't trigger scale-up: 1 node(s) had untolerated taint {gpu: true}"
    ]
