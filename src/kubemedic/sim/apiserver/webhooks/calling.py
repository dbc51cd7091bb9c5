"""Calling validating webhooks: the ``AdmissionReview`` out, warnings or a refusal back.

What kube-apiserver 1.32's validating dispatcher does (``pkg/admission/plugin/webhook/validating``),
for the webhooks :mod:`.matching` selects, configurations in name order and webhooks in their
order:

* The request is an ``admission.k8s.io/v1`` ``AdmissionReview`` whose ``request`` carries a new
  ``uid``, the ``kind``/``resource``/``subResource`` and the same ``request*`` fields (one served
  version: they are equal), ``name`` (empty on a create by ``generateName``), ``namespace`` (a
  Namespace object's own name), ``operation`` (a patch is an ``UPDATE``, a server-side apply
  that creates is a ``CREATE``), ``userInfo``, ``object`` (``null`` on ``DELETE``),
  ``oldObject`` (``null`` on ``CREATE``), ``dryRun`` and ``options`` (``CreateOptions``,
  ``UpdateOptions`` or ``DeleteOptions``).
* It is posted to ``clientConfig.url`` with ``?timeout=<timeoutSeconds>s`` appended (default
  10 s), verifying the server with ``clientConfig.caBundle`` (base64 PEM; the system's roots when
  absent). A ``clientConfig.service`` is called as ``https://NAME.NAMESPACE.svc:PORT/PATH``,
  which reaches something only where that name resolves: in the emulator, give a ``url``.
* The answer must be an ``AdmissionReview`` of ``admission.k8s.io/v1`` with the request's
  ``uid``. ``response.warnings`` go back to the client as ``Warning: 299 - "..."`` headers, on
  success and on refusal alike. ``allowed: false`` is refused with the webhook's ``status``: its
  code (at least 400; 400 when absent), its reason, and the message ``admission webhook "NAME"
  denied the request: MESSAGE`` (``... denied the request without explanation`` when the
  webhook gives none).
* A webhook that cannot be called, times out or answers nonsense: with ``failurePolicy: Ignore``
  the request goes on (fail open); with ``Fail`` (the default) it is refused with a 500
  ``Internal error occurred: failed calling webhook "NAME": failed to call webhook: Post
  "URL?timeout=10s": ...`` (``received invalid webhook response: ...`` for a bad answer).
* ``sideEffects``: a dry-run request to a webhook whose side effects are not ``None`` or
  ``NoneOnDryRun`` is refused with a 400 ``admission webhook "NAME" does not support dry run``.
* Webhooks without ``v1`` in ``admissionReviewVersions`` count as a failed call.

The call blocks the emulator's event loop for at most the webhook's timeout: a webhook must not
be served by the same event loop as the emulator that calls it (run it in a thread or process).
"""

from __future__ import annotations

import base64
import binascii
import logging
import socket
import ssl
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from kubemedic.sim.apiserver.webhooks.matching import matches
from kubemedic.sim.machinery import errors

__all__ = ["ADMIN_USER", "Attributes", "denial", "dispatch", "review_request", "warning_header"]

Obj = dict[str, Any]

_log = logging.getLogger(__name__)

#: Who the emulator says made a request (it authenticates nobody): kubeadm's admin identity.
ADMIN_USER: Mapping[str, Any] = {
    "username": "kubernetes-admin",
    "groups": ["kubeadm:cluster-admins", "system:authenticated"],
}
_DEFAULT_TIMEOUT = 10
_NO_SIDE_EFFECTS_ON_DRY_RUN = frozenset({"None", "NoneOnDryRun"})


@dataclass
class Attributes:
    """One admission request: what was asked, on what, by whom."""

    operation: str  # CREATE, UPDATE, DELETE
    group: str
    version: str
    kind: str
    resource: str
    subresource: str
    name: str
    namespace: str
    obj: Obj | None
    old: Obj | None
    dry_run: bool = False
    options: Obj = field(default_factory=dict)
    user: Mapping[str, Any] = field(default_factory=lambda: dict(ADMIN_USER))


def warning_header(warnings: Sequence[str]) -> str:
    """The ``Warning`` header value carrying ``warnings`` (RFC 7234 code 299, as
    ``k8s.io/apiserver/pkg/warning`` writes them)."""
    return ", ".join(
        '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in warnings
    )


def review_request(attrs: Attributes, uid: str) -> Obj:
    """The ``AdmissionReview`` posted to a webhook."""
    kind = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
    resource = {"group": attrs.group, "version": attrs.version, "resource": attrs.resource}
    request: Obj = {"uid": uid, "kind": kind, "resource": resource}
    if attrs.subresource:
        request["subResource"] = attrs.subresource
    request["requestKind"] = dict(kind)
    request["requestResource"] = dict(resource)
    if attrs.subresource:
        request["requestSubResource"] = attrs.subresource
    if attrs.name:
        request["name"] = attrs.name
    if attrs.namespace:
        request["namespace"] = attrs.namespace
    request.update(
        operation=attrs.operation,
        userInfo=dict(attrs.user),
        object=attrs.obj,
        oldObject=attrs.old,
        dryRun=attrs.dry_run,
        options=attrs.options or None,
    )
    return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}


class _CallFailed(Exception):
    """The webhook could not be called or answered nonsense (``ErrCallingWebhook``)."""


def _url(config: Mapping[str, Any]) -> str:
    url = config.get("url")
    if url:
        return str(url)
    service = config.get("service") or {}
    path = str(service.get("path") or "")
    port = int(service.get("port") or 443)
    return f"https://{service.get('name')}.{service.get('namespace')}.svc:{port}{path}"


