"""Incidents for people and machines: a postmortem draft in Markdown, JSON, Rich views.

The Markdown export is a first draft of the postmortem an engineer edits and publishes: title,
the facts table, summary, impact, a UTC timeline, the suspected cause with its confidence and
evidence, follow-ups as a checklist, related incidents, and a note of what it was built from.
Nothing in it needs kubemedic to read; every number in it comes from a finding's evidence or an
archived row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table
from rich.text import Text

from kubemedic._version import __version__
from kubemedic.checks.findings import Severity
from kubemedic.incidents.describing import duration, utc
from kubemedic.incidents.model import Incident, IncidentKind
from kubemedic.model import objects

__all__ = [
    "confidence_word",
    "list_json",
    "render_detail",
    "render_table",
    "to_json",
    "to_markdown",
]

TIMELINE_LINES = 60
_STYLE = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def confidence_word(value: float) -> str:
    return "high" if value >= 0.75 else "moderate" if value >= 0.5 else "low"


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.replace("|", "\\|").split())


def _time(moment: datetime, *, same_day: bool) -> str:
    return utc(moment, date=not same_day).removesuffix(" UTC")


def _one_day(incident: Incident) -> bool:
    days = {entry.at.astimezone(UTC).date() for entry in incident.timeline}
    days |= {incident.start.astimezone(UTC).date(), incident.end.astimezone(UTC).date()}
    return len(days) == 1


def to_markdown(incident: Incident, related: Sequence[Incident] = (), *, source: str = "") -> str:
    """The postmortem draft of ``incident``; ``related`` (the incidents its ``related`` names,
    when at hand) adds their symptoms; ``source`` names the archive it was read from."""
    lines: list[str] = [f"# {incident.title}", ""]
    lines += [
        "| | |",
        "|---|---|",
        f"| Incident | `{incident.id}` |",
        f"| Cluster | {_cell(incident.cluster or '(unnamed)')} |",
        f"| Start | {utc(incident.start)} |",
        f"| End | {utc(incident.end)} |",
        f"| Duration | {duration(incident.duration_seconds)} |",
        f"| Severity | {incident.severity.label} |",
        f"| Kind | {incident.kind.value} |",
        f"| Symptoms | {_cell(', '.join(incident.symptoms) or 'none recorded')} |",
        f"| Cause fingerprint | `{incident.cause}` |",
        f"| Tags | {_cell(', '.join(incident.tags))} |",
        "",
        "## Summary",
        "",
        incident.summary,
        "",
        "## Impact",
        "",
    ]
    lines += _impact(incident)
    lines += ["", "## Timeline (UTC)", ""]
    lines += _timeline(incident)
    suspected = incident.suspected_cause
    lines += [
        "",
        "## Suspected cause",
        "",
        suspected.text,
        "",
        f"Confidence: **{suspected.confidence:.2f}** ({confidence_word(suspected.confidence)}). "
        "Each independent line of evidence adds its weight w as 1 - (1 - c)(1 - w):",
        "",
    ]
    lines += [f"- +{weight:.2f}: {reason}" for weight, reason in suspected.basis] or [
        "- no line of evidence beyond the findings themselves"
    ]
    lines += ["", "### Evidence", ""]
    lines += [f"- {item.text} ({item.source})" for item in suspected.evidence]
    lines += ["", "## Follow-ups", ""]
    lines += [f"- [ ] {item}" for item in incident.follow_ups] or ["- [ ] (none suggested)"]
    lines += ["", "## Related incidents", ""]
    lines += _related(incident, related)
    lines += ["", "## How this draft was made", ""]
    lines += _provenance(incident, source=source)
    return "\n".join(lines) + "\n"


def _impact(incident: Incident) -> list[str]:
    lines = []
    if incident.kind is IncidentKind.RISK:
        lines.append("- None recorded yet: this is a standing risk found by kubemedic's scans.")
    else:
        lines.append(f"- Symptoms: {', '.join(incident.symptoms)}.")
    if incident.harmed:
        lines.append(f"- Workloads harmed: {', '.join(incident.harmed)}.")
    at_risk = [
        w for w in incident.workloads if w not in incident.culprits and w not in incident.harmed
    ]
    if at_risk:
        lines.append(f"- Also at risk: {', '.join(at_risk)}.")
    if incident.culprits:
        lines.append(f"- Workloads blamed: {', '.join(incident.culprits)}.")
    if incident.nodes:
        shown = ", ".join(incident.nodes[:12])
        more = f" and {len(incident.nodes) - 12} more" if len(incident.nodes) > 12 else ""
        pools = f" (node pools: {', '.join(incident.pools)})" if incident.pools else ""
        lines.append(f"- Nodes: {shown}{more}{pools}.")
    evictions = sum(s.count for s in incident.signals if s.kind.value == "eviction")
    kills = sum(s.count for s in incident.signals if s.kind.value == "oom-kill")
    if evictions or kills:
        lines.append(f"- Archived: {evictions} eviction(s), {kills} OOM kill(s).")
    lines.append(f"- Duration: {duration(incident.duration_seconds)}.")
    return lines


def _timeline(incident: Incident) -> list[str]:
    same_day = _one_day(incident)
    if same_day:
        day = incident.start.astimezone(UTC).strftime("%Y-%m-%d")
        header = [f"All times on {day}.", ""]
    else:
        header = []
    rows = ["| Time | Until | What | Source |", "|---|---|---|---|"]
    for entry in incident.timeline[:TIMELINE_LINES]:
        until = "" if entry.until <= entry.at else _time(entry.until, same_day=same_day)
        rows.append(
            f"| {_time(entry.at, same_day=same_day)} | {until} | {_cell(entry.text)} | "
            f"{_cell(entry.source)} |"
        )
    hidden = len(incident.timeline) - TIMELINE_LINES
    if hidden > 0:
        rows += [
            "",
            f"{hidden} more line(s): `kubemedic incidents export {incident.id} --format json`.",
        ]
    return header + rows


def _related(incident: Incident, related: Sequence[Incident]) -> list[str]:
    if not incident.related:
        return ["None found in the archive."]
    known = {other.id: other for other in related}
    lines = []
    for link in incident.related:
        other = known.get(link.id)
        symptoms = f"; {', '.join(other.symptoms)}" if other and other.symptoms else ""
        where = f" in cluster {link.cluster}" if link.cluster != incident.cluster else ""
        lines.append(
            f"- `{link.id}` {utc(link.start)}{where}: {link.title}{symptoms}. *{link.reason}*"
        )
    return lines


def _provenance(incident: Incident, *, source: str) -> list[str]:
    checks = Counter(episode.check for episode in incident.findings)
    tables = Counter(signal.source for signal in incident.signals)
    listed = ", ".join(f"{check} x{n}" for check, n in sorted(checks.items()))
    lines = [
        f"Generated by kubemedic {__version__} from {len(incident.findings)} finding "
        f"episode(s) ({listed})"
        + (
            " and " + ", ".join(f"{n} row(s) of {table}" for table, n in sorted(tables.items()))
            if tables
            else " and no archived signals"
        )
        + (f", read from {source}." if source else "."),
        "",
        "The API server keeps events for one hour (`--event-ttl`); the evictions, OOM kills, "
        "node transitions and events above come from kubemedic's archive, recorded as they "
        "happened. The suspected cause is inferred from the checks' evidence: verify it before "
        "publishing, and edit this draft freely.",
    ]
    return lines


# -- JSON --------------------------------------------------------------------------------------


def _dumps(document: dict[str, Any]) -> bytes:
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def to_json(incident: Incident) -> bytes:
    """``{"kubemedic": VERSION, "incident": {...}}`` as indented UTF-8 JSON."""
    return _dumps({"kubemedic": __version__, "incident": incident.to_json()})


def _brief(incident: Incident) -> dict[str, Any]:
    return {
        "id": incident.id,
        "cluster": incident.cluster,
        "kind": incident.kind.value,
        "severity": incident.severity.label,
        "title": incident.title,
        "cause": incident.cause,
        "start": objects.format_time(incident.start),
        "end": objects.format_time(incident.end),
        "durationSeconds": int(incident.duration_seconds),
        "symptoms": list(incident.symptoms),
        "confidence": incident.suspected_cause.confidence,
        "related": [link.id for link in incident.related],
    }


def list_json(incidents: Iterable[Incident]) -> bytes:
    """``{"kubemedic": VERSION, "incidents": [...]}``: one brief entry per incident."""
    return _dumps({"kubemedic": __version__, "incidents": [_brief(i) for i in incidents]})


# -- Rich --------------------------------------------------------------------------------------


def render_table(incidents: Sequence[Incident], *, console: Console, title: str = "") -> None:
    """One line per incident (a risk's title starts with ``Risk:``); the cluster column only
    when several clusters are listed, the symptoms only when the console is wide enough."""
    table = Table(box=None, header_style="bold", pad_edge=False, title=title or None)
    clusters = len({incident.cluster for incident in incidents}) > 1
    symptoms = console.width >= 100
    table.add_column("ID", no_wrap=True, style="bold")
    if clusters:
        table.add_column("Cluster", no_wrap=True)
    table.add_column("Start (UTC)", no_wrap=True)
    table.add_column("Lasted", no_wrap=True, justify="right")
    table.add_column("Severity", no_wrap=True)
    table.add_column("Title", ratio=3, min_width=16)
    if symptoms:
        table.add_column("Symptoms", ratio=1, min_width=8)
    for incident in incidents:
        cells: list[str | Text] = [incident.id]
        if clusters:
            cells.append(incident.cluster)
        cells += [
            incident.start.astimezone(UTC).strftime("%Y-%m-%d %H:%M"),
            duration(incident.duration_seconds),
            Text(incident.severity.label, style=_STYLE[incident.severity]),
            Text(incident.title),
        ]
        if symptoms:
            cells.append(Text(", ".join(incident.symptoms) or "-"))
        table.add_row(*cells)
    console.print(table)


def render_detail(incident: Incident, *, console: Console) -> None:
    """``kubemedic incidents show``: the incident as it reads in a terminal."""
    console.print(Text(incident.title, style="bold"))
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="dim")
    facts.add_column()
    facts.add_row("id", incident.id)
    facts.add_row("cluster", incident.cluster or "(unnamed)")
    facts.add_row(
        "when",
        f"{utc(incident.start)} to {utc(incident.end)} ({duration(incident.duration_seconds)})",
    )
    facts.add_row("severity", Text(incident.severity.label, style=_STYLE[incident.severity]))
    facts.add_row("kind", incident.kind.value)
    facts.add_row("symptoms", ", ".join(incident.symptoms) or "none recorded")
    facts.add_row("cause", incident.cause)
    console.print(facts)
    console.print()
    console.print(incident.summary, highlight=False)
    console.print()
    timeline = Table(box=None, header_style="bold", pad_edge=False, title="Timeline (UTC)")
    timeline.add_column("Time", no_wrap=True)
    timeline.add_column("What")
    timeline.add_column("Source", style="dim")
    same_day = _one_day(incident)
    for entry in incident.timeline[:30]:
        timeline.add_row(_time(entry.at, same_day=same_day), entry.text, entry.source)
    console.print(timeline)
    if len(incident.timeline) > 30:
        console.print(f"({len(incident.timeline) - 30} more lines in the export)", style="dim")
    suspected = incident.suspected_cause
    console.print()
    console.print(
        Text(
            f"Suspected cause (confidence {suspected.confidence:.2f}, "
            f"{confidence_word(suspected.confidence)})",
            style="bold",
        )
    )
    console.print(suspected.text, highlight=False)
    if incident.follow_ups:
        console.print()
        console.print(Text("Follow-ups", style="bold"))
        for item in incident.follow_ups:
            console.print(f"  - {item}", highlight=False)
    if incident.related:
        console.print()
        console.print(Text("Related incidents", style="bold"))
        for link in incident.related:
            console.print(f"  {link.id}  {utc(link.start)}  {link.title}  ({link.reason})")
