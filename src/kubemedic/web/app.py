"""The dashboard's ASGI application: the JSON API, the pages, and the token check in front.

``create_app(archive, token=...)`` builds it over an open archive (read only). With a token,
every request must carry it: ``Authorization: Bearer TOKEN``, or once ``?token=TOKEN`` (for a
browser), which answers a redirect to the same address without it and sets an HttpOnly,
SameSite=Strict cookie holding a keyed hash of the token (never the token). Comparisons take
constant time (``hmac.compare_digest``). Anything else answers 401 with
``WWW-Authenticate: Bearer``. The OpenAPI schema is ``/openapi.json`` (behind the same check).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Final

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from markupsafe import escape

from kubemedic._version import __version__
from kubemedic.errors import InputError
from kubemedic.store.db import Archive, ArchiveError
from kubemedic.web import api, pages, rightsizing
from kubemedic.web.reading import NotFound, Reader

__all__ = ["COOKIE", "create_app"]

COOKIE: Final = "kubemedic_session"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())


def create_app(
    archive: Archive, *, token: str | None = None, cluster: str | None = None
) -> FastAPI:
    """The dashboard over ``archive``; ``token`` (if given) guards every request; ``cluster``
    is the cluster shown when a request names none (default: the archive's first)."""
    app = FastAPI(
        title="kubemedic",
        version=__version__,
        description=(
            "Read-only access to a kubemedic archive: events, OOM kills and evictions, "
            "findings, incidents, nodes and node repair, the storm breaker's decisions. "
            "Lists are paged by keyset: pass each page's `continue` to get the next."
        ),
        docs_url=None,
        redoc_url=None,
    )
    app.state.reader = Reader(archive, cluster=cluster)
    app.include_router(api.router)
    app.include_router(rightsizing.router)
    app.include_router(pages.router)
    _errors(app)
    if token is not None:
        _guard(app, token)
    return app


def _wants_html(request: Request) -> bool:
    return not request.url.path.startswith("/api/") and request.url.path != "/openapi.json"


def _problem(request: Request, status: int, message: str) -> Response:
    if _wants_html(request):
        body = (
            "<!doctype html><html lang='en'><head><meta charset='utf-8'><title>kubemedic</title>"
            f"</head><body><h1>{status}</h1><p class='error'>{escape(message)}</p>"
            "<p><a href='/'>Overview</a></p></body></html>"
        )
        return HTMLResponse(body, status_code=status)
    return JSONResponse({"error": message}, status_code=status)


def _errors(app: FastAPI) -> None:
    @app.exception_handler(NotFound)
    async def _not_found(request: Request, error: NotFound) -> Response:
        return _problem(request, 404, str(error))

    @app.exception_handler(ArchiveError)
    async def _archive(request: Request, error: ArchiveError) -> Response:
        return _problem(request, 503, str(error))

    @app.exception_handler(InputError)
    async def _input(request: Request, error: InputError) -> Response:
        return _problem(request, 400, str(error))


def _guard(app: FastAPI, token: str) -> None:
    key = secrets.token_bytes(32)
    session = hmac.new(key, token.encode(), hashlib.sha256).hexdigest()

    @app.middleware("http")
    async def _check(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        if scheme.lower() == "bearer" and _same(given.strip(), token):
            return await call_next(request)
        cookie = request.cookies.get(COOKIE)
        if cookie is not None and _same(cookie, session):
            return await call_next(request)
        offered = request.query_params.get("token")
        if offered is not None and _same(offered, token):
            rest = request.url.remove_query_params("token")
            target = rest.path + (f"?{rest.query}" if rest.query else "")
            redirect = RedirectResponse(target, status_code=303)
            redirect.set_cookie(
                COOKIE,
                session,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
            )
            return redirect
        response = _problem(
            request,
            401,
            "a token is required: send Authorization: Bearer TOKEN (or open ?token=TOKEN once)",
        )
        response.headers["WWW-Authenticate"] = "Bearer"
        return response
