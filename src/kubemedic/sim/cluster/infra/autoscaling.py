"""The cluster-autoscaler with its Cluster API provider: node groups grow for pending pods.

cluster-autoscaler 1.32 (``cluster-autoscaler/core/scaleup``, ``cloudprovider/clusterapi``),
every ``--scan-interval`` (10 s):

- **Node groups** are MachineDeployments (and MachineSets no MachineDeployment owns) carrying
  both ``cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size`` and ``...-max-size``;
  the group id is ``MachineDeployment/<namespace>/<name>``, its target size ``spec.replicas``,
  its nodes those of its machines (by provider ID).
- **Pending pods** are those the scheduler marked ``PodScheduled=False`` reason
  ``Unschedulable``. Those that fit on a ready node with room, or on a node a group is still
  bringing up (its target counts nodes not yet registered, and registered ones not ready within
  ``--max-node-startup-time``, 15 min, as upcoming), are left to the scheduler.
- **Simulation.** A new node of a group looks like a ready node of that group (its DaemonSet
  pods included), or, for an empty group, like the scale-from-zero annotations
  ``capacity.cluster-autoscaler.kubernetes.io/{cpu,memory,maxPods,labels,taints}`` describe.
  A pod fits when the scheduler's filters would pass on it: taints tolerated, node selector and
  required affinity matched, requests within what is free. Pods are bin-packed (first fit,
  largest first) onto as many new nodes as the group may still add.
- **Expander** ``random`` (the default) picks one group among those that help. The scale-up
  writes ``spec.replicas`` through the ``scale`` subresource (field manager
  ``cluster-autoscaler``), records ``ScaledUpGroup`` (``Scale-up: setting group <id> size to
  <n> instead of <m> (max: <max>)``) on the ``kube-system/cluster-autoscaler-status`` ConfigMap
  and ``TriggeredScaleUp`` (``pod triggered scale-up: [{<id> <m>-><n> (max: <max>)}]``) on each
  pod it helps. Never beyond a group's max size (nor ``--max-nodes-total``).
- When no group can help, each pending pod gets ``NotTriggerScaleUp``: ``pod didn't trigger
  scale-up: <reasons>``, where every group adds its reason (``max node group size reached``, or
  the filter's: ``Insufficient memory``, ``node(s) didn't match Pod's node affinity/selector``,
  ``node(s) had untolerated taint {key: value}``), counted and sorted as strings.

Scale-down is not simulated: nodes stay until a scenario or a repair removes them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.model import placement, resources
from kubemedic.model.quantities import Quantity, parse_quantity
from kubemedic.sim.cluster.infra.providers import CAPACITY, Flavor
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Obj

__all__ = ["MAX_SIZE", "MIN_SIZE", "Autoscaler", "NodeGroup"]

MANAGER = managers.CLUSTER_AUTOSCALER
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
MAX_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"
API_VERSION = "cluster.x-k8s.io/v1beta1"
STATUS_MAP = "cluster-autoscaler-status"
MAX_REACHED = "max node group size reached"
#: Taints a template node loses (``taints.SanitizeTaints``): node conditions, CA's own marks.
_SANITIZED = (
    "node.kubernetes.io/",
    "node.cluster.x-k8s.io/uninitialized",
    "ToBeDeletedByClusterAutoscaler",
    "DeletionCandidateOfClusterAutoscaler",
)


@dataclass
class NodeGroup:
    """One autoscaled MachineDeployment (or MachineSet)."""

    kind: str
    namespace: str
    name: str
    min_size: int
    max_size: int
    target: int
    nodes: list[Obj] = field(default_factory=list)
    template: Obj | None = None
    template_pods: list[Obj] = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass
class _Bin:
    """A node in the simulation (existing, upcoming or new): what is still free on it."""

    node: Obj
    free: dict[str, Quantity]
    pods: int


class Autoscaler:
    """A cluster-autoscaler scale-up loop over Cluster API node groups."""

    name = "cluster-autoscaler"

    def __init__(
        self,
        *,
        scan_interval: float = 10.0,
        max_nodes_total: int = 0,
        max_node_startup_seconds: float = 900.0,
    ) -> None:
        self.scan_interval = scan_interval
        self.max_nodes_total = max_nodes_total
        self.max_node_startup_seconds = max_node_startup_seconds
        self.scale_ups = 0
        #: Keys of the pods the scheduler marked unschedulable (the pod lister's filter, kept
        #: current from pod changes rather than by walking every pod each loop).
        self._unschedulable: set[tuple[str, str]] = set()

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, MANAGER)
        self.recorder = EventRecorder(sim, component=MANAGER, manager=MANAGER)
        sim.watch("pods", self._on_pod)
        self._unschedulable = {_pod_key(p) for p in sim.objects("pods") if _unschedulable(p)}
        sim.every(self.scan_interval, self.run_once, offset=self.scan_interval, name=MANAGER)

    def _on_pod(self, change: Change) -> None:
        if change.type != "DELETED" and _unschedulable(change.obj):
            self._unschedulable.add(_pod_key(change.obj))
        else:
            self._unschedulable.discard(_pod_key(change.obj))

    def sync(self) -> bool:
        return False  # all work happens in the periodic loop

    # the loop ----------------------------------------------------------------------------------

    def run_once(self) -> None:
        """One ``RunOnce``: find pending pods, try to scale a group up for them."""
        if not self._unschedulable:
            return
        found = (self.sim.get("pods", *key) for key in sorted(self._unschedulable))
        pending = [p for p in found if p is not None]
        groups = self.node_groups()
        # filterOutSchedulable: pods that fit on nodes that are there or coming are left alone
        bins = self._existing_bins()
        for group in groups:
            bins += [self._new_bin(group) for _ in range(self._upcoming(group))]
        pending = [p for p in pending if not _place(p, bins)]
        if not pending:
            return
        options: list[tuple[NodeGroup, int, list[Obj]]] = []
        reasons: dict[tuple[str, str], Counter[str]] = {}
        room = self._room(groups)
        for group in groups:
            if group.template is None:
                continue
            fitting = []
            for pod in pending:
                why = self._misfit(pod, group)
                if why:
                    reasons.setdefault(_pod_key(pod), Counter()).update(why)
                elif group.target >= group.max_size:
                    reasons.setdefault(_pod_key(pod), Counter()).update([MAX_REACHED])
                else:
                    fitting.append(pod)
            if fitting:
                count, helped = self._estimate(
                    group, fitting, min(room, group.max_size - group.target)
                )
                if count:
                    options.append((group, count, helped))
        if options:
            self._scale_up(*self.sim.random.choice(options))
            return
        for pod in pending:
            counts = reasons.get(_pod_key(pod), Counter())
            text = ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))
            self.recorder.event(
                pod, "Normal", "NotTriggerScaleUp", f"pod didn't trigger scale-up: {text}"
            )

    def _upcoming(self, group: NodeGroup) -> int:
        """``GetUpcomingNodes``: the target less nodes that are ready or have had their
        ``--max-node-startup-time`` to become so (registered, not ready yet: still coming)."""
        if group.template is None:
            return 0
        now = self.sim.seconds()
        started = [
            n
            for n in group.nodes
            if _is_ready(n)
            or now - _seconds(n["metadata"].get("creationTimestamp"))
            > self.max_node_startup_seconds
        ]
        return max(0, group.target - len(started))

    def _room(self, groups: Sequence[NodeGroup]) -> int:
        if not self.max_nodes_total:
            return 1 << 30
        total = max(self.sim.count("nodes"), sum(g.target for g in groups))
        return max(0, self.max_nodes_total - total)

    def _scale_up(self, group: NodeGroup, count: int, helped: list[Obj]) -> None:
        new = min(group.target + count, group.max_size)
        self.client.scale(API_VERSION, group.kind, group.name, group.namespace, new)
        self.scale_ups += 1
        info = f"{group.id} {group.target}->{new} (max: {group.max_size})"
        self.recorder.event(
            self._status_map(),
            "Normal",
            "ScaledUpGroup",
            f"Scale-up: setting group {group.id} size to {new} instead of {group.target} "
            f"(max: {group.max_size})",
        )
        for pod in helped:
            self.recorder.event(
                pod, "Normal", "TriggeredScaleUp", f"pod triggered scale-up: [{{{info}}}]"
            )

    def _status_map(self) -> Obj:
        """``kube-system/cluster-autoscaler-status``, which the autoscaler keeps current."""
        stamp = rfc3339(self.sim.now())
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": STATUS_MAP,
                "namespace": "kube-system",
                "annotations": {"cluster-autoscaler.kubernetes.io/last-updated": stamp},
            },
            "data": {"status": f"time: {stamp}\nautoscalerStatus: Running\n"},
        }
        try:
            return self.client.patch(
                "v1",
                "ConfigMap",
                STATUS_MAP,
                body,
                namespace="kube-system",
                patch_type="apply",
                force=True,
            )
        except errors.StatusError:
            return body

    # node groups -------------------------------------------------------------------------------

    def node_groups(self) -> list[NodeGroup]:
        """Every autoscaled MachineDeployment, and MachineSet without a MachineDeployment."""
        by_provider = {
            n.get("spec", {}).get("providerID"): n
            for n in self.sim.objects("nodes")
            if n.get("spec", {}).get("providerID")
        }
        machines = list(self.sim.objects("machines.cluster.x-k8s.io"))
        groups = []
        for store, kind, label in (
            ("machinedeployments.cluster.x-k8s.io", "MachineDeployment", "deployment-name"),
            ("machinesets.cluster.x-k8s.io", "MachineSet", "set-name"),
        ):
            for obj in self.sim.objects(store):
                meta = obj["metadata"]
                notes = meta.get("annotations") or {}
                if MIN_SIZE not in notes or MAX_SIZE not in notes:
                    continue
                if kind == "MachineSet" and any(
                    r.get("kind") == "MachineDeployment" for r in meta.get("ownerReferences") or ()
                ):
                    continue
                group = NodeGroup(
                    kind,
                    meta["namespace"],
                    meta["name"],
                    int(notes[MIN_SIZE]),
                    int(notes[MAX_SIZE]),
                    int((obj.get("spec") or {}).get("replicas", 0)),
                )
                for machine in machines:
                    if (machine["metadata"].get("labels") or {}).get(
                        f"cluster.x-k8s.io/{label}"
                    ) == meta["name"] and machine["metadata"]["namespace"] == meta["namespace"]:
                        node = by_provider.get(machine.get("spec", {}).get("providerID"))
                        if node is not None:
                            group.nodes.append(node)
                self._template(group, notes)
                groups.append(group)
        return groups

    def _template(self, group: NodeGroup, notes: Mapping[str, str]) -> None:
        """A sanitized ready node of the group, or one built from the capacity annotations."""
        ready = [
            n for n in group.nodes if _is_ready(n) and not n.get("spec", {}).get("unschedulable")
        ]
        if ready:
            sample = min(ready, key=lambda n: n["metadata"]["name"])
            taints = [
                t
                for t in sample.get("spec", {}).get("taints") or ()
                if not any(str(t.get("key", "")).startswith(p) for p in _SANITIZED)
            ]
            group.template = {**sample, "spec": {**sample.get("spec", {}), "taints": taints}}
            group.template_pods = [
                p
                for p in self.sim.objects("pods")
                if p.get("spec", {}).get("nodeName") == sample["metadata"]["name"]
                and _daemon(p)
                and placement.holds_resources(p)
            ]
            return
        if not any(k.startswith(CAPACITY) for k in notes):
            return  # an empty group without scale-from-zero annotations cannot be simulated
        flavor = Flavor.from_annotations(notes, Flavor())
        capacity = {
            "cpu": flavor.cpu,
            "memory": flavor.memory,
            "pods": flavor.pods,
            "ephemeral-storage": flavor.ephemeral_storage,
        }
        labels = {"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", **flavor.labels}
        group.template = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"template-node-for-{group.name}", "labels": labels},
            "spec": {"taints": [dict(t) for t in flavor.taints]},
            "status": {"capacity": capacity, "allocatable": dict(capacity)},
        }

    def _new_bin(self, group: NodeGroup) -> _Bin:
        assert group.template is not None
        return _bin(group.template, group.template_pods)

    def _existing_bins(self) -> list[_Bin]:
        resident: dict[str, list[Obj]] = {}
        for pod in self.sim.objects("pods"):
            node = pod.get("spec", {}).get("nodeName")
            if node and placement.holds_resources(pod):
                resident.setdefault(node, []).append(pod)
        return [
            _bin(node, resident.get(node["metadata"]["name"], []))
            for node in self.sim.objects("nodes")
            if _is_ready(node) and not node.get("spec", {}).get("unschedulable")
        ]

    # fitting -----------------------------------------------------------------------------------

    def _misfit(self, pod: Obj, group: NodeGroup) -> list[str]:
        """Why ``pod`` cannot run on an empty new node of ``group`` (the first failing filter's
        reasons, in the scheduler's filter order); empty when it can."""
        assert group.template is not None
        why = _filter(pod, group.template)
        if why:
            return why
        empty = self._new_bin(group)
        if empty.pods < 1:
            return ["Too many pods"]
        return [
            f"Insufficient {name}"
            for name, amount in sorted(resources.pod_requests(pod).items())
            if amount > empty.free.get(name, resources.zero(name))
        ]

    def _estimate(self, group: NodeGroup, pods: list[Obj], limit: int) -> tuple[int, list[Obj]]:
        """``BinpackingNodeEstimator``: new nodes needed (at most ``limit``), pods they take."""
        bins: list[_Bin] = []
        helped = []
        for pod in sorted(pods, key=_size, reverse=True):
            if _place(pod, bins):
                helped.append(pod)
                continue
            if len(bins) >= limit:
                continue
            fresh = self._new_bin(group)
            if _place(pod, [fresh]):
                bins.append(fresh)
                helped.append(pod)
        return len(bins), helped


def _bin(node: Obj, pods: list[Obj]) -> _Bin:
    free = resources.node_allocatable(node)
    count = int(float(free.pop("pods", parse_quantity("110"))))
    for pod in pods:
        for name, amount in resources.pod_requests(pod).items():
            free[name] = free.get(name, resources.zero(name)) - amount
        count -= 1
    return _Bin(node, free, count)


def _filter(pod: Obj, node: Obj) -> list[str]:
    """The TaintToleration and NodeAffinity filters' reasons (empty when both pass)."""
    spec = pod.get("spec") or {}
    tolerations = spec.get("tolerations") or []
    for taint in node.get("spec", {}).get("taints") or ():
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not any(
            placement.tolerates(t, taint) for t in tolerations
        ):
            shown = f"{taint.get('key')}: {taint.get('value', '')}"
            return [f"node(s) had untolerated taint {{{shown}}}"]
    if not placement.affinity_matches(spec, node):
        return ["node(s) didn't match Pod's node affinity/selector"]
    return []


def _place(pod: Obj, bins: list[_Bin]) -> bool:
    """First fit: take the requests out of the first bin that passes the filters and has room."""
    requests = resources.pod_requests(pod)
    for b in bins:
        if b.pods < 1 or any(a > b.free.get(n, resources.zero(n)) for n, a in requests.items()):
            continue
        if _filter(pod, b.node):
            continue
        for name, amount in requests.items():
            b.free[name] = b.free.get(name, resources.zero(name)) - amount
        b.pods -= 1
        return True
    return False


def _size(pod: Obj) -> tuple[float, float]:
    requests = resources.pod_requests(pod)
    return float(requests.get("cpu", 0)), float(requests.get("memory", 0))


def _unschedulable(pod: Mapping[str, Any]) -> bool:
    if pod.get("spec", {}).get("nodeName") or pod["metadata"].get("deletionTimestamp"):
        return False
    return any(
        c.get("type") == "PodScheduled"
        and c.get("status") == "False"
        and c.get("reason") == "Unschedulable"
        for c in pod.get("status", {}).get("conditions") or ()
    )


def _seconds(stamp: Any) -> float:
    return datetime.fromisoformat(stamp).timestamp() if stamp else 0.0


def _is_ready(node: Mapping[str, Any]) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in node.get("status", {}).get("conditions") or ()
    )


def _daemon(pod: Mapping[str, Any]) -> bool:
    meta = pod.get("metadata", {})
    return "kubernetes.io/config.mirror" in (meta.get("annotations") or {}) or any(
        r.get("kind") == "DaemonSet" for r in meta.get("ownerReferences") or ()
    )


def _pod_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    return pod["metadata"].get("namespace", ""), pod["metadata"]["name"]
