"""Kubernetes resource quantities (``resource.Quantity``), exact.

A quantity is ``<sign><digits>[.<digits>]<suffix>`` where the suffix is one of

* binary SI: ``Ki Mi Gi Ti Pi Ei`` (powers of 1024),
* decimal SI: ``n u m "" k M G T P E`` (powers of 1000),
* a decimal exponent: ``e<int>`` or ``E<int>`` (``1e3``, ``12e-3``).

The API server keeps quantities to nano precision: anything finer is rounded *up* to the next
``1n`` (``0.1n`` reads as ``1n``), so a request can never silently become zero. Arithmetic here is
exact (rational numbers), so summing 150 pods' ``100m`` requests gives exactly ``15``.

Printing follows the API server's canonical form (``Quantity.String()``): the value keeps the
*format* of what was parsed (binary, decimal SI or decimal exponent); binary values that are not
whole numbers or lie strictly between -1024 and 1024 print as decimal SI; decimal values use the
largest exponent that is a multiple of three and leaves an integer mantissa (``1500m`` stays
``1500m``, ``1000m`` becomes ``1``, ``1500000`` becomes ``1500k``).
"""

from __future__ import annotations

import enum
import functools
import math
import re
from dataclasses import dataclass
from fractions import Fraction

from kubemedic.errors import InputError

__all__ = ["Format", "Quantity", "QuantityError", "parse_quantity"]


class QuantityError(InputError, ValueError):
    """A string is not a Kubernetes quantity. The message names the value and, if given, where."""


class Format(enum.Enum):
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {e: s for s, e in _DECIMAL.items()}
_BINARY_BY_EXPONENT = {e: s for s, e in _BINARY.items()}
_NANO = Fraction(1, 10**9)

# Same grammar as apimachinery's parseQuantityString: number, then an optional suffix.
_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)


@dataclass(frozen=True, slots=True, order=False)
class Quantity:
    """An exact quantity. ``value`` is in base units (bytes, cores, ...)."""

    value: Fraction
    format: Format = Format.DECIMAL_SI

    @classmethod
    def parse(cls, text: str, *, where: str | None = None) -> Quantity:
        """Parse ``text``; ``where`` (e.g. ``"Pod ns/name spec.containers[name=x]..."``) is named
        in the error so a user can find the bad field."""
        return parse_quantity(text, where=where)

    @classmethod
    def from_number(cls, value: int | Fraction, fmt: Format = Format.DECIMAL_SI) -> Quantity:
        return cls(Fraction(value), fmt)

    # -- arithmetic -------------------------------------------------------------------------

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.format)

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity(self.value - other.value, self.format)

    def __mul__(self, factor: int | Fraction) -> Quantity:
        return Quantity(self.value * factor, self.format)

    __rmul__ = __mul__

    def __neg__(self) -> Quantity:
        return Quantity(-self.value, self.format)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.value)

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __gt__(self, other: Quantity) -> bool:
        return self.value > other.value

    def __ge__(self, other: Quantity) -> bool:
        return self.value >= other.value

    def __bool__(self) -> bool:
        return self.value != 0

    def ratio(self, other: Quantity) -> Fraction | None:
        """``self / other`` exactly, or None when ``other`` is zero."""
        return None if other.value == 0 else self.value / other.value

    def __float__(self) -> float:
        return float(self.value)

    @property
    def milli(self) -> int:
        """Value in thousandths, rounded up (how the scheduler counts CPU)."""
        return math.ceil(self.value * 1000)

    # -- printing ---------------------------------------------------------------------------

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        """The API server's canonical string for this quantity."""
        value = _round_up_to_nano(self.value)
        if value == 0:
            return "0"
        fmt = self.format
        if fmt is Format.BINARY_SI and (-1024 < value < 1024 or value.denominator != 1):
            fmt = Format.DECIMAL_SI
        if fmt is Format.BINARY_SI:
            return _binary_string(value.numerator)
        return _decimal_string(value, exponent_format=fmt is Format.DECIMAL_EXPONENT)

    def human(self) -> str:
        """A short, readable rendering for messages: ``20Gi``, ``1.5Gi``, ``250m``, ``2``."""
        value = self.value
        if self.format is Format.BINARY_SI and abs(value) >= 1024:
            for suffix, exponent in reversed(_BINARY.items()):
                scaled = value / (1 << exponent)
                if abs(scaled) >= 1:
                    return f"{_short(scaled)}{suffix}"
        if self.format is not Format.BINARY_SI and value.denominator != 1 and abs(value) < 1:
            return f"{_short(value * 1000)}m"
        return _short(value) if abs(value) < 10**6 else self.canonical()


