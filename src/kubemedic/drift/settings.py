"""The configuration file's ``drift:`` section: what ``kubemedic drift`` ignores and whom it
counts as a person.

    drift:
      ignoreDifferences:              # Argo CD's spec.ignoreDifferences, per kind or global
        - group: apps                 # "" is the core group; omitted or "*": any
          kind: Deployment
          name: web                   # optional
          namespace: shop             # optional
          jsonPointers: [/spec/replicas]
          jqPathExpressions: ['.spec.template.spec.containers[] | select(.name == "istio-proxy")']
          managedFieldsManagers: [kube-controller-manager]
      imperativeManagers: [my-deploy-script]   # added to kubectl-edit, kubectl-patch ...
      gitopsManagers: [my-applier]             # added to argocd-controller, kustomize-controller
      ignoreAggregatedRoles: true

Every key is checked when the file is read (:func:`kubemedic.config.read_section`); a jq path
outside the supported subset, or a JSON pointer that does not start with ``/``, is an error
naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from kubemedic.config import ConfigError, Settings, read_section
from kubemedic.drift.jqpaths import JqPathError, locations
from kubemedic.drift.rules import DriftRules, IgnoreRule, ManagerClasses

__all__ = ["DriftConfig", "defaults_text", "load", "read"]


@dataclass(frozen=True, slots=True)
class DriftConfig:
    ignore_differences: tuple[IgnoreRule, ...] = ()
    imperative_managers: tuple[str, ...] = ()
    gitops_managers: tuple[str, ...] = ()
    ignore_aggregated_roles: bool = True


def load(settings: Settings) -> DriftRules:
    """The drift rules of a loaded configuration file (the defaults when it has none)."""
    if settings.drift is None:
        return DriftRules()
    return read(settings.drift, source=settings.source or "configuration")


def read(raw: Mapping[str, Any], *, source: str) -> DriftRules:
    """Validate a ``drift:`` mapping; ``ConfigError`` naming ``source`` and the key path."""
    where = f"{source}: drift"
    loaded: DriftConfig = read_section(raw, DriftConfig, where=where)
    for index, rule in enumerate(loaded.ignore_differences):
        at = f"{where}.ignoreDifferences[{index}]"
        for n, pointer in enumerate(rule.json_pointers):
            if not pointer.startswith("/"):
                raise ConfigError(
                    f"{at}.jsonPointers[{n}]: expected a JSON pointer such as /spec/replicas"
                )
        for n, expression in enumerate(rule.jq_path_expressions):
            try:
                locations(expression, {})
            except JqPathError as error:
                raise ConfigError(f"{at}.jqPathExpressions[{n}]: {error}") from None
    base = ManagerClasses()
    managers = replace(
        base,
        imperative=base.imperative | frozenset(loaded.imperative_managers),
        gitops=base.gitops | frozenset(loaded.gitops_managers),
    )
    return DriftRules(
        ignore=loaded.ignore_differences,
        managers=managers,
        ignore_aggregated_roles=loaded.ignore_aggregated_roles,
    )


def defaults_text() -> str:
    """The defaults as a ``drift:`` section (for ``kubemedic config show-defaults``)."""
    d = DriftConfig()
    return f"""drift:
  ignoreDifferences: []         # Argo CD's spec.ignoreDifferences, per kind or global
  imperativeManagers: []        # added to kubectl-edit, kubectl-patch ...
  gitopsManagers: []            # added to argocd-controller, kustomize-controller ...
  ignoreAggregatedRoles: {str(d.ignore_aggregated_roles).lower()}   # aggregated ClusterRoles' rules
"""
