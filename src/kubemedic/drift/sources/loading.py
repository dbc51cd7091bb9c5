"""Reading a ``Source``: the repository opened or fetched, the revision resolved to a commit, the
commit's tree walked below the source's path, manifests parsed and Kustomize directories
rendered, every object tagged with its origin.

The walk, as the GitOps tools do it:

* a directory with a ``kustomization.yaml`` (``.yml``, ``Kustomization``) is rendered with
  ``kubectl kustomize`` as one unit, its files not read one by one: the source's own directory
  (Argo CD's and Flux's Kustomize applications) or, when recursing, any directory below it
  (Flux renders nested Kustomize directories the same way);
* a directory with a ``Chart.yaml`` is a Helm chart: skipped whole, with that reason (kubemedic
  does not render charts);
* directories whose names start with ``.`` (``.git``, ``.github``) are skipped;
* other files are read when their names end in ``.yaml``, ``.yml`` or ``.json``
  (``manifests.parse_manifest``) and pass the include/exclude globs; the rest are listed as
  skipped with a reason, like symbolic links (not followed) and submodules.

An object declared twice (same group, kind, namespace and name) is a ``ManifestError`` naming
both places, as Argo CD refuses it; with ``skip_malformed`` the second is skipped instead, and
a malformed file (or a Kustomize directory kubectl fails on) becomes a ``Skipped`` entry
carrying the error's message. A missing kubectl is never skipped: it would drop every Kustomize
directory at once.

May import: kubemedic.drift.sources' modules and kubemedic.model.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kubemedic.drift.sources import gitstore, kustomizing, manifests
from kubemedic.drift.sources.desired import (
    DesiredObject,
    DesiredSet,
    ObjectRef,
    Origin,
    Skipped,
    Source,
    redacted,
)
from kubemedic.drift.sources.errors import (
    GitError,
    KubectlMissingError,
    ManifestError,
    SourceError,
)

__all__ = ["default_cache", "is_url", "load", "matches_glob"]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[\w.-]+@[\w.-]+:")
_CHART = "Chart.yaml"


def is_url(repository: str) -> bool:
    """Whether ``repository`` is a URL to fetch (``https://``, ``ssh://``, ``file://``,
    ``git@host:org/repo``) rather than a local path."""
    return bool(_URL.match(repository))


def default_cache() -> Path:
    """Where fetched repositories are kept: ``$KUBEMEDIC_GIT_CACHE``, else
    ``$XDG_CACHE_HOME/kubemedic/git``, else ``~/.cache/kubemedic/git``."""
    if explicit := os.environ.get("KUBEMEDIC_GIT_CACHE"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kubemedic" / "git"


def matches_glob(pattern: str, path: str) -> bool:
    """Argo CD's ``directory.include``/``exclude`` match: the whole ``path`` (below the
    application's path) against ``pattern``, where ``*`` matches any run of characters
    including ``/``, ``?`` one character, ``[...]`` a class and ``{a,b}`` either alternative."""
    return _compiled(pattern).fullmatch(path) is not None


def _compiled(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(char))
            else:
                inner = pattern[i + 1 : end]
                out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner) + "]")
                i = end
        elif char == "{":
            depth += 1
            out.append("(?:")
        elif char == "}" and depth:
            depth -= 1
            out.append(")")
        elif char == "," and depth:
            out.append("|")
        elif char == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(char))
        i += 1
    out.extend(")" * depth)
    return re.compile("".join(out), re.DOTALL)


class _DiskTree:
    """A directory read from disk as it is (not a Git repository)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def files(self, under: str) -> list[gitstore.TreeFile]:
        base = self.root.joinpath(*PurePosixPath(under).parts) if under else self.root
        if not base.is_dir():
            raise SourceError(f"{self.root}: no directory {under or '.'!r}")
        found: list[gitstore.TreeFile] = []
        for folder, dirs, names in os.walk(base, followlinks=False):
            here = Path(folder)
            for name in [*names, *(d for d in dirs if (here / d).is_symlink())]:
                full = here / name
                path = full.relative_to(self.root).as_posix()
                kind = "link" if full.is_symlink() else "file"
                found.append(gitstore.TreeFile(path, str(full), kind))
        found.sort(key=lambda item: item.path)
        return found

    def read(self, oid: str) -> bytes:
        return Path(oid).read_bytes()


