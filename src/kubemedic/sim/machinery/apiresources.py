"""The resources the emulator serves, and the discovery documents that describe them.

Discovery is what clients learn the API from: ``kubectl api-resources`` prints it, kubectl maps
``po`` to pods and ``deploy`` to deployments with the short names, decides whether a name needs a
namespace from ``namespaced``, and looks for ``pods/eviction`` before draining (falling back to
plain deletes without it). lightkube's generic resources read the same fields. Subresources are
listed as their own entries (``pods/status``) with the kind they accept (``Eviction`` of
``policy/v1`` for ``pods/eviction``, ``Scale`` of ``autoscaling/v1`` for ``deployments/scale``),
as the real server lists them.

``storage`` names the store an entry reads and writes: ``events`` of ``events.k8s.io/v1`` share
the store of core ``events``, as the real server serves one set of objects under both.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list")


@dataclass(frozen=True)
class Subresource:
    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str | None = None
    version: str | None = None


_STATUS_VERBS = ("get", "patch", "update")


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, _STATUS_VERBS)


def _scale() -> Subresource:
    return Subresource("scale", "Scale", _STATUS_VERBS, group="autoscaling", version="v1")


@dataclass(frozen=True)
class Resource:
    """One REST resource (``deployments`` of ``apps/v1``)."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    subresources: tuple[Subresource, ...] = ()
    storage: str = ""
    custom: bool = False
    #: Where the scale subresource of a custom resource reads its label selector from.
    scale_selector_path: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return self.version if not self.group else f"{self.group}/{self.version}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def store_key(self) -> str:
        """The store this resource lives in (shared by aliases such as events.k8s.io)."""
        if self.storage:
            return self.storage
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def read_only(self) -> bool:
        return "create" not in self.verbs

    def subresource(self, name: str) -> Subresource | None:
        return next((s for s in self.subresources if s.name == name), None)


RESOURCES: tuple[Resource, ...] = (
    Resource(
        "", "v1", "Namespace", "namespaces", "namespace", False, ("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        subresources=(_status("Namespace"), Subresource("finalize", "Namespace", ("update",))),
    ),
    Resource(
        "", "v1", "Node", "nodes", "node", False, ("no",),
        subresources=(_status("Node"),),
    ),
    Resource(
        "", "v1", "Pod", "pods", "pod", True, ("po",), ("all",),
        subresources=(
            _status("Pod"),
            Subresource("eviction", "Eviction", ("create",), group="policy", version="v1"),
            Subresource("binding", "Binding", ("create",)),
        ),
    ),
    Resource("", "v1", "Event", "events", "event", True, ("ev",)),
    Resource(
        "", "v1", "Service", "services", "service", True, ("svc",), ("all",),
        verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
        subresources=(_status("Service"),),
    ),
    Resource(
        "", "v1", "ReplicationController", "replicationcontrollers", "replicationcontroller",
        True, ("rc",), ("all",), subresources=(_status("ReplicationController"), _scale()),
    ),
    Resource("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    Resource("", "v1", "Secret", "secrets", "secret", True),
    Resource("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",)),
    Resource(
        "apps", "v1", "Deployment", "deployments", "deployment", True, ("deploy",), ("all",),
        subresources=(_status("Deployment"), _scale()),
    ),
    Resource(
        "apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), ("all",),
        subresources=(_status("ReplicaSet"), _scale()),
    ),
    Resource(
        "apps", "v1", "StatefulSet", "statefulsets", "statefulset", True, ("sts",), ("all",),
        subresources=(_status("StatefulSet"), _scale()),
    ),
    Resource(
        "apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), ("all",),
        subresources=(_status("DaemonSet"),),
    ),
    Resource(
        "batch", "v1", "CronJob", "cronjobs", "cronjob", True, ("cj",), ("all",),
        subresources=(_status("CronJob"),),
    ),
    Resource(
        "batch", "v1", "Job", "jobs", "job", True, (), ("all",), subresources=(_status("Job"),),
    ),
    Resource(
        "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget",
        True, ("pdb",), subresources=(_status("PodDisruptionBudget"),),
    ),
    Resource("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    Resource(
        "scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False,
        ("pc",),
    ),
    Resource("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",), storage="events"),
    Resource(
        "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration",
        "validatingwebhookconfigurations", "validatingwebhookconfiguration", False,
    ),
    Resource(
        "metrics.k8s.io", "v1beta1", "NodeMetrics", "nodes", "", False, verbs=READ_VERBS,
    ),
    Resource(
        "metrics.k8s.io", "v1beta1", "PodMetrics", "pods", "", True, verbs=READ_VERBS,
    ),
    Resource(
        "apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
        "customresourcedefinition", False, ("crd", "crds"), verbs=(*READ_VERBS, "watch"),
    ),
    Resource(
        "cluster.x-k8s.io", "v1beta1", "Machine", "machines", "machine", True, ("ma",),
        ("cluster-api",), subresources=(_status("Machine"),), custom=True,
    ),
    Resource(
        "cluster.x-k8s.io", "v1beta1", "MachineSet", "machinesets", "machineset", True, ("ms",),
        ("cluster-api",), subresources=(_status("MachineSet"), _scale()), custom=True,
        scale_selector_path=".status.selector",
    ),
    Resource(
        "cluster.x-k8s.io", "v1beta1", "MachineDeployment", "machinedeployments",
        "machinedeployment", True, ("md",), ("cluster-api",),
        subresources=(_status("MachineDeployment"), _scale()), custom=True,
        scale_selector_path=".status.selector",
    ),
    # Argo CD's Application CRD declares no subresources: status is written with the object.
    Resource(
        "argoproj.io", "v1alpha1", "Application", "applications", "application", True,
        ("app", "apps"), custom=True,
    ),
    # Flux's source and kustomize controllers write their status through /status.
    Resource(
        "source.toolkit.fluxcd.io", "v1", "GitRepository", "gitrepositories", "gitrepository",
        True, ("gitrepo",), ("all", "fluxcd", "fluxcd-sources"),
        subresources=(_status("GitRepository"),), custom=True,
    ),
    Resource(
        "kustomize.toolkit.fluxcd.io", "v1", "Kustomization", "kustomizations", "kustomization",
        True, ("ks",), ("all", "fluxcd", "fluxcd-appliers"),
        subresources=(_status("Kustomization"),), custom=True,
    ),
)  # fmt: skip


