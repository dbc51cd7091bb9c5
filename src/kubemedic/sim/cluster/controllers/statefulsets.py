"""The StatefulSet controller of kube-controller-manager (``pkg/controller/statefulset``, 1.32).

Each StatefulSet keeps one pod per ordinal, named ``<set>-<ordinal>`` (ordinals from
``spec.ordinals.start``, default 0), labelled ``statefulset.kubernetes.io/pod-name``,
``apps.kubernetes.io/pod-index`` and ``controller-revision-hash``, with ``hostname`` the pod's
name and ``subdomain`` the set's ``serviceName``:

- **Identity.** A pod is made again under the *same name* only once the old pod object is gone
  from the API. A pod that is ``Terminating`` blocks its ordinal: never two pods of one ordinal
  at once (the at-most-one guarantee that makes a pod on an unreachable node stay put until the
  node is confirmed down and the pod force-deleted, e.g. by PodGC after the out-of-service taint).
- **Failed pods** (phase ``Failed`` or ``Succeeded``) are deleted so that they can be made again
  (``RecreatingFailedPod``/``RecreatingTerminatedPod`` in the upstream log).
- **Scaling** deletes the pods of ordinals at or above ``replicas``.
- **Pod management.** Every set is handled as ``podManagementPolicy: Parallel``: all missing
  ordinals are created in one sync and surplus ones deleted at once. ``OrderedReady`` (the
  default) would create ordinal *n* only when *n-1* is Running and Ready; the simplification
  changes only how fast a set first comes up, not which pod exists under which name.
- **Not simulated:** ``volumeClaimTemplates`` (no PersistentVolumeClaims are made),
  ControllerRevision objects (the revision is the template hash, ``<set>-<hash>``), and rolling
  updates of a changed template (new pods get the new template; running ones are kept).

Status: ``replicas`` (pods created, phase set), ``readyReplicas`` (Running and Ready, not being
deleted), ``availableReplicas`` (ready for ``minReadySeconds``), ``currentReplicas`` /
``updatedReplicas`` (of the current revision), ``currentRevision``, ``updateRevision``,
``observedGeneration``, ``collisionCount``. Events on the set, component
``statefulset-controller``: ``SuccessfulCreate`` ``create Pod <pod> in StatefulSet <set>
successful``, ``SuccessfulDelete`` ``delete Pod <pod> in StatefulSet <set> successful``,
``FailedCreate`` on errors. Writes use field manager ``kube-controller-manager``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.sim.cluster.controllers import podtemplates
from kubemedic.sim.cluster.controllers.podtemplates import CONTROLLER_MANAGER, OwnerIndex
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.objects import Change, Key, Obj

__all__ = ["POD_INDEX_LABEL", "POD_NAME_LABEL", "REVISION_LABEL", "StatefulSetController"]

PODS = "pods"
STATEFULSETS = "statefulsets.apps"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"


class StatefulSetController:
    """``statefulset-controller``: one pod per ordinal, each name used by one pod at a time."""

    name = "statefulset-controller"

    def __init__(self) -> None:
        self.created = 0
        self.deleted = 0
        self._pods = OwnerIndex("StatefulSet")
        self._keys: dict[str, Key] = {}
        self._dirty: dict[Key, None] = {}

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, CONTROLLER_MANAGER)
        self.recorder = EventRecorder(sim, component=self.name, manager=CONTROLLER_MANAGER)
        sim.watch(STATEFULSETS, self._on_set)
        sim.watch(PODS, self._on_pod)
        for sts in sim.objects(STATEFULSETS):
            self._on_set(Change(0, STATEFULSETS, "ADDED", sts, None))
        for pod in sim.objects(PODS):
            self._on_pod(Change(0, PODS, "ADDED", pod, None))

    # observing ---------------------------------------------------------------------------

    def _on_set(self, change: Change) -> None:
        meta = change.obj["metadata"]
        key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        uid = str(meta.get("uid") or "")
        if change.type == "DELETED":
            self._keys.pop(uid, None)
            self._dirty.pop(key, None)
            return
        self._keys[uid] = key
        self._dirty[key] = None

    def _on_pod(self, change: Change) -> None:
        before, after = self._pods.observe(change)
        for uid in {before, after} - {""}:
            if change.type in ("ADDED", "DELETED") or podtemplates.pod_changed(
                change.old, change.obj
            ):
                self._mark(uid)

    def _mark(self, uid: str) -> None:
        key = self._keys.get(uid)
        if key is not None:
            self._dirty[key] = None

    # syncing -----------------------------------------------------------------------------

    def sync(self) -> bool:
        dirty, self._dirty = self._dirty, {}
        wrote = False
        for key in dirty:
            wrote |= self._sync_set(key)
        return wrote

    def _sync_set(self, key: Key) -> bool:
        sts = self.sim.get(STATEFULSETS, *key)
        if sts is None:
            return False
        uid = str(sts["metadata"].get("uid") or "")
        pods = {
            key[1]: pod
            for key in self._pods.owned(uid)
            if (pod := self.sim.get(PODS, *key)) is not None
        }
        wrote = False
        if not sts["metadata"].get("deletionTimestamp"):
            wrote = self._manage(sts, pods)
        return self._update_status(sts, pods) or wrote

    def _manage(self, sts: Obj, pods: dict[str, Obj]) -> bool:
        spec = sts.get("spec") or {}
        name = str(sts["metadata"]["name"])
        start = int((spec.get("ordinals") or {}).get("start") or 0)
        replicas = int(spec.get("replicas", 1))
        wanted = {f"{name}-{i}": i for i in range(start, start + replicas)}
        wrote = False
        for pod_name, pod in sorted(pods.items()):
            terminating = bool(pod["metadata"].get("deletionTimestamp"))
            phase = (pod.get("status") or {}).get("phase")
            if terminating:
                continue  # the ordinal waits until the old pod object is gone
            if pod_name not in wanted or phase in ("Failed", "Succeeded"):
                wrote |= self._delete(sts, pod)
        for pod_name, ordinal in sorted(wanted.items(), key=lambda item: item[1]):
            if pod_name not in pods:
                wrote |= self._create(sts, pod_name, ordinal)
        return wrote

    def _create(self, sts: Obj, pod_name: str, ordinal: int) -> bool:
        template = sts["spec"].get("template") or {}
        body = podtemplates.pod_from_template(template, sts)
        meta = body["metadata"]
        del meta["generateName"]
        meta["name"] = pod_name
        meta["labels"] = {
            **(meta.get("labels") or {}),
            POD_NAME_LABEL: pod_name,
            POD_INDEX_LABEL: str(ordinal),
            REVISION_LABEL: _revision(sts),
        }
        body["spec"]["hostname"] = pod_name
        if sts["spec"].get("serviceName"):
            body["spec"]["subdomain"] = sts["spec"]["serviceName"]
        set_name = sts["metadata"]["name"]
        try:
            self.client.create(body)
        except errors.StatusError as exc:
            if exc.code == 409:  # the old pod of that name is still there: wait for it
                return False
            self.recorder.event(
                sts,
                "Warning",
                "FailedCreate",
                f"create Pod {pod_name} in StatefulSet {set_name} failed error: {exc.message}",
            )
            return False
        self.created += 1
        self.recorder.event(
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Pod {pod_name} in StatefulSet {set_name} successful",
        )
        return True

    def _delete(self, sts: Obj, pod: Obj) -> bool:
        meta = pod["metadata"]
        try:
            self.client.delete(
                "v1", "Pod", meta["name"], namespace=meta.get("namespace", ""), uid=meta.get("uid")
            )
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                return False
            raise
        self.deleted += 1
        self.recorder.event(
            sts,
            "Normal",
            "SuccessfulDelete",
            f"delete Pod {meta['name']} in StatefulSet {sts['metadata']['name']} successful",
        )
        return True

    def _update_status(self, sts: Obj, pods: Mapping[str, Obj]) -> bool:
        spec = sts.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        now = self.sim.now()
        revision = _revision(sts)
        created = [p for p in pods.values() if (p.get("status") or {}).get("phase")]
        live = [p for p in created if not p["metadata"].get("deletionTimestamp")]
        ready = [
            p
            for p in live
            if (p.get("status") or {}).get("phase") == "Running" and podtemplates.is_pod_ready(p)
        ]
        current = sum(
            1
            for p in created
            if (p["metadata"].get("labels") or {}).get(REVISION_LABEL) == revision
        )
        status: dict[str, Any] = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": len(created),
            "readyReplicas": len(ready),
            "availableReplicas": sum(
                1 for p in ready if podtemplates.is_pod_available(p, min_ready, now)
            ),
            "currentReplicas": current,
            "updatedReplicas": current,
            "currentRevision": revision,
            "updateRevision": revision,
            "collisionCount": 0,
        }
        stored = sts.get("status") or {}
        if all(stored.get(k) == v for k, v in status.items()):
            return False
        meta = sts["metadata"]
        patch = {"metadata": {"uid": meta.get("uid")}, "status": status}
        try:
            self.client.patch(
                "apps/v1",
                "StatefulSet",
                meta["name"],
                patch,
                namespace=meta.get("namespace", ""),
                patch_type="merge",
                subresource="status",
            )
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                return False
            raise
        return True


def _revision(sts: Mapping[str, Any]) -> str:
    template = (sts.get("spec") or {}).get("template") or {}
    return f"{sts['metadata']['name']}-{podtemplates.compute_hash(template)}"
