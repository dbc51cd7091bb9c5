"""The configuration file: thresholds and selectors for each check.

YAML (or JSON), for example::

    checks:
      node-memory-overcommit:
        limits_critical_percent: 130      # snake_case or camelCase, as you like (not both)
      critical-pod-underrequested:
        memoryFloor: 512Mi
      probe-restarts:
        windowSlack: 90s                  # durations as 90s, 2m, 1h30m (or ISO 8601: PT90S)
    disabled: [node-scale-burst]

Every check owns a frozen dataclass of settings with documented defaults (``kubemedic checks
NAME`` prints them); this module reads the file through :mod:`kubemedic.model.documents` (nesting
and YAML aliases bounded, the line named) and checks each setting against its field before the
check ever runs: the type, a number's range (:mod:`kubemedic.checks.settings`: finite, zero or
more, below a cap, a window longer than zero), quantities through
:mod:`kubemedic.model.quantities`, durations through :mod:`kubemedic.model.durations`, label
selectors through :mod:`kubemedic.model.selectors`. A misspelt key (with the nearest known one),
a key given in both spellings, or a wrong value is a ``ConfigError`` naming the file and the key
path in the file's own spelling, and saying what was expected in the user's words::

    kubemedic.yaml: checks.failed-pod-storm.recentMinutes: expected a number of minutes >= 0,
    got .nan

never a silently ignored setting, and never a check turned off at scan time.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import re
import stat
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from types import NoneType, UnionType
from typing import Any

import pydantic

from kubemedic.checks import registry, settings
from kubemedic.errors import InputError
from kubemedic.model import documents
from kubemedic.model.durations import DurationError, parse_duration
from kubemedic.model.quantities import QuantityError, parse_quantity

__all__ = [
    "MAX_BYTES",
    "ConfigError",
    "Converter",
    "Settings",
    "load_settings",
    "read_section",
    "settings_from",
]

Converter = Callable[[Any, str], Any]
"""Reads a value of a type this module does not know (``(value, where) -> value``), raising
``ConfigError`` naming ``where``."""

MAX_BYTES = 4 * 1024 * 1024
"""Largest configuration file read (a real one is a few kilobytes)."""


class ConfigError(InputError):
    """The configuration file is unreadable or invalid; ``str()`` names the file and key."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Per-check configs (instances of each check's dataclass) and the checks turned off."""

    configs: dict[str, Any] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()
    #: The ``repair:`` section as written (read by :mod:`kubemedic.repair.settings`), with
    #: where it came from for messages.
    repair: Mapping[str, Any] | None = None
    #: The ``agent:`` section as written (read by :mod:`kubemedic.agent.settings`).
    agent: Mapping[str, Any] | None = None
    #: The ``drift:`` section as written (read by :mod:`kubemedic.drift.settings`).
    drift: Mapping[str, Any] | None = None
    #: The ``guard:`` section as written (read by :mod:`kubemedic.guard.settings`).
    guard: Mapping[str, Any] | None = None
    #: The ``breaker:`` section as written (read by :mod:`kubemedic.breaker.settings`).
    breaker: Mapping[str, Any] | None = None
    #: The ``notify:`` section as written (read by :mod:`kubemedic.notify.settings`).
    notify: Mapping[str, Any] | None = None
    source: str = ""


_SECTIONS = ("agent", "breaker", "checks", "disabled", "drift", "guard", "notify", "repair")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("-", "_")


def load_settings(path: Path) -> Settings:
    """The settings in the file at ``path``; ``ConfigError`` naming the file otherwise. Only a
    regular file is read (a FIFO or a device would block or never end)."""
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{path}: not a regular file")
        if info.st_size > MAX_BYTES:
            raise ConfigError(f"{path}: {info.st_size:,} bytes, more than {MAX_BYTES:,}")
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: byte {error.start}: not valid UTF-8") from None
    try:
        raw = documents.load_yaml(text, where=str(path))
    except documents.DocumentError as error:
        raise ConfigError(str(error)) from None
    return settings_from({} if raw is None else raw, source=str(path))


