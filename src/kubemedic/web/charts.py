"""Charts drawn on the server as inline SVG: nothing to fetch, nothing to run in the browser.

Each function returns SVG markup (``markupsafe.Markup``, every text escaped) for a page to put
in place: the incident timeline (findings as bars, signals as dots on one lane per kind, the
node count as a step line, all on one time axis), a node's conditions over time (one lane per
condition, coloured by status), and the overview's commitment heat map (one row per pool, one
cell per node and resource, coloured by the requests' share of allocatable). Every mark carries
a ``<title>`` (the browser's tooltip) and links where there is somewhere to go.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any, Final
from urllib.parse import quote

from markupsafe import Markup

from kubemedic.incidents import Incident, SignalKind

__all__ = ["commitment_heatmap", "conditions_chart", "incident_timeline"]

WIDTH: Final = 960
LEFT: Final = 150
RIGHT: Final = 20
LANE: Final = 26
NODE_BAND: Final = 60

_SIGNAL_COLOURS: Final = {
    SignalKind.EVICTION: "#c0392b",
    SignalKind.OOM_KILL: "#8e44ad",
    SignalKind.NODE_OOM: "#6c3483",
    SignalKind.POD_PENDING: "#d68910",
    SignalKind.FAILED_POD: "#a04000",
    SignalKind.NODE_NOT_READY: "#2c3e50",
    SignalKind.NODE_PRESSURE: "#e67e22",
    SignalKind.EVENT: "#5d6d7e",
}
_SEVERITY_COLOURS: Final = {"critical": "#c0392b", "warning": "#d68910", "info": "#2e86c1"}


def _x(moment: float, start: float, end: float) -> float:
    span = max(end - start, 1.0)
    return LEFT + (WIDTH - LEFT - RIGHT) * (moment - start) / span


def _clock(seconds: float, *, date: bool) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%m-%d %H:%M" if date else "%H:%M:%S")


def _axis(start: float, end: float, top: float, bottom: float) -> list[str]:
    date = end - start > 86_400
    out = [f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" class="axis"/>']
    for index in range(6):
        moment = start + (end - start) * index / 5
        x = _x(moment, start, end)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" class="grid"/>')
        anchor = "start" if index == 0 else "end" if index == 5 else "middle"
        out.append(
            f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="{anchor}" class="tick">'
            f"{escape(_clock(moment, date=date))}</text>"
        )
    return out


def _label(y: float, text: str) -> str:
    return f'<text x="{LEFT - 8}" y="{y + 4}" text-anchor="end" class="lane">{escape(text)}</text>'


def _svg(height: float, body: list[str], label: str) -> Markup:
    return Markup(  # noqa: S704 - every text in it went through html.escape
        f'<svg class="chart" role="img" aria-label="{escape(label)}" viewBox="0 0 {WIDTH} '
        f'{height:.0f}" width="{WIDTH}" height="{height:.0f}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>'
    )


def _node_link(node: str, inner: str, query: str) -> str:
    if not node:
        return inner
    return f'<a href="/nodes/{quote(node, safe="")}{escape(query)}">{inner}</a>'


def incident_timeline(
    incident: Incident,
    window: tuple[datetime, datetime],
    nodes_first_seen: Sequence[tuple[str, float]] = (),
    *,
    query: str = "",
) -> Markup:
    """The incident's findings, signals and node count on one time axis over ``window``;
    ``query`` (``?cluster=...``) goes on the links to nodes."""
    start, end = window[0].timestamp(), window[1].timestamp()
    body: list[str] = []
    findings = sorted(incident.findings, key=lambda e: (e.first_seen, e.check))
    step = 7.0 if len(findings) <= 12 else 84.0 / len(findings)
    height = max(step * len(findings), 14.0)
    body.append(_label(12 + height / 2, "findings"))
    for index, episode in enumerate(findings):
        x1 = _x(max(episode.first_seen.timestamp(), start), start, end)
        x2 = max(_x(min(episode.last_seen.timestamp(), end), start, end), x1 + 3)
        colour = _SEVERITY_COLOURS.get(episode.severity.label, "#888")
        body.append(
            f'<rect class="finding" x="{x1:.1f}" y="{12 + index * step:.1f}" '
            f'width="{x2 - x1:.1f}" height="{max(step - 2, 1):.1f}" fill="{colour}"><title>'
            f"{escape(episode.check)}: {escape(episode.message)}</title></rect>"
        )
    y = 12 + height + 20
    kinds = [kind for kind in SignalKind if any(s.kind is kind for s in incident.signals)]
    for kind in kinds:
        body.append(_label(y, kind.value))
        body.append(f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" class="lane-line"/>')
        for signal in (s for s in incident.signals if s.kind is kind):
            x = _x(signal.at.timestamp(), start, end)
            radius = 4 + min(signal.count, 30) / 6
            dot = (
                f'<circle class="signal {escape(kind.value)}" cx="{x:.1f}" cy="{y}" '
                f'r="{radius:.1f}" fill="{_SIGNAL_COLOURS.get(kind, "#555")}"><title>'
                f"{escape(_clock(signal.at.timestamp(), date=False))} {escape(signal.summary)}"
                f"{' (x' + str(signal.count) + ')' if signal.count > 1 else ''}</title></circle>"
            )
            body.append(_node_link(signal.node, dot, query))
        y += LANE
    if nodes_first_seen:
        y += 10
        body.append(_label(y + NODE_BAND / 2, "nodes"))
        body.extend(_node_steps(nodes_first_seen, start, end, y))
        y += NODE_BAND
    body = _axis(start, end, 8, y + 6) + body
    return _svg(y + 30, body, f"timeline of {incident.title}")


def _node_steps(
    first_seen: Sequence[tuple[str, float]], start: float, end: float, top: float
) -> list[str]:
    count = sum(1 for _, at in first_seen if at <= start)
    changes = [at for _, at in first_seen if start < at <= end]
    most = max(count + len(changes), 1)

    def y_of(value: int) -> float:
        return top + NODE_BAND - NODE_BAND * value / most

    points: list[tuple[float, float]] = [(LEFT, y_of(count))]
    for at in changes:
        x = _x(at, start, end)
        points.append((x, y_of(count)))
        count += 1
        points.append((x, y_of(count)))
    points.append((WIDTH - RIGHT, y_of(count)))
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    return [
        f'<polyline class="nodes" points="{path}" fill="none" stroke="#1f618d" '
        f'stroke-width="2"><title>{count} nodes known at the end</title></polyline>',
        f'<text x="{WIDTH - RIGHT}" y="{y_of(count) - 4:.1f}" text-anchor="end" '
        f'class="tick">{count} nodes</text>',
    ]


_STATUS_COLOURS: Final = {"True": "#27ae60", "False": "#c0392b", "Unknown": "#95a5a6"}
_BAD_WHEN_TRUE: Final = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")


def _status_colour(condition: str, status: str) -> str:
    if condition in _BAD_WHEN_TRUE and status in ("True", "False"):
        status = "False" if status == "True" else "True"
    return _STATUS_COLOURS.get(status, "#95a5a6")


def conditions_chart(transitions: Sequence[Mapping[str, Any]], end: float) -> Markup:
    """A node's conditions over time from its transitions (oldest first), up to ``end``."""
    if not transitions:
        return Markup('<p class="empty">No condition transitions recorded.</p>')
    start = float(transitions[0]["at"])
    end = max(end, float(transitions[-1]["at"]) + 60.0)
    conditions = sorted({str(t["condition"]) for t in transitions}, key=lambda c: (c != "Ready", c))
    body: list[str] = []
    y = 20.0
    for condition in conditions:
        body.append(_label(y, condition))
        own = [t for t in transitions if t["condition"] == condition]
        for index, row in enumerate(own):
            x1 = _x(float(row["at"]), start, end)
            following = float(own[index + 1]["at"]) if index + 1 < len(own) else end
            x2 = max(_x(following, start, end), x1 + 1)
            title = (
                f"{condition}={row['status']} from {_clock(float(row['at']), date=True)}"
                f"{': ' + str(row['reason']) if row.get('reason') else ''}"
            )
            body.append(
                f'<rect class="condition" data-status="{escape(str(row["status"]))}" '
                f'x="{x1:.1f}" y="{y - 8}" width="{x2 - x1:.1f}" height="16" '
                f'fill="{_status_colour(condition, str(row["status"]))}">'
                f"<title>{escape(title)}</title></rect>"
            )
        y += LANE
    body = _axis(start, end, 8, y - 8) + body
    return _svg(y + 20, body, "node conditions over time")


