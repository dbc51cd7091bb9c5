"""The ReplicaSet controller of kube-controller-manager (``pkg/controller/replicaset``).

For every ReplicaSet it keeps ``spec.replicas`` *active* pods (:func:`podtemplates.is_pod_active`):

- **Claiming** (``ControllerRefManager.ClaimPods``): active pods it controls whose labels no
  longer match the selector are released; active orphans that match are adopted (a strategic
  merge patch adding the controller reference); pods controlled by others are left alone.
  Inactive pods (``Failed``, ``Succeeded``, being deleted) are filtered out *before* claiming, so
  they neither count nor get adopted.
- **Scaling up** (``manageReplicas``): the missing pods are created from the template in
  slow-start batches of 1, 2, 4, ... (a batch with an error stops the sync), at most
  ``burstReplicas`` (500) per sync. There is no backoff for pods that fail: a pod the kubelet
  rejects at admission turns ``Failed``, stops being active, and is replaced on the next sync.
  With a template pinned to a full node (``spec.nodeName``), this loop creates pods as fast as
  the kubelet rejects them, forever: the failed-pod storm (kubernetes issues #72593, #120160).
- **Scaling down**: the pods deleted first are ranked as ``ActivePodsWithRanks`` does:
  unassigned before assigned, Pending before Unknown before Running, not ready before ready,
  lower ``controller.kubernetes.io/pod-deletion-cost`` first, more ready siblings of the same
  owner on the node first, ready more recently first, more restarts first, newer first (ages
  compared in logarithmic buckets, ties broken by uid, as ``LogarithmicScaleDown`` does).
- **Status** (``calculateStatus``): ``replicas``, ``fullyLabeledReplicas``, ``readyReplicas``,
  ``availableReplicas`` (ready for ``minReadySeconds``), ``observedGeneration`` and a
  ``ReplicaFailure`` condition while creating or deleting fails. Status is computed from the pods
  seen *before* this sync's creations, as upstream does, so it trails by one sync.

Events (component ``replicaset-controller``): ``SuccessfulCreate`` "Created pod: <name>",
``SuccessfulDelete`` "Deleted pod: <name>", ``FailedCreate`` "Error creating: <API error>".

Work is driven by change notifications: pods are indexed by their controller's uid and only
ReplicaSets whose pods or spec changed are synced, so an idle cluster of thousands of
ReplicaSets costs nothing. Watch callbacks are synchronous, so the controller's view is never
stale and the upstream expectations cache has nothing to wait for.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.controllers import podtemplates
from kubemedic.sim.cluster.controllers.podtemplates import CONTROLLER_MANAGER, OwnerIndex
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Key, Obj, clone
from kubemedic.sim.machinery.selecting import LabelSelector

__all__ = ["BURST_REPLICAS", "ReplicaSetController", "pods_to_delete"]

#: ``BurstReplicas``: the most pods one sync creates or deletes.
BURST_REPLICAS = 500
PODS = "pods"
REPLICASETS = "replicasets.apps"
_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


class ReplicaSetController:
    """``replicaset-controller``: keeps each ReplicaSet's active pod count at its spec."""

    name = "replicaset-controller"

    def __init__(self, *, burst_replicas: int = BURST_REPLICAS) -> None:
        self.burst_replicas = burst_replicas
        self.created = 0
        self.deleted = 0
        self._pods = OwnerIndex("ReplicaSet", active=podtemplates.is_pod_active)
        self._keys: dict[str, Key] = {}
        self._by_namespace: dict[str, dict[Key, None]] = {}
        self._by_controller: dict[str, dict[Key, None]] = {}
        self._controller_of: dict[Key, str] = {}
        self._dirty: dict[Key, None] = {}
        self._selectors: dict[str, tuple[int, LabelSelector]] = {}

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, CONTROLLER_MANAGER)
        self.recorder = EventRecorder(sim, component=self.name, manager=CONTROLLER_MANAGER)
        self.pod_control = podtemplates.PodControl(self.client, self.recorder)
        sim.watch(REPLICASETS, self._on_replicaset)
        sim.watch(PODS, self._on_pod)
        for rs in sim.objects(REPLICASETS):
            self._on_replicaset(Change(0, REPLICASETS, "ADDED", rs, None))
        for pod in sim.objects(PODS):
            self._on_pod(Change(0, PODS, "ADDED", pod, None))

    # observing ---------------------------------------------------------------------------

    def _on_replicaset(self, change: Change) -> None:
        meta = change.obj["metadata"]
        key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        uid = str(meta.get("uid") or "")
        owner = self._controller_of.pop(key, "")
        if owner:
            self._by_controller.get(owner, {}).pop(key, None)
        if change.type == "DELETED":
            self._keys.pop(uid, None)
            self._selectors.pop(uid, None)
            self._by_namespace.get(key[0], {}).pop(key, None)
            self._dirty.pop(key, None)
            return
        self._keys[uid] = key
        self._by_namespace.setdefault(key[0], {})[key] = None
        ref = podtemplates.controller_of(change.obj)
        if ref is not None:
            owner = str(ref.get("uid") or "")
            self._controller_of[key] = owner
            self._by_controller.setdefault(owner, {})[key] = None
        self._dirty[key] = None

    def _on_pod(self, change: Change) -> None:
        before, after = self._pods.observe(change)
        if before and before != after:
            self._mark(before)
        pod, old = change.obj, change.old
        if after:
            if change.type == "ADDED" or before != after or podtemplates.pod_changed(old, pod):
                self._mark(after)
            became_ready = old is not None and not podtemplates.is_pod_ready(old)
            if became_ready and podtemplates.is_pod_ready(pod):
                self._recheck_after_ready(after)
        elif change.type != "DELETED" and podtemplates.controller_of(pod) is None:
            labels_moved = old is None or bool(before) or _labels(old) != _labels(pod)
            if labels_moved and podtemplates.is_pod_active(pod):
                self._mark_matching(pod)

    def _selector(self, rs: Obj) -> LabelSelector:
        """The parsed selector (memoised per uid and generation; raises on an invalid one)."""
        meta = rs["metadata"]
        uid, generation = str(meta.get("uid") or ""), int(meta.get("generation") or 0)
        cached = self._selectors.get(uid)
        if cached is not None and cached[0] == generation:
            return cached[1]
        selector = LabelSelector.from_object(rs["spec"].get("selector"))
        self._selectors[uid] = (generation, selector)
        return selector

    def _mark(self, uid: str) -> None:
        key = self._keys.get(uid)
        if key is not None:
            self._dirty[key] = None

    def _mark_matching(self, pod: Obj) -> None:
        """An orphan appeared or changed labels: every ReplicaSet that could adopt it syncs."""
        namespace = str(pod["metadata"].get("namespace") or "")
        for key in self._by_namespace.get(namespace, ()):
            rs = self.sim.get(REPLICASETS, *key)
            if rs is not None and self._selector(rs).matches(_labels(pod)):
                self._dirty[key] = None

    def _recheck_after_ready(self, uid: str) -> None:
        """A pod became ready: it turns available ``minReadySeconds`` later (plus one second,
        as upstream requeues), with no event to say so."""
        key = self._keys.get(uid)
        rs = self.sim.get(REPLICASETS, *key) if key is not None else None
        if key is None or rs is None:
            return
        min_ready = int(rs["spec"].get("minReadySeconds") or 0)
        if min_ready > 0:
            self.sim.after(min_ready + 1, functools.partial(self._requeue, key))

    # syncing -----------------------------------------------------------------------------

    def _requeue(self, key: Key) -> None:
        """A delayed resync (``enqueueAfter``)."""
        self._dirty[key] = None

    def sync(self) -> bool:
        dirty, self._dirty = self._dirty, {}
        wrote = False
        for key in dirty:
            wrote |= self._sync_replicaset(key)
        return wrote

    def _sync_replicaset(self, key: Key) -> bool:
        rs = self.sim.get(REPLICASETS, *key)
        if rs is None:
            return False
        try:
            selector = self._selector(rs)
        except errors.StatusError:
            return False  # an invalid selector: upstream logs and gives up on the object
        pods, wrote = self._claim(rs, selector)
        failure: errors.StatusError | None = None
        if not rs["metadata"].get("deletionTimestamp"):
            managed, failure = self._manage(rs, pods)
            wrote |= managed
        return self._update_status(rs, pods, failure) or wrote

    def _claim(self, rs: Obj, selector: LabelSelector) -> tuple[list[Obj], bool]:
        """Active pods of ``rs`` (released when they stopped matching, orphans adopted)."""
        meta = rs["metadata"]
        uid, namespace = str(meta.get("uid")), str(meta.get("namespace") or "")
        deleting = bool(meta.get("deletionTimestamp"))
        claimed: list[Obj] = []
        wrote = False
        for pod_key in self._pods.owned(uid, active=True):
            pod = self.sim.get(PODS, *pod_key)
            if pod is None:
                continue
            if selector.matches(_labels(pod)):
                claimed.append(pod)
            elif not deleting:
                patch = podtemplates.release_patch(uid, pod)
                wrote |= self._patch_pod(pod_key, patch) is not None
        if deleting:
            return claimed, wrote
        for pod_key in list(self._pods.orphans.get(namespace, ())):
            pod = self.sim.get(PODS, *pod_key)
            if pod is None or not podtemplates.is_pod_active(pod):
                continue
            if not selector.matches(_labels(pod)):
                continue
            adopted = self._patch_pod(pod_key, podtemplates.adopt_patch(rs, pod))
            if adopted is not None:
                claimed.append(adopted)
                wrote = True
        return claimed, wrote

    def _patch_pod(self, key: Key, patch: Obj) -> Obj | None:
        try:
            return self.client.patch("v1", "Pod", key[1], patch, namespace=key[0])
        except errors.StatusError as exc:
            if exc.code in (404, 409, 422):
                return None  # gone, or someone else claimed it first: the next sync decides
            raise

    def _manage(self, rs: Obj, pods: list[Obj]) -> tuple[bool, errors.StatusError | None]:
        """``manageReplicas``: create or delete pods toward ``spec.replicas``."""
        diff = len(pods) - int(rs["spec"].get("replicas", 1))
        if diff < 0:
            wanted = min(-diff, self.burst_replicas)
            template = rs["spec"].get("template") or {}
            created, failure = podtemplates.slow_start_batch(
                wanted, functools.partial(self.pod_control.create, template, rs)
            )
            self.created += created
            return created > 0, failure
        if diff == 0:
            return False, None
        victims = pods_to_delete(
            pods, self._related_pods(rs), min(diff, self.burst_replicas), now=self.sim.now()
        )
        failure = None
        wrote = False
        for pod in victims:
            meta = pod["metadata"]
            try:
                self.pod_control.delete(str(meta.get("namespace") or ""), meta["name"], rs)
                self.deleted += 1
                wrote = True
            except errors.StatusError as exc:
                if exc.code != 404:
                    failure = failure or exc
        return wrote, failure

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """``getIndirectlyRelatedPods``: pods of every ReplicaSet sharing ``rs``'s controller
        (the old and new ReplicaSets of one Deployment), to spot doubled-up nodes."""
        meta = rs["metadata"]
        key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        owner = self._controller_of.get(key, "")
        siblings = list(self._by_controller.get(owner, ())) if owner else [key]
        related: list[Obj] = []
        for sibling in siblings:
            other = self.sim.get(REPLICASETS, *sibling)
            if other is None:
                continue
            for pod_key in self._pods.owned(str(other["metadata"].get("uid")), active=True):
                pod = self.sim.get(PODS, *pod_key)
                if pod is not None:
                    related.append(pod)
        return related

    def _update_status(self, rs: Obj, pods: list[Obj], failure: errors.StatusError | None) -> bool:
        """``calculateStatus`` + ``updateReplicaSetStatus`` (a PUT of the status subresource,
        skipped when nothing changed and the generation was already observed)."""
        spec = rs["spec"]
        now = self.sim.now()
        min_ready = int(spec.get("minReadySeconds") or 0)
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        fully = ready = available = 0
        for pod in pods:
            labels = _labels(pod)
            if all(labels.get(k) == v for k, v in template_labels.items()):
                fully += 1
            if podtemplates.is_pod_ready(pod):
                ready += 1
                if podtemplates.is_pod_available(pod, min_ready, now):
                    available += 1
        old: Mapping[str, Any] = rs.get("status") or {}
        conditions = [dict(c) for c in old.get("conditions") or ()]
        has_failure = any(c.get("type") == "ReplicaFailure" for c in conditions)
        replicas = int(spec.get("replicas", 1))
        if failure is not None and not has_failure:
            reason = "FailedCreate" if len(pods) < replicas else "FailedDelete"
            conditions.append(
                {
                    "type": "ReplicaFailure",
                    "status": "True",
                    "lastTransitionTime": rfc3339(now),
                    "reason": reason,
                    "message": failure.message,
                }
            )
        elif failure is None and has_failure:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        generation = int(rs["metadata"].get("generation") or 0)
        counts = {
            "replicas": len(pods),
            "fullyLabeledReplicas": fully,
            "readyReplicas": ready,
            "availableReplicas": available,
        }
        unchanged = all(int(old.get(k) or 0) == v for k, v in counts.items())
        if (
            unchanged
            and int(old.get("observedGeneration") or 0) == generation
            and conditions == list(old.get("conditions") or ())
        ):
            return False
        status: Obj = {"replicas": len(pods)}
        status.update({k: v for k, v in counts.items() if v and k != "replicas"})
        if generation:
            status["observedGeneration"] = generation
        if conditions:
            status["conditions"] = conditions
        body = clone(rs)
        body["status"] = status
        try:
            self.client.update(body, subresource="status")
        except errors.StatusError as exc:
            if exc.code == 404:
                return False
            raise
        if min_ready > 0 and ready == replicas and available != replicas:
            key: Key = (str(rs["metadata"].get("namespace") or ""), rs["metadata"]["name"])
            self.sim.after(min_ready, functools.partial(self._requeue, key))
        return True


