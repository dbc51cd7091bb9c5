"""kube-scheduler's filter and score plugins, as pure functions over a pod and a node's state.

The scheduler's cache keeps a :class:`NodeInfo` per node: the node's labels, taints and
allocatable, and the running totals of what the pods bound to it request (kept incrementally
as pods come and go, never recomputed by rescanning pods). A pod is read once into a
:class:`PodInfo` (its effective requests, tolerations and compiled node selection rules).

Filters, in the order of the 1.32 default profile (``pkg/scheduler/apis/config/v1/
default_plugins.go``); each returns ``None`` when the node passes, else a
:class:`~kubemedic.sim.cluster.scheduler.framework.Status`:

- ``NodeUnschedulable``: a cordoned node (``spec.unschedulable``) unless the pod tolerates
  ``node.kubernetes.io/unschedulable:NoSchedule``; unresolvable.
- ``NodeName``: ``spec.nodeName``, if set, must name the node; unresolvable.
- ``TaintToleration``: the first ``NoSchedule``/``NoExecute`` taint (in node order) the pod does
  not tolerate: ``node(s) had untolerated taint {key: value}``; unresolvable.
- ``NodeAffinity``: ``nodeSelector`` and required node affinity (``nodeSelectorTerms`` are
  ORed, their requirements ANDed; operators ``In NotIn Exists DoesNotExist Gt Lt``;
  ``matchFields`` on ``metadata.name``; an empty or invalid term matches nothing); unresolvable.
- ``NodeResourcesFit``: ``Too many pods`` when the node already holds ``allocatable.pods`` pods,
  then ``Insufficient <resource>`` for each of cpu, memory, ephemeral-storage and extended
  resources the pod requests beyond ``allocatable - requested``; all reasons at once;
  *resolvable* (preemption may help; 1.32 says so even for a pod bigger than the node).

Requests follow ``resourcehelper.PodRequests``: the sum of the containers, restartable init
containers (sidecars) added, at least the largest init container (plus the sidecars started
before it), plus ``spec.overhead``. Scoring uses the "non-zero" requests (100m CPU and 200Mi
memory for a container that requests none), as ``NodeResourcesFit``'s LeastAllocated does.

Scores (``framework.MaxNodeScore`` = 100 each, weights of the default profile):
``NodeResourcesFit`` LeastAllocated (1), ``NodeResourcesBalancedAllocation`` (1),
``TaintToleration`` (3, fewer untolerated ``PreferNoSchedule`` taints is better) and
``NodeAffinity`` (2, preferred terms). Host ports, volumes, topology spreading, inter-pod
(anti-)affinity and image locality are not modelled.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubemedic.model.objects import parse_time
from kubemedic.model.placement import tolerates
from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.cluster.scheduler.framework import Code, Status, untolerated_taint

__all__ = [
    "NodeInfo", "NodeSelector", "PodInfo", "ScoreCache", "node_affinity", "node_info",
    "node_name", "node_resources_fit", "node_unschedulable", "pod_info", "run_filters", "score",
    "static_filters", "taint_toleration",
]  # fmt: skip

NODE_UNSCHEDULABLE = "NodeUnschedulable"
NODE_NAME = "NodeName"
TAINT_TOLERATION = "TaintToleration"
NODE_AFFINITY = "NodeAffinity"
NODE_RESOURCES_FIT = "NodeResourcesFit"

REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_NODE_NAME = "node(s) didn't match the requested node name"
REASON_AFFINITY = "node(s) didn't match Pod's node affinity/selector"
REASON_AFFINITY_CONFLICT = "pod affinity terms conflict"
REASON_TOO_MANY_PODS = "Too many pods"

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY = 200 * 1024 * 1024
_MAX_SCORE = 100
_BLOCKING = frozenset({"NoSchedule", "NoExecute"})
_UNSCHEDULABLE_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
_REQUIRED = "requiredDuringSchedulingIgnoredDuringExecution"
_PREFERRED = "preferredDuringSchedulingIgnoredDuringExecution"
_FIXED = ("cpu", "memory", "ephemeral-storage", "pods", "storage")


# -- node selection rules ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    operator: str
    values: frozenset[str]
    bound: int = 0

    def matches(self, value: str | None) -> bool:
        op = self.operator
        if op == "In":
            return value is not None and value in self.values
        if op == "NotIn":
            return value is None or value not in self.values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        return number > self.bound if op == "Gt" else number < self.bound


def _requirement(raw: Any, *, field_selector: bool) -> _Requirement | None:
    """A requirement as ``labels.NewRequirement`` / the node field selector accept it; None
    when it is invalid (the whole term is then dropped, as the scheduler ignores parse errors)."""
    if not isinstance(raw, Mapping) or not raw.get("key"):
        return None
    key, op = str(raw["key"]), str(raw.get("operator") or "")
    values = [str(v) for v in raw.get("values") or ()]
    if field_selector:
        valid = op in ("In", "NotIn") and len(values) == 1
    else:
        valid = (op in ("In", "NotIn") and bool(values)) or (
            op in ("Exists", "DoesNotExist") and not values
        )
    if valid:
        return _Requirement(key, op, frozenset(values))
    if op in ("Gt", "Lt") and len(values) == 1 and not field_selector:
        try:
            return _Requirement(key, op, frozenset(), int(values[0]))
        except ValueError:
            return None
    return None


@dataclass(frozen=True, slots=True)
class _Term:
    expressions: tuple[_Requirement, ...]
    fields: tuple[_Requirement, ...]

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return all(r.matches(labels.get(r.key)) for r in self.expressions) and all(
            r.matches(name if r.key == "metadata.name" else "") for r in self.fields
        )


def _term(raw: Any) -> _Term | None:
    if not isinstance(raw, Mapping):
        return None
    expressions = [_requirement(r, field_selector=False) for r in raw.get("matchExpressions") or ()]
    fields = [_requirement(r, field_selector=True) for r in raw.get("matchFields") or ()]
    if (not expressions and not fields) or None in expressions or None in fields:
        return None  # an empty term matches no node; an invalid one is ignored
    return _Term(
        tuple(r for r in expressions if r is not None), tuple(r for r in fields if r is not None)
    )


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """``nodeaffinity.GetRequiredNodeAffinity``: ``nodeSelector`` AND any required term."""

    labels: tuple[tuple[str, str], ...]
    terms: tuple[_Term, ...] | None

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        return all(labels.get(k) == v for k, v in self.labels) and (
            self.terms is None or any(term.matches(labels, name) for term in self.terms)
        )


# -- pods -------------------------------------------------------------------------------------


@dataclass(slots=True)
class PodInfo:
    """What the scheduler derives from a pod once (``framework.PodInfo`` and PreFilter state)."""

    uid: str
    namespace: str
    name: str
    priority: int = 0
    preempt_never: bool = False
    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    scalar: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = DEFAULT_MILLI_CPU
    nonzero_memory: int = DEFAULT_MEMORY
    tolerations: tuple[Mapping[str, Any], ...] = ()
    node_name: str = ""
    selector: NodeSelector | None = None
    node_names: frozenset[str] | None = None
    """NodeAffinity's PreFilter result: the only nodes a ``matchFields metadata.name In`` rule
    in every term allows (None: all nodes)."""
    preferred: tuple[tuple[int, _Term], ...] = ()
    placement: tuple[Any, ...] = ()
    """A hashable key of everything the node-independent filters read (for caching)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    start: float = 0.0
    terminating: bool = False
    preempted: bool = False


