"""Right-sizing on the dashboard: ``kubemedic recommend``'s recommendations, read from the same
archive: ``GET /api/v1/recommendations`` here, and for ``pages`` the ``/recommendations`` page
and a box on each incident page for the workloads the incident involves.

The rule is ``recommend.policy``'s (Robusta KRR's ``simple`` strategy: CPU request at p95 of the
samples, memory at the peak plus 15 %, never below a peak that ended in an OOM kill or an
eviction), over a window of the archive: ``since``/``until`` when given, else the last
``DEFAULT_HISTORY`` of the archive's time (the same window KRR reads by default). An incident's
box reads the same history up to the incident's end, so it shows what the workload should have
asked for when it was harmed.

Reading every sample of a window is the costly part, so answers are kept for
``Reader.INCIDENTS_FRESH`` seconds per (cluster, namespace, workload, window), as incidents are.
"""

from __future__ import annotations

import threading
import time
import weakref
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Final

from fastapi import APIRouter, Query

from kubemedic.incidents import Incident
from kubemedic.recommend import archived, policy, rendering
from kubemedic.store import browsing, usage
from kubemedic.web.api import Cluster, ReaderDep, Since
from kubemedic.web.reading import Reader, as_time

__all__ = [
    "DEFAULT_HISTORY",
    "SAMPLE_BUDGET",
    "TooMany",
    "for_incident",
    "forget",
    "parse_workload",
    "recommendations",
    "router",
]

DEFAULT_HISTORY: Final = timedelta(days=14)
"""How far back a recommendation reads when no ``since`` is given."""

SAMPLE_BUDGET: Final = 15_000
"""Samples a request may size at once without a workload (reading and sizing them takes about
1.4 s per 100,000 on a 2-core machine, bench/web.py): above it the answer asks for a workload, a
namespace or a shorter window, and ``kubemedic recommend`` sizes any amount."""

MAX_WORKLOADS: Final = 5
"""Workloads an incident page sizes at most (culprits first, then the harmed)."""

router = APIRouter(prefix="/api/v1", tags=["archive"])

_lock = threading.Lock()
_Kept = dict[tuple[Any, ...], tuple[float, list[dict[str, Any]]]]
_caches: weakref.WeakKeyDictionary[Reader, _Kept] = weakref.WeakKeyDictionary()
"""Answers kept per reader (one per dashboard), by cluster, namespace, workload and window."""
_CACHE_MAX: Final = 256


class TooMany(browsing.PageError):
    """More samples than a request sizes at once (``SAMPLE_BUDGET``); the message says what
    to narrow."""


def parse_workload(text: str | None) -> tuple[str, str] | None:
    """``Kind/name`` -> ``(kind, name)``; a page error naming the parameter otherwise."""
    if text is None or not text.strip():
        return None
    kind, slash, name = text.strip().partition("/")
    if not slash or not kind or not name or "/" in name:
        raise browsing.PageError(
            f"workload {text[:200]!r}: expected KIND/NAME such as Deployment/hub"
        )
    return kind, name


def forget() -> None:
    """Drop every kept answer (the next request reads the archive again)."""
    with _lock:
        _caches.clear()


def _moment(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def recommendations(
    read: Reader,
    cluster: str,
    *,
    namespace: str | None = None,
    workload: tuple[str, str] | None = None,
    since: float | None = None,
    until: float | None = None,
) -> tuple[list[dict[str, Any]], float, float]:
    """The recommendations (as ``kubemedic recommend -o json`` prints them) of ``cluster``'s
    workload containers in the window, with the window's ``(since, until)`` epoch seconds."""
    end = until if until is not None else read.now(cluster)
    start = since if since is not None else end - DEFAULT_HISTORY.total_seconds()
    key = (cluster, namespace or "", workload, round(start), round(end))
    now = time.monotonic()
    with _lock:
        cached = _caches.setdefault(read, {}).get(key)
        if cached is not None and now - cached[0] < Reader.INCIDENTS_FRESH:
            return cached[1], start, end
    if workload is None:
        over = usage.more_samples_than(
            SAMPLE_BUDGET,
            read.archive,
            cluster=cluster,
            namespace=namespace or None,
            since=_moment(start),
            until=_moment(end),
        )
        if over:
            scope = f"namespace {namespace}" if namespace else f"cluster {cluster}"
            raise TooMany(
                f"the {scope} holds more usage samples in this window than the "
                f"dashboard sizes at once ({SAMPLE_BUDGET:,}): choose a workload "
                "(workload=KIND/NAME), a namespace or a shorter window (since), or run "
                f"`kubemedic recommend{' -n ' + namespace if namespace else ''}`"
            )
    found = archived.recommend_from_archive(
        read.archive,
        cluster=cluster,
        namespace=namespace or None,
        workload=workload,
        since=_moment(start),
        until=_moment(end),
    )
    shaped = [rendering.recommendation_json(item) for item in found]
    with _lock:
        kept = _caches.setdefault(read, {})
        if len(kept) >= _CACHE_MAX:
            kept.clear()
        kept[key] = (now, shaped)
    return shaped, start, end


def for_incident(read: Reader, cluster: str, incident: Incident) -> list[dict[str, Any]]:
    """Recommendations for the workloads ``incident`` involves (culprits, then the harmed),
    from the history up to its end: what they should have asked for."""
    wanted: list[str] = []
    for key in (*incident.culprits, *incident.harmed, *incident.workloads):
        if key not in wanted and key.count("/") == 2:
            wanted.append(key)
    end = incident.end.timestamp()
    start = end - DEFAULT_HISTORY.total_seconds()
    found: list[dict[str, Any]] = []
    for key in wanted[:MAX_WORKLOADS]:
        namespace, kind, name = key.split("/")
        items, _, _ = recommendations(
            read, cluster, namespace=namespace, workload=(kind, name), since=start, until=end
        )
        found.extend(items)
    return found


@router.get("/recommendations", summary="Requests and limits recommended per container")
def recommendations_api(
    read: ReaderDep,
    *,
    cluster: Cluster = None,
    namespace: str | None = None,
    workload: Annotated[
        str | None, Query(description="KIND/NAME of one workload (Deployment/hub).")
    ] = None,
    since: Since = None,
    until: Since = None,
) -> dict[str, Any]:
    """``kubemedic recommend``'s answer over the archive: one item per workload container with
    samples in the window (default: the last 14 days the archive saw)."""
    chosen = read.cluster(cluster)
    items, start, end = recommendations(
        read,
        chosen,
        namespace=namespace,
        workload=parse_workload(workload),
        since=read.moment("since", since, chosen),
        until=read.moment("until", until, chosen),
    )
    return {
        "settings": rendering.settings_json(policy.Settings()),
        "since": as_time(start),
        "until": as_time(end),
        "items": items,
    }
