"""What the real API server refuses in Jobs, CronJobs, ReplicationControllers and PriorityClasses.

The cheap, common rules of ``pkg/apis/batch/validation``, ``pkg/apis/core/validation`` and
``pkg/apis/scheduling/validation``:

* a Job's pod template restarts ``OnFailure`` or ``Never``, its selector (generated from the uid
  unless ``manualSelector``) matches the template's labels, its counts are not negative, and its
  selector and completion mode do not change on update;
* a CronJob has a schedule, a known ``concurrencyPolicy`` and a valid job template;
* a ReplicationController has a selector (defaulted from the template's labels) that matches
  them, a template that restarts ``Always``, and no negative replica count;
* a PriorityClass is at most one billion unless it is a built-in ``system-`` class, preempts
  ``Never`` or ``PreemptLowerPriority``, and never changes its value.

Every pod template's spec also gets the pod spec rules
(:func:`~kubemedic.sim.apiserver.registry.validating_pods.pod_spec`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.sim.apiserver.registry import validating_pods
from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.errors import Cause

__all__ = ["RULES"]

_HIGHEST_USER_PRIORITY = 1_000_000_000
_SYSTEM_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def _not_negative(spec: Mapping[str, Any], path: str, *fields: str) -> list[Cause]:
    causes = []
    for name in fields:
        value = spec.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value < 0:
            causes.append(naming.invalid(f"{path}.{name}", value, naming.NEGATIVE))
    return causes


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    for key, value in naming.as_map(selector.get("matchLabels")).items():
        if labels.get(key) != value:
            return False
    for _, expression in naming.dicts(selector.get("matchExpressions")):
        key = str(expression.get("key"))
        values = naming.as_list(expression.get("values"))
        operator = expression.get("operator")
        if (
            (operator == "In" and labels.get(key) not in values)
            or (operator == "NotIn" and key in labels and labels.get(key) in values)
            or (operator == "Exists" and key not in labels)
            or (operator == "DoesNotExist" and key in labels)
        ):
            return False
    return True


def _template_labels(template: Mapping[str, Any]) -> Mapping[str, Any]:
    return naming.as_map(naming.as_map(template.get("metadata")).get("labels"))


def _mismatch(template: Mapping[str, Any], path: str) -> Cause:
    meta = naming.as_map(template.get("metadata"))
    shown = naming.go_map(_template_labels(template) if "labels" in meta else None)
    return naming.invalid(
        f"{path}.template.metadata.labels",
        None,
        "`selector` does not match template `labels`",
        shown=shown,
    )


def _job_spec(spec: Mapping[str, Any], path: str, *, selector_required: bool) -> list[Cause]:
    causes = _not_negative(
        spec, path, "parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
        "ttlSecondsAfterFinished",
    )  # fmt: skip
    template = naming.as_map(spec.get("template"))
    selector = spec.get("selector")
    if isinstance(selector, Mapping):
        if not _selects(selector, _template_labels(template)):
            causes.append(_mismatch(template, path))
    elif selector_required:
        causes.append(naming.required(f"{path}.selector"))
    causes += naming.labels(_template_labels(template), f"{path}.template.metadata.labels")
    pod_spec = naming.as_map(template.get("spec"))
    causes += validating_pods.pod_spec(pod_spec, f"{path}.template.spec")
    policy = pod_spec.get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        causes.append(
            naming.unsupported(
                f"{path}.template.spec.restartPolicy", policy, ("OnFailure", "Never")
            )
        )
    mode = spec.get("completionMode")
    if mode is not None and mode not in ("NonIndexed", "Indexed"):
        causes.append(naming.unsupported(f"{path}.completionMode", mode, ("NonIndexed", "Indexed")))
    return causes


def _job(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes = _job_spec(spec, "spec", selector_required=True)
    if old is not None:
        old_spec = naming.as_map(old.get("spec"))
        for name in ("selector", "completionMode"):
            if spec.get(name) != old_spec.get(name):
                shown = (
                    naming.go_selector(naming.as_map(spec.get(name)))
                    if name == "selector"
                    else None
                )
                causes.append(naming.immutable(f"spec.{name}", spec.get(name), shown=shown))
    return causes


def _cronjob(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes: list[Cause] = []
    if not spec.get("schedule"):
        causes.append(naming.required("spec.schedule"))
    causes += naming.choice(spec, "concurrencyPolicy", "spec", ("Allow", "Forbid", "Replace"))
    causes += _not_negative(
        spec, "spec", "startingDeadlineSeconds", "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    )  # fmt: skip
    job_spec = naming.as_map(naming.as_map(spec.get("jobTemplate")).get("spec"))
    causes += _job_spec(job_spec, "spec.jobTemplate.spec", selector_required=False)
    return causes


def _replication_controller(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    spec = naming.as_map(obj.get("spec"))
    causes = _not_negative(spec, "spec", "replicas", "minReadySeconds")
    selector = naming.as_map(spec.get("selector"))
    causes += naming.labels(selector, "spec.selector")
    if not selector:
        causes.append(naming.required("spec.selector"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        causes.append(naming.required("spec.template"))
        return causes
    labels = _template_labels(template)
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        causes.append(_mismatch(template, "spec"))
    causes += naming.labels(labels, "spec.template.metadata.labels")
    pod_spec = naming.as_map(template.get("spec"))
    causes += validating_pods.pod_spec(pod_spec, "spec.template.spec")
    if pod_spec.get("restartPolicy", "Always") != "Always":
        causes.append(
            naming.unsupported(
                "spec.template.spec.restartPolicy", pod_spec["restartPolicy"], ("Always",)
            )
        )
    return causes


def _priority_class(obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> list[Cause]:
    name = str(naming.as_map(obj.get("metadata")).get("name") or "")
    value = obj.get("value")
    causes: list[Cause] = []
    if name.startswith("system-"):
        if _SYSTEM_CLASSES.get(name) != value:
            causes.append(
                naming.forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use only",
                )
            )
    elif isinstance(value, int) and value > _HIGHEST_USER_PRIORITY:
        causes.append(
            naming.forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {_HIGHEST_USER_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy not in ("Never", "PreemptLowerPriority"):
        causes.append(
            naming.unsupported("preemptionPolicy", policy, ("Never", "PreemptLowerPriority"))
        )
    if old is not None and old.get("value") != value:
        causes.append(naming.forbidden("value", "may not be changed in an update."))
    return causes


RULES: dict[tuple[str, str], naming.Rule] = {
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _cronjob,
    ("", "ReplicationController"): _replication_controller,
    ("scheduling.k8s.io", "PriorityClass"): _priority_class,
}
