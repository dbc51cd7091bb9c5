"""HTTP request handling of the API emulator: routing, verbs, watch streams, errors.

URL layout as kube-apiserver's: ``/api/v1/...`` for the core group, ``/apis/<group>/<version>/...``
for the others, ``namespaces/<ns>/`` before namespaced resources, subresources after the name.
Every failure is a ``Status`` object with ``Content-Type: application/json``; a watch that
cannot resume answers ``200`` and then one ``ERROR`` event carrying a ``410`` Status, which is
what clients (client-go reflectors, lightkube) expect from the watch cache.

The field manager of a write is the ``fieldManager`` parameter, or the User-Agent's prefix
before ``/`` (``kubectl/v1.32.4 ...`` gives ``kubectl``), as the real server derives it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from kubemedic import __version__
from kubemedic.sim.apiserver.fields import fieldmanaging
from kubemedic.sim.apiserver.http.faults import FaultError
from kubemedic.sim.apiserver.http.recording import ApiCall, request_verb
from kubemedic.sim.apiserver.http.responses import JSON, Backend, json_response, table_for
from kubemedic.sim.apiserver.http.watching import stream
from kubemedic.sim.apiserver.openapi.documents import OpenAPI
from kubemedic.sim.apiserver.patches import patching
from kubemedic.sim.apiserver.protobuf import MEDIA_TYPE, ProtobufError, UnsupportedKind, decode
from kubemedic.sim.apiserver.registry import converting, reading, subresources
from kubemedic.sim.apiserver.registry.writing import DeleteOptions, WriteOptions
from kubemedic.sim.apiserver.tables import tabulating
from kubemedic.sim.apiserver.webhooks.calling import warning_header
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.clock import http_date, rfc3339_micro
from kubemedic.sim.machinery.objects import Key, Obj

Handler_ = Callable[[web.Request], Awaitable[web.StreamResponse]]

_log = logging.getLogger(__name__)
#: Lists with at least this many items are streamed in chunks rather than built whole.
_STREAM_ITEMS = 2000
_CONTROL = "/kubemedic.io/v1/"
_HEALTH = frozenset({"/healthz", "/livez", "/readyz"})

VERSION_INFO = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-kubemedic",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
    "emulator": f"kubemedic {__version__}",
}


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("1", "true")


class Handler:
    """Routes requests to the server's storage and writers."""

    def __init__(self, server: Backend) -> None:
        self.server = server
        self._openapi: Any = None

    # middleware ------------------------------------------------------------------------------

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler_) -> web.StreamResponse:
        faults = self.server.faults
        # /api/v1/<resource>... and /apis/<group>/<version>/<resource>...: discovery documents
        # above them stay healthy.
        depth = request.path.rstrip("/").count("/")
        is_resource = (request.path.startswith("/api/") and depth > 2) or (
            request.path.startswith("/apis/") and depth > 3
        )
        try:
            if is_resource:
                if faults.latency > 0:
                    await asyncio.sleep(faults.latency)
                if faults.roll(faults.throttle_rate):
                    return _throttled(faults.retry_after, as_status=faults.throttle_status)
                if faults.roll(faults.error_rate):
                    raise errors.internal("injected fault")
                if faults.roll(faults.timeout_rate):
                    await asyncio.sleep(faults.timeout_seconds)
                    raise errors.timeout()
            response = await handler(request)
        except errors.StatusError as exc:
            response = json_response(exc.to_status(), status=exc.code, headers=dict(exc.headers))
        except web.HTTPException:
            raise
        except Exception as exc:
            # A bug must still answer a Status, as the real server's panic recovery does.
            _log.exception("internal error serving %s %s", request.method, request.path)
            failure = errors.internal(f"{type(exc).__name__}: {exc}")
            response = json_response(failure.to_status(), status=500)
        if not response.prepared:
            response.headers["Date"] = http_date(self.server.clock.now())
        return response

    # routing ---------------------------------------------------------------------------------

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if path.startswith(_CONTROL):
            return await self._control(request, path[len(_CONTROL) :])
        if path in _HEALTH or path.startswith(tuple(h + "/" for h in _HEALTH)):
            return web.Response(text="ok")
        if path == "/version":
            return json_response(VERSION_INFO)
        if path.startswith("/openapi/"):
            return self._openapi_response(request, path)
        parts = [p for p in path.split("/") if p]
        if not parts or parts[0] not in ("api", "apis"):
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        registry = self.server.registry
        if parts[0] == "api":
            if len(parts) == 1:
                return json_response(registry.api_versions())
            group, version, rest = "", parts[1], parts[2:]
        else:
            if len(parts) == 1:
                return json_response(registry.api_group_list())
            if len(parts) == 2:
                found = registry.api_group(parts[1])
                if found is None:
                    raise _not_found_path()
                return json_response(found)
            group, version, rest = parts[1], parts[2], parts[3:]
        if not rest:
            listing = registry.resource_list(group, version)
            if listing is None:
                raise _not_found_path()
            return json_response(listing)
        namespace: str | None = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            candidate = registry.lookup(group, version, rest[2])
            if candidate is not None and candidate.namespaced:
                namespace, rest = rest[1], rest[2:]
        res = registry.lookup(group, version, rest[0])
        if res is None or len(rest) > 3:
            raise _not_found_path()
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and res.subresource(sub) is None:
            raise _not_found_path()
        if res.namespaced and name is not None and namespace is None:
            raise _not_found_path()
        log = self.server.request_log
        if log is not None:
            watch = _flag(request.query.get("watch"))
            verb = request_verb(request.method, named=name is not None, watch=watch)
            agent = request.headers.get("User-Agent", "")
            log.add(ApiCall(verb, res.group, res.plural, sub, namespace or "", agent))
        return await self._resource(request, res, namespace, name, sub)

    async def _resource(
        self, request: web.Request, res: Resource, namespace: str | None, name: str | None, sub: str
    ) -> web.StreamResponse:
        method = request.method
        verb = {
            ("GET", False): "list",
            ("GET", True): "get",
            ("POST", False): "create",
            ("PUT", True): "update",
            ("PATCH", True): "patch",
            ("DELETE", True): "delete",
            ("DELETE", False): "deletecollection",
        }.get((method, name is not None))
        if sub:
            verb = {"GET": "get", "PUT": "update", "PATCH": "patch", "POST": "create"}.get(method)
            allowed = res.subresource(sub)
            if allowed is None or verb not in allowed.verbs:
                raise errors.method_not_allowed()
        elif verb is None or verb not in res.verbs:
            raise errors.method_not_allowed()
        if verb in ("get", "list"):
            refresh = self.server.read_hooks.get(res.store_key)
            if refresh is not None:
                refresh()
        if verb == "list" and _flag(request.query.get("watch")):
            return await self._watch(request, res, namespace)
        key: Key = (namespace or "" if res.namespaced else "", name or "")
        if verb == "list":
            return await self._list(request, res, namespace)
        if verb == "get":
            entry = self.server.writer.existing(res, key)
            if sub == "scale":
                return json_response(subresources.scale_of(res, entry.obj))
            if tabulating.accepts_table(request.headers.get("Accept", "")):
                shown = [reading.present(res, entry.obj)]
                meta = {"resourceVersion": str(entry.rv)}
                return json_response(self._table(request, res, shown, list_meta=meta))
            return json_response(reading.entry_json(res, entry))
        if res.namespaced and namespace is None:
            raise _not_found_path()
        if verb == "deletecollection":
            return self._delete_collection(request, res, namespace)
        raw = _readable_body(request, await request.read(), res)
        fieldmanaging.validate_field_manager(
            request.query.get("fieldManager"),
            options={"create": "CreateOptions", "update": "UpdateOptions"}.get(
                verb or "", "PatchOptions"
            ),
            apply="apply-patch" in request.headers.get("Content-Type", "") and verb == "patch",
        )
        opts = self._write_options(request, raw)
        writer = self.server.writer
        if verb == "create" and sub == "eviction":
            evicted = subresources.evict(
                writer, self.server.registry, key, _json_body(raw), dry_run=opts.dry_run
            )
            return json_response(evicted, status=201)
        if verb == "create" and sub == "binding":
            bound = subresources.bind(writer, self.server.registry, key, _json_body(raw), opts)
            return json_response(bound, status=201)
        if res.group == "events.k8s.io" and verb in ("create", "update"):
            # One store of events, in the core shape, as the real server keeps them.
            core = self.server.registry.lookup("", "v1", "events")
            assert core is not None
            body = converting.events_v1_to_core(_json_body(raw))
            opts.raw = None
            if verb == "create":
                return self._written(
                    res, writer.create(core, namespace or "", body, opts), opts, status=201
                )
            return self._written(res, writer.update(core, key, body, opts), opts)
        if verb == "create":
            created = writer.create(res, namespace or "", _json_body(raw), opts)
            return self._written(res, created, opts, status=201)
        if verb == "update":
            if sub == "scale":
                return json_response(
                    subresources.write_scale(writer, res, key, _json_body(raw), opts)
                )
            updated = writer.update(res, key, _json_body(raw), opts, subresource=sub)
            return self._written(res, updated, opts)
        if verb == "patch":
            content_type = request.headers.get("Content-Type", "")
            if "apply-patch" in content_type and not request.query.get("fieldManager"):
                raise errors.bad_request("PATCH /api: fieldManager is required for apply requests")
            if sub == "scale":
                return json_response(self._patch_scale(res, key, raw, opts, content_type))
            existed = writer.store.get(res.store_key, key) is not None
            patched = writer.patch(res, key, raw, opts, content_type=content_type, subresource=sub)
            return self._written(res, patched, opts, status=200 if existed else 201)
        if verb == "delete":
            options = _delete_options(request, raw)
            obj, gone = writer.delete(res, key, options)
            self.server.collector.tick()
            warned = {"Warning": warning_header(options.warnings)} if options.warnings else None
            if gone and res.kind not in ("Pod", "Service", "Namespace", "Node", "Event"):
                meta = obj.get("metadata", {})
                return json_response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": {
                            "name": meta.get("name"),
                            "group": res.group,
                            "kind": res.plural,
                            "uid": meta.get("uid"),
                        },
                    },
                    headers=warned,
                )
            # 202 only when the deletion is pending and the client sent orphanDependents=false,
            # as the real handler answers (pending pods, finalizers, foreground: 200).
            accepted = not gone and _orphan_dependents(request, raw) is False
            return json_response(
                reading.present(res, obj), status=202 if accepted else 200, headers=warned
            )
        raise errors.method_not_allowed()

    def _written(
        self, res: Resource, obj: Obj, opts: WriteOptions, *, status: int = 200
    ) -> web.Response:
        headers = {"Warning": warning_header(opts.warnings)} if opts.warnings else {}
        self.server.collector.tick()
        return json_response(reading.present(res, obj), status=status, headers=headers)

    def _write_options(self, request: web.Request, raw: bytes) -> WriteOptions:
        query = request.query
        validation = query.get("fieldValidation", "Warn")
        if validation not in ("Strict", "Warn", "Ignore"):
            raise errors.bad_request(
                f"fieldValidation parameter unsupported: {validation}. Valid values are: "
                "Ignore, Warn, Strict"
            )
        dry_run = query.getall("dryRun", [])
        if any(d != "All" for d in dry_run):
            raise errors.bad_request(f"Invalid dryRun value: {dry_run}; only All is supported")
        manager = fieldmanaging.manager_name(
            query.get("fieldManager"), request.headers.get("User-Agent")
        )
        return WriteOptions(
            manager=manager,
            dry_run=bool(dry_run),
            field_validation=validation,
            raw=raw,
            force=_flag(query.get("force")),
        )

    def _patch_scale(
        self, res: Resource, key: Key, raw: bytes, opts: WriteOptions, content_type: str
    ) -> Obj:

        writer = self.server.writer
        current = subresources.scale_of(res, writer.existing(res, key).obj)
        patch = _json_body(raw, allow_any=True)
        kind = content_type.split(";", maxsplit=1)[0].strip()
        try:
            if kind == "application/json-patch+json":
                scale = patching.json_patch(current, patch)
            else:
                scale = patching.merge_patch(current, patch)
        except patching.PatchError as exc:
            raise exc.to_api_error() from exc
        opts.raw = None
        return subresources.write_scale(writer, res, key, scale, opts)

    # reading -------------------------------------------------------------------------------

    def _query(self, request: web.Request, res: Resource, namespace: str | None) -> reading.Query:
        return reading.Query.parse(
            res,
            namespace,
            label_text=request.query.get("labelSelector", ""),
            field_text=request.query.get("fieldSelector", ""),
        )

    async def _list(
        self, request: web.Request, res: Resource, namespace: str | None
    ) -> web.StreamResponse:
        query = self._query(request, res, namespace)
        params = request.query
        try:
            limit = int(params.get("limit", "0") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {params.get('limit')}") from None
        page = reading.list_page(
            self.server.store,
            res,
            query,
            limit=max(0, limit),
            continue_token=params.get("continue", ""),
            resource_version=params.get("resourceVersion", ""),
            match=params.get("resourceVersionMatch", ""),
        )
        if tabulating.accepts_table(request.headers.get("Accept", "")):
            meta: dict[str, Any] = {"resourceVersion": str(page.resource_version)}
            if page.continue_token:
                meta["continue"] = page.continue_token
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining
            objects = [reading.present(res, e.obj) for e in page.entries]
            return json_response(self._table(request, res, objects, list_meta=meta))
        if len(page.entries) < _STREAM_ITEMS:
            return json_response(reading.list_body(res, page))
        response = web.StreamResponse(headers={"Content-Type": JSON})
        response.headers["Date"] = http_date(self.server.clock.now())
        await response.prepare(request)
        for chunk in reading.list_chunks(res, page):
            await response.write(chunk)
        await response.write_eof()
        return response

    def _table(
        self, request: web.Request, res: Resource, objects: list[Obj], *, list_meta: dict[str, Any]
    ) -> dict[str, Any]:
        return table_for(self.server, request, res, objects, list_meta=list_meta)

    def _delete_collection(
        self, request: web.Request, res: Resource, namespace: str | None
    ) -> web.Response:
        query = self._query(request, res, namespace)
        page = reading.list_page(self.server.store, res, query)
        options = DeleteOptions(
            propagation=request.query.get("propagationPolicy"),
            dry_run=bool(request.query.getall("dryRun", [])),
        )
        for entry in page.entries:
            key = reading.key_of(entry.obj)
            if self.server.store.get(res.store_key, key) is not None:
                self.server.writer.delete(res, key, options)
        self.server.collector.tick()
        return json_response(
            {
                "kind": res.list_kind,
                "apiVersion": res.api_version,
                "metadata": {"resourceVersion": str(self.server.store.resource_version)},
                "items": [reading.present(res, e.obj) for e in page.entries],
            }
        )

    async def _watch(
        self, request: web.Request, res: Resource, namespace: str | None
    ) -> web.StreamResponse:

        query = self._query(request, res, namespace)
        return await stream(self.server, request, res, query)

    # misc ------------------------------------------------------------------------------------

    def _openapi_response(self, request: web.Request, path: str) -> web.Response:
        if not path.startswith("/openapi/v3"):
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        if self._openapi is None:
            self._openapi = OpenAPI(self.server.registry, self.server.defs)
        rest = path[len("/openapi/v3") :].strip("/")
        if not rest:
            return json_response(self._openapi.index())
        document = self._openapi.document(rest)
        if document is None:
            raise errors.StatusError(
                404, "NotFound", "the server could not find the requested resource"
            )
        return json_response(document)

    async def _control(self, request: web.Request, what: str) -> web.Response:
        clock = self.server.clock
        if what == "clock":
            if request.method == "PUT":
                body = _json_body(await request.read())
                try:
                    if "speed" in body:
                        clock.set_speed(float(body["speed"]))
                    if "advanceSeconds" in body:
                        clock.advance(float(body["advanceSeconds"]))
                    if body.get("paused") is True:
                        clock.pause()
                    elif body.get("paused") is False:
                        clock.resume()
                except (TypeError, ValueError) as exc:
                    raise errors.bad_request(f"invalid clock change: {exc}") from exc
                self.server.collector.tick()
            return json_response(
                {"now": rfc3339_micro(clock.now()), "speed": clock.speed, "paused": clock.paused}
            )
        if what == "faults":
            if request.method == "PUT":
                try:
                    self.server.faults.update(_json_body(await request.read()))
                except FaultError as exc:
                    raise errors.bad_request(str(exc)) from exc
                if self.server.faults.force_gone:
                    self.server.store.compact()
            return json_response(self.server.faults.as_dict())
        raise _not_found_path()


def _readable_body(request: web.Request, raw: bytes, res: Resource) -> bytes:
    """The request body as JSON or YAML: a protobuf body (client-go's typed clients, kubectl's
    generator commands) is decoded into the JSON the same object would have; a malformed one
    is a 400 worded as the real decoder's (``transformDecodeError``)."""
    content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
    if content_type == MEDIA_TYPE and raw:
        try:
            return orjson.dumps(decode(raw))
        except ProtobufError as exc:
            if exc.kind:
                raise errors.bad_request(
                    f'{exc.kind} in version "{exc.version}" cannot be handled as a {res.kind}: '
                    f"{exc.problem}"
                ) from exc
            summary = raw[:30].decode("utf-8", "replace") + ("..." if len(raw) > 30 else "")
            raise errors.bad_request(
                f"the object provided is unrecognized (must be of type {res.kind}): "
                f"{exc.problem} ({summary})"
            ) from exc
        except UnsupportedKind:
            pass  # refused below with 415, as before
    _require_json(request, raw)
    return raw


def _require_json(request: web.Request, raw: bytes) -> None:
    """Refuse bodies the emulator cannot decode (protobuf, CBOR) with 415.

    client-go (1.32+) answers a 415 by retrying the request as JSON and keeps using JSON for
    that client, which is how kubectl's typed commands (``kubectl create configmap``) reach an
    API server that only speaks JSON.
    """
    content_type = request.headers.get("Content-Type", "application/json").split(";")[0].strip()
    if not raw or content_type in ("application/json", "") or content_type.endswith("+json"):
        return
    if content_type in ("application/apply-patch+yaml", "application/yaml"):
        return
    raise errors.StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f'application/json, application/yaml (got "{content_type}")',
    )


