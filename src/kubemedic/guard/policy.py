"""The guard's verdict on one admission request: allowed, warned or denied, and why.

Input: an ``admission.k8s.io/v1`` ``AdmissionReview`` (:func:`parse_review`), what the guard
knows of the cluster's nodes and pods (:class:`Knowledge`) and the :class:`GuardSettings`.
Output: a :class:`Verdict`, turned into the review's ``response`` by :meth:`Verdict.response`.

**Rule (a): an imperative edit of a GitOps-managed object.** An ``UPDATE`` (a PUT or a PATCH;
kube-apiserver sends both as ``UPDATE``) whose ``options.fieldManager`` is a person's manager
(:class:`kubemedic.drift.ManagerClasses`: ``kubectl-edit``, ``kubectl-patch``, ``kubectl-set``,
``kubectl-client-side-apply``, ``kubectl`` for ``apply --server-side``...; plus
``imperativeManagers`` of the settings) on an object the GitOps tool manages (the markers of
:func:`kubemedic.checks.outofband.gitops_owner`, read on the old object: an Argo CD tracking
annotation or instance label, Flux's ``kustomize.toolkit.fluxcd.io`` labels, or the tool's own
managedFields entries) gets, with policy ``warn`` (the default), a warning naming the object,
the manager and the owner and saying to change it in Git; with policy ``deny``, a ``403``
denial saying the same. Requests by the GitOps tools' service accounts, and by the users and
groups of ``exemptUsers`` / ``exemptGroups``, are never judged by this rule. A request without
``options.fieldManager`` (an old client) is not judged: there is no manager to name.

**Rule (b): a template pinned to a node that cannot hold it.** A ``CREATE`` or ``UPDATE`` of a
workload (Deployment, StatefulSet, ReplicaSet, ReplicationController, Job, CronJob) whose pod
template's ``nodeName`` is set and differs from the old object's (or is new) is assessed by the
``pinned-node-name`` check (:mod:`kubemedic.checks.pinned`: the replicas times the template's
requests against the node's free allocatable, the kubelet's admission predicates). When the node
does not exist, or fewer replicas fit than are asked for, the answer carries a warning naming
the node, the replicas, how many fit and the limiting resource, whatever the policy (it is
never denied: the edit may be an emergency). The workload's own pods are left out of the node's
use (their places are what is predicted): pods of its namespace matching its selector. A
DaemonSet is left out as the check leaves it out (one pod per node at most, recreated with
back-off: it cannot storm). Until the guard's caches are filled (``Knowledge.synced``) nothing is
said about capacity.

**Everything else** (other operations, objects no GitOps tool manages, controllers' writes) is
allowed without a warning. **An internal error never denies** when ``failOpen`` (the default):
the request is allowed and the error is a reason of the verdict (the server logs it).

Pure: values in, a verdict out; no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kubemedic.checks import outofband
from kubemedic.checks.findings import Severity
from kubemedic.checks.pinned import TEMPLATE_SPEC_PATHS, PinnedNodeNameConfig, pinned_node_name
from kubemedic.drift.rules import ManagerClass, ManagerClasses
from kubemedic.errors import InputError
from kubemedic.model import objects
from kubemedic.model.objects import Body
from kubemedic.model.selectors import LabelSelector, SelectorError
from kubemedic.model.view import ClusterView

__all__ = [
    "GITOPS_SERVICE_ACCOUNTS",
    "AdmissionRequest",
    "GuardSettings",
    "Knowledge",
    "Outcome",
    "Policy",
    "ReviewError",
    "StaticKnowledge",
    "Verdict",
    "decide",
    "parse_review",
]

GITOPS_SERVICE_ACCOUNTS = (
    "system:serviceaccount:argocd:argocd-application-controller",
    "system:serviceaccount:argocd:argocd-server",
    "system:serviceaccount:flux-system:kustomize-controller",
    "system:serviceaccount:flux-system:helm-controller",
)
"""The GitOps tools' own identities in their default installations: never judged."""


class ReviewError(InputError):
    """The body posted to the guard is not an ``admission.k8s.io/v1`` AdmissionReview."""


class Policy(enum.StrEnum):
    WARN = "warn"
    DENY = "deny"


class Outcome(enum.StrEnum):
    """How a review ended (the ``verdict`` label of the guard's metrics)."""

    ALLOWED = "allowed"
    WARNED = "warned"
    DENIED = "denied"
    ERROR = "error"
    """An internal error; allowed when failing open."""


