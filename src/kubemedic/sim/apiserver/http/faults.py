"""Fault injection: the misbehaving API server that reliability tests need.

Real control planes throttle (``429`` with ``Retry-After`` from API Priority and Fairness), fail
(``500``), time out, answer slowly, drop watch connections (load balancers and apiserver
restarts do), leave watches silent (half-open TCP), and compact history so resumed watches get
``410 Gone``. Each fault is set here by rate or switch; the server consults it per request.
``rate`` values are probabilities in [0, 1] drawn from a seeded generator, so a failing test
replays the same faults. Faults apply to resource requests only: discovery, OpenAPI, the clock
and the control endpoints stay healthy so clients can always be configured.

Faults are set with ``kubemedic sim serve --fault NAME=VALUE`` (:func:`parse_assignments`) or at
run time by ``PUT /kubemedic.io/v1/faults`` with a JSON object of the same names
(:meth:`Faults.update`). Both are checked by one validator, :func:`check`, with the same ranges:
rates from 0 to 1, seconds (``latency``, ``timeout-seconds``, ``retry-after``) from 0 to 3600,
counts and the seed from 0 to 2**31 - 1, switches true or false. A flag's value is text
(``error-rate=0.1``, ``watch-stall=on``); a JSON value has its JSON type (``0.1``, ``true``), so
``"0.1"`` or ``1.5`` for a whole number is refused as the Kubernetes API refuses a wrong-typed
field. A refused change changes nothing; the emulator answers it ``400 BadRequest``.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import orjson

from kubemedic.errors import InputError

__all__ = ["MAX_COUNT", "MAX_SECONDS", "FaultError", "Faults", "check", "parse_assignments"]

#: Most seconds a fault may add or wait (``latency``, ``timeout-seconds``, ``retry-after``).
MAX_SECONDS = 3600
#: Largest ``watch-drop-after`` and ``seed``.
MAX_COUNT = 2**31 - 1

Spelling = Literal["flag", "field"]
"""How the user named the faults: ``flag`` (``--fault error-rate=0.1``: text values, names with
dashes) or ``field`` (a JSON object or a Python mapping: typed values, names as given)."""

_SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True}
_SWITCH_WORDS |= {"0": False, "false": False, "no": False, "off": False}
_WHOLE = re.compile(r"\+?[0-9]{1,12}")


class FaultError(InputError, ValueError):
    """A fault setting that is not one. The message names the fault as the user spelt it
    (``--fault error-rate: ...`` for a flag, ``fault error_rate: ...`` for a field) and what it
    takes, echoing the value given (200 characters at most)."""


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

    def update(self, changes: Mapping[str, object], *, spelling: Spelling = "field") -> None:
        """Apply settings by name (``error_rate`` or ``error-rate``), all or none: each is
        checked by :func:`check` first, and the first that is not a setting raises
        :class:`FaultError` with nothing changed."""
        checked = dict(check(name, value, spelling=spelling) for name, value in changes.items())
        for attr, value in checked.items():
            setattr(self, attr, value)
        if "seed" in checked:
            self._rng.seed(self.seed)

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


_KINDS: dict[str, type] = {
    f.name: type(f.default) for f in fields(Faults) if not f.name.startswith("_")
}


def check(name: str, value: object, *, spelling: Spelling = "field") -> tuple[str, object]:
    """The setting ``name`` (``error-rate`` or ``error_rate``) set to ``value``, checked: its
    attribute name on :class:`Faults` and its typed value, or :class:`FaultError` naming it.

    With ``spelling="flag"`` the value is the text after ``=`` of ``--fault NAME=VALUE``; with
    ``"field"`` it is a JSON value of the setting's type (a number for a rate or seconds, a whole
    number for a count, ``true``/``false`` for a switch)."""
    attr = name.strip().replace("-", "_")
    shown = attr.replace("_", "-") if spelling == "flag" else name
    if attr not in _KINDS:
        known = sorted(k.replace("_", "-") if spelling == "flag" else k for k in _KINDS)
        raise _refused(spelling, "", f"unknown fault {name[:200]!r}; known: {', '.join(known)}")
    kind = _KINDS[attr]
    typed = _from_text(kind, value) if isinstance(value, str) and spelling == "flag" else value
    if kind is bool:
        ok = isinstance(typed, bool)
        expected = "true or false"
    elif kind is int:
        high = MAX_SECONDS if attr == "retry_after" else MAX_COUNT
        ok = isinstance(typed, int) and not isinstance(typed, bool) and 0 <= typed <= high
        expected = f"a whole number from 0 to {high}"
    else:
        high = 1 if attr.endswith("_rate") else MAX_SECONDS
        ok = (
            isinstance(typed, int | float)
            and not isinstance(typed, bool)
            and math.isfinite(typed)
            and 0 <= typed <= high
        )
        what = "a rate" if attr.endswith("_rate") else "a number of seconds"
        expected = f"{what} from 0 to {high}"
    if not ok:
        raise _refused(spelling, shown, f"expected {expected}, got {_shown(value, spelling)}")
    if kind is float and isinstance(typed, int):
        return attr, float(typed)
    return attr, typed


def parse_assignments(items: Iterable[str]) -> dict[str, object]:
    """``["error-rate=0.1", "watch-stall=true"]`` (``--fault`` flags) to checked settings by
    attribute name (``{"error_rate": 0.1, "watch_stall": True}``); :class:`FaultError` naming
    the flag otherwise."""
    out = {}
    for item in items:
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not name:
            example = "NAME=VALUE such as error-rate=0.1"
            raise _refused("flag", "", f"expected {example}, got {item[:200]!r}")
        attr, typed = check(name, value, spelling="flag")
        out[attr] = typed
    return out


def _from_text(kind: type, text: str) -> object:
    """A flag's text as a value of ``kind``, or the text itself when it is not one."""
    if kind is bool:
        return _SWITCH_WORDS.get(text.lower(), text)
    if kind is int:
        return int(text) if _WHOLE.fullmatch(text) else text
    try:
        return float(text)
    except ValueError:
        return text


def _refused(spelling: Spelling, name: str, problem: str) -> FaultError:
    if spelling == "flag":
        return FaultError(f"--fault {name}: {problem}" if name else f"--fault: {problem}")
    return FaultError(f"fault {name[:200]}: {problem}" if name else problem)


def _shown(value: object, spelling: Spelling) -> str:
    """The value given, as the user wrote it: a flag's text quoted, a field's value as JSON."""
    if spelling == "flag" and isinstance(value, str):
        return repr(value[:200])
    if isinstance(value, float | int) and not isinstance(value, bool):
        return repr(value)[:200]  # nan and inf from a Python caller, which JSON cannot show
    try:
        text = orjson.dumps(value, default=repr).decode()
    except TypeError:
        text = repr(value)
    return text[:200]
