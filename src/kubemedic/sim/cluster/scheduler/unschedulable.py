"""What becomes of a pod that fits nowhere: the FitError text, the status patch, preemption's
dry run and the queue that parks the pod until something changes. All pure.

Every filter plugin answers for one node with a *status*: a code and one or more reasons.
``Unschedulable`` means evicting pods might help (only NodeResourcesFit says this among the
plugins modelled here, in 1.32 even when the pod is bigger than the node's allocatable: the
``UnschedulableAndUnresolvable`` answer for that case came later, kubernetes#131345), while
``UnschedulableAndUnresolvable`` means preemption cannot help (taints, node affinity, cordons).

When no node passes, the scheduler writes ``FitError.Error()``
(``pkg/scheduler/framework/types.go``, Kubernetes 1.32) verbatim into the pod's
``PodScheduled=False`` condition and its ``FailedScheduling`` event::

    0/<N> nodes are available: <histogram>.[ <postfilter>]

- ``<N>`` counts every node in the scheduler's snapshot;
- the histogram counts each *reason* over the nodes' statuses (a node that lacks both CPU and
  memory counts once under each), adds the PreFilter's "absent nodes" status for nodes that were
  never filtered, formats every entry ``"<count> <reason>"`` and sorts them **as strings**
  (``sort.Strings``), so ``"14 node(s)…"`` < ``"23 Insufficient cpu"`` < ``"6 node(s)…"``;
- a PreFilter rejection replaces the histogram by its own message;
- ``<postfilter>`` is what DefaultPreemption said, appended with ``" %v"`` (1.32; older
  releases used ``" %v."`` and printed ``..``): ``preemption: `` followed by a second FitError
  over the nodes it tried, e.g. ``preemption: 0/3 nodes are available: 1 No preemption victims
  found for incoming pod, 2 Preemption is not helpful for scheduling.``, or why the pod may not
  preempt (``preemption: not eligible due to preemptionPolicy=Never.``). When preemption picked a
  node (victims are being deleted) the postfix is empty.

Events carry at most 1024 bytes of note (``validation.NoteLengthLimit``): the scheduler cuts
longer messages and ends them with ``" ..."``; the pod condition keeps the whole text, written by
``updatePod`` as a two-way strategic merge patch of the status (``condition_patch``).

DefaultPreemption's dry run (``pkg/scheduler/framework/preemption``, ``default_preemption.go``)
is here too, since what it finds decides the postfix: ``select_victims`` removes a node's
lower-priority pods, checks the pod then fits, and gives back as many as it can (pods whose
eviction would break a PodDisruptionBudget first, most important first); ``pick_candidate``
chooses among the nodes where that worked.

And the queue a pod waits in between attempts (``pkg/scheduler/internal/queue``): ``activeQ``
ordered by priority then queueing time; the *unschedulable* pods, parked until a cluster event
that may help them (or 5 minutes, ``podMaxInUnschedulablePodsDuration``); ``backoffQ``, where a
moved pod serves its backoff first (1 s doubling per attempt up to 10 s). The queue is pure: the
caller passes the time.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubemedic.sim.cluster.scheduler.filtering import PodInfo
from kubemedic.sim.cluster.scheduler.framework import (
    Code,
    Diagnosis,
    Status,
)
from kubemedic.sim.machinery.selecting import LabelSelector

__all__ = [
    "NOTE_LENGTH_LIMIT",
    "NOT_ELIGIBLE_NEVER",
    "NOT_ELIGIBLE_TERMINATING",
    "NO_NODES_AVAILABLE",
    "NO_PREEMPTION_VICTIMS",
    "PREEMPTION_NOT_HELPFUL",
    "Budget",
    "Candidate",
    "QueuedPod",
    "SchedulingQueue",
    "absent_plugins_reason",
    "budgets",
    "condition_patch",
    "dry_run",
    "fit_error",
    "histogram",
    "pick_candidate",
    "preemption_condition",
    "preemption_postfix",
    "select_victims",
    "truncate_note",
]

NO_NODES_AVAILABLE = "no nodes available to schedule pods"
"""``ErrNoNodesAvailable``: the snapshot holds no node at all (written as the whole message)."""

PREEMPTION_NOT_HELPFUL = "Preemption is not helpful for scheduling"
"""The preemption FitError's status for nodes it did not try (their filters were unresolvable)."""

NO_PREEMPTION_VICTIMS = "No preemption victims found for incoming pod"
"""``SelectVictimsOnNode``: the node has no pod of lower priority than the incoming pod."""

NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."

NOTE_LENGTH_LIMIT = 1024
"""Bytes of an events.k8s.io note (``validation.NoteLengthLimit``)."""

_CUT_SUFFIX = " ..."


