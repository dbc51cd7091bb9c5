"""When things happened: creation times, ages in whole seconds, durations for messages.

Ages are measured against ``ClusterView.now`` (the snapshot's own time), never the wall clock, and
are clamped at zero: a timestamp a little ahead of ``now`` (clock skew between nodes and the API
server) reads as "just now", not as a negative age.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from kubemedic.errors import InputError
from kubemedic.model import objects
from kubemedic.model.objects import Body

__all__ = [
    "EARLIEST",
    "LATEST",
    "TimeError",
    "created_at",
    "human_duration",
    "kubectl_age",
    "parse_time_flag",
    "seconds_since",
]

EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2999, 12, 31, 23, 59, 59, tzinfo=UTC)
"""The times a flag accepts: from the Unix epoch (no Kubernetes object is older) to a distant
future that still leaves every check's arithmetic on times far from the calendar's end."""

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")


class TimeError(InputError, ValueError):
    """A time given on the command line could not be read; the message names the flag."""


def parse_time_flag(
    flag: str, text: str, *, earliest: datetime = EARLIEST, latest: datetime = LATEST
) -> datetime:
    """A time given to ``flag`` (``--at``, ``--since``): RFC 3339 with a zone (``Z`` or
    ``+01:00``; a time without one is refused, not guessed), within ``earliest``..``latest``;
    in UTC. ``TimeError`` names the flag and echoes at most 200 characters of ``text``."""
    shown = repr(text[:200])
    wanted = "an RFC 3339 time with a zone, such as 2023-02-01T20:00:00Z"
    if _RFC3339.fullmatch(text.strip()) is None:
        raise TimeError(f"{flag} {shown}: expected {wanted}")
    # Python reads at most microseconds: drop the digits past them.
    fraction = re.sub(r"(\.\d{6})\d+", r"\1", text.strip())
    try:
        parsed = datetime.fromisoformat(fraction.replace("z", "Z"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise TimeError(f"{flag} {shown}: expected {wanted}")
    try:
        within = earliest <= parsed <= latest
    except OverflowError:  # an offset that takes it past the calendar's ends
        within = False
    if not within:
        raise TimeError(
            f"{flag} {shown}: expected a time from {objects.format_time(earliest)} "
            f"to {objects.format_time(latest)}"
        )
    return parsed.astimezone(UTC)


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
