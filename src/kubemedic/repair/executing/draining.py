"""Drain a Node through the Eviction API, one pass per call.

Which pods leave follows ``kubectl drain --ignore-daemonsets --delete-emptydir-data --force``
(kubectl ``pkg/drain/filters.go``), for a node about to be rebooted, where nothing on it
survives anyway:

* **mirror pods** (annotation ``kubernetes.io/config.mirror``) stay: they are the API's view of
  the kubelet's static pods and cannot be removed through it;
* **DaemonSet pods** (controller ``apps/v1`` ``DaemonSet``) stay: the DaemonSet controller
  ignores cordons and would put them straight back;
* **finished pods** (``Succeeded``/``Failed``) stay: they hold nothing and a reboot does not
  harm them (kubectl deletes them, which loses a Job's record; this drain does not need to);
* every other pod is **evicted**: ``POST /api/v1/namespaces/{ns}/pods/{name}/eviction`` with a
  ``policy/v1`` ``Eviction`` and the pod's uid as a precondition (a StatefulSet pod recreated
  under the same name is not the one evicted). Pods with ``emptyDir`` volumes and pods no
  controller owns are evicted too: the reboot would end them regardless.

The API server refuses an eviction that would break a PodDisruptionBudget with ``429 Too Many
Requests`` ("Cannot evict pod as it would violate the pod's disruption budget."); such a pod is
**blocking**, and the budget is found by matching the namespace's PodDisruptionBudgets against
the pod's labels, so the Event names both. A pod covered by two budgets (which the eviction
subresource refuses with a ``500``) is blocking too. A ``429`` without a budget is API
throttling: the pod is left for the next pass.

A pod with a ``deletionTimestamp`` is being deleted: its kubelet stops it and confirms. While
the node posts its status that is only a matter of time, and the pod still counts as
**remaining**; when the node does not (``node_down``), its kubelet never will, and the pod
counts as gone. Pods evicted in this pass count the same way: on a live node, the drain is
done only on a later pass that finds them gone, which is what ``kubectl drain`` waits for.

After the drain timeout the policy may name pods to delete instead of evict (budgets are not
consulted): by name (``delete``, ``namespace/name``; DaemonSet and finished pods included), or
by class (``delete_classes``: ``daemonset``, ``standalone``, ``best-effort`` or a label
selector; finished pods are left alone).

A pass never sleeps and never retries: the policy calls again on its next round.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from kubemedic.kube.api import Api, ApiError, Conflict, NotFound, TooManyRequests
from kubemedic.model.selectors import LabelSelector, SelectorError
from kubemedic.repair.providers import contract

__all__ = [
    "CLASSES",
    "DrainResult",
    "classify",
    "drain",
    "in_classes",
    "parse_classes",
    "parse_pod_list",
    "pod_name",
]

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
#: The pod classes ``repair.drain.deleteAfterTimeout`` may name besides label selectors.
CLASSES = frozenset({"daemonset", "standalone", "best-effort"})
_PAGE = 500


def pod_name(pod: dict[str, Any]) -> str:
    """``namespace/name``."""
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def parse_pod_list(text: str) -> frozenset[str]:
    """``"ns/a, ns/b"`` (the decision's ``delete`` argument) as a set of ``ns/name``."""
    return frozenset(part.strip() for part in text.split(",") if part.strip())


def parse_classes(text: str) -> tuple[str, ...]:
    """The decision's ``delete_classes``: class names and label selectors, separated by ``;``
    (or by ``,``, in which case every piece that is not a class name is one requirement of a
    single selector: a selector's own commas AND its requirements, so splitting it would
    delete more pods than it names)."""
    if ";" in text:
        return tuple(part.strip() for part in text.split(";") if part.strip())
    pieces = [part.strip() for part in text.split(",") if part.strip()]
    classes = [p for p in pieces if p in CLASSES]
    selector = ",".join(p for p in pieces if p not in CLASSES)
    return (*classes, selector) if selector else tuple(classes)


def _best_effort(pod: dict[str, Any]) -> bool:
    qos = (pod.get("status") or {}).get("qosClass")
    if qos:
        return bool(qos == "BestEffort")
    spec = pod.get("spec") or {}
    containers = [*(spec.get("containers") or ()), *(spec.get("initContainers") or ())]
    return not any(
        (c.get("resources") or {}).get("requests") or (c.get("resources") or {}).get("limits")
        for c in containers
        if isinstance(c, dict)
    )


def in_classes(pod: dict[str, Any], classes: Collection[str]) -> bool:
    """Whether ``pod`` is in one of ``classes``: ``daemonset``, ``standalone`` (no controller),
    ``best-effort`` (QoS class BestEffort) or a label selector (an invalid one matches no
    pod)."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    for name in classes:
        if name == "daemonset":
            found = classify(pod) == "daemonset"
        elif name == "standalone":
            found = _controller(pod) is None
        elif name == "best-effort":
            found = _best_effort(pod)
        else:
            try:
                found = LabelSelector.parse(name).matches(labels)
            except SelectorError:
                found = False
        if found:
            return True
    return False


def _controller(pod: dict[str, Any]) -> dict[str, Any] | None:
    for owner in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if isinstance(owner, dict) and owner.get("controller") is True:
            return owner
    return None


def classify(pod: dict[str, Any]) -> str:
    """What a drain does with ``pod``: ``mirror``, ``daemonset`` or ``finished`` (it stays),
    ``terminating`` (already being deleted) or ``evict``."""
    meta = pod.get("metadata") or {}
    if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
        return "mirror"
    if meta.get("deletionTimestamp"):
        return "terminating"
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return "finished"
    owner = _controller(pod)
    if owner and owner.get("kind") == "DaemonSet" and owner.get("apiVersion") == "apps/v1":
        return "daemonset"
    return "evict"


@dataclass
class DrainResult:
    """One pass of a drain. Each list holds ``namespace/name``."""

    node: str
    node_down: bool = False
    evicted: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    #: Refused by a PodDisruptionBudget, and the budgets (``namespace/name``) that refused.
    blocking: list[str] = field(default_factory=list)
    budgets: list[str] = field(default_factory=list)
    #: Being deleted on a node whose kubelet is still expected to finish them.
    terminating: list[str] = field(default_factory=list)
    #: Not evicted for another reason (throttled, forbidden...), with the reason.
    failed: list[str] = field(default_factory=list)
    #: Mirror, DaemonSet and finished pods, left on the node.
    skipped: int = 0

    @property
    def remaining(self) -> int:
        """Pods that must still leave the node before it is drained."""
        return len(self.blocking) + len(self.failed) + len(self.waiting)

    @property
    def waiting(self) -> list[str]:
        """Pods being deleted whose kubelet is still expected to finish them."""
        return [] if self.node_down else [*self.terminating, *self.evicted, *self.deleted]

    @property
    def done(self) -> bool:
        return self.remaining == 0

    @property
    def state(self) -> str:
        """``done``, ``blocked`` (a budget refused an eviction) or ``waiting``."""
        if self.done:
            return "done"
        return "blocked" if self.blocking else "waiting"

    def detail(self) -> str:
        """One sentence for the ledger and the Event."""
        parts: list[str] = []
        if self.evicted:
            parts.append(f"evicted {_count(self.evicted)}")
        if self.deleted:
            parts.append(f"deleted {_count(self.deleted)} ({', '.join(self.deleted)})")
        if self.blocking:
            parts.append(
                f"{_count(self.blocking)} blocked by PodDisruptionBudget "
                f"{', '.join(self.budgets) or '(unknown)'}: {', '.join(self.blocking)}"
            )
        if self.waiting:
            parts.append(f"{_count(self.waiting)} still terminating")
        if self.terminating and self.node_down:
            parts.append(
                f"{_count(self.terminating)} left terminating on a node that does not answer"
            )
        if self.failed:
            parts.append(f"not evicted: {'; '.join(self.failed)}")
        if not parts:
            parts.append("no pod to evict")
        return f"drain of node {self.node}: " + "; ".join(parts)

    def data(self) -> dict[str, str]:
        return {
            "state": self.state,
            "remaining": str(self.remaining),
            "blocking": ",".join(self.blocking),
            "budgets": ",".join(self.budgets),
            "evicted": str(len(self.evicted)),
            "deleted": str(len(self.deleted)),
            "terminating": str(len(self.terminating) + len(self.evicted) + len(self.deleted)),
            "skipped": str(self.skipped),
        }


def _count(pods: Collection[str]) -> str:
    return f"{len(pods)} pod" + ("" if len(pods) == 1 else "s")


async def pods_on(api: Api, node: str) -> list[dict[str, Any]]:
    """Every pod bound to ``node`` (``fieldSelector=spec.nodeName=NODE``, paged)."""
    pods: list[dict[str, Any]] = []
    token = ""
    while True:
        params: dict[str, str | int] = {"fieldSelector": f"spec.nodeName={node}", "limit": _PAGE}
        if token:
            params["continue"] = token
        page = await api.request("GET", "/api/v1/pods", params=params)
        if not isinstance(page, dict):
            return pods
        pods.extend(p for p in page.get("items") or () if isinstance(p, dict))
        token = str((page.get("metadata") or {}).get("continue") or "")
        if not token:
            return pods


class _Budgets:
    """The PodDisruptionBudgets of each namespace, read once per pass when a pod is refused."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self.by_namespace: dict[str, list[tuple[str, LabelSelector]]] = {}

    async def covering(self, pod: dict[str, Any]) -> list[str]:
        meta = pod.get("metadata") or {}
        namespace = str(meta.get("namespace") or "")
        if namespace not in self.by_namespace:
            self.by_namespace[namespace] = await self._read(namespace)
        labels = meta.get("labels") or {}
        return [
            f"{namespace}/{name}"
            for name, selector in self.by_namespace[namespace]
            if selector.matches(labels)
        ]

    async def _read(self, namespace: str) -> list[tuple[str, LabelSelector]]:
        path = f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets"
        try:
            answer = await self.api.request("GET", path)
        except ApiError:
            return []  # the pods are still named; only the budget's name is missing
        found: list[tuple[str, LabelSelector]] = []
        for pdb in (answer or {}).get("items") or ():
            try:
                selector = LabelSelector.from_object((pdb.get("spec") or {}).get("selector"))
            except SelectorError:
                continue  # the eviction subresource treats it as matching no pod
            found.append((str((pdb.get("metadata") or {}).get("name")), selector))
        return found


def _pod_path(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"/api/v1/namespaces/{meta.get('namespace')}/pods/{meta.get('name')}"


async def _evict(api: Api, pod: dict[str, Any]) -> None:
    meta = pod.get("metadata") or {}
    body = {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
        "deleteOptions": {"preconditions": {"uid": meta.get("uid")}},
    }
    await api.request(
        "POST",
        _pod_path(pod) + "/eviction",
        params={"fieldManager": contract.FIELD_MANAGER},
        body=body,
    )


async def _delete(api: Api, pod: dict[str, Any]) -> None:
    uid = (pod.get("metadata") or {}).get("uid")
    body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
    await api.request("DELETE", _pod_path(pod), body=body)


def _blocked_by_budget(exc: ApiError) -> bool:
    text = exc.message.lower()
    if isinstance(exc, TooManyRequests):
        return "disruption budget" in text
    return exc.code == 500 and "poddisruptionbudget" in text


async def drain(
    api: Api,
    node: str,
    *,
    delete: Collection[str] = (),
    delete_classes: Collection[str] = (),
    node_down: bool = False,
) -> DrainResult:
    """One pass of draining ``node``: evict what must leave, delete instead the pods named in
    ``delete`` (``namespace/name``) or in ``delete_classes`` (:func:`in_classes`; a DaemonSet's
    pods only when ``daemonset`` is named), and report what is left (``DrainResult.done``
    when nothing is). ``node_down``: the node does not post its status, so pods being deleted
    on it count as gone."""
    result = DrainResult(node=node, node_down=node_down)
    budgets = _Budgets(api)
    for pod in await pods_on(api, node):
        name = pod_name(pod)
        kind = classify(pod)
        if kind == "mirror":
            result.skipped += 1
            continue
        if kind == "terminating":
            result.terminating.append(name)
            continue
        if name in delete or (kind != "finished" and in_classes(pod, delete_classes)):
            try:
                await _delete(api, pod)
            except (NotFound, Conflict):
                continue  # gone, or replaced by another pod of the same name
            except ApiError as exc:
                result.failed.append(f"{name}: {exc}")
                continue
            result.deleted.append(name)
            continue
        if kind in ("daemonset", "finished"):
            result.skipped += 1
            continue
        try:
            await _evict(api, pod)
        except (NotFound, Conflict):
            continue
        except ApiError as exc:
            if _blocked_by_budget(exc):
                result.blocking.append(name)
                for budget in await budgets.covering(pod):
                    if budget not in result.budgets:
                        result.budgets.append(budget)
            else:
                result.failed.append(f"{name}: {exc}")
            continue
        result.evicted.append(name)
    return result
