"""Grouping finding episodes and signals into incidents, and linking incidents (pure).

The rule, applied to each cluster separately:

1. **Symptoms and conditions.** Findings of ``causes.CONDITION_CHECKS`` (an overcommitted node, a
   memory hog beside critical pods, an under-requested critical pod, a pinned ``nodeName``, a
   hand edit) are standing *conditions*; every other finding (an eviction, an OOM kill, pending
   pods, a NotReady node, a failed-pod storm, a node scale-up burst...) is a *symptom*. Only
   symptoms make an incident happen; conditions explain them.
2. **A cause for each symptom.** A symptom is attributed to the condition, active within
   ``window`` of it, that explains it best (``causes.root_score``: e.g. a memory eviction on a node
   where a memory hog sits), and takes that condition's *incident cause*
   (``causes.incident_cause``: the hog and the overcommit of one workload on one pool are one
   cause). A symptom no condition explains may follow another symptom near it
   (``causes.follow_score``: the hub pending after its eviction, Dask workers pending while the
   autoscaler adds the nodes they asked for) and takes that symptom's cause from step 2; else
   its own cause is the incident cause. Ties go to the higher score, then the smaller cause.
3. **Incidents.** Symptoms with the same incident cause form one incident while each starts
   within ``window`` (30 minutes) of the end of the ones before; a longer quiet gap starts a new
   incident (two evictions a day apart are two incidents, linked by their cause).
4. **Conditions join.** A leading condition joins every incident within ``window`` of it whose
   cause is its own, or whose workloads include its culprit on one of its nodes, for the same
   resource (the memory overcommit a pinned Deployment causes on its node). Leading conditions
   that joined nothing become *risk* incidents, grouped the same way. Then conditions about a
   victim (an under-requested critical pod) join every incident that harmed or threatens that
   workload; the rest are risks too.
5. **Signals join.** An archived signal within ``window`` of an incident joins it when it is
   about what the incident's findings name: an eviction of an evicted workload or on a node
   under the incident's memory pressure; an OOM kill of an OOM-killed workload or on such a
   node, and a node's own OOM report on such a node; a ``FailedScheduling`` event of a pending
   workload; a NotReady or pressure transition of one of its nodes; an admission rejection of
   a storming workload; any other event about a workload it harmed or blames, or on a node it
   happened on (a risk takes no such events). Signals never make incidents on their own
   (findings are the assessment; signals are the record of what happened), but they say when
   a symptom was active: runs of a symptom's own signals more than ``window`` apart are
   separate occurrences (evictions on two days under one long ``evicted`` episode), and a
   symptom with no signals is active when its evidence says (event and termination times),
   else over its episode.

**Ids** are ``inc-`` and eight hex digits of SHA-256 over the cluster, the incident cause and
the start of its first member (a symptom's first occurrence; a risk's first condition): the same
archive gives the same ids whatever the order of its rows, and rows about other incidents never
change an incident's id.

**Related incidents** share part of their cause (``causes.parse_cause``: its pool or its
culprit workload) in the same cluster, or all of it in another cluster; the reason names what is
shared ("same cause: shared core node pool, Prometheus"). ``linking`` finds them.

**Cost.** Nothing here tries every pair: symptoms, conditions, signals and drafts are filed by
what a match must share (a node, a workload, a cause...) and by time (``indexing.Near``), and
each exact rule above is applied to the few candidates that can pass it, so grouping grows with
the archive, not with its square. ``tests/incidents/test_grouping_equivalence.py`` holds the
rules applied pair by pair and checks both give the same incidents.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import TypeVar

from kubemedic.incidents import advising, causes, describing
from kubemedic.incidents.indexing import Near
from kubemedic.incidents.linking import link
from kubemedic.incidents.members import Draft, Member
from kubemedic.incidents.model import FindingEpisode, Incident, Signal, SignalKind
from kubemedic.model import objects

__all__ = ["DEFAULT_WINDOW", "group", "incident_id", "link"]

DEFAULT_WINDOW = timedelta(minutes=30)

_T = TypeVar("_T")


def incident_id(cluster: str, cause: str, start: datetime) -> str:
    """``inc-`` + 8 hex digits of SHA-256 over cluster, incident cause and start (UTC seconds)."""
    text = f"{cluster}\n{cause}\n{objects.format_time(start)}"
    return "inc-" + hashlib.sha256(text.encode()).hexdigest()[:8]


def group(
    episodes: Sequence[FindingEpisode],
    signals: Sequence[Signal] = (),
    *,
    window: timedelta = DEFAULT_WINDOW,
    linked: bool = True,
) -> list[Incident]:
    """Incidents of ``episodes`` and ``signals`` (see the module docstring), oldest first,
    with their related incidents linked (``linked=False``: left empty, for a caller that asks
    ``linking.Links`` for the few it shows)."""
    episodes_by_cluster: dict[str, list[FindingEpisode]] = defaultdict(list)
    for episode in episodes:
        episodes_by_cluster[episode.cluster].append(episode)
    signals_by_cluster: dict[str, list[Signal]] = defaultdict(list)
    for signal in signals:
        signals_by_cluster[signal.cluster].append(signal)
    built: list[Incident] = []
    for cluster in sorted(episodes_by_cluster):
        ordered = sorted(signals_by_cluster[cluster], key=lambda s: s.order)
        drafts = _drafts(episodes_by_cluster[cluster], ordered, cluster=cluster, window=window)
        _attach_signals(drafts, ordered, window)
        built.extend(_build(draft) for draft in drafts)
    built.sort(key=lambda incident: (incident.start, incident.cluster, incident.id))
    return link(built) if linked else built


def _near(a: tuple[datetime, datetime], b: tuple[datetime, datetime], window: timedelta) -> bool:
    return a[0] <= b[1] + window and b[0] <= a[1] + window


def _span(member: Member) -> tuple[datetime, datetime]:
    return (member.first, member.last)


def _drafts(
    episodes: Sequence[FindingEpisode],
    signals: Sequence[Signal],
    *,
    cluster: str,
    window: timedelta,
) -> list[Draft]:
    members: list[Member] = []
    for episode in sorted(episodes, key=lambda e: e.order):
        facts = causes.facts_of(episode)
        if facts is not None:
            members.append(Member.of(episode, facts))
    shown = _Shown(signals)
    symptoms = [
        occurrence
        for member in members
        if not member.facts.condition
        for occurrence in _occurrences(member, shown, window=window)
    ]
    roots: Near[Member] = Near(window)
    for member in members:
        if member.facts.root:
            roots.add(member, _root_keys(member.facts), member.first, member.last)

    # Step 2: a cause for each symptom, from a condition, else from another symptom.
    first_pass: dict[int, tuple[str, int, str]] = {}
    for index, symptom in enumerate(symptoms):
        keys = _root_keys(symptom.facts)
        for least, kinds in _ROOT_TIERS:
            near = roots.near([key for key in keys if key[0] in kinds], symptom.first, symptom.last)
            first_pass[index] = _best(
                symptom,
                [roots.items[position] for position in near],
                score=causes.root_score,
                window=window,
                cause_of=lambda m: m.facts.incident_cause,
            )
            if first_pass[index][1] >= least:
                break
    first_cause = {id(s): first_pass[i][0] for i, s in enumerate(symptoms)}
    followed: Near[Member] = Near(window)
    for symptom in symptoms:
        followed.add(symptom, _follow_keys(symptom.facts, led=True), symptom.first, symptom.last)
    assigned: dict[int, tuple[str, int, str]] = {}
    for index, symptom in enumerate(symptoms):
        chosen = first_pass[index]
        if chosen[1] == 0:
            near = followed.near(_follow_keys(symptom.facts), symptom.first, symptom.last)
            follow = _best(
                symptom,
                [followed.items[position] for position in near],
                score=causes.follow_score,
                window=window,
                cause_of=lambda m: first_cause[id(m)],
            )
            if follow[1] > 0:
                chosen = follow
        assigned[index] = chosen

    # Step 3: incidents per cause and stretch of time.
    by_cause: dict[str, list[tuple[Member, tuple[str, int, str]]]] = defaultdict(list)
    for index, symptom in enumerate(symptoms):
        by_cause[assigned[index][0]].append((symptom, assigned[index]))
    drafts: list[Draft] = []
    for cause in sorted(by_cause):
        for run in _runs(by_cause[cause], window=window, span=lambda item: _span(item[0])):
            draft = Draft(cluster=cluster, cause=cause)
            for symptom, (_, score, how) in run:
                draft.symptoms.append(symptom)
                draft.ties.append((symptom.facts.check, score, how))
            drafts.append(draft)

    # Step 4: conditions join, leading ones first; the rest become risks.
    leading = [m for m in members if m.facts.primary]
    victims = [m for m in members if m.facts.condition and not m.facts.primary]
    drafts.extend(_join_conditions(drafts, leading, cluster=cluster, window=window, lead=True))
    drafts.extend(_join_conditions(drafts, victims, cluster=cluster, window=window, lead=False))
    return drafts


def _root_keys(facts: causes.Facts) -> list[tuple[str, str]]:
    """What a symptom and a condition explaining it share, one at least
    (``causes.root_score`` is 0 without one): the cause, a node, a pool or a workload."""
    return [
        ("cause", facts.incident_cause),
        *(("node", node) for node in facts.nodes),
        *(("pool", pool) for pool in facts.pools),
        *(("culprit", workload) for workload in facts.culprits),
        *(("victim", workload) for workload in facts.victims),
    ]


_ROOT_TIERS = (
    (4, frozenset({"cause"})),
    (3, frozenset({"cause", "node"})),
    (0, frozenset({"cause", "node", "pool", "culprit", "victim"})),
)
"""Which of ``_root_keys`` a condition scoring at least so much must share with the symptom
(``causes.root_score``: 4 only for the same cause, 3 only on a shared node): a symptom whose
best among those reaches the score needs no wider look, as nothing outside can tie or beat
it. Most evictions meet their node's condition in the first two."""