@dataclass(frozen=True, slots=True)
class GuardSettings:
    """What the guard is told besides the request (the ``guard:`` configuration section)."""

    policy: Policy = Policy.WARN
    exempt_users: tuple[str, ...] = GITOPS_SERVICE_ACCOUNTS
    exempt_groups: tuple[str, ...] = ()
    imperative_managers: tuple[str, ...] = ()
    """Added to kubectl's per-command managers (:class:`kubemedic.drift.ManagerClasses`)."""
    fail_open: bool = True
    managers: ManagerClasses = field(default_factory=ManagerClasses)

    def imperative(self, manager: str) -> bool:
        return (
            manager in self.imperative_managers
            or self.managers.classify(manager) is ManagerClass.IMPERATIVE
        )


@dataclass(frozen=True, slots=True)
class AdmissionRequest:
    """The parts of ``AdmissionReview.request`` the guard reads."""

    uid: str
    operation: str
    kind: str
    group: str
    name: str
    namespace: str | None
    username: str
    groups: tuple[str, ...]
    field_manager: str | None
    obj: Body | None
    old: Body | None
    dry_run: bool = False

    @property
    def shown(self) -> str:
        """``Kind namespace/name`` as messages name the object."""
        name = self.name or objects.get_str(self.obj or {}, "metadata", "generateName") or "?"
        return f"{self.kind} {self.namespace}/{name}" if self.namespace else f"{self.kind} {name}"


