"""Watch streams: newline-delimited ``WatchEvent`` JSON over a chunked response.

A watch subscribes to the store *before* it reads the starting state, so no change falls between
the initial events and the live ones. Starting points, as the real server:

* no ``resourceVersion`` or ``"0"``: synthetic ``ADDED`` events for every current object, then
  live changes (``sendInitialEvents=true`` does the same and ends the initial part with a
  ``BOOKMARK`` annotated ``k8s.io/initial-events-end``);
* a resourceVersion still in the history: every change after it, then live changes;
* an older one: one ``ERROR`` event holding a ``410 Expired`` Status, and the stream ends, which
  tells a reflector to relist.

``allowWatchBookmarks`` adds ``BOOKMARK`` events while the stream is idle, carrying the current
resourceVersion so a client can resume from it after a disconnect without a relist. The stream
ends after ``timeoutSeconds`` (default 30-60 minutes, as kube-apiserver's
``--min-request-timeout``) or when the watcher falls too far behind.
"""

from __future__ import annotations

import asyncio
import contextlib
from email.utils import format_datetime
from typing import Any

import orjson
from aiohttp import web

from kubemedic.sim.apiserver.http.responses import Backend, jitter_timeout, table_for
from kubemedic.sim.apiserver.registry import reading
from kubemedic.sim.apiserver.storage import Watcher
from kubemedic.sim.apiserver.tables import tabulating
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.objects import Change, Obj


async def stream(
    server: Backend, request: web.Request, res: Resource, query: reading.Query
) -> web.StreamResponse:
    store = server.store
    faults = server.faults
    params = request.query
    rv_text = params.get("resourceVersion", "")
    send_initial = params.get("sendInitialEvents", "").lower() == "true"
    bookmarks = params.get("allowWatchBookmarks", "").lower() in ("1", "true")
    as_table = tabulating.accepts_table(request.headers.get("Accept", ""))
    try:
        timeout = float(params["timeoutSeconds"]) if "timeoutSeconds" in params else None
    except ValueError:
        raise errors.bad_request(f"invalid timeoutSeconds: {params['timeoutSeconds']}") from None
    if timeout is None:
        timeout = jitter_timeout()
    start: int | None = None
    if rv_text not in ("", "0") and not send_initial:
        try:
            start = int(rv_text)
        except ValueError:
            raise errors.bad_request(f"invalid resourceVersion: {rv_text}") from None

    headers_sent = False

    def render(kind: str, obj: Obj) -> bytes:
        nonlocal headers_sent
        shown: Any = reading.present(res, obj)
        if as_table and kind != "BOOKMARK":
            # Column definitions go with the first event only, as the real server sends them.
            shown = table_for(server, request, res, [shown], list_meta={}, no_headers=headers_sent)
            headers_sent = True
        return orjson.dumps({"type": kind, "object": shown}) + b"\n"

    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.headers["Transfer-Encoding"] = "chunked"
    # Prepared here, so the middleware cannot date it: the virtual clock does, as everywhere.
    response.headers["Date"] = format_datetime(server.clock.now(), usegmt=True)
    await response.prepare(request)
    if start is not None and (faults.force_gone or start < store.oldest_watchable):
        gone = errors.gone(f"too old resource version: {start} ({store.oldest_watchable})")
        await response.write(orjson.dumps({"type": "ERROR", "object": gone.to_status()}) + b"\n")
        await response.write_eof()
        return response
    watcher = Watcher(store=res.store_key, namespace=query.namespace, accepts=lambda _o: True)
    store.subscribe(watcher)
    events = reading.watch_filter(res, query)
    sent = 0
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        chunk: list[bytes] = []
        if start is None:
            accepts = query.predicate(res)
            for _key, entry in store.scan(res.store_key, namespace=query.namespace):
                if accepts(entry.obj):
                    chunk.append(render("ADDED", entry.obj))
            if send_initial:
                mark = reading.bookmark(res, store.resource_version, initial_events_end=True)
                chunk.append(render("BOOKMARK", mark))
        else:
            for change in store.since(res.store_key, start):
                chunk.extend(render(kind, obj) for kind, obj in events(change))
        if chunk:
            await response.write(b"".join(chunk))
            sent += len(chunk)
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            wait = min(remaining, server.bookmark_seconds)
            try:
                first = await asyncio.wait_for(watcher.queue.get(), timeout=wait)
            except TimeoutError:
                if bookmarks and not faults.watch_stall and watcher.queue.empty():
                    mark = reading.bookmark(res, store.resource_version)
                    await response.write(render("BOOKMARK", mark))
                continue
            batch: list[Change | None] = [first]
            while not watcher.queue.empty():
                batch.append(watcher.queue.get_nowait())
            if faults.watch_stall:
                continue
            out: list[bytes] = []
            closed = False
            for pending in batch:
                if pending is None:
                    closed = True
                    break
                for kind, obj in events(pending):
                    out.append(render(kind, obj))
                    if faults.watch_drop_after and sent + len(out) >= faults.watch_drop_after:
                        closed = True
                        break
                if closed:
                    break
            if out:
                await response.write(b"".join(out))
                sent += len(out)
            if closed:
                break
    except (ConnectionResetError, ConnectionError):
        pass
    finally:
        store.unsubscribe(watcher)
    with contextlib.suppress(ConnectionResetError, ConnectionError, RuntimeError):
        await response.write_eof()
    return response