def _follow_keys(facts: causes.Facts, *, led: bool = False) -> list[tuple[str, str]]:
    """What a symptom and one it follows share (``causes.follow_score`` is 0 without it): a
    victim or a node, or, for pending pods, being a node scale-up burst (``led``: the keys a
    symptom is filed under, to be followed)."""
    keys = [
        *(("victim", workload) for workload in facts.victims),
        *(("node", node) for node in facts.nodes),
    ]
    family = facts.cause.family
    if (family == "node-scale-burst") if led else (family == "unschedulable"):
        keys.append(("family", "node-scale-burst"))
    return keys


_OCCURRING = {
    "evicted": SignalKind.EVICTION,
    "oom-killed": SignalKind.OOM_KILL,
    "unschedulable-pods": SignalKind.POD_PENDING,
    "failed-pod-storm": SignalKind.FAILED_POD,
}
"""Symptom checks whose activity the archive records signal by signal."""


def _shows(facts: causes.Facts, signal: Signal) -> bool:
    node_level = facts.check == "oom-killed" and facts.cause.subject == "node"
    wanted = SignalKind.NODE_OOM if node_level else _OCCURRING.get(facts.check)
    if signal.kind is not wanted:
        return False
    if signal.workload and signal.workload in facts.victims:
        return True
    if signal.pod and signal.pod in facts.pods:
        return True
    return facts.cause.subject == "node" and bool(signal.node) and signal.node in facts.nodes


