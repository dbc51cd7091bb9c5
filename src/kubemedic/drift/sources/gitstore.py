"""Git, read through one library (pygit2, libgit2's binding): the only module that imports it.

What the rest of ``drift.sources`` needs from Git is small, and it is all here, so that another
library (dulwich was measured against it: bench/README.md, ``git_read.py``) could replace this
module without touching its callers:

* ``Repository.open(path)``: a local repository, from its work tree (or any directory inside it)
  or its git directory, bare or not;
* ``Repository.resolve(revision)``: the commit a revision names: ``HEAD``, a branch (local, or
  ``origin``'s in a clone), a tag (annotated tags peeled to their commit), a full or abbreviated
  commit SHA, or any expression git's rev-parse reads (``main~2``);
* ``Repository.files(commit, under)``: the files of the commit's *tree* below a path, read from
  the object database: the work tree, its uncommitted edits and its untracked files play no part;
* ``Repository.read(oid)`` and ``Repository.materialise(commit, dest)``: a blob's bytes, and the
  whole tree written out as plain files (Kustomize needs a directory);
* ``mirror(url, cache=...)``: a remote repository fetched into a bare cache (branches to
  ``refs/heads``, tags to ``refs/tags``, ``HEAD`` to the remote's default branch), shallow (the
  tips only) where the transport allows it, refreshed on every call; ``deepen`` fetches the
  whole history when a revision is not among the tips.

May import: pygit2, kubemedic.drift.sources.desired and kubemedic.drift.sources.errors.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

import pygit2
from pygit2.enums import CredentialType, FetchPrune

from kubemedic.drift.sources.desired import redacted
from kubemedic.drift.sources.errors import GitError

__all__ = ["LIBRARY", "Repository", "TreeFile", "deepen", "mirror"]

LIBRARY = f"pygit2 {metadata.version('pygit2')} (libgit2 {pygit2.LIBGIT2_VERSION})"
"""The Git library in use and its version, for reports and ``--version`` output."""

_UNSHALLOW = 2_147_483_647  # libgit2's GIT_FETCH_DEPTH_UNSHALLOW
_REGULAR = {pygit2.GIT_FILEMODE_BLOB, pygit2.GIT_FILEMODE_BLOB_EXECUTABLE}


@dataclass(frozen=True, slots=True)
class TreeFile:
    """One entry of a tree below the path asked for: ``path`` from the repository's root (POSIX
    separators), its blob ``oid``, and ``kind``: ``file``, ``link`` (a symbolic link, whose blob
    is its target) or ``submodule`` (a commit of another repository, no content here)."""

    path: str
    oid: str
    kind: str


class Repository:
    """A Git repository opened for reading; ``name`` is how messages call it (the path or URL
    the user gave)."""

    def __init__(self, repo: pygit2.Repository, *, name: str, url: str | None = None) -> None:
        self._repo = repo
        self._url = url  # a mirror's URL as given (credentials included), never shown
        self.name = name

    @classmethod
    def open(cls, path: Path, *, name: str | None = None) -> Repository:
        """The repository at ``path`` or around it (``path`` may be a directory of its work
        tree); ``GitError`` when there is none."""
        label = name or str(path)
        found = pygit2.discover_repository(str(path))
        if found is None:
            raise GitError(f"{label}: not a Git repository (nor inside one)")
        try:
            return cls(pygit2.Repository(found), name=label)
        except pygit2.GitError as error:
            raise GitError(f"{label}: cannot open the Git repository: {error}") from None

    @property
    def root(self) -> Path:
        """The work tree's root (the git directory for a bare repository)."""
        return Path(self._repo.workdir or self._repo.path)

    @property
    def is_shallow(self) -> bool:
        return bool(self._repo.is_shallow)

    def resolve(self, revision: str) -> str:
        """The SHA of the commit ``revision`` names; ``GitError`` when it names none."""
        repo = self._repo
        wanted = revision.strip() or "HEAD"
        candidates = (
            [wanted]
            if wanted == "HEAD" or wanted.startswith("refs/")
            else [f"refs/heads/{wanted}", f"refs/tags/{wanted}", f"refs/remotes/origin/{wanted}"]
        )
        for name in candidates:
            with contextlib.suppress(KeyError, pygit2.GitError, ValueError):
                target = repo.revparse_single(name)
                return str(target.peel(pygit2.Commit).id)
        try:
            target = repo.revparse_single(wanted)
            return str(target.peel(pygit2.Commit).id)
        except (KeyError, pygit2.GitError, ValueError, pygit2.InvalidSpecError):
            pass
        if wanted == "HEAD" and repo.head_is_unborn:
            raise GitError(f"{self.name}: HEAD names no commit (an empty repository)")
        raise GitError(
            f"{self.name}: no revision {revision!r} (no branch, tag or commit of that name"
            + (" among the fetched tips" if repo.is_shallow else "")
            + ")"
        )

    def _tree_at(self, commit: str, under: str) -> pygit2.Tree:
        tree = self._repo[commit].peel(pygit2.Tree)
        part = _clean(under)
        if not part:
            return tree
        try:
            entry = tree[part]
        except KeyError:
            raise GitError(
                f"{self.name}@{commit[:12]}: no path {under!r} in the tree at that revision"
            ) from None
        if not isinstance(entry, pygit2.Tree):
            raise GitError(f"{self.name}@{commit[:12]}: {under!r} is a file, not a directory")
        return entry

    def files(self, commit: str, under: str = "") -> list[TreeFile]:
        """Every entry below ``under`` in the commit's tree, recursively, sorted by path."""
        base = _clean(under)
        found: list[TreeFile] = []
        stack: list[tuple[str, pygit2.Tree]] = [(base, self._tree_at(commit, under))]
        while stack:
            prefix, tree = stack.pop()
            for entry in tree:
                path = f"{prefix}/{entry.name}" if prefix else str(entry.name)
                mode = entry.filemode
                if mode == pygit2.GIT_FILEMODE_TREE:
                    stack.append((path, self._repo[entry.id].peel(pygit2.Tree)))
                elif mode in _REGULAR:
                    found.append(TreeFile(path, str(entry.id), "file"))
                elif mode == pygit2.GIT_FILEMODE_LINK:
                    found.append(TreeFile(path, str(entry.id), "link"))
                else:
                    found.append(TreeFile(path, str(entry.id), "submodule"))
        found.sort(key=lambda item: item.path)
        return found

    def read(self, oid: str) -> bytes:
        """The content of a blob."""
        blob = self._repo[oid]
        if not isinstance(blob, pygit2.Blob):
            raise GitError(f"{self.name}: {oid} is not a file's content")
        return bytes(blob.data)

    def materialise(self, commit: str, dest: Path) -> None:
        """Write every regular file of the commit's tree under ``dest`` (created), as a checkout
        would, without touching the repository's work tree or index. Symbolic links and
        submodules are left out: nothing read from them can point outside ``dest``."""
        for item in self.files(commit):
            if item.kind != "file":
                continue
            target = dest.joinpath(*PurePosixPath(item.path).parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(self.read(item.oid))


def _clean(path: str) -> str:
    """A path inside a repository, normalised (``./apps/`` -> ``apps``); ``GitError`` for one
    that leaves it."""
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in (".", "/")]
    if ".." in parts:
        raise GitError(f"path {path!r} leaves the repository (it contains '..')")
    return "/".join(parts)


