"""When things happened: creation times, ages in whole seconds, durations for messages.

Ages are measured against ``ClusterView.now`` (the snapshot's own time), never the wall clock, and
are clamped at zero: a timestamp a little ahead of ``now`` (clock skew between nodes and the API
server) reads as "just now", not as a negative age.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from kubemedic.model import objects
from kubemedic.model.objects import Body

__all__ = ["created_at", "human_duration", "kubectl_age", "seconds_since"]


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


def kubectl_age(delta: timedelta) -> str:
    """kubectl's ages, apimachinery's ``duration.HumanDuration``: two units while they carry
    information (``45s``, ``5m30s``, ``65m``, ``3h20m``, ``26h``, ``3d4h``, ``40d``, ``2y10d``)."""
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