class _Shown:
    """Signals (in time order) by kind and what they name: a workload, a pod, a node."""

    def __init__(self, signals: Sequence[Signal]) -> None:
        self.signals = signals
        filed: dict[tuple[SignalKind, str, str], list[tuple[datetime, int]]] = defaultdict(list)
        for position, signal in enumerate(signals):
            for name, value in (
                ("workload", signal.workload),
                ("pod", signal.pod),
                ("node", signal.node),
            ):
                if value:
                    filed[(signal.kind, name, value)].append((signal.at, position))
        self._times: dict[tuple[SignalKind, str, str], list[datetime]] = {}
        self._positions: dict[tuple[SignalKind, str, str], list[int]] = {}
        for key, entries in filed.items():
            entries.sort()
            self._times[key] = [at for at, _ in entries]
            self._positions[key] = [position for _, position in entries]

    def between(
        self, keys: Iterable[tuple[SignalKind, str, str]], low: datetime, high: datetime
    ) -> list[Signal]:
        """The signals filed under one of ``keys`` with ``low <= at <= high``, in order."""
        found: set[int] = set()
        for key in keys:
            times = self._times.get(key)
            if times:
                start, stop = bisect.bisect_left(times, low), bisect.bisect_right(times, high)
                found.update(self._positions[key][start:stop])
        return [self.signals[position] for position in sorted(found)]


