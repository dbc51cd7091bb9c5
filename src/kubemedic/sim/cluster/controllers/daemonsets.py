"""The DaemonSet controller of kube-controller-manager (``pkg/controller/daemon``).

One pod per eligible node. A node is eligible (``NodeShouldRunDaemonPod``) when the daemon pod,
with the tolerations the controller adds, would fit it: the template's ``nodeName`` (if any)
names it, its ``nodeSelector`` and required node affinity match it, and no ``NoSchedule`` or
``NoExecute`` taint goes untolerated. A pod already there keeps running while only ``NoSchedule``
taints are untolerated; an untolerated ``NoExecute`` taint or a node that stopped matching gets
its daemon pod deleted (``numberMisscheduled`` counts such pods until then).

Pods are created from the template with ``generateName: <ds>-`` and a required node affinity
``matchFields metadata.name In [<node>]`` (``ReplaceDaemonSetPodNodeNameNodeAffinity``), so the
default scheduler places them (and reports ``FailedScheduling`` when the node is full). The
controller adds (``AddOrUpdateDaemonPodTolerations``): ``node.kubernetes.io/not-ready`` and
``unreachable`` (``Exists``, ``NoExecute``, no ``tolerationSeconds``: daemon pods are never
evicted from an unhealthy node), ``disk-pressure``, ``memory-pressure``, ``pid-pressure`` and
``unschedulable`` (``NoSchedule``), and ``network-unavailable`` for host-network pods. Pods carry
``controller-revision-hash`` (the template hash) and ``pod-template-generation`` when the
DaemonSet has the ``deprecated.daemonset.template.generation`` annotation.

A ``Failed`` daemon pod is deleted (event ``FailedDaemonPod``) and recreated, with a per-node
backoff of 1 s doubling to 15 min, the backoff the ReplicaSet controller lacks. Template changes
roll out with ``RollingUpdate``: old pods are deleted while no more than ``maxUnavailable``
(rounded up against the desired count) are unavailable, unavailable old pods first (the
``maxSurge`` path is not modelled: surge is treated as zero). ``OnDelete`` waits for deletions.

Status: ``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberReady``,
``numberAvailable``, ``numberUnavailable``, ``numberMisscheduled``, ``updatedNumberScheduled``,
``observedGeneration``. Events (component ``daemonset-controller``): ``SuccessfulCreate``,
``SuccessfulDelete``, ``FailedCreate``, ``FailedDaemonPod``.

ControllerRevisions are not served by the emulator, so none are written; the hash is computed
the same way the revision's name would be.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.controllers import podtemplates
from kubemedic.sim.cluster.controllers.podtemplates import CONTROLLER_MANAGER, OwnerIndex
from kubemedic.sim.cluster.controllers.rollouts import scaled_value
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.objects import Change, Key, Obj, clone
from kubemedic.sim.machinery.selecting import LabelSelector

__all__ = ["BURST_REPLICAS", "DaemonSetController", "daemon_tolerations", "should_run"]

#: ``BurstReplicas`` of the DaemonSet controller.
BURST_REPLICAS = 250
DAEMONSETS = "daemonsets.apps"
PODS = "pods"
NODES = "nodes"
REVISION_HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
_BACKOFF_INITIAL = 1.0
_BACKOFF_MAX = 900.0


def daemon_tolerations(spec: Mapping[str, Any]) -> list[Obj]:
    """``AddOrUpdateDaemonPodTolerations``: the pod's tolerations plus the daemon ones (an
    existing toleration with the same key, effect, operator and value is replaced)."""
    tolerations = [dict(t) for t in spec.get("tolerations") or ()]
    wanted = [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    if spec.get("hostNetwork"):
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in wanted:
        toleration = {"key": key, "operator": "Exists", "effect": effect}
        same = [
            i
            for i, t in enumerate(tolerations)
            if (t.get("key"), t.get("effect"), t.get("operator") or "Equal", t.get("value") or "")
            == (key, effect, "Exists", "")
        ]
        if not same:
            tolerations.append(toleration)
        elif tolerations[same[0]] != toleration:
            tolerations[same[0]] = toleration
    return tolerations


def _no_schedule_or_execute(effect: str) -> bool:
    return effect in ("NoSchedule", "NoExecute")


def _no_execute(effect: str) -> bool:
    return effect == "NoExecute"


def should_run(node: Mapping[str, Any], spec: Mapping[str, Any]) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod`` for a daemon pod spec (tolerations already added): whether a
    pod should be placed on ``node``, and whether one already there may stay."""
    name = (node.get("metadata") or {}).get("name")
    if spec.get("nodeName") and spec["nodeName"] != name:
        return False, False
    if not podtemplates.node_affinity_matches(spec, node):
        return False, False
    taints = (node.get("spec") or {}).get("taints") or ()
    tolerations = spec.get("tolerations") or ()
    if podtemplates.untolerated_taint(taints, tolerations, _no_schedule_or_execute) is None:
        return True, True
    return False, podtemplates.untolerated_taint(taints, tolerations, _no_execute) is None


