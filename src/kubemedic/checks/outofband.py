"""``out-of-band-edit``: fields of a GitOps-managed object written by hand (``kubectl edit``...).

Why it matters (incident 1): Argo CD's default three-way diff, like ``kubectl diff``, ignores live
fields that are neither in Git nor in the last-applied state (argo-cd#1613; server-side diff does
not change it). A field *added* by ``kubectl edit`` therefore stays live while the application
reads ``Synced``; only fields Git also sets are reverted. The API server still records who wrote
each field: every ``metadata.managedFields`` entry names a manager, an operation and a time, and
owns a set of fields (FieldsV1, decoded with ``kubemedic.model.managedfields``). kubemedic cannot
see Git here, so it reports every imperatively written field; the ``drift`` command compares with
Git.

GitOps markers (first match wins):

- Argo CD: annotation ``argocd.argoproj.io/tracking-id`` (app = the part before ``:``); a
  ``managedFields`` entry by ``argocd_managers`` (``argocd-controller`` is Argo CD's field manager
  for client-side and server-side apply alike); or a label in ``argocd_tracking_labels`` (default
  ``app.kubernetes.io/instance``, Argo CD's default tracking label), except on objects labelled
  ``app.kubernetes.io/managed-by: Helm``, since every Helm chart sets that label too.
- Flux: labels ``kustomize.toolkit.fluxcd.io/name`` / ``helm.toolkit.fluxcd.io/name`` (app =
  ``<namespace label>/<name>``), or an entry by ``flux_managers``.

Imperative managers: ``imperative_managers`` (kubectl's per-command field managers:
``kubectl-edit``, ``kubectl-patch``, ``kubectl-set``, ``kubectl-client-side-apply``, ...), and a
bare ``kubectl`` ``Update`` (kubectl before 1.18 or a write without ``--field-manager``, named
after the User-Agent). ``kubectl apply --server-side`` (``kubectl``, ``Apply``) is declarative and
left out. Entries of the ``status`` subresource and ``status`` paths are ignored; so are
``ignored_paths`` (kubectl's own bookkeeping, e.g. the last-applied annotation). Only leaf paths
are listed (what the manager set, not the maps around it).

Severity: **critical** when a path changes where pods may run or what they reserve: under the pod
template's spec, a field in ``scheduling_fields`` (``nodeName``, ``nodeSelector``, ``affinity``,
``tolerations``, ``topologySpreadConstraints``, ``schedulerName``, pod-level ``resources``) or a
container's ``resources``; **info** when every path is in ``informational_paths`` (the
``restartedAt`` annotation ``kubectl rollout restart`` writes: deliberate, and harmless to the
desired state); **warning** otherwise, and when an entry's FieldsV1 cannot be read.

Evidence keys (``manager``, ``operation``, ``time``, ``fieldPaths`` describe the most severe, then
latest, imperative entry):

- ``manager``, ``operation``, ``time`` (RFC 3339 as recorded), ``fieldPaths`` (field-path notation,
  e.g. ``spec.template.spec.nodeName``); ``subresource`` when the entry has one (``scale``).
- ``gitops``: ``{tool: "argocd"|"flux", app: name or null, via: the marker that matched}``.
- ``schedulingPaths``: the paths, over all imperative entries, that made it critical.
- ``entries``: every imperative entry as ``{manager, operation, time, fieldPaths}`` (plus
  ``subresource``, ``error``), present when there are several.
- ``error``: why the chosen entry's FieldsV1 could not be read, when it could not.

Cause: ``pinned-node-name:<namespace>/<Kind>/<name>`` when the template's ``nodeName`` was set by
hand (the same fingerprint as the ``pinned-node-name`` and ``failed-pod-storm`` findings it leads
to; not for DaemonSets, which that check leaves out), else
``out-of-band-edit:<namespace>/<Kind>/<name>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubemedic.checks.findings import Finding, Severity, pinned_cause, workload_cause
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners
from kubemedic.model.fieldpaths import ElementKind, FieldPath, PathElement
from kubemedic.model.managedfields import decode_fieldsv1, leaf_paths
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.view import ClusterView

__all__ = ["OutOfBandEditConfig", "gitops_owner", "out_of_band_edit", "tool_name"]

_TRACKING_ID = "argocd.argoproj.io/tracking-id"
_FLUX_GROUPS = ("kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io")
_TOOL_NAMES = {"argocd": "Argo CD", "flux": "Flux"}
_POD_SPEC = FieldPath.parse("spec.template.spec")
_POD_SPECS = {kind: FieldPath.of(*path) for kind, path in owners.POD_TEMPLATE_SPECS.items()}
_STATUS = PathElement.field("status")
_CONTAINER_LISTS = frozenset({"containers", "initContainers"})


@dataclass(frozen=True, slots=True)
class OutOfBandEditConfig:
    imperative_managers: tuple[str, ...] = (
        "kubectl-edit",
        "kubectl-patch",
        "kubectl-set",
        "kubectl-client-side-apply",
        "kubectl-replace",
        "kubectl-scale",
        "kubectl-label",
        "kubectl-annotate",
        "kubectl-rollout",
    )
    """Field managers whose writes are hand edits, whatever the operation."""
    bare_kubectl_update: bool = True
    """Count manager ``kubectl`` with operation ``Update`` as a hand edit."""
    argocd_managers: tuple[str, ...] = ("argocd-controller", "argocd-application-controller")
    argocd_tracking_labels: tuple[str, ...] = ("app.kubernetes.io/instance",)
    flux_managers: tuple[str, ...] = ("kustomize-controller", "helm-controller")
    scheduling_fields: tuple[str, ...] = (
        "nodeName",
        "nodeSelector",
        "affinity",
        "tolerations",
        "topologySpreadConstraints",
        "schedulerName",
        "resources",
    )
    """Pod-spec fields whose hand edit is critical (``resources`` covers containers' too)."""
    informational_paths: tuple[str, ...] = (
        'spec.template.metadata.annotations["kubectl.kubernetes.io/restartedAt"]',
    )
    ignored_paths: tuple[str, ...] = (
        'metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]',
        'metadata.annotations["kubernetes.io/change-cause"]',
    )


@dataclass(frozen=True, slots=True)
class _Edit:
    manager: str
    operation: str
    time: str | None
    subresource: str | None
    paths: tuple[FieldPath, ...]
    severity: Severity
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "time": self.time,
            "fieldPaths": [str(path) for path in self.paths],
        }
        if self.subresource:
            out["subresource"] = self.subresource
        if self.error:
            out["error"] = self.error
        return out


