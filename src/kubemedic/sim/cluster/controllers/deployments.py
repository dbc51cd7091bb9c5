"""The Deployment controller of kube-controller-manager (``pkg/controller/deployment``).

A Deployment owns ReplicaSets named ``<deployment>-<pod-template-hash>``; the hash label is added
to the new ReplicaSet's template, labels and selector, so the ReplicaSets of one Deployment never
select each other's pods. The ReplicaSet whose template equals the Deployment's (ignoring the
hash label) is the *new* one; every other is *old*. Each sync (``syncDeployment``):

1. claims ReplicaSets (adopts matching orphans, releases those that stopped matching);
2. a paused Deployment, or a *scaling event* (an active ReplicaSet's
   ``deployment.kubernetes.io/desired-replicas`` differs from ``spec.replicas``), only scales:
   the single active ReplicaSet takes the whole count, otherwise replicas are spread in
   proportion to size (``sync.go`` ``scale``). This is how ``kubectl edit`` of ``replicas``
   12 -> 1, or a GitOps applier restoring 12, takes effect;
3. otherwise rolls out: **RollingUpdate** creates the new ReplicaSet and scales it up within
   ``replicas + maxSurge`` (25% rounded up), then scales old ones down keeping
   ``replicas - maxUnavailable`` (25% rounded down) available, unhealthy old replicas first
   (``rolling.go``); **Recreate** scales every old ReplicaSet to zero, waits until no old pod
   runs, then creates the new one at full size (``recreate.go``). A template edit (a
   ``kubectl edit`` adding ``nodeName``) therefore makes a new ReplicaSet and rolls over to it;
4. writes status: ``replicas``/``updatedReplicas``/``readyReplicas``/``availableReplicas``
   (sums over ReplicaSet status), ``unavailableReplicas``, and the conditions ``Available``
   (``MinimumReplicasAvailable``/``MinimumReplicasUnavailable``) and ``Progressing``
   (``NewReplicaSetCreated``, ``FoundNewReplicaSet``, ``ReplicaSetUpdated``,
   ``NewReplicaSetAvailable``, ``ProgressDeadlineExceeded`` after ``progressDeadlineSeconds``
   without progress), plus ``ReplicaFailure`` copied from a ReplicaSet that cannot create pods.

Revisions and the size annotations are kept as :mod:`kubemedic.sim.cluster.controllers.rollouts`
describes; old ReplicaSets beyond ``revisionHistoryLimit`` are deleted once scaled to zero.

Events (component ``deployment-controller``): ``ScalingReplicaSet`` "Scaled up replica set
<rs> from 0 to 12" / "Scaled down replica set <rs> from 12 to 1" (the 1.32 wording),
``ReplicaSetCreateError``, ``SelectingAll``.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubemedic.sim.cluster.controllers import conditions, podtemplates, rollouts
from kubemedic.sim.cluster.controllers.podtemplates import CONTROLLER_MANAGER, OwnerIndex
from kubemedic.sim.cluster.controllers.rollouts import (
    available_of,
    desired_annotation,
    replicas_of,
    status_replicas_of,
)
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import DelayedAdds, Simulation
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.objects import Change, Key, Obj, clone, key_of
from kubemedic.sim.machinery.selecting import LabelSelector

__all__ = ["DeploymentController"]

DEPLOYMENTS = "deployments.apps"
REPLICASETS = "replicasets.apps"
PODS = "pods"


class _Abort(Exception):
    """The sync stops here (upstream returns an error); ``retry`` seconds later it runs again."""

    def __init__(self, retry: float | None) -> None:
        super().__init__()
        self.retry = retry


class DeploymentController:
    """``deployment-controller``: rolls Deployments out through their ReplicaSets."""

    name = "deployment-controller"

    def __init__(self) -> None:
        self._replicasets = OwnerIndex("Deployment")
        self._pods = OwnerIndex("ReplicaSet")
        self._keys: dict[str, Key] = {}
        self._rs_keys: dict[str, Key] = {}
        self._by_namespace: dict[str, dict[Key, None]] = {}
        self._dirty: dict[Key, None] = {}
        self._wrote = False

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, CONTROLLER_MANAGER)
        self.recorder = EventRecorder(sim, component=self.name, manager=CONTROLLER_MANAGER)
        self._later = DelayedAdds(sim, self._requeue, name=self.name)
        sim.watch(DEPLOYMENTS, self._on_deployment)
        sim.watch(REPLICASETS, self._on_replicaset)
        sim.watch(PODS, self._on_pod)
        for store, fn in (
            (DEPLOYMENTS, self._on_deployment),
            (REPLICASETS, self._on_replicaset),
            (PODS, self._on_pod),
        ):
            for obj in sim.objects(store):
                fn(Change(0, store, "ADDED", obj, None))

    # observing ---------------------------------------------------------------------------

    def _on_deployment(self, change: Change) -> None:
        meta = change.obj["metadata"]
        key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        if change.type == "DELETED":
            self._keys.pop(str(meta.get("uid")), None)
            self._by_namespace.get(key[0], {}).pop(key, None)
            self._dirty.pop(key, None)
            return
        self._keys[str(meta.get("uid"))] = key
        self._by_namespace.setdefault(key[0], {})[key] = None
        self._dirty[key] = None

    def _on_replicaset(self, change: Change) -> None:
        before, after = self._replicasets.observe(change)
        meta = change.obj["metadata"]
        if change.type == "DELETED":
            self._rs_keys.pop(str(meta.get("uid")), None)
        else:
            self._rs_keys[str(meta.get("uid"))] = (str(meta.get("namespace") or ""), meta["name"])
        for uid in {before, after} - {""}:
            self._mark(uid)
        if (
            not after
            and change.type != "DELETED"
            and podtemplates.controller_of(change.obj) is None
        ):
            old_labels = (change.old or {}).get("metadata", {}).get("labels")
            if change.old is None or before or old_labels != meta.get("labels"):
                self._mark_matching(change.obj)

    def _on_pod(self, change: Change) -> None:
        """Only Recreate rollouts watch pods: the new ReplicaSet waits for old pods to stop."""
        before, after = self._pods.observe(change)
        owner = before if change.type == "DELETED" else after
        if not owner:
            return
        phase = (change.obj.get("status") or {}).get("phase")
        if change.type != "DELETED" and phase not in ("Failed", "Succeeded"):
            return
        rs_key = self._rs_keys.get(owner)
        deployment_uid = self._replicasets.owner(rs_key) if rs_key is not None else ""
        key = self._keys.get(deployment_uid)
        d = self.sim.get(DEPLOYMENTS, *key) if key is not None else None
        if key is not None and d is not None and rollouts.strategy(d) == "Recreate":
            self._dirty[key] = None

    def _mark(self, uid: str) -> None:
        key = self._keys.get(uid)
        if key is not None:
            self._dirty[key] = None

    def _mark_matching(self, rs: Obj) -> None:
        namespace = str(rs["metadata"].get("namespace") or "")
        labels = rs["metadata"].get("labels") or {}
        for key in self._by_namespace.get(namespace, ()):
            d = self.sim.get(DEPLOYMENTS, *key)
            if d is None:
                continue
            try:
                if LabelSelector.from_object(d["spec"].get("selector")).matches(labels):
                    self._dirty[key] = None
            except errors.StatusError:
                continue

    # syncing -----------------------------------------------------------------------------

    def _requeue(self, key: Key) -> None:
        """A delayed resync (``enqueueAfter``)."""
        self._dirty[key] = None

    def sync(self) -> bool:
        dirty, self._dirty = self._dirty, {}
        wrote = False
        for key in dirty:
            self._wrote = False
            try:
                self._sync_deployment(key)
                self._later.forget(key)  # no error: its rate-limiter back-off starts again
            except _Abort as abort:
                if abort.retry is not None:
                    self._later.add_after(key, abort.retry)
            wrote |= self._wrote
        return wrote

    def _sync_deployment(self, key: Key) -> None:
        stored = self.sim.get(DEPLOYMENTS, *key)
        if stored is None:
            return
        d = clone(stored)
        selector_obj = d["spec"].get("selector") or {}
        if not selector_obj.get("matchLabels") and not selector_obj.get("matchExpressions"):
            self.recorder.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            generation = int(d["metadata"].get("generation") or 0)
            if int(d.get("status", {}).get("observedGeneration") or 0) < generation:
                d.setdefault("status", {})["observedGeneration"] = generation
                self._write_status(d)
            return
        try:
            selector = LabelSelector.from_object(selector_obj)
        except errors.StatusError:
            return
        rs_list = self._claim(d, selector)
        if d["metadata"].get("deletionTimestamp"):
            new_rs, old_rss = self._all_replicasets(d, rs_list, create=False)
            self._sync_status(d, [*old_rss, new_rs])
            return
        self._check_paused(d)
        scaling = bool(d["spec"].get("paused")) or self._is_scaling_event(d, rs_list)
        rs_list = [self.sim.get(REPLICASETS, *key_of(rs)) or rs for rs in rs_list]  # re-read
        if scaling:
            self._sync_scale(d, rs_list)
        elif rollouts.strategy(d) == "Recreate":
            self._rollout_recreate(d, rs_list)
        else:
            self._rollout_rolling(d, rs_list)

    def _claim(self, d: Obj, selector: LabelSelector) -> list[Obj]:
        """``ClaimReplicaSets``: owned ReplicaSets that match, plus adopted orphans."""
        meta = d["metadata"]
        uid, namespace = str(meta["uid"]), str(meta.get("namespace") or "")
        deleting = bool(meta.get("deletionTimestamp"))
        claimed: list[Obj] = []
        for key in self._replicasets.owned(uid):
            rs = self.sim.get(REPLICASETS, *key)
            if rs is None:
                continue
            if selector.matches(rs["metadata"].get("labels") or {}):
                claimed.append(rs)
            elif not deleting:
                self._patch_rs(key, podtemplates.release_patch(uid, rs))
        if deleting:
            return claimed
        for key in list(self._replicasets.orphans.get(namespace, ())):
            rs = self.sim.get(REPLICASETS, *key)
            if rs is None or rs["metadata"].get("deletionTimestamp"):
                continue
            if selector.matches(rs["metadata"].get("labels") or {}):
                adopted = self._patch_rs(key, podtemplates.adopt_patch(d, rs))
                if adopted is not None:
                    claimed.append(adopted)
        return claimed

    def _patch_rs(self, key: Key, patch: Obj) -> Obj | None:
        try:
            rs = self.client.patch("apps/v1", "ReplicaSet", key[1], patch, namespace=key[0])
        except errors.StatusError as exc:
            if exc.code in (404, 409, 422):
                return None
            raise
        self._wrote = True
        return rs

    # writes ------------------------------------------------------------------------------

    def _write_status(self, d: Obj) -> None:
        """``UpdateStatus``: status and the revision annotation (the status strategy keeps
        metadata changes)."""
        body = clone(d)
        body["metadata"].pop("resourceVersion", None)
        try:
            stored = self.client.update(body, subresource="status")
        except errors.StatusError as exc:
            if exc.code == 404:
                raise _Abort(None) from exc
            raise
        d["metadata"]["resourceVersion"] = stored["metadata"].get("resourceVersion")
        self._wrote = True

    def _update_rs(self, rs: Obj) -> Obj:
        try:
            stored = self.client.update(rs)
        except errors.StatusError as exc:
            if exc.code == 404:
                raise _Abort(1.0) from exc
            raise
        self._wrote = True
        return stored

    def _scale_rs(self, rs: Obj, scale: int, d: Obj, operation: str) -> tuple[bool, Obj]:
        """``scaleReplicaSet``: set the size and the replicas annotations; an event when the
        size moved."""
        size_changed = replicas_of(rs) != scale
        desired, most = replicas_of(d), replicas_of(d) + rollouts.max_surge(d)
        if not size_changed and not rollouts.replicas_annotations_differ(rs, desired, most):
            return False, rs
        old_scale = replicas_of(rs)
        copy = clone(rs)
        copy["spec"]["replicas"] = scale
        rollouts.set_replicas_annotations(copy, desired, most)
        updated = self._update_rs(copy)
        if size_changed:
            name = updated["metadata"]["name"]
            self.recorder.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {name} from {old_scale} to {scale}",
            )
        return size_changed, updated

    def _scale_and_record(self, rs: Obj, scale: int, d: Obj) -> tuple[bool, Obj]:
        if replicas_of(rs) == scale:
            return False, rs
        return self._scale_rs(rs, scale, d, "up" if replicas_of(rs) < scale else "down")

    # new and old ReplicaSets -------------------------------------------------------------

    def _all_replicasets(
        self, d: Obj, rs_list: list[Obj], *, create: bool
    ) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (created when asked) and
        all old ones, with revisions synced."""
        existing = rollouts.find_new(d, rs_list)
        old = [rs for rs in rs_list if existing is None or rs is not existing]
        return self._new_replicaset(d, old, existing, create=create), old

    def _new_replicaset(
        self, d: Obj, old: list[Obj], existing: Obj | None, *, create: bool
    ) -> Obj | None:
        """``getNewReplicaSet``."""
        revision = str(rollouts.max_revision(old) + 1)
        if existing is not None:
            copy = clone(existing)
            changed = rollouts.set_new_annotations(d, copy, revision, exists=True)
            min_ready = int(d["spec"].get("minReadySeconds") or 0)
            if changed or int(copy["spec"].get("minReadySeconds") or 0) != min_ready:
                copy["spec"].pop("minReadySeconds", None)  # omitempty: zero is no field
                copy["spec"].update({"minReadySeconds": min_ready} if min_ready else {})
                return self._update_rs(copy)
            annotations = existing["metadata"].get("annotations") or {}
            needs = rollouts.set_revision(d, annotations.get(rollouts.REVISION, ""))
            if rollouts.has_progress_deadline(d) and conditions.of(d, "Progressing") is None:
                message = f'Found new replica set "{existing["metadata"]["name"]}"'
                now = self.sim.now()
                cond = conditions.condition(
                    "Progressing", "True", "FoundNewReplicaSet", message, now
                )
                conditions.set_condition(d.setdefault("status", {}), cond)
                needs = True
            if needs:
                self._write_status(d)
            return existing
        if not create:
            return None
        new_rs = rollouts.new_replicaset(d)
        count = rollouts.new_rs_new_replicas(d, [*old, new_rs], new_rs)
        new_rs["spec"]["replicas"] = count
        rollouts.set_new_annotations(d, new_rs, revision, exists=False)
        name = new_rs["metadata"]["name"]
        created, already = self._create_rs(d, new_rs)
        if not already and count > 0:
            message = f"Scaled up replica set {name} from 0 to {count}"
            self.recorder.event(d, "Normal", "ScalingReplicaSet", message)
        needs = rollouts.set_revision(d, revision)
        if not already and rollouts.has_progress_deadline(d):
            message = f'Created new replica set "{name}"'
            now = self.sim.now()
            cond = conditions.condition("Progressing", "True", "NewReplicaSetCreated", message, now)
            conditions.set_condition(d.setdefault("status", {}), cond)
            needs = True
        if needs:
            self._write_status(d)
        return created

    def _create_rs(self, d: Obj, new_rs: Obj) -> tuple[Obj, bool]:
        """Create the new ReplicaSet; an existing namesake is ours when we control it and its
        template matches, otherwise a hash collision (``status.collisionCount`` + 1)."""
        name = new_rs["metadata"]["name"]
        namespace = str(d["metadata"].get("namespace") or "")
        try:
            created = self.client.create(new_rs)
        except errors.StatusError as exc:
            if exc.code == 409 and exc.reason == "AlreadyExists":
                found = self.sim.get(REPLICASETS, namespace, name)
                ref = podtemplates.controller_of(found) if found is not None else None
                if (
                    found is not None
                    and ref is not None
                    and ref.get("uid") == d["metadata"]["uid"]
                    and rollouts.equal_ignore_hash(d["spec"]["template"], found["spec"]["template"])
                ):
                    return found, True
                status = d.setdefault("status", {})
                status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                self._write_status(d)
                raise _Abort(0.0) from exc
            if any(c.reason == "NamespaceTerminating" for c in exc.causes):
                raise _Abort(None) from exc
            message = f'Failed to create new replica set "{name}": {exc.message}'
            if rollouts.has_progress_deadline(d):
                now = self.sim.now()
                cond = conditions.condition(
                    "Progressing", "False", "ReplicaSetCreateError", message, now
                )
                conditions.set_condition(d.setdefault("status", {}), cond)
                self._write_status(d)
            self.recorder.event(d, "Warning", "ReplicaSetCreateError", message)
            raise _Abort(5.0) from exc
        self._wrote = True
        return created, False

    # scaling -----------------------------------------------------------------------------

    def _is_scaling_event(self, d: Obj, rs_list: list[Obj]) -> bool:
        new_rs, old = self._all_replicasets(d, rs_list, create=False)
        for rs in rollouts.active([*old, new_rs]):
            desired = desired_annotation(rs)
            if desired is not None and desired != replicas_of(d):
                return True
        return False

    def _sync_scale(self, d: Obj, rs_list: list[Obj]) -> None:
        """``sync``: scale (a paused Deployment or a scaling event), then status."""
        new_rs, old = self._all_replicasets(d, rs_list, create=False)
        self._scale(d, new_rs, old)
        if d["spec"].get("paused"):
            self._cleanup(d, old)
        self._sync_status(d, [*old, new_rs])

    def _scale(self, d: Obj, new_rs: Obj | None, old: list[Obj]) -> None:
        """``scale``: one active ReplicaSet takes all; a saturated new one leaves old ones at
        zero; otherwise a rolling Deployment spreads the difference proportionally."""
        target = rollouts.find_active_or_latest(new_rs, old)
        if target is not None:
            if replicas_of(target) != replicas_of(d):
                self._scale_and_record(target, replicas_of(d), d)
            return
        if rollouts.is_saturated(d, new_rs):
            for rs in rollouts.active(old):
                self._scale_and_record(rs, 0, d)
            return
        if rollouts.strategy(d) != "RollingUpdate":
            return
        sizes = rollouts.proportional_sizes(d, rollouts.active([*old, new_rs]))
        operation = sizes.operation
        for rs, size in sizes.targets:
            self._scale_rs(rs, size, d, operation)

    # rolling -----------------------------------------------------------------------------

    def _rollout_rolling(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old = self._all_replicasets(d, rs_list, create=True)
        if new_rs is None:
            return
        all_rss = [*old, new_rs]
        if self._reconcile_new(d, all_rss, new_rs) or self._reconcile_old(
            d, all_rss, rollouts.active(old), new_rs
        ):
            self._sync_rollout_status(d, all_rss, new_rs)
            return
        if rollouts.complete(d, d.get("status") or {}):
            self._cleanup(d, old)
        self._sync_rollout_status(d, all_rss, new_rs)

    def _reconcile_new(self, d: Obj, all_rss: list[Obj], new_rs: Obj) -> bool:
        if replicas_of(new_rs) == replicas_of(d):
            return False
        if replicas_of(new_rs) > replicas_of(d):
            return self._scale_and_record(new_rs, replicas_of(d), d)[0]
        count = rollouts.new_rs_new_replicas(d, all_rss, new_rs)
        return self._scale_and_record(new_rs, count, d)[0]

    def _reconcile_old(self, d: Obj, all_rss: list[Obj], old: list[Obj], new_rs: Obj) -> bool:
        """``reconcileOldReplicaSets``: scale old ReplicaSets down as far as availability
        allows, unhealthy replicas first."""
        if sum(replicas_of(rs) for rs in old) == 0:
            return False
        all_pods = sum(replicas_of(rs) for rs in all_rss)
        min_available = replicas_of(d) - rollouts.max_unavailable(d)
        new_unavailable = replicas_of(new_rs) - available_of(new_rs)
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old = sorted(old, key=rollouts.creation_key)
        cleaned = 0
        for i, rs in enumerate(old):
            if cleaned >= max_scaled_down:
                break
            if replicas_of(rs) == 0 or replicas_of(rs) == available_of(rs):
                continue
            count = min(max_scaled_down - cleaned, replicas_of(rs) - available_of(rs))
            _, old[i] = self._scale_and_record(rs, replicas_of(rs) - count, d)
            cleaned += count
        available = sum(available_of(rs) for rs in [*old, new_rs])
        scaled = 0
        if available > min_available:
            budget = available - min_available
            for rs in sorted(old, key=rollouts.creation_key):
                if scaled >= budget:
                    break
                if replicas_of(rs) == 0:
                    continue
                count = min(replicas_of(rs), budget - scaled)
                self._scale_and_record(rs, replicas_of(rs) - count, d)
                scaled += count
        return cleaned + scaled > 0

    # recreate ----------------------------------------------------------------------------

    def _rollout_recreate(self, d: Obj, rs_list: list[Obj]) -> None:
        new_rs, old = self._all_replicasets(d, rs_list, create=False)
        all_rss: Sequence[Obj | None] = [*old, new_rs]
        scaled = False
        for rs in rollouts.active(old):
            scaled |= self._scale_and_record(rs, 0, d)[0]
        if scaled or self._old_pods_running(new_rs, old, rs_list):
            self._sync_rollout_status(d, all_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old = self._all_replicasets(d, rs_list, create=True)
            all_rss = [*old, new_rs]
        if new_rs is not None:
            self._scale_and_record(new_rs, replicas_of(d), d)
        if rollouts.complete(d, d.get("status") or {}):
            self._cleanup(d, old)
        self._sync_rollout_status(d, all_rss, new_rs)

    def _old_pods_running(self, new_rs: Obj | None, old: list[Obj], rs_list: list[Obj]) -> bool:
        if sum(status_replicas_of(rs) for rs in old) > 0:
            return True
        new_uid = new_rs["metadata"]["uid"] if new_rs is not None else None
        for rs in rs_list:
            uid = rs["metadata"]["uid"]
            if uid == new_uid:
                continue
            for key in self._pods.owned(uid):
                pod = self.sim.get(PODS, *key)
                phase = (pod.get("status") or {}).get("phase") if pod is not None else None
                if pod is not None and phase not in ("Failed", "Succeeded"):
                    return True
        return False

    # status ------------------------------------------------------------------------------

    def _check_paused(self, d: Obj) -> None:
        if not rollouts.has_progress_deadline(d):
            return
        cond = conditions.of(d, "Progressing")
        if cond is not None and cond.get("reason") == "ProgressDeadlineExceeded":
            return
        paused_cond = cond is not None and cond.get("reason") == "DeploymentPaused"
        now = self.sim.now()
        if d["spec"].get("paused") and not paused_cond:
            new = conditions.condition(
                "Progressing", "Unknown", "DeploymentPaused", "Deployment is paused", now
            )
        elif not d["spec"].get("paused") and paused_cond:
            new = conditions.condition(
                "Progressing", "Unknown", "DeploymentResumed", "Deployment is resumed", now
            )
        else:
            return
        conditions.set_condition(d.setdefault("status", {}), new)
        self._write_status(d)

    def _sync_status(self, d: Obj, all_rss: Sequence[Obj | None]) -> None:
        """``syncDeploymentStatus``."""
        new_status = rollouts.calculate_status(d, all_rss, all_rss[-1], self.sim.now())
        if rollouts.compact(d.get("status") or {}) != rollouts.compact(new_status):
            d["status"] = new_status
            self._write_status(d)

    def _sync_rollout_status(
        self, d: Obj, all_rss: Sequence[Obj | None], new_rs: Obj | None
    ) -> None:
        """``syncRolloutStatus``: status plus progress estimation against the deadline."""
        now = self.sim.now()
        status = rollouts.progress(d, all_rss, new_rs, now)
        if rollouts.compact(d.get("status") or {}) == rollouts.compact(status):
            delay = rollouts.stuck_requeue(d, status, now)
            if delay:
                self._later.add_after(key_of(d), delay)
            elif delay is not None:  # at once, through the rate limiter (enqueueRateLimited)
                self._later.add_rate_limited(key_of(d))
            return
        d["status"] = status
        self._write_status(d)

    def _cleanup(self, d: Obj, old: list[Obj]) -> None:
        """``cleanupDeployment``: delete the oldest revisions beyond ``revisionHistoryLimit``
        (only those scaled to zero with their size observed)."""
        for rs in rollouts.history_to_delete(d, old):
            meta = rs["metadata"]
            self.client.delete(
                "apps/v1", "ReplicaSet", meta["name"], namespace=str(meta.get("namespace") or "")
            )
            self._wrote = True
