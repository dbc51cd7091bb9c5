"""Durations as people and Kubernetes write them: ``90s``, ``10m``, ``1h30m``, ``1.5h``, ``7d``.

One grammar for every duration kubemedic reads (command-line flags, configuration, scenario
files, the ``window`` of a metrics.k8s.io sample), a superset of Go's ``time.ParseDuration``::

    duration  = [sign] ( "0" | component { component } )     surrounding blanks ignored
    component = number unit
    number    = digits [ "." { digit } ] | "." digits
    unit      = "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h" | "d" | "w"
    sign      = "+" | "-"                                       "-" only with negative=True

``d`` (24 h) and ``w`` (7 d) are not Go's; the archive's ``--since 7d`` and the simulator's
scenarios read them. With ``bare_seconds=True`` a plain number (``90``, ``1.5``, ``1e3``, or an
int or float rather than text) is also accepted, as seconds. Components add up (``1h1h`` is
``2h``, as in Go). The value is exact (fractions, no float rounding) until it is returned: as a
``timedelta`` (rounded to the microsecond) or float seconds. Anything else
(empty text, ``5x``, ``1 h``, ``1H``, ``nan``, ``inf``, a negative value unless asked for, more
than ``timedelta`` holds) raises ``DurationError`` whose message echoes the value, at most 200
characters of it: ``expected a duration such as 2m or 1h30m, got "5x"``.

``go_duration`` writes Go's ``time.Duration.String()`` (``1h0m0s``, ``3m2.5s``, ``520ms``);
``short_duration`` writes it without trailing zero units (``1h``, ``2m``, ``1h30m``), as
configuration files and their defaults spell durations. Both read back through this grammar.
"""

from __future__ import annotations

import json
import math
import re
from datetime import timedelta
from fractions import Fraction

from kubemedic.errors import DurationError

__all__ = [
    "UNITS",
    "DurationError",
    "go_duration",
    "parse_duration",
    "parse_seconds",
    "short_duration",
]

#: Seconds in each unit the grammar accepts.
UNITS: dict[str, Fraction] = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),  # U+00B5 MICRO SIGN, as Go writes it
    "μs": Fraction(1, 10**6),  # U+03BC GREEK SMALL LETTER MU, which Go also reads
    "ms": Fraction(1, 10**3),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
    "d": Fraction(86400),
    "w": Fraction(7 * 86400),
}

_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
# Longest units first, so "ms" is not read as "m" followed by garbage.
_COMPONENT = re.compile(rf"({_NUMBER})(ns|us|µs|μs|ms|s|m|h|d|w)")
_BARE = re.compile(rf"{_NUMBER}(?:[eE][+-]?[0-9]+)?")
_MAX_TEXT = 256
_SHOWN = 200
_MAX_MICROSECONDS = timedelta.max // timedelta(microseconds=1)
_EXAMPLES = "such as 2m or 1h30m"


