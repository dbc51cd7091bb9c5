"""Exponential back-off with jitter, as client-go's reflector backs off.

client-go's ``NewReflector`` gives its reflector
``wait.NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0, clock)``: the first delay is
800 ms, each next one doubles, the base stops growing at 30 s, and every delay gets up to 100%
jitter on top (``wait.Jitter``: ``d + rand * 1.0 * d``), so a failing API server sees a client
retry every [30 s, 60 s) at worst ("~98% traffic reduction when the API server is not healthy").
When no back-off was asked for during two minutes the manager starts over from 800 ms
(``getNextBackoff`` compares the time since the last back-off with ``backoffResetDuration``).

One addition: a ``429 Too Many Requests`` (API Priority and Fairness) or a ``503`` may carry
``Retry-After``; the delay is then at least that, since retrying earlier is only rejected again.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from kubemedic.kube.api import ApiError

__all__ = ["Backoff"]


class Backoff:
    """Delays between retries; ``next_delay`` for each failure, ``reset`` after a success that
    should start the sequence over (client-go only resets on time; see the module docstring)."""

    def __init__(
        self,
        *,
        initial: float = 0.8,
        factor: float = 2.0,
        cap: float = 30.0,
        jitter: float = 1.0,
        reset_after: float = 120.0,
        rng: random.Random | None = None,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if initial <= 0 or factor < 1 or cap < initial or jitter < 0 or reset_after < 0:
            raise ValueError(
                "Backoff needs initial > 0, factor >= 1, cap >= initial, jitter >= 0 and "
                f"reset_after >= 0 (got initial={initial}, factor={factor}, cap={cap}, "
                f"jitter={jitter}, reset_after={reset_after})"
            )
        self.initial = initial
        self.factor = factor
        self.cap = cap
        self.jitter = jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()  # noqa: S311 (spreading retries, not secrets)
        self._now = now
        self._base = initial
        self._last: float | None = None

    def next_delay(self, error: BaseException | None = None, *, at_cap: bool = False) -> float:
        """Seconds to wait before the next attempt after ``error``.

        The base delay (800 ms, 1.6 s, 3.2 s ... 30 s) is jittered to [base, base * (1 +
        jitter)). ``at_cap`` jumps straight to the cap: for failures no quick retry can fix (401,
        403, 404), where client-go keeps trying but there is no point in trying soon. An
        ``ApiError`` with ``retry_after`` waits at least that long."""
        now = self._now()
        if self._last is not None and now - self._last > self.reset_after:
            self._base = self.initial
        self._last = now
        if at_cap:
            self._base = self.cap
        base = self._base
        self._base = min(self._base * self.factor, self.cap)
        delay = base + self._rng.random() * self.jitter * base
        if isinstance(error, ApiError) and error.retry_after is not None:
            delay = max(delay, error.retry_after)
        return delay

    def reset(self) -> None:
        """Start over from the initial delay."""
        self._base = self.initial
        self._last = None

    @property
    def current(self) -> float:
        """The base (unjittered) delay the next failure gets, unless the reset applies."""
        return self._base
