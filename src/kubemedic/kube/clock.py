"""The clock kubemedic reads time from: the wall clock, or the API server's.

Every threshold kubemedic applies ("NotReady for 5 minutes", a Lease's 15 seconds) is measured
on a ``Clock``. Against a real cluster that is the wall clock (``WallClock``), or the API
server's clock when nodes are skewed; against the simulator it must be the simulator's virtual
clock, which can run many times faster than real time, so a 10-minute threshold passes in
seconds of wall time. ``ServerClock`` follows the server:

- the emulator publishes its clock at ``GET /kubemedic.io/v1/clock`` (``{"now": RFC 3339 with
  a fraction, "speed": float, "paused": bool}``);
- a real kube-apiserver has no such endpoint (``404``, or ``403`` when RBAC denies the
  non-resource URL first); there the ``Date`` header of a cheap request (``GET /version``, which
  every authenticated user may read) gives the server's time to the second (RFC 9110 §6.6.1),
  at speed 1.

Between synchronisations ``ServerClock`` extrapolates from the local monotonic clock times the
speed, and it never goes backward (time in the API server only grows). It re-synchronises every
``resync_every`` wall seconds (when a ``sleep`` is under way or starts) or when ``sync()`` is
called. ``sleep(seconds)`` sleeps *cluster* seconds: at speed 10, ten cluster seconds take one
wall second; while the server's clock is paused, it polls until the clock runs again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from kubemedic.errors import KubemedicError
from kubemedic.kube.api import Api, ApiError, ConnectionLost, Forbidden, NotFound
from kubemedic.model.objects import parse_time

__all__ = ["CLOCK_PATH", "Clock", "ClockError", "ServerClock", "WallClock", "sleep_or_stop"]

LOG = logging.getLogger("kubemedic.clock")

#: Where the emulator publishes its virtual clock.
CLOCK_PATH = "/kubemedic.io/v1/clock"

#: Answers that mean "this server has no clock endpoint": not found, or RBAC denied the
#: non-resource URL before the server looked for it.
_NO_ENDPOINT = (Forbidden, NotFound)


class Clock(Protocol):
    """Where time comes from: ``now()`` (aware, UTC) and ``sleep`` in this clock's seconds."""

    def now(self) -> datetime: ...

    async def sleep(self, seconds: float) -> None: ...


class ClockError(KubemedicError):
    """The server's clock could not be read: a malformed clock document, or no ``Date``."""