@dataclass
class _Walk:
    source: Source
    repository: str
    commit: str | None
    read: Callable[[str], bytes]
    checkout: Callable[[], Path]
    kubectl: str
    timeout: float
    skip_malformed: bool
    objects: list[DesiredObject] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    seen: dict[ObjectRef, Origin] = field(default_factory=dict)

    def origin(self, file: str, document: int, *, rendered: bool = False) -> Origin:
        return Origin(
            repository=self.repository,
            revision=self.source.revision,
            commit=self.commit,
            path=self.source.path,
            file=file,
            document=document,
            rendered=rendered,
        )

    def where(self, file: str) -> str:
        at = f"@{self.commit[:12]}" if self.commit else ""
        return f"{self.repository}{at}:{file}"

    def keep(self, body: dict[str, Any], origin: Origin) -> None:
        item = DesiredObject(body, origin)
        ref = item.ref
        first = self.seen.get(ref)
        if first is not None:
            message = f"{ref} is declared twice: in {first} and in {origin}"
            if not self.skip_malformed:
                raise ManifestError(message)
            self.skipped.append(Skipped(origin.file, message, origin.document, malformed=True))
            return
        self.seen[ref] = origin
        self.objects.append(item)

    def manifest(self, entry: gitstore.TreeFile) -> None:
        name = PurePosixPath(entry.path).name
        try:
            parsed = manifests.parse_manifest(
                self.read(entry.oid), where=self.where(entry.path), name=name
            )
        except SourceError as error:
            if not self.skip_malformed:
                raise
            self.skipped.append(Skipped(entry.path, str(error), malformed=True))
            return
        if parsed.skip_reason is not None:
            self.skipped.append(Skipped(entry.path, parsed.skip_reason))
            return
        for number, reason in parsed.skipped:
            self.skipped.append(Skipped(entry.path, reason, number))
        for number, body in parsed.objects:
            self.keep(body, self.origin(entry.path, number))

    def kustomize(self, directory: str) -> None:
        label = self.where(directory or ".")
        try:
            folder = self.checkout().joinpath(*PurePosixPath(directory).parts)
            text = kustomizing.render(
                folder, label=label, kubectl=self.kubectl, timeout=self.timeout
            )
            parsed = manifests.parse_rendered(text, where=f"kubectl kustomize {label}")
        except KubectlMissingError:
            raise  # not a malformed directory: every Kustomize directory would be lost
        except SourceError as error:
            if not self.skip_malformed:
                raise
            self.skipped.append(Skipped(directory or ".", str(error), malformed=True))
            return
        for number, reason in parsed.skipped:
            self.skipped.append(Skipped(directory or ".", reason, number))
        for number, body in parsed.objects:
            self.keep(body, self.origin(directory, number, rendered=True))


def load(
    source: Source,
    *,
    cache: Path | None = None,
    kubectl: str = "kubectl",
    timeout: float = kustomizing.DEFAULT_TIMEOUT,
    skip_malformed: bool = False,
) -> DesiredSet:
    """Everything ``source`` declares at its revision. A URL is fetched into ``cache``
    (``default_cache()`` when ``None``) first, refreshed on every call. ``kubectl`` is run for
    Kustomize directories, each within ``timeout`` seconds. Errors are ``SourceError``s (an
    ``InputError``: exit status 2): ``GitError``, ``ManifestError`` (unless ``skip_malformed``),
    ``KustomizeError``, ``KubectlMissingError``."""
    with _opened(source, cache=cache) as tree:
        walk = _Walk(
            source=source,
            repository=redacted(source.repository),
            commit=tree.commit,
            read=tree.read,
            checkout=tree.checkout,
            kubectl=kubectl,
            timeout=timeout,
            skip_malformed=skip_malformed,
        )
        _walk(walk, under=tree.under, entries=tree.entries)
        return DesiredSet(
            source=source,
            commit=tree.commit,
            objects=tuple(walk.objects),
            skipped=tuple(walk.skipped),
            shallow=tree.shallow,
        )


@dataclass(frozen=True)
class _Tree:
    """What ``_opened`` gives: the commit (``None`` on disk), the path below the root, the
    entries there, a blob reader, the whole tree on disk (materialised on first use) and
    whether the repository is a shallow mirror."""

    commit: str | None
    under: str
    entries: list[gitstore.TreeFile]
    read: Callable[[str], bytes]
    checkout: Callable[[], Path]
    shallow: bool = False


@contextmanager
def _opened(source: Source, *, cache: Path | None) -> Iterator[_Tree]:
    """The tree ``source`` names; a materialised copy is removed on leaving."""
    under = _clean(source.path)
    with tempfile.TemporaryDirectory(prefix="kubemedic-tree-") as scratch:
        if is_url(source.repository):
            repo = gitstore.mirror(source.repository, cache=cache or default_cache())
            repo, commit = _resolve(repo, source.revision, remote=True)
        else:
            local = Path(source.repository).expanduser()
            if not local.exists():
                raise GitError(f"{source.repository}: no such directory")
            try:
                repo = gitstore.Repository.open(local, name=source.repository)
            except GitError:
                if source.revision not in (None, ""):
                    raise GitError(
                        f"{source.repository}: not a Git repository, so it has no revision "
                        f"{source.revision!r} (leave the revision out to read the files on disk)"
                    ) from None
                disk = _DiskTree(local)
                yield _Tree(None, under, disk.files(under), disk.read, lambda: local)
                return
            inside = _inside(repo, local)
            under = "/".join(part for part in (inside, under) if part)
            repo, commit = _resolve(repo, source.revision, remote=False)
        entries = repo.files(commit, under)
        materialised: list[Path] = []

        def checkout() -> Path:
            if not materialised:
                target = Path(scratch) / "tree"
                repo.materialise(commit, target)
                materialised.append(target)
            return materialised[0]

        yield _Tree(commit, under, entries, repo.read, checkout, repo.is_shallow)