def _shown(value: object) -> str:
    """``value`` as the message echoes it: text in double quotes, at most 200 characters."""
    if isinstance(value, str):
        if len(value) > _SHOWN:
            return json.dumps(value[:_SHOWN], ensure_ascii=False)[:-1] + '…"'
        return json.dumps(value, ensure_ascii=False)
    text = repr(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


def _error(
    value: object, expected: str = f"a duration {_EXAMPLES}", hint: str = ""
) -> DurationError:
    return DurationError(f"expected {expected}, got {_shown(value)}{hint}")


def _exact(value: object, *, bare_seconds: bool) -> Fraction:
    """Seconds in ``value``, exactly, with its sign; raises ``DurationError``."""
    if isinstance(value, bool):
        raise _error(value)
    if isinstance(value, int | float):
        if not bare_seconds or not math.isfinite(value):
            raise _error(value)
        return Fraction(value)
    if not isinstance(value, str):
        raise _error(value)
    if len(value) > _MAX_TEXT:
        raise _error(value, hint=f" ({len(value)} characters)")
    text = value.strip()
    sign, body = 1, text
    if body[:1] in ("+", "-"):
        sign, body = (-1 if body[0] == "-" else 1), body[1:]
    if body == "0":
        return Fraction(0)
    if bare_seconds and _BARE.fullmatch(body):
        return sign * Fraction(body)
    total = Fraction(0)
    position = 0
    while position < len(body):
        found = _COMPONENT.match(body, position)
        if found is None:
            break
        total += Fraction(found[1]) * UNITS[found[2]]
        position = found.end()
    if not body or position < len(body):
        hint = ""
        if _BARE.fullmatch(body):
            hint = f" (a number needs a unit: {body}s)"
        raise _error(value, hint=hint)
    return sign * total


def _checked(
    value: object, *, negative: bool, zero: bool, bare_seconds: bool
) -> tuple[Fraction, int]:
    """The exact seconds and the microseconds (rounded half to even) of ``value``."""
    seconds = _exact(value, bare_seconds=bare_seconds)
    if seconds < 0 and not negative:
        raise _error(value, f"a duration of zero or more, {_EXAMPLES}")
    if seconds == 0 and not zero:
        raise _error(value, f"a duration longer than zero, {_EXAMPLES}")
    micros = round(seconds * 10**6)
    if abs(micros) > _MAX_MICROSECONDS:
        raise _error(value, f"a duration of at most {timedelta.max.days} days")
    return seconds, micros


def parse_duration(
    value: object, *, negative: bool = False, zero: bool = True, bare_seconds: bool = False
) -> timedelta:
    """The ``timedelta`` that ``value`` (``90s``, ``1h30m``, ``1.5h``, ``500ms``, ``7d``)
    says, to the microsecond. ``negative`` admits a leading ``-``; ``zero=False`` rejects
    zero; ``bare_seconds`` reads a plain number as seconds. Raises ``DurationError``."""
    _, micros = _checked(value, negative=negative, zero=zero, bare_seconds=bare_seconds)
    return timedelta(microseconds=micros)


def parse_seconds(
    value: object, *, negative: bool = False, zero: bool = True, bare_seconds: bool = False
) -> float:
    """Like ``parse_duration``, as float seconds (the nearest float to the exact value)."""
    seconds, _ = _checked(value, negative=negative, zero=zero, bare_seconds=bare_seconds)
    return float(seconds)


def go_duration(value: float | timedelta) -> str:
    """Go's ``time.Duration.String()``: ``1h0m0s``, ``3m2.5s``, ``520ms``, ``1.5µs``, ``0s``,
    ``-1m30s``. Float seconds are rounded to the nanosecond; a ``timedelta`` is exact."""
    if isinstance(value, timedelta):
        ns = (value // timedelta(microseconds=1)) * 1000
    else:
        if not math.isfinite(value):
            raise ValueError(f"{value!r} seconds has no Go duration")
        ns = round(value * 1e9)
    if ns == 0:
        return "0s"
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 10**9:
        for unit, size, digits in (("ms", 10**6, 6), ("µs", 10**3, 3), ("ns", 1, 0)):
            if ns >= size:
                whole, frac = divmod(ns, size)
                tail = f".{frac:0{digits}d}".rstrip("0").rstrip(".") if digits else ""
                return f"{sign}{whole}{tail}{unit}"
    hours, rest = divmod(ns, 3600 * 10**9)
    minutes, rest = divmod(rest, 60 * 10**9)
    whole, frac = divmod(rest, 10**9)
    text = f"{hours}h" if hours else ""
    if hours or minutes:
        text += f"{minutes}m"
    tail = f".{frac:09d}".rstrip("0").rstrip(".")
    return f"{sign}{text}{whole}{tail}s"


def short_duration(value: float | timedelta) -> str:
    """Go's form without its trailing zero units, as a configuration file writes a duration:
    ``2m`` rather than ``2m0s``, ``1h`` rather than ``1h0m0s``, ``1h30m``, ``90ms``, ``0s``.
    :func:`parse_duration` reads it back to the same value."""
    text = go_duration(value)
    if text.endswith("m0s"):
        text = text[:-2]
    if text.endswith("h0m"):
        text = text[:-2]
    return text
