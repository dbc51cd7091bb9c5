"""The taint-eviction controller: pods leave nodes tainted ``NoExecute`` they do not tolerate.

Kubernetes 1.32 runs it as its own controller in kube-controller-manager
(``taint-eviction-controller``, feature SeparateTaintEvictionController;
``pkg/controller/tainteviction/taint_eviction.go``). For every pod bound to a node with
``NoExecute`` taints:

- a taint no toleration of the pod matches gets the pod deleted at once;
- when every taint is tolerated, the pod is deleted after the smallest ``tolerationSeconds`` of
  the tolerations used (never, when none of them sets one). The DefaultTolerationSeconds
  admission plugin gives every pod ``not-ready`` and ``unreachable`` ``NoExecute`` tolerations
  of 300 s, which is why pods leave a dead node five minutes after its ``unreachable`` taint;
- the clock starts when the controller first schedules the deletion; later updates keep that
  start. Removing the taints (the node is ready again), the pod going away or a toleration that
  now tolerates forever cancels the scheduled deletion with a ``TaintManagerEviction`` event
  ``Cancelling deletion of Pod <ns>/<name>``.

A deletion records ``Normal TaintManagerEviction`` ``Marking for deletion Pod <ns>/<name>``
(component ``taint-eviction-controller``), PATCHes the pod's status with the condition
``DisruptionTarget=True`` (reason ``DeletionByTaintManager``, message ``Taint manager: deleting
due to NoExecute taint``), then deletes it with its default grace period. On a node that cannot
confirm the deletion (a stopped kubelet) the pod then stays ``Terminating``. Writes use field
manager ``kube-controller-manager``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubemedic.model.placement import tolerates
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change

__all__ = ["TaintEvictionController", "matching_tolerations", "min_toleration_seconds"]

MANAGER = managers.KUBE_CONTROLLER_MANAGER
COMPONENT = "taint-eviction-controller"

PodKey = tuple[str, str]


def matching_tolerations(
    taints: Sequence[Mapping[str, Any]], tolerations: Sequence[Mapping[str, Any]]
) -> tuple[bool, list[Mapping[str, Any]]]:
    """``GetMatchingTolerations``: whether every taint is tolerated, and the toleration used for
    each (the first that matches)."""
    used = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: Sequence[Mapping[str, Any]]) -> float:
    """``getMinTolerationTime``: the smallest ``tolerationSeconds`` (0 for none, or for any value
    at or below 0), or -1 when every toleration tolerates forever."""
    if not tolerations:
        return 0.0
    found = [t["tolerationSeconds"] for t in tolerations if t.get("tolerationSeconds") is not None]
    if not found:
        return -1.0
    return max(0.0, float(min(found)))


@dataclass
class _Work:
    """A scheduled deletion (``TimedWorkerQueue`` entry); ``timer`` is None once it fired, and
    the key stays so the pod is not scheduled twice."""

    created: float
    fire_at: float
    timer: Timer | None


class TaintEvictionController:
    """Deletes pods from nodes with ``NoExecute`` taints they do not (or no longer) tolerate."""

    name = "taint-eviction-controller"

    def __init__(self) -> None:
        self.tainted: dict[str, list[dict[str, Any]]] = {}
        self.work: dict[PodKey, _Work] = {}
        self._pods_by_node: dict[str, set[PodKey]] = {}
        self._node_queue: set[str] = set()
        self._pod_queue: dict[PodKey, str] = {}
        self._due: list[PodKey] = []
        self._wrote = False

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, MANAGER)
        self.recorder = EventRecorder(sim, component=COMPONENT, manager=MANAGER)
        sim.watch("nodes", self._node_changed)
        sim.watch("pods", self._pod_changed)
        for pod in sim.objects("pods"):
            node = pod.get("spec", {}).get("nodeName")
            if node:
                self._pods_by_node.setdefault(node, set()).add(_key(pod))
        self._node_queue.update(n["metadata"]["name"] for n in sim.objects("nodes"))

    # observing -----------------------------------------------------------------------------

    def _node_changed(self, change: Change) -> None:
        old = _no_execute(change.old) if change.old is not None else None
        new = _no_execute(change.obj) if change.type != "DELETED" else None
        if old != new or change.old is None:
            self._node_queue.add(change.obj["metadata"]["name"])

    def _pod_changed(self, change: Change) -> None:
        pod, old = change.obj, change.old
        key = _key(pod)
        node = pod.get("spec", {}).get("nodeName") or ""
        old_node = (old or {}).get("spec", {}).get("nodeName") or ""
        if old_node and (old_node != node or change.type == "DELETED"):
            self._pods_by_node.get(old_node, set()).discard(key)
        if node and change.type != "DELETED":
            self._pods_by_node.setdefault(node, set()).add(key)
        if (
            change.type == "MODIFIED"
            and old is not None
            and old_node == node
            and old.get("spec", {}).get("tolerations") == pod.get("spec", {}).get("tolerations")
        ):
            return
        self._pod_queue[key] = node

    # processing ------------------------------------------------------------------------------

    def sync(self) -> bool:
        """Node updates first (as the real workers drain them before pod updates), then pods,
        then deletions that are due."""
        self._wrote = False
        nodes, self._node_queue = self._node_queue, set()
        for name in sorted(nodes):
            self._handle_node(name)
        pods, self._pod_queue = self._pod_queue, {}
        for key, node in sorted(pods.items()):
            self._handle_pod(key, node)
        due, self._due = self._due, []
        for key in due:
            self._delete(key)
        return self._wrote

    def _handle_node(self, name: str) -> None:
        node = self.sim.get("nodes", "", name)
        if node is None:
            self.tainted.pop(name, None)
            return
        taints = _no_execute(node)
        if taints:
            self.tainted[name] = taints
        else:
            self.tainted.pop(name, None)
        keys = sorted(self._pods_by_node.get(name, ()))
        if not taints:
            for key in keys:
                self._cancel(key)
            return
        now = self.sim.seconds()
        for key in keys:
            pod = self.sim.get("pods", *key)
            if pod is not None and pod.get("spec", {}).get("nodeName") == name:
                self._process(key, pod.get("spec", {}).get("tolerations") or [], taints, now)

    def _handle_pod(self, key: PodKey, node: str) -> None:
        pod = self.sim.get("pods", *key)
        if pod is None:
            self._cancel(key)
            return
        if pod.get("spec", {}).get("nodeName", "") != node or not node:
            return
        taints = self.tainted.get(node)
        if taints is None:
            return
        tolerations = pod.get("spec", {}).get("tolerations") or []
        self._process(key, tolerations, taints, self.sim.seconds())

    def _process(
        self,
        key: PodKey,
        tolerations: Sequence[Mapping[str, Any]],
        taints: Sequence[Mapping[str, Any]],
        now: float,
    ) -> None:
        """``processPodOnNode``."""
        if not taints:
            self._cancel(key)
        tolerated, used = matching_tolerations(taints, tolerations)
        if not tolerated:
            self._cancel(key)
            self._add(key, created=now, fire_at=now)
            return
        wait = min_toleration_seconds(used)
        if wait < 0:
            self._cancel(key)
            return
        created, fire_at = now, now + wait
        scheduled = self.work.get(key)
        if scheduled is not None:
            created = scheduled.created
            if created + wait <= fire_at:
                return
            self._cancel(key)
        self._add(key, created=created, fire_at=fire_at)

    def _add(self, key: PodKey, *, created: float, fire_at: float) -> None:
        if key in self.work:
            return
        now = self.sim.seconds()
        if fire_at <= now:
            self.work[key] = _Work(created, fire_at, None)
            self._due.append(key)
            return
        timer = self.sim.after(fire_at - now, lambda: self._fire(key), name="taint-eviction")
        self.work[key] = _Work(created, fire_at, timer)

    def _fire(self, key: PodKey) -> None:
        work = self.work.get(key)
        if work is not None and work.timer is not None:
            work.timer = None
            self._due.append(key)

    def _cancel(self, key: PodKey) -> None:
        """``CancelWork``: an event only when a deletion was still pending."""
        work = self.work.pop(key, None)
        if work is None or work.timer is None:
            return
        work.timer.cancel()
        ref = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": key[1], "namespace": key[0]}}
        self.recorder.event(
            ref, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {key[0]}/{key[1]}"
        )

    def _delete(self, key: PodKey) -> None:
        """``deletePodHandler``: event, ``DisruptionTarget`` condition, delete."""
        namespace, name = key
        ref = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace},
        }
        self.recorder.event(
            ref, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {namespace}/{name}"
        )
        pod = self.sim.get("pods", namespace, name)
        if pod is None:
            return
        conditions = pod.get("status", {}).get("conditions") or []
        target = next((c for c in conditions if c.get("type") == "DisruptionTarget"), None)
        wanted = {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
        }
        try:
            if target is None or any(target.get(k) != v for k, v in wanted.items()):
                condition = {**wanted, "lastTransitionTime": rfc3339(self.sim.now())}
                if target is not None and target.get("status") == "True":
                    condition["lastTransitionTime"] = target.get("lastTransitionTime")
                patch = {
                    "metadata": {"uid": pod["metadata"].get("uid")},
                    "status": {"conditions": [condition]},
                }
                self.client.patch(
                    "v1", "Pod", name, patch, namespace=namespace, subresource="status"
                )
            self.client.delete("v1", "Pod", name, namespace=namespace)
        except errors.StatusError as exc:
            if exc.code != 404:
                raise
        self._wrote = True


def _key(pod: Mapping[str, Any]) -> PodKey:
    meta = pod.get("metadata", {})
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _no_execute(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        dict(t) for t in node.get("spec", {}).get("taints") or () if t.get("effect") == "NoExecute"
    ]
