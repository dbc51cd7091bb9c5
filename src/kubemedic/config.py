"""The configuration file: thresholds and selectors for each check.

YAML (or JSON), for example::

    checks:
      node-memory-overcommit:
        limits_critical_percent: 130      # snake_case or camelCase, as you like
      critical-pod-underrequested:
        memoryFloor: 512Mi
      probe-restarts:
        windowSlack: 90s                  # durations as 90s, 2m, 1h30m (or ISO 8601: PT90S)
    disabled: [node-scale-burst]

Every check owns a frozen dataclass of settings with documented defaults (``kubemedic checks
--config-help`` would print them); this module validates a file against those dataclasses with
pydantic, so a misspelt key or a wrong type is an error naming the file, the check and the key,
never a silently ignored setting.
"""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import pydantic
import yaml

from kubemedic.checks import registry
from kubemedic.errors import InputError
from kubemedic.model.durations import DurationError, parse_duration

__all__ = ["ConfigError", "Settings", "load_settings"]


class ConfigError(InputError):
    """The configuration file is unreadable or invalid; ``str()`` names the file and key."""


@dataclass(frozen=True, slots=True)
class Settings:
    """Per-check configs (instances of each check's dataclass) and the checks turned off."""

    configs: dict[str, Any] = field(default_factory=dict)
    disabled: frozenset[str] = frozenset()


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower().replace("-", "_")


def load_settings(path: Path) -> Settings:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: byte {error.start}: not valid UTF-8") from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise ConfigError(f"{path}: {where}invalid YAML: {error.problem}") from None
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: invalid YAML: {error}") from None
    return settings_from(raw or {}, source=str(path))


def settings_from(raw: Any, *, source: str) -> Settings:
    """Validate an already-decoded configuration document."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{source}: expected a mapping with 'checks' and/or 'disabled'")
    unknown = set(raw) - {"checks", "disabled"}
    if unknown:
        raise ConfigError(f"{source}: unknown top-level key(s): {', '.join(sorted(unknown))}")
    disabled = raw.get("disabled") or []
    if not isinstance(disabled, list) or not all(isinstance(n, str) for n in disabled):
        raise ConfigError(f"{source}: 'disabled' must be a list of check names")
    for name in disabled:
        _known(name, source=source)
    sections = raw.get("checks") or {}
    if not isinstance(sections, Mapping):
        raise ConfigError(f"{source}: 'checks' must map check names to settings")
    configs = {
        str(name): _check_config(str(name), values, source=source)
        for name, values in sections.items()
    }
    return Settings(configs=configs, disabled=frozenset(disabled))


def _known(name: str, *, source: str) -> registry.CheckSpec[Any]:
    spec = registry.REGISTRY.get(name)
    if spec is None:
        known = ", ".join(sorted(registry.REGISTRY))
        raise ConfigError(f"{source}: unknown check {name!r}; known checks: {known}")
    return spec


def _check_config(name: str, values: Any, *, source: str) -> Any:
    spec = _known(name, source=source)
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: checks.{name} must be a mapping of settings")
    converted = _normalise(values, spec.config_type, where=f"{source}: checks.{name}")
    try:
        adapter: pydantic.TypeAdapter[Any] = pydantic.TypeAdapter(spec.config_type)
        return adapter.validate_python(converted)
    except pydantic.ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in issue['loc'])}: {issue['msg']}" for issue in error.errors()
        )
        raise ConfigError(f"{source}: checks.{name}: {problems}") from None


def _normalise(value: Any, target: Any, *, where: str) -> Any:
    """Rename camelCase keys to the dataclasses' snake_case fields, at every depth, and reject
    keys no dataclass has (pydantic would silently drop them from a stdlib dataclass)."""
    if dataclasses.is_dataclass(target) and isinstance(target, type):
        if not isinstance(value, Mapping):
            return value  # pydantic names the type error
        hints = typing.get_type_hints(target)
        fields = {f.name for f in dataclasses.fields(target)}
        converted: dict[str, Any] = {}
        for key, item in value.items():
            snake = _snake(str(key))
            if snake not in fields:
                allowed = ", ".join(sorted(fields))
                raise ConfigError(f"{where}.{key}: unknown setting; known: {allowed}")
            converted[snake] = _normalise(item, hints[snake], where=f"{where}.{key}")
        return converted
    if target is timedelta and isinstance(value, str):
        return _duration(value, where=where)
    if isinstance(value, list):
        for inner in typing.get_args(target):
            if dataclasses.is_dataclass(inner):
                return [
                    _normalise(item, inner, where=f"{where}[{index}]")
                    for index, item in enumerate(value)
                ]
    return value


_PYDANTIC_DURATION = re.compile(r"[+-]?P|.*:")
"""ISO 8601 (``PT2M``) and ``[-][D,]HH:MM:SS`` durations, which pydantic reads."""


def _duration(text: str, *, where: str) -> Any:
    """A duration setting: ``90s``, ``2m``, ``1h30m`` or a number of seconds, as everywhere in
    kubemedic; ISO 8601 and ``HH:MM:SS`` are left to pydantic."""
    try:
        return parse_duration(text, bare_seconds=True)
    except DurationError as error:
        if _PYDANTIC_DURATION.match(text.strip()):
            return text
        raise ConfigError(f"{where}: {error}") from None
