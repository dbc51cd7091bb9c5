"""The guard's HTTPS endpoints: ``/validate`` (the webhook), ``/healthz``, ``/readyz`` and
``/metrics``.

``POST /validate`` takes an ``admission.k8s.io/v1`` AdmissionReview and answers one with the
same ``uid`` (:func:`kubemedic.guard.policy.decide`), from the caches only, so the answer comes
within the configuration's ``timeoutSeconds`` (kube-apiserver appends ``?timeout=5s``). A body
that is not JSON, or not an AdmissionReview, gets ``400`` and a sentence saying what is wrong
(kube-apiserver then applies the failure policy); the guard itself never fails on one.

``GET /healthz`` (and ``/readyz``, the same question) answers ``200 ok`` once the caches have
listed nodes and pods (``503`` before: the Deployment's readiness probe keeps the Service from
sending reviews to a guard that knows nothing yet). ``GET /metrics`` is Prometheus text:
``kubemedic_guard_reviews_total{verdict}`` (``allowed``, ``warned``, ``denied``, ``error``,
``malformed``) and ``kubemedic_guard_synced``.

:func:`run_guard` is the process: kubeconfig, certificates (:mod:`.certs`, checked again every
twelve hours and reloaded when renewed), caches, the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from dataclasses import dataclass
from pathlib import Path

import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry, Counter, Gauge

from kubemedic.guard import certs
from kubemedic.guard.caching import ClusterCache
from kubemedic.guard.policy import (
    GuardSettings,
    Knowledge,
    Outcome,
    ReviewError,
    decide,
    parse_review,
)
from kubemedic.kube import config as kubeconfig
from kubemedic.kube import endpoints
from kubemedic.kube.config import KubeAccessError
from kubemedic.model import documents

__all__ = ["Guard", "GuardOptions", "run_guard", "serve", "server_context"]

LOG = logging.getLogger(__name__)
MAX_REVIEW_BYTES = 8 * 1024 * 1024
"""Largest review read (kube-apiserver's own request limit is 3 MiB, and a review holds the
object twice)."""
RECHECK_SECONDS = 12 * 3600


class Guard:
    """The webhook's state: settings, what it knows, its counters."""

    def __init__(self, *, settings: GuardSettings, knowledge: Knowledge) -> None:
        self.settings = settings
        self.knowledge = knowledge
        self.registry = CollectorRegistry()
        self.reviews = Counter(
            "kubemedic_guard_reviews",
            "Admission reviews answered, by verdict.",
            ["verdict"],
            registry=self.registry,
        )
        self.synced = Gauge(
            "kubemedic_guard_synced",
            "1 once nodes and pods are cached.",
            registry=self.registry,
        )
        self.synced.set_function(lambda: 1.0 if self.knowledge.synced else 0.0)

    def answer(self, body: bytes) -> tuple[int, bytes]:
        """The HTTP status and body answering the posted ``body``."""
        try:
            review = documents.load_json(body, where="AdmissionReview")
            request = parse_review(review)
        except (documents.DocumentError, ReviewError) as error:
            self.reviews.labels("malformed").inc()
            return 400, f"{error}\n".encode()
        verdict = decide(request, knowledge=self.knowledge, settings=self.settings)
        self.reviews.labels(verdict.outcome.value).inc()
        if verdict.outcome is not Outcome.ALLOWED:
            LOG.info(
                "%s %s by %s (%s): %s: %s",
                request.operation,
                request.shown,
                request.field_manager or "-",
                request.username or "-",
                verdict.outcome.value,
                "; ".join(verdict.reasons),
            )
        return 200, orjson.dumps(verdict.response(request.uid))


async def serve(
    guard: Guard, host: str, port: int, context: ssl.SSLContext | None
) -> web.AppRunner:
    """Start serving ``guard`` (over TLS with ``context``; plain HTTP without one, for local
    checks only: kube-apiserver calls https); the caller ends it with ``runner.cleanup()``.
    ``/healthz`` and ``/readyz`` are :mod:`kubemedic.kube.endpoints`' probes."""

    async def validate(request: web.Request) -> web.Response:
        status, body = guard.answer(await request.read())
        kind = "application/json" if status == 200 else "text/plain"
        return web.Response(status=status, body=body, content_type=kind)

    def synced() -> str | None:
        return None if guard.knowledge.synced else "nodes and pods are not cached yet"

    return await endpoints.serve(
        host,
        port,
        registry=guard.registry,
        healthy=synced,
        routes=[("POST", "/validate", validate)],
        ssl_context=context,
        client_max_size=MAX_REVIEW_BYTES,
    )


def server_context(certificates: certs.Certificates) -> ssl.SSLContext:
    """A TLS 1.2+ server context with the serving certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(certificates.cert_file, certificates.key_file)
    return context


@dataclass(frozen=True, slots=True)
class GuardOptions:
    """What ``kubemedic guard serve`` was given."""

    settings: GuardSettings
    cert_dir: Path
    hosts: tuple[str, ...]
    listen_host: str = "0.0.0.0"  # noqa: S104 - a webhook listens on the Pod's address
    listen_port: int = 8443
    kubeconfig: Path | None = None
    context: str | None = None


async def run_guard(options: GuardOptions, *, started: asyncio.Event | None = None) -> None:
    """Serve until cancelled; ``started`` is set once the server listens."""
    resolved = kubeconfig.resolve(options.kubeconfig, options.context)
    api = kubeconfig.connect(resolved)
    tasks: list[asyncio.Task[None]] = []
    try:
        await kubeconfig.probe(api, resolved)
        certificates = certs.ensure(options.cert_dir, hosts=options.hosts)
        context = server_context(certificates)
        cache = ClusterCache(api)
        guard = Guard(settings=options.settings, knowledge=cache)
        tasks.append(asyncio.create_task(cache.run(), name="guard-cache"))
        try:
            runner = await serve(guard, options.listen_host, options.listen_port, context)
        except OSError as error:
            raise KubeAccessError(
                f"--listen {options.listen_host}:{options.listen_port}: cannot serve: "
                f"{error.strerror or error}"
            ) from None
        LOG.info(
            "guard: /validate, /healthz and /metrics on https://%s:%d (policy %s)",
            options.listen_host,
            options.listen_port,
            options.settings.policy.value,
        )
        if started is not None:
            started.set()
        try:
            while True:
                await asyncio.sleep(RECHECK_SECONDS)
                renewed = certs.ensure(options.cert_dir, hosts=options.hosts)
                if renewed.renewed:
                    context.load_cert_chain(renewed.cert_file, renewed.key_file)
                    LOG.info("guard: serving certificate renewed in %s", options.cert_dir)
        finally:
            await runner.cleanup()
    finally:
        for task in tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await asyncio.shield(api.close())
