"""Pod templates, controller references and pod predicates shared by the workload controllers.

These are the pieces of ``pkg/controller/controller_utils.go``, ``pkg/api/v1/pod`` and
``k8s.io/component-helpers`` that the ReplicaSet, Deployment and DaemonSet controllers of
kube-controller-manager 1.32 have in common:

- **Pods from a template** (``GetPodFromTemplate``): the template's labels, annotations,
  finalizers and spec, ``generateName: <owner>-`` and one controller reference
  (``NewControllerRef``: ``controller: true``, ``blockOwnerDeletion: true``).
- **Activity** (``IsPodActive``): a pod that is ``Succeeded``, ``Failed`` or being deleted is not
  active. Controllers count active pods only, which is why a pod the kubelet rejects at admission
  (``Failed``) is replaced at once: the root of the failed-pod storm.
- **Readiness and availability** (``IsPodReady``, ``IsPodAvailable``): ready for
  ``minReadySeconds`` (strictly longer) since the Ready condition's last transition.
- **The pod-template hash** (``controller.ComputeHash``): FNV-1a (32 bit) over the template and
  the collision count, printed in decimal and passed through ``rand.SafeEncodeString``, so a hash
  only has the characters ``4-9bcdf`` (``5d8f7c9b4``). Go hashes a ``spew`` dump of the Go
  struct; here the canonical JSON of the (defaulted) template is hashed instead, so hashes have
  the real shape and change exactly when the template does, but are not byte-identical to a real
  cluster's.
- **Ownership**: an index of dependents by their controller's uid, kept from change
  notifications (an informer indexer), and the adopt/release patches of
  ``ControllerRefManager``.
- **Node predicates** used by the DaemonSet controller: node selector and required node affinity
  (``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``, with ``matchFields`` on
  ``metadata.name``), and taints versus tolerations (``FindMatchingUntoleratedTaint``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

import orjson

from kubemedic.model import placement
from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.naming import GENERATED_NAME_ALPHABET
from kubemedic.sim.machinery.objects import Change, Key, Obj, clone

__all__ = [
    "CONTROLLER_MANAGER",
    "TEMPLATE_HASH_LABEL",
    "OwnerIndex",
    "PodControl",
    "adopt_patch",
    "compute_hash",
    "controller_of",
    "controller_ref",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "log2_rank",
    "node_affinity_matches",
    "pod_changed",
    "pod_from_template",
    "ready_since",
    "release_patch",
    "safe_encode",
    "slow_start_batch",
    "tolerates",
    "untolerated_taint",
]

#: The field manager (user agent) of every controller in kube-controller-manager.
CONTROLLER_MANAGER = managers.KUBE_CONTROLLER_MANAGER
#: ``apps.DefaultDeploymentUniqueLabelKey``.
TEMPLATE_HASH_LABEL = "pod-template-hash"

_FNV_OFFSET = 0x811C9DC5
_FNV_PRIME = 0x01000193


# -- templates -----------------------------------------------------------------------------------


def controller_ref(owner: Mapping[str, Any]) -> Obj:
    """``metav1.NewControllerRef``: the owner reference a controller stamps on what it makes."""
    meta = owner.get("metadata") or {}
    return {
        "apiVersion": owner.get("apiVersion", ""),
        "kind": owner.get("kind", ""),
        "name": meta.get("name", ""),
        "uid": meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metav1.GetControllerOf``: the owner reference with ``controller: true``, if any."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def pod_from_template(template: Mapping[str, Any], owner: Mapping[str, Any]) -> Obj:
    """``GetPodFromTemplate``: a pod body for ``owner``'s namespace, named by the server from
    ``<owner name>-`` (the random five-character suffix of ``generateName``)."""
    tmeta = template.get("metadata") or {}
    ometa = owner.get("metadata") or {}
    meta: Obj = {"generateName": f"{ometa.get('name', '')}-"}
    if ometa.get("namespace"):
        meta["namespace"] = ometa["namespace"]
    for part in ("labels", "annotations"):
        if tmeta.get(part):
            meta[part] = dict(tmeta[part])
    if tmeta.get("finalizers"):
        meta["finalizers"] = list(tmeta["finalizers"])
    meta["ownerReferences"] = [controller_ref(owner)]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": clone(template.get("spec") or {}),
    }


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte mapped onto consonants and digits that cannot spell
    words (and never a vowel, so names stay inoffensive)."""
    return "".join(GENERATED_NAME_ALPHABET[b % len(GENERATED_NAME_ALPHABET)] for b in text.encode())


