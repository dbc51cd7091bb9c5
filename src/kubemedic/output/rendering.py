"""Printing findings: a Rich table for people, JSON for machines.

The JSON document is the contract in DESIGN.md::

    {"kubemedic": VERSION, "generatedAt": T, "findings": [...], "summary": {...}}

It is built completely before anything is written, so a failure never leaves half a document.
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
from kubemedic.checks.findings import Finding, Severity
from kubemedic.model import objects

__all__ = ["render_json", "render_table", "summary_of"]

_ORDER = (Severity.CRITICAL, Severity.WARNING, Severity.INFO)
_STYLE = {Severity.CRITICAL: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _groups(findings: Iterable[Finding]) -> list[list[Finding]]:
    """Findings in display order, in runs of one severity and check."""
    groups: list[list[Finding]] = []
    for finding in sorted(findings, key=lambda f: f.sort_key):
        if groups and (groups[-1][0].severity, groups[-1][0].check) == (
            finding.severity,
            finding.check,
        ):
            groups[-1].append(finding)
        else:
            groups.append([finding])
    return groups


def summary_of(findings: Iterable[Finding]) -> dict[str, int]:
    counts = Counter(finding.severity for finding in findings)
    return {severity.label: counts.get(severity, 0) for severity in _ORDER}


def render_json(
    findings: Sequence[Finding],
    *,
    generated_at: datetime | None = None,
) -> bytes:
    """The scan document as UTF-8 JSON bytes (indented, newline-terminated)."""
    document: dict[str, Any] = {
        "kubemedic": __version__,
        "generatedAt": objects.format_time(generated_at or datetime.now(UTC)),
        "findings": [finding.to_json() for finding in findings],
        "summary": summary_of(findings),
    }
    return orjson.dumps(document, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n"


def render_table(
    findings: Sequence[Finding],
    *,
    console: Console,
    title: str | None = None,
    notes: Sequence[str] = (),
    per_check: int = 0,
) -> None:
    """Findings grouped by severity (most severe first), then a one-line summary.

    ``per_check`` > 0 shows at most that many rows of each check and severity (a 5,000-node
    cluster can have thousands of findings of one kind): the rest are counted in a row of their
    own. The summary always counts everything; ``--output json`` always holds everything."""
    if title:
        console.rule(Text(title, style="bold"))
    if findings:
        table = Table(show_lines=False, expand=True, header_style="bold")
        table.add_column("Severity", no_wrap=True)
        table.add_column("Check", no_wrap=True)
        table.add_column("Object", overflow="fold", ratio=1)
        table.add_column("Finding", overflow="fold", ratio=3)
        previous: Severity | None = None
        for group in _groups(findings):
            first = group[0]
            if previous is not None and first.severity != previous:
                table.add_section()
            previous = first.severity
            shown = group if per_check <= 0 else group[:per_check]
            for finding in shown:
                table.add_row(
                    Text(finding.severity.label, style=_STYLE[finding.severity]),
                    finding.check,
                    Text(str(finding.object)),
                    Text(finding.message),
                )
            hidden = len(group) - len(shown)
            if hidden:
                table.add_row(
                    Text(first.severity.label, style="dim"),
                    Text(first.check, style="dim"),
                    "",
                    Text(f"… and {hidden} more (--limit 0 shows all)", style="dim"),
                )
        console.print(table)
    summary = summary_of(findings)
    line = Text()
    line.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''}: ")
    for index, severity in enumerate(_ORDER):
        count = summary[severity.label]
        if index:
            line.append(", ")
        line.append(f"{count} {severity.label}", style=_STYLE[severity] if count else "dim")
    console.print(line)
    for note in notes:
        console.print(Text(note, style="dim"))
