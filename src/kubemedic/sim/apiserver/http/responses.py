"""What the HTTP layer needs of the server, and the responses both handlers and watches send.

:class:`Backend` is the server as request handling sees it: its storage, writer, registry,
clock, garbage collector and fault settings. :class:`~kubemedic.sim.apiserver.server.ApiServer`
is one; naming the parts here keeps the HTTP layer below the server that assembles it.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, Protocol

import orjson
from aiohttp import web

from kubemedic.sim.apiserver.http.faults import Faults
from kubemedic.sim.apiserver.http.recording import RequestLog
from kubemedic.sim.apiserver.openapi import crds
from kubemedic.sim.apiserver.registry.collecting import Collector
from kubemedic.sim.apiserver.registry.writing import Writer
from kubemedic.sim.apiserver.storage import Store
from kubemedic.sim.apiserver.tables import tabulating
from kubemedic.sim.machinery.apiresources import Registry, Resource
from kubemedic.sim.machinery.clock import VirtualClock
from kubemedic.sim.machinery.definitions import Definitions
from kubemedic.sim.machinery.objects import Obj

#: The media type of every JSON response.
JSON = "application/json"


class Backend(Protocol):
    """The parts of an API server that request handling reads and writes through."""

    clock: VirtualClock
    registry: Registry
    defs: Definitions
    store: Store
    writer: Writer
    collector: Collector
    faults: Faults
    bookmark_seconds: float
    read_hooks: dict[str, Callable[[], None]]
    request_log: RequestLog | None


def json_response(
    body: Any, *, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return web.Response(body=raw, status=status, content_type=JSON, headers=headers)


def table_for(
    server: Backend,
    request: web.Request,
    res: Resource,
    objects: list[Obj],
    *,
    list_meta: dict[str, Any],
    no_headers: bool = False,
) -> dict[str, Any]:
    """Server-side printing in the Table version the client asked for."""
    version = tabulating.negotiate_table(request.headers.get("Accept", "")) or "meta.k8s.io/v1"
    columns = None
    if res.custom:
        crd = server.store.get(
            "customresourcedefinitions.apiextensions.k8s.io", ("", f"{res.plural}.{res.group}")
        )
        if crd is not None:
            columns = crds.printer_columns(crd.obj, res.version)
    return tabulating.table(
        res.plural,
        res.group,
        objects,
        now=server.clock.now(),
        include_object=tabulating.include_object_from(request.query),
        list_meta=list_meta,
        api_version=version,
        no_headers=no_headers,
        printer_columns=columns,
    )


def jitter_timeout(default: float = 1800.0) -> float:
    """The real server's default watch timeout: between min-request-timeout and twice it."""
    return default * (1 + random.random())  # noqa: S311 - not security relevant