class WallClock:
    """The local wall clock; ``sleep`` is ``asyncio.sleep``."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ServerClock:
    """The API server's clock, extrapolated locally between synchronisations.

    ``await sync()`` before the first ``now()``. ``source`` says what was read: ``"endpoint"``
    (the emulator's clock document, with speed and pause) or ``"date"`` (a real server's
    ``Date`` header, speed 1).
    """

    def __init__(
        self,
        api: Api,
        *,
        resync_every: float = 30.0,
        paused_poll: float = 0.1,
        timeout: float = 10.0,
    ) -> None:
        if resync_every <= 0 or paused_poll <= 0 or timeout <= 0:
            raise ValueError(
                "ServerClock: resync_every, paused_poll and timeout must be positive "
                f"(got {resync_every}, {paused_poll}, {timeout})"
            )
        self._api = api
        self._resync_every = resync_every
        self._paused_poll = paused_poll
        self._timeout = timeout
        self.source = ""
        self._base: datetime | None = None
        self._anchor = 0.0
        self._speed = 1.0
        self._paused = False
        self._last: datetime | None = None
        self._next_sync = 0.0
        self._lock = asyncio.Lock()

    @classmethod
    async def follow(cls, api: Api, **options: float) -> ServerClock:
        """A ServerClock already synchronised with ``api``'s server."""
        clock = cls(api, **options)
        await clock.sync()
        return clock

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def synced(self) -> bool:
        return self._base is not None

    def now(self) -> datetime:
        if self._base is None:
            raise RuntimeError("ServerClock.now() before the first sync(): await clock.sync()")
        moment = self._base
        if not self._paused:
            moment += timedelta(seconds=(time.monotonic() - self._anchor) * self._speed)
        if self._last is not None and moment < self._last:
            return self._last
        self._last = moment
        return moment

    async def sync(self) -> None:
        """Read the server's clock now. Raises ``ApiError``/``ConnectionLost`` when the server
        does not answer, ``ClockError`` when the answer carries no usable time."""
        async with self._lock:
            await self._sync()

    async def sleep(self, seconds: float) -> None:
        """Sleep ``seconds`` of the server's time (wall time ``seconds / speed``)."""
        if self._base is None:
            await self.sync()
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        target = self.now() + timedelta(seconds=seconds)
        while True:
            if time.monotonic() >= self._next_sync:
                await self._resync_quietly()
            remaining = (target - self.now()).total_seconds()
            if remaining <= 0:
                return
            if self._paused:
                # Paused: nothing advances until the server resumes; ask again shortly.
                self._next_sync = time.monotonic()
                await asyncio.sleep(self._paused_poll)
                continue
            until_resync = max(0.0, self._next_sync - time.monotonic())
            await asyncio.sleep(min(remaining / self._speed, until_resync))

    async def _resync_quietly(self) -> None:
        async with self._lock:
            if time.monotonic() < self._next_sync:
                return  # another sleeper synchronised meanwhile
            try:
                await self._sync()
            except (ApiError, ConnectionLost, ClockError) as exc:
                # Keep extrapolating: a missed sync costs accuracy, not correctness.
                self._next_sync = time.monotonic() + self._resync_every
                LOG.warning("%s: could not re-read the server's clock: %s", self._api.server, exc)

    async def _sync(self) -> None:
        if self.source != "date":
            started = time.monotonic()
            try:
                body = await self._api.request("GET", CLOCK_PATH, timeout=self._timeout)
            except _NO_ENDPOINT as exc:
                LOG.info(
                    "%s: no clock endpoint (HTTP %s); following the Date header at speed 1",
                    self._api.server,
                    exc.code,
                )
                self.source = "date"
            else:
                moment, speed, paused = _read_clock(body, where=self._api.server + CLOCK_PATH)
                self.source = "endpoint"
                self._set(moment, speed, paused, (started + time.monotonic()) / 2)
                return
        await self._sync_from_date()

    async def _sync_from_date(self) -> None:
        started = time.monotonic()
        stamped = await self._api.server_time(timeout=self._timeout)
        ended = time.monotonic()
        if stamped is None:
            raise ClockError(f"{self._api.server}/version: the answer has no usable Date header")
        # The server stamped the header at some instant of our request, in whole seconds:
        # its time when the answer arrived lies in [stamped, stamped + 1 s + round trip].
        low = stamped
        high = stamped + timedelta(seconds=1.0 + (ended - started))
        if self._base is not None and self.source == "date" and not self._paused:
            current = self.now()
            if low <= current <= high:
                self._next_sync = ended + self._resync_every
                return  # still consistent: keep the finer estimate
            estimate = min(max(current, low), high)
        else:
            estimate = low + (high - low) / 2
        self._set(estimate, 1.0, False, ended)

    def _set(self, moment: datetime, speed: float, paused: bool, anchor: float) -> None:
        self._base = moment
        self._anchor = anchor
        self._speed = speed
        self._paused = paused
        self._next_sync = time.monotonic() + self._resync_every


def _read_clock(body: Any, *, where: str) -> tuple[datetime, float, bool]:
    """The emulator's clock document, checked field by field."""
    if not isinstance(body, dict):
        raise ClockError(f"{where}: expected a JSON object, got {type(body).__name__}")
    moment = parse_time(body.get("now"))
    if moment is None:
        raise ClockError(f"{where}: field 'now' is not an RFC 3339 time: {body.get('now')!r}")
    speed = body.get("speed", 1.0)
    if isinstance(speed, bool) or not isinstance(speed, int | float) or speed <= 0:
        raise ClockError(f"{where}: field 'speed' must be a positive number, got {speed!r}")
    paused = body.get("paused", False)
    if not isinstance(paused, bool):
        raise ClockError(f"{where}: field 'paused' must be true or false, got {paused!r}")
    return moment.astimezone(UTC), float(speed), paused


async def sleep_or_stop(sleeping: Awaitable[object], stop: asyncio.Event) -> None:
    """Wait for ``sleeping`` (a clock's ``sleep``) or ``stop``, whichever comes first; the other
    is cancelled, so a daemon's loop ends at once when it is told to stop."""
    sleeper = asyncio.ensure_future(sleeping)
    stopper = asyncio.ensure_future(stop.wait())
    _, pending = await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
