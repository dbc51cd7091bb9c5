"""The values of the desired state: where to read it (``Source``), what was read
(``DesiredSet`` of ``DesiredObject``, each with its ``Origin``), what was passed over
(``Skipped``), and how an object is named across Git, Argo CD and Flux (``ObjectRef``).

Pure values, no I/O. May import: the standard library.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DesiredObject",
    "DesiredSet",
    "ObjectRef",
    "Origin",
    "Skipped",
    "Source",
    "redacted",
]


def redacted(repository: str) -> str:
    """``repository`` as messages and origins show it: the password or token of an
    ``https://user:token@host/...`` URL replaced by ``***`` (it must never reach a log)."""
    scheme, separator, rest = repository.partition("://")
    if not separator:
        return repository
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if not at or ":" not in userinfo:
        return repository
    user = userinfo.split(":", 1)[0]
    return f"{scheme}://{user}:***@{host}{slash}{path}"


@dataclass(frozen=True, slots=True, order=True)
class ObjectRef:
    """An object's identity as GitOps tools record it: API group (``""`` for the core group),
    kind, namespace (``""`` for a cluster-scoped object, or one whose manifest names none) and
    name. The version is not part of it (the API server serves one object under every version
    of its group), as in Argo CD's ``status.resources`` and Flux's inventory."""

    group: str
    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, body: Mapping[str, Any]) -> ObjectRef:
        """The reference of an object body (``apiVersion: apps/v1`` -> group ``apps``)."""
        api_version = str(body.get("apiVersion") or "")
        metadata = body.get("metadata")
        meta: Mapping[str, Any] = metadata if isinstance(metadata, Mapping) else {}
        return cls(
            group=api_version.rpartition("/")[0],
            kind=str(body.get("kind") or ""),
            namespace=str(meta.get("namespace") or ""),
            name=str(meta.get("name") or ""),
        )

    def in_namespace(self, namespace: str) -> ObjectRef:
        """The same reference in ``namespace`` (for an object whose manifest names none)."""
        return ObjectRef(self.group, self.kind, namespace, self.name)

    def __str__(self) -> str:
        kind = f"{self.kind}.{self.group}" if self.group else self.kind
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{kind} {where}{self.name}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Source:
    """Where a desired state is: a Git ``repository`` (a local path, the work tree or any
    directory in it, or a URL: ``https://``, ``ssh://``, ``git@host:org/repo``, ``file://``),
    a ``path`` inside it (``""`` or ``"."``: its root), a ``revision`` (a branch, a tag, a
    commit SHA, ``HEAD``; ``None`` means ``HEAD``; the tree *committed* at that revision is read,
    never the work tree). A local ``repository`` that is not in a Git repository at all is read
    from disk as it is, and then takes no revision.

    ``recurse`` reads the subdirectories of ``path`` too (Flux always does; Argo CD when
    ``spec.source.directory.recurse`` is true); ``include``/``exclude`` are Argo CD's globs on
    the file's path below ``path`` (``*`` crosses ``/``; ``{a,b}`` alternatives; ``exclude`` wins).

    ``namespace`` is where an object whose manifest names no namespace goes (Argo CD's
    ``spec.destination.namespace``, ``kubectl apply -n``); ``target_namespace`` overrides every
    namespaced object's namespace (Flux's ``spec.targetNamespace``). Both are carried, not
    applied: which kinds are namespaced is known to the diff, not to the files."""

    repository: str
    path: str = ""
    revision: str | None = None
    recurse: bool = True
    include: str | None = None
    exclude: str | None = None
    namespace: str | None = None
    target_namespace: str | None = None

    def __str__(self) -> str:
        at = f"@{self.revision}" if self.revision else ""
        path = self.path.strip("/") or "."
        return f"{redacted(self.repository)}{at} {path}"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a desired object was declared: the ``repository`` and ``revision`` as asked, the
    ``commit`` read (``None`` for a directory read from disk), the source's ``path``, the
    ``file`` from the repository's root (for a rendered Kustomize directory: the directory) and
    the ``document`` number in it (1-based; the items of a ``List`` share their list's)."""

    repository: str
    revision: str | None
    commit: str | None
    path: str
    file: str
    document: int
    rendered: bool = False

    def __str__(self) -> str:
        at = f"@{self.commit[:12]}" if self.commit else ""
        what = f"kubectl kustomize {self.file or '.'}" if self.rendered else self.file
        return f"{self.repository}{at}:{what}#{self.document}"


@dataclass(frozen=True, slots=True)
class DesiredObject:
    """One object as Git declares it (``body`` exactly as written, or as Kustomize rendered
    it), and where it comes from."""

    body: dict[str, Any]
    origin: Origin

    @property
    def ref(self) -> ObjectRef:
        """Its identity, namespace as the manifest writes it (``""`` when it names none)."""
        return ObjectRef.of(self.body)

    @property
    def api_version(self) -> str:
        return str(self.body["apiVersion"])

    @property
    def kind(self) -> str:
        return str(self.body["kind"])

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        """``metadata.namespace`` as written, ``None`` when the manifest names none."""
        value = self.body["metadata"].get("namespace")
        return str(value) if value else None


@dataclass(frozen=True, slots=True)
class Skipped:
    """A file (or one document of it) that declared nothing to compare, and why; ``malformed``
    when it was skipped instead of failing because the caller asked so."""

    file: str
    reason: str
    document: int | None = None
    malformed: bool = False

    def __str__(self) -> str:
        where = f"{self.file}#{self.document}" if self.document else self.file
        return f"{where}: {self.reason}"


@dataclass(frozen=True, slots=True)
class DesiredSet:
    """What a source declares at one commit: ``objects`` in file order, ``skipped`` files and
    documents with their reasons, the ``commit`` read (``None`` for a directory on disk), and
    the ``source`` it was read for (its namespaces apply to the objects, see ``Source``)."""

    source: Source
    commit: str | None
    objects: tuple[DesiredObject, ...] = ()
    skipped: tuple[Skipped, ...] = field(default=())
    shallow: bool = False

    def by_ref(self) -> dict[ObjectRef, DesiredObject]:
        """The objects by identity, namespace as written (duplicates were refused on load)."""
        return {item.ref: item for item in self.objects}
