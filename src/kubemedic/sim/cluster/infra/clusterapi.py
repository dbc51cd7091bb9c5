"""Cluster API: MachineDeployment -> MachineSet -> Machine -> Node, as CAPI v1.9 (v1beta1) does.

The core provider's controllers (``internal/controllers/{machinedeployment,machineset,machine}``):

- **MachineDeployment** keeps one MachineSet per machine template, named ``<md>-<5 random
  characters>`` and labelled ``machine-template-hash: <template hash>-<suffix>`` and
  ``cluster.x-k8s.io/deployment-name``, created by server-side apply as ``capi-machinedeployment``
  (event ``SuccessfulCreate``: ``Created MachineSet <ns>/<name>``). Scaling patches the set's
  ``spec.replicas`` (``SuccessfulScale``: ``Scaled up MachineSet <ns>/<name> to <n>``); a new
  template rolls out within ``maxSurge``/``maxUnavailable`` (1/0 by default). ``phase`` is
  ``ScalingUp`` while fewer machines are ready than wanted, ``ScalingDown`` while more, else
  ``Running``. Without ``spec.replicas`` the autoscaler's min-size annotation (else 1) counts.
- **MachineSet** creates machines ``<ms>-<5 random characters>`` by server-side apply as
  ``capi-machineset`` (``SuccessfulCreate``: ``Created machine "<name>"``) with the finalizer
  ``machine.cluster.x-k8s.io``, and deletes surplus ones (``SuccessfulDelete``): those being
  deleted, marked ``cluster.x-k8s.io/delete-machine``, failed or without a ready node first, then
  by ``deletePolicy``. Machines being deleted still count, so a deleted machine is replaced once
  it is gone.
- **Machine** (:mod:`kubemedic.sim.cluster.infra.machines`) provisions the VM through the
  infrastructure provider, finds the Node by provider ID, and on deletion drains and removes it.

Spec and status writes are merge patches by the ``manager`` field manager (what
controller-runtime's client calls the ``manager`` binary); events come from
``machinedeployment-controller``, ``machineset-controller`` and ``machine-controller``. Node
groups for the cluster-autoscaler are these MachineDeployments
(:mod:`kubemedic.sim.cluster.infra.autoscaling`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson

from kubemedic.sim.cluster.infra.machines import (
    API_VERSION,
    FINALIZER,
    MACHINES,
    MachineController,
    condition,
    node_ready,
    seconds,
    summarize,
)
from kubemedic.sim.cluster.infra.providers import VM, Infrastructure
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.cluster.runtime.recording import EventRecorder
from kubemedic.sim.machinery import errors, managers, selecting
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.naming import GENERATED_NAME_ALPHABET
from kubemedic.sim.machinery.objects import Change, Obj

__all__ = ["API_VERSION", "ClusterAPI"]

MDS = "machinedeployments.cluster.x-k8s.io"
MSS = "machinesets.cluster.x-k8s.io"
CLUSTER_LABEL = "cluster.x-k8s.io/cluster-name"
MD_LABEL = "cluster.x-k8s.io/deployment-name"
MS_LABEL = "cluster.x-k8s.io/set-name"
HASH_LABEL = "machine-template-hash"
REVISION = "machinedeployment.clusters.x-k8s.io/revision"
MIN_SIZE = "cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"
DELETE_MACHINE = "cluster.x-k8s.io/delete-machine"
_IN_PLACE = ("nodeDrainTimeout", "nodeDeletionTimeout", "nodeVolumeDetachTimeout")

Key = tuple[str, str]


def _key(obj: Mapping[str, Any]) -> Key:
    return obj["metadata"].get("namespace", "default"), obj["metadata"]["name"]


def _template_hash(template: Mapping[str, Any]) -> int:
    """FNV-32a of the template's rollout fields (in-place mutable ones left out)."""
    spec = {k: v for k, v in (template.get("spec") or {}).items() if k not in _IN_PLACE}
    value = 2166136261
    for byte in orjson.dumps(spec, option=orjson.OPT_SORT_KEYS):
        value = ((value ^ byte) * 16777619) & 0xFFFFFFFF
    return value


