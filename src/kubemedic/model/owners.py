"""Which workload a pod belongs to, named so that causes stay the same across rollouts.

**The workload of a pod** is its outermost controller in the view (``ClusterView.top_owner``:
Pod -> ReplicaSet -> Deployment, Pod -> Job -> CronJob, Pod -> StatefulSet ...). A Deployment's
pods belong to a ReplicaSet named ``<deployment>-<pod-template-hash>``, a new one for every
rollout; when that ReplicaSet is not in the view (a snapshot of pods only, or a ReplicaSet
already deleted) the owner chain stops at it, and ``recover_deployment`` names the Deployment
instead, from the pod's ``pod-template-hash`` label: the name a cause fingerprint must carry,
since the hash changes with every template edit. When the ReplicaSet *is* in the view its own
``ownerReferences`` are the truth (an orphaned ReplicaSet stays a ReplicaSet).

**Pods that are gone** (only an event names them) are placed by their generated names. The API
server's ``generateName`` appends 5 random characters (from ``bcdfghjklmnpqrstvwxz2456789``) to
the prefix the controller chose, after cutting that prefix to 58 characters (so pods of workloads
with longer names cannot be recognised):

* ReplicaSet, DaemonSet, Job, ReplicationController: ``<name>-<5 chars>``;
* Deployment (through its ReplicaSet): ``<deployment>-<pod-template-hash>-<5 chars>``, the hash
  being the decimal FNV-32 hash of the pod template re-encoded in the same alphabet, so at most
  10 characters (5 to 10 are accepted: shorter hashes are rare and look like other names);
* StatefulSet: ``<name>-<ordinal>``, no randomness at all.

``guess_owner`` confirms such a guess against the workloads in the view (the longest matching
name wins, and its top owner is returned); ``guess_deployment`` reads a Deployment from the
name alone, for when the view holds no workloads, and is only a guess.

``pod_key``, ``owner_text`` and ``cause_key`` are how evidence, messages and causes name pods and
workloads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from kubemedic.model import objects
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.view import ClusterView

__all__ = [
    "POD_TEMPLATE_SPECS",
    "cause_key",
    "generated_by",
    "guess_deployment",
    "guess_owner",
    "owner_text",
    "pod_key",
    "recover_deployment",
    "workload_of",
]

POD_TEMPLATE_SPECS: Mapping[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "ReplicationController", "Job"),
        ("spec", "template", "spec"),
    ),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
"""Where each workload kind keeps the spec of the pods it creates."""

_SUFFIX = r"[a-z0-9]{5}"
_TEMPLATE_HASH = r"[a-z0-9]{5,10}"
_ORDINAL = r"\d{1,6}"
_SUFFIXES = {
    "Deployment": re.compile(rf"{_TEMPLATE_HASH}-{_SUFFIX}"),
    "StatefulSet": re.compile(_ORDINAL),
    **dict.fromkeys(
        ("ReplicaSet", "DaemonSet", "Job", "ReplicationController"), re.compile(_SUFFIX)
    ),
}
"""What each controller appends to its own name to name a pod (see the module docstring)."""
_DEPLOYMENT_POD = re.compile(rf"(?P<deployment>[a-z0-9][-a-z0-9.]*?)-{_TEMPLATE_HASH}-{_SUFFIX}")


# -- the workload of a pod in the view ---------------------------------------------------------


def workload_of(view: ClusterView, pod: Body) -> ObjectRef:
    """The pod's outermost controller, with a missing ReplicaSet's Deployment recovered
    (``recover_deployment``); the pod itself when it has no controller."""
    return recover_deployment(view, view.top_owner(pod), pod=pod)


def recover_deployment(view: ClusterView, top: ObjectRef, *, pod: Body) -> ObjectRef:
    """``top`` (the outermost controller of ``pod``, as ``ClusterView.owner_chain`` found it), or
    the Deployment behind it when ``top`` is a ReplicaSet absent from the view whose name is
    ``<deployment>-<hash>``, ``<hash>`` being the pod's ``pod-template-hash`` label."""
    if top.kind != "ReplicaSet" or view.workload("ReplicaSet", top.namespace, top.name) is not None:
        return top
    template_hash = objects.labels(pod).get("pod-template-hash")
    if (
        isinstance(template_hash, str)
        and template_hash
        and top.name.endswith(f"-{template_hash}")
        and len(top.name) > len(template_hash) + 1
    ):
        name = top.name[: -len(template_hash) - 1]
        return ObjectRef("Deployment", name, top.namespace, "apps/v1")
    return top


# -- pods known only by name -------------------------------------------------------------------


def generated_by(kind: str, workload: str, *, pod_name: str) -> bool:
    """Whether a controller of ``kind`` named ``workload`` names its pods like ``pod_name``."""
    pattern = _SUFFIXES.get(kind)
    if pattern is None or not pod_name.startswith(workload + "-"):
        return False
    return pattern.fullmatch(pod_name[len(workload) + 1 :]) is not None


def guess_owner(view: ClusterView, *, namespace: str | None, pod_name: str) -> ObjectRef | None:
    """The top owner of the workload in the view (same namespace) whose generated pod names
    ``pod_name`` fits, the longest such workload name winning; None when none fits."""
    best: tuple[int, ObjectRef] | None = None
    for (kind, workload_namespace, name), body in view.workloads.items():
        if workload_namespace != namespace or not generated_by(kind, name, pod_name=pod_name):
            continue
        if best is None or len(name) > best[0]:
            best = (len(name), view.top_owner(body))
    return best[1] if best is not None else None


def guess_deployment(namespace: str | None, pod_name: str) -> ObjectRef | None:
    """The Deployment a ``<deployment>-<hash>-<5 chars>`` pod name points at, from the name
    alone (no workload confirms it), or None for any other name."""
    match = _DEPLOYMENT_POD.fullmatch(pod_name)
    if match is None:
        return None
    return ObjectRef("Deployment", match.group("deployment"), namespace, "apps/v1")


# -- naming ------------------------------------------------------------------------------------


def pod_key(pod: Body) -> str:
    """``namespace/name`` of a pod, as evidence lists pods (``ref_of(pod).key``)."""
    meta = objects.get_map(pod, "metadata")
    namespace = meta.get("namespace")
    name = str(meta.get("name") or "")
    return f"{namespace}/{name}" if isinstance(namespace, str) and namespace else name


def owner_text(ref: ObjectRef) -> str:
    """``Kind namespace/name``, as evidence and messages show an owner."""
    return str(ref)


def cause_key(ref: ObjectRef) -> str:
    """``namespace/Kind/name`` (``Kind/name`` without a namespace), as a cause fingerprint names
    a workload."""
    where = f"{ref.namespace}/" if ref.namespace else ""
    return f"{where}{ref.kind}/{ref.name}"
