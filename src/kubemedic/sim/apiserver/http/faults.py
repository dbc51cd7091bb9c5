"""Fault injection: the misbehaving API server that reliability tests need.

Real control planes throttle (``429`` with ``Retry-After`` from API Priority and Fairness), fail
(``500``), time out, answer slowly, drop watch connections (load balancers and apiserver
restarts do), leave watches silent (half-open TCP), and compact history so resumed watches get
``410 Gone``. Each fault is set here by rate or switch; the server consults it per request.
``rate`` values are probabilities in [0, 1] drawn from a seeded generator, so a failing test
replays the same faults. Faults apply to resource requests only: discovery, OpenAPI, the clock
and the control endpoints stay healthy so clients can always be configured.

Faults are set with ``kubemedic sim serve --fault NAME=VALUE`` or at run time by
``PUT /kubemedic.io/v1/faults`` with a JSON object of the same names.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


@dataclass
class Faults:
    """Current fault settings (all off by default)."""

    #: Share of requests answered ``429 TooManyRequests`` with ``Retry-After: retry_after``.
    throttle_rate: float = 0.0
    retry_after: int = 1
    #: Throttle with a JSON ``Status`` instead of API Priority and Fairness' plain text.
    throttle_status: bool = False
    #: Share of requests answered ``500 InternalError``.
    error_rate: float = 0.0
    #: Share of requests that hang for ``timeout_seconds`` and then get ``504 Timeout``.
    timeout_rate: float = 0.0
    timeout_seconds: float = 5.0
    #: Seconds added to every response.
    latency: float = 0.0
    #: Close each watch stream after this many events (0: never).
    watch_drop_after: int = 0
    #: Stop sending events (and bookmarks) on every watch while keeping it open.
    watch_stall: bool = False
    #: Answer every watch that resumes from a resourceVersion with ``410 Gone``.
    force_gone: bool = False
    seed: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._rng.seed(self.seed)

    def roll(self, rate: float) -> bool:
        return rate > 0 and self._rng.random() < rate

    def update(self, changes: Mapping[str, Any]) -> None:
        """Apply settings by name; unknown names or wrong types raise ValueError."""
        known = {f.name: f for f in fields(self) if not f.name.startswith("_")}
        for name, value in changes.items():
            attr = name.replace("-", "_")
            if attr not in known:
                raise ValueError(f"unknown fault {name!r}; known: {', '.join(sorted(known))}")
            current = getattr(self, attr)
            setattr(self, attr, _coerce(name, value, type(current)))
            if attr == "seed":
                self._rng.seed(self.seed)
            if attr.endswith("_rate") and not 0 <= getattr(self, attr) <= 1:
                raise ValueError(f"fault {name} must be between 0 and 1, got {value}")

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


def _coerce(name: str, value: Any, kind: type) -> Any:
    try:
        if kind is bool:
            if isinstance(value, str):
                if value.lower() in ("1", "true", "yes", "on"):
                    return True
                if value.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            return bool(value)
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"fault {name} needs a {kind.__name__}, got {value!r}") from None


def parse_assignments(items: list[str]) -> dict[str, str]:
    """``["error-rate=0.1", "watch-stall=true"]`` to a mapping (CLI form)."""
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"fault {item!r} is not NAME=VALUE")
        out[name.strip()] = value.strip()
    return out