def _context(config: Mapping[str, Any]) -> ssl.SSLContext:
    bundle = config.get("caBundle")
    if not bundle:
        return ssl.create_default_context()
    try:
        pem = base64.b64decode(str(bundle), validate=True).decode("ascii")
        return ssl.create_default_context(cadata=pem)
    except (binascii.Error, UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
        raise _CallFailed(
            f"could not get REST client: unable to load root certificates: {exc}"
        ) from exc


def _go_error(exc: BaseException, url: str) -> str:
    """A transport failure worded as Go's net/http would (``Post "URL": ...``)."""
    parts = urlsplit(url)
    host = f"{parts.hostname}:{parts.port or 443}"
    reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
    if isinstance(reason, (TimeoutError, socket.timeout)):
        detail = "context deadline exceeded"
    elif isinstance(reason, ConnectionRefusedError):
        detail = f"dial tcp {host}: connect: connection refused"
    elif isinstance(reason, ssl.SSLCertVerificationError):
        detail = "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    elif isinstance(reason, socket.gaierror):
        detail = f"dial tcp: lookup {parts.hostname}: no such host"
    else:
        detail = str(reason)
    return f'failed to call webhook: Post "{url}": {detail}'


def _call(webhook: Mapping[str, Any], review: Obj) -> Obj:
    """Post ``review``; the webhook's ``response`` (checked), or :class:`_CallFailed`."""
    if "v1" not in [str(v) for v in webhook.get("admissionReviewVersions") or ()]:
        raise _CallFailed("webhook does not accept known AdmissionReview versions")
    config = webhook.get("clientConfig") or {}
    timeout = int(webhook.get("timeoutSeconds") or _DEFAULT_TIMEOUT)
    url = _url(config) + f"?timeout={timeout}s"
    context = _context(config)
    body = orjson.dumps(review)
    request = urllib.request.Request(  # noqa: S310 - https only, the webhook's own URL
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    if not url.startswith("https://"):
        raise _CallFailed(f'Post "{url}": unsupported protocol scheme')
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:  # noqa: S310
            raw = answer.read()
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace").strip()
        raise _CallFailed(
            f'failed to call webhook: an error on the server ("{text}") has prevented the '
            "request from succeeding"
        ) from exc
    except (urllib.error.URLError, OSError) as exc:
        raise _CallFailed(_go_error(exc, url)) from exc
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise _CallFailed(f"received invalid webhook response: {exc}") from exc
    if (
        not isinstance(parsed, dict)
        or parsed.get("apiVersion") != "admission.k8s.io/v1"
        or parsed.get("kind") != "AdmissionReview"
    ):
        got = parsed.get("apiVersion"), parsed.get("kind") if isinstance(parsed, dict) else None
        raise _CallFailed(
            "received invalid webhook response: expected webhook response of "
            f"admission.k8s.io/v1, Kind=AdmissionReview, got {got}"
        )
    response = parsed.get("response")
    if not isinstance(response, dict):
        raise _CallFailed("received invalid webhook response: response is nil")
    uid = review["request"]["uid"]
    if response.get("uid") != uid:
        raise _CallFailed(
            f'received invalid webhook response: expected response.uid="{uid}", '
            f'got "{response.get("uid", "")}"'
        )
    return response


def denial(name: str, result: Any) -> errors.StatusError:
    """``webhookerrors.ToStatusErr``."""
    status = result if isinstance(result, dict) else {}
    denied = f'admission webhook "{name}" denied the request'
    code = int(status.get("code") or 0)
    message = str(status.get("message") or "")
    reason = str(status.get("reason") or "")
    if message:
        text = f"{denied}: {message}"
    elif reason:
        text = f"{denied}: {reason}"
    else:
        text = f"{denied} without explanation"
    return errors.StatusError(max(code, 400), reason, text)


def dispatch(
    configurations: Sequence[Obj],
    attrs: Attributes,
    namespace_labels: Callable[[str], Mapping[str, str] | None],
) -> list[str]:
    """Send ``attrs`` to every matching webhook of ``configurations``; the warnings they
    returned, or the :class:`~kubemedic.sim.machinery.errors.StatusError` refusing the request
    (its ``Warning`` header carries the warnings gathered so far)."""
    warnings: list[str] = []

    def refuse(failure: errors.StatusError) -> errors.StatusError:
        if warnings:
            failure.headers = {**failure.headers, "Warning": warning_header(warnings)}
        return failure

    ordered = sorted(configurations, key=lambda c: str((c.get("metadata") or {}).get("name")))
    for configuration in ordered:
        for webhook in configuration.get("webhooks") or ():
            if not isinstance(webhook, dict) or not matches(
                webhook,
                operation=attrs.operation, group=attrs.group, version=attrs.version,
                resource=attrs.resource, subresource=attrs.subresource,
                namespace=attrs.namespace, obj=attrs.obj, old=attrs.old,
                namespace_labels=namespace_labels,
            ):  # fmt: skip
                continue
            name = str(webhook.get("name") or "")
            side_effects = str(webhook.get("sideEffects") or "Unknown")
            if attrs.dry_run and side_effects not in _NO_SIDE_EFFECTS_ON_DRY_RUN:
                raise refuse(
                    errors.bad_request(f'admission webhook "{name}" does not support dry run')
                )
            try:
                response = _call(webhook, review_request(attrs, str(uuid.uuid4())))
            except _CallFailed as exc:
                if webhook.get("failurePolicy") == "Ignore":
                    _log.warning("Failed calling webhook, failing open %s: %s", name, exc)
                    continue
                raise refuse(errors.internal(f'failed calling webhook "{name}": {exc}')) from exc
            warnings.extend(str(w) for w in response.get("warnings") or () if str(w))
            if response.get("allowed") is not True:
                raise refuse(denial(name, response.get("status")))
    return warnings