def _map(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ReviewError(f"malformed AdmissionReview: {where} must be an object")
    return value


def _body(value: Any, where: str) -> Body | None:
    if value is None:
        return None
    return dict(_map(value, where))


def parse_review(review: Any) -> AdmissionRequest:
    """The request of an AdmissionReview; :class:`ReviewError` saying what is wrong."""
    top = _map(review, "the body")
    if top.get("apiVersion") != "admission.k8s.io/v1" or top.get("kind") != "AdmissionReview":
        raise ReviewError(
            "malformed AdmissionReview: expected apiVersion admission.k8s.io/v1 and kind "
            f"AdmissionReview, got {top.get('apiVersion')!r} and {top.get('kind')!r}"
        )
    request = _map(top.get("request"), "request")
    uid = request.get("uid")
    operation = request.get("operation")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("malformed AdmissionReview: request.uid must be a non-empty string")
    if operation not in ("CREATE", "UPDATE", "DELETE", "CONNECT"):
        raise ReviewError(
            "malformed AdmissionReview: request.operation must be CREATE, UPDATE, DELETE or "
            f"CONNECT, got {operation!r}"
        )
    kind = _map(request.get("kind"), "request.kind")
    user = _map(request.get("userInfo") or {}, "request.userInfo")
    options = _map(request.get("options") or {}, "request.options")
    manager = options.get("fieldManager")
    groups = user.get("groups") or ()
    namespace = request.get("namespace")
    return AdmissionRequest(
        uid=uid,
        operation=str(operation),
        kind=str(kind.get("kind") or ""),
        group=str(kind.get("group") or ""),
        name=str(request.get("name") or ""),
        namespace=namespace if isinstance(namespace, str) and namespace else None,
        username=str(user.get("username") or ""),
        groups=tuple(str(g) for g in groups) if isinstance(groups, list) else (),
        field_manager=manager if isinstance(manager, str) and manager else None,
        obj=_body(request.get("object"), "request.object"),
        old=_body(request.get("oldObject"), "request.oldObject"),
        dry_run=request.get("dryRun") is True,
    )


class Knowledge(Protocol):
    """What the guard knows of the cluster for the capacity rule."""

    @property
    def synced(self) -> bool:
        """Whether nodes and pods have been listed at least once."""

    def node(self, name: str) -> Body | None: ...

    def pods_on(self, name: str) -> list[Body]:
        """The pods bound to node ``name`` (any phase: the check leaves out finished ones)."""


@dataclass(frozen=True, slots=True)
class StaticKnowledge:
    """Knowledge from lists of bodies (tests, a one-off review)."""

    nodes: Sequence[Body] = ()
    pods: Sequence[Body] = ()
    synced: bool = True

    def node(self, name: str) -> Body | None:
        return next((n for n in self.nodes if objects.get_str(n, "metadata", "name") == name), None)

    def pods_on(self, name: str) -> list[Body]:
        return [p for p in self.pods if objects.get_str(p, "spec", "nodeName") == name]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer: ``allowed``, ``warnings`` (kubectl prints each as ``Warning: ...``), the
    denial's ``message`` and ``code``, and ``reasons`` (for logs: what each rule concluded)."""

    outcome: Outcome
    warnings: tuple[str, ...] = ()
    message: str = ""
    code: int = 200
    reasons: tuple[str, ...] = ()

    @property
    def allowed(self) -> bool:
        return self.outcome is not Outcome.DENIED

    def response(self, uid: str) -> dict[str, Any]:
        """The AdmissionReview answering request ``uid``."""
        answer: dict[str, Any] = {"uid": uid, "allowed": self.allowed}
        if self.warnings:
            answer["warnings"] = list(self.warnings)
        if not self.allowed:
            answer["status"] = {
                "code": self.code,
                "reason": "Forbidden" if self.code == 403 else "Invalid",
                "message": self.message,
            }
        return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": answer}


def decide(request: AdmissionRequest, *, knowledge: Knowledge, settings: GuardSettings) -> Verdict:
    """The verdict on ``request`` (see the module's documentation); never raises when failing
    open."""
    try:
        return _decide(request, knowledge=knowledge, settings=settings)
    except Exception as error:  # fail open: a bug in a rule must not block the cluster
        why = f"internal error judging {request.shown}: {type(error).__name__}: {error}"
        if settings.fail_open:
            return Verdict(Outcome.ERROR, reasons=(why,))
        return Verdict(Outcome.DENIED, message=f"kubemedic guard: {why}", code=500, reasons=(why,))


def _decide(request: AdmissionRequest, *, knowledge: Knowledge, settings: GuardSettings) -> Verdict:
    warnings: list[str] = []
    reasons: list[str] = []
    denial = ""
    if request.operation in ("CREATE", "UPDATE") and request.obj is not None:
        pinned = _pinned_warning(request, knowledge)
        if pinned is not None:
            warnings.append(pinned)
            reasons.append(f"capacity: {pinned}")
    if request.operation == "UPDATE":
        edit = _imperative_edit(request, settings)
        if edit is not None:
            reasons.append(f"gitops: {edit}")
            if settings.policy is Policy.DENY:
                denial = f"{edit}: change it in Git instead"
            else:
                warnings.append(f"{edit}; change it in Git instead")
    if denial:
        return Verdict(
            Outcome.DENIED, tuple(warnings), message=denial, code=403, reasons=tuple(reasons)
        )
    outcome = Outcome.WARNED if warnings else Outcome.ALLOWED
    return Verdict(outcome, tuple(warnings), reasons=tuple(reasons))


def _exempt(request: AdmissionRequest, settings: GuardSettings) -> bool:
    return request.username in settings.exempt_users or any(
        group in settings.exempt_groups for group in request.groups
    )


def _imperative_edit(request: AdmissionRequest, settings: GuardSettings) -> str | None:
    """The sentence naming an imperative edit of a GitOps-managed object, or None."""
    manager = request.field_manager
    if manager is None or _exempt(request, settings) or not settings.imperative(manager):
        return None
    owner = outofband.gitops_owner(request.old or request.obj or {})
    if owner is None:
        return None
    tool = outofband.tool_name(str(owner["tool"]))
    app = f" (application {owner['app']})" if owner.get("app") else ""
    return f"{request.shown} is managed by {tool}{app}; {manager} changes it outside Git"


def _template_node(body: Body | None, kind: str) -> str | None:
    path = TEMPLATE_SPEC_PATHS.get(kind)
    if body is None or path is None:
        return None
    return objects.get_str(body, *path, "nodeName") or None


def _pinned_warning(request: AdmissionRequest, knowledge: Knowledge) -> str | None:
    node_name = _template_node(request.obj, request.kind)
    if node_name is None or node_name == _template_node(request.old, request.kind):
        return None
    if not knowledge.synced:
        return None
    obj = dict(request.obj or {})
    obj.setdefault("kind", request.kind)
    node = knowledge.node(node_name)
    if node is None:
        return (
            f"{request.shown} pins its pods to node {node_name} with spec.nodeName, but no node "
            f"{node_name} exists: they bypass the scheduler and will never run"
        )
    pods = [pod for pod in knowledge.pods_on(node_name) if not _own_pod(pod, obj, request)]
    view = ClusterView.build([node, *pods, obj])
    findings = pinned_node_name(view, PinnedNodeNameConfig(report_zero_replicas=False))
    for finding in findings:
        if finding.severity is Severity.CRITICAL:
            return finding.message
    return None


def _own_pod(pod: Body, workload: Body, request: AdmissionRequest) -> bool:
    """Whether ``pod`` is one of the workload's (same namespace, matching its selector)."""
    if objects.get_str(pod, "metadata", "namespace") != request.namespace:
        return False
    selector = objects.get_map(workload, "spec", "selector")
    if request.kind == "CronJob":
        selector = objects.get_map(workload, "spec", "jobTemplate", "spec", "selector")
    if not selector:
        return False
    try:
        parsed = LabelSelector.from_object(selector)
    except SelectorError:
        return False
    return not parsed.empty and parsed.matches(objects.labels(pod))