def _amounts(raw: Any) -> dict[str, int]:
    """A resource list in the scheduler's units (CPU in millicores, the rest rounded up)."""
    out: dict[str, int] = {}
    for name, value in raw.items() if isinstance(raw, Mapping) else ():
        hashable = isinstance(value, str | int | float) and not isinstance(value, bool)
        amount = (_amount if hashable else _amount.__wrapped__)(str(name), value)
        if amount is not None:
            out[str(name)] = amount
    return out


@functools.lru_cache(maxsize=4096)
def _amount(name: str, value: Any) -> int | None:
    """One quantity in those units (remembered: the same few recur in every pod)."""
    try:
        quantity = parse_quantity(value).value
    except QuantityError:
        return None
    return math.ceil(quantity * 1000) if name == "cpu" else math.ceil(quantity)


def _container_requests(container: Any, *, nonzero: bool) -> dict[str, int]:
    resources = container.get("resources") if isinstance(container, Mapping) else None
    resources = resources if isinstance(resources, Mapping) else {}
    # The API server defaults a missing request to the limit; objects loaded as-is may lack it.
    amounts = {**_amounts(resources.get("limits")), **_amounts(resources.get("requests"))}
    if nonzero:
        amounts.setdefault("cpu", DEFAULT_MILLI_CPU)
        amounts.setdefault("memory", DEFAULT_MEMORY)
    return amounts


