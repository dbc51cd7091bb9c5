"""What a check's setting may hold, and how it is shown: the contract the configuration file is
validated against and ``kubemedic checks NAME`` prints.

A check's settings are the fields of its frozen config dataclass. Most need nothing more than
their type: a number's range and unit follow from its name (``*_seconds`` is a whole number of
seconds, ``*_minutes`` minutes, ``*_percent`` a percentage, ``*_fraction`` a share from 0 to 1),
and every number is finite, zero or more, and below a generous cap (a setting past it is a typo,
and would overflow the time arithmetic it feeds). A setting that needs more says so with
``number(...)`` (a window that must be longer than zero, a priority that may be negative) or
``quantity(...)`` (a Kubernetes quantity such as ``256Mi``, read at load, never at scan time).

``shown`` writes a value as a user writes it in the configuration file: ``2m`` for a duration,
``256Mi`` for a quantity, ``null``, ``true``, lists in brackets.

Pure: may import :mod:`kubemedic.model` only.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kubemedic.model.durations import short_duration

__all__ = [
    "MAX_COUNT",
    "MAX_SECONDS",
    "Bounds",
    "bounds_of",
    "camel",
    "echo",
    "is_quantity",
    "number",
    "quantity",
    "shown",
]

MAX_COUNT = 2**31 - 1
"""Largest whole number a count setting takes (Kubernetes counts are 32-bit)."""

MAX_SECONDS = 100 * 365 * 86400
"""Longest time a setting takes: 100 years, in seconds."""

MAX_NUMBER = 1_000_000.0
"""Largest percentage, rate or factor a setting takes."""

_SHOWN = 200


@dataclass(frozen=True, slots=True)
class Bounds:
    """The numbers a setting accepts: ``low`` (inclusive, or exclusive when ``above``) to
    ``high``; ``whole`` for integers; ``unit`` as the message says it (``seconds``)."""

    low: float = 0
    high: float = MAX_NUMBER
    above: bool = False
    whole: bool = False
    unit: str = ""

    def admits(self, value: float) -> bool:
        if not math.isfinite(value) or value > self.high:
            return False
        return value > self.low if self.above else value >= self.low

    def expected(self, *, value: float | None = None) -> str:
        """``a whole number of seconds >= 0``: what the setting takes; the upper bound is
        named when ``value`` is past it."""
        kind = "a whole number" if self.whole else "a number"
        if self.unit == "fraction":
            kind = "a fraction"
        elif self.unit == "percent":
            kind = "a percentage"
        elif self.unit:
            kind += f" of {self.unit}" if self.unit != "per minute" else " per minute"
        low = _number(self.low)
        past = value is not None and value > self.high
        if past or self.unit == "fraction" or self.low < 0:
            return f"{kind} from {low} to {_number(self.high)}"
        return f"{kind} {'>' if self.above else '>='} {low}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def number(
    default: Any,
    *,
    low: float = 0,
    above: bool = False,
    high: float | None = None,
    unit: str | None = None,
) -> Any:
    """A numeric setting with a range other than its name implies: ``number(300, low=0,
    above=True)`` for a window that must be longer than zero."""
    bounds = {"low": low, "above": above, "high": high, "unit": unit}
    return dataclasses.field(default=default, metadata={"bounds": bounds})


def quantity(default: str | None) -> Any:
    """A setting holding a Kubernetes quantity (``256Mi``, ``100m``) of zero or more."""
    return dataclasses.field(default=default, metadata={"quantity": True})


def is_quantity(item: dataclasses.Field[Any]) -> bool:
    return bool(item.metadata.get("quantity"))


def bounds_of(item: dataclasses.Field[Any], *, whole: bool) -> Bounds:
    """The range of a numeric setting: its ``number(...)`` arguments over what its name says."""
    name = item.name
    unit, high = "", MAX_NUMBER
    if name.endswith("_seconds"):
        unit, high = "seconds", MAX_SECONDS
    elif name.endswith("_minutes"):
        unit, high = "minutes", MAX_SECONDS / 60
    elif name.endswith("_percent"):
        unit = "percent"
    elif name.endswith("_fraction"):
        unit, high = "fraction", 1.0
    elif name.endswith("_per_minute"):
        unit = "per minute"
    elif whole:
        high = MAX_COUNT
    given: Mapping[str, Any] = item.metadata.get("bounds", {})
    return Bounds(
        low=given.get("low", 0),
        above=given.get("above", False),
        high=given["high"] if given.get("high") is not None else high,
        whole=whole,
        unit=given["unit"] if given.get("unit") is not None else unit,
    )


def echo(value: object) -> str:
    """``value`` as an error message echoes it: text in double quotes, anything else as in the
    file; at most 200 characters."""
    if isinstance(value, str):
        text = json.dumps(value[:_SHOWN], ensure_ascii=False)
        return text if len(value) <= _SHOWN else text[:-1] + '…"'
    return shown(value)


def camel(name: str) -> str:
    """``window_slack`` -> ``windowSlack``: a setting as the documentation spells it."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def shown(value: object) -> str:
    """``value`` as written in the configuration file (YAML flow style), at most 200
    characters: ``2m``, ``256Mi``, ``null``, ``[kubelet, containerd]``."""
    text = _yaml(value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "…"


_RESERVED = frozenset({"", "~", "null", "true", "false", "yes", "no", "on", "off"})


def _plain(text: str) -> bool:
    """Whether ``text`` reads back as the same string without quotes."""
    if text.lower() in _RESERVED or text.strip() != text or text[0] in "-?|>%@`.":
        return False
    if any(c in text for c in ":#,[]{}'\"&*!"):
        return False
    try:
        float(text)
    except ValueError:
        return True
    return False


def _yaml(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, timedelta):
        return short_duration(value)
    if isinstance(value, str):
        return value if _plain(value) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_yaml(item) for item in value) + "]"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = (
            f"{item.name}: {_yaml(getattr(value, item.name))}" for item in dataclasses.fields(value)
        )
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_yaml(k)}: {_yaml(v)}" for k, v in value.items()) + "}"
    return _yaml(str(value))
