"""``ClusterView``: a read-only, indexed picture of a cluster at one moment.

Built from object bodies (a snapshot's files, or a reflector's cache) and handed to the checks,
which are pure functions of it. It answers the questions checks ask again and again: the pods on a
node, the pods an owner controls, the events about an object, who ultimately owns a pod
(Pod -> ReplicaSet -> Deployment, Pod -> StatefulSet / DaemonSet / Job -> CronJob), a pod's
priority, a node's Lease, and what time it is *for this cluster*.

Leases (``coordination.k8s.io/v1``) are kept only from ``kube-node-lease``, by name: the kubelet
names its node's Lease after the node (``node_lease``, read through ``model.liveness``). Leases
of other namespaces (leader elections) are dropped, not counted as unknown kinds.

"Now" is the ``at`` the caller gives or else the newest timestamp seen in the objects
(heartbeats, node Lease renewals, events, status and creation times), so an old dump is judged as
it was when taken.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kubemedic.model import objects
from kubemedic.model.events import EventRecord, read_event
from kubemedic.model.liveness import NODE_LEASE_NAMESPACE
from kubemedic.model.objects import Body, ObjectRef

__all__ = ["KNOWN_KINDS", "ClusterView", "OwnerRef"]

WORKLOAD_KINDS = (
    "ReplicaSet",
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "Job",
    "CronJob",
    "ReplicationController",
)
KNOWN_KINDS = frozenset(
    {
        "Node",
        "Pod",
        "Event",
        "PriorityClass",
        "PodMetrics",
        "NodeMetrics",
        "Namespace",
        "Lease",
        *WORKLOAD_KINDS,
    }
)

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class OwnerRef:
    """A controller owner reference, as found in ``metadata.ownerReferences``."""

    api_version: str
    kind: str
    name: str
    uid: str | None

    def ref(self, namespace: str | None) -> ObjectRef:
        return ObjectRef(
            kind=self.kind, name=self.name, namespace=namespace, api_version=self.api_version
        )


def controller_of(body: Body) -> OwnerRef | None:
    """The owner with ``controller: true`` (or the only owner when none is marked)."""
    owners = objects.get_list(body, "metadata", "ownerReferences")
    chosen: Any = None
    for owner in owners:
        if isinstance(owner, Mapping) and owner.get("controller") is True:
            chosen = owner
            break
    if chosen is None and len(owners) == 1 and isinstance(owners[0], Mapping):
        chosen = owners[0]
    if chosen is None:
        return None
    uid = chosen.get("uid")
    return OwnerRef(
        api_version=str(chosen.get("apiVersion") or ""),
        kind=str(chosen.get("kind") or ""),
        name=str(chosen.get("name") or ""),
        uid=uid if isinstance(uid, str) else None,
    )


@dataclass(slots=True)
class ClusterView:
    """Indexed, read-only cluster state. Build with ``ClusterView.build``."""

    now: datetime
    nodes: dict[str, Body] = field(default_factory=dict)
    pods: list[Body] = field(default_factory=list)
    events: list[EventRecord] = field(default_factory=list)
    workloads: dict[tuple[str, str | None, str], Body] = field(default_factory=dict)
    priority_classes: dict[str, Body] = field(default_factory=dict)
    pod_metrics: dict[tuple[str, str], Body] = field(default_factory=dict)
    node_metrics: dict[str, Body] = field(default_factory=dict)
    node_leases: dict[str, Body] = field(default_factory=dict)
    """Leases of ``kube-node-lease`` by name (the node's name)."""
    unknown_kinds: Counter[str] = field(default_factory=Counter)
    pods_by_node: dict[str, list[Body]] = field(default_factory=lambda: defaultdict(list))
    pods_by_owner: dict[tuple[str, str | None, str], list[Body]] = field(
        default_factory=lambda: defaultdict(list)
    )
    events_by_object: dict[tuple[str, str | None, str], list[EventRecord]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _workloads_by_uid: dict[str, Body] = field(default_factory=dict)
    _default_priority: int = 0

    # -- building ---------------------------------------------------------------------------

    @classmethod
    def build(cls, bodies: Iterable[Body], *, at: datetime | None = None) -> ClusterView:
        """Index ``bodies``. Objects of kinds kubemedic does not use are counted, not kept."""
        with objects.gc_paused():
            return cls._build(bodies, at=at)

    @classmethod
    def _build(cls, bodies: Iterable[Body], *, at: datetime | None) -> ClusterView:
        view = cls(now=at or _EPOCH)
        newest = _EPOCH
        seen_events: set[str] = set()
        for body in bodies:
            kind = body.get("kind")
            if not isinstance(kind, str) or kind not in KNOWN_KINDS:
                view.unknown_kinds[str(kind)] += 1
                continue
            newest = max(newest, _newest_time(body))
            view._add(kind, body, seen_events)
        by_node, by_owner = view.pods_by_node, view.pods_by_owner
        for pod in view.pods:
            node_name = objects.get_str(pod, "spec", "nodeName")
            if node_name:
                by_node[node_name].append(pod)
            if objects.get_list(pod, "metadata", "ownerReferences"):
                owner = controller_of(pod)
                if owner is not None:
                    by_owner[(owner.kind, _namespace(pod), owner.name)].append(pod)
        for event in view.events:
            view.events_by_object[event.object_key].append(event)
            if event.last_seen is not None:
                newest = max(newest, event.last_seen)
        for body in view.priority_classes.values():
            if body.get("globalDefault") is True and isinstance(body.get("value"), int):
                view._default_priority = body["value"]
        if at is None:
            view.now = newest
        return view

    def _add(self, kind: str, body: Body, seen_events: set[str]) -> None:
        meta = objects.get_map(body, "metadata")
        name = str(meta.get("name") or "")
        if kind == "Pod":
            self.pods.append(body)
        elif kind == "Node":
            self.nodes[name] = body
        elif kind == "Event":
            uid = str(meta.get("uid") or "")
            if uid and uid in seen_events:
                return  # the same event served by both core/v1 and events.k8s.io/v1
            seen_events.add(uid)
            self.events.append(read_event(body))
        elif kind == "PriorityClass":
            self.priority_classes[name] = body
        elif kind == "PodMetrics":
            self.pod_metrics[(_namespace(body) or "", name)] = body
        elif kind == "NodeMetrics":
            self.node_metrics[name] = body
        elif kind == "Lease":
            if meta.get("namespace") == NODE_LEASE_NAMESPACE and name:
                self.node_leases[name] = body
        elif kind in WORKLOAD_KINDS:
            self.workloads[(kind, _namespace(body), name)] = body
            workload_uid = objects.get_str(meta, "uid")
            if workload_uid:
                self._workloads_by_uid[workload_uid] = body

    # -- queries ----------------------------------------------------------------------------

    def node_lease(self, node_name: str) -> Body | None:
        """The node's Lease in ``kube-node-lease``, or None when the input held none."""
        return self.node_leases.get(node_name)

    def pods_on(self, node_name: str) -> list[Body]:
        return self.pods_by_node.get(node_name, [])

    def events_about(self, ref: ObjectRef) -> list[EventRecord]:
        return self.events_by_object.get((ref.kind, ref.namespace, ref.name), [])

    def workload(self, kind: str, namespace: str | None, name: str) -> Body | None:
        return self.workloads.get((kind, namespace, name))

    def owner_chain(self, body: Body) -> list[ObjectRef]:
        """Controllers of ``body``, nearest first: ``[ReplicaSet, Deployment]`` for a pod of a
        Deployment. Stops where an owner is not in the view (its reference is still listed)."""
        chain: list[ObjectRef] = []
        namespace = _namespace(body)
        current: Body | None = body
        while current is not None and len(chain) < 8:
            owner = controller_of(current)
            if owner is None:
                break
            chain.append(owner.ref(namespace))
            found = self._workloads_by_uid.get(owner.uid) if owner.uid else None
            current = found or self.workloads.get((owner.kind, namespace, owner.name))
        return chain

    def top_owner(self, body: Body) -> ObjectRef:
        """The outermost controller of ``body`` (or ``body`` itself when it has none)."""
        chain = self.owner_chain(body)
        return chain[-1] if chain else objects.ref_of(body)

    def priority_of(self, pod: Body) -> int:
        """``spec.priority`` as admission set it, else from its PriorityClass, else the default."""
        spec = objects.get_map(pod, "spec")
        value = spec.get("priority")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        class_name = objects.get_str(spec, "priorityClassName")
        if class_name is not None and class_name in self.priority_classes:
            class_value = self.priority_classes[class_name].get("value")
            if isinstance(class_value, int):
                return class_value
        if class_name == "system-node-critical":
            return 2000001000
        if class_name == "system-cluster-critical":
            return 2000000000
        return self._default_priority


def _namespace(body: Body) -> str | None:
    namespace = objects.get_map(body, "metadata").get("namespace")
    return namespace if isinstance(namespace, str) and namespace else None


def _newest_time(body: Body) -> datetime:
    """The newest timestamp an object carries that says the cluster was observed at that time."""
    texts: list[Any] = [objects.get_map(body, "metadata").get("creationTimestamp")]
    status = objects.get_map(body, "status")
    if status:
        for condition in objects.get_list(status, "conditions"):
            if isinstance(condition, (dict, Mapping)):
                texts.append(condition.get("lastHeartbeatTime"))
                texts.append(condition.get("lastTransitionTime"))
        for key in ("containerStatuses", "initContainerStatuses"):
            for container in objects.get_list(status, key):
                for state_key in ("state", "lastState"):
                    for state in objects.get_map(container, state_key).values():
                        if isinstance(state, (dict, Mapping)):
                            texts.append(state.get("startedAt"))
                            texts.append(state.get("finishedAt"))
        texts.append(status.get("startTime"))
    texts.append(body.get("timestamp"))  # metrics.k8s.io
    if body.get("kind") == "Lease":  # a node Lease's renewal; others are dropped in _add
        if objects.get_map(body, "metadata").get("namespace") != NODE_LEASE_NAMESPACE:
            return _EPOCH
        spec = body.get("spec")
        if isinstance(spec, (dict, Mapping)):
            texts.append(spec.get("renewTime"))
    best = _EPOCH
    parse = objects.parse_time
    for text in texts:
        if text is not None:
            parsed = parse(text)
            if parsed is not None and parsed > best:
                best = parsed
    return best
