"""What counts as drift: who is a person, who is a controller, and what to ignore.

**Manager classes.** Every field of a live object was written by a field manager
(``metadata.managedFields``). A field that exists only live is drift when a *person* wrote it
(class ``imperative``: kubectl's per-command managers such as ``kubectl-edit``,
``kubectl-patch``, ``kubectl-client-side-apply``, ``kubectl-scale``; ``kubectl`` itself, which is
``kubectl apply --server-side`` or an old kubectl; browsers and generic HTTP tools such as
``Mozilla`` or ``curl``), or when the GitOps tool *applied* it (class ``gitops`` with operation
``Apply``: its applied set was Git's content, so a field it still owns and Git no longer has is
waiting to be pruned). Fields written by controllers, webhooks and the GitOps tool's
client-side updates (class ``controller``), and fields nobody owns (server defaults, allocated
values such as ``clusterIP``), are not drift. A manager in none of the lists is a
``controller`` unless ``unknown`` says otherwise. Prefixes end in ``-`` or ``/``.

**Ignore rules** mirror Argo CD's ``ignoreDifferences``: per group, kind, name and namespace
(``None`` or ``"*"`` matches all; no kind means every kind, a global rule), ``json_pointers``
(RFC 6901), ``jq_path_expressions`` (the subset of jq documented in :mod:`.jqpaths`) and
``managed_fields_managers`` (a drift whose every owner is one of these managers is ignored).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from kubemedic.checks.outofband import OutOfBandEditConfig

__all__ = ["DriftRules", "IgnoreRule", "ManagerClass", "ManagerClasses"]


class ManagerClass(enum.Enum):
    IMPERATIVE = "imperative"
    GITOPS = "gitops"
    CONTROLLER = "controller"


_IMPERATIVE = (
    *OutOfBandEditConfig().imperative_managers,
    "kubectl",
    "kubectl-create",
    "kubectl-run",
    "kubectl-expose",
    "kubectl-autoscale",
    "Mozilla",
    "curl",
    "python-requests",
    "k9s",
    "kubernetes-dashboard",
)
_GITOPS = (
    *OutOfBandEditConfig().argocd_managers,
    *OutOfBandEditConfig().flux_managers,
    "helm",
)


@dataclass(frozen=True, slots=True)
class ManagerClasses:
    """Which field managers are people, which the GitOps tool; the rest are controllers."""

    imperative: frozenset[str] = frozenset(_IMPERATIVE)
    imperative_prefixes: tuple[str, ...] = ("kubectl-", "Mozilla/", "curl/")
    gitops: frozenset[str] = frozenset(_GITOPS)
    unknown: ManagerClass = ManagerClass.CONTROLLER

    def classify(self, manager: str) -> ManagerClass:
        if manager in self.gitops:
            return ManagerClass.GITOPS
        if manager in self.imperative or manager.startswith(self.imperative_prefixes):
            return ManagerClass.IMPERATIVE
        return self.unknown


def _matches(wanted: str | None, actual: str) -> bool:
    return wanted is None or wanted in ("*", actual)


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One ``ignoreDifferences`` entry; ``group`` is the API group (``""`` for the core group)."""

    group: str | None = None
    kind: str | None = None
    name: str | None = None
    namespace: str | None = None
    json_pointers: tuple[str, ...] = ()
    jq_path_expressions: tuple[str, ...] = ()
    managed_fields_managers: tuple[str, ...] = ()

    def applies_to(self, *, group: str, kind: str, name: str, namespace: str | None) -> bool:
        return (
            _matches(self.group, group)
            and _matches(self.kind, kind)
            and _matches(self.name, name)
            and _matches(self.namespace, namespace or "")
        )


@dataclass(frozen=True, slots=True)
class DriftRules:
    """Everything :func:`kubemedic.drift.diff` is told besides the two objects."""

    ignore: tuple[IgnoreRule, ...] = ()
    managers: ManagerClasses = field(default_factory=ManagerClasses)
    ignore_aggregated_roles: bool = True
    """Argo CD's ``ignoreAggregatedRoles``: the ``rules`` of an aggregated ClusterRole are the
    aggregation controller's; when False they are compared with Git like any field."""

    def for_object(
        self, *, group: str, kind: str, name: str, namespace: str | None
    ) -> Iterable[IgnoreRule]:
        return (
            rule
            for rule in self.ignore
            if rule.applies_to(group=group, kind=kind, name=name, namespace=namespace)
        )
