"""Drift as JSON and as findings (the DESIGN finding schema), for the CLI and the daemon.

``drift_to_json`` is one object's drift::

    {"object": {"apiVersion", "kind", "namespace", "name"}, "resourceVersion": "...",
     "missing": false,
     "drifts": [{"path": "spec.template.spec.nodeName", "kind": "live-only",
                 "desired": null, "live": "core-2", "inGit": false,
                 "manager": "kubectl-edit", "operation": "Update", "time": "...",
                 "owners": [{"manager", "operation", "time", "class", "subresource"?}]}],
     "patch": [RFC 6902 operations]}

``drift_finding`` turns it into a finding of check ``drift``: **critical** when a person changed
where pods may run or what they reserve (a scheduling field of the pod template, or a
container's resources, as the ``out-of-band-edit`` check judges), **warning** otherwise. The
cause is the pinned-node cause when the template's ``nodeName`` drifted (so the drift, the pin
and the storm it causes join one incident), else ``drift:<namespace>/<Kind>/<name>``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from kubemedic.checks.findings import Finding, Severity, pinned_cause, workload_cause
from kubemedic.checks.outofband import OutOfBandEditConfig
from kubemedic.drift.engine import FieldDrift, ObjectDrift
from kubemedic.model.fieldpaths import ElementKind, FieldPath
from kubemedic.model.objects import ObjectRef

__all__ = ["drift_finding", "drift_to_json", "field_drift_to_json"]

_POD_SPEC = FieldPath.parse("spec.template.spec")
_NODE_NAME = FieldPath.parse("spec.template.spec.nodeName")
_SCHEDULING = frozenset(OutOfBandEditConfig().scheduling_fields)
_CONTAINER_LISTS = frozenset({"containers", "initContainers"})


def field_drift_to_json(drift: FieldDrift) -> dict[str, Any]:
    owner = drift.owner
    return {
        "path": str(drift.path),
        "kind": drift.kind,
        "desired": drift.desired,
        "live": drift.live,
        "inGit": drift.in_git,
        "manager": owner.manager if owner else None,
        "operation": owner.operation if owner else None,
        "time": owner.time if owner else None,
        "owners": [o.to_json() for o in drift.owners],
    }


def drift_to_json(drift: ObjectDrift) -> dict[str, Any]:
    return {
        "object": _ref(drift).to_json(),
        "resourceVersion": drift.resource_version,
        "missing": drift.missing,
        "drifts": [field_drift_to_json(d) for d in drift.drifts],
        "patch": drift.patch,
    }


def _ref(drift: ObjectDrift) -> ObjectRef:
    return ObjectRef(
        kind=drift.kind, name=drift.name, namespace=drift.namespace, api_version=drift.api_version
    )


def _scheduling(path: FieldPath) -> bool:
    if not path.has_prefix(_POD_SPEC) or len(path) <= len(_POD_SPEC):
        return False
    rest = path.elements[len(_POD_SPEC) :]
    first = rest[0]
    if first.kind is ElementKind.FIELD and first.field_name in _SCHEDULING:
        return True
    return (
        len(rest) >= 3
        and first.kind is ElementKind.FIELD
        and first.field_name in _CONTAINER_LISTS
        and rest[2].kind is ElementKind.FIELD
        and rest[2].field_name == "resources"
    )


def drift_finding(drift: ObjectDrift, *, now: datetime) -> Finding | None:
    """The finding for one object's drift (None when it has none)."""
    if not drift.drifted:
        return None
    ref = _ref(drift)
    if drift.missing:
        return Finding(
            check="drift",
            severity=Severity.WARNING,
            object=ref,
            message=f"{ref} is in Git but not in the cluster",
            cause=workload_cause("drift", ref),
            first_seen=now,
            last_seen=now,
            evidence=drift_to_json(drift),
        )
    critical = any(_scheduling(d.path) for d in drift.drifts)
    pinned = any(d.path == _NODE_NAME for d in drift.drifts)
    people = sorted({d.owner.manager for d in drift.drifts if d.owner is not None})
    paths = ", ".join(str(d.path) for d in drift.drifts[:3])
    more = f" and {len(drift.drifts) - 3} more" if len(drift.drifts) > 3 else ""
    by = f" (written by {', '.join(people)})" if people else ""
    count = len(drift.drifts)
    noun = "field differs" if count == 1 else "fields differ"
    return Finding(
        check="drift",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        object=ref,
        message=f"{count} {noun} from Git on {ref}: {paths}{more}{by}",
        cause=pinned_cause(ref) if pinned else workload_cause("drift", ref),
        first_seen=now,
        last_seen=now,
        evidence=drift_to_json(drift),
    )
