"""When things happened: creation times, ages in whole seconds, durations for messages.

Ages are measured against ``ClusterView.now`` (the snapshot's own time), never the wall clock, and
are clamped at zero: a timestamp a little ahead of ``now`` (clock skew between nodes and the API
server) reads as "just now", not as a negative age.
"""

from __future__ import annotations

from datetime import datetime

from kubemedic.model import objects
from kubemedic.model.objects import Body

__all__ = ["created_at", "human_duration", "seconds_since"]


def created_at(body: Body) -> datetime | None:
    """``metadata.creationTimestamp``, or None when absent or unreadable."""
    return objects.parse_time(objects.get_map(body, "metadata").get("creationTimestamp"))


def seconds_since(now: datetime, then: datetime | None) -> int | None:
    """Whole seconds from ``then`` to ``now`` (at least 0), or None when ``then`` is unknown."""
    if then is None:
        return None
    return max(0, int((now - then).total_seconds()))


def human_duration(seconds: float) -> str:
    """``2h5m``, ``12m30s``, ``45s``: a Go-like duration for messages (negative reads ``0s``)."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    if minutes:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    return f"{secs}s"