def _node_affinity(affinity: Mapping[str, Any] | None, node: str) -> Obj:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: the required terms become one term
    ``matchFields metadata.name In [node]``; preferred terms and other affinities stay."""
    out: Obj = clone(dict(affinity or {}))
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    node_affinity = out.setdefault("nodeAffinity", {})
    required = node_affinity.setdefault("requiredDuringSchedulingIgnoredDuringExecution", {})
    required["nodeSelectorTerms"] = [term]
    return out


def target_node(pod: Mapping[str, Any]) -> str:
    """``GetTargetNodeName``: ``spec.nodeName``, or the node named by the daemon affinity."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return str(spec["nodeName"])
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or ():
        for field in term.get("matchFields") or ():
            values = field.get("values") or ()
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and values:
                return str(values[0])
    return ""


def _oldest_first(pod: Mapping[str, Any]) -> tuple[int, float, str]:
    """``podByCreationTimestampAndPhase``: scheduled pods first, then oldest, then by name."""
    meta = pod.get("metadata") or {}
    created = parse_time(meta.get("creationTimestamp"))
    scheduled = 0 if (pod.get("spec") or {}).get("nodeName") else 1
    return scheduled, created.timestamp() if created else 0.0, str(meta.get("name") or "")


class DaemonSetController:
    """``daemonset-controller``: one pod per eligible node."""

    name = "daemonset-controller"

    def __init__(self, *, burst_replicas: int = BURST_REPLICAS) -> None:
        self.burst_replicas = burst_replicas
        self._pods = OwnerIndex("DaemonSet")
        self._keys: dict[str, Key] = {}
        self._dirty: dict[Key, None] = {}
        self._backoff: dict[tuple[str, str], tuple[float, float]] = {}
        self._templates: dict[str, tuple[Any, Obj, str]] = {}

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, CONTROLLER_MANAGER)
        self.recorder = EventRecorder(sim, component=self.name, manager=CONTROLLER_MANAGER)
        self.pod_control = podtemplates.PodControl(self.client, self.recorder)
        sim.watch(DAEMONSETS, self._on_daemonset)
        sim.watch(PODS, self._on_pod)
        sim.watch(NODES, self._on_node)
        for ds in sim.objects(DAEMONSETS):
            self._on_daemonset(Change(0, DAEMONSETS, "ADDED", ds, None))
        for pod in sim.objects(PODS):
            self._pods.observe(Change(0, PODS, "ADDED", pod, None))

    # observing ---------------------------------------------------------------------------

    def _on_daemonset(self, change: Change) -> None:
        meta = change.obj["metadata"]
        key: Key = (str(meta.get("namespace") or ""), str(meta["name"]))
        uid = str(meta.get("uid") or "")
        if change.type == "DELETED":
            self._keys.pop(uid, None)
            self._templates.pop(uid, None)
            self._dirty.pop(key, None)
            self._backoff = {k: v for k, v in self._backoff.items() if k[0] != uid}
            return
        self._keys[uid] = key
        self._dirty[key] = None

    def _on_pod(self, change: Change) -> None:
        before, after = self._pods.observe(change)
        moved = before != after or change.type != "MODIFIED"
        if moved or podtemplates.pod_changed(change.old, change.obj):
            for uid in {before, after} - {""}:
                key = self._keys.get(uid)
                if key is not None:
                    self._dirty[key] = None
        if not after and change.type == "ADDED" and podtemplates.controller_of(change.obj) is None:
            labels = change.obj["metadata"].get("labels") or {}
            namespace = change.obj["metadata"].get("namespace")
            for key in list(self._keys.values()):
                ds = self.sim.get(DAEMONSETS, *key)
                if ds is not None and key[0] == namespace and _selects(ds, labels):
                    self._dirty[key] = None

    def _on_node(self, change: Change) -> None:
        """Sync the DaemonSets whose wish for this node changed (``addNode``, ``updateNode``
        with ``shouldIgnoreNodeUpdate``, ``deleteNode``)."""
        node, old = change.obj, change.old
        if change.type == "MODIFIED" and old is not None and _same_for_daemons(old, node):
            return
        for key in list(self._keys.values()):
            ds = self.sim.get(DAEMONSETS, *key)
            if ds is None:
                continue
            spec = self._template(ds)[1]["spec"]
            now = should_run(node, spec)
            if change.type == "MODIFIED" and old is not None:
                if should_run(old, spec) != now:
                    self._dirty[key] = None
            elif now[0]:
                self._dirty[key] = None

    def _template(self, ds: Obj) -> tuple[Any, Obj, str]:
        """The pod template with daemon tolerations and labels, and the template hash
        (``CreatePodTemplate``), memoised per generation and collision count."""
        meta, spec = ds["metadata"], ds["spec"]
        stamp = (meta.get("generation"), (ds.get("status") or {}).get("collisionCount"))
        cached = self._templates.get(str(meta.get("uid")))
        if cached is not None and cached[0] == stamp:
            return cached
        template = clone(spec.get("template") or {})
        collisions = stamp[1]
        digest = podtemplates.compute_hash(
            template, int(collisions) if collisions is not None else None
        )
        template.setdefault("spec", {})["tolerations"] = daemon_tolerations(template["spec"])
        labels = template.setdefault("metadata", {}).setdefault("labels", {})
        generation = (meta.get("annotations") or {}).get(GENERATION_ANNOTATION)
        if generation is not None:
            labels[GENERATION_LABEL] = str(generation)
        labels[REVISION_HASH_LABEL] = digest
        found = (stamp, template, digest)
        self._templates[str(meta.get("uid"))] = found
        return found

    # syncing -----------------------------------------------------------------------------

    def _requeue(self, key: Key) -> None:
        """A delayed resync (``enqueueAfter``)."""
        self._dirty[key] = None

    def sync(self) -> bool:
        dirty, self._dirty = self._dirty, {}
        wrote = False
        for key in dirty:
            wrote |= self._sync_daemonset(key)
        return wrote

    def _sync_daemonset(self, key: Key) -> bool:
        ds = self.sim.get(DAEMONSETS, *key)
        if ds is None or ds["metadata"].get("deletionTimestamp"):
            return False
        try:
            selector = LabelSelector.from_object(ds["spec"].get("selector"))
        except errors.StatusError:
            return False
        if selector.empty:
            message = "This daemon set is selecting all pods. A non-empty selector is required."
            self.recorder.event(ds, "Warning", "SelectingAll", message)
            return False
        nodes = {n["metadata"]["name"]: n for n in self.sim.objects(NODES)}
        wrote = self._claim(ds, selector)
        wrote |= self._manage(ds, nodes)
        strategy = ds["spec"].get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            wrote |= self._rolling_update(ds, nodes)
        return self._update_status(ds, nodes) or wrote

    def _claim(self, ds: Obj, selector: LabelSelector) -> bool:
        """Release pods that stopped matching; adopt matching orphans (any phase)."""
        uid = str(ds["metadata"]["uid"])
        wrote = False
        for pod_key in self._pods.owned(uid):
            pod = self.sim.get(PODS, *pod_key)
            if pod is not None and not selector.matches(pod["metadata"].get("labels") or {}):
                wrote |= self._patch(pod_key, podtemplates.release_patch(uid, pod))
        namespace = str(ds["metadata"].get("namespace") or "")
        for pod_key in list(self._pods.orphans.get(namespace, ())):
            pod = self.sim.get(PODS, *pod_key)
            if pod is None or pod["metadata"].get("deletionTimestamp"):
                continue
            if selector.matches(pod["metadata"].get("labels") or {}):
                wrote |= self._patch(pod_key, podtemplates.adopt_patch(ds, pod))
        return wrote

    def _patch(self, key: Key, patch: Obj) -> bool:
        try:
            self.client.patch("v1", "Pod", key[1], patch, namespace=key[0])
        except errors.StatusError as exc:
            if exc.code in (404, 409, 422):
                return False
            raise
        return True

    def _node_pods(self, ds: Obj) -> dict[str, list[Obj]]:
        """``getNodesToDaemonPods``: claimed pods by target node (deleted terminal pods
        left out)."""
        out: dict[str, list[Obj]] = {}
        for pod_key in self._pods.owned(str(ds["metadata"]["uid"])):
            pod = self.sim.get(PODS, *pod_key)
            if pod is None:
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Failed", "Succeeded") and pod["metadata"].get("deletionTimestamp"):
                continue
            out.setdefault(target_node(pod), []).append(pod)
        return out

    def _manage(self, ds: Obj, nodes: dict[str, Obj]) -> bool:
        """``manage``: which nodes need a pod, which pods must go; then ``syncNodes``."""
        spec = self._template(ds)[1]["spec"]
        by_node = self._node_pods(ds)
        needing: list[str] = []
        doomed: list[Obj] = []
        for name in sorted(nodes):
            run, keep = should_run(nodes[name], spec)
            pods = by_node.get(name, [])
            if run and not pods:
                needing.append(name)
            elif keep:
                doomed += self._on_node_pods(ds, name, pods)
            elif pods:
                doomed += [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        for name, pods in by_node.items():
            if name not in nodes:  # never scheduled, and PodGC only collects bound pods
                doomed += [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
        return self._sync_nodes(ds, doomed, needing)

    def _on_node_pods(self, ds: Obj, node: str, pods: list[Obj]) -> list[Obj]:
        """The pods to delete on a node that may keep its daemon pod: failed ones (under
        backoff), succeeded ones, and all but the oldest running one."""
        doomed: list[Obj] = []
        running: list[Obj] = []
        now = self.sim.seconds()
        backoff_key = (str(ds["metadata"]["uid"]), node)
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Failed":
                delay, updated = self._backoff.get(backoff_key, (0.0, -1e18))
                if now - updated < delay:
                    key: Key = (str(ds["metadata"].get("namespace") or ""), ds["metadata"]["name"])
                    wait = delay - (now - updated)
                    self.sim.after(wait, functools.partial(self._requeue, key))
                    continue
                expired = now - updated > 2 * _BACKOFF_MAX
                delay = _BACKOFF_INITIAL if delay == 0 or expired else min(2 * delay, _BACKOFF_MAX)
                self._backoff[backoff_key] = (delay, now)
                namespace = pod["metadata"].get("namespace")
                message = (
                    f"Found failed daemon pod {namespace}/{pod['metadata']['name']} on node "
                    f"{node}, will try to kill it"
                )
                self.recorder.event(ds, "Warning", "FailedDaemonPod", message)
                doomed.append(pod)
            elif phase == "Succeeded":
                doomed.append(pod)
            else:
                running.append(pod)
        if len(running) > 1:
            doomed += sorted(running, key=_oldest_first)[1:]
        return doomed

    def _sync_nodes(self, ds: Obj, doomed: list[Obj], needing: list[str]) -> bool:
        """``syncNodes``: create (slow start, at most ``burstReplicas``) and delete."""
        template = self._template(ds)[1]
        wanted = iter(needing[: self.burst_replicas])
        created, _ = podtemplates.slow_start_batch(
            min(len(needing), self.burst_replicas),
            functools.partial(self._create_one, ds, template, wanted),
        )
        deleted = 0
        for pod in doomed[: self.burst_replicas]:
            meta = pod["metadata"]
            try:
                self.pod_control.delete(str(meta.get("namespace") or ""), meta["name"], ds)
                deleted += 1
            except errors.StatusError as exc:
                if exc.code != 404:
                    break
        return created + deleted > 0

    def _create_one(self, ds: Obj, template: Obj, nodes: Iterator[str]) -> Obj:
        node = next(nodes)
        pod_template = clone(template)
        spec = pod_template.setdefault("spec", {})
        spec["affinity"] = _node_affinity(spec.get("affinity"), node)
        return self.pod_control.create(pod_template, ds)

    def _rolling_update(self, ds: Obj, nodes: dict[str, Obj]) -> bool:
        """``rollingUpdate`` without surge: delete old pods while at most ``maxUnavailable``
        are unavailable; unavailable old pods are replaced regardless."""
        _, template, digest = self._template(ds)
        spec, by_node = template["spec"], self._node_pods(ds)
        desired = 0
        for name in sorted(nodes):
            if should_run(nodes[name], spec)[0]:
                desired += 1
                by_node.setdefault(name, [])
        rolling = (ds["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
        max_unavailable = scaled_value(rolling.get("maxUnavailable", 1), desired, round_up=True)
        if desired > 0 and max_unavailable == 0:
            max_unavailable = 1
        now, min_ready = self.sim.now(), int(ds["spec"].get("minReadySeconds") or 0)
        unavailable = 0
        replace: list[Obj] = []
        candidates: list[Obj] = []
        for name in sorted(by_node):
            live = [p for p in by_node[name] if not p["metadata"].get("deletionTimestamp")]
            new = [p for p in live if self._updated(ds, p, digest)]
            old = [p for p in live if not self._updated(ds, p, digest)]
            if len(new) > 1 or len(old) > 1 or (new and old) or not (new or old):
                unavailable += 1
            elif new:
                if not podtemplates.is_pod_available(new[0], min_ready, now):
                    unavailable += 1
            elif not podtemplates.is_pod_available(old[0], min_ready, now):
                replace.append(old[0])
            elif unavailable < max_unavailable:
                candidates.append(old[0])
        room = min(max(0, max_unavailable - unavailable), len(candidates))
        doomed = replace + candidates[:room]
        return bool(doomed) and self._sync_nodes(ds, doomed, [])

    @staticmethod
    def _updated(ds: Obj, pod: Obj, digest: str) -> bool:
        """``IsPodUpdated``: the hash label, or the template generation label, matches."""
        labels = pod["metadata"].get("labels") or {}
        generation = (ds["metadata"].get("annotations") or {}).get(GENERATION_ANNOTATION)
        if generation is not None and labels.get(GENERATION_LABEL) == str(generation):
            return True
        return bool(digest) and labels.get(REVISION_HASH_LABEL) == digest

    def _update_status(self, ds: Obj, nodes: dict[str, Obj]) -> bool:
        """``updateDaemonSetStatus``: counts over eligible nodes, oldest pod per node."""
        _, template, digest = self._template(ds)
        by_node = self._node_pods(ds)
        now, min_ready = self.sim.now(), int(ds["spec"].get("minReadySeconds") or 0)
        desired = current = misscheduled = ready = available = updated = 0
        for name in sorted(nodes):
            run, _ = should_run(nodes[name], template["spec"])
            pods = by_node.get(name, [])
            if not run:
                misscheduled += 1 if pods else 0
                continue
            desired += 1
            if not pods:
                continue
            current += 1
            pod = min(pods, key=_oldest_first)
            if podtemplates.is_pod_ready(pod):
                ready += 1
                available += 1 if podtemplates.is_pod_available(pod, min_ready, now) else 0
            updated += 1 if self._updated(ds, pod, digest) else 0
        counts = {
            "currentNumberScheduled": current,
            "numberMisscheduled": misscheduled,
            "desiredNumberScheduled": desired,
            "numberReady": ready,
            "observedGeneration": int(ds["metadata"].get("generation") or 0),
            "updatedNumberScheduled": updated,
            "numberAvailable": available,
            "numberUnavailable": desired - available,
        }
        old = ds.get("status") or {}
        if min_ready > 0 and ready != available:
            key: Key = (str(ds["metadata"].get("namespace") or ""), ds["metadata"]["name"])
            self.sim.after(min_ready, functools.partial(self._requeue, key))
        if all(int(old.get(k) or 0) == v for k, v in counts.items()):
            return False
        required = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled")
        status: Obj = {k: v for k, v in counts.items() if v or k in (*required, "numberReady")}
        for kept in ("collisionCount", "conditions"):
            if old.get(kept) is not None:
                status[kept] = old[kept]
        body = clone(ds)
        body["status"] = status
        try:
            self.client.update(body, subresource="status")
        except errors.StatusError as exc:
            if exc.code == 404:
                return False
            raise
        return True


def _selects(ds: Obj, labels: Mapping[str, str]) -> bool:
    try:
        selector = LabelSelector.from_object(ds["spec"].get("selector"))
    except errors.StatusError:
        return False
    return not selector.empty and selector.matches(labels)


def _same_for_daemons(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``shouldIgnoreNodeUpdate``: labels, spec and condition statuses unchanged (heartbeats
    and other status updates change no DaemonSet's wish)."""
    if (old.get("metadata") or {}).get("labels") != (new.get("metadata") or {}).get("labels"):
        return False
    if old.get("spec") != new.get("spec"):
        return False

    def conditions(node: Mapping[str, Any]) -> list[tuple[Any, Any]]:
        found = (node.get("status") or {}).get("conditions") or ()
        return [(c.get("type"), c.get("status")) for c in found]

    return conditions(old) == conditions(new)
