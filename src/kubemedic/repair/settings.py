"""The configuration file's ``repair:`` section, read and checked before anything runs.

Keys are camelCase (snake_case is accepted too, never both for one setting); an unknown key is
an error naming it and the nearest known one; each value is checked by its field's type and
range (:func:`kubemedic.config.read_section`). Besides the types every setting shares, this
module reads:

* a label selector (``pools[].selector``): ``"node.kubernetes.io/pool=workers"`` or a
  ``{matchLabels, matchExpressions}`` object;
* a budget (``maxUnhealthy``): a count (``2``), a percentage (``"40%"``), or both as
  ``{count: 2, percent: 40}`` (the larger wins);
* condition statuses: ``True``, ``False`` or ``Unknown``.

It also checks what only makes sense together: the ``exec`` provider needs ``exec.command``, the
``openstack`` provider ``openstack.cloud``; a provider name must be built in or installed (entry
point group ``kubemedic.repair.providers``); pool names are unique.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from importlib import metadata
from typing import Any

from kubemedic.config import ConfigError, Settings, read_section
from kubemedic.model.durations import short_duration as _d
from kubemedic.model.selectors import LabelSelector, SelectorError
from kubemedic.repair.policy.settings import PROVIDERS, Budget, RepairSettings
from kubemedic.repair.providers.base import ENTRY_POINTS

__all__ = ["defaults_text", "load", "read"]

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_STATUSES = ("True", "False", "Unknown")


def load(settings: Settings) -> RepairSettings:
    """The repair settings of a loaded configuration file (the defaults when it has none)."""
    if settings.repair is None:
        return RepairSettings()
    return read(settings.repair, source=settings.source or "configuration")


def read(raw: Mapping[str, Any], *, source: str) -> RepairSettings:
    """Validate a ``repair:`` mapping; ``ConfigError`` naming ``source`` and the key path."""
    where = f"{source}: repair"
    loaded: RepairSettings = read_section(
        _statuses_as_text(raw),
        RepairSettings,
        where=where,
        converters={LabelSelector: _selector, Budget: _budget},
    )
    known = {*PROVIDERS, *(e.name for e in metadata.entry_points(group=ENTRY_POINTS))}
    if loaded.provider not in known:
        raise ConfigError(
            f"{where}.provider: unknown provider {loaded.provider!r}; known: "
            f"{', '.join(sorted(known))}"
        )
    if loaded.provider == "exec" and not loaded.exec.command:
        raise ConfigError(f"{where}.exec.command: the exec provider needs a command (a list)")
    if loaded.provider == "openstack" and not loaded.openstack.cloud:
        raise ConfigError(f"{where}.openstack.cloud: the openstack provider needs a cloud name")
    rules = list(enumerate(loaded.conditions))
    for pool in loaded.pools:
        rules += list(enumerate(pool.conditions or ()))
    for index, rule in rules:
        bad = [s for s in rule.statuses if s not in _STATUSES]
        if bad or not rule.statuses:
            raise ConfigError(
                f"{where}.conditions[{index}].statuses: expected True, False or Unknown, "
                f"got {bad[0] if bad else 'none'}"
            )
        if not rule.type:
            raise ConfigError(f"{where}.conditions[{index}].type: a condition type is needed")
    names = [pool.name for pool in loaded.pools]
    for name in names:
        if names.count(name) > 1 or not name:
            raise ConfigError(f"{where}.pools: pool names must be given and unique ({name!r})")
    return replace(loaded)


def _statuses_as_text(raw: Mapping[str, Any]) -> Mapping[str, Any]:
    """YAML reads ``statuses: [False, Unknown]`` as a boolean and a string: a condition status
    ``True``/``False`` written bare is meant as the status, so it is taken as its text."""

    def rules(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        fixed = []
        for rule in value:
            if isinstance(rule, Mapping) and isinstance(rule.get("statuses"), list):
                statuses = [str(s) if isinstance(s, bool) else s for s in rule["statuses"]]
                fixed.append({**rule, "statuses": statuses})
            else:
                fixed.append(rule)
        return fixed

    out = dict(raw)
    if "conditions" in out:
        out["conditions"] = rules(out["conditions"])
    if isinstance(out.get("pools"), list):
        out["pools"] = [
            {**pool, "conditions": rules(pool["conditions"])}
            if isinstance(pool, Mapping) and "conditions" in pool
            else pool
            for pool in out["pools"]
        ]
    return out


def _selector(value: Any, where: str) -> LabelSelector:
    try:
        if isinstance(value, str):
            return LabelSelector.parse(value)
        if isinstance(value, Mapping):
            return LabelSelector.from_object(value)
    except SelectorError as error:
        raise ConfigError(f"{where}: {error}") from None
    raise ConfigError(
        f"{where}: expected a label selector such as 'node.kubernetes.io/pool=workers' or "
        f"{{matchLabels: ...}}, got {value!r:.200}"
    )


def _budget(value: Any, where: str) -> Budget:
    expected = "a count (2), a percentage ('40%') or {count: 2, percent: 40}"
    if isinstance(value, bool):
        raise ConfigError(f"{where}: expected {expected}, got {value!r}")
    if isinstance(value, int) and value >= 0:
        return Budget(count=value)
    if isinstance(value, str) and (match := _PERCENT.match(value)):
        share = float(match.group(1))
        if share <= 100:
            return Budget(percent=share)
    if isinstance(value, Mapping) and value and set(value) <= {"count", "percent"}:
        count, percent = value.get("count"), value.get("percent")
        count_ok = count is None or (isinstance(count, int) and not isinstance(count, bool))
        percent_ok = percent is None or (
            isinstance(percent, int | float) and not isinstance(percent, bool)
        )
        if count_ok and percent_ok and (count or 0) >= 0 and 0 <= (percent or 0) <= 100:
            part = float(percent) if percent is not None else None
            return Budget(count=count, percent=part)
    raise ConfigError(f"{where}: expected {expected}, got {value!r:.200}")


def defaults_text() -> str:
    """The defaults as a ``repair:`` section (for ``kubemedic config show-defaults``)."""
    d = RepairSettings()
    conditions = "\n".join(
        f"    - {{type: {r.type}, statuses: [{', '.join(r.statuses)}], after: {_d(r.after)}}}"
        for r in d.conditions
    )
    return f"""repair:
  dryRun: {str(d.dry_run).lower()}            # decide, record and report; change nothing
  provider: {d.provider}           # openstack | clusterapi | exec | agent (or an installed one)
  openstack: {{cloud: "", cloudsFile: ""}}
  exec: {{command: [], timeout: {_d(d.exec.timeout)}}}
  maxInFlight: {d.max_in_flight}             # repairs at once per pool
  # no repair starts while more of a pool than this is unhealthy (the larger of the two)
  maxUnhealthy: {{count: {d.max_unhealthy.count}, percent: {d.max_unhealthy.percent:g}}}
  startupTimeout: {_d(d.startup_timeout)}
  agentHeartbeat: {_d(d.agent_heartbeat)}
  paused: false
  conditions:
{conditions}
  # [{{name, selector, maxInFlight, maxUnhealthy, conditions, startupTimeout}}]
  pools: []
  ladder:
    steps: [{", ".join(d.ladder.steps)}]
    restartTimeout: {_d(d.ladder.restart_timeout)}
    rebootTimeout: {_d(d.ladder.reboot_timeout)}
    replaceTimeout: {_d(d.ladder.replace_timeout)}
    stable: {_d(d.ladder.stable)}
  drain:
    timeout: {_d(d.drain.timeout)}
    deleteAfterTimeout: []   # pod classes (daemonset, standalone, best-effort) or selectors
    reportEvery: {_d(d.drain.report_every)}
  ledger: {{maxRepairs: {d.ledger.max_repairs}, window: {_d(d.ledger.window)}}}
  flapping: {{transitions: {d.flapping.transitions}, window: {_d(d.flapping.window)}}}
  correlation:
    window: {_d(d.correlation.window)}
    nodes: {d.correlation.nodes}
    zonePercent: {d.correlation.zone_percent:g}
    zoneMinNodes: {d.correlation.zone_min_nodes}
"""