class Registry:
    """Resources by group/version/plural and by kind, and their discovery documents."""

    def __init__(self, resources: Iterable[Resource] = RESOURCES) -> None:
        self.resources = tuple(resources)
        self._by_path = {(r.group, r.version, r.plural): r for r in self.resources}
        self._by_kind: dict[tuple[str, str], Resource] = {}
        for res in self.resources:
            self._by_kind.setdefault((res.api_version, res.kind), res)

    def lookup(self, group: str, version: str, plural: str) -> Resource | None:
        return self._by_path.get((group, version, plural))

    def for_kind(self, api_version: str, kind: str) -> Resource | None:
        return self._by_kind.get((api_version, kind))

    def group_versions(self) -> dict[str, list[str]]:
        """Named groups and their versions, in registration order (the core group excluded)."""
        out: dict[str, list[str]] = {}
        for res in self.resources:
            if res.group and res.version not in out.setdefault(res.group, []):
                out[res.group].append(res.version)
        return out

    def api_versions(self) -> dict[str, Any]:
        """``GET /api``."""
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        }

    def api_group(self, group: str) -> dict[str, Any] | None:
        """``GET /apis/<group>``."""
        versions = self.group_versions().get(group)
        if versions is None:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        """``GET /apis``."""
        groups = []
        for name in self.group_versions():
            group = self.api_group(name)
            assert group is not None
            group.pop("kind")
            group.pop("apiVersion")
            groups.append(group)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        """``GET /api/v1`` or ``GET /apis/<group>/<version>``."""
        members = [r for r in self.resources if r.group == group and r.version == version]
        if not members:
            return None
        entries: list[dict[str, Any]] = []
        for res in members:
            entry: dict[str, Any] = {
                "name": res.plural,
                "singularName": res.singular,
                "namespaced": res.namespaced,
                "kind": res.kind,
                "verbs": list(res.verbs),
            }
            if res.short_names:
                entry["shortNames"] = list(res.short_names)
            if res.categories:
                entry["categories"] = list(res.categories)
            entries.append(entry)
            for sub in res.subresources:
                sub_entry: dict[str, Any] = {
                    "name": f"{res.plural}/{sub.name}",
                    "singularName": "",
                    "namespaced": res.namespaced,
                    "kind": sub.kind,
                    "verbs": list(sub.verbs),
                }
                if sub.group is not None:
                    sub_entry["group"] = sub.group
                    sub_entry["version"] = sub.version
                entries.append(sub_entry)
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": version if not group else f"{group}/{version}",
            "resources": entries,
        }
