"""What the real API server refuses in a ``ValidatingWebhookConfiguration``.

``pkg/apis/admissionregistration/validation`` for ``admissionregistration.k8s.io/v1``, run on
the defaulted object (so ``failurePolicy``, ``matchPolicy``, ``timeoutSeconds`` and rule scopes
are present): each webhook's ``name`` is a fully qualified name of at least three segments and
unique; ``clientConfig`` has exactly one of ``url`` (``https`` only) and ``service``;
``sideEffects`` is ``None`` or ``NoneOnDryRun``; ``admissionReviewVersions`` names ``v1`` or
``v1beta1``; ``timeoutSeconds`` is between 1 and 30; ``failurePolicy``, ``matchPolicy``, rule
operations and scopes are among their enumerations.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.errors import Cause

__all__ = ["RULES"]

_OPERATIONS = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES = ("*", "Cluster", "Namespaced")
_REVIEW_VERSIONS = ("v1", "v1beta1")


def _client_config(config: Mapping[str, Any], path: str) -> list[Cause]:
    url, service = config.get("url"), config.get("service")
    if bool(url) == bool(service):
        return [naming.required(path, "exactly one of url or service is required")]
    if url and urlsplit(str(url)).scheme != "https":
        return [naming.invalid(f"{path}.url", url, "'https' is the only allowed URL scheme")]
    return []


def _rule(rule: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    for key in ("operations", "apiGroups", "apiVersions", "resources"):
        if not naming.as_list(rule.get(key)):
            causes.append(naming.required(f"{path}.{key}"))
    for j, operation in enumerate(naming.as_list(rule.get("operations"))):
        if operation not in _OPERATIONS:
            causes.append(naming.unsupported(f"{path}.operations[{j}]", operation, _OPERATIONS))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        causes.append(naming.unsupported(f"{path}.scope", scope, _SCOPES))
    return causes


def _webhook(hook: Mapping[str, Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    name = str(hook.get("name") or "")
    if not name:
        causes.append(naming.required(f"{path}.name"))
    elif name.count(".") < 2:
        causes.append(
            naming.invalid(
                f"{path}.name", name, "should be a domain with at least three segments separated "
                "by dots",
            )
        )  # fmt: skip
    causes.extend(_client_config(naming.as_map(hook.get("clientConfig")), f"{path}.clientConfig"))
    for i, rule in naming.dicts(hook.get("rules")):
        causes.extend(_rule(rule, f"{path}.rules[{i}]"))
    effects = hook.get("sideEffects")
    if not effects:
        causes.append(
            naming.required(f"{path}.sideEffects", "must specify one of None, NoneOnDryRun")
        )
    elif effects not in ("None", "NoneOnDryRun"):
        causes.append(naming.unsupported(f"{path}.sideEffects", effects, ("None", "NoneOnDryRun")))
    versions = naming.as_list(hook.get("admissionReviewVersions"))
    if not any(v in _REVIEW_VERSIONS for v in versions):
        causes.append(
            naming.required(
                f"{path}.admissionReviewVersions", "must specify one of v1, v1beta1"
            )
        )  # fmt: skip
    for key, valid in (
        ("failurePolicy", ("Fail", "Ignore")),
        ("matchPolicy", ("Equivalent", "Exact")),
    ):
        value = hook.get(key)
        if value is not None and value not in valid:
            causes.append(naming.unsupported(f"{path}.{key}", value, valid))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        causes.append(
            naming.invalid(
                f"{path}.timeoutSeconds", timeout,
                "the timeout value must be between 1 and 30 seconds",
            )
        )  # fmt: skip
    return causes


def _configuration(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, hook in naming.dicts(obj.get("webhooks")):
        causes.extend(_webhook(hook, f"webhooks[{i}]"))
        name = str(hook.get("name") or "")
        if name and name in seen:
            causes.append(naming.duplicate(f"webhooks[{i}].name", name))
        seen.add(name)
    return causes


RULES: dict[tuple[str, str], naming.Rule] = {
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"): _configuration,
}
