"""kube-scheduler (Kubernetes 1.32): queue, scheduling cycle, binding, failure and preemption.

**Pods.** Those naming this scheduler (``spec.schedulerName``), unbound, not terminating, not
finished and without ``schedulingGates``. A pod created with ``nodeName`` never comes here.

**Queue** (``internal/queue/scheduling_queue.go``). ``activeQ`` is ordered by priority, then
queueing time. A pod that fits nowhere parks with the *unschedulable* pods until an event may
help it: a node added; a node's labels, taints, cordon or allocatable changed; an assigned pod
deleted or finished; the pod itself updated; or 5 minutes passed (flushed every 30 s). Moved pods
first serve their backoff (1 s doubling to 10 s) in ``backoffQ``; so do pods that failed with an
error or saw an event while being scheduled. Which events wake a pod follows the plugins that
rejected it (a simplification of 1.32's queueing hints).

**Cycle** (``schedule_one.go``): NodeAffinity's PreFilter (pinned node names), the nominated
node first, then filters from where the previous cycle stopped until ``numFeasibleNodesToFind``
nodes fit (all below 100 nodes; else 50% - N/125, at least 5% and 100), scores, best node (ties
at random). Nodes being deleted are ignored; nodes are visited zone by zone as the node tree
lists them. Binding assumes the pod on the node in the cache first, so the next pod already
counts its requests, then POSTs ``pods/binding``; event ``Scheduled``.

**Failure** (``handleSchedulingFailure``, ``updatePod``): a ``FailedScheduling`` Warning (series
on repeats) and, only when the condition or nominated node changed, a status patch (manager
``kube-scheduler``) of ``PodScheduled=False``, reason ``Unschedulable`` (``SchedulerError`` for
errors), the FitError as message. **Preemption** (DefaultPreemption): see ``unschedulable``;
victims get ``DisruptionTarget`` and are deleted (event ``Preempted``), the pod is nominated.

**Throughput.** Writes pass client-go's token bucket (``--kube-api-qps`` 50, burst 100).
``run_all_filters`` is the framework's ``runAllFilters`` (the legacy Policy's
``alwaysCheckAllPredicates``): all failing filters of a node are reported, so reasons can add up
to more than the node count, whereas 1.32 stops at a node's first failing filter.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.recording import SeriesRecorder
from kubemedic.sim.cluster.scheduler import filtering, framework
from kubemedic.sim.cluster.scheduler import unschedulable as fit
from kubemedic.sim.cluster.scheduler.filtering import NodeInfo, PodInfo
from kubemedic.sim.cluster.scheduler.nodetree import feasible_nodes_to_find, node_tree_order
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Change, Obj

__all__ = ["Scheduler"]

_TERMINAL = ("Succeeded", "Failed")
_STATIC_PLUGINS = frozenset(("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity"))
_FIT = frozenset({filtering.NODE_RESOURCES_FIT})
_UNRESOLVABLE = framework.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
_ZONE = "topology.kubernetes.io/zone"
_CACHE_LIMIT = 500_000


class Scheduler:
    """The default scheduler; attach with ``sim.add(Scheduler())``.

    ``scheduler_name`` is the profile's name (pods select it, events report it; their
    ``reportingInstance`` is ``<name>-<host>``). ``preemption=False`` is a profile without
    DefaultPreemption (no postfix). ``percentage_of_nodes_to_score`` 0 is the adaptive default.
    ``api_qps``/``api_burst`` pace writes; the backoff and parking times are the queue's
    defaults (``--pod-initial-backoff-seconds`` 1, ``--pod-max-backoff-seconds`` 10, 5 minutes).
    """

    name = managers.KUBE_SCHEDULER

    def __init__(
        self,
        *,
        scheduler_name: str = "default-scheduler",
        host: str = "control-plane",
        run_all_filters: bool = False,
        preemption: bool = True,
        percentage_of_nodes_to_score: int = 0,
        api_qps: float = 50.0,
        api_burst: int = 100,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable_seconds: float = 300.0,
    ) -> None:
        self.scheduler_name = scheduler_name
        self.host = host
        self.run_all_filters = run_all_filters
        self.preemption = preemption
        self.percentage_of_nodes_to_score = percentage_of_nodes_to_score
        self.api_qps = api_qps
        self.api_burst = api_burst
        self.queue = fit.SchedulingQueue(
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            max_unschedulable=max_unschedulable_seconds,
        )
        self.scheduled = 0
        self.failed = 0
        self.preemptions = 0
        self._nodes: dict[str, NodeInfo] = {}
        self._bound: dict[str, tuple[str, PodInfo]] = {}
        self._nominated: dict[str, dict[str, PodInfo]] = {}
        self._nominated_of: dict[str, str] = {}
        self._static: dict[tuple[Any, str], tuple[framework.Status, ...]] = {}
        self._scores: filtering.ScoreCache = {}
        self._order: list[NodeInfo] | None = None
        self._next_start = 0
        self._tokens = float(api_burst)
        self._tokens_at = 0.0
        self._wake_at = 0.0

    # wiring ------------------------------------------------------------------------------------

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, managers.KUBE_SCHEDULER)
        self.recorder = SeriesRecorder(
            sim,
            controller=self.scheduler_name,
            instance=f"{self.scheduler_name}-{self.host}",
            manager="kube-scheduler",
        )
        self._tokens_at = sim.seconds()
        for node in sim.objects("nodes"):
            self._node_changed(node, None)
        for pod in sim.objects("pods"):
            self._pod_changed(pod, None)
        sim.watch("nodes", self._on_node)
        sim.watch("pods", self._on_pod)
        sim.every(
            30.0,
            lambda: self.queue.flush_leftover(sim.seconds()),
            name="scheduler: flush unschedulable pods",
        )

    def pending(self) -> int:
        """Pods waiting to be scheduled (active, backing off or unschedulable)."""
        return len(self.queue)

    def unschedulable(self) -> list[tuple[str, str]]:
        """(namespace, name) of the pods parked as unschedulable."""
        return sorted((q.namespace, q.name) for q in self.queue.parked.values())

    def node_info(self, name: str) -> NodeInfo | None:
        """The cache's view of a node (requests of the pods bound to it); read-only."""
        return self._nodes.get(name)

    # informers ---------------------------------------------------------------------------------

    def _on_node(self, change: Change) -> None:
        self._node_changed(change.obj, change.old, deleted=change.type == "DELETED")

    def _node_changed(self, node: Obj, old: Obj | None, *, deleted: bool = False) -> None:
        name = str(node["metadata"]["name"])
        info = self._nodes.get(name)
        if deleted or node["metadata"].get("deletionTimestamp"):
            if info is not None and info.exists:
                info.exists = False
                self._order = None
                self._static.clear()
            return
        if (
            info is not None
            and info.exists
            and old is not None
            and old.get("spec") == node.get("spec")
            and old["metadata"].get("labels") == node["metadata"].get("labels")
            and (old.get("status") or {}).get("allocatable")
            == (node.get("status") or {}).get("allocatable")
        ):
            return  # a heartbeat: nothing the scheduler reads
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        was = info.exists
        before = (info.signature(), info.alloc_cpu, info.alloc_memory, info.alloc_pods)
        info.set_node(node)
        if not was:
            self._order = None
            self._static.clear()
            self.queue.move(None)  # NodeAdd: every plugin may now pass
            return
        plugins: set[str] = set()
        if info.signature() != before[0]:
            self._static.clear()
            self._order = None
            plugins |= _STATIC_PLUGINS
        if (info.alloc_cpu, info.alloc_memory, info.alloc_pods) != before[1:]:
            plugins |= _FIT
        if plugins:
            self.queue.move(frozenset(plugins))

    def _on_pod(self, change: Change) -> None:
        if change.type == "DELETED":
            uid = str(change.obj["metadata"].get("uid") or "")
            self.queue.remove(uid)
            self._nominate(uid, "", None)
            self._unbind(uid)
        else:
            self._pod_changed(change.obj, change.old)

    def _pod_changed(self, pod: Obj, old: Obj | None) -> None:
        meta, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        uid = str(meta.get("uid") or "")
        node = spec.get("nodeName")
        if node:
            self.queue.remove(uid)
            self._nominate(uid, "", None)
            if status.get("phase") in _TERMINAL:
                self._unbind(uid)  # the informer's field selector drops finished pods
                return
            bound = self._bound.get(uid)
            if bound is None:
                info = filtering.pod_info(pod)
                self._bound[uid] = (node, info)
                self._node(node).add_pod(info)
            elif meta.get("deletionTimestamp") and not bound[1].terminating:
                fresh = filtering.pod_info(pod)
                bound[1].terminating, bound[1].preempted = True, fresh.preempted
            return
        mine = (spec.get("schedulerName") or "default-scheduler") == self.scheduler_name
        if (
            not mine
            or meta.get("deletionTimestamp")
            or status.get("phase") in _TERMINAL
            or spec.get("schedulingGates")
        ):
            self.queue.remove(uid)
            self._nominate(uid, "", None)
            return
        queued = self.queue.pods.get(uid)
        if queued is None:
            info = filtering.pod_info(pod)
            namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
            queued = fit.QueuedPod(uid, namespace, name, info, self.sim.seconds())
            self.queue.add(queued)
        elif old is not None and (
            old.get("spec") != spec or old["metadata"].get("labels") != meta.get("labels")
        ):
            queued.info = filtering.pod_info(pod)
            if queued.where == "unschedulable":
                self.queue.requeue(queued, self.sim.seconds())
        self._nominate(uid, str(status.get("nominatedNodeName") or ""), queued.info)

    def _node(self, name: str) -> NodeInfo:
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        return info

    def _unbind(self, uid: str) -> None:
        bound = self._bound.pop(uid, None)
        if bound is None:
            return
        self._nodes[bound[0]].remove_pod(uid)
        self.queue.move(_FIT)  # AssignedPodDelete

    def _nominate(self, uid: str, node: str, info: PodInfo | None) -> None:
        current = self._nominated_of.get(uid)
        if current == (node or None):
            return
        if current is not None:
            del self._nominated_of[uid]
            on_node = self._nominated[current]
            on_node.pop(uid, None)
            if not on_node:
                del self._nominated[current]
        if node and info is not None:
            self._nominated_of[uid] = node
            self._nominated.setdefault(node, {})[uid] = info

    # pacing ----------------------------------------------------------------------------------

    def _wake(self, at: float) -> None:
        """Make sure the engine comes back by ``at`` (it jumps over idle time to timers)."""
        now = self.sim.seconds()
        if self._wake_at > now and self._wake_at <= at:
            return
        self._wake_at = at
        self.sim.after(max(0.0, at - now), lambda: None, name="scheduler: wake")

    def _has_token(self) -> bool:
        """client-go's token bucket (``--kube-api-qps``/``--kube-api-burst``), refilled."""
        now = self.sim.seconds()
        self._tokens = min(
            float(self.api_burst), self._tokens + (now - self._tokens_at) * self.api_qps
        )
        self._tokens_at = now
        return self._tokens >= 1.0

    def _take_token(self) -> None:
        self._tokens -= 1.0

    # the scheduling loop -----------------------------------------------------------------------

    def sync(self) -> bool:
        wrote = False
        now = self.sim.seconds()
        self.queue.apply_moves(now)
        while self.queue.ready(now):
            if not self._has_token():
                self._wake(now + (1.0 - self._tokens) / self.api_qps)
                break
            q = self.queue.pop(now)
            if q is None:
                break
            wrote |= self._schedule_one(q)
            self.queue.apply_moves(now)
        due = self.queue.next_backoff()
        if due is not None:
            self._wake(due)
        return wrote

    def _nodes_in_order(self) -> list[NodeInfo]:
        if self._order is None:
            self._order = node_tree_order(n for n in self._nodes.values() if n.exists)
        return self._order

    def _reserved(self, info: PodInfo, node: str) -> list[PodInfo]:
        """Nominated pods of equal or higher priority that the filters count on ``node``."""
        nominated = self._nominated.get(node)
        if not nominated:
            return []
        return [p for p in nominated.values() if p.priority >= info.priority and p.uid != info.uid]

    def _filter(self, info: PodInfo, node: NodeInfo) -> tuple[framework.Status, ...]:
        """The failing filters of one node (one unless ``run_all_filters``); hot path."""
        failed: tuple[framework.Status, ...] = ()
        if node.unschedulable or node.taints or info.selector is not None or info.node_name:
            key = (info.placement, node.name)
            cached = self._static.get(key)
            if cached is None:
                if len(self._static) > _CACHE_LIMIT:
                    self._static.clear()
                cached = tuple(filtering.static_filters(info, node, run_all=self.run_all_filters))
                self._static[key] = cached
            failed = cached
            if failed and not self.run_all_filters:
                return failed
        reserved = self._reserved(info, node.name) if self._nominated else []
        if (
            not reserved
            and not info.scalar
            and len(node.pods) < node.alloc_pods
            and info.cpu <= node.alloc_cpu - node.cpu
            and info.memory <= node.alloc_memory - node.memory
            and info.ephemeral <= node.alloc_ephemeral - node.ephemeral
        ):
            return failed
        status = filtering.node_resources_fit(info, node, reserved=reserved)
        return failed if status is None else (*failed, status)

    def _schedule_one(self, q: fit.QueuedPod) -> bool:
        pod = self.sim.get("pods", q.namespace, q.name)
        if (
            pod is None
            or pod["metadata"].get("uid") != q.uid
            or (pod.get("spec") or {}).get("nodeName")
            or pod["metadata"].get("deletionTimestamp")
        ):
            self.queue.remove(q.uid)
            return False
        info = q.info
        nodes = self._nodes_in_order()
        if not nodes:
            return self._fail(q, pod, fit.NO_NODES_AVAILABLE, plugins=frozenset())
        diagnosis = framework.Diagnosis()
        candidates = nodes
        if info.node_names is not None:  # NodeAffinity's PreFilter pinned node names
            diagnosis.unschedulable_plugins.add(filtering.NODE_AFFINITY)
            conflict = filtering.REASON_AFFINITY_CONFLICT
            reason = fit.absent_plugins_reason([filtering.NODE_AFFINITY])
            diagnosis.absent = framework.Status(
                _UNRESOLVABLE, (reason if info.node_names else conflict,)
            )
            if not info.node_names:
                diagnosis.prefilter_msg = conflict
                return self._unschedulable_pod(q, pod, diagnosis, len(nodes))
            pinned = (self._nodes.get(n) for n in sorted(info.node_names))
            candidates = [n for n in pinned if n is not None and n.exists]
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        target = self._nodes.get(nominated) if nominated else None
        if target is not None and target.exists and not self._filter(info, target):
            return self._bind(q, pod, target)
        feasible = self._find(info, candidates, diagnosis, len(nodes))
        if not feasible:
            return self._unschedulable_pod(q, pod, diagnosis, len(nodes))
        host = feasible[0]
        if len(feasible) > 1:
            scores = filtering.score(info, feasible, cache=self._scores)
            best = max(scores)
            ties = [n for n, s in zip(feasible, scores, strict=True) if s == best]
            host = ties[self.sim.random.randrange(len(ties))] if len(ties) > 1 else ties[0]
        return self._bind(q, pod, host)

    def _find(
        self, info: PodInfo, candidates: list[NodeInfo], diagnosis: framework.Diagnosis, total: int
    ) -> list[NodeInfo]:
        """``findNodesThatPassFilters``, resuming where the previous cycle stopped."""
        count = len(candidates)
        if not count:
            return []
        wanted = feasible_nodes_to_find(count, self.percentage_of_nodes_to_score)
        feasible: list[NodeInfo] = []
        statuses = diagnosis.statuses
        plugins = diagnosis.unschedulable_plugins
        start = self._next_start % count
        plain = info.selector is None and not info.node_name and not info.scalar
        plain = plain and not self._nominated
        cpu, memory, ephemeral = info.cpu, info.memory, info.ephemeral
        for i in range(count):
            node = candidates[(start + i) % count]
            if (  # the common case inlined: no taint, cordon, selector or nomination
                plain
                and node.open_slots > 0
                and node.free_cpu >= cpu
                and node.free_memory >= memory
                and node.free_ephemeral >= ephemeral
            ):
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
                continue
            failed = self._filter(info, node)
            if not failed:
                feasible.append(node)
                if len(feasible) >= wanted:
                    break
                continue
            plugins.update(s.plugin for s in failed)
            merged = failed[0] if len(failed) == 1 else framework.merge(failed)
            if merged is not None:
                statuses[node.name] = merged
        self._next_start = (self._next_start + len(feasible) + len(statuses)) % total
        return feasible

    # outcomes ----------------------------------------------------------------------------------

    def _bind(self, q: fit.QueuedPod, pod: Obj, node: NodeInfo) -> bool:
        """Assume the pod on ``node``, then POST the binding (``DefaultBinder``)."""
        info = q.info
        self._bound[q.uid] = (node.name, info)
        node.add_pod(info)
        self._take_token()
        try:
            self.client.bind(q.namespace, q.name, node.name)
        except errors.StatusError as exc:
            self._bound.pop(q.uid, None)
            node.remove_pod(q.uid)
            if exc.code == 404 or q.uid not in self.queue.pods:
                self.queue.remove(q.uid)
                return True
            message = f'running Bind plugin "DefaultBinder": {exc.message}'
            return self._fail(q, pod, message, plugins=frozenset(), error=True)
        self.queue.remove(q.uid)
        self._nominate(q.uid, "", None)
        self.scheduled += 1
        note = f"Successfully assigned {q.namespace}/{q.name} to {node.name}"
        self.recorder.event(pod, "Normal", "Scheduled", "Binding", note)
        return True

    def _unschedulable_pod(
        self, q: fit.QueuedPod, pod: Obj, diagnosis: framework.Diagnosis, total: int
    ) -> bool:
        nominate: str | None = None
        if self.preemption:
            diagnosis.postfilter_msg, nominate = self._preempt(q.info, pod, diagnosis, total)
        message = fit.fit_error(total, diagnosis)
        plugins = frozenset(diagnosis.unschedulable_plugins)
        return self._fail(q, pod, message, plugins=plugins, nominate=nominate)

    def _fail(
        self,
        q: fit.QueuedPod,
        pod: Obj,
        message: str,
        *,
        plugins: frozenset[str],
        nominate: str | None = None,
        error: bool = False,
    ) -> bool:
        """``handleSchedulingFailure``: requeue, event, and the status patch if it changed."""
        self.failed += 1
        self.queue.park(q, plugins, self.sim.seconds(), error=error)
        if nominate is not None:
            self._nominate(q.uid, nominate, q.info)
        reason = "SchedulerError" if error else "Unschedulable"
        self.recorder.event(
            pod, "Warning", "FailedScheduling", "Scheduling", fit.truncate_note(message)
        )
        condition = {"type": "PodScheduled", "status": "False", "reason": reason}
        condition["message"] = message
        now = rfc3339(self.sim.now())
        patch = fit.condition_patch(pod.get("status") or {}, condition, now=now, nominate=nominate)
        if patch is not None:
            self._take_token()
            self._patch_status(q.namespace, q.name, patch)
        return True

    def _patch_status(self, namespace: str, name: str, patch: Mapping[str, Any]) -> None:
        try:
            self.client.patch("v1", "Pod", name, patch, namespace=namespace, subresource="status")
        except errors.StatusError as exc:
            if exc.code != 404:
                raise

    # preemption --------------------------------------------------------------------------------

    def _preempt(
        self, info: PodInfo, pod: Obj, diagnosis: framework.Diagnosis, total: int
    ) -> tuple[str, str | None]:
        """DefaultPreemption's PostFilter: (message, node to nominate; "" clears, None keeps)."""
        if info.preempt_never:
            return fit.preemption_postfix(total, ineligible=fit.NOT_ELIGIBLE_NEVER), None
        nominated = str((pod.get("status") or {}).get("nominatedNodeName") or "")
        status = diagnosis.status_of(nominated) if nominated else None
        target = self._nodes.get(nominated) if nominated else None
        on_target = target.pods.values() if target is not None else ()
        if (status is None or status.resolvable) and any(
            p.priority < info.priority and p.terminating and p.preempted for p in on_target
        ):
            ineligible = fit.NOT_ELIGIBLE_TERMINATING
            return fit.preemption_postfix(total, ineligible=ineligible), None
        potential = [self._nodes[n] for n, s in diagnosis.statuses.items() if s.resolvable]
        if not potential:
            return fit.preemption_postfix(total), ""
        budgets = fit.budgets(self.sim.objects("poddisruptionbudgets.policy"))
        offset = self.sim.random.randrange(len(potential))
        candidates, statuses = fit.dry_run(
            [(n.name, n.pods.values(), self._fits_without(info, n)) for n in potential],
            info.priority,
            budgets=budgets,
            offset=offset,
        )
        if not candidates:
            return fit.preemption_postfix(total, statuses), ""
        best = fit.pick_candidate(candidates)
        self._evict_victims(pod, info, best)
        return "", best.node

    def _fits_without(
        self, info: PodInfo, node: NodeInfo
    ) -> Callable[[Sequence[PodInfo]], framework.Status | None]:
        """The dry run's filter check: the pod on ``node`` minus some pods, nominated pods
        of equal or higher priority counted (``RunFilterPluginsWithNominatedPods``)."""
        reserved = self._reserved(info, node.name)

        def check(removed: Sequence[PodInfo]) -> framework.Status | None:
            trial = copy.copy(node)
            trial.pods, trial.scalar = dict(node.pods), dict(node.scalar)
            for pod in removed:
                trial.remove_pod(pod.uid)
            return filtering.run_filters(info, trial, reserved=reserved)

        return check

    def _evict_victims(self, pod: Obj, info: PodInfo, best: fit.Candidate) -> None:
        """``prepareCandidate``: mark, delete and report each victim; drop lower nominations."""
        self.preemptions += 1
        scheduler = (pod.get("spec") or {}).get("schedulerName") or self.scheduler_name
        for victim in best.victims:
            current = self.sim.get("pods", victim.namespace, victim.name)
            if current is None:
                continue
            condition = fit.preemption_condition(scheduler)
            now = rfc3339(self.sim.now())
            patch = fit.condition_patch(current.get("status") or {}, condition, now=now)
            if patch is not None:
                self._take_token()
                self._patch_status(victim.namespace, victim.name, patch)
            self._take_token()
            self.client.delete("v1", "Pod", victim.name, namespace=victim.namespace)
            note = f"Preempted by pod {info.uid} on node {best.node}"
            self.recorder.event(current, "Normal", "Preempted", "Preempting", note)
        for other in list(self._nominated.get(best.node, {}).values()):
            if other.priority < info.priority:
                self._nominate(other.uid, "", None)
                clear = {"status": {"nominatedNodeName": None}}
                self._patch_status(other.namespace, other.name, clear)
