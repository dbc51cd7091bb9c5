"""Ages as ``kubectl get`` shows them: ``45s``, ``5m30s``, ``2d3h``, ``<unknown>``.

The API server computes every AGE, LAST SEEN and ``(3m ago)`` of a Table itself, with
``duration.HumanDuration`` (:func:`human_duration`: two units while they carry information,
one when the second would be noise) and ``translateTimestampSince`` (:func:`since`: ``<unknown>``
for a missing time). A timestamp up to a second ahead of the clock reads ``0s``, one further
ahead ``<invalid>``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubemedic.model import timing

__all__ = ["human_duration", "parse_time", "since"]


human_duration = timing.kubectl_age
"""``duration.HumanDuration``: ``45s``, ``5m30s``, ``2d3h``, ``3y45d`` (kubemedic.model.timing)."""


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