def _add(total: dict[str, int], extra: Mapping[str, int]) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount


def _max(total: dict[str, int], other: Mapping[str, int]) -> None:
    for name, amount in other.items():
        if amount > total.get(name, 0):
            total[name] = amount


def pod_requests(spec: Mapping[str, Any], *, nonzero: bool = False) -> dict[str, int]:
    """``resourcehelper.PodRequests`` (1.32, pod-level resources off): see the module doc."""
    total: dict[str, int] = {}
    for container in spec.get("containers") or ():
        _add(total, _container_requests(container, nonzero=nonzero))
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for container in spec.get("initContainers") or ():
        own = _container_requests(container, nonzero=nonzero)
        if isinstance(container, Mapping) and container.get("restartPolicy") == "Always":
            _add(total, own)
            _add(sidecars, own)
            _max(init_peak, sidecars)
        else:
            running = dict(sidecars)
            _add(running, own)
            _max(init_peak, running)
    _max(total, init_peak)
    if not nonzero:
        _add(total, _amounts(spec.get("overhead")))
    return total


def _prefilter_names(terms: Sequence[Any]) -> frozenset[str] | None:
    """NodeAffinity's PreFilter: a node set only when every term pins ``metadata.name In``."""
    names: set[str] = set()
    for term in terms:
        pinned: set[str] | None = None
        for req in (term.get("matchFields") if isinstance(term, Mapping) else None) or ():
            pins = isinstance(req, Mapping) and req.get("key") == "metadata.name"
            if pins and req.get("operator") == "In":
                values = {str(v) for v in req.get("values") or ()}
                pinned = values if pinned is None else pinned & values
        if pinned is None:
            return None
        names |= pinned
    return frozenset(names)


