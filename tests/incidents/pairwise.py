"""The grouping rules applied pair by pair: what ``grouping`` computed before it indexed its
candidates, kept as the reference the indexed grouping must agree with.

Every symptom is tried against every condition and every other symptom, every condition against
every incident, every signal against every incident, every incident against every other. It
reuses ``grouping``'s rules (``_shows``, ``_joins``, the scores...) and only replaces how the
candidates are found.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import timedelta

from kubemedic.incidents import causes, grouping
from kubemedic.incidents import linking as g_linking
from kubemedic.incidents.grouping import (
    _OCCURRING,
    _anchors,
    _build,
    _joins,
    _near,
    _runs,
    _seen_in,
    _shows,
    _signal_keys,
    _span,
)
from kubemedic.incidents.members import Draft, Member
from kubemedic.incidents.model import FindingEpisode, Incident, Related, Signal


def group(
    episodes: Sequence[FindingEpisode],
    signals: Sequence[Signal] = (),
    *,
    window: timedelta = grouping.DEFAULT_WINDOW,
) -> list[Incident]:
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
    return link(built)


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
    symptoms = [
        occurrence
        for member in members
        if not member.facts.condition
        for occurrence in _occurrences(member, signals, window=window)
    ]
    roots = [m for m in members if m.facts.root]
    first_pass = {
        index: _best(
            symptom,
            roots,
            score=causes.root_score,
            window=window,
            cause_of=lambda m: m.facts.incident_cause,
        )
        for index, symptom in enumerate(symptoms)
    }
    first_cause = {id(s): first_pass[i][0] for i, s in enumerate(symptoms)}
    assigned: dict[int, tuple[str, int, str]] = {}
    for index, symptom in enumerate(symptoms):
        chosen = first_pass[index]
        if chosen[1] == 0:
            follow = _best(
                symptom,
                symptoms,
                score=causes.follow_score,
                window=window,
                cause_of=lambda m: first_cause[id(m)],
            )
            if follow[1] > 0:
                chosen = follow
        assigned[index] = chosen
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
    leading = [m for m in members if m.facts.primary]
    victims = [m for m in members if m.facts.condition and not m.facts.primary]
    drafts.extend(_join_conditions(drafts, leading, cluster=cluster, window=window, lead=True))
    drafts.extend(_join_conditions(drafts, victims, cluster=cluster, window=window, lead=False))
    return drafts


def _occurrences(member: Member, signals: Sequence[Signal], *, window: timedelta) -> list[Member]:
    evident = causes.activity_span(member.episode)
    first = member.first if evident is None else min(member.first, evident[0])
    if member.facts.check in _OCCURRING:
        shown = [
            s
            for s in signals
            if first - window <= s.at <= member.last + window and _shows(member.facts, s)
        ]
        if shown:
            runs = _runs(shown, window=window, span=lambda s: (s.at, s.last))
            return [_seen_in(member, run) for run in runs]
    if evident is not None:
        return [replace(member, first=evident[0], last=max(evident[1], evident[0]))]
    return [member]


def _best(
    symptom: Member,
    candidates: Sequence[Member],
    *,
    score: Callable[[causes.Facts, causes.Facts], int],
    window: timedelta,
    cause_of: Callable[[Member], str],
) -> tuple[str, int, str]:
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


def _join_conditions(
    drafts: list[Draft],
    conditions: Sequence[Member],
    *,
    cluster: str,
    window: timedelta,
    lead: bool,
) -> list[Draft]:
    anchors = [_anchors(draft) for draft in drafts]
    loose: list[Member] = []
    for condition in conditions:
        joined = False
        for draft, anchor in zip(drafts, anchors, strict=True):
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


def _attach_signals(drafts: list[Draft], signals: Sequence[Signal], window: timedelta) -> None:
    prepared = [(draft, draft.span(), _signal_keys(draft)) for draft in drafts]
    for signal in signals:
        for draft, span, keys in prepared:
            if not _near((signal.at, signal.last), span, window):
                continue
            workloads, nodes = keys[signal.kind.value]
            if (signal.workload and signal.workload in workloads) or (
                signal.node and signal.node in nodes
            ):
                draft.signals.append(signal)


def link(incidents: Sequence[Incident]) -> list[Incident]:
    """Every pair of incidents compared."""
    anchors = [g_linking._cause_anchors(incident) for incident in incidents]
    linked: list[Incident] = []
    for index, incident in enumerate(incidents):
        related: list[Related] = []
        for other_index, other in enumerate(incidents):
            shared = [
                words
                for anchor, words in sorted(anchors[index].items())
                if anchor in anchors[other_index]
            ]
            if other_index == index or not (shared or other.cause == incident.cause):
                continue
            if other.cluster != incident.cluster:
                if other.cause != incident.cause:
                    continue
                reason = f"same cause in cluster {other.cluster}: shared " + ", ".join(
                    shared or [other.cause]
                )
            elif shared:
                reason = "same cause: shared " + ", ".join(shared)
            else:
                reason = f"same cause: {incident.cause}"
            related.append(
                Related(
                    id=other.id,
                    reason=reason,
                    title=other.title,
                    start=other.start,
                    cluster=other.cluster,
                )
            )
        related.sort(key=lambda r: (r.start, r.cluster, r.id))
        linked.append(replace(incident, related=tuple(related)))
    return linked
