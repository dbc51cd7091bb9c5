"""Finding the sources in the cluster: Argo CD ``Application`` and Flux ``Kustomization`` objects
mapped to the ``Source`` each applies and the live objects each manages.

**Argo CD** (``argoproj.io/v1alpha1`` ``Application``): ``spec.source`` (or each of
``spec.sources``) gives ``repoURL``, ``path`` and ``targetRevision`` (default ``HEAD``), and for
a directory application ``directory.recurse`` (default false), ``directory.include`` and
``directory.exclude``; ``spec.destination.namespace`` is where objects that name no namespace
go. The revision read is the one Argo CD last synced (``status.sync.revision``, or
``status.sync.revisions[i]`` for multiple sources) when it is recorded: live objects are to be
compared with what was applied, not with a newer commit not yet synced. ``status.resources``
lists the objects it manages. A source with ``chart`` (a Helm repository), ``plugin`` or
``directory.jsonnet`` is not read, and ``kustomize`` options (``namePrefix``, ``images``...)
are not applied: each such case is a note on the ``Managed``, so a user sees what was left out.
A source with only ``ref`` (values for another source) declares no objects and is passed over.

**Flux** (``kustomize.toolkit.fluxcd.io/v1`` ``Kustomization``): ``spec.sourceRef`` names a
``GitRepository`` (``source.toolkit.fluxcd.io/v1``; in the Kustomization's namespace unless
``sourceRef.namespace`` says otherwise) whose ``spec.url`` is the repository and ``spec.ref``
the reference (``commit`` over ``name`` over ``semver`` over ``tag`` over ``branch``, default
branch ``master``); ``spec.path`` is the path (default the root), read recursively;
``spec.targetNamespace`` overrides the objects' namespaces. The revision read is the applied one,
``status.lastAppliedRevision`` (``main@sha1:<sha>``, or ``main/<sha>`` before Flux 2.0), else
the GitRepository's ``status.artifact.revision``, else the reference. ``status.inventory``
lists the objects (ids ``<namespace>_<name>_<group>_<kind>``, a ``:`` in an RBAC name written
``__``). OCIRepository and Bucket sources, and post-build substitutions, patches and images,
are notes.

**Who owns a live object** (``owner_of``): the tool whose status lists it; else Argo CD's
``argocd.argoproj.io/tracking-id`` annotation (``<app>:<group>/<kind>:<namespace>/<name>``,
honoured only when it names this very object, as Argo CD checks, since annotations get copied)
or its ``app.kubernetes.io/instance`` label; else Flux's ``kustomize.toolkit.fluxcd.io/name``
and ``.../namespace`` labels. An Application outside Argo CD's own namespace is named
``<namespace>_<name>`` in tracking values; both spellings are accepted.

Pure: cluster objects in, values out. May import: kubemedic.drift.sources.desired.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubemedic.drift.sources.desired import ObjectRef, Source

__all__ = [
    "ARGOCD_INSTANCE_LABEL",
    "ARGOCD_TRACKING_ANNOTATION",
    "FLUX_NAMESPACE_LABEL",
    "FLUX_NAME_LABEL",
    "Managed",
    "discover",
    "owner_of",
    "parse_flux_revision",
    "parse_inventory_id",
    "parse_tracking_id",
]

ARGOCD_INSTANCE_LABEL = "app.kubernetes.io/instance"
ARGOCD_TRACKING_ANNOTATION = "argocd.argoproj.io/tracking-id"
FLUX_NAME_LABEL = "kustomize.toolkit.fluxcd.io/name"
FLUX_NAMESPACE_LABEL = "kustomize.toolkit.fluxcd.io/namespace"

_ARGO_GROUP = "argoproj.io"
_FLUX_KUSTOMIZE_GROUP = "kustomize.toolkit.fluxcd.io"
_FLUX_SOURCE_GROUP = "source.toolkit.fluxcd.io"
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")
_KUSTOMIZE_OPTIONS = (
    "namePrefix", "nameSuffix", "images", "commonLabels", "commonAnnotations", "namespace",
    "replicas", "patches", "components", "labelWithoutSelector", "forceCommonLabels",
    "forceCommonAnnotations",
)  # fmt: skip
_FLUX_OPTIONS = ("patches", "images", "postBuild", "components", "namePrefix", "nameSuffix")


@dataclass(frozen=True, slots=True)
class Managed:
    """One GitOps owner in the cluster: ``tool`` (``argocd`` or ``flux``), the ``owner``
    object (the Application or Kustomization), the ``sources`` it applies (empty when none could
    be read: see ``notes``), the live ``objects`` its status says it manages, the
    ``destination`` cluster (Argo CD's ``server`` or ``name``; ``None`` for Flux, which applies
    to its own cluster unless ``spec.kubeConfig`` says otherwise) and ``notes``: what kubemedic
    could not follow, in a sentence each."""

    tool: str
    owner: ObjectRef
    sources: tuple[Source, ...]
    objects: frozenset[ObjectRef]
    destination: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def in_cluster(self) -> bool:
        """Whether it applies to the cluster it runs in (Argo CD's in-cluster destination)."""
        return self.destination in (None, "https://kubernetes.default.svc", "in-cluster")

    def __str__(self) -> str:
        return f"{self.tool} {self.owner}"


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _group_kind(body: Mapping[str, Any]) -> tuple[str, str]:
    api_version = str(body.get("apiVersion") or "")
    return api_version.rpartition("/")[0], str(body.get("kind") or "")


def discover(objects: Iterable[Mapping[str, Any]]) -> list[Managed]:
    """Every Argo CD Application and Flux Kustomization among ``objects`` (any kinds may be
    given; the GitRepositories that Kustomizations refer to must be among them), in the order
    given."""
    bodies = list(objects)
    repositories = {
        (
            str(_mapping(body.get("metadata")).get("namespace") or ""),
            str(_mapping(body.get("metadata")).get("name") or ""),
        ): body
        for body in bodies
        if _group_kind(body) == (_FLUX_SOURCE_GROUP, "GitRepository")
    }
    found: list[Managed] = []
    for body in bodies:
        group_kind = _group_kind(body)
        if group_kind == (_ARGO_GROUP, "Application"):
            found.append(_argocd(body))
        elif group_kind == (_FLUX_KUSTOMIZE_GROUP, "Kustomization"):
            found.append(_flux(body, repositories))
    return found


def _argocd(app: Mapping[str, Any]) -> Managed:
    spec = _mapping(app.get("spec"))
    status = _mapping(app.get("status"))
    sync = _mapping(status.get("sync"))
    destination = _mapping(spec.get("destination"))
    namespace = _text(destination.get("namespace"))
    many = spec.get("sources")
    entries = [e for e in many if isinstance(e, Mapping)] if isinstance(many, list) and many else []
    revisions: list[Any] = list(sync.get("revisions") or []) if entries else []
    if not entries:
        entries = [_mapping(spec.get("source"))]
        revisions = [sync.get("revision")]
    sources: list[Source] = []
    notes: list[str] = []
    for index, entry in enumerate(entries):
        synced = revisions[index] if index < len(revisions) else None
        label = f"spec.sources[{index}]" if len(entries) > 1 else "spec.source"
        source = _argocd_source(
            entry, synced=_text(synced), namespace=namespace, label=label, notes=notes
        )
        if source is not None:
            sources.append(source)
    managed = frozenset(
        ObjectRef(
            group=str(item.get("group") or ""),
            kind=str(item.get("kind") or ""),
            namespace=str(item.get("namespace") or ""),
            name=str(item.get("name") or ""),
        )
        for item in status.get("resources") or []
        if isinstance(item, Mapping) and item.get("kind") and item.get("name")
    )
    target = _text(destination.get("server")) or _text(destination.get("name"))
    return Managed("argocd", ObjectRef.of(app), tuple(sources), managed, target, tuple(notes))


def _argocd_source(
    entry: Mapping[str, Any],
    *,
    synced: str | None,
    namespace: str | None,
    label: str,
    notes: list[str],
) -> Source | None:
    url = _text(entry.get("repoURL"))
    if url is None:
        notes.append(f"{label} has no repoURL")
        return None
    if _text(entry.get("chart")):
        notes.append(f"{label} is the Helm chart {entry['chart']} of {url}: charts are not read")
        return None
    if entry.get("ref") and entry.get("path") is None:
        return None  # a values-only source: read by another source's Helm rendering
    if entry.get("plugin"):
        notes.append(f"{label} uses a config management plugin: its output is not read")
        return None
    directory = _mapping(entry.get("directory"))
    if directory.get("jsonnet"):
        notes.append(f"{label}: directory.jsonnet is not evaluated; .jsonnet files are not read")
    options = [key for key in _KUSTOMIZE_OPTIONS if _mapping(entry.get("kustomize")).get(key)]
    if options:
        notes.append(
            f"{label}: kustomize options ({', '.join(options)}) are not applied; the directory "
            "is read as kubectl kustomize renders it"
        )
    if entry.get("helm"):
        notes.append(f"{label}: helm parameters are not applied (charts are not rendered)")
    revision = synced if synced and _SHA.match(synced) else None
    return Source(
        repository=url,
        path=str(entry.get("path") or ""),
        revision=revision or _text(entry.get("targetRevision")) or "HEAD",
        recurse=bool(directory.get("recurse", False)),
        include=_text(directory.get("include")),
        exclude=_text(directory.get("exclude")),
        namespace=namespace,
    )


def _flux(
    kustomization: Mapping[str, Any],
    repositories: Mapping[tuple[str, str], Mapping[str, Any]],
) -> Managed:
    owner = ObjectRef.of(kustomization)
    spec = _mapping(kustomization.get("spec"))
    status = _mapping(kustomization.get("status"))
    notes: list[str] = []
    managed = frozenset(
        ref
        for entry in _mapping(status.get("inventory")).get("entries") or []
        if isinstance(entry, Mapping)
        and (ref := parse_inventory_id(str(entry.get("id") or ""))) is not None
    )
    reference = _mapping(spec.get("sourceRef"))
    kind = str(reference.get("kind") or "GitRepository")
    namespace = _text(reference.get("namespace")) or owner.namespace
    name = str(reference.get("name") or "")
    sources: list[Source] = []
    repository = repositories.get((namespace, name))
    if kind != "GitRepository":
        notes.append(f"spec.sourceRef is the {kind} {namespace}/{name}: only Git sources are read")
    elif repository is None:
        notes.append(f"spec.sourceRef names the GitRepository {namespace}/{name}, not found")
    else:
        revision = parse_flux_revision(_text(status.get("lastAppliedRevision")))
        artifact = _mapping(_mapping(repository.get("status")).get("artifact"))
        revision = revision or parse_flux_revision(_text(artifact.get("revision")))
        source = _flux_source(repository, revision=revision, spec=spec, notes=notes)
        if source is not None:
            sources.append(source)
    used = [key for key in _FLUX_OPTIONS if spec.get(key)]
    if used:
        notes.append(
            f"spec.{', spec.'.join(used)} not applied: fields they set or change will differ"
        )
    destination = "spec.kubeConfig" if spec.get("kubeConfig") else None
    return Managed("flux", owner, tuple(sources), managed, destination, tuple(notes))


def _flux_source(
    repository: Mapping[str, Any],
    *,
    revision: str | None,
    spec: Mapping[str, Any],
    notes: list[str],
) -> Source | None:
    repo_spec = _mapping(repository.get("spec"))
    url = _text(repo_spec.get("url"))
    where = f"GitRepository {ObjectRef.of(repository).namespace}/{ObjectRef.of(repository).name}"
    if url is None:
        notes.append(f"the {where} has no spec.url")
        return None
    if revision is None:
        ref = _mapping(repo_spec.get("ref"))
        if _text(ref.get("semver")) and not any(ref.get(k) for k in ("commit", "name")):
            notes.append(
                f"the {where} follows the semver range {ref['semver']!r} and records no "
                "applied revision: not read"
            )
            return None
        revision = (
            _text(ref.get("commit"))
            or _text(ref.get("name"))
            or _text(ref.get("tag"))
            or _text(ref.get("branch"))
            or "master"
        )
    path = str(spec.get("path") or "")
    return Source(
        repository=url,
        path=path[2:] if path.startswith("./") else path,
        revision=revision,
        recurse=True,
        target_namespace=_text(spec.get("targetNamespace")),
    )


def parse_flux_revision(value: str | None) -> str | None:
    """The commit SHA of a Flux revision: ``main@sha1:<sha>``, ``v1.0.0@sha1:<sha>``,
    ``sha1:<sha>`` (a commit reference), ``refs/heads/main@sha1:<sha>``, or ``main/<sha>``
    (Flux before 2.0); ``None`` for anything else."""
    if not value:
        return None
    digest = value.rpartition("@")[2]
    algorithm, _, sha = digest.partition(":")
    if sha and algorithm in ("sha1", "sha256") and _SHA.match(sha):
        return sha
    legacy = value.rpartition("/")[2]
    return legacy if _SHA.match(legacy) else None


def parse_inventory_id(value: str) -> ObjectRef | None:
    """A Flux inventory id (``default_podinfo_apps_Deployment``; ``_podinfo__Namespace`` for a
    cluster-scoped core object) as an ``ObjectRef``; ``None`` when it is not one. The name may
    hold ``__``, which stands for ``:`` (RBAC names such as ``system:reader``)."""
    namespace, separator, rest = value.partition("_")
    if not separator:
        return None
    rest, separator, kind = rest.rpartition("_")
    if not separator or not kind:
        return None
    name, separator, group = rest.rpartition("_")
    if not separator or not name:
        return None
    if name.endswith("_"):  # the group was empty and the name held a "__": re-split
        return None
    name = name.replace("__", ":")
    if "_" in name:
        return None
    return ObjectRef(group=group, kind=kind, namespace=namespace, name=name)


def parse_tracking_id(value: str) -> tuple[str, ObjectRef] | None:
    """Argo CD's tracking annotation ``<app>:<group>/<kind>:<namespace>/<name>`` as the
    application's name and the object it names; ``None`` when it is not in that format."""
    parts = value.split(":", 2)
    if len(parts) != 3:
        return None
    app, group_kind, where = parts
    group_parts = group_kind.split("/")
    where_parts = where.split("/")
    if len(group_parts) != 2 or len(where_parts) != 2 or not app:
        return None
    return app, ObjectRef(group_parts[0], group_parts[1], where_parts[0], where_parts[1])


def owner_of(body: Mapping[str, Any], managed: Sequence[Managed]) -> Managed | None:
    """Which of ``managed`` owns the live object ``body`` (see the module's documentation for
    the order of the evidence); ``None`` when none does."""
    ref = ObjectRef.of(body)
    for candidate in managed:
        if ref in candidate.objects:
            return candidate
    metadata = _mapping(body.get("metadata"))
    annotations = _mapping(metadata.get("annotations"))
    labels = _mapping(metadata.get("labels"))
    tracking = parse_tracking_id(str(annotations.get(ARGOCD_TRACKING_ANNOTATION) or ""))
    if tracking is not None:
        app, named = tracking
        same = (named.group, named.kind, named.name) == (ref.group, ref.kind, ref.name) and (
            named.namespace == ref.namespace or not ref.namespace
        )
        if same and (found := _argocd_named(app, managed)) is not None:
            return found
    instance = _text(labels.get(ARGOCD_INSTANCE_LABEL))
    if instance is not None and (found := _argocd_named(instance, managed)) is not None:
        return found
    flux_name = _text(labels.get(FLUX_NAME_LABEL))
    flux_namespace = _text(labels.get(FLUX_NAMESPACE_LABEL))
    if flux_name and flux_namespace:
        for candidate in managed:
            if candidate.tool == "flux" and (
                candidate.owner.namespace,
                candidate.owner.name,
            ) == (flux_namespace, flux_name):
                return candidate
    return None


def _argocd_named(app: str, managed: Sequence[Managed]) -> Managed | None:
    for candidate in managed:
        if candidate.tool != "argocd":
            continue
        owner = candidate.owner
        if app in (owner.name, f"{owner.namespace}_{owner.name}"):
            return candidate
    return None
