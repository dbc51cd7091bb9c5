"""Incident 2's cluster: an on-prem Kubernetes-as-a-Service cluster (Cluster API + OpenStack).

kubeadm-built, Kubernetes 1.21, Calico, Cinder CSI, the OpenStack cloud controller manager.
Three control-plane machines (KubeadmControlPlane ``ake-c01-control-plane``) and eight workers
(MachineDeployment ``ake-c01-md-0``). Node names are the Machine names Cluster API generates;
the nodes carry Cluster API's annotations pointing back to their Machine.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import bodies, lifelike

Obj = dict[str, Any]

NOW = datetime(2021, 11, 4, 6, 41, 17, tzinfo=UTC)
VERSION = "v1.21.5"
MACHINE_SET = f"ake-c01-md-0-{lifelike.pod_template_hash('ake-c01', 'md-0')}"
UNREACHABLE_SINCE = NOW - timedelta(minutes=12, seconds=5)
RUNTIME_DOWN_SINCE = NOW - timedelta(minutes=4, seconds=2)
RUNTIME_DOWN = (
    "[container runtime is down, PLEG is not healthy: pleg was last seen active "
    "4m25.196301541s ago; threshold is 3m0s]"
)


def node(
    name: str,
    *,
    control_plane: bool,
    created: datetime,
    heartbeat: datetime,
    index: int,
    unreachable: bool = False,
    runtime_down: bool = False,
) -> Obj:
    flavor = "m1.large" if control_plane else "m1.xlarge"
    cpu, memory, allocatable = (
        ("4", "8152812Ki", "8050412Ki") if control_plane else ("8", "16393236Ki", "16290836Ki")
    )
    labels = {
        "beta.kubernetes.io/instance-type": flavor,
        "failure-domain.beta.kubernetes.io/region": "RegionOne",
        "failure-domain.beta.kubernetes.io/zone": "nova",
        "node.kubernetes.io/instance-type": flavor,
        "topology.cinder.csi.openstack.org/zone": "nova",
        "topology.kubernetes.io/region": "RegionOne",
        "topology.kubernetes.io/zone": "nova",
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
    }
    taints: list[Obj] = []
    if control_plane:
        labels.update(
            {
                "node-role.kubernetes.io/control-plane": "",
                "node-role.kubernetes.io/master": "",
                "node.kubernetes.io/exclude-from-external-load-balancers": "",
            }
        )
        taints.append({"effect": "NoSchedule", "key": "node-role.kubernetes.io/master"})
    body = bodies.node(
        name, cpu=cpu, memory=memory, allocatable_memory=allocatable, labels=labels, created=created
    )
    meta = body["metadata"]
    meta["labels"] = dict(sorted(meta["labels"].items()))
    address = f"10.0.1.{20 + index}"
    tunnel = f"192.168.{lifelike.digest('tunnel', name)[0]}.0"
    vm = bodies.uid_for("vm", name)
    meta["annotations"] = {
        "cluster.x-k8s.io/cluster-name": "ake-c01",
        "cluster.x-k8s.io/cluster-namespace": "ake-c01",
        "cluster.x-k8s.io/machine": name,
        "cluster.x-k8s.io/owner-kind": "KubeadmControlPlane" if control_plane else "MachineSet",
        "cluster.x-k8s.io/owner-name": "ake-c01-control-plane" if control_plane else MACHINE_SET,
        "csi.volume.kubernetes.io/nodeid": '{"cinder.csi.openstack.org":"' + vm + '"}',
        "kubeadm.alpha.kubernetes.io/cri-socket": "/run/containerd/containerd.sock",
        "node.alpha.kubernetes.io/ttl": "0",
        "projectcalico.org/IPv4Address": f"{address}/24",
        "projectcalico.org/IPv4IPIPTunnelAddr": tunnel,
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    cidr = f"192.168.{index}.0/24"
    body["spec"] = {"podCIDR": cidr, "podCIDRs": [cidr], "providerID": f"openstack:///{vm}"}
    if unreachable:
        taints += [
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/unreachable",
                "timeAdded": bodies.stamp(UNREACHABLE_SINCE),
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/unreachable",
                "timeAdded": bodies.stamp(UNREACHABLE_SINCE + timedelta(seconds=5)),
            },
        ]
    if runtime_down:
        taints += [
            {
                "effect": "NoSchedule",
                "key": "node.kubernetes.io/not-ready",
                "timeAdded": bodies.stamp(RUNTIME_DOWN_SINCE + timedelta(seconds=1)),
            },
            {
                "effect": "NoExecute",
                "key": "node.kubernetes.io/not-ready",
                "timeAdded": bodies.stamp(RUNTIME_DOWN_SINCE + timedelta(seconds=6)),
            },
        ]
    if taints:
        body["spec"]["taints"] = taints
    booted = created + timedelta(seconds=30)
    conditions = [lifelike.condition("NetworkUnavailable", "False", reason="CalicoIsUp",
                               message="Calico is running on this node", beat=booted,
                               since=booted)]  # fmt: skip
    kinds = ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
    if unreachable:  # the node lifecycle controller's words, the kubelet's last heartbeat
        last = UNREACHABLE_SINCE - timedelta(minutes=3, seconds=25)
        conditions.extend(
            lifelike.condition(kind, "Unknown", reason="NodeStatusUnknown",
                         message="Kubelet stopped posting node status.", beat=last,
                         since=UNREACHABLE_SINCE)
            for kind in kinds
        )  # fmt: skip
    else:
        conditions.extend(lifelike.condition(kind, "False", beat=heartbeat, since=booted)
                          for kind in kinds[:3])  # fmt: skip
        conditions.append(
            lifelike.condition("Ready", "False", reason="KubeletNotReady", message=RUNTIME_DOWN,
                         beat=heartbeat, since=RUNTIME_DOWN_SINCE)
            if runtime_down
            else lifelike.condition("Ready", "True", beat=heartbeat,
                              since=booted + timedelta(seconds=40))
        )  # fmt: skip
    status = body["status"]
    status["capacity"] = {
        "cpu": cpu,
        "ephemeral-storage": "162420480Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": memory,
        "pods": "110",
    }
    status["allocatable"] = {
        **status["capacity"],
        "ephemeral-storage": "149687292516",
        "memory": allocatable,
    }
    status["conditions"] = conditions
    status["addresses"] = [
        {"address": address, "type": "InternalIP"},
        {"address": name, "type": "Hostname"},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {
        "architecture": "amd64",
        "bootID": bodies.uid_for("boot", name),
        "containerRuntimeVersion": "containerd://1.4.11",
        "kernelVersion": "5.4.0-89-generic",
        "kubeProxyVersion": VERSION,
        "kubeletVersion": VERSION,
        "machineID": lifelike.digest("machine", name).hex()[:32],
        "operatingSystem": "linux",
        "osImage": "Ubuntu 20.04.3 LTS",
        "systemUUID": vm.upper(),
    }
    return body


def nodes() -> tuple[list[Obj], list[Obj]]:
    """(control planes, workers); worker 3 stopped posting, worker 6's containerd is down."""
    planes = [
        node(
            f"ake-c01-control-plane-{lifelike.kube_name('cp', str(i))}",
            control_plane=True,
            created=datetime(2021, 10, 18, 2, 4, 51, tzinfo=UTC) + timedelta(minutes=6 * i),
            heartbeat=NOW - timedelta(seconds=20 + 83 * i),
            index=i,
        )
        for i in range(3)
    ]
    workers = [
        node(
            f"{MACHINE_SET}-{lifelike.kube_name('md-0', str(i))}",
            control_plane=False,
            created=datetime(2021, 11, 1, 9, 12, 5, tzinfo=UTC)
            + timedelta(minutes=4 * i, seconds=13 * i),
            heartbeat=NOW - timedelta(seconds=0 if i == 6 else 15 + 36 * i),
            index=10 + i,
            unreachable=i == 3,
            runtime_down=i == 6,
        )
        for i in range(8)
    ]
    return planes, workers
