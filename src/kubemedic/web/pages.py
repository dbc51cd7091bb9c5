"""The dashboard's HTML pages, rendered on the server from Jinja2 templates (package data).

``/`` the cluster overview (nodes by state, the commitment heat map by pool, open and recent
incidents), ``/incidents`` and ``/incidents/{id}`` (the timeline chart, evidence, same-cause
links), ``/nodes/{name}`` (repair ladder, ledger, decisions, conditions over time), ``/events``
(search with kubectl-like filters), ``/storms`` (the storm breaker's decisions: who, when, the
revert patch; the live edits of GitOps-managed objects, who and when), ``/recommendations``
(requests and limits from history, ``web.rightsizing``; an incident page shows those of its
workloads). Links carry ``?cluster=`` when the archive holds more than one.
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
from kubemedic.recommend import rendering as sizing_text
from kubemedic.store import browsing
from kubemedic.web import charts, rightsizing
from kubemedic.web.api import Continue, node_detail, node_overview, reader
from kubemedic.web.reading import Reader, as_time, window_of

__all__ = ["LADDER", "current_rung", "environment", "router"]

router = APIRouter(include_in_schema=False)

LADDER = ("restart", "reboot", "replace", "quarantine")
"""Node repair's ladder, lowest rung first (``kubemedic.repair.policy``)."""

LIVE_EDITS = "out-of-band-edit"
"""The check whose findings are the live edits (who, when, which fields) ``/storms`` lists."""

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

_FIELDS = (("cpu", "request"), ("cpu", "limit"), ("memory", "request"), ("memory", "limit"))


def _sizing_rows(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recommendations as table rows: per field ``(action, "current -> recommended")``."""
    rows = []
    for item in items:
        changes = {(c["resource"], c["field"]): c for c in item["changes"]}
        cells = []
        for resource, which in _FIELDS:
            change = changes.get((resource, which))
            if change is None or change["action"] == "no-data":
                cells.append(("no-data", "no data"))
                continue
            old, new = change["current"], change["recommended"]
            shown = "?" if old is None else sizing_text.amount(old, resource)
            wanted = "none" if new is None else sizing_text.amount(new, resource)
            cells.append(
                (change["action"], wanted if change["action"] == "keep" else f"{shown} → {wanted}")
            )
        rows.append({**item, "cells": cells})
    return rows


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
    commitment = read.read("latest_commitment", chosen)
    nodes = node_overview(read, chosen, commitment)
    states = {node["name"]: node["state"] for node in nodes}
    counts = Counter(states.values())
    by_state = sorted(
        counts.items(),
        key=lambda item: _STATE_ORDER.index(item[0]) if item[0] in _STATE_ORDER else 99,
    )
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
        sizing=_sizing_rows(rightsizing.for_incident(read, chosen, found)),
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
        incidents=[read.incident(chosen, i, linked=False) for i in detail["incidents"]],
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
    edits = read.page("findings", chosen, check=LIVE_EDITS, limit=50)["items"]
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
        edits=edits,
        following=following,
    )


@router.get("/recommendations", response_class=HTMLResponse)
def recommendations(
    request: Request,
    *,
    cluster: Cluster = None,
    namespace: str | None = None,
    workload: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> HTMLResponse:
    read = reader(request)
    chosen = read.cluster(cluster)
    wanted = rightsizing.parse_workload(workload)
    start, end = read.moment("since", since, chosen), read.moment("until", until, chosen)
    too_many = ""
    try:
        items, start, end = rightsizing.recommendations(
            read, chosen, namespace=namespace or None, workload=wanted, since=start, until=end
        )
    except rightsizing.TooMany as error:
        items, too_many = [], str(error)
    # The workloads the incidents name, newest first: where a person starts.
    involved: dict[str, None] = {}
    for found in read.incidents(chosen):
        for key in (*found.culprits, *found.harmed):
            if key.count("/") == 2 and len(involved) < 30:
                involved.setdefault(key)
    given = {"cluster": chosen} if len(read.clusters()) > 1 else {}
    links = [
        (key, "/recommendations?" + urlencode({**given, "namespace": key.split("/")[0],
                                               "workload": key.split("/", 1)[1]}))
        for key in involved
    ]  # fmt: skip
    return _render(
        request,
        "recommendations.html",
        read,
        chosen,
        filters={"namespace": namespace, "workload": workload, "since": since, "until": until},
        rows=_sizing_rows(items),
        since=as_time(start),
        until=as_time(end),
        too_many=too_many,
        involved=links,
    )