def _inside(repo: gitstore.Repository, local: Path) -> str:
    """Where ``local`` is below the repository's root (``""`` at the root or in a bare one)."""
    try:
        relative = local.resolve().relative_to(repo.root.resolve()).as_posix()
    except ValueError:
        return ""
    return "" if relative == "." else relative


def _resolve(
    repo: gitstore.Repository, revision: str | None, *, remote: bool
) -> tuple[gitstore.Repository, str]:
    """The commit ``revision`` names; a shallow mirror is deepened once when it is not a tip."""
    try:
        return repo, repo.resolve(revision or "HEAD")
    except GitError:
        if not (remote and repo.is_shallow):
            raise
    deeper = gitstore.deepen(repo)
    return deeper, deeper.resolve(revision or "HEAD")


def _clean(path: str) -> str:
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in (".", "/")]
    if ".." in parts:
        raise SourceError(f"path {path!r} leaves the repository (it contains '..')")
    return "/".join(parts)


def _walk(walk: _Walk, *, under: str, entries: list[gitstore.TreeFile]) -> None:
    by_dir: dict[str, list[gitstore.TreeFile]] = {}
    for entry in entries:
        by_dir.setdefault(entry.path.rpartition("/")[0], []).append(entry)
    units: dict[str, str] = {}  # directory -> "kustomize" | "chart"
    for folder, files in by_dir.items():
        names = {PurePosixPath(item.path).name for item in files if item.kind == "file"}
        if any(name in names for name in manifests.KUSTOMIZATION_FILES):
            units[folder] = "kustomize"
        elif _CHART in names:
            units[folder] = "chart"
    if units.get(under) == "kustomize":
        walk.kustomize(under)
        return
    claimed: set[str] = set()
    for entry in entries:
        relative = _below(entry.path, under)
        folder = entry.path.rpartition("/")[0]
        unit = _unit_of(folder, units, under)
        if unit is not None:
            if unit in claimed:
                continue
            claimed.add(unit)
            if not walk.source.recurse and unit != under:
                continue
            if units[unit] == "chart":
                walk.skipped.append(
                    Skipped(unit or ".", "a Helm chart (Chart.yaml): charts are not rendered")
                )
            else:
                walk.kustomize(unit)
            continue
        hidden = _hidden_part(relative)
        if hidden is not None:
            prefix = "/".join(p for p in (under, hidden) if p)
            if prefix not in claimed:
                claimed.add(prefix)
                walk.skipped.append(Skipped(prefix, "a hidden directory, not read"))
            continue
        if not walk.source.recurse and "/" in relative:
            continue
        if walk.source.exclude and matches_glob(walk.source.exclude, relative):
            continue
        if walk.source.include and not matches_glob(walk.source.include, relative):
            continue
        if entry.kind == "link":
            walk.skipped.append(Skipped(entry.path, "a symbolic link, not followed"))
        elif entry.kind == "submodule":
            walk.skipped.append(Skipped(entry.path, "a submodule (another repository), not read"))
        elif not manifests.is_manifest_name(entry.path):
            walk.skipped.append(Skipped(entry.path, "not a .yaml, .yml or .json file"))
        else:
            walk.manifest(entry)


def _below(path: str, under: str) -> str:
    return path[len(under) + 1 :] if under else path


def _unit_of(folder: str, units: dict[str, str], under: str) -> str | None:
    """The outermost Kustomize or chart directory (at or below ``under``) holding ``folder``."""
    parts = PurePosixPath(folder).parts if folder else ()
    start = len(PurePosixPath(under).parts) if under else 0
    for depth in range(start, len(parts) + 1):
        candidate = "/".join(parts[:depth])
        if candidate in units:
            return candidate
    return None


def _hidden_part(relative: str) -> str | None:
    """The first directory of ``relative`` whose name starts with ``.``, as a path prefix."""
    parts = PurePosixPath(relative).parts[:-1]
    for index, part in enumerate(parts):
        if part.startswith("."):
            return "/".join(parts[: index + 1])
    return None