def settings_from(raw: Any, *, source: str) -> Settings:
    """Validate an already-decoded configuration document."""
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"{source}: expected a mapping with 'checks' and/or 'disabled', got {_kind(raw)}"
        )
    for key in raw:
        if key not in _SECTIONS:
            raise ConfigError(f"{source}: {_unknown(key, _SECTIONS, 'key')}")
    for section in ("repair", "agent", "drift", "guard", "breaker", "notify"):
        value = raw.get(section)
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError(
                f"{source}: {section}: expected a mapping of settings, got {_kind(value)}"
            )
    disabled = raw.get("disabled") or []
    if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        raise ConfigError(f"{source}: 'disabled' must be a list of check names")
    for index, name in enumerate(disabled):
        _known(name, where=f"{source}: disabled[{index}]")
    sections = raw.get("checks") or {}
    if not isinstance(sections, Mapping):
        raise ConfigError(f"{source}: 'checks' must map check names to settings")
    configs: dict[str, Any] = {}
    for name, values in sections.items():
        spec = _known(name, where=f"{source}: checks")
        configs[spec.name] = _dataclass(values, spec.config_type, where=f"{source}: checks.{name}")
    return Settings(
        configs=configs,
        disabled=frozenset(disabled),
        repair=raw.get("repair"),
        agent=raw.get("agent"),
        drift=raw.get("drift"),
        guard=raw.get("guard"),
        breaker=raw.get("breaker"),
        notify=raw.get("notify"),
        source=source,
    )


def read_section(
    value: Any, target: type, *, where: str, converters: Mapping[Any, Converter] | None = None
) -> Any:
    """An instance of the dataclass ``target`` from a mapping written in either spelling, every
    value checked by its field's type as the checks' settings are (``ConfigError`` naming the
    key path from ``where``); ``converters`` read the types this module does not know."""
    return _dataclass(value, target, where=where, converters=converters or {})


def _known(name: object, *, where: str) -> registry.CheckSpec[Any]:
    spec = registry.REGISTRY.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ConfigError(f"{where}: {_unknown(name, registry.REGISTRY, 'check')}")
    return spec


def _unknown(key: object, known: Iterable[str], what: str) -> str:
    """``unknown check "x"; did you mean "y"?`` (or the known names when none is near)."""
    names = sorted(known)
    close = difflib.get_close_matches(str(key), names, n=1, cutoff=0.6)
    if close:
        return f"unknown {what} {settings.echo(key)}; did you mean {close[0]!r}?"
    return f"unknown {what} {settings.echo(key)}; known: {', '.join(names)}"


def _kind(value: object) -> str:
    """How the message names a value of the wrong type: the value itself, at most 200
    characters, or what it is when it is a mapping or a list."""
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return settings.echo(value)


# -- settings, by their field's type ---------------------------------------------------------


def _dataclass(
    value: Any, target: type, *, where: str, converters: Mapping[Any, Converter] | None = None
) -> Any:
    """An instance of the dataclass ``target`` from a mapping of settings in either spelling."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping of settings, got {_kind(value)}")
    fields = {item.name: item for item in dataclasses.fields(target)}
    hints = typing.get_type_hints(target)
    spelled: dict[str, str] = {}
    # The keys first (unknown, or one setting in two spellings), then the values.
    for key in value:
        name = _snake(key) if isinstance(key, str) else ""
        if name not in fields:
            known = [settings.camel(n) if _is_camel(key) else n for n in fields]
            raise ConfigError(f"{where}: {_unknown(key, known, 'setting')}")
        if name in spelled:
            raise ConfigError(
                f"{where}: {spelled[name]} and {key} are the same setting; give it once"
            )
        spelled[name] = key
    values: dict[str, Any] = {
        name: _value(
            value[key], hints[name], fields[name], where=f"{where}.{key}", converters=converters
        )
        for name, key in spelled.items()
    }
    missing = [
        settings.camel(name)
        for name, item in fields.items()
        if name not in values
        and item.default is dataclasses.MISSING
        and item.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConfigError(f"{where}: missing {', '.join(missing)}")
    try:
        return target(**values)
    except ValueError as error:  # the dataclass's own check (a role's label selector)
        raise ConfigError(f"{where}: {error}") from None


def _is_camel(key: object) -> bool:
    return isinstance(key, str) and key != key.lower()


def _value(
    value: Any,
    hint: Any,
    item: dataclasses.Field[Any],
    *,
    where: str,
    converters: Mapping[Any, Converter] | None = None,
) -> Any:
    """``value`` checked against the field's type ``hint``; ``ConfigError`` naming ``where``."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, UnionType):
        members = [arg for arg in typing.get_args(hint) if arg is not NoneType]
        optional = len(members) < len(typing.get_args(hint))
        if len(members) == 1:
            hint = members[0]
    if value is None and optional:
        return None
    if converters and hint in converters:
        return converters[hint](value, where)
    if settings.is_quantity(item):
        return _quantity(value, where=where, optional=optional)
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise _expected(where, "true or false", value)
    if hint is int or hint is float:
        return _number(value, settings.bounds_of(item, whole=hint is int), where=where)
    if hint is str:
        if isinstance(value, str):
            return value
        raise _expected(where, "text", value)
    if hint is timedelta:
        return _duration(value, where=where)
    if typing.get_origin(hint) is tuple:
        return _sequence(value, typing.get_args(hint)[0], item, where=where, converters=converters)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass(value, hint, where=where, converters=converters)
    return _pydantic(value, hint, where=where)