def _cache_key(url: str) -> str:
    digest = hashlib.sha256(url.encode()).hexdigest()[:16]
    tail = re.sub(r"[^A-Za-z0-9._-]+", "-", url.rstrip("/").rsplit("/", 1)[-1])[:40].strip("-.")
    return f"{tail or 'repository'}-{digest}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One fetch of a cached repository at a time, across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def mirror(url: str, *, cache: Path, shallow: bool = True) -> Repository:
    """``url`` fetched into a bare repository under ``cache`` (one per URL, created on first
    use) and refreshed now: branches and tags as the remote has them (deleted ones pruned),
    ``HEAD`` pointing at the remote's default branch. ``shallow`` fetches the tips only where
    the transport supports it (libgit2's local ``file://`` transport does not: it fetches the
    whole history, which costs nothing there). ``GitError`` when the remote cannot be read."""
    shown = redacted(url)
    stored = shown.replace(":***@", "@")  # the cache's config keeps no password
    git_dir = cache / f"{_cache_key(stored)}.git"
    with _locked(cache / f"{_cache_key(stored)}.lock"):
        try:
            if (git_dir / "HEAD").exists():
                repo = pygit2.Repository(str(git_dir))
                remote = repo.remotes["origin"]
            else:
                repo = pygit2.init_repository(str(git_dir), bare=True)
                remote = repo.remotes.create("origin", stored, "+refs/heads/*:refs/heads/*")
                repo.remotes.add_fetch("origin", "+refs/tags/*:refs/tags/*")
                remote = repo.remotes["origin"]
            _fetch(remote, url=url, depth=1 if shallow and not url.startswith("file:") else 0)
            _point_head(repo, remote, url=url)
        except pygit2.GitError as error:
            problem = str(error).replace(url, shown)
            raise GitError(f"{shown}: cannot fetch the repository: {problem}") from None
        return Repository(repo, name=shown, url=url)


