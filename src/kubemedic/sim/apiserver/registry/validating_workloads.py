"""What the real API server refuses in workloads and disruption budgets.

Deployments, ReplicaSets, StatefulSets and DaemonSets (``pkg/apis/apps/validation``) need a
non-empty selector that matches their pod template's labels, a template whose pod spec is valid
(:func:`~kubemedic.sim.apiserver.registry.validating_pods.pod_spec`) with ``restartPolicy: Always``
and no ``activeDeadlineSeconds``, counts that are not negative, a progress deadline above
``minReadySeconds`` and a valid rollout strategy. On update the selector is
immutable, and a StatefulSet may change only ``replicas``, ``ordinals``, ``template``,
``updateStrategy``, ``persistentVolumeClaimRetentionPolicy`` and ``minReadySeconds``.
A PodDisruptionBudget sets ``minAvailable`` or ``maxUnavailable`` (an integer or a percentage),
never both.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from kubemedic.sim.apiserver.registry import validating_pods
from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.errors import Cause

__all__ = ["RULES"]


def _selector_problems(selector: Mapping[str, Any], path: str) -> list[Cause]:
    causes = naming.labels(selector.get("matchLabels"), f"{path}.matchLabels")
    for index, expression in naming.dicts(selector.get("matchExpressions")):
        where = f"{path}.matchExpressions[{index}]"
        operator, values = expression.get("operator"), naming.as_list(expression.get("values"))
        if operator in ("In", "NotIn") and not values:
            causes.append(
                naming.required(
                    f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append(
                naming.forbidden(
                    f"{where}.values",
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
        elif operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            causes.append(
                naming.invalid(f"{where}.operator", operator, "not a valid selector operator")
            )
        key = str(expression.get("key") or "")
        causes += naming.names(f"{where}.key", key, naming.qualified_name(key))
        for position, value in enumerate(values):
            causes += naming.names(
                f"{where}.values[{position}]", str(value), naming.label_value(str(value))
            )
    return causes


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """``LabelSelectorAsSelector(selector).Matches(labels)``."""
    for key, value in naming.as_map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for _, expression in naming.dicts(selector.get("matchExpressions")):
        label, values = (
            labels.get(str(expression.get("key"))),
            naming.as_list(expression.get("values")),
        )
        operator, present = expression.get("operator"), expression.get("key") in labels
        if (
            (operator == "In" and label not in values)
            or (operator == "NotIn" and present and label in values)
            or (operator == "Exists" and not present)
            or (operator == "DoesNotExist" and present)
        ):
            return False
    return True


def _workload(obj: Mapping[str, Any], old: Mapping[str, Any] | None, *, kind: str) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes: list[Cause] = []
    if kind == "StatefulSet":
        policy = spec.get("podManagementPolicy")
        if not policy:
            causes.append(naming.required("spec.podManagementPolicy"))
        elif policy not in ("OrderedReady", "Parallel"):
            causes.append(
                naming.invalid(
                    "spec.podManagementPolicy", policy, "must be 'OrderedReady' or 'Parallel'"
                )
            )
    for part in ("replicas", "minReadySeconds", "revisionHistoryLimit", "progressDeadlineSeconds"):
        value = spec.get(part)
        if isinstance(value, int) and value < 0:
            causes.append(naming.invalid(f"spec.{part}", value, naming.NEGATIVE))
    selector = spec.get("selector")
    template = naming.as_map(spec.get("template"))
    labels = naming.as_map(naming.as_map(template.get("metadata")).get("labels"))
    if not isinstance(selector, Mapping):
        causes.append(naming.required("spec.selector"))
        matching = False
    else:
        problems = _selector_problems(selector, "spec.selector")
        causes += problems
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            target = {"Deployment": "deployment", "ReplicaSet": "deployment"}.get(
                kind, kind.lower()
            )
            causes.append(
                naming.invalid(
                    "spec.selector",
                    None,
                    f"empty selector is invalid for {target}",
                    shown=naming.go_selector(selector),
                )
            )
        matching = bool(problems) or not (
            selector.get("matchLabels") or selector.get("matchExpressions")
        )
        matching = matching or _selects(selector, labels)
    if not matching:
        shown = naming.go_map(
            labels if "labels" in naming.as_map(template.get("metadata")) else None
        )
        causes.append(
            naming.invalid(
                "spec.template.metadata.labels",
                None,
                "`selector` does not match template `labels`",
                shown=shown,
            )
        )
    causes += naming.labels(labels, "spec.template.metadata.labels")
    template_spec = naming.as_map(template.get("spec"))
    causes += validating_pods.pod_spec(template_spec, "spec.template.spec")
    if template_spec.get("restartPolicy", "Always") != "Always":
        causes.append(
            naming.unsupported(
                "spec.template.spec.restartPolicy", template_spec["restartPolicy"], ("Always",)
            )
        )
    if template_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            naming.forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                f"activeDeadlineSeconds in {kind} is not Supported",
            )
        )
    if kind == "Deployment":
        causes += _deployment_strategy(naming.as_map(spec.get("strategy")))
        deadline = spec.get("progressDeadlineSeconds")
        if isinstance(deadline, int) and deadline <= int(spec.get("minReadySeconds") or 0):
            causes.append(
                naming.invalid(
                    "spec.progressDeadlineSeconds", deadline, "must be greater than minReadySeconds"
                )
            )
    if old is None:
        return causes
    old_spec = validating_pods.defaulted_spec(old, group="apps", kind=kind)
    if kind == "StatefulSet":
        mutable = (
            "replicas",
            "ordinals",
            "template",
            "updateStrategy",
            "persistentVolumeClaimRetentionPolicy",
            "minReadySeconds",
        )
        if {k: v for k, v in spec.items() if k not in mutable} != {
            k: v for k, v in old_spec.items() if k not in mutable
        }:
            causes.append(
                naming.forbidden(
                    "spec",
                    "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                    "'minReadySeconds' are forbidden",
                )
            )
    elif _normal_selector(spec.get("selector")) != _normal_selector(old_spec.get("selector")):
        causes.append(
            naming.immutable(
                "spec.selector", None, shown=naming.go_selector(naming.as_map(spec.get("selector")))
            )
        )
    return causes


def _normal_selector(selector: Any) -> tuple[Any, Any]:
    selector = naming.as_map(selector)
    return (
        dict(naming.as_map(selector.get("matchLabels"))),
        naming.as_list(selector.get("matchExpressions")),
    )


def _int_or_percent(value: Any, path: str) -> list[Cause]:
    if isinstance(value, str):
        if not naming.matches("[0-9]+%", value):
            detail = naming.regex_error(
                "a valid percent string must be a numeric string followed by an ending '%'",
                "[0-9]+%",
                "1%",
                "93%",
            )
            return [naming.invalid(path, None, detail, shown=value)]
        if int(value[:-1]) > 100:
            return [naming.invalid(path, None, "must not be greater than 100%", shown=value)]
        return []
    if isinstance(value, int) and value < 0:
        return [naming.invalid(path, value, naming.NEGATIVE)]
    return []


def _deployment_strategy(strategy: Mapping[str, Any]) -> list[Cause]:
    kind = strategy.get("type")
    rolling = strategy.get("rollingUpdate")
    if kind == "Recreate" and rolling is not None:
        return [
            naming.forbidden(
                "spec.strategy.rollingUpdate",
                "may not be specified when strategy `type` is 'Recreate'",
            )
        ]
    if kind == "RollingUpdate" and isinstance(rolling, Mapping):
        path = "spec.strategy.rollingUpdate"
        causes = _int_or_percent(rolling.get("maxUnavailable"), f"{path}.maxUnavailable")
        causes += _int_or_percent(rolling.get("maxSurge"), f"{path}.maxSurge")
        if (
            str(rolling.get("maxUnavailable")).rstrip("%")
            == "0"
            == str(rolling.get("maxSurge")).rstrip("%")
        ):
            causes.append(
                naming.invalid(
                    f"{path}.maxUnavailable",
                    None,
                    "may not be 0 when `maxSurge` is 0",
                    shown=str(rolling.get("maxUnavailable")),
                )
            )
        return causes
    if kind not in ("Recreate", "RollingUpdate"):
        return [naming.unsupported("spec.strategy.type", kind, ("Recreate", "RollingUpdate"))]
    return []


def _disruption_budget(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes: list[Cause] = []
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        selector = "nil" if spec.get("selector") is None else "0xc000b2f0c0"
        policy = "nil" if spec.get("unhealthyPodEvictionPolicy") is None else "0xc000c3a0e0"
        shown = (
            "policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000a1e0a0), "
            f"Selector:(*v1.LabelSelector)({selector}), "
            "MaxUnavailable:(*intstr.IntOrString)(0xc000a1e0c0), UnhealthyPodEvictionPolicy:"
            f"(*policy.UnhealthyPodEvictionPolicyType)({policy})}}"
        )
        causes.append(
            naming.invalid(
                "spec", None, "minAvailable and maxUnavailable cannot be both set", shown=shown
            )
        )
    if low is not None:
        causes += _int_or_percent(low, "spec.minAvailable")
    if high is not None:
        causes += _int_or_percent(high, "spec.maxUnavailable")
    if isinstance(spec.get("selector"), Mapping):
        causes += _selector_problems(spec["selector"], "spec.selector")
    eviction = spec.get("unhealthyPodEvictionPolicy")
    if eviction is not None and eviction not in ("AlwaysAllow", "IfHealthyBudget"):
        causes.append(
            naming.unsupported(
                "spec.unhealthyPodEvictionPolicy", eviction, ("AlwaysAllow", "IfHealthyBudget")
            )
        )
    return causes


RULES: dict[tuple[str, str], naming.Rule] = {
    ("policy", "PodDisruptionBudget"): _disruption_budget,
    **{
        ("apps", kind): functools.partial(_workload, kind=kind)
        for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")
    },
}