@check("out-of-band-edit", OutOfBandEditConfig)
def out_of_band_edit(view: ClusterView, config: OutOfBandEditConfig) -> list[Finding]:
    """Fields of Argo CD / Flux managed workloads that kubectl edit, patch, set... wrote by hand."""
    findings: list[Finding] = []
    for key in sorted(view.workloads, key=lambda k: (k[0], k[1] or "", k[2])):
        body = view.workloads[key]
        entries = [
            entry
            for entry in objects.get_list(body, "metadata", "managedFields")
            if isinstance(entry, Mapping)
        ]
        managers = {objects.get_str(entry, "manager") or "" for entry in entries}
        gitops = _gitops(body, managers, config)
        if gitops is None:
            continue
        pod_spec = _POD_SPECS.get(key[0], _POD_SPEC)
        edits = [edit for entry in entries if (edit := _edit(entry, pod_spec, config)) is not None]
        if edits:
            findings.append(
                _assess(view, body, gitops=gitops, edits=edits, pod_spec=pod_spec, config=config)
            )
    return findings


def gitops_owner(body: Body, config: OutOfBandEditConfig | None = None) -> dict[str, Any] | None:
    """The GitOps tool that manages ``body`` by the markers above (``{tool, app, via}``, as in
    the evidence's ``gitops``), or None when none is found."""
    entries = objects.get_list(body, "metadata", "managedFields")
    managers = {objects.get_str(e, "manager") or "" for e in entries if isinstance(e, Mapping)}
    return _gitops(body, managers, config or OutOfBandEditConfig())


