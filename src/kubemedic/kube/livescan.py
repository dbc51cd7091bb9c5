"""One-shot reads of a live cluster for a scan: everything the checks look at, listed once.

Each collection is listed in pages (``limit=500``, following ``metadata.continue``), as kubectl
and client-go's pager do, so the API server never builds one response of 150,000 pods. All pages
of a list come from one consistent snapshot (the first page's resourceVersion) unless the
continue token outlives etcd's compaction: the server then answers ``410 Expired`` ("The
provided continue parameter is too old to display a consistent list result"), and client-go's
pager starts the list again without the token; so does ``fetch``, once per collection.

The collections are listed concurrently, except the signs of life: Nodes and the node Leases of
``kube-node-lease`` (only that namespace is listed) are read after every other list, just before
the clock. A kubelet renews its Lease every 10 s but rewrites an unchanged status only every 5
minutes; a Node read at the start of a scan whose pod list takes a minute of cluster time would
look a minute staler than it is when judged at the clock read at the end. Items of a list carry
no ``kind``/``apiVersion`` (the list's ``kind`` is ``PodList``), so both are set on each. Secrets
are never listed.

Failures: ``429`` (API Priority and Fairness, honouring ``Retry-After``), ``5xx`` and lost
connections are retried with exponential back-off and jitter, up to 5 attempts per request,
then reported as ``KubeAccessError`` naming the server and the path. A collection the server
does not serve (``404``) is noted and skipped, except nodes and pods, without which there is
nothing to judge. Leases that may not be read (``403``) are noted and skipped too: node liveness
is then judged from status heartbeats alone, as before Leases were read. metrics.k8s.io is an
aggregated API served by metrics-server: ``404`` (not registered) or ``503`` (registered, its
backend down) means no metrics, a note, not an error.

The time the snapshot is judged at is the server's: the emulator's virtual clock
(``GET /kubemedic.io/v1/clock``) when served, else the ``Date`` header kube-apiserver stamps on
every response (``Api.server_time``), read after the lists so no object is newer than it.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from kubemedic.kube import kinds
from kubemedic.kube.api import (
    Api,
    ApiError,
    BadAnswer,
    ConnectionLost,
    Forbidden,
    Gone,
    Kind,
    NotFound,
    ServiceUnavailable,
    Unauthorized,
    status_text,
)
from kubemedic.kube.backoff import Backoff
from kubemedic.kube.clock import CLOCK_PATH
from kubemedic.kube.config import KubeAccessError
from kubemedic.model import objects
from kubemedic.model.liveness import NODE_LEASE_NAMESPACE
from kubemedic.model.view import ClusterView

__all__ = ["DEFAULT_KINDS", "LiveSnapshot", "fetch"]

T = TypeVar("T")

#: Every collection the checks read (model.view's KNOWN_KINDS, less Namespaces no check uses).
#: Those in ``LAST`` are listed after the others whatever their place here.
DEFAULT_KINDS: tuple[Kind, ...] = (
    kinds.NODES,
    kinds.PODS,
    kinds.EVENTS,
    kinds.DEPLOYMENTS,
    kinds.REPLICASETS,
    kinds.DAEMONSETS,
    kinds.STATEFULSETS,
    kinds.REPLICATION_CONTROLLERS,
    kinds.JOBS,
    kinds.CRONJOBS,
    kinds.PRIORITY_CLASSES,
    kinds.POD_METRICS,
    kinds.NODE_METRICS,
    kinds.LEASES,
)
LAST: tuple[Kind, ...] = (kinds.NODES, kinds.LEASES)
"""The signs of life, listed after the other collections, just before the clock is read."""
NAMESPACES: dict[Kind, str] = {kinds.LEASES: NODE_LEASE_NAMESPACE}
"""Collections listed in one namespace only: the node Leases, not every leader election."""
METRICS_GROUP = "metrics.k8s.io"
UNREAD = "unread"
PAGE_SIZE = 500
ATTEMPTS = 5
BACKOFF_INITIAL = 0.4
BACKOFF_CAP = 8.0


@dataclass(slots=True)
class LiveSnapshot:
    """What one pass over a live cluster read."""

    server: str
    bodies: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    at: datetime | None = None
    """The server's time after the lists (None when it could not be read)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Objects read per collection (``Kind.stream``)."""

    def view(self, *, at: datetime | None = None) -> ClusterView:
        """The objects as of ``at``, else the server's time, else their newest timestamp."""
        return ClusterView.build(self.bodies, at=at or self.at)