def _heat(percent: float | None) -> str:
    if percent is None:
        return "#e5e8e8"
    share = max(0.0, min(percent, 130.0)) / 130.0
    red, green = int(80 + 175 * share), int(200 - 160 * share)
    return f"rgb({red},{green},70)"


def commitment_heatmap(
    commitment: Sequence[Mapping[str, Any]],
    nodes: Sequence[str],
    states: Mapping[str, str],
    *,
    query: str = "",
) -> Markup:
    """One row per pool; per node two cells, memory then CPU, coloured by requests' share of
    allocatable as the latest overcommit finding measured it (grey: no finding, i.e. under
    the checks' thresholds or not scanned)."""
    by_node: dict[str, dict[str, Mapping[str, Any]]] = {}
    pools: dict[str, set[str]] = {}
    for row in commitment:
        by_node.setdefault(str(row["node"]), {})[str(row["resource"])] = row
        pools.setdefault(str(row["pool"]) or "(no pool label)", set()).add(str(row["node"]))
    placed = {node for members in pools.values() for node in members}
    rest = sorted(set(nodes) - placed)
    if rest:
        pools["other nodes (no overcommit finding)"] = set(rest)
    if not pools:
        return Markup('<p class="empty">No nodes recorded yet.</p>')
    cell, gap, per_row = 14, 4, 24
    body: list[str] = []
    y = 10.0
    for pool in sorted(pools):
        members = sorted(pools[pool])
        body.append(f'<text x="0" y="{y + 10}" class="pool">{escape(pool)}</text>')
        y += 16
        for index, node in enumerate(members):
            column, row_index = index % per_row, index // per_row
            x = column * (2 * cell + gap + 6)
            top = y + row_index * (cell + gap)
            parts = []
            for offset, resource in enumerate(("memory", "cpu")):
                found = by_node.get(node, {}).get(resource)
                percent = None if found is None else found.get("requestsPercent")
                shown = "n/a" if percent is None else f"{percent}%"
                parts.append(
                    f'<rect class="heat" x="{x + offset * cell}" y="{top}" width="{cell - 1}" '
                    f'height="{cell - 1}" fill="{_heat(percent)}"><title>{escape(node)} '
                    f"({escape(states.get(node, 'unknown'))}): {resource} requests {shown}"
                    "</title></rect>"
                )
            body.append(_node_link(node, "".join(parts), query))
        y += ((len(members) - 1) // per_row + 1) * (cell + gap) + 8
    width = per_row * (2 * cell + gap + 6)
    return Markup(  # noqa: S704 - every text in it went through html.escape
        f'<svg class="heatmap" role="img" aria-label="commitment by pool" width="{width}" '
        f'height="{y:.0f}" viewBox="0 0 {width} {y:.0f}" xmlns="http://www.w3.org/2000/svg">'
        f"{''.join(body)}</svg>"
    )
