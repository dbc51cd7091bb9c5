"""API errors as the real API server reports them: ``Status`` objects with the same wording.

Clients match on ``reason`` and ``code`` (kubectl prints ``message``; client libraries retry on
409/429/5xx and relist on 410), so each constructor reproduces the apiserver's text from
``k8s.io/apimachinery/pkg/api/errors``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubemedic.errors import KubemedicError


@dataclass(frozen=True)
class Cause:
    """One ``StatusCause``: ``reason`` such as ``FieldValueRequired``, the field's path."""

    reason: str
    message: str
    field: str = ""

    def to_json(self) -> dict[str, str]:
        out = {"reason": self.reason, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


@dataclass
class StatusError(KubemedicError):
    """An error answered as a ``Status`` (``kind: Status``, ``status: Failure``)."""

    code: int
    reason: str
    message: str
    name: str = ""
    group: str = ""
    kind: str = ""
    causes: Sequence[Cause] = ()
    retry_after: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def to_status(self) -> dict[str, Any]:
        details: dict[str, Any] = {}
        if self.name:
            details["name"] = self.name
        if self.group:
            details["group"] = self.group
        if self.kind:
            details["kind"] = self.kind
        if self.causes:
            details["causes"] = [c.to_json() for c in self.causes]
        if self.retry_after is not None:
            details["retryAfterSeconds"] = self.retry_after
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # unclassified errors carry no reason, as the real server's
            status["reason"] = self.reason
        status["code"] = self.code
        if details:
            status["details"] = details
        return status


def _qualified(resource: str, group: str) -> str:
    return resource if not group else f"{resource}.{group}"


def not_found(resource: str, name: str, *, group: str = "") -> StatusError:
    return StatusError(
        404,
        "NotFound",
        f'{_qualified(resource, group)} "{name}" not found',
        name=name,
        group=group,
        kind=resource,
    )


def already_exists(resource: str, name: str, *, group: str = "") -> StatusError:
    return StatusError(
        409,
        "AlreadyExists",
        f'{_qualified(resource, group)} "{name}" already exists',
        name=name,
        group=group,
        kind=resource,
    )


def conflict(resource: str, name: str, detail: str, *, group: str = "") -> StatusError:
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {detail}',
        name=name,
        group=group,
        kind=resource,
    )


def stale_resource_version(resource: str, name: str, *, group: str = "") -> StatusError:
    return conflict(
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version and "
        "try again",
        group=group,
    )


def invalid(kind: str, name: str, causes: Sequence[Cause], *, group: str = "") -> StatusError:
    """422 Invalid: ``Pod "x" is invalid: spec.containers: Required value``."""
    parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return StatusError(
        422,
        "Invalid",
        f'{kind}{"." + group if group else ""} "{name}" is invalid: {joined}',
        name=name,
        group=group,
        kind=kind,
        causes=tuple(causes),
    )


def bad_request(message: str, causes: Sequence[Cause] = ()) -> StatusError:
    return StatusError(400, "BadRequest", message, causes=tuple(causes))


def forbidden(resource: str, name: str, detail: str, *, group: str = "") -> StatusError:
    return StatusError(
        403,
        "Forbidden",
        f'{_qualified(resource, group)} "{name}" is forbidden: {detail}',
        name=name,
        group=group,
        kind=resource,
    )


def method_not_allowed(
    message: str = "the server does not allow this method on the requested resource",
) -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, "
        f"application/strategic-merge-patch+json (got {content_type})",
    )


def gone(message: str) -> StatusError:
    """410: a watch or list asked for history the server no longer keeps."""
    return StatusError(410, "Expired", message)


def too_many_requests(
    message: str, *, retry_after: int = 1, causes: Sequence[Cause] = ()
) -> StatusError:
    """429; ``retry_after`` 0 sends no ``Retry-After`` (client-go then does not retry by itself,
    as for a refused eviction, which drain retries on its own schedule)."""
    return StatusError(
        429,
        "TooManyRequests",
        message,
        retry_after=retry_after or None,
        causes=tuple(causes),
        headers={"Retry-After": str(retry_after)} if retry_after else {},
    )


def internal(message: str) -> StatusError:
    return StatusError(500, "InternalError", f"Internal error occurred: {message}")


def timeout(
    message: str = "the server was unable to return a response in the time allotted",
) -> StatusError:
    return StatusError(504, "Timeout", message)