def _shown_keys(facts: causes.Facts) -> list[tuple[SignalKind, str, str]]:
    """Where the signals ``_shows`` may accept for ``facts`` are filed."""
    node_level = facts.check == "oom-killed" and facts.cause.subject == "node"
    wanted = SignalKind.NODE_OOM if node_level else _OCCURRING.get(facts.check)
    if wanted is None:
        return []
    keys = [(wanted, "workload", workload) for workload in facts.victims]
    keys += [(wanted, "pod", pod) for pod in facts.pods]
    if facts.cause.subject == "node":
        keys += [(wanted, "node", node) for node in facts.nodes]
    return keys


def _occurrences(member: Member, signals: _Shown, *, window: timedelta) -> list[Member]:
    """The spans a symptom was active: runs of its own signals (each run within ``window`` of
    the last), else the times in its evidence, else its episode's scans."""
    evident = causes.activity_span(member.episode)
    first = member.first if evident is None else min(member.first, evident[0])
    if member.facts.check in _OCCURRING:
        shown = [
            s
            for s in signals.between(
                _shown_keys(member.facts), first - window, member.last + window
            )
            if _shows(member.facts, s)
        ]
        if shown:
            runs = _runs(shown, window=window, span=lambda s: (s.at, s.last))
            return [_seen_in(member, run) for run in runs]
    if evident is not None:
        return [replace(member, first=evident[0], last=max(evident[1], evident[0]))]
    return [member]


def _seen_in(member: Member, run: Sequence[Signal]) -> Member:
    """``member`` over the span of ``run``, with the nodes and pods the signals name (where
    the archive saw it happen)."""
    facts = replace(
        member.facts,
        nodes=member.facts.nodes | {s.node for s in run if s.node},
        pods=member.facts.pods | {s.pod for s in run if s.pod},
    )
    return replace(member, facts=facts, first=run[0].at, last=max(s.last for s in run))


def _best(
    symptom: Member,
    candidates: Sequence[Member],
    *,
    score: Callable[[causes.Facts, causes.Facts], int],
    window: timedelta,
    cause_of: Callable[[Member], str],
) -> tuple[str, int, str]:
    """``(cause, score, how)`` of the candidate explaining ``symptom`` best (highest score, then
    smallest cause, then check), or ``symptom``'s own cause with score 0."""
    best: tuple[int, str, str] | None = None
    for candidate in candidates:
        if candidate is symptom or not _near(_span(symptom), _span(candidate), window):
            continue
        value = score(symptom.facts, candidate.facts)
        if value <= 0:
            continue
        key = (-value, cause_of(candidate), candidate.facts.check)
        if best is None or key < best:
            best = key
    if best is None:
        return (symptom.facts.incident_cause, 0, "")
    return (best[1], -best[0], best[2])