def tool_name(tool: str) -> str:
    """How a message names a GitOps tool of :func:`gitops_owner` (``Argo CD``, ``Flux``)."""
    return _TOOL_NAMES.get(tool, tool)


def _gitops(body: Body, managers: set[str], config: OutOfBandEditConfig) -> dict[str, Any] | None:
    meta_labels = {k: v for k, v in objects.labels(body).items() if isinstance(v, str) and v}
    tracking = objects.get_str(body, "metadata", "annotations", _TRACKING_ID)
    label = next((k for k in config.argocd_tracking_labels if k in meta_labels), None)
    if label is not None and meta_labels.get("app.kubernetes.io/managed-by") == "Helm":
        label = None
    argo_managers = sorted(managers.intersection(config.argocd_managers))
    if tracking or argo_managers or label:
        app = tracking.split(":", 1)[0] if tracking else meta_labels.get(label or "")
        if tracking:
            via = f"annotation {_TRACKING_ID}"
        else:
            via = f"manager {argo_managers[0]}" if argo_managers else f"label {label}"
        return {"tool": "argocd", "app": app or None, "via": via}
    for group in _FLUX_GROUPS:
        name = meta_labels.get(f"{group}/name")
        if name:
            namespace = meta_labels.get(f"{group}/namespace")
            app = f"{namespace}/{name}" if namespace else name
            return {"tool": "flux", "app": app, "via": f"label {group}/name"}
    flux_managers = sorted(managers.intersection(config.flux_managers))
    if flux_managers:
        return {"tool": "flux", "app": None, "via": f"manager {flux_managers[0]}"}
    return None


def _imperative(manager: str, operation: str, config: OutOfBandEditConfig) -> bool:
    if manager in config.imperative_managers:
        return True
    return config.bare_kubectl_update and manager == "kubectl" and operation == "Update"


def _edit(
    entry: Mapping[str, Any], pod_spec: FieldPath, config: OutOfBandEditConfig
) -> _Edit | None:
    manager = objects.get_str(entry, "manager") or ""
    operation = objects.get_str(entry, "operation") or ""
    subresource = objects.get_str(entry, "subresource")
    if not _imperative(manager, operation, config) or subresource == "status":
        return None
    time = objects.get_str(entry, "time")
    fields = entry.get("fieldsV1")
    try:
        if not isinstance(fields, Mapping):
            raise ValueError("the entry has no fieldsV1 object")
        paths = leaf_paths(decode_fieldsv1(fields))
    except ValueError as error:  # ManagedFieldsError, or a key the path model rejects
        return _Edit(manager, operation, time, subresource, (), Severity.WARNING, str(error))
    kept = tuple(
        path
        for path in paths
        if not (path.elements and path.elements[0] == _STATUS)
        and str(path) not in config.ignored_paths
    )
    if not kept:
        return None
    severity = max(_severity(path, pod_spec, config) for path in kept)
    return _Edit(manager, operation, time, subresource, kept, severity)


def _scheduling(path: FieldPath, pod_spec: FieldPath, config: OutOfBandEditConfig) -> bool:
    if len(path) <= len(pod_spec) or not path.has_prefix(pod_spec):
        return False
    rest = path.elements[len(pod_spec) :]
    first = rest[0]
    if first.kind is not ElementKind.FIELD:
        return False
    if first.field_name == "resources":
        return "resources" in config.scheduling_fields and len(rest) > 1
    if first.field_name in config.scheduling_fields:
        return True
    # A container's requests or limits; a bare `resources: {}` (as every container added by
    # hand carries) reserves nothing.
    return (
        first.field_name in _CONTAINER_LISTS
        and "resources" in config.scheduling_fields
        and len(rest) > 3
        and rest[2].kind is ElementKind.FIELD
        and rest[2].field_name == "resources"
    )


