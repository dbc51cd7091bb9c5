"""The node lifecycle controller: nodes that stop reporting become ``Unknown`` and get tainted.

What kube-controller-manager's ``node-lifecycle-controller`` does in Kubernetes 1.32
(``pkg/controller/nodelifecycle/node_lifecycle_controller.go``, defaults from
``pkg/controller/nodelifecycle/config/v1alpha1/defaults.go``):

- **Health.** Every ``--node-monitor-period`` (5 s) it looks at each node. A node is alive while
  its kubelet renews the node's Lease in ``kube-node-lease`` or posts a new ``Ready`` heartbeat;
  the controller remembers when it last *saw* either change (its own clock, so skew between
  hosts does not matter). After ``--node-monitor-grace-period`` without a sign of life (50 s
  since 1.32, 40 s before; 60 s ``node-startup-grace-period`` for a node that never posted
  ``Ready``) it sets ``Ready``, ``MemoryPressure``, ``DiskPressure`` and ``PIDPressure`` to
  ``Unknown`` with reason ``NodeStatusUnknown`` and message ``Kubelet stopped posting node
  status.`` (``NodeStatusNeverUpdated`` / ``Kubelet never posted node status.`` for a condition
  that never existed), keeping the old heartbeat time. ``NetworkUnavailable`` is left alone.
- **Events.** ``RegisteredNode`` (``Node <n> event: Registered Node <n> in Controller``) when it
  first sees a node, ``RemovingNode`` when one is gone, ``NodeNotReady`` (``Node <n> status is
  now: NodeNotReady``) when ``Ready`` leaves ``True``; each pod on that node gets its ``Ready``
  condition set ``False`` and a ``Warning NodeNotReady`` event ``Node is not ready``
  (``MarkPodsNotReady``), also pods bound to the node later.
- **Taints.** ``NoSchedule`` taints follow the node's conditions at once (TaintNodesByCondition:
  ``not-ready``/``unreachable`` for ``Ready`` False/Unknown, ``memory-pressure``,
  ``disk-pressure``, ``pid-pressure``, ``network-unavailable``, and ``unschedulable`` for a
  cordoned node). ``NoExecute`` ``not-ready``/``unreachable`` taints (what makes the
  taint-eviction controller delete pods) are rate limited per zone: a node whose observed
  ``Ready`` is not ``True`` joins its zone's queue, and a token bucket (burst 1) lets one node be
  tainted every ``1 / rate`` seconds. They are removed at once when the node is ``Ready`` again.
- **Zones** (``topology.kubernetes.io/region`` + ``zone``): ``FullDisruption`` when no node of
  the zone is ready, ``PartialDisruption`` when more than two and at least
  ``--unhealthy-zone-threshold`` (55 %) are not ready, else ``Normal``. ``Normal`` and
  ``FullDisruption`` taint at ``--node-eviction-rate`` (0.1 node/s); ``PartialDisruption`` at
  ``--secondary-node-eviction-rate`` (0.01 node/s) in zones of more than
  ``--large-cluster-size-threshold`` (50) nodes and not at all in smaller ones. When *every*
  zone is fully disrupted the controller assumes the fault is its own (a control-plane network
  problem), removes all ``NoExecute`` taints and stops tainting until some node is ready again.
  So 40 % of a zone going dark at once is ``Normal``: one node tainted every 10 s.

Writes are the controller's: ``UpdateStatus`` (PUT) for conditions, a strategic-merge PATCH with
``metadata.resourceVersion`` for taints (added ones get ``timeAdded``), field manager
``kube-controller-manager``; events from component ``node-controller``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.sim.cluster.controllers.taintevicting import TaintEvictionController
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Obj, clone

__all__ = ["NodeLifecycleController", "zone_key"]

MANAGER = managers.KUBE_CONTROLLER_MANAGER
LEASES = "leases.coordination.k8s.io"
LEASE_NAMESPACE = "kube-node-lease"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"

#: Condition type -> {status: taint key}: nodeConditionToTaintKeyStatusMap.
CONDITION_TAINTS: Mapping[str, Mapping[str, str]] = {
    "Ready": {"False": NOT_READY, "Unknown": UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
_CONDITION_TAINT_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())
_MONITORED = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")


def zone_key(node: Mapping[str, Any]) -> str:
    """``nodetopology.GetZoneKey``: ``<region>:\\x00:<zone>``, or ``""`` without either label."""
    labels = node.get("metadata", {}).get("labels") or {}
    region = labels.get("topology.kubernetes.io/region") or labels.get(
        "failure-domain.beta.kubernetes.io/region", ""
    )
    zone = labels.get("topology.kubernetes.io/zone") or labels.get(
        "failure-domain.beta.kubernetes.io/zone", ""
    )
    return f"{region}:\x00:{zone}" if region or zone else ""


def _condition(node: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for condition in node.get("status", {}).get("conditions") or ():
        if condition.get("type") == type_:
            return dict(condition)
    return None


def _has_taint(node: Mapping[str, Any], key: str, effect: str) -> bool:
    return any(
        t.get("key") == key and t.get("effect") == effect
        for t in node.get("spec", {}).get("taints") or ()
    )


def _micro(text: str | None) -> float:
    return datetime.fromisoformat(text).timestamp() if text else 0.0


@dataclass
class _Health:
    """``nodeHealthData``: when the controller last saw the node alive, in its own clock."""

    probe: float
    ready_transition: float
    ready: dict[str, Any] | None
    lease_renew: float | None = None


class _TokenBucket:
    """client-go's token bucket (burst 1, as ``EvictionRateLimiterBurst``); qps 0 never admits."""

    def __init__(self, qps: float, now: float) -> None:
        self.qps = qps
        self.tokens = 1.0
        self.at = now

    def try_accept(self, now: float) -> bool:
        self.tokens, self.at = min(1.0, self.tokens + (now - self.at) * self.qps), now
        granted = self.qps > 0 and self.tokens >= 1.0 - 1e-9
        self.tokens -= granted
        return granted

    def next_token(self, now: float) -> float | None:
        refilled = self.tokens + (now - self.at) * self.qps
        return now + max(0.0, 1.0 - refilled) / self.qps if self.qps > 0 else None


