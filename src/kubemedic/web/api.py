"""The JSON API under ``/api/v1``: the archive's rows and incidents, read-only, paged by keyset.

Every list answers ``{"items": [...], "continue": TOKEN}``; pass ``continue=TOKEN`` for the next
page (``null`` on the last one). ``limit`` is 1..500 (default 100). ``cluster`` picks one of the
archive's clusters (default: ``kubemedic web --cluster``, else the first). ``since``/``until``
take RFC 3339 or a duration back from the archive's newest event (``2h``). A bad parameter
answers 400 with ``{"error": "..."}``; a cluster, incident or node the archive does not hold,
404.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from kubemedic.incidents import Incident
from kubemedic.model import objects
from kubemedic.store import browsing
from kubemedic.web.reading import NotFound, Reader, as_time, shaped

__all__ = ["PageModel", "reader", "router"]

router = APIRouter(prefix="/api/v1", tags=["archive"])


class PageModel(BaseModel):
    """One page of a list."""

    items: list[dict[str, Any]]
    continue_: str | None = Field(
        default=None,
        alias="continue",
        description="Pass as `continue` for the next page; null on the last page.",
    )


def reader(request: Request) -> Reader:
    found: Reader = request.app.state.reader
    return found


ReaderDep = Annotated[Reader, Depends(reader)]
Cluster = Annotated[str | None, Query(description="One of the archive's clusters.")]
Limit = Annotated[int, Query(ge=1, le=browsing.MAX_LIMIT, description="Rows per page.")]
Continue = Annotated[
    str | None, Query(alias="continue", description="The token of the previous page.")
]
Since = Annotated[str | None, Query(description="RFC 3339, or a duration back (2h).")]


def _page(found: dict[str, Any]) -> PageModel:
    return PageModel.model_validate({"items": found["items"], "continue": found["continue"]})


@router.get("/clusters", summary="The clusters the archive holds")
def clusters(read: ReaderDep) -> dict[str, Any]:
    return {"clusters": read.clusters()}


@router.get("/events", response_model=PageModel, summary="Events, last seen newest first")
def events(
    read: ReaderDep,
    *,
    cluster: Cluster = None,
    namespace: str | None = None,
    kind: Annotated[str | None, Query(description="Involved object's kind (po, pods...).")] = None,
    name: Annotated[str | None, Query(description="Involved object's name.")] = None,
    reason: str | None = None,
    type: Annotated[str | None, Query(description="Normal or Warning.")] = None,
    node: str | None = None,
    since: Since = None,
    until: Since = None,
    limit: Limit = 100,
    token: Continue = None,
) -> PageModel:
    chosen = read.cluster(cluster)
    where = browsing.EventFilter(
        namespace=namespace,
        kind=kind,
        name=name,
        reason=reason,
        type=type,
        node=node,
        since=read.moment("since", since, chosen),
        until=read.moment("until", until, chosen),
    )
    return _page(read.page("events", chosen, where=where, limit=limit, token=token))


def _pod_list(listing: Literal["oom_kills", "evictions"], *, path: str, summary: str) -> None:
    """Add the route ``path``: a page of ``browsing.pod_rows``' list ``listing``. The route is
    named ``listing``, as its function was: the OpenAPI operation id is made of the name."""

    def listed(
        read: ReaderDep,
        *,
        cluster: Cluster = None,
        namespace: str | None = None,
        node: str | None = None,
        since: Since = None,
        until: Since = None,
        limit: Limit = 100,
        token: Continue = None,
    ) -> PageModel:
        chosen = read.cluster(cluster)
        return _page(
            read.page(
                "pod_rows",
                chosen,
                listing=listing,
                namespace=namespace,
                node=node,
                since=read.moment("since", since, chosen),
                until=read.moment("until", until, chosen),
                limit=limit,
                token=token,
            )
        )

    router.get(path, response_model=PageModel, summary=summary, name=listing)(listed)


_pod_list("oom_kills", path="/oom-kills", summary="Containers OOM-killed, newest first")
_pod_list("evictions", path="/evictions", summary="Pods evicted, newest first")


@router.get("/findings", response_model=PageModel, summary="Finding episodes, newest first")
def findings(
    read: ReaderDep,
    *,
    cluster: Cluster = None,
    check: str | None = None,
    severity: Annotated[str | None, Query(description="info, warning or critical.")] = None,
    kind: str | None = None,
    name: str | None = None,
    namespace: str | None = None,
    limit: Limit = 100,
    token: Continue = None,
) -> PageModel:
    return _page(
        read.page(
            "findings",
            read.cluster(cluster),
            check=check,
            severity=severity,
            kind=kind,
            name=name,
            namespace=namespace,
            limit=limit,
            token=token,
        )
    )


def _brief(incident: Incident, related: int) -> dict[str, Any]:
    """An incident without its timeline, findings, signals, cause, follow-ups and related links
    (a list's row: ``/incidents/{id}`` has the rest)."""
    return {
        "id": incident.id,
        "cluster": incident.cluster,
        "cause": incident.cause,
        "kind": incident.kind.value,
        "title": incident.title,
        "summary": incident.summary,
        "start": objects.format_time(incident.start),
        "end": objects.format_time(incident.end),
        "durationSeconds": int(incident.duration_seconds),
        "severity": incident.severity.label,
        "tags": list(incident.tags),
        "symptoms": list(incident.symptoms),
        "pools": list(incident.pools),
        "nodes": list(incident.nodes),
        "workloads": list(incident.workloads),
        "culprits": list(incident.culprits),
        "harmed": list(incident.harmed),
        "relatedCount": related,
    }


@router.get("/incidents", response_model=PageModel, summary="Incidents, newest start first")
def incidents(
    read: ReaderDep,
    *,
    cluster: Cluster = None,
    state: Annotated[
        str, Query(pattern="^(open|all)$", description="open: ended within 30 min of now.")
    ] = "all",
    limit: Limit = 100,
    token: Continue = None,
) -> PageModel:
    chosen = read.cluster(cluster)
    page, following = read.incident_page(
        chosen, open_only=state == "open", limit=limit, token=token
    )
    return PageModel.model_validate(
        {
            "items": [_brief(i, read.related_count(chosen, i)) for i in page],
            "continue": following,
        }
    )


@router.get(
    "/incidents/{incident_id}",
    summary="One incident: timeline, evidence, related",
    response_class=JSONResponse,
    responses={200: {"content": {"application/json": {"schema": {"type": "object"}}}}},
)
def incident(incident_id: str, read: ReaderDep, cluster: Cluster = None) -> Response:
    chosen = read.cluster(cluster)
    found = read.incident(chosen, incident_id)
    document = found.to_json()
    document["relatedIncidents"] = [
        _brief(other, read.related_count(chosen, other)) for other in read.related(chosen, found)
    ]
    # Already plain JSON values: written at once (an incident of a busy pool lists thousands
    # of related ones, which FastAPI's encoder would walk value by value).
    return Response(orjson.dumps(document), media_type="application/json")


@router.get("/nodes", summary="Nodes: repair state and memory/CPU commitment")
def nodes(read: ReaderDep, cluster: Cluster = None) -> dict[str, Any]:
    chosen = read.cluster(cluster)
    return {"items": node_overview(read, chosen)}


def node_overview(
    read: Reader, cluster: str, latest: list[dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Every node the archive knows, with its repair state and latest commitment (``latest``:
    ``browsing.latest_commitment``'s rows, when the caller has them already)."""
    names = read.read("node_names", cluster)
    states = {row["node"]: row for row in read.archive.node_states(cluster)}
    if latest is None:
        latest = read.read("latest_commitment", cluster)
    commitment: dict[str, dict[str, Any]] = {}
    for row in latest:
        entry = commitment.setdefault(row["node"], {"pool": row["pool"]})
        entry[row["resource"]] = {
            "requestsPercent": row["requestsPercent"],
            "limitsPercent": row["limitsPercent"],
            "at": as_time(row["lastSeen"]),
        }
    found = []
    for name in sorted(set(names) | set(commitment)):
        state = states.get(name) or {}
        seen = commitment.get(name, {})
        found.append(
            {
                "name": name,
                "state": state.get("state") or "unknown",
                "step": state.get("step") or "",
                "reason": state.get("reason") or "",
                "since": state.get("since"),
                "pool": seen.get("pool", ""),
                "memory": seen.get("memory"),
                "cpu": seen.get("cpu"),
            }
        )
    return found


@router.get("/nodes/{name}", summary="One node: ladder, ledger, decisions, conditions over time")
def node(name: str, read: ReaderDep, cluster: Cluster = None) -> dict[str, Any]:
    chosen = read.cluster(cluster)
    return node_detail(read, chosen, name)


def node_detail(read: Reader, cluster: str, name: str) -> dict[str, Any]:
    repair = read.read("node_repair", cluster, name)
    transitions = [shaped(row) for row in read.read("node_transitions", cluster, name)]
    if repair["state"] is None and not transitions and not repair["ledger"]:
        raise NotFound(f"no node {name!r} in cluster {cluster!r} of the archive")
    return {
        "name": name,
        "cluster": cluster,
        "state": None if repair["state"] is None else shaped(repair["state"]),
        "repair": repair["repair"],
        "ledger": repair["ledger"],
        "decisions": repair["decisions"],
        "transitions": transitions,
        "incidents": [i.id for i in read.node_incidents(cluster, name)],
    }


@router.get("/storms", response_model=PageModel, summary="The storm breaker's decisions")
def storms(
    read: ReaderDep,
    *,
    cluster: Cluster = None,
    owner: Annotated[str | None, Query(description="namespace/Kind/name")] = None,
    kind: Annotated[str | None, Query(description="act, dry-run, alert, hold...")] = None,
    limit: Limit = 100,
    token: Continue = None,
) -> PageModel:
    return _page(
        read.page(
            "breaker_decisions",
            read.cluster(cluster),
            owner=owner,
            kind=kind,
            limit=limit,
            token=token,
        )
    )


@router.get("/breaker", summary="The storm breaker's state: storms in progress, reverts")
def breaker(read: ReaderDep, cluster: Cluster = None) -> dict[str, Any]:
    chosen = read.cluster(cluster)
    return {"cluster": chosen, "state": read.read("breaker_state", chosen)}