def absent_plugins_reason(plugins: Iterable[str]) -> str:
    """The status of nodes a PreFilter result left out: ``node(s) didn't satisfy plugin(s)
    [NodeAffinity]`` (``sets.List`` sorted, printed as a Go slice)."""
    return f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"


def histogram(nodes_total: int, diagnosis: Diagnosis) -> dict[str, int]:
    """Reason -> number of nodes giving it, absent nodes included (as ``FitError.Error``)."""
    counts: dict[str, int] = {}
    for status in diagnosis.statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    missing = nodes_total - len(diagnosis.statuses)
    if missing > 0 and diagnosis.absent is not None:
        for reason in diagnosis.absent.reasons:
            counts[reason] = counts.get(reason, 0) + missing
    return counts


def fit_error(nodes_total: int, diagnosis: Diagnosis) -> str:
    """``FitError.Error()`` of Kubernetes 1.32, byte for byte.

    Python's ``sorted`` on ``str`` orders by code point, the byte order of UTF-8 that Go's
    ``sort.Strings`` uses, so the histogram comes out in the scheduler's order.
    """
    message = f"0/{nodes_total} nodes are available:"
    if diagnosis.prefilter_msg:
        message += f" {diagnosis.prefilter_msg}."
    else:
        items = sorted(f"{n} {reason}" for reason, n in histogram(nodes_total, diagnosis).items())
        if items:
            message += f" {', '.join(items)}."
    if diagnosis.postfilter_msg:
        message += f" {diagnosis.postfilter_msg}"
    return message


def preemption_postfix(
    nodes_total: int, statuses: Mapping[str, Status] | None = None, *, ineligible: str = ""
) -> str:
    """DefaultPreemption's PostFilter message when it found no candidate.

    ``statuses`` are the dry-run verdicts of the nodes it tried (those whose filters said
    ``Unschedulable``); every other node counts as ``Preemption is not helpful for scheduling``.
    ``ineligible`` is ``PodEligibleToPreemptOthers``'s refusal, printed instead.
    """
    if ineligible:
        return f"preemption: {ineligible}"
    tried = Diagnosis(
        statuses=dict(statuses or {}),
        absent=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (PREEMPTION_NOT_HELPFUL,)),
    )
    return f"preemption: {fit_error(nodes_total, tried)}"


def truncate_note(message: str) -> str:
    """``truncateMessage`` in ``schedule_one.go``: at most 1024 bytes, cut ones end ``" ..."``."""
    if len(message) <= NOTE_LENGTH_LIMIT and len(message.encode()) <= NOTE_LENGTH_LIMIT:
        return message
    raw = message.encode()[: NOTE_LENGTH_LIMIT - len(_CUT_SUFFIX)]
    return raw.decode(errors="ignore") + _CUT_SUFFIX


def preemption_condition(scheduler: str) -> dict[str, str]:
    """The ``DisruptionTarget`` condition a preemption victim gets before it is deleted."""
    return {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": f"{scheduler}: preempting to accommodate a higher priority pod",
    }


def condition_patch(
    status: Mapping[str, Any],
    condition: Mapping[str, Any],
    *,
    now: str,
    nominate: str | None = None,
) -> dict[str, Any] | None:
    """The status patch ``podutil.UpdatePodCondition`` + ``PatchPodStatus`` send, or None when
    nothing changed (the condition's ``lastTransitionTime`` moves only with its status;
    ``nominate`` sets ``nominatedNodeName``, ``""`` clears it, None leaves it)."""
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    kind = condition["type"]
    old = next((c for c in conditions if c.get("type") == kind), None)
    new = {"lastProbeTime": None, "lastTransitionTime": now, **condition}
    patch: dict[str, Any] = {}
    order = [{"type": c.get("type")} for c in conditions]
    if old is None:
        patch["conditions"] = [new]
        order.append({"type": kind})
    else:
        if old.get("status") == new.get("status"):
            new["lastTransitionTime"] = old.get("lastTransitionTime")
        changed = {k: v for k, v in new.items() if old.get(k) != v}
        if changed:
            patch["conditions"] = [{"type": kind, **changed}]
    if "conditions" in patch:
        patch["$setElementOrder/conditions"] = order
    if nominate is not None and (status.get("nominatedNodeName") or "") != nominate:
        patch["nominatedNodeName"] = nominate or None
    return {"status": patch} if patch else None


# -- preemption (DefaultPreemption's dry run) -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Budget:
    """A PodDisruptionBudget as preemption reads it."""

    namespace: str
    matches: Callable[[Mapping[str, str]], bool]
    allowed: int
    disrupted: frozenset[str] = frozenset()