def _runs(
    items: Iterable[_T], *, window: timedelta, span: Callable[[_T], tuple[datetime, datetime]]
) -> list[list[_T]]:
    """``items`` in stretches of time: each starts within ``window`` of the end so far."""
    ordered = sorted(items, key=span)
    runs: list[list[_T]] = []
    end: datetime | None = None
    for item in ordered:
        first, last = span(item)
        if end is None or first > end + window:
            runs.append([item])
            end = last
        else:
            runs[-1].append(item)
            end = max(end, last)
    return runs


@dataclass(frozen=True, slots=True)
class _Anchors:
    cause: str
    resources: frozenset[str]
    workloads: frozenset[str]
    victims: frozenset[str]
    nodes: frozenset[str]
    span: tuple[datetime, datetime]


def _anchors(draft: Draft) -> _Anchors:
    facts = list(draft.facts())
    resources = frozenset(f.resource for f in facts if f.resource)
    if draft.family in causes.BLAMING_FAMILIES:
        resources |= {"memory", "cpu"}  # a pin or a storm fills whichever resource runs out
    return _Anchors(
        cause=draft.cause,
        resources=resources,
        workloads=frozenset().union(*(f.workloads for f in facts)),
        victims=frozenset().union(*(f.victims for f in facts)),
        nodes=frozenset().union(*(f.nodes for f in facts)),
        span=draft.span(),
    )


def _joins(condition: causes.Facts, anchors: _Anchors, *, lead: bool) -> bool:
    if lead:
        return condition.incident_cause == anchors.cause or bool(
            condition.culprits & anchors.workloads
            and condition.nodes & anchors.nodes
            and (not condition.resource or condition.resource in anchors.resources)
        )
    return bool(condition.victims & anchors.victims)


def _join_conditions(
    drafts: list[Draft],
    conditions: Sequence[Member],
    *,
    cluster: str,
    window: timedelta,
    lead: bool,
) -> list[Draft]:
    """Add ``conditions`` to the drafts they belong to; return risk drafts for the others."""
    anchors: Near[tuple[Draft, _Anchors]] = Near(window)
    for draft in drafts:
        anchor = _anchors(draft)
        keys = [("cause", anchor.cause)]
        keys += [("workload", workload) for workload in anchor.workloads] if lead else []
        keys += [] if lead else [("victim", workload) for workload in anchor.victims]
        anchors.add((draft, anchor), keys, *anchor.span)
    loose: list[Member] = []
    for condition in conditions:
        joined = False
        facts = condition.facts
        if lead:
            wanted = [("cause", facts.incident_cause)]
            wanted += [("workload", workload) for workload in facts.culprits]
        else:
            wanted = [("victim", workload) for workload in facts.victims]
        for position in anchors.near(wanted, condition.first, condition.last):
            draft, anchor = anchors.items[position]
            if _near(_span(condition), anchor.span, window) and _joins(
                condition.facts, anchor, lead=lead
            ):
                draft.conditions.append(condition)
                joined = True
        if not joined:
            loose.append(condition)
    risks: list[Draft] = []
    by_cause: dict[str, list[Member]] = defaultdict(list)
    for condition in loose:
        by_cause[condition.facts.incident_cause].append(condition)
    for cause in sorted(by_cause):
        for run in _runs(by_cause[cause], window=window, span=_span):
            risks.append(Draft(cluster=cluster, cause=cause, conditions=list(run)))
    return risks


# -- signals -----------------------------------------------------------------------------------

_POD_KINDS = {
    SignalKind.EVICTION: "evicted",
    SignalKind.OOM_KILL: "oom-killed",
    SignalKind.POD_PENDING: "unschedulable-pods",
    SignalKind.FAILED_POD: "failed-pod-storm",
}


_Keys = dict[str, tuple[frozenset[str], frozenset[str]]]


