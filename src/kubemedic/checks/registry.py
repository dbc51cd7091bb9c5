"""The list of checks and how they run.

A check is a pure function ``(view, config) -> list[Finding]``: it reads the ``ClusterView`` and
its own frozen config dataclass and returns findings. It does no I/O and keeps no state between
calls, so the same view always gives the same findings (the scan is reproducible and the daemon
can run checks on every change).

Each check module registers itself with ``@check(name, config_type)``; ``run_checks`` runs them
all (or a chosen subset), isolating failures: a check that raises on odd input is reported as a
``kubemedic-check-error`` finding instead of hiding every other check's results.
"""

from __future__ import annotations

import dataclasses
import inspect
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubemedic.checks import settings
from kubemedic.checks.findings import Finding, Severity
from kubemedic.model.objects import ObjectRef
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity
from kubemedic.model.view import ClusterView

__all__ = ["REGISTRY", "CheckSpec", "check", "config_quantity", "run_checks"]

C = TypeVar("C")
CheckFn = Callable[[ClusterView, C], list[Finding]]


@dataclass(frozen=True, slots=True)
class CheckSpec(Generic[C]):
    name: str
    function: Callable[[ClusterView, C], list[Finding]]
    config_type: type[C]
    summary: str

    def run(self, view: ClusterView, config: Any | None = None) -> list[Finding]:
        chosen = config if config is not None else self.config_type()
        return self.function(view, chosen)


REGISTRY: dict[str, CheckSpec[Any]] = {}


def check(name: str, config_type: type[C]) -> Callable[[CheckFn[C]], CheckFn[C]]:
    """Register a check function under ``name`` with its config dataclass."""

    def register(function: CheckFn[C]) -> CheckFn[C]:
        if name in REGISTRY:
            raise ValueError(f"check {name!r} registered twice")
        doc = (function.__doc__ or "").strip().splitlines()
        REGISTRY[name] = CheckSpec(
            name=name, function=function, config_type=config_type, summary=doc[0] if doc else ""
        )
        return function

    return register


def config_quantity(text: str, *, check: str, name: str) -> Quantity:
    """Parse a quantity from a check's config; an invalid one raises ``QuantityError`` naming the
    check and the setting (``run_checks`` reports it as an ``invalid-input`` finding)."""
    return parse_quantity(text, where=f"config of check {check}: {name}")


def explain(spec: CheckSpec[Any]) -> str:
    """A check's documentation (its module docstring) and its settings with their defaults, as
    ``kubemedic checks NAME`` prints them: written as in the configuration file
    (``window_slack = 2m``), nested settings dotted, each number with the range it takes."""
    module = sys.modules.get(spec.function.__module__)
    doc = inspect.cleandoc(module.__doc__ or "") if module is not None else ""
    lines = [doc or spec.summary, "", f"Settings (config file: checks.{spec.name}):"]
    lines.extend(_setting_lines(spec.config_type, prefix=""))
    return "\n".join(lines)


def _setting_lines(config_type: type, *, prefix: str) -> list[str]:
    lines: list[str] = []
    hints = typing.get_type_hints(config_type)
    for item in dataclasses.fields(config_type):
        name = prefix + item.name
        if item.default is not dataclasses.MISSING:
            default: Any = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        else:
            lines.append(f"  {name} = (required)")
            continue
        if dataclasses.is_dataclass(default) and not isinstance(default, type):
            lines.extend(_setting_lines(type(default), prefix=f"{name}."))
            continue
        line = f"  {name} = {settings.shown(default)}"
        whole = _number_type(hints[item.name])
        if whole is not None:
            line += f"  ({settings.bounds_of(item, whole=whole).expected()})"
        lines.append(line)
    return lines


def _number_type(hint: Any) -> bool | None:
    """True for an int setting, False for a float one (optional or not), None otherwise."""
    members = [arg for arg in typing.get_args(hint) if arg is not type(None)] or [hint]
    if members == [int]:
        return True
    if members == [float]:
        return False
    return None


def run_checks(
    view: ClusterView,
    *,
    names: Iterable[str] | None = None,
    configs: Mapping[str, Any] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Finding]:
    """Run the chosen checks (all by default) and return their findings, most severe first.

    A ``QuantityError`` (an invalid quantity in some object) is not a crash of the check but bad
    input: it becomes a warning finding naming the object and field, and the check's other
    findings are lost only for that check. ``progress`` is called with each check's name as it
    starts.
    """
    chosen = list(REGISTRY) if names is None else list(names)
    unknown = [name for name in chosen if name not in REGISTRY]
    if unknown:
        raise KeyError(f"unknown check(s): {', '.join(unknown)}; known: {', '.join(REGISTRY)}")
    findings: list[Finding] = []
    for name in chosen:
        spec = REGISTRY[name]
        if progress is not None:
            progress(name)
        config = (configs or {}).get(name)
        try:
            findings.extend(spec.run(view, config))
        except QuantityError as error:
            findings.append(_input_error(view, name, str(error)))
    findings.sort(key=lambda finding: finding.sort_key)
    return findings


def _input_error(view: ClusterView, name: str, message: str) -> Finding:
    return Finding(
        check="invalid-input",
        severity=Severity.WARNING,
        object=ObjectRef(kind="Check", name=name, api_version="kubemedic.io/v1"),
        message=f"check {name} could not run: {message}",
        cause=f"invalid-input:{name}",
        first_seen=view.now,
        last_seen=view.now,
        evidence={"check": name, "error": message},
    )
