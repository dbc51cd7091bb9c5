"""POSTing a notification: timeouts, retries with back-off, and a plain answer.

One ``Sender`` (one aiohttp session, so connections are reused) serves every receiver. A POST
is tried up to ``attempts`` times: a refused or cut connection, a timeout, ``408``, ``429`` and
any ``5xx`` are worth another try after a back-off (``kube.backoff.Backoff``: doubling from
``backoff_seconds``, jittered, 30 s at most; at least the ``Retry-After`` a ``429``/``503``
asks for, up to a minute); any other answer is final: ``2xx`` is delivered, a ``3xx`` or
``4xx`` is a receiver that will not take it (a wrong URL, a revoked Slack hook) and is not
retried this round. Every attempt has its own timeout (``timeout_seconds``, connection
included), so a receiver that never answers costs at most ``attempts`` timeouts plus the
back-offs, in the notifier's own task: the daemon's other work goes on meanwhile.

The URL never appears in a log line or an error (a Slack URL is its own credential): errors name
the receiver.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp

from kubemedic._version import __version__
from kubemedic.kube.backoff import Backoff

__all__ = ["Delivery", "Sender"]

log = logging.getLogger("kubemedic.notify")

_RETRIED = frozenset({408, 429})
_MAX_RETRY_AFTER = 60.0


@dataclass(frozen=True, slots=True)
class Delivery:
    """How one message went: delivered or not, after how many attempts, the last answer."""

    receiver: str
    delivered: bool
    attempts: int
    status: int | None = None
    error: str = ""


class Sender:
    """POSTs JSON bodies; ``close`` when done (or ``async with``)."""

    def __init__(
        self,
        *,
        timeout_seconds: float = 10.0,
        attempts: int = 4,
        backoff_seconds: float = 1.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if attempts < 1 or timeout_seconds <= 0 or backoff_seconds <= 0:
            raise ValueError("Sender needs attempts >= 1, timeout_seconds > 0, backoff > 0")
        self.timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self.attempts = attempts
        self.backoff_seconds = backoff_seconds
        self._sleep = sleep
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Sender:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                timeout=self.timeout,
                headers={"User-Agent": f"kubemedic/{__version__}"},
            )
        return self._session

    async def post(self, *, receiver: str, url: str, body: Mapping[str, Any]) -> Delivery:
        """POST ``body`` as JSON to ``url``, retrying what is worth retrying (module
        docstring); never raises for the receiver's failures."""
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
        backoff = Backoff(
            initial=self.backoff_seconds,
            cap=max(30.0, self.backoff_seconds),
            jitter=0.5,
            reset_after=float("inf"),
        )
        status: int | None = None
        error = ""
        for attempt in range(1, self.attempts + 1):
            wait: float | None = None
            try:
                async with self._client().post(
                    url,
                    data=data,
                    headers={"Content-Type": "application/json"},
                    allow_redirects=False,
                ) as response:
                    status = response.status
                    await response.content.read(4096)  # let the connection be reused
                    if 200 <= status < 300:
                        return Delivery(receiver, True, attempt, status)
                    error = f"HTTP {status} {response.reason or ''}".strip()
                    if status not in _RETRIED and status < 500:
                        log.warning("notify %s: %s; not retried", receiver, error)
                        return Delivery(receiver, False, attempt, status, error)
                    wait = _retry_after(response.headers.get("Retry-After"))
            except (aiohttp.ClientError, TimeoutError, ValueError) as failure:
                status = None
                error = _described(failure)
            if attempt < self.attempts:
                delay = backoff.next_delay()
                if wait is not None:
                    delay = max(delay, wait)
                log.info(
                    "notify %s: attempt %d failed (%s); again in %.1fs",
                    receiver,
                    attempt,
                    error,
                    delay,
                )
                await self._sleep(delay)
        log.warning("notify %s: %d attempts failed (%s)", receiver, self.attempts, error)
        return Delivery(receiver, False, self.attempts, status, error)


def _retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (the HTTP-date form is not honoured: back-off applies)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _described(failure: BaseException) -> str:
    """What went wrong, without the URL aiohttp puts in some messages."""
    if isinstance(failure, TimeoutError | asyncio.TimeoutError):
        return "timed out"
    if isinstance(failure, aiohttp.ClientConnectorError):
        return f"cannot connect: {failure.os_error.strerror or type(failure.os_error).__name__}"
    if isinstance(failure, aiohttp.InvalidURL):
        return "not a valid URL"
    return type(failure).__name__