def _signal_keys(draft: Draft) -> _Keys:
    """Per signal kind, the workloads and nodes a signal must name to join ``draft``."""
    facts = list(draft.facts())

    def union(values: Iterable[frozenset[str]]) -> frozenset[str]:
        return frozenset().union(*values)

    memory_nodes = union(f.nodes for f in facts if f.resource == "memory")
    keys: _Keys = {}
    for kind, check in _POD_KINDS.items():
        workloads = union(f.victims | f.culprits for f in facts if f.check == check)
        if kind is SignalKind.FAILED_POD:
            workloads |= union(f.culprits for f in facts if f.cause.family == "pinned-node-name")
        nodes = memory_nodes if kind in (SignalKind.EVICTION, SignalKind.OOM_KILL) else frozenset()
        keys[kind.value] = (workloads, nodes)
    keys[SignalKind.NODE_OOM.value] = (frozenset(), memory_nodes)
    not_ready = union(f.nodes for f in facts if f.cause.family == "node-not-ready")
    keys[SignalKind.NODE_NOT_READY.value] = (frozenset(), not_ready)
    keys[SignalKind.NODE_PRESSURE.value] = (frozenset(), memory_nodes | not_ready)
    # Other events only tell the story of something that happened: about the workloads it
    # harmed or blames and the nodes it happened on, never about a risk's bystanders.
    if draft.symptoms:
        leading = [m.facts for m in draft.symptoms] + [
            m.facts for m in draft.conditions if m.facts.primary
        ]
        harmed = union(f.victims for f in (m.facts for m in draft.symptoms))
        keys[SignalKind.EVENT.value] = (
            harmed | union(f.culprits for f in leading),
            union(f.nodes for f in leading),
        )
    else:
        keys[SignalKind.EVENT.value] = (frozenset(), frozenset())
    return keys


def _attach_signals(drafts: list[Draft], signals: Sequence[Signal], window: timedelta) -> None:
    prepared: Near[tuple[Draft, tuple[datetime, datetime], _Keys]] = Near(window)
    for draft in drafts:
        span, keys = draft.span(), _signal_keys(draft)
        filed = [
            (name, kind, value)
            for kind, (workloads, nodes) in keys.items()
            for name, values in (("workload", workloads), ("node", nodes))
            for value in values
        ]
        prepared.add((draft, span, keys), filed, *span)
    for signal in signals:
        wanted = []
        if signal.workload:
            wanted.append(("workload", signal.kind.value, signal.workload))
        if signal.node:
            wanted.append(("node", signal.kind.value, signal.node))
        for position in prepared.near(wanted, signal.at, signal.last):
            draft, span, keys = prepared.items[position]
            if not _near((signal.at, signal.last), span, window):
                continue
            workloads, nodes = keys[signal.kind.value]
            if (signal.workload and signal.workload in workloads) or (
                signal.node and signal.node in nodes
            ):
                draft.signals.append(signal)


# -- building and linking ----------------------------------------------------------------------


def _build(draft: Draft) -> Incident:
    draft.symptoms.sort(key=lambda m: m.episode.order)
    draft.conditions.sort(key=lambda m: m.episode.order)
    draft.signals.sort(key=lambda s: s.order)
    start, end = draft.span()
    described = describing.describe(draft)
    return Incident(
        id=incident_id(draft.cluster, draft.cause, draft.basis_start),
        cluster=draft.cluster,
        cause=draft.cause,
        kind=described.kind,
        title=described.title,
        summary=described.summary,
        start=start,
        end=end,
        severity=max(member.episode.severity for member in draft.members),
        tags=described.tags,
        symptoms=described.symptoms,
        timeline=describing.timeline(draft),
        suspected_cause=advising.suspected_cause(draft),
        follow_ups=advising.follow_ups(draft),
        pools=described.pools,
        nodes=described.nodes,
        workloads=described.workloads,
        culprits=described.culprits,
        harmed=described.harmed,
        findings=tuple(draft.episodes()),
        signals=tuple(draft.signals),
    )
