"""Incidents: findings and archived signals grouped by cause, linked across days, exported as
postmortem drafts.

``grouping.group(episodes, signals)`` is the pure model (the rules are in its docstring);
``archive.load``/``archive.incidents`` read them from the archive; ``render`` writes the
postmortem draft (Markdown), JSON and terminal views.

May import: :mod:`kubemedic.store` and the other edges, :mod:`kubemedic.checks`,
:mod:`kubemedic.model`, :mod:`kubemedic.errors`; never the simulator or the command line.
"""

from kubemedic.incidents.grouping import DEFAULT_WINDOW, group, incident_id, link
from kubemedic.incidents.model import (
    EvidenceItem,
    FindingEpisode,
    Incident,
    IncidentKind,
    Related,
    Signal,
    SignalKind,
    SuspectedCause,
    TimelineEntry,
)

__all__ = [
    "DEFAULT_WINDOW",
    "EvidenceItem",
    "FindingEpisode",
    "Incident",
    "IncidentKind",
    "Related",
    "Signal",
    "SignalKind",
    "SuspectedCause",
    "TimelineEntry",
    "group",
    "incident_id",
    "link",
]
