"""The pod garbage collector of kube-controller-manager (``pkg/controller/podgc/gc_controller.go``).

Every ``gcCheckPeriod`` (20 s) it runs four passes:

- **terminated pods** (phase neither Pending, Running nor Unknown) above
  ``--terminated-pod-gc-threshold`` (default 12,500) are deleted, evicted ones first, then
  oldest first by ``creationTimestamp`` (name breaking ties). Below the threshold ``Failed`` pods
  are kept forever: a failed-pod storm piles up 12,500 of them before anything is cleaned, and
  then the collector only holds the line while the ReplicaSet keeps making more;
- **terminating pods on out-of-service nodes** (``gcTerminating``: any pod with a
  ``deletionTimestamp`` whose node is not Ready, ``False`` or ``Unknown``, and has a taint with
  the key ``node.kubernetes.io/out-of-service``, whatever its value and effect) are marked
  ``Failed`` (no condition) and force-deleted. This is the non-graceful node shutdown contract:
  on a node that is down, taint eviction marks pods for deletion after their 300 s
  ``unreachable`` toleration but no kubelet confirms, so they stay ``Terminating`` (a
  StatefulSet cannot make its pod again) until someone confirms the machine is off with the
  taint ``node.kubernetes.io/out-of-service=nodeshutdown:NoExecute``; the taint itself also
  makes taint eviction delete the pods that do not tolerate it. (The attach/detach
  controller's forced detach of their volumes is not simulated: there are no volumes.) A
  kubelet that comes back later finds the pods gone and starts nothing;
- **orphaned pods**, bound to a node that no longer exists, are deleted once the node has been
  missing for ``quarantineTime`` (40 s; the controller then confirms with a GET), with the
  condition ``DisruptionTarget`` (reason ``DeletionByPodGC``, "PodGC: node no longer exists");
- **unscheduled terminating pods** (being deleted, never bound) are deleted.

Each deletion first marks a pod that is not yet terminal ``Failed`` (a status patch, carrying
the condition when there is one), then deletes it with a grace period of zero. PodGC records no
Events: it only logs. Writes use the field manager ``kube-controller-manager``.

The passes read indexes kept from change notifications (terminated pods, terminating pods, pods
by node), so a run costs what is there to collect, not the size of the cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.controllers.podtemplates import CONTROLLER_MANAGER
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation, Timer
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Key, Obj

__all__ = ["GC_CHECK_PERIOD", "QUARANTINE_SECONDS", "TERMINATED_POD_THRESHOLD", "PodGC"]

log = logging.getLogger(__name__)

#: ``--terminated-pod-gc-threshold``.
TERMINATED_POD_THRESHOLD = 12_500
#: ``gcCheckPeriod``.
GC_CHECK_PERIOD = 20.0
#: ``quarantineTime``.
QUARANTINE_SECONDS = 40.0
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"
PODS = "pods"
NODES = "nodes"


class PodGC:
    """``pod-garbage-collector-controller``."""

    name = "pod-garbage-collector-controller"

    def __init__(
        self,
        threshold: int = TERMINATED_POD_THRESHOLD,
        *,
        period: float = GC_CHECK_PERIOD,
        quarantine: float = QUARANTINE_SECONDS,
    ) -> None:
        self.threshold = threshold
        self.period = period
        self.quarantine = quarantine
        self.deleted = 0
        self._terminated: dict[Key, tuple[bool, float, str]] = {}
        self._terminating: dict[Key, str] = {}
        self._by_node: dict[str, dict[Key, None]] = {}
        self._node_of: dict[Key, str] = {}
        self._nodes: set[str] = set()
        self._missing_since: dict[str, float] = {}
        self._due = False
        self.timer: Timer | None = None

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, CONTROLLER_MANAGER)
        sim.watch(PODS, self._on_pod)
        sim.watch(NODES, self._on_node)
        for node in sim.objects(NODES):
            self._on_node(Change(0, NODES, "ADDED", node, None))
        for pod in sim.objects(PODS):
            self._on_pod(Change(0, PODS, "ADDED", pod, None))
        self.timer = sim.every(self.period, self._tick, name=self.name)

    def _tick(self) -> None:
        self._due = True

    # observing ---------------------------------------------------------------------------

    def _on_node(self, change: Change) -> None:
        name = str(change.obj["metadata"]["name"])
        if change.type == "DELETED":
            self._nodes.discard(name)
        else:
            self._nodes.add(name)
            self._missing_since.pop(name, None)

    def _on_pod(self, change: Change) -> None:
        meta = change.obj["metadata"]
        key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        node = self._node_of.pop(key, None)
        if node is not None:
            on_node = self._by_node.get(node)
            if on_node is not None:
                on_node.pop(key, None)
                if not on_node:
                    del self._by_node[node]
        self._terminated.pop(key, None)
        self._terminating.pop(key, None)
        if change.type == "DELETED":
            return
        pod = change.obj
        node = str((pod.get("spec") or {}).get("nodeName") or "")
        if node:
            self._node_of[key] = node
            self._by_node.setdefault(node, {})[key] = None
        status = pod.get("status") or {}
        if status.get("phase") not in ("Pending", "Running", "Unknown"):
            created = parse_time(meta.get("creationTimestamp"))
            evicted = status.get("phase") == "Failed" and status.get("reason") == "Evicted"
            stamp = created.timestamp() if created is not None else 0.0
            self._terminated[key] = (not evicted, stamp, key[1])
        if meta.get("deletionTimestamp"):
            self._terminating[key] = node

    # collecting --------------------------------------------------------------------------

    def sync(self) -> bool:
        if not self._due:
            return False
        self._due = False
        before = self.deleted
        if self.threshold > 0:
            self._gc_terminated()
        self._gc_out_of_service()
        self._gc_orphaned()
        self._gc_unscheduled_terminating()
        return self.deleted != before

    def _gc_terminated(self) -> None:
        excess = len(self._terminated) - self.threshold
        if excess <= 0:
            return
        log.info("Garbage collecting pods: numPods=%d", excess)
        oldest = sorted(self._terminated.items(), key=lambda item: item[1])[:excess]
        for key, _ in oldest:
            self._delete(key)

    def _gc_out_of_service(self) -> None:
        for key, node_name in sorted(self._terminating.items()):
            node = self.sim.get(NODES, "", node_name) if node_name else None
            if node is None or _ready(node):
                continue
            taints = (node.get("spec") or {}).get("taints") or ()
            if any(t.get("key") == OUT_OF_SERVICE for t in taints):
                self._delete(key)

    def _gc_orphaned(self) -> None:
        now = self.sim.seconds()
        for node in self._by_node:
            if node not in self._nodes:
                self._missing_since.setdefault(node, now)
        for node, since in sorted(self._missing_since.items()):
            if now - since < self.quarantine:
                continue
            del self._missing_since[node]
            if node in self._nodes or self.sim.get(NODES, "", node) is not None:
                continue
            condition = {
                "type": "DisruptionTarget",
                "status": "True",
                "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists",
            }
            for key in list(self._by_node.get(node, ())):
                self._delete(key, condition=condition)

    def _gc_unscheduled_terminating(self) -> None:
        for key, node in sorted(self._terminating.items()):
            if not node:
                self._delete(key)

    def _delete(self, key: Key, *, condition: Mapping[str, Any] | None = None) -> None:
        """``markFailedAndDeletePodWithCondition``: Failed first (unless terminal already),
        then a deletion with no grace period."""
        pod = self.sim.get(PODS, *key)
        if pod is None:
            return
        phase = (pod.get("status") or {}).get("phase")
        try:
            if phase not in ("Succeeded", "Failed"):
                status: Obj = {"phase": "Failed"}
                if condition is not None:
                    stamp = rfc3339(self.sim.now())
                    status["conditions"] = [{**condition, "lastTransitionTime": stamp}]
                patch = {"metadata": {"uid": pod["metadata"].get("uid")}, "status": status}
                self.client.patch(
                    "v1", "Pod", key[1], patch, namespace=key[0], subresource="status"
                )
            self.client.delete("v1", "Pod", key[1], namespace=key[0], grace_seconds=0)
        except errors.StatusError as exc:
            if exc.code in (404, 409):
                return
            raise
        self.deleted += 1


def _ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False
