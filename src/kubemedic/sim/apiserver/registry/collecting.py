"""The control loops the API server cannot answer without: garbage collection and friends.

A real cluster runs these in kube-controller-manager (garbage collector, namespace controller,
disruption controller, pod GC) and etcd (leases that expire events). The emulator runs them
inside the server so that it behaves like a cluster even before any simulated controller is
attached:

* **Garbage collection** through ``ownerReferences``: when an owner is gone, dependents whose
  owners are all gone are deleted (background propagation). An owner deleted with foreground
  propagation keeps a ``foregroundDeletion`` finalizer until its dependents are gone; with orphan
  propagation the dependents lose their reference to it and it goes.
* **Graceful pod deletion**: a pod bound to a node stays ``Terminating`` until its grace period
  ends; without a simulated kubelet, the emulator confirms the deletion then.
* **Namespaces**: a terminating namespace is emptied, then removed.
* **Event TTL**: events expire ``event_ttl`` of virtual time after their last write
  (kube-apiserver ``--event-ttl``, default one hour), and watchers see them deleted.
* **Disruption budgets**: ``status`` of every PodDisruptionBudget follows its pods (healthy
  pods, desired healthy, disruptions allowed), as the disruption controller keeps it.

Every loop is driven by store changes (an owner index and work sets), so a tick costs what
changed, not the size of the cluster.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from kubemedic.model.objects import parse_time
from kubemedic.sim.apiserver.registry.writing import DeleteOptions, WriteOptions, Writer
from kubemedic.sim.machinery import managers, selecting
from kubemedic.sim.machinery.apiresources import Registry, Resource
from kubemedic.sim.machinery.objects import Change, Key, Obj, clone

Ref = tuple[str, Key]  # (store name, key)

_FOREGROUND = "foregroundDeletion"
_ORPHAN = "orphan"
_CONTROLLER_MANAGER = managers.KUBE_CONTROLLER_MANAGER


class Collector:
    """Runs the built-in control loops on every tick."""

    def __init__(
        self, writer: Writer, registry: Registry, *, event_ttl: timedelta = timedelta(hours=1)
    ) -> None:
        self.writer = writer
        self.registry = registry
        self.event_ttl = event_ttl
        self._by_store: dict[str, Resource] = {}
        for res in registry.resources:
            self._by_store.setdefault(res.store_key, res)
        self._uids: dict[str, Ref] = {}
        self._dependents: dict[str, set[Ref]] = {}
        self._owners_of: dict[Ref, tuple[str, ...]] = {}
        self._gone_owners: set[str] = set()
        self._deleting: set[Ref] = set()
        self._graceful: list[tuple[datetime, int, Ref]] = []
        self._event_expiry: list[tuple[datetime, int, Ref]] = []
        self._pdb_dirty: set[str] = set()
        writer.store.listeners.append(self.observe)

    # indexing ----------------------------------------------------------------------------

    def observe(self, change: Change) -> None:
        ref: Ref = (change.store, _key(change.obj))
        meta = change.obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        if change.type == "DELETED":
            self._uids.pop(uid, None)
            self._deleting.discard(ref)
            self._set_owners(ref, ())
            if uid in self._dependents:
                self._gone_owners.add(uid)
        else:
            if uid:
                self._uids[uid] = ref
            owners = tuple(
                str(o.get("uid")) for o in meta.get("ownerReferences") or () if o.get("uid")
            )
            self._set_owners(ref, owners)
            if any(o not in self._uids for o in owners):
                self._gone_owners.update(o for o in owners if o not in self._uids)
            if meta.get("deletionTimestamp"):
                self._track_deletion(change, ref, meta)
            if change.store == "events":
                due = self.writer.clock.now() + self.event_ttl
                heapq.heappush(self._event_expiry, (due, int(meta["resourceVersion"]), ref))
        if change.store in ("pods", "poddisruptionbudgets.policy"):
            self._pdb_dirty.add(str(meta.get("namespace") or ""))

    def _track_deletion(self, change: Change, ref: Ref, meta: Mapping[str, Any]) -> None:
        """Objects being deleted wait in one of two places: a work set when a control loop must
        act (namespaces, orphan and foreground finalizers), a heap by due time for pods in
        their grace period. Objects held by other finalizers wait for whoever owns those."""
        finalizers = meta.get("finalizers") or ()
        if change.store == "namespaces" or _ORPHAN in finalizers or _FOREGROUND in finalizers:
            self._deleting.add(ref)
        else:
            self._deleting.discard(ref)
        if not finalizers and change.store == "pods":
            due = parse_time(meta.get("deletionTimestamp"))
            if due is not None:
                rv = int(meta.get("resourceVersion") or 0)
                heapq.heappush(self._graceful, (due, rv, ref))

    def _set_owners(self, ref: Ref, owners: tuple[str, ...]) -> None:
        before = self._owners_of.get(ref, ())
        if before == owners:
            return
        for uid in before:
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self._dependents[uid]
        for uid in owners:
            self._dependents.setdefault(uid, set()).add(ref)
        if owners:
            self._owners_of[ref] = owners
        else:
            self._owners_of.pop(ref, None)

    # ticking -----------------------------------------------------------------------------

    def tick(self) -> None:
        """One pass of every loop; cheap when nothing changed."""
        for _ in range(100):  # cascades settle within a few passes
            progressed = self._collect_orphans()
            progressed |= self._advance_deletions()
            if not progressed:
                break
        self._expire_events()
        self._update_budgets()

    def _collect_orphans(self) -> bool:
        if not self._gone_owners:
            return False
        gone, self._gone_owners = self._gone_owners, set()
        progressed = False
        for uid in gone:
            if uid in self._uids:
                continue
            for ref in list(self._dependents.get(uid, ())):
                owners = self._owners_of.get(ref, ())
                if any(o in self._uids for o in owners):
                    # Another owner still exists: the dependent stays, and the collector patches
                    # out the dangling reference, as the real garbage collector does.
                    self._drop_owner_reference(ref, uid)
                    progressed = True
                    continue
                progressed |= self._delete(ref, "Background")
        return progressed

    def _advance_deletions(self) -> bool:
        progressed = False
        for ref in list(self._deleting):
            entry = self.writer.store.get(*ref)
            if entry is None:
                self._deleting.discard(ref)
                continue
            res = self._by_store.get(ref[0])
            if res is None:
                continue
            meta = entry.obj["metadata"]
            finalizers = list(meta.get("finalizers") or [])
            uid = str(meta.get("uid") or "")
            if res.kind == "Namespace" and not res.group:
                progressed |= self._empty_namespace(ref, entry.obj)
                continue
            if _ORPHAN in finalizers:
                for dep in list(self._dependents.get(uid, ())):
                    self._drop_owner_reference(dep, uid)
                progressed |= self._remove_finalizer(res, ref, _ORPHAN)
                continue
            if _FOREGROUND in finalizers:
                blocking = [dep for dep in self._dependents.get(uid, ()) if self._blocks(dep, uid)]
                for dep in list(self._dependents.get(uid, ())):
                    # As the real collector: dependents that own objects themselves go in the
                    # foreground too, leaves in the background (a pod keeps its grace period).
                    progressed |= self._delete(
                        dep, "Foreground" if self._has_dependents(dep) else "Background"
                    )
                if not blocking:
                    progressed |= self._remove_finalizer(res, ref, _FOREGROUND)
                continue
            self._deleting.discard(ref)
        return self._finish_graceful() or progressed

    def _finish_graceful(self) -> bool:
        """Confirm pod deletions whose grace period is over (the stand-in kubelet)."""
        heap = self._graceful
        if not heap or not self.writer.stand_in_kubelet:
            return False
        now = self.writer.clock.now()
        progressed = False
        pods = self._by_store.get("pods")
        while heap and heap[0][0] <= now and pods is not None:
            _, rv, ref = heapq.heappop(heap)
            entry = self.writer.store.get(*ref)
            if entry is None or entry.rv != rv or entry.obj["metadata"].get("finalizers"):
                continue  # gone, or changed since (a newer entry is queued)
            self.writer.finish_deletion(pods, ref[1])
            progressed = True
        return progressed

    def _blocks(self, dep: Ref, owner_uid: str) -> bool:
        entry = self.writer.store.get(*dep)
        if entry is None:
            return False
        for owner in entry.obj["metadata"].get("ownerReferences") or ():
            if owner.get("uid") == owner_uid and owner.get("blockOwnerDeletion"):
                return True
        return False

    def _delete(self, ref: Ref, propagation: str) -> bool:
        res = self._by_store.get(ref[0])
        entry = self.writer.store.get(*ref)
        if res is None or entry is None or entry.obj["metadata"].get("deletionTimestamp"):
            return False
        self.writer.delete(res, ref[1], DeleteOptions(propagation=propagation))
        return True

    def _remove_finalizer(self, res: Resource, ref: Ref, finalizer: str) -> bool:
        entry = self.writer.store.get(*ref)
        if entry is None:
            return False
        new = clone(entry.obj)
        finalizers = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
        if finalizers:
            new["metadata"]["finalizers"] = finalizers
        else:
            new["metadata"].pop("finalizers", None)
        if finalizers or int(new["metadata"].get("deletionGracePeriodSeconds") or 0) > 0:
            # An object still in its grace period waits for it (the store only deletes on the
            # last finalizer's removal when no grace period is pending).
            self.writer.store.put(ref[0], ref[1], new, event="MODIFIED")
        else:
            self.writer.store.remove(ref[0], ref[1])
        return True

    def _has_dependents(self, ref: Ref) -> bool:
        entry = self.writer.store.get(*ref)
        uid = str((entry.obj["metadata"].get("uid") if entry is not None else "") or "")
        return bool(self._dependents.get(uid))

    def _drop_owner_reference(self, dep: Ref, owner_uid: str) -> None:
        entry = self.writer.store.get(*dep)
        if entry is None:
            return
        new = clone(entry.obj)
        refs = [
            o for o in new["metadata"].get("ownerReferences") or [] if o.get("uid") != owner_uid
        ]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)
        self.writer.store.put(dep[0], dep[1], new, event="MODIFIED")

    def _empty_namespace(self, ref: Ref, namespace_obj: Obj) -> bool:
        name = ref[1][1]
        remaining = False
        progressed = False
        for res in self.registry.resources:
            if not res.namespaced or res.storage or res.read_only:
                continue
            for key, entry in list(self.writer.store.scan(res.store_key, namespace=name)):
                remaining = True
                if not entry.obj["metadata"].get("deletionTimestamp"):
                    self.writer.delete(res, key, DeleteOptions(propagation="Background"))
                    progressed = True
        if not remaining and not namespace_obj["metadata"].get("finalizers"):
            self.writer.store.remove(ref[0], ref[1])
            progressed = True
        return progressed

    def _expire_events(self) -> None:
        heap = self._event_expiry
        if not heap:
            return
        now = self.writer.clock.now()
        while heap and heap[0][0] <= now:
            _, rv, ref = heapq.heappop(heap)
            entry = self.writer.store.get(*ref)
            if entry is not None and entry.rv == rv:
                self.writer.store.remove(*ref)

    # disruption budgets ------------------------------------------------------------------

    def _update_budgets(self) -> None:
        if not self._pdb_dirty:
            return
        dirty, self._pdb_dirty = self._pdb_dirty, set()
        store = self.writer.store
        if not store.count("poddisruptionbudgets.policy"):
            return  # no budget anywhere to follow its pods
        for namespace in dirty:
            budgets = list(store.scan("poddisruptionbudgets.policy", namespace=namespace))
            if not budgets:
                continue
            pods = [e.obj for _, e in store.scan("pods", namespace=namespace)]
            for key, entry in budgets:
                status = budget_status(entry.obj, pods, now=self.writer.clock.now())
                if entry.obj.get("status") == status:
                    continue
                new = clone(entry.obj)
                new["status"] = status
                res = self._by_store["poddisruptionbudgets.policy"]
                self.writer.update(
                    res, key, new, WriteOptions(manager=_CONTROLLER_MANAGER), subresource="status"
                )


def _key(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return (str(meta.get("namespace") or ""), str(meta.get("name") or ""))


def pod_is_healthy(pod: Mapping[str, Any]) -> bool:
    """Counted healthy by the disruption controller: Ready and not being deleted."""
    if pod.get("metadata", {}).get("deletionTimestamp"):
        return False
    for cond in pod.get("status", {}).get("conditions") or ():
        if cond.get("type") == "Ready":
            return bool(cond.get("status") == "True")
    return False


def budget_status(pdb: Mapping[str, Any], pods: list[Obj], *, now: datetime) -> dict[str, Any]:
    """The disruption controller's view of one budget.

    ``expectedPods`` is the number of pods the selector matches (the real controller asks the
    pods' controllers for their scale; with one controller per budget these agree).
    """
    spec = pdb.get("spec") or {}
    selector = selecting.LabelSelector.from_object(spec.get("selector") or {})
    matching = [p for p in pods if selector.matches(p.get("metadata", {}).get("labels") or {})]
    expected = len(matching)
    old_status = pdb.get("status") or {}
    disrupted = {
        name: when
        for name, when in (old_status.get("disruptedPods") or {}).items()
        if any(
            p["metadata"]["name"] == name and not p["metadata"].get("deletionTimestamp")
            for p in matching
        )
    }
    healthy = sum(
        1 for p in matching if pod_is_healthy(p) and p["metadata"]["name"] not in disrupted
    )
    if "minAvailable" in spec:
        desired = _scaled(spec["minAvailable"], expected, round_up=True)
    elif "maxUnavailable" in spec:
        desired = max(0, expected - _scaled(spec["maxUnavailable"], expected, round_up=True))
    else:
        desired = expected
    allowed = max(0, healthy - desired)
    condition = {
        "type": "DisruptionAllowed",
        "status": "True" if allowed > 0 else "False",
        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
        "message": "",
        "observedGeneration": pdb.get("metadata", {}).get("generation", 1),
        "lastTransitionTime": _transition(old_status, allowed > 0, now),
    }
    status: dict[str, Any] = {
        "observedGeneration": pdb.get("metadata", {}).get("generation", 1),
        "disruptionsAllowed": allowed,
        "currentHealthy": healthy,
        "desiredHealthy": desired,
        "expectedPods": expected,
        "conditions": [condition],
    }
    if disrupted:
        status["disruptedPods"] = disrupted
    return status


def _transition(old_status: Mapping[str, Any], allowed: bool, now: datetime) -> str:
    for cond in old_status.get("conditions") or ():
        if cond.get("type") == "DisruptionAllowed" and (cond.get("status") == "True") == allowed:
            return str(cond.get("lastTransitionTime"))
    from kubemedic.sim.machinery.clock import rfc3339  # noqa: PLC0415

    return rfc3339(now)


def _scaled(value: Any, total: int, *, round_up: bool) -> int:
    """An int-or-percent against a total (``25%`` of 10 is 3 rounded up)."""
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        fraction = float(text[:-1]) / 100 * total
        return math.ceil(fraction) if round_up else math.floor(fraction)
    return int(text)