# -- ranking ---------------------------------------------------------------------------------


def pods_to_delete(pods: list[Obj], related: list[Obj], count: int, *, now: datetime) -> list[Obj]:
    """``getPodsToDelete``: the ``count`` pods a scale-down removes first."""
    if count >= len(pods):
        return list(pods)
    on_node: dict[str, int] = {}
    for pod in related:
        if podtemplates.is_pod_active(pod):
            node = str(pod["spec"].get("nodeName") or "")
            on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node.get(str(pod["spec"].get("nodeName") or ""), 0)) for pod in pods]
    compare = functools.partial(_compare, now=now)
    ranked.sort(key=functools.cmp_to_key(compare))
    return [pod for pod, _ in ranked[:count]]


def _compare(a: tuple[Obj, int], b: tuple[Obj, int], *, now: datetime) -> int:
    if _less(a, b, now):
        return -1
    if _less(b, a, now):
        return 1
    return 0


def _less(a: tuple[Obj, int], b: tuple[Obj, int], now: datetime) -> bool:
    """``ActivePodsWithRanks.Less``: whether pod ``a`` should go before pod ``b``."""
    (pa, rank_a), (pb, rank_b) = a, b
    node_a, node_b = pa["spec"].get("nodeName") or "", pb["spec"].get("nodeName") or ""
    if node_a != node_b and (not node_a or not node_b):
        return not node_a
    phase_a = _PHASE_ORDINAL.get((pa.get("status") or {}).get("phase", ""), 0)
    phase_b = _PHASE_ORDINAL.get((pb.get("status") or {}).get("phase", ""), 0)
    if phase_a != phase_b:
        return phase_a < phase_b
    ready_a, ready_b = podtemplates.is_pod_ready(pa), podtemplates.is_pod_ready(pb)
    if ready_a != ready_b:
        return not ready_a
    cost_a, cost_b = _deletion_cost(pa), _deletion_cost(pb)
    if cost_a != cost_b:
        return cost_a < cost_b
    if rank_a != rank_b:
        return rank_a > rank_b
    if ready_a and ready_b:
        since_a, since_b = podtemplates.ready_since(pa), podtemplates.ready_since(pb)
        if since_a != since_b:
            decided = _newer_first(pa, pb, since_a, since_b, now)
            if decided is not None:
                return decided
    restarts_a, restarts_b = _max_restarts(pa), _max_restarts(pb)
    if restarts_a != restarts_b:
        return restarts_a > restarts_b
    created_a = parse_time(pa["metadata"].get("creationTimestamp"))
    created_b = parse_time(pb["metadata"].get("creationTimestamp"))
    if created_a != created_b:
        decided = _newer_first(pa, pb, created_a, created_b, now)
        if decided is not None:
            return decided
    return False


def _newer_first(
    pa: Obj, pb: Obj, ta: datetime | None, tb: datetime | None, now: datetime
) -> bool | None:
    """Empty time first, then the younger, in log2 buckets of age; ties by uid."""
    if ta is None or tb is None:
        return ta is None
    diff = podtemplates.log2_rank(ta, now) - podtemplates.log2_rank(tb, now)
    if diff == 0:
        return str(pa["metadata"].get("uid", "")) < str(pb["metadata"].get("uid", ""))
    return diff < 0


def _deletion_cost(pod: Obj) -> int:
    value = ((pod["metadata"].get("annotations") or {}).get(_DELETION_COST)) or "0"
    try:
        cost = int(value)
    except ValueError:
        return 0
    return cost if -(2**31) <= cost < 2**31 else 0


def _max_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


# -- helpers ---------------------------------------------------------------------------------


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}