def _short(value: Fraction) -> str:
    text = f"{float(value):.2f}".rstrip("0").rstrip(".")
    return text if text not in ("-0", "") else "0"


def _round_up_to_nano(value: Fraction) -> Fraction:
    if (value / _NANO).denominator == 1:
        return value
    return Fraction(math.ceil(value / _NANO), 10**9)


def _binary_string(amount: int) -> str:
    exponent = 0
    while amount % 1024 == 0 and exponent < 60:
        amount //= 1024
        exponent += 10
    return f"{amount}{_BINARY_BY_EXPONENT.get(exponent, '')}"


def _decimal_string(value: Fraction, *, exponent_format: bool) -> str:
    # value is a multiple of 1e-9: write it as mantissa * 10**exponent with no trailing zeros.
    mantissa = value.numerator * (10**9 // value.denominator)
    exponent = -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # Lower the exponent to a multiple of three, as apimachinery's AsCanonicalBytes does.
    while exponent % 3 != 0:
        mantissa *= 10
        exponent -= 1
    if exponent_format:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    suffix = _DECIMAL_BY_EXPONENT.get(exponent)
    if suffix is None:
        return f"{mantissa}e{exponent}"
    return f"{mantissa}{suffix}"


@functools.lru_cache(maxsize=65536)
def _parse_cached(text: str) -> Quantity | None:
    match = _QUANTITY.fullmatch(text)
    if match is None:
        return None
    number = match.group("number")
    suffix = match.group("suffix") or ""
    value = Fraction(number)
    if suffix in _BINARY:
        value *= 1 << _BINARY[suffix]
        fmt = Format.BINARY_SI
    elif suffix in _DECIMAL:
        value *= Fraction(10) ** _DECIMAL[suffix]
        fmt = Format.DECIMAL_SI
    else:
        exponent = int(suffix[1:])
        if abs(exponent) > 1000:
            return None
        value *= Fraction(10) ** exponent
        fmt = Format.DECIMAL_EXPONENT
    return Quantity(_round_up_to_nano(value), fmt)


def parse_quantity(text: object, *, where: str | None = None) -> Quantity:
    """Parse a quantity as the API server does. Numbers (JSON ints/floats) are accepted too,
    since ``kubectl`` and YAML users write ``cpu: 2``.

    Raises ``QuantityError`` naming the value and ``where`` when it is not a quantity.
    """
    if type(text) is str and len(text) <= 100:  # the common case first: one cache lookup
        parsed = _parse_cached(text)
        if parsed is None:
            raise QuantityError(_message(text, where))
        return parsed
    if isinstance(text, bool):
        raise QuantityError(_message(text, where))
    if isinstance(text, int):
        return Quantity(Fraction(text), Format.DECIMAL_SI)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(_message(text, where))
        return Quantity(_round_up_to_nano(Fraction(repr(text))), Format.DECIMAL_SI)
    if not isinstance(text, str) or len(text) > 100:
        raise QuantityError(_message(text, where))
    parsed = _parse_cached(text)
    if parsed is None:
        raise QuantityError(_message(text, where))
    return parsed


def _message(text: object, where: str | None) -> str:
    shown = repr(text) if not isinstance(text, str) or len(text) <= 100 else repr(text[:100] + "…")
    location = f" in {where}" if where else ""
    return (
        f"invalid quantity {shown}{location}: expected a number with an optional suffix "
        "(m, k, M, G, T, P, E, Ki..Ei or an exponent such as 1e3)"
    )
