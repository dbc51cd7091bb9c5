"""The emulator's virtual clock: every timestamp the emulator writes comes from it.

A virtual clock runs at ``speed`` times real time from an ``origin`` and can be paused, resumed
and jumped forward, so a 10-minute threshold passes in seconds of wall time. It is published at
``GET /kubemedic.io/v1/clock`` and stamps each response's ``Date`` header.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from kubemedic.model.objects import format_micro_time, format_time


class VirtualClock:
    """Monotonic virtual time: ``origin + speed * (real elapsed)`` plus explicit jumps."""

    def __init__(
        self,
        origin: datetime | None = None,
        *,
        speed: float = 1.0,
        paused: bool = False,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if speed <= 0:
            raise ValueError(f"clock speed must be positive, got {speed}")
        self._monotonic = monotonic
        self._base = origin if origin is not None else datetime.now(UTC)
        if self._base.tzinfo is None:
            raise ValueError("clock origin must carry a timezone")
        self._anchor = monotonic()
        self._speed = speed
        self._paused = paused

    def now(self) -> datetime:
        if self._paused:
            return self._base
        elapsed = (self._monotonic() - self._anchor) * self._speed
        return self._base + timedelta(seconds=elapsed)

    @property
    def speed(self) -> float:
        return self._speed

    @property
    def paused(self) -> bool:
        return self._paused

    def _rebase(self) -> None:
        self._base = self.now()
        self._anchor = self._monotonic()

    def set_speed(self, speed: float) -> None:
        if speed <= 0:
            raise ValueError(f"clock speed must be positive, got {speed}")
        self._rebase()
        self._speed = speed

    def pause(self) -> None:
        self._rebase()
        self._paused = True

    def resume(self) -> None:
        self._rebase()
        self._paused = False

    def advance(self, seconds: float) -> None:
        """Jump forward (never backward: time in the API server only grows)."""
        if seconds < 0:
            raise ValueError("the clock never goes backward")
        self._rebase()
        self._base += timedelta(seconds=seconds)


#: Second precision, as metav1.Time serialises (the model's one formatter).
rfc3339 = format_time
#: Microsecond precision, as metav1.MicroTime serialises (events.k8s.io eventTime).
rfc3339_micro = format_micro_time


_HTTP_DATE: list[object] = [None, ""]


def http_date(moment: datetime) -> str:
    """The HTTP ``Date`` header for ``moment`` (``Sat, 30 Nov 2026 05:21:32 GMT``), formatted
    once a second however many responses go out in it."""
    second = moment.timestamp() // 1
    if _HTTP_DATE[0] != second:
        _HTTP_DATE[:] = [second, format_datetime(moment, usegmt=True)]
    return str(_HTTP_DATE[1])
