"""Large clusters, generated: nodes in pools and zones, workloads already running on them.

:func:`generate` returns the objects of a cluster that has been up for a while (Namespaces, Nodes
as their kubelets registered them, Deployments with their ReplicaSets, DaemonSets, and Running pods
bound to nodes, with the statuses and ``managedFields`` their controllers and kubelets would have
written), in the form the API server stores them (defaulted, quantities canonical), so
:meth:`ApiServer.load(objects, defaulted=True) <kubemedic.sim.apiserver.server.ApiServer.load>` may
skip the per-object defaulting (the tests hold the generator to that). The kubelets of a
:class:`~kubemedic.sim.cluster.assembly.Cluster` adopt the nodes and the controllers adopt the
workloads, so a benchmark starts from a steady state instead of watching 60,000 pods being
scheduled. Pods and pod templates carry usage annotations (``usage.sim.kubemedic.io/<container>``)
for the usage model: working sets at 40-70% of the memory request, CPU at 10-40% of the request.

Placement respects what the scheduler would: every pod fits its node's allocatable CPU, memory
and pod count, DaemonSet pods land one per node (with the ``matchFields`` node affinity and the
tolerations the DaemonSet controller adds), and Deployment pods go to untainted nodes only.

Nodes come from :func:`kubemedic.sim.scenarios.nodebuilding.node` (re-exported here with
``KUBELET_VERSION``), which scenarios use for their node pools too. Everything is deterministic
for a given ``seed``.
"""

from __future__ import annotations

import gc
import hashlib
import json
import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.model.quantities import parse_quantity
from kubemedic.sim.machinery import managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.naming import GENERATED_NAME_ALPHABET
from kubemedic.sim.scenarios.nodebuilding import KUBELET_VERSION, node, update_entry

__all__ = [
    "KUBELET_VERSION",
    "POOL_LABEL",
    "Generated",
    "GeneratedPool",
    "Layout",
    "generate",
    "node",
    "usage_annotation",
]

Obj = dict[str, Any]

#: The label naming a node's pool (kubemedic reads it among the usual provisioners' labels).
POOL_LABEL = "node.kubernetes.io/pool"
USAGE_PREFIX = "usage.sim.kubemedic.io/"
_WORDS = (
    "api", "web", "worker", "cache", "search", "billing", "auth", "catalog", "checkout", "media",
    "notify", "orders", "payments", "profile", "queue", "report", "session", "stream", "sync",
)  # fmt: skip


def usage_annotation(container: str, **usage: str) -> tuple[str, str]:
    """``(key, value)`` of a usage annotation (``memory="600Mi", cpu="50m"``...)."""
    return f"{USAGE_PREFIX}{container}", json.dumps(usage, separators=(",", ":"))


# the generator ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GeneratedPool:
    """A share of the generated nodes: ``weight`` relative to the other pools."""

    name: str
    weight: float = 1.0
    cpu: str = "16"
    memory: str = "64Gi"
    pods: int = 110
    instance_type: str = "n2-standard-16"
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()


@dataclass(frozen=True)
class Layout:
    """What to generate. Pods are DaemonSet pods (one per node per DaemonSet) plus Deployment
    pods for the rest; ``replicas`` bounds each Deployment's size."""

    nodes: int = 2000
    pods: int = 60_000
    pools: tuple[GeneratedPool, ...] = (
        GeneratedPool("system", weight=0.05, cpu="8", memory="32Gi", instance_type="n2-standard-8"),
        GeneratedPool("general", weight=0.95),
    )
    zones: tuple[str, ...] = ("zone-a", "zone-b", "zone-c")
    region: str = "region-1"
    daemonsets: tuple[str, ...] = ("kube-proxy", "node-exporter")
    namespaces: int = 20
    replicas: tuple[int, int] = (2, 60)
    seed: int = 0
    #: When the generated cluster is observed (nodes heartbeat then); objects are older.
    now: datetime = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Generated:
    objects: list[Obj]
    nodes: int
    pods: int
    deployments: int
    daemonsets: int