def budgets(pdbs: Iterable[Mapping[str, Any]]) -> list[Budget]:
    """Budgets from PDB objects (a nil or empty selector matches no pod: no budget)."""
    out: list[Budget] = []
    for pdb in pdbs:
        raw = (pdb.get("spec") or {}).get("selector")
        selector = LabelSelector.from_object(raw) if raw else None
        if selector is None or selector.empty:
            continue
        matches = selector.matches
        status = pdb.get("status") or {}
        out.append(
            Budget(
                namespace=str((pdb.get("metadata") or {}).get("namespace") or ""),
                matches=matches,
                allowed=int(status.get("disruptionsAllowed") or 0),
                disrupted=frozenset(status.get("disruptedPods") or {}),
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where evicting ``victims`` (most important first) lets the pod fit."""

    node: str
    victims: tuple[PodInfo, ...]
    violations: int


def _importance(pod: PodInfo) -> tuple[int, float]:
    """``MoreImportantPod``: higher priority first, then the pod that started earlier."""
    return (-pod.priority, pod.start)


def _split_by_budget(
    pods: Sequence[PodInfo], budgets: Sequence[Budget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """``filterPodsWithPDBViolation``: pods whose eviction would break a budget, and the rest."""
    allowed = [b.allowed for b in budgets]
    violating: list[PodInfo] = []
    fine: list[PodInfo] = []
    for pod in pods:
        broken = False
        for i, budget in enumerate(budgets):
            if not pod.labels or budget.namespace != pod.namespace:
                continue
            if not budget.matches(pod.labels) or pod.name in budget.disrupted:
                continue
            allowed[i] -= 1
            broken = broken or allowed[i] < 0
        (violating if broken else fine).append(pod)
    return violating, fine


def select_victims(
    node: str,
    priority: int,
    pods: Iterable[PodInfo],
    *,
    fits_without: Callable[[Sequence[PodInfo]], Status | None],
    budgets: Sequence[Budget] = (),
) -> Candidate | Status:
    """``SelectVictimsOnNode`` for a pod of ``priority`` on a node holding ``pods``.

    ``fits_without(removed)`` runs the filters as if ``removed`` were gone from the node (None:
    the pod fits). Returns the candidate, or the status that keeps the node unsuitable."""
    lower = sorted((p for p in pods if p.priority < priority), key=_importance)
    if not lower:
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (NO_PREEMPTION_VICTIMS,))
    status = fits_without(lower)
    if status is not None:
        return status
    violating, fine = _split_by_budget(lower, budgets)
    removed = list(lower)
    victims: list[PodInfo] = []
    violations = 0
    for group, breaks in ((violating, True), (fine, False)):
        for pod in group:
            removed.remove(pod)
            if fits_without(removed) is not None:
                removed.append(pod)
                victims.append(pod)
                violations += int(breaks)
    victims.sort(key=_importance)
    return Candidate(node, tuple(victims), violations)


def dry_run(
    nodes: Sequence[tuple[str, Iterable[PodInfo], Callable[[Sequence[PodInfo]], Status | None]]],
    priority: int,
    *,
    budgets: Sequence[Budget] = (),
    offset: int = 0,
) -> tuple[list[Candidate], dict[str, Status]]:
    """``DryRunPreemption`` over the nodes whose filters said ``Unschedulable`` (name, pods,
    ``fits_without``), from ``offset`` round, stopping once ``GetOffsetAndNumCandidates``'s
    number of candidates (10% of the nodes, at least 100) is found; also the statuses of the
    nodes where preemption would not help (they make the postfix)."""
    wanted = min(len(nodes), max(100, len(nodes) // 10))
    candidates: list[Candidate] = []
    statuses: dict[str, Status] = {}
    for i in range(len(nodes)):
        name, pods, fits_without = nodes[(offset + i) % len(nodes)]
        outcome = select_victims(name, priority, pods, fits_without=fits_without, budgets=budgets)
        if isinstance(outcome, Status):
            statuses[name] = outcome
        else:
            candidates.append(outcome)
            if len(candidates) >= wanted:
                break
    return candidates, statuses


def pick_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """``pickOneNodeForPreemption``: fewest budget violations, then the lowest highest-priority
    victim, the smallest sum of priorities, the fewest victims, the latest start among the
    highest-priority victims; remaining ties go to the first."""

    def key(c: Candidate) -> tuple[int, int, int, int, float]:
        top = c.victims[0].priority if c.victims else -(2**31)
        total = sum(v.priority + 2**31 for v in c.victims)
        earliest = min((v.start for v in c.victims if v.priority == top), default=0.0)
        return (c.violations, top, total, len(c.victims), -earliest)

    return min(candidates, key=key)


# -- the scheduling queue ---------------------------------------------------------------------


@dataclass(eq=False)
class QueuedPod:
    """``QueuedPodInfo``: a pending pod and its place in the queue."""

    uid: str
    namespace: str
    name: str
    info: PodInfo
    timestamp: float
    attempts: int = 0
    where: str = ""
    """``active``, ``backoff``, ``unschedulable``, or empty while being scheduled."""
    seq: int = 0
    plugins: frozenset[str] = frozenset()
    """The plugins that rejected it last time (which events may help)."""
    moves_at_pop: int = 0


class SchedulingQueue:
    """``PriorityQueue``: activeQ, backoffQ and the unschedulable pods."""

    def __init__(
        self,
        *,
        initial_backoff: float = 1.0,
        max_backoff: float = 10.0,
        max_unschedulable: float = 300.0,
    ) -> None:
        self.initial_backoff = initial_backoff
        self.max_backoff = max_backoff
        self.max_unschedulable = max_unschedulable
        self.pods: dict[str, QueuedPod] = {}
        self.parked: dict[str, QueuedPod] = {}
        self.moves = 0
        """Cluster events seen (a pod that saw one while in flight retries after backoff)."""
        self._active: list[tuple[int, float, int, str]] = []
        self._backoff: list[tuple[float, int, str]] = []
        self._seq = 0
        self._pending: set[str] | None = None
        self._everything = False

    def __len__(self) -> int:
        return len(self.pods)

    def add(self, pod: QueuedPod) -> None:
        self.pods[pod.uid] = pod
        self._to_active(pod)

    def remove(self, uid: str) -> None:
        pod = self.pods.pop(uid, None)
        if pod is not None:
            pod.where = ""
            self.parked.pop(uid, None)

    def _to_active(self, pod: QueuedPod) -> None:
        self._seq += 1
        pod.where, pod.seq = "active", self._seq
        heapq.heappush(self._active, (-pod.info.priority, pod.timestamp, pod.seq, pod.uid))

    def backoff_until(self, pod: QueuedPod) -> float:
        """``calculateBackoffDuration`` after the pod's last failure."""
        if pod.attempts == 0:
            return pod.timestamp
        delay = self.initial_backoff * float(1 << min(pod.attempts - 1, 30))
        return pod.timestamp + min(delay, self.max_backoff)

    def requeue(self, pod: QueuedPod, now: float) -> None:
        """Leave the unschedulable pods: to backoffQ while backing off, else activeQ."""
        self.parked.pop(pod.uid, None)
        until = self.backoff_until(pod)
        if until <= now:
            self._to_active(pod)
            return
        self._seq += 1
        pod.where, pod.seq = "backoff", self._seq
        heapq.heappush(self._backoff, (until, pod.seq, pod.uid))

    def park(self, pod: QueuedPod, plugins: frozenset[str], now: float, *, error: bool) -> None:
        """``AddUnschedulableIfNotPresent`` after a failed attempt."""
        if pod.uid not in self.pods:
            return
        pod.timestamp, pod.plugins = now, plugins
        self.parked[pod.uid] = pod
        pod.where = "unschedulable"
        if error or self.moves != pod.moves_at_pop:
            self.requeue(pod, now)

    def move(self, plugins: frozenset[str] | None) -> None:
        """A cluster event: parked pods whose rejectors care about it (any, for None) move at
        the next ``apply_moves`` (``MoveAllToActiveOrBackoffQueue``)."""
        self.moves += 1
        if not self.parked:
            return
        if plugins is None:
            self._everything = True
        else:
            self._pending = (self._pending or set()) | plugins

    def apply_moves(self, now: float) -> None:
        everything, plugins = self._everything, self._pending
        self._everything, self._pending = False, None
        if not everything and not plugins:
            return
        for pod in list(self.parked.values()):
            if everything or not pod.plugins or (plugins and pod.plugins & plugins):
                self.requeue(pod, now)

    def flush_leftover(self, now: float) -> None:
        """``flushUnschedulablePodsLeftover``: retry pods parked for too long."""
        for pod in list(self.parked.values()):
            if now - pod.timestamp > self.max_unschedulable:
                self.requeue(pod, now)

    def pop(self, now: float) -> QueuedPod | None:
        """The next pod to schedule (backoffQ flushed first), marked in flight."""
        while self._backoff and self._backoff[0][0] <= now:
            _, seq, uid = heapq.heappop(self._backoff)
            pod = self.pods.get(uid)
            if pod is not None and pod.seq == seq and pod.where == "backoff":
                self._to_active(pod)
        while self._active:
            _, _, seq, uid = heapq.heappop(self._active)
            pod = self.pods.get(uid)
            if pod is not None and pod.seq == seq and pod.where == "active":
                pod.where = ""
                pod.attempts += 1
                pod.moves_at_pop = self.moves
                return pod
        return None

    def ready(self, now: float) -> bool:
        """Whether ``pop`` would return a pod now."""
        return bool(self._active) or bool(self._backoff and self._backoff[0][0] <= now)

    def next_backoff(self) -> float | None:
        return self._backoff[0][0] if self._backoff else None