def _severity(path: FieldPath, pod_spec: FieldPath, config: OutOfBandEditConfig) -> Severity:
    if _scheduling(path, pod_spec, config):
        return Severity.CRITICAL
    if str(path) in config.informational_paths:
        return Severity.INFO
    return Severity.WARNING


def _assess(
    view: ClusterView,
    body: Body,
    *,
    gitops: dict[str, Any],
    edits: list[_Edit],
    pod_spec: FieldPath,
    config: OutOfBandEditConfig,
) -> Finding:
    ref = objects.ref_of(body)
    edits.sort(key=lambda edit: edit.time or "")
    chosen = max(edits, key=lambda edit: (edit.severity, edit.time or ""))
    severity = max(edit.severity for edit in edits)
    paths = [path for edit in edits for path in edit.paths]
    scheduling = sorted({str(path) for path in paths if _scheduling(path, pod_spec, config)})
    pinned = ref.kind != "DaemonSet" and pod_spec.child("nodeName") in paths
    cause = pinned_cause(ref) if pinned else workload_cause("out-of-band-edit", ref)
    times = [when for when in (objects.parse_time(edit.time) for edit in edits) if when]
    evidence: dict[str, Any] = {
        **chosen.to_json(),
        "gitops": gitops,
        "schedulingPaths": scheduling,
    }
    if len(edits) > 1:
        evidence["entries"] = [edit.to_json() for edit in edits]
    return Finding(
        check="out-of-band-edit",
        severity=severity,
        object=ref,
        message=_message(ref, gitops=gitops, chosen=chosen, edits=edits),
        cause=cause,
        first_seen=min(times) if times else view.now,
        last_seen=max(times) if times else view.now,
        evidence=evidence,
    )


def _message(ref: ObjectRef, *, gitops: dict[str, Any], chosen: _Edit, edits: list[_Edit]) -> str:
    tool = _TOOL_NAMES.get(str(gitops["tool"]), str(gitops["tool"]))
    app = f" (app {gitops['app']})" if gitops.get("app") else ""
    when = f"{chosen.operation} at {chosen.time}" if chosen.time else chosen.operation
    others = sorted({edit.manager for edit in edits} - {chosen.manager})
    also = f"; {', '.join(others)} also edited it by hand" if others else ""
    if chosen.error is not None:
        return (
            f"{ref} is managed by {tool}{app}, but {chosen.manager} wrote to it by hand "
            f"({when}) and its managedFields entry cannot be read{also}."
        )
    shown = [str(path) for path in chosen.paths[:3]]
    more = f" and {len(chosen.paths) - 3} more" if len(chosen.paths) > 3 else ""
    fields = f"{', '.join(shown)}{more}"
    if chosen.severity is Severity.INFO:
        return (
            f"{ref} is managed by {tool}{app}, and {chosen.manager} set {fields} by hand "
            f"({when}), a deliberate imperative action such as a rollout restart{also}."
        )
    return (
        f"{ref} is managed by {tool}{app}, but {chosen.manager} set {fields} outside Git "
        f"({when}){also}; {_WHAT_HAPPENS_NEXT.get(str(gitops['tool']), _UNKNOWN_NEXT)}."
    )


_WHAT_HAPPENS_NEXT = {
    # argo-cd#1613: the default three-way diff ignores live fields that are neither in Git nor
    # in last-applied, so the app stays Synced (incident 1).
    "argocd": "Argo CD reverts such an edit only where Git sets the same field, so an added "
    "field stays live unseen",
    # Flux's server-side apply takes ownership back from kubectl's field managers on the next
    # reconciliation (its FAQ: "Why are kubectl edits rolled back by Flux?").
    "flux": "Flux rolls kubectl edits back at its next reconciliation, so if the field is still "
    "live, drift correction is off, the field is ignored, or the edit keeps being reapplied",
}
_UNKNOWN_NEXT = "its GitOps tool may not see or revert it"
