"""The configuration file's ``breaker:`` section, read and checked before anything runs.

    breaker:
      actions: [alert, revert-out-of-band]   # also scale-to-fit, prune-failed
      dryRun: false
      windowSeconds: 2m                      # a duration (90s, 2m, 1h) or a number of seconds

Keys are camelCase (snake_case is accepted too, never both for one setting); an unknown key is an
error naming it and the nearest known one; each value is checked by its field's type and range
(:func:`kubemedic.config.read_section`); durations go through :mod:`kubemedic.model.durations`;
an action that is not one of the four is an error naming the key. ``kubemedic run --config`` runs
the breaker only when the file has a ``breaker:`` section.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from kubemedic.breaker.policy.settings import BreakerAction, BreakerSettings, BreakerSettingsError
from kubemedic.checks.settings import echo, shown
from kubemedic.config import ConfigError, Settings, read_section

__all__ = ["BreakerRun", "defaults_text", "load", "read"]

_D = BreakerSettings()


@dataclass(frozen=True, slots=True)
class BreakerRun:
    """The breaker inside ``kubemedic run``: its policy and how often a round runs (cluster
    seconds)."""

    settings: BreakerSettings = field(default_factory=BreakerSettings)
    interval_seconds: float = 5.0


@dataclass(frozen=True, slots=True)
class _Section:
    actions: tuple[BreakerAction, ...] = tuple(sorted(_D.actions))
    dry_run: bool = _D.dry_run
    window_seconds: timedelta = timedelta(seconds=_D.window_seconds)
    start_pods: int = _D.start_pods
    end_pods: int = _D.end_pods
    calm_seconds: timedelta = timedelta(seconds=_D.calm_seconds)
    revert_guard_seconds: timedelta = timedelta(seconds=_D.revert_guard_seconds)
    revert_pointers: tuple[str, ...] = _D.revert_pointers
    keep_failed: int = _D.keep_failed
    prune_batch: int = _D.prune_batch
    act_on_prediction: bool = _D.act_on_prediction
    extra_reasons: tuple[str, ...] = _D.extra_reasons
    interval_seconds: timedelta = timedelta(seconds=5)


def load(settings: Settings) -> BreakerRun | None:
    """The breaker of a loaded configuration file; None when it has no ``breaker:`` section."""
    if settings.breaker is None:
        return None
    return read(settings.breaker, source=settings.source or "configuration")


def read(raw: Mapping[str, Any], *, source: str) -> BreakerRun:
    """Validate a ``breaker:`` mapping; ``ConfigError`` naming ``source`` and the key path."""
    where = f"{source}: breaker"
    section: _Section = read_section(
        raw, _Section, where=where, converters={BreakerAction: _action}
    )
    for index, pointer in enumerate(section.revert_pointers):
        if not pointer.startswith("/"):
            raise ConfigError(
                f"{where}.revertPointers[{index}]: expected a JSON pointer such as "
                f"/spec/template/spec/nodeName, got {pointer!r:.200}"
            )
    if section.interval_seconds < timedelta(seconds=1):
        raise ConfigError(f"{where}.intervalSeconds: expected at least 1s")
    try:
        policy = BreakerSettings(
            actions=frozenset(section.actions),
            dry_run=section.dry_run,
            window_seconds=section.window_seconds.total_seconds(),
            start_pods=section.start_pods,
            end_pods=section.end_pods,
            calm_seconds=section.calm_seconds.total_seconds(),
            revert_guard_seconds=section.revert_guard_seconds.total_seconds(),
            revert_pointers=section.revert_pointers,
            keep_failed=section.keep_failed,
            prune_batch=section.prune_batch,
            act_on_prediction=section.act_on_prediction,
            extra_reasons=section.extra_reasons,
        )
    except BreakerSettingsError as error:
        raise ConfigError(f"{where}: {_camel_names(str(error))}") from None
    return BreakerRun(settings=policy, interval_seconds=section.interval_seconds.total_seconds())


_NAMES = {
    "start_pods": "startPods",
    "end_pods": "endPods",
    "window_seconds": "windowSeconds",
    "calm_seconds": "calmSeconds",
    "revert_guard_seconds": "revertGuardSeconds",
    "keep_failed": "keepFailed",
    "prune_batch": "pruneBatch",
}


def _camel_names(text: str) -> str:
    for snake, camel in _NAMES.items():
        text = text.replace(snake, camel)
    return text


def _action(value: Any, where: str) -> BreakerAction:
    try:
        return BreakerAction(value)
    except ValueError:
        known = ", ".join(a.value for a in BreakerAction)
        raise ConfigError(f"{where}: expected one of {known}, got {echo(value)}") from None


def defaults_text() -> str:
    """The defaults as a ``breaker:`` section (for ``kubemedic config show-defaults``)."""
    d = _Section()
    pointers = ", ".join(d.revert_pointers)
    return f"""breaker:
  # any of alert, revert-out-of-band, scale-to-fit, prune-failed
  actions: [{", ".join(a.value for a in d.actions)}]
  dryRun: {str(d.dry_run).lower()}             # decide and announce; change nothing
  windowSeconds: {shown(d.window_seconds)}         # the churn's sliding window
  startPods: {d.start_pods}             # a storm starts at this many rejected pods in the window
  endPods: {d.end_pods}               # ... and ends once at or below this for calmSeconds
  calmSeconds: {shown(d.calm_seconds)}
  revertGuardSeconds: {shown(d.revert_guard_seconds)}    # no second revert of an owner within it
  revertPointers: [{pointers}]
  keepFailed: {d.keep_failed}            # prune-failed keeps the newest this many Failed pods
  pruneBatch: {d.prune_batch}          # ... and deletes at most this many a round
  actOnPrediction: {str(d.act_on_prediction).lower()}
  extraReasons: []
  intervalSeconds: {shown(d.interval_seconds)}         # cluster time between rounds
"""
