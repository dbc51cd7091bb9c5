"""What an incident is built from, before it is described (pure).

``grouping`` decides which episodes and signals belong together and hands each group over as a
``Draft``; ``describing`` and ``advising`` turn a draft into the words of an ``Incident``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from kubemedic.incidents.causes import Facts, parse_cause
from kubemedic.incidents.model import FindingEpisode, Signal

__all__ = ["Draft", "Member"]


@dataclass(frozen=True, slots=True)
class Member:
    """A finding episode with what its cause and evidence say, over one span of time.

    A condition's span is its episode's. A symptom's is when it was *active*
    (``grouping`` reads it from the matching signals or the evidence): the archive's episode of
    an ``evicted`` finding lasts as long as the Failed pods stay, days after the evictions, and
    evictions on two days make two spans, so two incidents.
    """

    episode: FindingEpisode
    facts: Facts
    first: datetime
    last: datetime

    @classmethod
    def of(cls, episode: FindingEpisode, facts: Facts) -> Member:
        return cls(episode, facts, episode.first_seen, max(episode.last_seen, episode.first_seen))


@dataclass(slots=True)
class Draft:
    """One incident's members: symptoms (things that happened), conditions (standing causes and
    risks), the signals matched to them, and why each symptom was attributed to ``cause``
    (``ties``: ``(check, score, how)``, score as ``causes.root_score``/``follow_score``,
    0 when the symptom's own cause is the incident's)."""

    cluster: str
    cause: str
    symptoms: list[Member] = field(default_factory=list)
    conditions: list[Member] = field(default_factory=list)
    signals: list[Signal] = field(default_factory=list)
    ties: list[tuple[str, int, str]] = field(default_factory=list)

    @property
    def members(self) -> list[Member]:
        return [*self.symptoms, *self.conditions]

    @property
    def family(self) -> str:
        return parse_cause(self.cause).family

    @property
    def basis_start(self) -> datetime:
        """When the incident began, by its members' spans (the id is built from it)."""
        leading = self.symptoms or self.conditions
        return min(member.first for member in leading)

    def span(self) -> tuple[datetime, datetime]:
        """From the first to the last symptom (finding or signal); a risk's conditions' span."""
        times: list[datetime] = []
        for member in self.symptoms or self.conditions:
            times.extend((member.first, member.last))
        for signal in self.signals:
            times.extend((signal.at, signal.last))
        return min(times), max(times)

    def episodes(self) -> list[FindingEpisode]:
        unique = {id(member.episode): member.episode for member in self.members}
        return sorted(unique.values(), key=lambda e: e.order)

    def facts(self) -> Iterable[Facts]:
        return (member.facts for member in self.members)

    def roles(self) -> dict[str, str]:
        """Workload roles stated anywhere in the evidence (``jupyterhub`` for the hub)."""
        found: dict[str, str] = {}
        for facts in sorted(self.facts(), key=lambda f: (f.check, f.cause.raw)):
            for workload, role in facts.roles:
                found.setdefault(workload, role)
        return found

    def by_check(self, check: str) -> list[Member]:
        """The members of one check, one per episode (its latest span)."""
        unique: dict[int, Member] = {}
        for member in self.members:
            if member.facts.check == check:
                known = unique.get(id(member.episode))
                if known is None or member.last > known.last:
                    unique[id(member.episode)] = member
        return sorted(unique.values(), key=lambda m: m.episode.order)
