"""Related incidents: those sharing part of an incident's cause (pure).

Incidents are related when they share part of their cause (``causes.parse_cause``: its pool or
its culprit workload) in the same cluster, or all of it in another cluster; the reason names
what is shared ("same cause: shared core node pool, Prometheus").

Every incident of a busy pool relates to every other of that pool, so the links of a large
archive grow with the square of its incidents (10,000 incidents over five pools: twenty million
links). ``Links`` indexes the incidents once by what their causes name and answers for one
incident when asked (its links, or only how many); ``link`` fills in every incident's, for the
command line and the tests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace

from kubemedic.incidents import causes, describing
from kubemedic.incidents.model import Incident, Related

__all__ = ["Links", "link"]


def _cause_anchors(incident: Incident) -> dict[str, str]:
    """What part of an incident's cause may be shared: ``{anchor: plain words}``."""
    roles = dict(_roles_of(incident))
    anchors: dict[str, str] = {}
    for kind, value in causes.cause_anchors(causes.parse_cause(incident.cause)):
        if kind == "pool":
            anchors[f"pool:{value}"] = describing.node_pool_phrase(value)
        else:
            anchors[f"workload:{value}"] = causes.workload_label(value, roles)
    return anchors


def _roles_of(incident: Incident) -> list[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for episode in incident.findings:
        facts = causes.facts_of(episode)
        if facts is not None:
            found.update(facts.roles)
    return sorted(found, reverse=True)


class Links:
    """The related incidents of each of ``incidents``, worked out when asked."""

    def __init__(self, incidents: Sequence[Incident]) -> None:
        self.incidents = list(incidents)
        self._anchors = [_cause_anchors(incident) for incident in self.incidents]
        self._by_anchor: dict[str, list[int]] = defaultdict(list)
        self._by_cause: dict[str, list[int]] = defaultdict(list)
        for index, incident in enumerate(self.incidents):
            for anchor in self._anchors[index]:
                self._by_anchor[anchor].append(index)
            self._by_cause[incident.cause].append(index)
        self._counts: dict[tuple[str, str, frozenset[str]], int] = {}

    def _candidates(self, index: int) -> set[int]:
        candidates: set[int] = set(self._by_cause.get(self.incidents[index].cause, ()))
        for anchor in self._anchors[index]:
            candidates.update(self._by_anchor.get(anchor, ()))
        candidates.discard(index)
        return candidates

    def _kept(self, index: int, other_index: int) -> bool:
        incident, other = self.incidents[index], self.incidents[other_index]
        return other.cluster == incident.cluster or other.cause == incident.cause

    def related(self, index: int) -> tuple[Related, ...]:
        """The links of ``incidents[index]``: oldest first, then by cluster and id."""
        incident = self.incidents[index]
        mine = sorted(self._anchors[index].items())
        related: list[Related] = []
        for other_index in sorted(self._candidates(index)):
            if not self._kept(index, other_index):
                continue
            other = self.incidents[other_index]
            theirs = self._anchors[other_index]
            shared = [words for anchor, words in mine if anchor in theirs]
            if other.cluster != incident.cluster:
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
        return tuple(related)

    def count(self, index: int) -> int:
        """``len(related(index))``, without building the links: the same for every incident
        of one cluster, cause and set of anchors, so worked out once for them."""
        incident = self.incidents[index]
        key = (incident.cluster, incident.cause, frozenset(self._anchors[index]))
        known = self._counts.get(key)
        if known is None:
            candidates = self._candidates(index)
            known = sum(1 for other in candidates if self._kept(index, other))
            self._counts[key] = known
        return known


def link(incidents: Sequence[Incident]) -> list[Incident]:
    """``incidents`` with ``related`` filled in (see the module docstring)."""
    links = Links(incidents)
    return [
        replace(incident, related=links.related(index)) for index, incident in enumerate(incidents)
    ]