async def fetch(
    api: Api,
    *,
    kinds: tuple[Kind, ...] = DEFAULT_KINDS,
    page_size: int = PAGE_SIZE,
    attempts: int = ATTEMPTS,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> LiveSnapshot:
    """List every collection in ``kinds`` once. Raises ``KubeAccessError`` when one cannot be
    read (after retries), naming the server and path."""
    if any(kind.plural == "secrets" for kind in kinds):
        raise ValueError("kubemedic never lists Secrets")
    snapshot = LiveSnapshot(server=api.server)
    retry = _Retry(api.server, attempts=attempts, sleep=sleep)
    first = tuple(kind for kind in kinds if kind not in LAST)
    last = tuple(kind for kind in kinds if kind in LAST)
    results: list[list[dict[str, Any]] | str] = []
    for group in (first, last):
        results += await _list_concurrently(api, group, page_size, retry, snapshot.notes)
    not_served: list[str] = []
    for kind, result in zip((*first, *last), results, strict=True):
        if isinstance(result, str):
            if kind.group == METRICS_GROUP:
                note = f"{METRICS_GROUP} is not served ({result}): no usage figures"
                if note not in snapshot.notes:
                    snapshot.notes.append(note)
            elif result == UNREAD:  # the node Leases
                snapshot.notes.append(
                    f"Leases in {NODE_LEASE_NAMESPACE} could not be listed (403 or 404): node "
                    "liveness is judged from status heartbeats only; grant list on leases there."
                )
            else:
                not_served.append(kind.stream)
            continue
        snapshot.counts[kind.stream] = len(result)
        snapshot.bodies.extend(result)
    if not_served:
        snapshot.notes.append(f"Not served by this API server: {', '.join(not_served)}.")
    snapshot.at = await server_time(api)
    return snapshot


async def _list_concurrently(
    api: Api, group: tuple[Kind, ...], page_size: int, retry: _Retry, notes: list[str]
) -> list[list[dict[str, Any]] | str]:
    tasks = [
        asyncio.create_task(_list_all(api, kind, page_size=page_size, retry=retry, notes=notes))
        for kind in group
    ]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def server_time(api: Api) -> datetime | None:
    """The API server's clock: the emulator's virtual clock when it publishes one, else the
    ``Date`` header of a response (second precision); None when neither can be read."""
    try:
        clock = await api.get(CLOCK_PATH)
    except (ApiError, ConnectionLost):
        clock = None
    if isinstance(clock, dict):
        now = objects.parse_time(clock.get("now"))
        if now is not None:
            return now
    try:
        return await api.server_time()
    except ConnectionLost:
        return None


async def _list_all(
    api: Api, kind: Kind, *, page_size: int, retry: _Retry, notes: list[str]
) -> list[dict[str, Any]] | str:
    """Every item of ``kind``, or a short reason when the server does not serve it (or, for
    Leases, ``UNREAD`` when they may not be listed)."""
    namespace = NAMESPACES.get(kind)
    path = kind.path(namespace)
    restarted = False
    while True:
        items: list[dict[str, Any]] = []
        token: str | None = None
        try:
            while True:
                page = await retry(
                    functools.partial(
                        api.list_page,
                        kind,
                        limit=page_size,
                        continue_token=token,
                        namespace=namespace,
                    ),
                    path=path,
                    tolerate=_tolerated(kind),
                )
                if page is None and kind == kinds.LEASES:
                    return UNREAD  # forbidden or not served: judged without Leases
                if page is None:
                    return "not found" if kind.group != METRICS_GROUP else "no metrics-server"
                for item in page.get("items") or ():
                    if isinstance(item, dict):
                        body = objects.LoadedBody(item)
                        body["kind"] = kind.kind
                        body["apiVersion"] = kind.api_version
                        items.append(body)
                token = _continue_of(page)
                if not token:
                    return items
        except ApiError as error:
            if isinstance(error, Gone) and token and not restarted:
                restarted = True  # the continue token expired: list again, from the start
                notes.append(
                    f"The list of {kind.stream} was restarted: its continue token expired (410)."
                )
                continue
            raise KubeAccessError(_describe(api.server, path, error)) from None


def _tolerated(kind: Kind) -> tuple[type[ApiError], ...]:
    """Answers meaning "not served here" rather than failure."""
    if kind.group == METRICS_GROUP:
        return (NotFound, ServiceUnavailable)
    if not kind.group and kind.plural in ("nodes", "pods"):
        return ()  # without them there is nothing to judge
    if kind == kinds.LEASES:
        return (NotFound, Forbidden)  # liveness falls back to status heartbeats
    return (NotFound,)


def _continue_of(page: dict[str, Any]) -> str | None:
    meta = page.get("metadata")
    token = meta.get("continue") if isinstance(meta, dict) else None
    return token if isinstance(token, str) and token else None


def _describe(server: str, path: str, error: ApiError | ConnectionLost) -> str:
    if isinstance(error, BadAnswer):
        return f"{server}: {error}"
    if isinstance(error, ConnectionLost):
        return f"{server}{path}: no answer: {error}"
    hint = ""
    if isinstance(error, Unauthorized):
        hint = " (the credentials were rejected)"
    elif isinstance(error, Forbidden):
        hint = " (grant this identity list on it)"
    elif isinstance(error, Gone):
        hint = " (the list's continue token expired twice)"
    text = status_text(error.code, reason=error.reason, message=error.message, path=path)
    return f"{server}: {text}{hint}"


@dataclass(slots=True)
class _Retry:
    """Up to ``attempts`` tries of one request on 429, 5xx and lost connections, waiting
    ``BACKOFF_INITIAL * 2**n`` seconds (capped, with up to half again as jitter so concurrent
    lists do not retry in step), and at least the ``Retry-After`` the server sent."""

    server: str
    attempts: int
    sleep: Callable[[float], Awaitable[None]]

    async def __call__(
        self,
        call: Callable[[], Awaitable[T]],
        *,
        path: str,
        tolerate: tuple[type[ApiError], ...] = (),
    ) -> T | None:
        backoff = Backoff(initial=BACKOFF_INITIAL, cap=BACKOFF_CAP, jitter=0.5)
        attempt = 0
        while True:
            attempt += 1
            last: ApiError | ConnectionLost
            try:
                return await call()
            except ApiError as error:
                if isinstance(error, tolerate):
                    return None
                if not error.retryable:
                    raise
                last = error
            except ConnectionLost as error:
                last = error
            if attempt >= self.attempts:
                raise KubeAccessError(
                    f"{_describe(self.server, path, last)} (gave up after {attempt} attempts)"
                ) from None
            await self.sleep(backoff.next_delay(last))