def pod_info(pod: Mapping[str, Any]) -> PodInfo:
    """Read a pod once into what the filters and scores need."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    requests = pod_requests(spec)
    nonzero = pod_requests(spec, nonzero=True)
    overhead = _amounts(spec.get("overhead"))
    tolerations = tuple(t for t in spec.get("tolerations") or () if isinstance(t, Mapping))
    node_selector = spec.get("nodeSelector") or {}
    affinity = ((spec.get("affinity") or {}).get("nodeAffinity")) or {}
    required = affinity.get(_REQUIRED)
    raw_terms = list((required or {}).get("nodeSelectorTerms") or ()) if required else []
    terms: tuple[_Term, ...] | None = None
    if required is not None:
        terms = tuple(t for t in (_term(raw) for raw in raw_terms) if t is not None)
    selector = None
    if node_selector or terms is not None:
        selector = NodeSelector(tuple(sorted(node_selector.items())), terms)
    weighted = [
        (int(i.get("weight") or 0), _term(i.get("preference")))
        for i in affinity.get(_PREFERRED) or ()
    ]
    preferred = [(weight, term) for weight, term in weighted if term is not None]
    started = parse_time(status.get("startTime")) or parse_time(meta.get("creationTimestamp"))
    marks = {(c.get("type"), c.get("reason")) for c in status.get("conditions") or () if c}
    return PodInfo(
        uid=str(meta.get("uid") or ""),
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        priority=int(spec.get("priority") or 0),
        preempt_never=spec.get("preemptionPolicy") == "Never",
        cpu=requests.pop("cpu", 0),
        memory=requests.pop("memory", 0),
        ephemeral=requests.pop("ephemeral-storage", 0),
        scalar={k: v for k, v in requests.items() if k not in _FIXED and v},
        nonzero_cpu=nonzero.get("cpu", 0) + overhead.get("cpu", 0),
        nonzero_memory=nonzero.get("memory", 0) + overhead.get("memory", 0),
        tolerations=tolerations,
        node_name=str(spec.get("nodeName") or ""),
        selector=selector,
        node_names=_prefilter_names(raw_terms) if raw_terms else None,
        preferred=tuple(preferred),
        placement=(repr(tolerations), selector, str(spec.get("nodeName") or "")),
        labels=dict(meta.get("labels") or {}),
        start=started.timestamp() if started is not None else 0.0,
        terminating=bool(meta.get("deletionTimestamp")),
        preempted=("DisruptionTarget", "PreemptionByScheduler") in marks,
    )


# -- nodes ------------------------------------------------------------------------------------


@dataclass(slots=True)
class NodeInfo:
    """The scheduler cache's view of one node and the pods bound to it."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    """``NoSchedule`` and ``NoExecute`` taints, in node order (what the filter reads)."""
    soft_taints: tuple[Mapping[str, Any], ...] = ()
    """``PreferNoSchedule`` taints (what the score reads)."""
    unschedulable: bool = False
    alloc_cpu: int = 0
    alloc_memory: int = 0
    alloc_ephemeral: int = 0
    alloc_pods: int = 0
    alloc_scalar: dict[str, int] = field(default_factory=dict)
    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    scalar: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = 0
    nonzero_memory: int = 0
    pods: dict[str, PodInfo] = field(default_factory=dict)
    exists: bool = False
    """False for a node only known from pods bound to it (not counted, never a candidate)."""
    version: int = 0
    """Bumped whenever requests or allocatable change (keys cached scores)."""
    open_slots: int = -1
    """Pods it may still take if it has no blocking taint or cordon, else -1 (a fast path)."""
    free_cpu: int = 0
    free_memory: int = 0
    free_ephemeral: int = 0

    def add_pod(self, pod: PodInfo) -> None:
        if pod.uid in self.pods:
            return
        self.pods[pod.uid] = pod
        self._account(pod, 1)

    def remove_pod(self, uid: str) -> PodInfo | None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            self._account(pod, -1)
        return pod

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.version += 1
        self.cpu += sign * pod.cpu
        self.memory += sign * pod.memory
        self.ephemeral += sign * pod.ephemeral
        self.nonzero_cpu += sign * pod.nonzero_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        for name, amount in pod.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * amount
        self._room()

    def _room(self) -> None:
        self.free_cpu = self.alloc_cpu - self.cpu
        self.free_memory = self.alloc_memory - self.memory
        self.free_ephemeral = self.alloc_ephemeral - self.ephemeral
        closed = self.taints or self.unschedulable
        self.open_slots = -1 if closed else self.alloc_pods - len(self.pods)

    def set_node(self, node: Mapping[str, Any]) -> None:
        """Take the node's scheduling-relevant fields (labels, taints, cordon, allocatable)."""
        spec = node.get("spec") or {}
        taints = [t for t in spec.get("taints") or () if isinstance(t, Mapping)]
        self.labels = dict((node.get("metadata") or {}).get("labels") or {})
        self.taints = tuple(t for t in taints if t.get("effect") in _BLOCKING)
        self.soft_taints = tuple(t for t in taints if t.get("effect") == "PreferNoSchedule")
        self.unschedulable = bool(spec.get("unschedulable"))
        allocatable = _amounts((node.get("status") or {}).get("allocatable"))
        self.alloc_cpu = allocatable.pop("cpu", 0)
        self.alloc_memory = allocatable.pop("memory", 0)
        self.alloc_ephemeral = allocatable.pop("ephemeral-storage", 0)
        self.alloc_pods = allocatable.pop("pods", 0)
        self.alloc_scalar = {k: v for k, v in allocatable.items() if k not in _FIXED}
        self.exists = True
        self.version += 1
        self._room()

    def signature(self) -> tuple[Any, ...]:
        """What the node-independent filters read (a change re-queues unschedulable pods)."""
        return (self.labels, self.taints, self.unschedulable)


