"""What the real API server refuses when it stores an object: the registry's validation.

:func:`validate` runs after defaulting, with the registry's ``Validate`` and ``ValidateUpdate``
rules for the kinds the emulator serves, and returns ``StatusCause``\\ s worded exactly as
``k8s.io/apimachinery/pkg/util/validation/field`` words them
(:mod:`kubemedic.sim.machinery.naming`); the server answers them with a 422 ``Invalid``. Every kind
gets the ``ObjectMeta`` rules here: a valid name (a DNS subdomain, or a DNS label for Namespaces and
DNS-1035 label for Services), valid labels and annotations (at most 256 KiB), owner references,
finalizers that are qualified names (and, on built-in kinds, standard or domain-qualified ones), and
on update immutable name, namespace, uid and creation and deletion timestamps, no new finalizers
once deleting, and no decreasing generation. The kinds' own rules live in
:mod:`~kubemedic.sim.apiserver.registry.validating_pods`,
:mod:`~kubemedic.sim.apiserver.registry.validating_workloads`,
:mod:`~kubemedic.sim.apiserver.registry.validating_batch` and
:mod:`~kubemedic.sim.apiserver.registry.validating_kinds`.

Field validation while decoding (unknown fields, undecodable values) comes earlier, in
:mod:`kubemedic.sim.apiserver.registry.decoding`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubemedic.sim.apiserver.registry import (
    validating_admission,
    validating_batch,
    validating_kinds,
    validating_pods,
    validating_workloads,
)
from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.errors import Cause

__all__ = ["validate"]

_ANNOTATIONS_LIMIT = 256 * 1024


def validate(
    obj: Mapping[str, Any],
    *,
    old: Mapping[str, Any] | None,
    group: str,
    version: str,
    kind: str,
    namespaced: bool,
) -> list[Cause]:
    """The causes of the 422 the registry of ``kind`` answers for ``obj`` (empty when valid).

    ``old`` is the stored object on update. Expects the body already defaulted and carrying the
    server-set metadata (uid and creationTimestamp are copied from ``old`` before this runs, as
    the real store does).
    """
    meta = naming.as_map(obj.get("metadata"))
    custom = group not in _BUILT_IN_GROUPS
    if old is None:
        name_rule = _NAME_RULES.get((group, kind), naming.dns1123_subdomain)
        causes = _meta_create(meta, namespaced=namespaced, name_rule=name_rule, custom=custom)
    else:
        causes = _meta_update(meta, naming.as_map(old.get("metadata")), custom=custom)
    rule = _RULES.get((group, kind))
    if rule is not None:
        causes.extend(rule(obj, old))
    unique: dict[tuple[str, str], Cause] = {}
    for cause in causes:
        unique.setdefault((cause.field, cause.message), cause)
    return list(unique.values())


_BUILT_IN_GROUPS = frozenset(
    {
        "",
        "apps",
        "policy",
        "coordination.k8s.io",
        "events.k8s.io",
        "batch",
        "scheduling.k8s.io",
        "admissionregistration.k8s.io",
    }
)


def _mask_trailing_dash(name: str) -> str:
    return name[:-1] + "a" if len(name) > 1 and name.endswith("-") else name


def _meta_create(
    meta: Mapping[str, Any],
    *,
    namespaced: bool,
    name_rule: Callable[[str], list[str]],
    custom: bool,
) -> list[Cause]:
    causes: list[Cause] = []
    generate = str(meta.get("generateName") or "")
    if generate:
        causes += naming.names(
            "metadata.generateName", generate, name_rule(_mask_trailing_dash(generate))
        )
    name = str(meta.get("name") or "")
    if not name:
        causes.append(naming.required("metadata.name", "name or generateName is required"))
    else:
        causes += naming.names("metadata.name", name, name_rule(name))
    namespace = str(meta.get("namespace") or "")
    if namespaced and not namespace:
        causes.append(naming.required("metadata.namespace"))
    elif namespaced:
        causes += naming.names("metadata.namespace", namespace, naming.dns1123_label(namespace))
    elif namespace:
        causes.append(naming.forbidden("metadata.namespace", "not allowed on this type"))
    generation = meta.get("generation")
    if isinstance(generation, int) and generation < 0:
        causes.append(naming.invalid("metadata.generation", generation, naming.NEGATIVE))
    return causes + _meta_common(meta, custom=custom)


def _meta_common(meta: Mapping[str, Any], *, custom: bool) -> list[Cause]:
    causes = naming.labels(meta.get("labels"), "metadata.labels")
    annotations = naming.as_map(meta.get("annotations"))
    for key in sorted(annotations):
        causes += naming.names("metadata.annotations", key, naming.qualified_name(key.lower()))
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        causes.append(
            Cause(
                "FieldValueTooLong",
                f"Too long: may not be more than {_ANNOTATIONS_LIMIT} bytes",
                "metadata.annotations",
            )
        )
    for _, ref in naming.dicts(meta.get("ownerReferences")):
        api_version = str(ref.get("apiVersion") or "")
        if not api_version.rpartition("/")[2]:
            causes.append(
                naming.invalid(
                    "metadata.ownerReferences.apiVersion", api_version, "version must not be empty"
                )
            )
        for part in ("kind", "name", "uid"):
            if not ref.get(part):
                causes.append(
                    naming.invalid(
                        f"metadata.ownerReferences.{part}",
                        str(ref.get(part) or ""),
                        "must not be empty",
                    )
                )
    for index, finalizer in enumerate(naming.as_list(meta.get("finalizers"))):
        path = f"metadata.finalizers[{index}]"
        causes += naming.names(path, str(finalizer), naming.qualified_name(str(finalizer)))
        standard = "/" in str(finalizer) or finalizer in naming.STANDARD_FINALIZERS
        if not custom and not standard:
            causes.append(
                naming.invalid(
                    path,
                    finalizer,
                    "name is neither a standard finalizer name nor is it fully qualified",
                )
            )
    return causes


def _meta_update(meta: Mapping[str, Any], old: Mapping[str, Any], *, custom: bool) -> list[Cause]:
    causes: list[Cause] = []
    if old.get("deletionTimestamp"):
        added = sorted(
            set(naming.as_list(meta.get("finalizers"))) - set(naming.as_list(old.get("finalizers")))
        )
        if added:
            causes.append(
                naming.forbidden(
                    "metadata.finalizers",
                    "no new finalizers can be added if the object is being deleted, found new "
                    f"finalizers {naming.go_strings(added)}",
                )
            )
    generation, old_generation = meta.get("generation"), old.get("generation")
    if (
        isinstance(generation, int)
        and isinstance(old_generation, int)
        and generation < old_generation
    ):
        causes.append(naming.invalid("metadata.generation", generation, "must not be decremented"))
    for part in ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp"):
        value = meta.get(part)
        if part == "uid" and not value:
            continue
        if (value or None) != (old.get(part) or None):
            causes.append(naming.immutable(f"metadata.{part}", value if value is not None else ""))
    return causes + _meta_common(meta, custom=custom)


_NAME_RULES: dict[tuple[str, str], Callable[[str], list[str]]] = {
    ("", "Namespace"): naming.dns1123_label,
    ("", "Service"): naming.dns1035_label,
}

_RULES: dict[tuple[str, str], naming.Rule] = {
    **validating_pods.RULES,
    **validating_workloads.RULES,
    **validating_kinds.RULES,
    **validating_batch.RULES,
    **validating_admission.RULES,
}
