"""A raw JSON transport over lightkube's AsyncClient.

lightkube resolves credentials (tokens, client certificates, exec plugins, in-cluster service
accounts) and TLS, and its typed API suits small calls (Leases). Reflectors over a whole cluster
need more than its typed ``list``/``watch`` give: the list's resourceVersion and ``continue``
token per page, bookmarks, the watch ``ERROR`` event's Status (``410 Gone`` means relist), the
``Retry-After`` of a ``429`` and plain dicts (decoding 150,000 pods into model classes costs
seconds and hundreds of MB). So ``Api`` sends its own requests through lightkube's configured
HTTP client and hands back JSON, with every failure turned into one of two exceptions:
``ApiError`` (the server answered with an error status; ``NotFound``, ``Conflict``, ``Gone``,
``TooManyRequests``... for the statuses callers act on) or ``ConnectionLost`` (it did not answer,
or the stream broke).
"""

from __future__ import annotations

import contextlib
import email.utils
import http
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, ClassVar

import httpx2
import orjson
from lightkube import AsyncClient

from kubemedic.errors import KubemedicError

__all__ = [
    "Api",
    "ApiError",
    "BadAnswer",
    "Conflict",
    "ConnectionLost",
    "Forbidden",
    "Gone",
    "Kind",
    "NotFound",
    "ServiceUnavailable",
    "TooManyRequests",
    "Unauthorized",
    "status_text",
]