@dataclass
class _Slot:
    name: str
    ip_base: str
    cpu: int
    memory: int
    pods: int
    tainted: bool
    internal_ip: str
    ips: int = 0


_CPU_CHOICES = (50, 100, 100, 200, 250, 500)
_MEMORY_CHOICES_MI = (64, 128, 128, 256, 256, 512, 768, 1024)


def generate(layout: Layout | None = None) -> Generated:
    """A cluster per ``layout`` (default: 2,000 nodes, 60,000 pods)."""
    layout = layout or Layout()
    # Hundreds of thousands of new dicts and no garbage: collection would only slow this down.
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _Generator(layout).run()
    finally:
        if enabled:
            gc.enable()


class _Generator:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.random = random.Random(layout.seed)  # noqa: S311 (simulation, not cryptography)
        self.now = layout.now
        self.created = layout.now - timedelta(days=3)
        self.objects: list[Obj] = []
        self.slots: list[_Slot] = []
        self.pods = 0
        self.started = rfc3339(self.created + timedelta(seconds=30))
        self.pod_managed = _pod_managed(self.created)
        self.conditions = [
            {"lastProbeTime": None, "lastTransitionTime": self.started, "status": "True", "type": t}
            for t in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            )
        ]

    def uid(self) -> str:
        h = f"{self.random.getrandbits(128):032x}"
        variant = "89ab"[int(h[16], 16) & 3]
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{variant}{h[17:20]}-{h[20:]}"

    def suffix(self, length: int) -> str:
        """``length`` characters of apimachinery's ``rand.String`` alphabet."""
        n = self.random.getrandbits(8 * length)
        out = []
        for _ in range(length):
            n, digit = divmod(n, len(GENERATED_NAME_ALPHABET))
            out.append(GENERATED_NAME_ALPHABET[digit])
        return "".join(out)

    def run(self) -> Generated:
        layout = self.layout
        namespaces = [f"team-{i + 1:02d}" for i in range(max(1, layout.namespaces))]
        for ns in ("kube-system", *namespaces):
            self.objects.append(_namespace(ns))
        self._nodes()
        per_ds = len(self.slots)
        daemonsets = list(layout.daemonsets)
        while daemonsets and per_ds * len(daemonsets) > layout.pods:
            daemonsets.pop()
        for name in daemonsets:
            self._daemonset(name)
        deployments = self._deployments(namespaces, layout.pods - self.pods)
        return Generated(self.objects, len(self.slots), self.pods, deployments, len(daemonsets))

    def _nodes(self) -> None:
        layout = self.layout
        total_weight = sum(p.weight for p in layout.pools) or 1.0
        counts = [int(layout.nodes * p.weight / total_weight) for p in layout.pools]
        counts[-1] += layout.nodes - sum(counts)
        index = 0
        for pool, count in zip(layout.pools, counts, strict=True):
            for i in range(count):
                zone = layout.zones[index % len(layout.zones)] if layout.zones else ""
                name = f"{pool.name}-{zone.rsplit('-', 1)[-1] + '-' if zone else ''}{i + 1:04d}"
                labels = {
                    POOL_LABEL: pool.name,
                    "node.kubernetes.io/instance-type": pool.instance_type,
                    **({"topology.kubernetes.io/zone": zone} if zone else {}),
                    "topology.kubernetes.io/region": layout.region,
                    **pool.labels,
                }
                ip_base = f"10.{64 + index // 256}.{index % 256}"
                internal_ip = f"172.{16 + index // 65536}.{index // 256 % 256}.{index % 256}"
                body = node(
                    name,
                    capacity={"cpu": pool.cpu, "memory": pool.memory, "pods": pool.pods},
                    labels=labels,
                    taints=pool.taints,
                    created=self.created,
                    heartbeat=self.now,
                    internal_ip=internal_ip,
                    pod_cidr=f"{ip_base}.0/24",
                )
                alloc = body["status"]["allocatable"]
                self.slots.append(
                    _Slot(
                        name,
                        ip_base,
                        cpu=parse_quantity(alloc["cpu"]).milli,
                        memory=int(parse_quantity(alloc["memory"]).value),
                        pods=int(alloc["pods"]),
                        tainted=bool(pool.taints),
                        internal_ip=internal_ip,
                    )
                )
                self.objects.append(body)
                index += 1

    # pods ------------------------------------------------------------------------------------

    def _container(self, name: str, cpu: int, memory_mi: int) -> Obj:
        return {
            "image": f"registry.example/{name}:1.0",
            "imagePullPolicy": "IfNotPresent",
            "name": name,
            "resources": {
                "limits": {"memory": _canonical(f"{memory_mi}Mi")},
                "requests": {"cpu": _canonical(f"{cpu}m"), "memory": _canonical(f"{memory_mi}Mi")},
            },
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File",
        }

    def _pod_spec(self, container: Obj) -> Obj:
        return {
            "containers": [container],
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
        }

    def _usage(self, container: str, cpu: int, memory_mi: int) -> dict[str, str]:
        memory = int(memory_mi * self.random.uniform(0.4, 0.7))
        used_cpu = max(1, int(cpu * self.random.uniform(0.1, 0.4)))
        key, value = usage_annotation(container, memory=f"{memory}Mi", cpu=f"{used_cpu}m")
        return {key: value}

    def _meta(self, name: str, namespace: str, labels: Mapping[str, str], **extra: Any) -> Obj:
        """Metadata of a workload object made three days ago (generation 1)."""
        meta: Obj = {"creationTimestamp": rfc3339(self.created), "generation": 1}
        meta.update(labels=dict(labels), name=name, namespace=namespace, uid=self.uid())
        meta.update(extra)
        return meta

    def _pod(self, *, owner: Obj, template: Obj, slot: _Slot, name: str) -> Obj:
        spec = dict(template["spec"])
        spec["nodeName"] = slot.name
        spec["tolerations"] = _tolerations(template["spec"])
        container = spec["containers"][0]
        slot.ips += 1
        ip = f"{slot.ip_base}.{slot.ips + 1}"
        running = {"running": {"startedAt": self.started}}
        status = {
            "containerID": f"containerd://{self.random.getrandbits(256):064x}",
            "image": container["image"],
            "imageID": f"{container['image']}@sha256:{'0' * 64}",
            "lastState": {},
            "name": container["name"],
            "ready": True,
            "restartCount": 0,
            "started": True,
            "state": running,
        }
        meta = {
            "annotations": dict(template["metadata"].get("annotations") or {}),
            "creationTimestamp": self.started,
            "generateName": f"{owner['metadata']['name']}-",
            "labels": dict(template["metadata"]["labels"]),
            "managedFields": self.pod_managed,
            "name": name,
            "namespace": owner["metadata"]["namespace"],
            "ownerReferences": [_owner(owner)],
            "uid": self.uid(),
        }
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": meta,
            "spec": spec,
            "status": {
                "conditions": self.conditions,
                "containerStatuses": [status],
                "hostIP": slot.internal_ip,
                "hostIPs": [{"ip": slot.internal_ip}],
                "phase": "Running",
                "podIP": ip,
                "podIPs": [{"ip": ip}],
                "qosClass": "Burstable",
                "startTime": self.started,
            },
        }

    def _place(self, slot: _Slot, cpu: int, memory: int) -> bool:
        if slot.pods < 1 or slot.cpu < cpu or slot.memory < memory:
            return False
        slot.cpu -= cpu
        slot.memory -= memory
        slot.pods -= 1
        return True

    def _daemonset(self, name: str) -> None:
        """A node agent on every node (one pod per node, each pinned by the ``matchFields``
        node affinity the DaemonSet controller writes)."""
        cpu, memory_mi = 50, 64
        labels = {"app.kubernetes.io/name": name}
        spec = self._pod_spec(self._container(name, cpu, memory_mi))
        spec.update(
            tolerations=[{"operator": "Exists"}],
            priorityClassName="system-node-critical",
            priority=2000001000,
        )
        annotations = self._usage(name, cpu, memory_mi)
        count = len(self.slots)
        generation = {"deprecated.daemonset.template.generation": "1"}
        rolling = {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"}
        numbers = ("current", "desired", "available", "ready", "updated")
        ds: Obj = {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": self._meta(name, "kube-system", labels, annotations=generation),
            "spec": {
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": dict(labels)},
                "template": {
                    "metadata": {"annotations": annotations, "labels": labels},
                    "spec": spec,
                },
                "updateStrategy": rolling,
            },
            "status": {
                **{_DS_STATUS[n]: count for n in numbers},
                "numberMisscheduled": 0,
                "observedGeneration": 1,
            },
        }
        self.objects.append(ds)
        revision = hashlib.sha256(name.encode()).hexdigest()[:10]
        pod_labels = {
            **labels,
            "controller-revision-hash": revision,
            "pod-template-generation": "1",
        }
        template = {"metadata": {"annotations": annotations, "labels": pod_labels}, "spec": spec}
        for slot in self.slots:
            self._place(slot, cpu, memory_mi << 20)
            pod = self._pod(owner=ds, template=template, slot=slot, name=f"{name}-{self.suffix(5)}")
            term = {
                "matchFields": [{"key": "metadata.name", "operator": "In", "values": [slot.name]}]
            }
            required = {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
            pod["spec"]["affinity"] = {"nodeAffinity": required}
            self.objects.append(pod)
            self.pods += 1

    def _deployments(self, namespaces: list[str], wanted: int) -> int:
        low, high = self.layout.replicas
        open_slots = [s for s in self.slots if not s.tainted]
        self.random.shuffle(open_slots)
        cursor = 0
        made = 0
        while wanted > 0 and open_slots:
            replicas = min(wanted, self.random.randint(low, max(low, high)))
            made += 1
            name = f"{self.random.choice(_WORDS)}-{made}"
            namespace = namespaces[made % len(namespaces)]
            cpu = self.random.choice(_CPU_CHOICES)
            memory_mi = self.random.choice(_MEMORY_CHOICES_MI)
            placements = self._placements(open_slots, cursor, replicas, cpu, memory_mi << 20)
            if placements:
                self._deployment(name, namespace, placements, cpu=cpu, memory_mi=memory_mi)
            cursor += len(placements)
            wanted -= len(placements)
            if len(placements) < replicas:  # the cluster is full
                break
        return made

    def _placements(
        self, slots: list[_Slot], cursor: int, replicas: int, cpu: int, memory: int
    ) -> list[_Slot]:
        """Nodes for up to ``replicas`` pods, round-robin from ``cursor`` (spread like the
        scheduler's LeastAllocated scoring would spread them)."""
        placements: list[_Slot] = []
        tries = 0
        while len(placements) < replicas and tries < len(slots):
            slot = slots[(cursor + len(placements) + tries) % len(slots)]
            if self._place(slot, cpu, memory):
                placements.append(slot)
            else:
                tries += 1
        return placements

    def _deployment(
        self, name: str, namespace: str, placements: list[_Slot], *, cpu: int, memory_mi: int
    ) -> None:
        """A Deployment, its one ReplicaSet and its pods, all available, as after a rollout."""
        labels = {"app.kubernetes.io/name": name}
        spec = self._pod_spec(self._container(name, cpu, memory_mi))
        annotations = self._usage(name, cpu, memory_mi)
        created = rfc3339(self.created)
        pod_hash = self.suffix(10)
        rs_name = f"{name}-{pod_hash}"
        count = len(placements)
        status = {"availableReplicas": count, "observedGeneration": 1, "readyReplicas": count}
        status["replicas"] = count
        available = (
            "Available",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.",
        )
        progressed = f'ReplicaSet "{rs_name}" has successfully progressed.'
        progressing = ("Progressing", "NewReplicaSetAvailable", progressed)
        rolling = {"maxSurge": "25%", "maxUnavailable": "25%"}
        revision = {"deployment.kubernetes.io/revision": "1"}
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": self._meta(name, namespace, labels, annotations=revision),
            "spec": {
                "progressDeadlineSeconds": 600,
                "replicas": count,
                "revisionHistoryLimit": 10,
                "selector": {"matchLabels": dict(labels)},
                "strategy": {"rollingUpdate": rolling, "type": "RollingUpdate"},
                "template": {
                    "metadata": {"annotations": annotations, "labels": labels},
                    "spec": spec,
                },
            },
            "status": {
                **status,
                "conditions": [_available(*c, at=created) for c in (available, progressing)],
                "updatedReplicas": count,
            },
        }
        rs_labels = {**labels, "pod-template-hash": pod_hash}
        template = {"metadata": {"annotations": annotations, "labels": rs_labels}, "spec": spec}
        rs_annotations = {
            "deployment.kubernetes.io/desired-replicas": str(count),
            "deployment.kubernetes.io/max-replicas": str(count + (count + 3) // 4),
            **revision,
        }
        owner = [_owner(deployment)]
        replicaset = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": self._meta(
                rs_name, namespace, rs_labels, annotations=rs_annotations, ownerReferences=owner
            ),
            "spec": {
                "replicas": count,
                "selector": {"matchLabels": dict(rs_labels)},
                "template": template,
            },
            "status": {**status, "fullyLabeledReplicas": count},
        }
        self.objects += [deployment, replicaset]
        for slot in placements:
            name = f"{rs_name}-{self.suffix(5)}"
            self.objects.append(
                self._pod(owner=replicaset, template=template, slot=slot, name=name)
            )
            self.pods += 1


