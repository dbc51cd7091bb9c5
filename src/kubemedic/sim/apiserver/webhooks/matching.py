"""Which validating webhooks a request is sent to, as ``k8s.io/apiserver``'s webhook matchers
decide (``pkg/admission/plugin/webhook/predicates``).

* **Rules** (``rules``): a request matches a rule when its operation is listed (or ``*``), its
  group and version are listed (or ``*``), and its resource is: ``pods`` matches only the
  resource itself, ``pods/status`` that subresource, ``pods/*`` pods and every subresource of
  pods (the matcher's ``sub == "*" || sub == opSub``), ``*`` every resource but no subresource,
  ``*/*`` everything, ``*/status`` every status. ``scope`` ``Namespaced`` matches namespaced
  requests, ``Cluster`` cluster-scoped ones (a Namespace object is cluster-scoped), ``*`` (the
  default) both.
* **namespaceSelector** applies to namespaced requests only (the Namespace object itself is
  matched by its own labels, or its old labels on delete); cluster-scoped requests always match.
* **objectSelector** matches when the new object's labels or the old object's labels match; an
  empty selector matches everything.
* **matchPolicy**: the emulator serves one version of each resource, so ``Equivalent`` (the
  default) and ``Exact`` decide alike.

Requests on the admission configuration objects themselves are never sent to webhooks
(:data:`EXEMPT_RESOURCES`), so a broken webhook cannot lock its own configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kubemedic.model.selectors import LabelSelector, SelectorError

__all__ = ["EXEMPT_RESOURCES", "matches"]

Obj = dict[str, Any]

#: ``IsExemptAdmissionConfigurationResource``: (group, resource) never sent to webhooks.
EXEMPT_RESOURCES = frozenset(
    ("admissionregistration.k8s.io", r)
    for r in (
        "validatingwebhookconfigurations",
        "mutatingwebhookconfigurations",
        "validatingadmissionpolicies",
        "validatingadmissionpolicybindings",
    )
)


def _listed(values: Sequence[Any] | None, wanted: str) -> bool:
    return any(str(v) in ("*", wanted) for v in values or ())


def _resource_listed(resources: Sequence[Any] | None, resource: str, subresource: str) -> bool:
    for entry in resources or ():
        name, _, sub = str(entry).partition("/")
        if name in ("*", resource) and sub in ("*", subresource):
            return True
    return False


def rule_matches(
    rule: Mapping[str, Any],
    *,
    operation: str,
    group: str,
    version: str,
    resource: str,
    subresource: str,
    namespace: str,
) -> bool:
    """One ``RuleWithOperations`` against a request (``rules.Matcher.Matches``)."""
    if not _listed(rule.get("operations"), operation):
        return False
    if not _listed(rule.get("apiGroups"), group) or not _listed(rule.get("apiVersions"), version):
        return False
    if not _resource_listed(rule.get("resources"), resource, subresource):
        return False
    scope = rule.get("scope") or "*"
    is_namespace = group == "" and resource == "namespaces"
    if scope == "Namespaced":
        return not is_namespace and namespace != ""
    if scope == "Cluster":
        return is_namespace or namespace == ""
    return True


def _selector_matches(selector: Any, labels: Mapping[str, str] | None) -> bool:
    if selector is None:
        return True  # defaulted to {}: everything
    try:
        return LabelSelector.from_object(selector).matches(labels)
    except SelectorError:
        return False


def _labels(obj: Obj | None) -> dict[str, str] | None:
    if obj is None:
        return None
    found = (obj.get("metadata") or {}).get("labels")
    return dict(found) if isinstance(found, dict) else {}


def matches(
    webhook: Mapping[str, Any],
    *,
    operation: str,
    group: str,
    version: str,
    resource: str,
    subresource: str,
    namespace: str,
    obj: Obj | None,
    old: Obj | None,
    namespace_labels: Callable[[str], Mapping[str, str] | None],
) -> bool:
    """Whether a request goes to ``webhook`` (one entry of ``webhooks``)."""
    if (group, resource) in EXEMPT_RESOURCES:
        return False
    if not any(
        rule_matches(
            rule, operation=operation, group=group, version=version, resource=resource,
            subresource=subresource, namespace=namespace,
        )
        for rule in webhook.get("rules") or ()
        if isinstance(rule, Mapping)
    ):  # fmt: skip
        return False
    selector = webhook.get("namespaceSelector")
    if group == "" and resource == "namespaces":
        own = _labels(obj if obj is not None else old)
        if not _selector_matches(selector, own):
            return False
    elif namespace and not _selector_matches(selector, namespace_labels(namespace)):
        return False
    object_selector = webhook.get("objectSelector")
    if object_selector is None:
        return True
    try:
        parsed = LabelSelector.from_object(object_selector)
    except SelectorError:
        return False
    if parsed.empty:
        return True
    return any(
        candidate is not None and parsed.matches(_labels(candidate)) for candidate in (obj, old)
    )