@dataclass
class _ZoneQueue:
    """``RateLimitedTimedQueue``: a unique queue (membership outlives processing, so a tainted
    node is not queued again until explicitly removed) drained through a token bucket."""

    limiter: _TokenBucket
    members: set[str] = field(default_factory=set)
    pending: dict[str, None] = field(default_factory=dict)  # insertion order: ProcessAt order

    def add(self, name: str) -> bool:
        if name in self.members:
            return False
        self.members.add(name)
        self.pending[name] = None
        return True

    def remove(self, name: str) -> bool:
        if name not in self.members:
            return False
        self.members.discard(name)
        self.pending.pop(name, None)
        return True

    def swap_limiter(self, qps: float, now: float) -> None:
        if self.limiter.qps == qps:
            return
        new = _TokenBucket(qps, now)
        if not self.limiter.try_accept(now):
            new.try_accept(now)  # waiting on the old limiter: drain the new one too
        self.limiter = new


class NodeLifecycleController:
    """kube-controller-manager's node lifecycle controller (taint-based eviction mode)."""

    name = "node-lifecycle-controller"

    def __init__(
        self,
        *,
        monitor_period: float = 5.0,
        monitor_grace: float = 50.0,
        startup_grace: float = 60.0,
        eviction_rate: float = 0.1,
        secondary_eviction_rate: float = 0.01,
        large_cluster_threshold: int = 50,
        unhealthy_zone_threshold: float = 0.55,
        taint_eviction: bool = True,
    ) -> None:
        """``taint_eviction`` also attaches the taint-eviction controller (part of the same
        kube-controller-manager) unless the simulation has one."""
        self.taint_eviction = taint_eviction
        self.monitor_period = monitor_period
        self.monitor_grace = monitor_grace
        self.startup_grace = startup_grace
        self.eviction_rate = eviction_rate
        self.secondary_eviction_rate = secondary_eviction_rate
        self.large_cluster_threshold = large_cluster_threshold
        self.unhealthy_zone_threshold = unhealthy_zone_threshold
        self.known: dict[str, str] = {}
        self.health: dict[str, _Health] = {}
        self.zone_states: dict[str, str] = {}
        self.queues: dict[str, _ZoneQueue] = {}
        self._retry: set[str] = set()
        self._dirty_nodes: set[str] = set()
        self._bound_pods: set[tuple[str, str]] = set()
        self._pods_by_node: dict[str, set[tuple[str, str]]] = {}
        self._wake: Timer | None = None
        self._wrote = False

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, MANAGER)
        self.recorder = EventRecorder(sim, component="node-controller", manager=MANAGER)
        sim.watch("nodes", self._node_changed)
        sim.watch("pods", self._pod_changed)
        for pod in sim.objects("pods"):
            self._index_pod(pod, None)
        sim.every(self.monitor_period, self.monitor, offset=0.0, name="node-monitor")
        if self.taint_eviction and sim.find(TaintEvictionController) is None:
            sim.add(TaintEvictionController())

    # observing -----------------------------------------------------------------------------

    def _node_changed(self, change: Change) -> None:
        if change.type == "DELETED":
            self._retry.discard(change.obj["metadata"]["name"])
        elif change.old is None or _taint_inputs(change.obj) != _taint_inputs(change.old):
            self._dirty_nodes.add(change.obj["metadata"]["name"])

    def _pod_changed(self, change: Change) -> None:
        self._index_pod(change.obj if change.type != "DELETED" else None, change.old or change.obj)

    def _index_pod(self, new: Obj | None, old: Obj | None) -> None:
        old_node = (old or {}).get("spec", {}).get("nodeName") if old is not new else None
        meta = (new or old or {}).get("metadata", {})
        key = (meta.get("namespace", ""), meta.get("name", ""))
        new_node = (new or {}).get("spec", {}).get("nodeName")
        if old_node and old_node != new_node:
            self._pods_by_node.get(old_node, set()).discard(key)
        if new_node:
            self._pods_by_node.setdefault(new_node, set()).add(key)
            if new_node != old_node:
                self._bound_pods.add(key)

    def pods_on(self, node: str) -> list[Obj]:
        """Pods bound to ``node`` (the controller's ``spec.nodeName`` index)."""
        found = (self.sim.get("pods", *key) for key in sorted(self._pods_by_node.get(node, ())))
        return [p for p in found if p is not None and p.get("spec", {}).get("nodeName") == node]

    # work queues -----------------------------------------------------------------------------

    def sync(self) -> bool:
        self._wrote = False
        dirty, self._dirty_nodes = self._dirty_nodes, set()
        for name in sorted(dirty):
            self._no_schedule_pass(name)
        bound, self._bound_pods = self._bound_pods, set()
        for namespace, pod_name in sorted(bound):
            self._process_pod(namespace, pod_name)
        self._no_execute_pass()
        return self._wrote

    def _no_schedule_pass(self, name: str) -> None:
        """``doNoScheduleTaintingPass``: NoSchedule taints mirror the node's conditions."""
        node = self.sim.get("nodes", "", name)
        if node is None:
            return
        wanted = []
        for condition in node.get("status", {}).get("conditions") or ():
            key = CONDITION_TAINTS.get(condition.get("type", ""), {}).get(condition.get("status"))
            if key:
                wanted.append(key)
        if node.get("spec", {}).get("unschedulable"):
            wanted.append(UNSCHEDULABLE)
        have = {
            t.get("key")
            for t in node.get("spec", {}).get("taints") or ()
            if t.get("effect") == "NoSchedule"
            and (t.get("key") in _CONDITION_TAINT_KEYS or t.get("key") == UNSCHEDULABLE)
        }
        add = [(k, "NoSchedule") for k in wanted if k not in have]
        remove = [(k, "NoSchedule") for k in have if k not in wanted]
        self._swap_taints(name, add=add, remove=remove)

    def _process_pod(self, namespace: str, name: str) -> None:
        """``processPod``: a pod newly bound to a node that is not ready is marked not ready."""
        pod = self.sim.get("pods", namespace, name)
        if pod is None:
            return
        node_name = pod.get("spec", {}).get("nodeName", "")
        health = self.health.get(node_name)
        if health is None or health.ready is None or self.sim.get("nodes", "", node_name) is None:
            return
        if health.ready.get("status") != "True":
            self._mark_pods_not_ready([pod], node_name)

    def _no_execute_pass(self) -> None:
        """``doNoExecuteTaintingPass``: each zone's queue, as fast as its limiter allows."""
        now = self.sim.seconds()
        wakes: list[float | None] = []
        for zone in sorted(self.queues):
            queue = self.queues[zone]
            while queue.pending:
                if not queue.limiter.try_accept(now):
                    wakes.append(queue.limiter.next_token(now))
                    break
                name = next(iter(queue.pending))
                del queue.pending[name]  # stays a member: not queued again until removed
                if not self._taint_no_execute(name):
                    queue.pending[name] = None
                    wakes.append(now + 1.0)
                    break
        due = min((w for w in wakes if w is not None), default=None)
        if due is not None and (self._wake is None or not now < self._wake.due <= due):
            if self._wake is not None:
                self._wake.cancel()
            self._wake = self.sim.after(due - now, lambda: None, name="node-taint-wake")

    def _taint_no_execute(self, name: str) -> bool:
        """The tainting pass's action for one node; False asks for a retry."""
        node = self.sim.get("nodes", "", name)
        if node is None:
            return True
        status = (_condition(node, "Ready") or {}).get("status")
        if status not in ("False", "Unknown"):
            return status is not None  # ready again: nothing to taint; no condition: retry
        add, remove = (NOT_READY, UNREACHABLE) if status == "False" else (UNREACHABLE, NOT_READY)
        return self._swap_taints(name, add=[(add, "NoExecute")], remove=[(remove, "NoExecute")])

    # monitoring ------------------------------------------------------------------------------

    def monitor(self) -> None:
        """``monitorNodeHealth``: one pass over every node."""
        nodes = list(self.sim.objects("nodes"))
        now = self.sim.seconds()
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            self._zone_queue(zone_key(node))
            if name not in self.known:
                self.known[name] = node["metadata"].get("uid", "")
                self._node_event(node, "RegisteredNode", f"Registered Node {name} in Controller")
                self._mark_reachable(node)
        for name in sorted(set(self.known) - names):
            uid = self.known.pop(name)
            self.health.pop(name, None)
            ref = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": uid}}
            self._node_event(ref, "RemovingNode", f"Removing Node {name} from Controller")
        zone_conditions: dict[str, list[str | None]] = {}
        for name in sorted(names):
            self._monitor_node(name, now, zone_conditions)
        self._handle_disruption(zone_conditions, nodes, now)

    def _monitor_node(self, name: str, now: float, zones: dict[str, list[str | None]]) -> None:
        node = self.sim.get("nodes", "", name)  # fresh: earlier writes of this pass may touch it
        if node is None:
            return
        try:
            observed, current = self._update_health(node, now)
        except errors.StatusError:
            return  # "Skipping - no pods will be evicted" until the next pass
        node = self.sim.get("nodes", "", name) or node
        labels = node["metadata"].get("labels") or {}
        if EXCLUDE_DISRUPTION not in labels:
            zones.setdefault(zone_key(node), []).append(current.get("status") if current else None)
        if current is None:
            return
        self._taint_based_eviction(node, observed.get("status"))
        if current.get("status") != "True" and observed.get("status") == "True":
            self.recorder.event(
                _node_ref(node),
                "Normal",
                "NodeNotReady",
                f"Node {name} status is now: NodeNotReady",
            )
            if self._mark_pods_not_ready(self.pods_on(name), name):
                return  # retried on the next pass
        elif (
            name in self._retry
            and observed.get("status") != "True"
            and self._mark_pods_not_ready(self.pods_on(name), name)
        ):
            return
        self._retry.discard(name)

    def _update_health(self, node: Obj, now: float) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """``tryUpdateNodeHealth``: returns the observed and the current ``Ready`` condition."""
        name = node["metadata"]["name"]
        created = node["metadata"].get("creationTimestamp")
        health = self.health.get(name)
        current = _condition(node, "Ready")
        if current is None:
            observed: dict[str, Any] = {"type": "Ready", "status": "Unknown"}
            grace = self.startup_grace
            if health is None:
                born = _micro(created) if created else now
                health = self.health[name] = _Health(born, born, None)
        else:
            observed, grace = dict(current), self.monitor_grace
            if health is None or health.ready is None:
                lease = health.lease_renew if health else None
                health = self.health[name] = _Health(now, now, current, lease)
            elif health.ready.get("lastHeartbeatTime") != current.get("lastHeartbeatTime"):
                if health.ready.get("lastTransitionTime") != current.get("lastTransitionTime"):
                    health.ready_transition = now
                health.probe, health.ready = now, current
        lease_obj = self.sim.get(LEASES, LEASE_NAMESPACE, name)
        renew = _micro((lease_obj or {}).get("spec", {}).get("renewTime"))
        if renew and (health.lease_renew is None or health.lease_renew < renew):
            health.lease_renew, health.probe = renew, now
        if now <= health.probe + grace:
            return observed, current
        updated = clone(node)
        conditions = updated.setdefault("status", {}).setdefault("conditions", [])
        stamp = rfc3339(self.sim.now())
        for type_ in _MONITORED:
            found = next((c for c in conditions if c.get("type") == type_), None)
            if found is None:
                found = {"type": type_, "lastHeartbeatTime": created}
                found.update(status="Unknown", reason="NodeStatusNeverUpdated")
                found.update(message="Kubelet never posted node status.", lastTransitionTime=stamp)
                conditions.append(found)
            elif found.get("status") != "Unknown":
                found.update(status="Unknown", reason="NodeStatusUnknown")
                found.update(message="Kubelet stopped posting node status.")
                found["lastTransitionTime"] = stamp
        new_ready = _condition(updated, "Ready")
        if new_ready != current:
            self.client.update(updated, subresource="status")
            health.ready, health.ready_transition = new_ready, now
        return observed, new_ready

    def _taint_based_eviction(self, node: Obj, observed: str | None) -> None:
        """``processTaintBaseEviction``."""
        name = node["metadata"]["name"]
        if observed in ("False", "Unknown"):
            add, other = (
                (NOT_READY, UNREACHABLE) if observed == "False" else (UNREACHABLE, NOT_READY)
            )
            if _has_taint(node, other, "NoExecute"):
                self._swap_taints(name, add=[(add, "NoExecute")], remove=[(other, "NoExecute")])
                return
            queue = self._zone_queue(zone_key(node))
            if not _has_taint(node, add, "NoExecute"):
                queue.remove(name)
            queue.add(name)
        elif observed == "True":
            self._mark_reachable(node)

    def _mark_reachable(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._swap_taints(
            name, add=[], remove=[(UNREACHABLE, "NoExecute"), (NOT_READY, "NoExecute")]
        )
        self._zone_queue(zone_key(node)).remove(name)

    def _mark_pods_not_ready(self, pods: Iterable[Obj], node_name: str) -> bool:
        """``MarkPodsNotReady``; returns whether any write failed (the node is then retried)."""
        failed = False
        stamp = rfc3339(self.sim.now())
        for pod in pods:
            if pod.get("spec", {}).get("nodeName") != node_name:
                continue
            conditions = pod.get("status", {}).get("conditions") or []
            ready = next((c for c in conditions if c.get("type") == "Ready"), None)
            if ready is None or ready.get("status") == "False":
                continue
            updated = clone(pod)
            for condition in updated["status"]["conditions"]:
                if condition.get("type") == "Ready":
                    condition.update(status="False", lastTransitionTime=stamp)
            try:
                stored = self.client.update(updated, subresource="status")
            except errors.StatusError as exc:
                failed |= exc.code != 404
                continue
            self._wrote = True
            self.recorder.event(stored, "Warning", "NodeNotReady", "Node is not ready")
        if failed:
            self._retry.add(node_name)
        return failed

    # zones -----------------------------------------------------------------------------------

    def _zone_queue(self, zone: str) -> _ZoneQueue:
        queue = self.queues.get(zone)
        if queue is None:
            queue = self.queues[zone] = _ZoneQueue(
                _TokenBucket(self.eviction_rate, self.sim.seconds())
            )
            self.zone_states[zone] = "Initial"
        return queue

    def compute_zone_state(self, statuses: list[str | None]) -> tuple[int, str]:
        """``ComputeZoneState``: (not-ready count, state) for the ``Ready`` statuses of a zone."""
        ready = sum(1 for s in statuses if s == "True")
        not_ready = len(statuses) - ready
        if ready == 0 and not_ready > 0:
            return not_ready, "FullDisruption"
        if not_ready > 2 and not_ready / (not_ready + ready) >= self.unhealthy_zone_threshold:
            return not_ready, "PartialDisruption"
        return not_ready, "Normal"

    def _rate(self, state: str, size: int) -> float:
        if state == "PartialDisruption":
            return self.secondary_eviction_rate if size > self.large_cluster_threshold else 0.0
        return self.eviction_rate

    def _handle_disruption(
        self, zone_conditions: dict[str, list[str | None]], nodes: list[Obj], now: float
    ) -> None:
        """``handleDisruption``: zone states and the limiters they imply."""
        new_states = {z: self.compute_zone_state(s)[1] for z, s in zone_conditions.items()}
        all_are_full = all(s == "FullDisruption" for s in new_states.values())
        for zone in new_states:
            self.zone_states.setdefault(zone, "Initial")
        all_were_full = True
        for zone in list(self.zone_states):
            if zone not in zone_conditions:
                del self.zone_states[zone]
                continue
            if self.zone_states[zone] != "FullDisruption":
                all_were_full = False
                break
        if all_are_full and all_were_full:
            return
        if all_are_full:
            for node in nodes:
                self._mark_reachable(node)
            for zone in self.zone_states:
                self._zone_queue(zone).swap_limiter(0.0, now)
                self.zone_states[zone] = "FullDisruption"
            return
        if all_were_full:  # leaving master disruption: every node starts a fresh grace period
            for name, health in self.health.items():
                if name in self.known:
                    health.probe = health.ready_transition = now
        for zone, state in list(self.zone_states.items()):
            new = new_states.get(zone, state)
            if all_were_full or new != state:
                size = len(zone_conditions.get(zone, ()))
                self._zone_queue(zone).swap_limiter(self._rate(new, size), now)
                self.zone_states[zone] = new

    # writing ---------------------------------------------------------------------------------

    def _swap_taints(
        self, name: str, *, add: list[tuple[str, str]], remove: list[tuple[str, str]]
    ) -> bool:
        """``SwapNodeControllerTaint``: add (with ``timeAdded``) and remove taints in one PATCH
        guarded by the node's resourceVersion; False when the write failed (retried later)."""
        node = self.sim.get("nodes", "", name)
        if node is None:
            return True
        stored = node.get("spec", {}).get("taints") or ()
        gone = set(remove)
        if not add and not any((t.get("key"), t.get("effect")) in gone for t in stored):
            return True  # nothing to do: the common case of every pass over a healthy node
        taints = [dict(t) for t in stored]
        kept = [t for t in taints if (t.get("key"), t.get("effect")) not in gone]
        for key, effect in add:
            if not any(t.get("key") == key and t.get("effect") == effect for t in kept):
                kept.append({"key": key, "effect": effect, "timeAdded": rfc3339(self.sim.now())})
        if kept == taints:
            return True
        patch = {
            "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
            "spec": {"taints": kept or None},
        }
        try:
            self.client.patch("v1", "Node", name, patch)
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                return False
            raise
        self._wrote = True
        return True

    def _node_event(self, node: Mapping[str, Any], reason: str, text: str) -> None:
        name = node["metadata"]["name"]
        self.recorder.event(_node_ref(node), "Normal", reason, f"Node {name} event: {text}")


def _node_ref(node: Mapping[str, Any]) -> dict[str, Any]:
    meta = node.get("metadata", {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": meta.get("name"), "uid": meta.get("uid", "")},
    }


def _taint_inputs(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the NoSchedule pass reads, to skip unrelated node updates (heartbeats)."""
    conditions = tuple(
        (c.get("type"), c.get("status")) for c in node.get("status", {}).get("conditions") or ()
    )
    spec = node.get("spec", {})
    taints = tuple((t.get("key"), t.get("effect")) for t in spec.get("taints") or ())
    return conditions, bool(spec.get("unschedulable")), taints
