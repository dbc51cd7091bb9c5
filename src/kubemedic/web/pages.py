"""The dashboard's HTML pages, rendered on the server from Jinja2 templates (package data).

``/`` the cluster overview (nodes by state, the commitment heat map by pool, open and recent
incidents), ``/incidents`` and ``/incidents/{id}`` (the timeline chart, evidence, same-cause
links), ``/nodes/{name}`` (repair ladder, ledger, decisions, conditions over time), ``/events``
(search with kubectl-like filters), ``/storms`` (the storm breaker's decisions: who, when, the
revert patch). Links carry ``?cluster=`` when the archive holds more than one.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from kubemedic.incidents import describing
from kubemedic.store import browsing
from kubemedic.web import charts
from kubemedic.web.api import Continue, node_detail, node_overview, reader
from kubemedic.web.reading import Reader, as_time, window_of

__all__ = ["LADDER", "current_rung", "environment", "router"]

router = APIRouter(include_in_schema=False)

LADDER = ("restart", "reboot", "replace", "quarantine")
"""Node repair's ladder, lowest rung first (``kubemedic.repair.policy``)."""

_STATE_ORDER = ("quarantined", "held", "repairing", "unhealthy", "healthy", "gone", "unknown")

environment = Environment(
    loader=PackageLoader("kubemedic.web", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
environment.filters["time"] = lambda seconds: (as_time(seconds) or "").replace("T", " ")
environment.filters["iso"] = lambda text: (text or "").replace("T", " ")
environment.filters["pretty"] = lambda value: json.dumps(value, indent=2, sort_keys=True)
environment.filters["duration"] = describing.duration
environment.filters["utc"] = describing.utc


def current_rung(state: dict[str, Any]) -> str:
    """The ladder's rung a node's repair state stands on: its step, or for a quarantined node
    (whose repair is over, so it has no step) the quarantine rung; "" for none."""
    step = str(state.get("step") or "")
    if not step and state.get("state") == "quarantined":
        return "quarantine"
    return step


def _query(read: Reader, cluster: str) -> str:
    """``?cluster=NAME`` for links when the archive holds more than one cluster, else ""."""
    return f"?{urlencode({'cluster': cluster})}" if len(read.clusters()) > 1 else ""


def _render(
    request: Request, name: str, read: Reader, cluster: str, **context: Any
) -> HTMLResponse:
    html = environment.get_template(name).render(
        cluster=cluster,
        clusters=read.clusters(),
        q=_query(read, cluster),
        source=read.archive.url,
        **context,
    )
    return HTMLResponse(html)


Cluster = Annotated[str | None, Query()]


def _rank(state: str) -> int:
    return _STATE_ORDER.index(state) if state in _STATE_ORDER else len(_STATE_ORDER)


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, cluster: Cluster = None) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    nodes = node_overview(read, chosen)
    states = {node["name"]: node["state"] for node in nodes}
    counts = Counter(states.values())
    by_state = sorted(
        counts.items(),
        key=lambda item: _STATE_ORDER.index(item[0]) if item[0] in _STATE_ORDER else 99,
    )
    commitment = read.read("latest_commitment", chosen)
    incidents = read.incidents(chosen)
    open_ids = {i.id for i in read.open_incidents(chosen, incidents)}
    return _render(
        request,
        "overview.html",
        read,
        chosen,
        nodes=nodes,
        by_state=by_state,
        heatmap=charts.commitment_heatmap(
            commitment, list(states), states, query=_query(read, chosen)
        ),
        open_incidents=[i for i in incidents if i.id in open_ids],
        recent=[i for i in incidents if i.id not in open_ids][:20],
        total=len(incidents),
    )


@router.get("/incidents", response_class=HTMLResponse)
def incident_list(
    request: Request, cluster: Cluster = None, token: Continue = None
) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    page, following = read.incident_page(chosen, open_only=False, limit=50, token=token)
    return _render(request, "incidents.html", read, chosen, incidents=page, following=following)


@router.get("/incidents/{incident_id}", response_class=HTMLResponse)
def incident(request: Request, incident_id: str, cluster: Cluster = None) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    found = read.incident(chosen, incident_id)
    first_seen = read.read("nodes_first_seen", chosen)
    return _render(
        request,
        "incident.html",
        read,
        chosen,
        incident=found,
        chart=charts.incident_timeline(
            found, window_of(found), first_seen, query=_query(read, chosen)
        ),
        related=read.related(chosen, found),
    )


@router.get("/nodes/{name}", response_class=HTMLResponse)
def node(request: Request, name: str, cluster: Cluster = None) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    detail = node_detail(read, chosen, name)
    raw = read.read("node_transitions", chosen, name)
    step = current_rung(detail["state"] or {})
    return _render(
        request,
        "node.html",
        read,
        chosen,
        node=detail,
        ladder=[(rung, rung == step) for rung in LADDER],
        chart=charts.conditions_chart(raw, read.now(chosen)),
        incidents=[read.incident(chosen, i) for i in detail["incidents"]],
    )


@router.get("/events", response_class=HTMLResponse)
def events(
    request: Request,
    *,
    cluster: Cluster = None,
    namespace: str | None = None,
    kind: str | None = None,
    name: str | None = None,
    reason: str | None = None,
    type: str | None = None,
    node: str | None = None,
    since: str | None = None,
    until: str | None = None,
    token: Continue = None,
) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    filters = {
        "namespace": namespace,
        "kind": kind,
        "name": name,
        "reason": reason,
        "type": type,
        "node": node,
        "since": since,
        "until": until,
    }
    where = browsing.EventFilter(
        namespace=namespace or None,
        kind=kind or None,
        name=name or None,
        reason=reason or None,
        type=type or None,
        node=node or None,
        since=read.moment("since", since, chosen),
        until=read.moment("until", until, chosen),
    )
    found = read.page("events", chosen, where=where, limit=100, token=token or None)
    given = {key: value for key, value in filters.items() if value}
    if len(read.clusters()) > 1:
        given["cluster"] = chosen
    following = None
    if found["continue"]:
        following = "/events?" + urlencode({**given, "continue": found["continue"]})
    return _render(
        request,
        "events.html",
        read,
        chosen,
        filters=filters,
        rows=found["items"],
        following=following,
    )


@router.get("/storms", response_class=HTMLResponse)
def storms(request: Request, cluster: Cluster = None, token: Continue = None) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    found = read.page("breaker_decisions", chosen, limit=100, token=token)
    state = read.read("breaker_state", chosen) or {}
    following = None
    if found["continue"]:
        given = {"cluster": chosen} if len(read.clusters()) > 1 else {}
        following = "/storms?" + urlencode({**given, "continue": found["continue"]})
    return _render(
        request,
        "storms.html",
        read,
        chosen,
        rows=found["items"],
        storms=state.get("storms") or [],
        reverted=state.get("reverted") or {},
        following=following,
    )
