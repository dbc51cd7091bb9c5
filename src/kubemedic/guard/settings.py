"""The configuration file's ``guard:`` section: what ``kubemedic guard`` answers and to whom.

    guard:
      policy: warn                  # warn (default): allow with a warning; deny: refuse
      exemptUsers:                  # never judged (default: the Argo CD and Flux controllers'
        - system:serviceaccount:argocd:argocd-application-controller   # service accounts)
      exemptGroups: [platform-admins]
      imperativeManagers: [my-deploy-script]   # added to kubectl-edit, kubectl-patch ...
      kinds: [configmaps, services, ingresses.networking.k8s.io]   # UPDATEs also sent
      failOpen: true                # an internal error allows the request (default)

``exemptUsers`` replaces the default list when given (list the GitOps tools' accounts again if
they are still to be exempt). Every key is checked when the file is read
(:func:`kubemedic.config.read_section`): a misspelt key, a policy other than ``warn`` or
``deny``, or a kind that is not ``RESOURCE[.GROUP]`` is an error naming its key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubemedic.config import ConfigError, Settings, read_section
from kubemedic.guard.policy import GITOPS_SERVICE_ACCOUNTS, GuardSettings, Policy
from kubemedic.guard.render import parse_kind

__all__ = ["GuardConfig", "defaults_text", "load", "read"]


@dataclass(frozen=True, slots=True)
class GuardConfig:
    """The section as written; :attr:`guard` is what the policy is told."""

    policy: Policy = Policy.WARN
    exempt_users: tuple[str, ...] = GITOPS_SERVICE_ACCOUNTS
    exempt_groups: tuple[str, ...] = ()
    imperative_managers: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    fail_open: bool = True

    @property
    def guard(self) -> GuardSettings:
        return GuardSettings(
            policy=self.policy,
            exempt_users=self.exempt_users,
            exempt_groups=self.exempt_groups,
            imperative_managers=self.imperative_managers,
            fail_open=self.fail_open,
        )


def _policy(value: Any, where: str) -> Policy:
    try:
        return Policy(value)
    except ValueError:
        raise ConfigError(f"{where}: expected warn or deny, got {value!r}") from None


def load(settings: Settings) -> GuardConfig:
    """The ``guard:`` section of a loaded configuration file (the defaults when it has none)."""
    if settings.guard is None:
        return GuardConfig()
    return read(settings.guard, source=settings.source or "configuration")


def read(raw: Mapping[str, Any], *, source: str) -> GuardConfig:
    """Validate a ``guard:`` mapping; ``ConfigError`` naming ``source`` and the key path."""
    where = f"{source}: guard"
    loaded: GuardConfig = read_section(raw, GuardConfig, where=where, converters={Policy: _policy})
    for index, kind in enumerate(loaded.kinds):
        try:
            parse_kind(kind)
        except ValueError as error:
            raise ConfigError(f"{where}.kinds[{index}]: {error}") from None
    return loaded


def defaults_text() -> str:
    """The defaults as a ``guard:`` section (for ``kubemedic config show-defaults``)."""
    d = GuardConfig()
    users = "".join(f"    - {user}\n" for user in d.exempt_users)
    return f"""guard:
  policy: {d.policy.value}                  # warn: allow with a warning; deny: refuse
  exemptUsers:                  # never judged; a list given here replaces this one
{users}  exemptGroups: []
  imperativeManagers: []        # added to kubectl-edit, kubectl-patch ...
  kinds: []                     # more RESOURCE[.GROUP] whose UPDATEs are judged
  failOpen: {str(d.fail_open).lower()}                # an internal error allows the request
"""