_DS_STATUS = {
    "current": "currentNumberScheduled",
    "desired": "desiredNumberScheduled",
    "available": "numberAvailable",
    "ready": "numberReady",
    "updated": "updatedNumberScheduled",
}


def _canonical(quantity: str) -> str:
    """As the API server stores a quantity (``1024Mi`` is ``1Gi``): a stored object in any
    other form would change at its next write, and templates would stop matching."""
    return parse_quantity(quantity).canonical()


def _namespace(name: str) -> Obj:
    """A Namespace as the server stores it (the name label, the ``kubernetes`` finalizer)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"labels": {"kubernetes.io/metadata.name": name}, "name": name},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }


def _owner(obj: Obj) -> Obj:
    """The controller ownerReference to ``obj``."""
    meta = obj["metadata"]
    return {
        "apiVersion": obj["apiVersion"],
        "blockOwnerDeletion": True,
        "controller": True,
        "kind": obj["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
    }


_DEFAULT_TOLERATIONS = [
    {"effect": "NoExecute", "key": key, "operator": "Exists", "tolerationSeconds": 300}
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")
]


def _tolerations(spec: Obj) -> list[Obj]:
    """The template's tolerations plus the 300 s not-ready/unreachable ones the
    DefaultTolerationSeconds admission plugin adds (unless the pod tolerates those already)."""
    own: list[Obj] = spec.get("tolerations") or []
    if not own:
        return _DEFAULT_TOLERATIONS
    if any(t.get("operator") == "Exists" and not t.get("key") for t in own):
        return own
    return own + _DEFAULT_TOLERATIONS


def _available(type_: str, reason: str, message: str, *, at: str) -> Obj:
    """A ``True`` Deployment condition."""
    return {
        "lastTransitionTime": at,
        "lastUpdateTime": at,
        "message": message,
        "reason": reason,
        "status": "True",
        "type": type_,
    }


def _pod_managed(created: datetime) -> list[Obj]:
    """The two entries every controller-made, running pod carries (shared: ``load`` copies)."""
    meta: Obj = {"f:generateName": {}, "f:labels": {".": {}}, "f:ownerReferences": {".": {}}}
    spec: Obj = {"f:containers": {}, "f:restartPolicy": {}}
    fields = ("f:conditions", "f:containerStatuses", "f:phase", "f:podIP", "f:startTime")
    status: Obj = {key: {} for key in fields}
    return [
        update_entry(
            managers.KUBE_CONTROLLER_MANAGER, {"f:metadata": meta, "f:spec": spec}, rfc3339(created)
        ),
        update_entry(
            managers.KUBELET,
            {"f:status": status},
            rfc3339(created + timedelta(seconds=30)),
            subresource="status",
        ),
    ]