def deepen(repository: Repository) -> Repository:
    """Fetch the whole history of a shallow mirror (a revision asked for is not a tip)."""
    repo = repository._repo
    if not repo.is_shallow:
        return repository
    name, url = repository.name, repository._url or repository.name
    try:
        _fetch(repo.remotes["origin"], url=url, depth=_UNSHALLOW)
    except pygit2.GitError as error:
        problem = str(error).replace(url, name)
        raise GitError(f"{name}: cannot fetch the repository's history: {problem}") from None
    return Repository(pygit2.Repository(repo.path), name=name, url=url)


class _Credentials(pygit2.RemoteCallbacks):
    """What libgit2 asks for when a remote wants credentials: the user and password written in
    an ``https://user:token@host/...`` URL, or the keys of the running SSH agent
    (``SSH_AUTH_SOCK``) for ``ssh://`` and ``git@host:`` URLs. Nothing is stored."""

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url

    def credentials(
        self, url: str, username_from_url: str | None, allowed_types: CredentialType
    ) -> pygit2.Username | pygit2.UserPass | pygit2.Keypair:
        if allowed_types & CredentialType.SSH_KEY:
            return pygit2.KeypairFromAgent(username_from_url or "git")
        parts = urlsplit(self._url)
        if allowed_types & CredentialType.USERPASS_PLAINTEXT and parts.username:
            return pygit2.UserPass(unquote(parts.username), unquote(parts.password or ""))
        if allowed_types & CredentialType.USERNAME and username_from_url:
            return pygit2.Username(username_from_url)
        raise pygit2.Passthrough  # libgit2 goes on as if there were no callback


def _fetch(remote: pygit2.Remote, *, url: str, depth: int) -> None:
    callbacks = _Credentials(url)
    try:
        remote.fetch(prune=FetchPrune.PRUNE, depth=depth, callbacks=callbacks)
    except pygit2.GitError as error:
        if depth and "shallow" in str(error).lower():  # a transport without shallow fetches
            remote.fetch(prune=FetchPrune.PRUNE, callbacks=callbacks)
            return
        raise


def _point_head(repo: pygit2.Repository, remote: pygit2.Remote, *, url: str) -> None:
    """Make ``HEAD`` the remote's default branch, as ``git clone --bare`` does."""
    for head in remote.list_heads(callbacks=_Credentials(url)):
        if head.name == "HEAD" and head.symref_target:
            target = str(head.symref_target)
            if target in repo.references:
                repo.set_head(target)
            return