def _expected(where: str, expected: str, value: object) -> ConfigError:
    return ConfigError(f"{where}: expected {expected}, got {_kind(value)}")


def _number(value: Any, bounds: settings.Bounds, *, where: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _expected(where, bounds.expected(), value)
    try:
        number = float(value)
    except OverflowError:  # an integer of hundreds of digits
        number = math.inf
    if not bounds.admits(number) or (bounds.whole and not number.is_integer()):
        raise _expected(where, bounds.expected(value=number), value)
    return int(value) if bounds.whole else number


def _quantity(value: Any, *, where: str, optional: bool) -> str:
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = settings.shown(value)  # ``cpuFloor: 1``: a number is a quantity too
    if not isinstance(value, str):
        nothing = " or null" if optional else ""
        raise _expected(where, f"a quantity such as 256Mi or 100m{nothing}", value)
    try:
        amount = parse_quantity(value)
    except QuantityError:
        raise _expected(where, "a quantity such as 256Mi or 100m", value) from None
    if amount.value < 0:
        raise _expected(where, "a quantity of zero or more", value)
    return value


_PYDANTIC_DURATION = re.compile(r"[+-]?P|.*:")
"""ISO 8601 (``PT2M``) and ``[-][D,]HH:MM:SS`` durations, which pydantic reads."""


def _duration(value: Any, *, where: str) -> timedelta:
    """A duration setting: ``90s``, ``2m``, ``1h30m`` or a number of seconds, as everywhere in
    kubemedic; ISO 8601 (``PT2M``) and ``HH:MM:SS`` too. Zero or more."""
    try:
        return parse_duration(value, bare_seconds=True)
    except DurationError as error:
        if not isinstance(value, str) or not _PYDANTIC_DURATION.match(value.strip()):
            raise ConfigError(f"{where}: {error}") from None
    try:
        parsed = pydantic.TypeAdapter(timedelta).validate_python(value)
    except pydantic.ValidationError:
        raise _expected(where, "a duration such as 2m or 1h30m", value) from None
    if parsed < timedelta(0):
        raise _expected(where, "a duration of zero or more, such as 2m or 1h30m", value)
    return parsed


def _sequence(
    value: Any,
    inner: Any,
    item: dataclasses.Field[Any],
    *,
    where: str,
    converters: Mapping[Any, Converter] | None = None,
) -> tuple[Any]:
    if not isinstance(value, list):
        raise _expected(where, "a list", value)
    return tuple(
        _value(element, inner, item, where=f"{where}[{index}]", converters=converters)
        for index, element in enumerate(value)
    )


def _pydantic(value: Any, hint: Any, *, where: str) -> Any:
    """A setting of a type this module does not know itself, validated by pydantic, whose error
    is reworded: the key path and what was expected, never pydantic's sentence."""
    try:
        return pydantic.TypeAdapter(hint).validate_python(value)
    except pydantic.ValidationError as error:
        first = error.errors()[0]
        path = "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
        )
        expected = getattr(hint, "__name__", None) or str(hint).replace("typing.", "")
        raise _expected(f"{where}{path}", f"a value of type {expected}", value) from None