def compute_hash(template: Mapping[str, Any], collision_count: int | None = None) -> str:
    """``controller.ComputeHash``: the pod-template hash (see the module notes)."""
    data = orjson.dumps(template, option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    value = _FNV_OFFSET
    for byte in data:
        value = ((value ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return safe_encode(str(value))


# -- pod state -----------------------------------------------------------------------------------


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not Succeeded, not Failed and not being deleted."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return False
    return not (pod.get("metadata") or {}).get("deletionTimestamp")


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return condition  # type: ignore[no-any-return]
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    condition = _ready_condition(pod)
    return condition is not None and condition.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> datetime | None:
    """When a ready pod became ready (its Ready condition's lastTransitionTime)."""
    condition = _ready_condition(pod)
    if condition is None or condition.get("status") != "True":
        return None
    return parse_time(condition.get("lastTransitionTime"))


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """``podutil.IsPodAvailable``: ready, and for longer than ``minReadySeconds``."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = ready_since(pod)
    return since is not None and since + timedelta(seconds=min_ready_seconds) < now


def _ready_mark(pod: Mapping[str, Any]) -> tuple[Any, Any]:
    condition = _ready_condition(pod)
    if condition is None:
        return None, None
    return condition.get("status"), condition.get("lastTransitionTime")


def pod_changed(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> bool:
    """Whether a pod update can change what a workload controller counts (phase, deletion,
    labels, readiness, node): other updates (container state details) need no sync."""
    if old is None:
        return True
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    return bool(
        (old.get("status") or {}).get("phase") != (new.get("status") or {}).get("phase")
        or old_meta.get("deletionTimestamp") != new_meta.get("deletionTimestamp")
        or old_meta.get("labels") != new_meta.get("labels")
        or (old.get("spec") or {}).get("nodeName") != (new.get("spec") or {}).get("nodeName")
        or _ready_mark(old) != _ready_mark(new)
    )


# -- ownership -----------------------------------------------------------------------------------


class OwnerIndex:
    """Objects of one store by the uid of their controller of one kind (an informer indexer).

    Objects without any controller are kept per namespace as orphans (candidates for adoption);
    objects controlled by another kind are not tracked at all. With ``active``, the owned objects
    that pass it are also kept apart, so a ReplicaSet with thousands of ``Failed`` pods finds its
    dozen active ones without walking the rest.
    """

    def __init__(self, kind: str, *, active: Callable[[Obj], bool] | None = None) -> None:
        self.kind = kind
        self._active_test = active
        self._owner: dict[Key, str] = {}
        self._owned: dict[str, dict[Key, None]] = {}
        self._active: dict[str, dict[Key, None]] = {}
        self.orphans: dict[str, dict[Key, None]] = {}

    def observe(self, change: Change) -> tuple[str, str]:
        """Update the index; returns the controller uids before and after ("" for none)."""
        meta = change.obj.get("metadata") or {}
        key: Key = (str(meta.get("namespace") or ""), str(meta.get("name") or ""))
        before = self._owner.pop(key, "")
        if before:
            _discard(self._owned, before, key)
            _discard(self._active, before, key)
        orphans = self.orphans.get(key[0])
        if orphans is not None:
            orphans.pop(key, None)
        if change.type == "DELETED":
            return before, ""
        ref = controller_of(change.obj)
        if ref is None:
            self.orphans.setdefault(key[0], {})[key] = None
            return before, ""
        if ref.get("kind") != self.kind:
            return before, ""
        uid = str(ref.get("uid") or "")
        self._owner[key] = uid
        self._owned.setdefault(uid, {})[key] = None
        if self._active_test is not None and self._active_test(change.obj):
            self._active.setdefault(uid, {})[key] = None
        return before, uid

    def owned(self, uid: str, *, active: bool = False) -> list[Key]:
        """Keys of the objects ``uid`` controls (only those passing ``active`` when asked)."""
        return list((self._active if active else self._owned).get(uid, ()))

    def owner(self, key: Key) -> str:
        return self._owner.get(key, "")


def _discard(index: dict[str, dict[Key, None]], uid: str, key: Key) -> None:
    found = index.get(uid)
    if found is not None:
        found.pop(key, None)
        if not found:
            del index[uid]


def adopt_patch(owner: Mapping[str, Any], obj: Mapping[str, Any]) -> Obj:
    """The strategic merge patch ``ControllerRefManager`` sends to adopt ``obj`` (the uid
    guards against adopting a namesake that replaced it)."""
    uid = (obj.get("metadata") or {}).get("uid", "")
    return {"metadata": {"ownerReferences": [controller_ref(owner)], "uid": uid}}


def release_patch(owner_uid: str, obj: Mapping[str, Any]) -> Obj:
    """The strategic merge patch that releases ``obj`` from the controller ``owner_uid``.

    Upstream sends a ``$patch: delete`` item; when it was the only reference, Go's encoder then
    drops the empty list (``omitempty``), so the patch here removes the field outright in that
    case and the stored object reads as on a real cluster."""
    meta = obj.get("metadata") or {}
    uid = meta.get("uid", "")
    others = [r for r in meta.get("ownerReferences") or () if r.get("uid") != owner_uid]
    if not others:
        return {"metadata": {"ownerReferences": None, "uid": uid}}
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}], "uid": uid}}


class PodControl:
    """``RealPodControl``: creates and deletes a controller's pods and records the events
    ``SuccessfulCreate``/``FailedCreate``/``SuccessfulDelete``/``FailedDelete`` on the owner."""

    def __init__(self, client: Client, recorder: EventRecorder) -> None:
        self.client = client
        self.recorder = recorder

    def create(self, template: Mapping[str, Any], owner: Mapping[str, Any]) -> Obj:
        """Create one pod from ``template``; raises the API error after recording it (except
        when the namespace is terminating, which is expected and not worth an event)."""
        body = pod_from_template(template, owner)
        if not body["metadata"].get("labels"):
            raise errors.bad_request("unable to create pods, no labels")
        try:
            pod = self.client.create(body)
        except errors.StatusError as exc:
            if not any(c.reason == "NamespaceTerminating" for c in exc.causes):
                self.recorder.event(
                    owner, "Warning", "FailedCreate", f"Error creating: {exc.message}"
                )
            raise
        name = pod["metadata"]["name"]
        self.recorder.event(owner, "Normal", "SuccessfulCreate", f"Created pod: {name}")
        return pod

    def delete(self, namespace: str, name: str, owner: Mapping[str, Any]) -> None:
        """Delete one pod (a 404 is raised silently, other errors after a FailedDelete event)."""
        if self.client.get("v1", "Pod", name, namespace) is None:
            raise errors.not_found("pods", name)
        try:
            self.client.delete("v1", "Pod", name, namespace=namespace)
        except errors.StatusError as exc:
            if exc.code != 404:
                self.recorder.event(
                    owner, "Warning", "FailedDelete", f"Error deleting: {exc.message}"
                )
            raise
        self.recorder.event(owner, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")


def slow_start_batch(count: int, fn: Callable[[], object]) -> tuple[int, errors.StatusError | None]:
    """``slowStartBatch``: call ``fn`` ``count`` times in batches of 1, 2, 4, ...; a batch with
    a failure ends the run (so a quota or admission refusal costs one call, not hundreds).
    Returns the successes and the first error."""
    remaining, successes, batch = count, 0, min(count, 1)
    while batch > 0:
        failure: errors.StatusError | None = None
        for _ in range(batch):
            try:
                fn()
                successes += 1
            except errors.StatusError as exc:
                failure = failure or exc
        if failure is not None:
            return successes, failure
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


# -- node predicates -----------------------------------------------------------------------------


def node_affinity_matches(spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """``nodeaffinity.GetRequiredNodeAffinity(pod).Match(node)``: the pod's ``nodeSelector``
    and its required node affinity (terms ORed; a term's requirements ANDed). The rule is the
    one kubemedic's checks apply (:func:`kubemedic.model.placement.affinity_matches`)."""
    return placement.affinity_matches(spec, node)


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """``Toleration.ToleratesTaint`` (:func:`kubemedic.model.placement.tolerates`)."""
    return placement.tolerates(toleration, taint)


def untolerated_taint(
    taints: Iterable[Mapping[str, Any]],
    tolerations: Iterable[Mapping[str, Any]],
    effect: Callable[[str], bool],
) -> Mapping[str, Any] | None:
    """``FindMatchingUntoleratedTaint``: the first taint of a selected effect no toleration
    tolerates."""
    tolerations = list(tolerations)
    for taint in taints:
        if not effect(str(taint.get("effect") or "")):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


def log2_rank(moment: datetime | None, now: datetime) -> int:
    """The logarithmic bucket of an age (``LogarithmicScaleDown``): ``int(log2(nanoseconds))``,
    -1 for no age."""
    if moment is None:
        return -1
    nanos = (now - moment).total_seconds() * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1