def _scaled(value: Any, total: int, *, up: bool) -> int:
    """An int-or-percent of ``total`` (surge rounds up, unavailability down)."""
    if isinstance(value, str) and value.endswith("%"):
        exact = int(value[:-1]) * total
        return -(-exact // 100) if up else exact // 100
    return int(value or 0)


class ClusterAPI:
    """The MachineDeployment, MachineSet and Machine controllers, with the infrastructure
    provider they drive (attached too unless the simulation has one)."""

    name = "cluster-api"

    def __init__(
        self,
        hosts: Hosts,
        *,
        infrastructure: Infrastructure | None = None,
        bootstrap_seconds: float = 5.0,
        drain_retry_seconds: float = 20.0,
    ) -> None:
        self.hosts = hosts
        self.infrastructure = infrastructure or Infrastructure(hosts)
        self.bootstrap_seconds = bootstrap_seconds
        self.drain_retry_seconds = drain_retry_seconds
        self._dirty: dict[str, set[Key]] = {MDS: set(), MSS: set(), MACHINES: set()}
        self._by_provider: dict[str, str] = {}
        self._machine_of_node: dict[str, Key] = {}
        self._draining: set[str] = set()
        self._pods_by_node: dict[str, set[Key]] = {}
        self._wrote = False

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.infrastructure = sim.find(Infrastructure) or sim.add(self.infrastructure)
        self.infrastructure.listeners.append(self._vm_changed)
        self.client = Client(sim.server, managers.CAPI_MANAGER)
        self.md_apply = Client(sim.server, managers.CAPI_MACHINEDEPLOYMENT)
        self.ms_apply = Client(sim.server, managers.CAPI_MACHINESET)
        self.md_events, self.ms_events = (
            EventRecorder(sim, component=f"{kind}-controller", manager="manager")
            for kind in ("machinedeployment", "machineset")
        )
        self.machines = MachineController(
            sim,
            infrastructure=self.infrastructure,
            node_of=self._node_of,
            pods_on=self.pods_on,
            wake=lambda key, delay: self._wake(MACHINES, key, delay),
            bootstrap_seconds=self.bootstrap_seconds,
            drain_retry_seconds=self.drain_retry_seconds,
        )
        for store in (MDS, MSS, MACHINES):
            sim.watch(store, self._changed)
            for obj in sim.objects(store):
                self._changed(Change(0, store, "ADDED", obj, None))
        sim.watch("nodes", self._node_changed)
        sim.watch("pods", self._pod_changed)
        for node in sim.objects("nodes"):
            self._by_provider[node.get("spec", {}).get("providerID", "")] = node["metadata"]["name"]
        for pod in sim.objects("pods"):
            self._pod_changed(Change(0, "pods", "ADDED", pod, None))

    # observing -------------------------------------------------------------------------------

    def _changed(self, change: Change) -> None:
        key = _key(change.obj)
        self._dirty[change.store].add(key)
        for ref in change.obj["metadata"].get("ownerReferences") or ():
            if ref.get("controller") and ref.get("kind") in ("MachineSet", "MachineDeployment"):
                self._dirty[MSS if ref["kind"] == "MachineSet" else MDS].add((key[0], ref["name"]))
        node = ((change.obj.get("status") or {}).get("nodeRef") or {}).get("name")
        if node and change.store == MACHINES:
            self._machine_of_node[node] = key
            deleting = change.obj["metadata"].get("deletionTimestamp") and change.type != "DELETED"
            (self._draining.add if deleting else self._draining.discard)(node)

    def _node_changed(self, change: Change) -> None:
        node, old = change.obj, change.old
        name, provider = node["metadata"]["name"], node.get("spec", {}).get("providerID", "")
        if change.type == "DELETED":
            self._by_provider.pop(provider, None)
        elif provider:
            self._by_provider[provider] = name
        if (
            old is not None
            and change.type == "MODIFIED"
            and summarize(old) == summarize(node)
            and old.get("spec") == node.get("spec")
        ):
            return  # a heartbeat
        vm = self.infrastructure.named.get(name)
        key = self._machine_of_node.get(name) or (vm and (vm.namespace, vm.machine))
        if key:
            self._dirty[MACHINES].add(key)

    def _pod_changed(self, change: Change) -> None:
        pod, old = change.obj, change.old or {}
        key, node = _key(pod), pod.get("spec", {}).get("nodeName")
        gone = old.get("spec", {}).get("nodeName")
        if gone and (gone != node or change.type == "DELETED"):
            self._pods_by_node.get(gone, set()).discard(key)
        if node and change.type != "DELETED":
            self._pods_by_node.setdefault(node, set()).add(key)
        if node in self._draining:
            self._dirty[MACHINES].add(self._machine_of_node[node])  # a drain may progress

    def _vm_changed(self, vm: VM) -> None:
        self._dirty[MACHINES].add((vm.namespace, vm.machine))

    def _wake(self, store: str, key: Key, delay: float) -> None:
        self.sim.after(delay, lambda: self._dirty[store].add(key), name="capi-requeue")

    def sync(self) -> bool:
        self._wrote = self.machines.wrote = False
        for store, reconcile in (
            (MDS, self._reconcile_md),
            (MSS, self._reconcile_ms),
            (MACHINES, self.machines.reconcile),
        ):
            keys, self._dirty[store] = self._dirty[store], set()
            for key in sorted(keys):
                try:
                    reconcile(key)
                except errors.StatusError as exc:
                    if exc.code not in (404, 409, 429):
                        raise
                    self._dirty[store].add(key)  # requeued, as controller-runtime does
        return self._wrote or self.machines.wrote

    # writing ----------------------------------------------------------------------------------

    def _patch(self, kind: str, key: Key, patch: Obj, *, status: bool = False) -> None:
        sub = "status" if status else ""
        self.client.patch(
            API_VERSION, kind, key[1], patch, namespace=key[0], patch_type="merge", subresource=sub
        )
        self._wrote = True

    def _set_status(self, kind: str, obj: Obj, status: Obj) -> None:
        old = obj.get("status") or {}
        if any(old.get(k) != v for k, v in status.items()):
            self._patch(kind, _key(obj), {"status": status}, status=True)

    def _apply(self, client: Client, body: Obj) -> Obj:
        meta = body["metadata"]
        self._wrote = True
        return client.patch(
            API_VERSION,
            body["kind"],
            meta["name"],
            body,
            namespace=meta["namespace"],
            patch_type="apply",
            force=True,
        )

    def _suffix(self) -> str:
        return "".join(self.sim.random.choice(GENERATED_NAME_ALPHABET) for _ in range(5))

    def _owned(self, store: str, owner: Obj) -> list[Obj]:
        uid = owner["metadata"].get("uid")
        return [
            obj
            for obj in self.sim.objects(store, namespace=_key(owner)[0])
            if any(
                r.get("uid") == uid and r.get("controller")
                for r in obj["metadata"].get("ownerReferences") or ()
            )
        ]

    @staticmethod
    def _owner_ref(owner: Obj) -> dict[str, Any]:
        meta = owner["metadata"]
        return {
            "apiVersion": API_VERSION,
            "kind": owner["kind"],
            "name": meta["name"],
            "uid": meta["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }

    def pods_on(self, node: str) -> list[Obj]:
        """Pods bound to ``node``."""
        found = (self.sim.get("pods", *key) for key in sorted(self._pods_by_node.get(node, ())))
        return [p for p in found if p is not None and p.get("spec", {}).get("nodeName") == node]

    def _node_of(self, machine: Obj) -> Obj | None:
        name = self._by_provider.get(machine.get("spec", {}).get("providerID") or "")
        return self.sim.get("nodes", "", name) if name else None

    # MachineDeployment -------------------------------------------------------------------------

    def _reconcile_md(self, key: Key) -> None:
        md = self.sim.get(MDS, *key)
        if md is None or md["metadata"].get("deletionTimestamp"):
            return
        spec = md.get("spec") or {}
        replicas = spec.get("replicas")
        if replicas is None:
            replicas = int((md["metadata"].get("annotations") or {}).get(MIN_SIZE) or 1)
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        surge = _scaled(rolling.get("maxSurge", 1), replicas, up=True)
        unavailable = _scaled(rolling.get("maxUnavailable", 0), replicas, up=False)
        unavailable = unavailable if surge or unavailable else 1
        sets = sorted(self._owned(MSS, md), key=lambda s: s["metadata"]["creationTimestamp"])
        wanted = _template_hash(spec.get("template") or {})
        new = next((s for s in sets if _template_hash(s["spec"]["template"]) == wanted), None)
        old = [s for s in sets if s is not new]
        if new is None:
            total = sum(s["spec"].get("replicas", 0) for s in old)
            size = max(0, min(replicas, replicas + surge - total)) if old else replicas
            new = self._create_ms(md, wanted, size, revision=len(sets) + 1, most=replicas + surge)
        elif not spec.get("paused") and not any(s["spec"].get("replicas") for s in old):
            if new["spec"].get("replicas") != replicas:
                self._scale(md, new, replicas)
        elif not spec.get("paused"):
            self._roll(md, new, old, replicas, surge=surge, unavailable=unavailable)
        for ms in old:
            if not ms["spec"].get("replicas") and not (ms.get("status") or {}).get("replicas"):
                self.md_apply.delete(
                    API_VERSION, "MachineSet", ms["metadata"]["name"], namespace=key[0]
                )
        self._md_status(md, [*old, new], new, replicas, unavailable)

    def _roll(
        self, md: Obj, new: Obj, old: list[Obj], replicas: int, *, surge: int, unavailable: int
    ) -> None:
        """One rolling-update step: the new set grows within ``maxSurge``, old sets shrink as
        far as ``maxUnavailable`` allows."""
        every = [*old, new]
        total = sum(s["spec"].get("replicas", 0) for s in every)
        size = new["spec"].get("replicas", 0)
        if size < replicas and total < replicas + surge:
            self._scale(md, new, min(replicas, size + replicas + surge - total))
        status = [s.get("status") or {} for s in every]
        floor = replicas - unavailable
        new_unavailable = size - (new.get("status") or {}).get("availableReplicas", 0)
        budget = min(
            total - floor - new_unavailable,
            sum(s.get("availableReplicas", 0) for s in status) - floor,
        )
        for ms in old:
            current = ms["spec"].get("replicas", 0)
            if budget > 0 and current:
                step = min(current, budget)
                self._scale(md, ms, current - step)
                budget -= step

    def _create_ms(self, md: Obj, wanted: int, replicas: int, *, revision: int, most: int) -> Obj:
        namespace, md_name = _key(md)
        suffix = self._suffix()
        cluster = md["spec"].get("clusterName", "")
        template = copy.deepcopy(md["spec"]["template"])
        unique = {HASH_LABEL: f"{wanted}-{suffix}"}
        labels = {CLUSTER_LABEL: cluster, **(template.get("metadata") or {}).get("labels", {})}
        template.setdefault("metadata", {})["labels"] = {**labels, **unique}
        selector = copy.deepcopy(md["spec"].get("selector") or {})
        selector.setdefault("matchLabels", {}).update(unique)
        strategy = (md["spec"].get("strategy") or {}).get("rollingUpdate") or {}
        notes = {
            REVISION: str(revision),
            "machinedeployment.clusters.x-k8s.io/desired-replicas": str(replicas),
            "machinedeployment.clusters.x-k8s.io/max-replicas": str(most),
        }
        name = f"{md_name}-{suffix}"
        meta = {
            "name": name,
            "namespace": namespace,
            "annotations": notes,
            "labels": {**labels, **unique, MD_LABEL: md_name},
            "ownerReferences": [self._owner_ref(md)],
        }
        spec = {
            "clusterName": cluster,
            "replicas": replicas,
            "selector": selector,
            "minReadySeconds": md["spec"].get("minReadySeconds", 0),
            "deletePolicy": strategy.get("deletePolicy", "Random"),
            "template": template,
        }
        created = self._apply(
            self.md_apply,
            {"apiVersion": API_VERSION, "kind": "MachineSet", "metadata": meta, "spec": spec},
        )
        self.md_events.event(
            md, "Normal", "SuccessfulCreate", f"Created MachineSet {namespace}/{name}"
        )
        return created

    def _scale(self, md: Obj, ms: Obj, replicas: int) -> None:
        direction = "up" if replicas > ms["spec"].get("replicas", 0) else "down"
        self._patch("MachineSet", _key(ms), {"spec": {"replicas": replicas}})
        namespace, name = _key(ms)
        message = f"Scaled {direction} MachineSet {namespace}/{name} to {replicas}"
        self.md_events.event(md, "Normal", "SuccessfulScale", message)

    def _md_status(self, md: Obj, sets: list[Obj], new: Obj, replicas: int, unav: int) -> None:
        status = [s.get("status") or {} for s in sets]
        ready = sum(s.get("readyReplicas", 0) for s in status)
        available = sum(s.get("availableReplicas", 0) for s in status)
        phase = (
            "Running" if replicas == ready else "ScalingUp" if replicas > ready else "ScalingDown"
        )
        stamp, old = rfc3339(self.sim.now()), (md.get("status") or {}).get("conditions") or []
        need = replicas - unav
        message = f"Minimum availability requires {need} replicas, current {available} available"
        state = "True" if available >= need else "False"
        conditions = [
            condition(
                old,
                t,
                state,
                stamp,
                reason="WaitingForAvailableMachines",
                message=message,
                severity="Warning",
            )
            for t in ("Ready", "Available")
        ]
        selector = selecting.LabelSelector.from_object(md["spec"].get("selector") or {})
        self._set_status(
            "MachineDeployment",
            md,
            {
                "selector": str(selector),
                "replicas": sum(s.get("replicas", 0) for s in status),
                "updatedReplicas": (new.get("status") or {}).get("replicas", 0),
                "readyReplicas": ready,
                "availableReplicas": available,
                "unavailableReplicas": max(0, replicas - available),
                "phase": phase,
                "observedGeneration": md["metadata"].get("generation", 1),
                "conditions": conditions,
            },
        )

    # MachineSet --------------------------------------------------------------------------------

    def _reconcile_ms(self, key: Key) -> None:
        ms = self.sim.get(MSS, *key)
        if ms is None or ms["metadata"].get("deletionTimestamp"):
            return
        machines = self._owned(MACHINES, ms)
        replicas = ms["spec"].get("replicas", 1)
        diff = len(machines) - replicas
        for _ in range(-diff):
            self._create_machine(ms)
        surplus = (
            sorted(machines, key=lambda m: self._delete_rank(ms, m))[:diff] if diff > 0 else []
        )
        for machine in surplus:
            if not machine["metadata"].get("deletionTimestamp"):
                name = machine["metadata"]["name"]
                self.client.delete(API_VERSION, "Machine", name, namespace=key[0])
                self._wrote = True
                self.ms_events.event(ms, "Normal", "SuccessfulDelete", f'Deleted machine "{name}"')
        self._ms_status(ms, machines, replicas)

    def _delete_rank(self, ms: Obj, machine: Obj) -> tuple[int, float]:
        """Deleting, marked, failed or node-less machines first; then by ``deletePolicy``."""
        meta, status = machine["metadata"], machine.get("status") or {}
        rank = 3
        if meta.get("deletionTimestamp"):
            rank = 0
        elif DELETE_MACHINE in (meta.get("annotations") or {}):
            rank = 1
        elif status.get("failureReason") or node_ready(self._node_of(machine)) is None:
            rank = 2
        created = seconds(meta.get("creationTimestamp"))
        policy = ms["spec"].get("deletePolicy") or "Random"
        order = {"Newest": -created, "Oldest": created}.get(policy, self.sim.random.random())
        return rank, order

    def _create_machine(self, ms: Obj) -> None:
        namespace, ms_name = _key(ms)
        template = copy.deepcopy(ms["spec"].get("template") or {})
        name = f"{ms_name}-{self._suffix()}"
        spec = template.get("spec") or {}
        spec["clusterName"] = ms["spec"].get("clusterName", spec.get("clusterName", ""))
        for ref in ((spec.get("bootstrap") or {}).get("configRef"), spec.get("infrastructureRef")):
            if ref:  # templates are cloned into objects named after the machine
                kind = str(ref.get("kind", "")).removesuffix("Template")
                ref.update(kind=kind, name=name, namespace=namespace)
        labels = {**((template.get("metadata") or {}).get("labels") or {}), MS_LABEL: ms_name}
        if MD_LABEL in (ms["metadata"].get("labels") or {}):
            labels[MD_LABEL] = ms["metadata"]["labels"][MD_LABEL]
        meta = {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "finalizers": [FINALIZER],
            "ownerReferences": [self._owner_ref(ms)],
        }
        if (template.get("metadata") or {}).get("annotations"):
            meta["annotations"] = dict(template["metadata"]["annotations"])
        body = {"apiVersion": API_VERSION, "kind": "Machine", "metadata": meta, "spec": spec}
        self._apply(self.ms_apply, body)
        self.ms_events.event(ms, "Normal", "SuccessfulCreate", f'Created machine "{name}"')

    def _ms_status(self, ms: Obj, machines: list[Obj], replicas: int) -> None:
        now, stamp = self.sim.seconds(), rfc3339(self.sim.now())
        min_ready = ms["spec"].get("minReadySeconds", 0)
        labels = ((ms["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {}
        ready = available = labelled = 0
        for machine in machines:
            own = machine["metadata"].get("labels") or {}
            labelled += all(own.get(k) == v for k, v in labels.items())
            cond = node_ready(self._node_of(machine))
            if cond is None or machine["metadata"].get("deletionTimestamp"):
                continue
            ready += 1
            since = seconds(cond.get("lastTransitionTime")) + min_ready
            available += since <= now
            if since > now:
                self._wake(MSS, _key(ms), since - now)
        old, count = (ms.get("status") or {}).get("conditions") or [], len(machines)
        verb, reason = ("up", "ScalingUp") if count < replicas else ("down", "ScalingDown")
        resized = condition(
            old,
            "Resized",
            "True" if count == replicas else "False",
            stamp,
            reason=reason,
            message=f"Scaling {verb} MachineSet to {replicas} replicas (actual {count})",
            severity="Warning",
        )
        selector = selecting.LabelSelector.from_object(ms["spec"].get("selector") or {})
        self._set_status(
            "MachineSet",
            ms,
            {
                "selector": str(selector),
                "replicas": count,
                "fullyLabeledReplicas": labelled,
                "readyReplicas": ready,
                "availableReplicas": available,
                "observedGeneration": ms["metadata"].get("generation", 1),
                "conditions": [
                    {**resized, "type": "Ready"},
                    condition(old, "MachinesCreated", "True", stamp),
                    resized,
                ],
            },
        )
