"""GKE nodes and the system pods GKE runs on them, for the bundled snapshots.

Numbers follow GKE's own rules: allocatable memory is capacity minus the kube-reserved ladder
(25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% above)
minus the 100Mi hard-eviction threshold; allocatable CPU keeps 6% of the first core, 1% of the
second, 0.5% of the next two and 0.25% of the rest for the system. Node names are
``gke-<cluster>-<pool>-<instance group hash>-<4 chars>``; one instance group per pool and zone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.testing import bodies, lifelike

Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Machine:
    type: str
    cpu: str
    allocatable_cpu: str
    memory: str
    allocatable_memory: str

    @property
    def family(self) -> str:
        return self.type.split("-", 1)[0]


MACHINES = {
    m.type: m
    for m in (
        Machine("e2-standard-2", "2", "1930m", "8145492Ki", "6155655Ki"),
        Machine("n1-highmem-4", "4", "3920m", "26752724Ki", "23294881Ki"),
        Machine("n2-highmem-4", "4", "3920m", "32880584Ki", "29045254Ki"),
        Machine("n2-standard-8", "8", "7910m", "32880592Ki", "29045262Ki"),
        Machine("n2-highmem-16", "16", "15890m", "132008720Ki", "122133592Ki"),
    )
}


@dataclass(frozen=True, slots=True)
class Cluster:
    name: str
    project: str
    region: str
    version: str
    runtime: str
    kernel: str
    modern: bool
    """Kubernetes 1.29 or later (pods carry ``PodReadyToStartContainers``)."""
    pod_range: str = "10.8"
    node_range: str = "10.128.0"

    def image(self, path: str) -> str:
        return f"gke.gcr.io/{path}"


_NPD = (
    (
        "FrequentUnregisterNetDevice",
        "NoFrequentUnregisterNetDevice",
        "node is functioning properly",
    ),
    ("FrequentKubeletRestart", "NoFrequentKubeletRestart", "kubelet is functioning properly"),
    (
        "FrequentContainerdRestart",
        "NoFrequentContainerdRestart",
        "containerd is functioning properly",
    ),
    ("KernelDeadlock", "KernelHasNoDeadlock", "kernel has no deadlock"),
    ("ReadonlyFilesystem", "FilesystemIsNotReadOnly", "Filesystem is not read-only"),
)

NOT_READY_CNI = (
    "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
    "message:Network plugin returns error: cni plugin not initialized"
)


def node(
    cluster: Cluster,
    *,
    pool: str,
    machine: str,
    zone: str,
    index: int,
    created: datetime,
    heartbeat: datetime,
    labels: dict[str, str] | None = None,
    taints: list[Obj] | None = None,
    ready: bool = True,
    ready_since: datetime | None = None,
    network_unavailable: bool = False,
    memory_pressure_since: datetime | None = None,
) -> Obj:
    """A GKE node of ``pool``. ``ready=False`` is a node still waiting for its CNI."""
    spec_m = MACHINES[machine]
    group = lifelike.digest("group", cluster.name, pool, zone).hex()[:8]
    suffix = "".join(
        "abcdefghijklmnopqrstuvwxyz0123456789"[b % 36]
        for b in lifelike.digest("node", cluster.name, pool, zone, str(index))[:4]
    )
    name = f"gke-{cluster.name}-{pool}-{group}-{suffix}"
    node_labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/instance-type": machine,
        "beta.kubernetes.io/os": "linux",
        "cloud.google.com/gke-boot-disk": "pd-balanced",
        "cloud.google.com/gke-container-runtime": "containerd",
        "cloud.google.com/gke-cpu-scaling-level": spec_m.cpu,
        "cloud.google.com/gke-logging-variant": "DEFAULT",
        "cloud.google.com/gke-max-pods-per-node": "110",
        "cloud.google.com/gke-nodepool": pool,
        "cloud.google.com/gke-os-distribution": "cos",
        "cloud.google.com/machine-family": spec_m.family,
        "cloud.google.com/private-node": "false",
        "failure-domain.beta.kubernetes.io/region": cluster.region,
        "failure-domain.beta.kubernetes.io/zone": zone,
        "node.kubernetes.io/instance-type": machine,
        "topology.gke.io/zone": zone,
        "topology.kubernetes.io/region": cluster.region,
        "topology.kubernetes.io/zone": zone,
        **(labels or {}),
    }
    body = bodies.node(
        name,
        cpu=spec_m.cpu,
        memory=spec_m.memory,
        allocatable_cpu=spec_m.allocatable_cpu,
        allocatable_memory=spec_m.allocatable_memory,
        labels=node_labels,
        created=created,
        taints=taints,
    )
    body["metadata"]["labels"] = dict(sorted(body["metadata"]["labels"].items()))
    instance = f"projects/{cluster.project}/zones/{zone}/instances/{name}"
    body["metadata"]["annotations"] = {
        "container.googleapis.com/instance_id": str(
            int.from_bytes(lifelike.digest("instance", name)[:8], "big") % 10**19
        ),
        "csi.volume.kubernetes.io/nodeid": '{"pd.csi.storage.gke.io":"' + instance + '"}',
        "node.alpha.kubernetes.io/ttl": "0",
        "node.gke.io/last-applied-node-labels": ",".join(
            f"{k}={v}" for k, v in sorted(node_labels.items()) if k.startswith("cloud.google")
        ),
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    }
    cidr = f"{cluster.pod_range}.{lifelike.digest('cidr', name)[0]}.0/24"
    body["spec"] = {
        "podCIDR": cidr,
        "podCIDRs": [cidr],
        "providerID": f"gce://{cluster.project}/{zone}/{name}",
        **({"taints": taints} if taints else {}),
    }
    status = body["status"]
    for key in ("capacity", "allocatable"):
        status[key] = {
            "attachable-volumes-gce-pd": "127",
            "cpu": status[key]["cpu"],
            "ephemeral-storage": "98831908Ki" if key == "capacity" else "47060071478",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": status[key]["memory"],
            "pods": "110",
        }
    born, route = created + timedelta(seconds=2), created + timedelta(seconds=8)
    conditions = [
        lifelike.condition(
            kind, "False", reason=reason, message=message, beat=heartbeat, since=born
        )
        for kind, reason, message in _NPD
    ]
    conditions.append(
        lifelike.condition("NetworkUnavailable", "True", reason="NoRouteCreated",
                     message="Node created without a route", beat=born, since=born)
        if network_unavailable
        else lifelike.condition("NetworkUnavailable", "False", reason="RouteCreated",
                          message="NodeController create implicit route", beat=route,
                          since=route)
    )  # fmt: skip
    pressure = "True" if memory_pressure_since else "False"
    conditions.append(lifelike.condition("MemoryPressure", pressure, beat=heartbeat,
                                   since=memory_pressure_since or born))  # fmt: skip
    conditions.extend(lifelike.condition(kind, "False", beat=heartbeat, since=born)
                      for kind in ("DiskPressure", "PIDPressure"))  # fmt: skip
    conditions.append(
        lifelike.condition("Ready", "True", beat=heartbeat,
                     since=ready_since or created + timedelta(seconds=21))
        if ready
        else lifelike.condition("Ready", "False", reason="KubeletNotReady", message=NOT_READY_CNI,
                          beat=heartbeat, since=born)
    )  # fmt: skip
    status["conditions"] = conditions
    status["addresses"] = [
        {"address": lifelike.ip_in(cluster.node_range, name), "type": "InternalIP"},
        {"address": lifelike.ip_in("34", name), "type": "ExternalIP"},
        {"address": f"{name}.c.{cluster.project}.internal", "type": "InternalDNS"},
        {"address": f"{name}.c.{cluster.project}.internal", "type": "Hostname"},
    ]
    status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": 10250}}
    status["nodeInfo"] = {
        "architecture": "amd64",
        "bootID": bodies.uid_for("boot", name),
        "containerRuntimeVersion": cluster.runtime,
        "kernelVersion": cluster.kernel,
        "kubeProxyVersion": cluster.version,
        "kubeletVersion": cluster.version,
        "machineID": lifelike.digest("machine", name).hex()[:32],
        "operatingSystem": "linux",
        "osImage": "Container-Optimized OS from Google",
        "systemUUID": bodies.uid_for("system", name),
    }
    return body


def taint(key: str, value: str | None, effect: str, added: datetime | None = None) -> Obj:
    body: Obj = {"effect": effect, "key": key}
    if value is not None:
        body["value"] = value
    if added is not None:
        body["timeAdded"] = bodies.stamp(added)
    return body


# (DaemonSet, k8s-app label, [(container, image, cpu, memory, memory limit)], host network)
# fmt: off
_DAEMONS: tuple[tuple[str, str, tuple[tuple[str, str, str, str, str], ...], bool], ...] = (
    ("fluentbit-gke", "fluentbit-gke", (
        ("fluentbit", "fluent-bit:v1.8.12-gke.23", "50m", "100Mi", "250Mi"),
        ("fluentbit-gke", "fluent-bit-gke-exporter:v0.24.0-gke.1", "50m", "100Mi", "250Mi"),
    ), True),
    ("gke-metrics-agent", "gke-metrics-agent", (
        ("gke-metrics-agent", "gke-metrics-agent:1.8.3-gke.0", "8m", "60Mi", "60Mi"),
    ), False),
    ("pdcsi-node", "gcp-compute-persistent-disk-csi-driver", (
        ("csi-driver-registrar", "csi-node-driver-registrar:v2.5.1-gke.0", "5m", "10Mi", ""),
        ("gce-pd-driver", "gcp-compute-persistent-disk-csi-driver:v1.8.1", "5m", "10Mi", ""),
    ), True),
)
_NETWORK_POLICY_DAEMONS: tuple[tuple[str, str, tuple[tuple[str, str, str, str, str], ...], bool],
                               ...] = (
    ("calico-node", "calico-node", (
        ("calico-node", "calico/node:v3.23.3-gke.1", "100m", "", ""),
    ), True),
    ("ip-masq-agent", "ip-masq-agent", (
        ("ip-masq-agent", "ip-masq-agent:v2.8.0-gke.3", "10m", "16Mi", "16Mi"),
    ), True),
)
# fmt: on


def system_daemonsets(cluster: Cluster, *, created: datetime, calico: bool) -> list[Obj]:
    """The DaemonSets GKE installs in ``kube-system`` (Calico and ip-masq-agent only with
    network policy on), all ``system-node-critical``."""
    chosen = _DAEMONS + (_NETWORK_POLICY_DAEMONS if calico else ())
    return [
        lifelike.daemonset(
            name,
            namespace="kube-system",
            containers=[
                bodies.container(
                    container,
                    image=cluster.image(image),
                    requests={"cpu": cpu, **({"memory": memory} if memory else {})},
                    limits={"memory": limit} if limit else None,
                )
                for container, image, cpu, memory, limit in containers
            ],
            created=created,
            labels={"k8s-app": app},
            pod_spec={
                "priorityClassName": "system-node-critical",
                **({"hostNetwork": True} if host else {}),
            },
        )
        for name, app, containers, host in chosen
    ]


def kube_proxy(cluster: Cluster, node_body: Obj, *, started: datetime) -> Obj:
    """The kube-proxy static pod's mirror: owned by its Node, as every mirror pod is."""
    node_name = node_body["metadata"]["name"]
    body = lifelike.controlled_pod(
        None,
        f"kube-proxy-{node_name}",
        namespace="kube-system",
        node=node_body,
        created=started,
        labels={"component": "kube-proxy", "tier": "node"},
        modern=cluster.modern,
        extra_spec={
            "containers": [
                bodies.container(
                    "kube-proxy",
                    image=cluster.image(f"kube-proxy-amd64:{cluster.version}"),
                    requests={"cpu": "100m"},
                )
            ],
            "hostNetwork": True,
            "priorityClassName": "system-node-critical",
            "tolerations": [
                {"effect": "NoExecute", "operator": "Exists"},
                {"effect": "NoSchedule", "operator": "Exists"},
            ],
        },
    )
    config_hash = lifelike.digest("kube-proxy", cluster.version).hex()[:32]
    body["metadata"]["annotations"] = {
        "kubernetes.io/config.hash": config_hash,
        "kubernetes.io/config.mirror": config_hash,
        "kubernetes.io/config.seen": bodies.stamp(started),
        "kubernetes.io/config.source": "file",
    }
    body["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "v1",
            "controller": True,
            "kind": "Node",
            "name": node_name,
            "uid": node_body["metadata"]["uid"],
        }
    ]
    body["spec"]["tolerations"] = body["spec"]["tolerations"][:2]
    return body