def _throttled(retry_after: int, *, as_status: bool) -> web.Response:
    """API Priority and Fairness rejects with plain text (``http.Error``), not a Status; clients
    must cope with both forms (``as_status`` gives the Status form other 429s use)."""
    message = "Too many requests, please try again later."
    if as_status:
        failure = errors.too_many_requests(message, retry_after=retry_after)
        return json_response(failure.to_status(), status=429, headers=dict(failure.headers))
    return web.Response(
        text=message + "\n",
        status=429,
        content_type="text/plain",
        headers={"Retry-After": str(retry_after), "X-Content-Type-Options": "nosniff"},
    )


def _not_found_path() -> errors.StatusError:
    return errors.StatusError(404, "NotFound", "the server could not find the requested resource")


def _json_body(raw: bytes, *, allow_any: bool = False) -> Any:
    try:
        body = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {exc}") from exc
    if not allow_any and not isinstance(body, dict):
        raise errors.bad_request("the request body must be a JSON object")
    return body


def _orphan_dependents(request: web.Request, raw: bytes) -> bool | None:
    body = _json_body(raw) if raw.strip() else {}
    orphan = body.get("orphanDependents", request.query.get("orphanDependents"))
    return None if orphan is None else _flag(str(orphan))


def _delete_options(request: web.Request, raw: bytes) -> DeleteOptions:
    body = _json_body(raw) if raw.strip() else {}
    query = request.query
    grace = body.get("gracePeriodSeconds", query.get("gracePeriodSeconds"))
    propagation = body.get("propagationPolicy", query.get("propagationPolicy"))
    orphan = body.get("orphanDependents", query.get("orphanDependents"))
    if propagation is None and orphan is not None:
        propagation = "Orphan" if _flag(str(orphan)) else "Background"
    if propagation not in (None, "Orphan", "Background", "Foreground"):
        raise errors.bad_request(
            f'propagationPolicy: Unsupported value: "{propagation}": supported values: '
            '"Foreground", "Background", "Orphan"'
        )
    preconditions = body.get("preconditions") or {}
    dry_run = body.get("dryRun") or query.getall("dryRun", [])
    return DeleteOptions(
        propagation=propagation,
        grace_seconds=None if grace is None else int(grace),
        uid=preconditions.get("uid"),
        resource_version=preconditions.get("resourceVersion"),
        dry_run=bool(dry_run),
    )