def node_info(node: Mapping[str, Any]) -> NodeInfo:
    info = NodeInfo(str((node.get("metadata") or {}).get("name") or ""))
    info.set_node(node)
    return info


# -- filters ----------------------------------------------------------------------------------


def node_unschedulable(pod: PodInfo, node: NodeInfo) -> Status | None:
    if not node.unschedulable:
        return None
    if any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.tolerations):
        return None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_UNSCHEDULABLE,), NODE_UNSCHEDULABLE)


def node_name(pod: PodInfo, node: NodeInfo) -> Status | None:
    if not pod.node_name or pod.node_name == node.name:
        return None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NODE_NAME,), NODE_NAME)


def taint_toleration(pod: PodInfo, node: NodeInfo) -> Status | None:
    for taint in node.taints:
        if not any(tolerates(t, taint) for t in pod.tolerations):
            reason = untolerated_taint(str(taint.get("key") or ""), str(taint.get("value") or ""))
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,), TAINT_TOLERATION)
    return None


def node_affinity(pod: PodInfo, node: NodeInfo) -> Status | None:
    if pod.selector is None or pod.selector.matches(node.labels, node.name):
        return None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_AFFINITY,), NODE_AFFINITY)


def node_resources_fit(
    pod: PodInfo, node: NodeInfo, *, reserved: Iterable[PodInfo] = ()
) -> Status | None:
    """``fitsRequest``; ``reserved`` are nominated pods of equal or higher priority that the
    framework adds to the node before filtering (``RunFilterPluginsWithNominatedPods``)."""
    count, cpu, memory, ephemeral = len(node.pods), node.cpu, node.memory, node.ephemeral
    scalar = node.scalar
    for other in reserved:
        count += 1
        cpu += other.cpu
        memory += other.memory
        ephemeral += other.ephemeral
        if other.scalar:
            scalar = dict(scalar)
            _add(scalar, other.scalar)
    reasons: list[str] = []
    if count + 1 > node.alloc_pods:
        reasons.append(REASON_TOO_MANY_PODS)
    if pod.cpu > 0 and pod.cpu > node.alloc_cpu - cpu:
        reasons.append("Insufficient cpu")
    if pod.memory > 0 and pod.memory > node.alloc_memory - memory:
        reasons.append("Insufficient memory")
    if pod.ephemeral > 0 and pod.ephemeral > node.alloc_ephemeral - ephemeral:
        reasons.append("Insufficient ephemeral-storage")
    for name in sorted(pod.scalar):
        if pod.scalar[name] > node.alloc_scalar.get(name, 0) - scalar.get(name, 0):
            reasons.append(f"Insufficient {name}")
    if not reasons:
        return None
    return Status(Code.UNSCHEDULABLE, tuple(reasons), NODE_RESOURCES_FIT)


STATIC_FILTERS = (node_unschedulable, node_name, taint_toleration, node_affinity)
"""The filters that read only the node's own fields (cacheable per pod shape and node)."""


def static_filters(pod: PodInfo, node: NodeInfo, *, run_all: bool = False) -> list[Status]:
    """The failing node-independent filters, in profile order (the first only, unless
    ``run_all``)."""
    failed: list[Status] = []
    if not node.unschedulable and not node.taints and pod.selector is None and not pod.node_name:
        return failed
    for plugin in STATIC_FILTERS:
        status = plugin(pod, node)
        if status is not None:
            failed.append(status)
            if not run_all:
                break
    return failed