def daemon_pods(
    cluster: Cluster,
    daemonsets: list[Obj],
    node_body: Obj,
    *,
    started: datetime,
    running: bool = True,
) -> list[Obj]:
    """One pod per DaemonSet on ``node_body`` plus kube-proxy; ``running=False`` leaves them
    Pending in ``ContainerCreating`` (a node whose CNI is not up yet)."""
    node_name = node_body["metadata"]["name"]
    pods = [kube_proxy(cluster, node_body, started=started)]
    for ds in daemonsets:
        meta = ds["metadata"]
        name = f"{meta['name']}-{lifelike.kube_name(meta['namespace'], meta['name'], node_name)}"
        host_network = bool(ds["spec"]["template"]["spec"].get("hostNetwork"))
        pod = lifelike.controlled_pod(
            ds,
            name,
            node=node_body,
            created=started,
            phase="Running" if running or host_network else "Pending",
            ready=running,
            labels={
                "controller-revision-hash": lifelike.pod_template_hash("ds", meta["name"]),
                "pod-template-generation": "1",
            },
            modern=cluster.modern,
        )
        if pod["status"]["phase"] == "Pending":
            pod["status"]["conditions"] = [
                {
                    "lastProbeTime": None,
                    "lastTransitionTime": bodies.stamp(started),
                    "status": "True",
                    "type": "PodScheduled",
                }
            ]
        pods.append(pod)
    return pods