@dataclass(frozen=True, slots=True)
class Kind:
    """A collection kubemedic lists and watches."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def stream(self) -> str:
        """The checkpoint name of this collection: ``v1/pods``, ``apps/v1/deployments``."""
        return f"{self.api_version}/{self.plural}"

    def path(self, namespace: str | None = None, name: str | None = None) -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if namespace is not None and self.namespaced:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name is not None else base


class ApiError(KubemedicError):
    """The API server answered with an error status (its ``Status`` object when it sent one).

    ``ApiError.from_status`` gives the subclass of the statuses callers act on (``NotFound``,
    ``Conflict``, ``Gone``...), so they catch those by type instead of comparing codes."""

    status: ClassVar[int | None] = None
    """The HTTP status every instance of a subclass carries (None: any)."""

    def __init__(
        self,
        code: int | None = None,
        *,
        reason: str = "",
        message: str = "",
        retry_after: float | None = None,
        path: str = "",
    ) -> None:
        if code is None:
            if self.status is None:
                raise TypeError("ApiError needs the HTTP status code")
            code = self.status
        self.code = code
        self.reason = reason
        self.message = message
        self.retry_after = retry_after
        self.path = path
        super().__init__(status_text(code, reason=reason, message=message, path=path))

    @classmethod
    def from_status(
        cls,
        code: int,
        *,
        reason: str = "",
        message: str = "",
        retry_after: float | None = None,
        path: str = "",
    ) -> ApiError:
        """The error for HTTP status ``code``: an instance of the subclass for that status
        (``from_status(404)`` is a ``NotFound``), else a plain ``ApiError``."""
        kind = _BY_STATUS.get(code, ApiError)
        return kind(code, reason=reason, message=message, retry_after=retry_after, path=path)

    @property
    def retryable(self) -> bool:
        """Throttling, server errors and timeouts: worth retrying after a back-off."""
        return isinstance(self, TooManyRequests) or self.code >= 500


def status_text(code: int, *, reason: str = "", message: str = "", path: str = "") -> str:
    """An error status as a sentence: ``/api/v2/nodes: HTTP 404 NotFound: the server could not
    find the requested resource``; without a message from the server, what the status means
    (``the API server has no /apis/metrics.k8s.io/v1beta1/pods (HTTP 404 Not Found)``)."""
    try:
        phrase = http.HTTPStatus(code).phrase
    except ValueError:
        phrase = ""
    status = " ".join(part for part in (f"HTTP {code}", reason or phrase) if part)
    detail = " ".join(message.split())[:300]
    where = path or "the request"
    if detail:
        return f"{where}: {status}: {detail}"
    if code == 404:
        return f"the API server has no {where} ({status})"
    return f"the API server answered {where} with {status} and no message"


class Unauthorized(ApiError):
    """``401 Unauthorized``: the server did not accept the credentials."""

    status = 401


class Forbidden(ApiError):
    """``403 Forbidden``: the credentials may not do this (RBAC)."""

    status = 403


class NotFound(ApiError):
    """``404 Not Found``: no such object, or a resource the server does not serve."""

    status = 404


class Conflict(ApiError):
    """``409 Conflict``: the object changed since it was read (or already exists)."""

    status = 409


class Gone(ApiError):
    """``410 Gone``/``Expired``: the resourceVersion or continue token is older than the server
    keeps; list again."""

    status = 410


class TooManyRequests(ApiError):
    """``429 Too Many Requests``: throttled (API Priority and Fairness); ``retry_after`` says
    how long the server asks to wait."""

    status = 429


class ServiceUnavailable(ApiError):
    """``503 Service Unavailable``: e.g. an aggregated API (metrics.k8s.io) whose backend is
    down."""

    status = 503


_BY_STATUS: dict[int, type[ApiError]] = {
    kind.status: kind
    for kind in (
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        Gone,
        TooManyRequests,
        ServiceUnavailable,
    )
    if kind.status is not None
}


class ConnectionLost(KubemedicError):
    """No answer: connection refused or reset, a timeout, a stream cut in the middle."""


class BadAnswer(ConnectionLost):
    """An answer that is not what the API promises (a list that is not a List, an item that
    is not an object); retried like a lost connection, as a proxy in the way may be at fault."""


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "object", list: "list", str: "string", bool: "boolean"}
    return names.get(type(value), "number")


def _check_list(page: Any, path: str) -> dict[str, Any]:
    """A list answer is ``{"kind": "...List", "items": [{...}, ...], "metadata": {...}}``."""
    where = f"GET {path}"
    if not isinstance(page, dict):
        raise BadAnswer(f"{where}: the answer is a JSON {_json_type(page)}, not a List")
    items = page.get("items")
    if items is None and "items" not in page:
        kind = page.get("kind")
        found = f"kind {str(kind)[:100]!r}" if kind else "an object"
        raise BadAnswer(f"{where}: the answer is {found} without items, not a List")
    if items is not None and not isinstance(items, list):
        raise BadAnswer(f"{where}: items is a JSON {_json_type(items)}, not a list")
    for index, item in enumerate(items or ()):
        if not isinstance(item, dict):
            raise BadAnswer(f"{where}: items[{index}] is a JSON {_json_type(item)}, not an object")
    return page


def _retry_after(headers: Mapping[str, str]) -> float | None:
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None  # an HTTP date: rare from kube-apiserver; the caller backs off instead


def _error(status: int, headers: Mapping[str, str], content: bytes, path: str) -> ApiError:
    reason = message = ""
    try:
        body = orjson.loads(content) if content else None
    except orjson.JSONDecodeError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status":
        reason = str(body.get("reason") or "")
        message = str(body.get("message") or "")
        code = body.get("code")
        if isinstance(code, int) and code >= 400:
            status = code
    else:
        message = content[:300].decode("utf-8", "replace").strip()
    return ApiError.from_status(
        status, reason=reason, message=message, retry_after=_retry_after(headers), path=path
    )


class Api:
    """JSON requests, list pages and watch streams against one cluster."""

    def __init__(self, client: AsyncClient, *, cluster: str = "") -> None:
        self.client = client
        self.cluster = cluster
        # lightkube keeps its configured httpx client (base URL, auth, TLS) here.
        self._http: httpx2.AsyncClient = client._client._client
        self._watch_timeout = httpx2.Timeout(10.0, read=None)

    def use_auth(self, auth: httpx2.Auth) -> None:
        """Authenticate every request with ``auth`` instead of what lightkube set up."""
        self._http.auth = auth

    @property
    def server(self) -> str:
        return str(self._http.base_url).rstrip("/")

    async def close(self) -> None:
        await self.client.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Any:
        """Send one request; return the decoded JSON body (None for an empty one)."""
        content = orjson.dumps(body) if body is not None else None
        headers = {"Accept": "application/json"}
        if content is not None:
            headers["Content-Type"] = content_type
        try:
            response = await self._http.request(
                method,
                path,
                params=dict(params) if params else None,
                content=content,
                headers=headers,
                timeout=timeout if timeout is not None else httpx2.USE_CLIENT_DEFAULT,
            )
        except httpx2.HTTPError as exc:
            raise ConnectionLost(f"{method} {path}: {type(exc).__name__}: {exc}") from exc
        if response.status_code >= 400:
            raise _error(response.status_code, response.headers, response.content, path)
        if not response.content:
            return None
        try:
            return orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise ConnectionLost(f"{method} {path}: the answer is not JSON: {exc}") from exc

    async def server_time(self, *, timeout: float | None = None) -> datetime | None:
        """The server's clock as the ``Date`` header of ``GET /version`` gives it (whole
        seconds, RFC 9110 §6.6.1; any answer's header counts, even an error's), or None when
        the answer has no parseable ``Date``."""
        try:
            response = await self._http.request(
                "GET",
                "/version",
                headers={"Accept": "application/json"},
                timeout=timeout if timeout is not None else httpx2.USE_CLIENT_DEFAULT,
            )
        except httpx2.HTTPError as exc:
            raise ConnectionLost(f"GET /version: {type(exc).__name__}: {exc}") from exc
        raw = response.headers.get("date")
        if not raw:
            return None
        try:
            stamped = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return stamped.astimezone(UTC) if stamped.tzinfo else stamped.replace(tzinfo=UTC)

    async def get(self, path: str, params: Mapping[str, str | int] | None = None) -> Any:
        return await self.request("GET", path, params=params)

    async def list_page(
        self,
        kind: Kind,
        *,
        limit: int = 500,
        continue_token: str | None = None,
        resource_version: str | None = None,
        namespace: str | None = None,
    ) -> dict[str, Any]:
        """One page of a list: ``items``, ``metadata.resourceVersion``, ``metadata.continue``."""
        params: dict[str, str | int] = {"limit": limit}
        if continue_token:
            params["continue"] = continue_token
        elif resource_version is not None:
            params["resourceVersion"] = resource_version
        path = kind.path(namespace)
        page = await self.get(path, params)
        return _check_list(page, path)

    async def list_all(
        self, kind: Kind, *, limit: int = 500, namespace: str | None = None
    ) -> list[dict[str, Any]]:
        """Every item of ``kind`` (in ``namespace``, or everywhere), following ``continue``
        tokens, each given the ``kind`` and ``apiVersion`` that list items lack. Errors are
        raised as they come (no retries)."""
        items: list[dict[str, Any]] = []
        token: str | None = None
        while True:
            page = await self.list_page(
                kind, limit=limit, continue_token=token, namespace=namespace
            )
            for item in page.get("items") or ():
                if isinstance(item, dict):
                    item["kind"] = kind.kind
                    item["apiVersion"] = kind.api_version
                    items.append(item)
            meta = page.get("metadata")
            token = meta.get("continue") if isinstance(meta, dict) else None
            if not token:
                return items

    async def watch(
        self,
        kind: Kind,
        *,
        resource_version: str | None,
        timeout_seconds: int = 300,
        bookmarks: bool = True,
        namespace: str | None = None,
        field_selector: str = "",
    ) -> AsyncIterator[dict[str, Any]]:
        """Yield raw ``WatchEvent`` objects (``type``, ``object``) until the server ends the
        stream. An ``ERROR`` event is raised as ``ApiError`` (``Gone`` for an expired
        resourceVersion); a broken stream as ``ConnectionLost``."""
        path = kind.path(namespace)
        params: dict[str, str] = {"watch": "true", "timeoutSeconds": str(timeout_seconds)}
        if bookmarks:
            params["allowWatchBookmarks"] = "true"
        if field_selector:
            params["fieldSelector"] = field_selector
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        request = self._http.build_request(
            "GET", path, params=params, headers={"Accept": "application/json"}
        )
        request.extensions["timeout"] = self._watch_timeout.as_dict()
        try:
            response = await self._http.send(request, stream=True)
        except httpx2.HTTPError as exc:
            raise ConnectionLost(f"watch {path}: {type(exc).__name__}: {exc}") from exc
        try:
            if response.status_code >= 400:
                content = await response.aread()
                raise _error(response.status_code, response.headers, content, path)
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise ConnectionLost(f"watch {path}: a line is not JSON: {exc}") from exc
                if not isinstance(event, dict):
                    raise ConnectionLost(f"watch {path}: a watch event is not an object")
                if event.get("type") == "ERROR":
                    status = event.get("object")
                    raise _error(
                        int(status.get("code") or 500) if isinstance(status, dict) else 500,
                        {},
                        orjson.dumps(status),
                        path,
                    )
                yield event
        except httpx2.HTTPError as exc:
            raise ConnectionLost(f"watch {path}: {type(exc).__name__}: {exc}") from exc
        finally:
            with contextlib.suppress(httpx2.HTTPError):
                await response.aclose()
