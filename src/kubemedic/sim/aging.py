"""Ages as ``kubectl get`` shows them: ``45s``, ``5m30s``, ``2d3h``, ``<unknown>``.

The API server computes every AGE, LAST SEEN and ``(3m ago)`` of a Table itself, with
``duration.HumanDuration`` (:func:`human_duration`: two units while they carry information,
one when the second would be noise) and ``translateTimestampSince`` (:func:`since`: ``<unknown>``
for a missing time). A timestamp up to a second ahead of the clock reads ``0s``, one further
ahead ``<invalid>``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = ["human_duration", "parse_time", "since"]


def human_duration(delta: timedelta) -> str:
    """``duration.HumanDuration``: ``45s``, ``5m30s``, ``2d3h``, ``3y45d``."""
    micros = delta // timedelta(microseconds=1)
    seconds = int(micros / 1_000_000) if micros >= 0 else -((-micros) // 1_000_000)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m" if seconds % 60 == 0 else f"{minutes}m{seconds % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime (UTC when it names no zone), else None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for a zero/absent time."""
    when = parse_time(value)
    return "<unknown>" if when is None else human_duration(now - when)