def run_filters(
    pod: PodInfo, node: NodeInfo, *, run_all: bool = False, reserved: Iterable[PodInfo] = ()
) -> Status | None:
    """``RunFilterPlugins``: the first failing filter's status, or with ``run_all`` (the
    framework's ``runAllFilters``) every failing filter's reasons merged."""
    failed = static_filters(pod, node, run_all=run_all)
    if failed and not run_all:
        return failed[0]
    fit = node_resources_fit(pod, node, reserved=reserved)
    if fit is not None:
        failed.append(fit)
    if not failed:
        return None
    if len(failed) == 1:
        return failed[0]
    code = max(s.code for s in failed)
    return Status(code, tuple(r for s in failed for r in s.reasons), failed[0].plugin)


# -- scores -----------------------------------------------------------------------------------


ScoreCache = dict[tuple[int, int, int, int], dict[str, tuple[int, int]]]
"""Base scores by pod shape and node name, with the node version they were computed at."""


def score(pod: PodInfo, nodes: Sequence[NodeInfo], *, cache: ScoreCache | None = None) -> list[int]:
    """Weighted totals of the modelled score plugins for each feasible node, normalised as the
    plugins' ``NormalizeScore`` do. LeastAllocated: the mean over cpu and memory of
    ``(allocatable - requested) * 100 / allocatable`` with non-zero requests;
    BalancedAllocation: ``(1 - |cpu fraction - memory fraction| / 2) * 100``, fractions of
    allocatable requested with the pod, capped at 1. ``cache`` keeps these two per pod shape
    and node version: a ReplicaSet's identical pods then rescore only the node that changed."""
    totals: list[int] = []
    append = totals.append
    nz_cpu, nz_memory, cpu, memory = pod.nonzero_cpu, pod.nonzero_memory, pod.cpu, pod.memory
    known: dict[str, tuple[int, int]] = {}
    if cache is not None:
        shape = (nz_cpu, nz_memory, cpu, memory)
        known = cache.get(shape) or {}
        if not known:
            if len(cache) > 64:
                cache.clear()
            cache[shape] = known
    soft = False
    for n in nodes:
        hit = known.get(n.name)
        if hit is not None and hit[0] == n.version:
            append(hit[1])
            if n.soft_taints:
                soft = True
            continue
        alloc_cpu, alloc_memory = n.alloc_cpu, n.alloc_memory
        free_cpu = alloc_cpu - n.nonzero_cpu - nz_cpu
        free_memory = alloc_memory - n.nonzero_memory - nz_memory
        least = (free_cpu * _MAX_SCORE // alloc_cpu if free_cpu >= 0 < alloc_cpu else 0) + (
            free_memory * _MAX_SCORE // alloc_memory if free_memory >= 0 < alloc_memory else 0
        )
        balanced = _MAX_SCORE  # with one fraction only, perfectly "balanced"
        if alloc_cpu > 0 and alloc_memory > 0:
            f_cpu = (n.cpu + cpu) / alloc_cpu
            f_memory = (n.memory + memory) / alloc_memory
            gap = (f_cpu if f_cpu < 1.0 else 1.0) - (f_memory if f_memory < 1.0 else 1.0)
            balanced = int((1 - (gap if gap >= 0 else -gap) / 2) * _MAX_SCORE)
        value = least // 2 + balanced
        append(value)
        if cache is not None:
            known[n.name] = (n.version, value)
        if n.soft_taints:
            soft = True
    if not soft and not pod.preferred:
        return totals
    prefer = [
        sum(1 for t in n.soft_taints if not any(tolerates(x, t) for x in pod.tolerations))
        for n in nodes
    ]
    worst = max(prefer, default=0)
    if worst:
        for i, count in enumerate(prefer):
            totals[i] += 3 * (_MAX_SCORE - count * _MAX_SCORE // worst)
    if pod.preferred:
        raw = [sum(w for w, term in pod.preferred if term.matches(n.labels, n.name)) for n in nodes]
        best = max(raw, default=0)
        if best:
            for i, value in enumerate(raw):
                totals[i] += 2 * (value * _MAX_SCORE // best)
    return totals
