"""The Git repository a scenario's GitOps applier syncs from, read and written with pygit2.

The simulator's own small use of Git (it may not import ``kubemedic.drift``, a sibling layer):

* :meth:`GitRepository.create` makes a repository with a work tree at an empty or new
  directory (``sim run --git-out``), its ``HEAD`` on the branch followed;
  :meth:`GitRepository.open` opens an existing one (``sim run --git``).
* :meth:`GitRepository.commit` commits as a person at that work tree would: the files are
  written (or removed), added to the index and committed on the branch ``HEAD`` is on, with the
  author and the time given (the cluster's clock), so the history reads as the story's pushes.
* :meth:`GitRepository.head` is the commit a branch names now, read from the references on
  every call: a commit made meanwhile by someone else (``git commit`` in the work tree, a push
  to it) is seen at once. :meth:`GitRepository.manifests` reads the objects of that commit's
  *tree* below a path (``.yaml``, ``.yml`` and ``.json`` files, multi-document YAML, as an Argo
  CD directory application reads them), never the work tree.

Errors are :class:`GitOpsError` (a ``LookupError``, so the timeline records it as a refused
action and the story goes on).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import pygit2
import yaml

from kubemedic.model import documents

__all__ = ["GitOpsError", "GitRepository", "dump_file"]

_MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


class GitOpsError(LookupError):
    """The repository cannot be read or written (no such branch, a malformed manifest...)."""


def dump_file(content: object) -> str:
    """A commit's file as text: manifests as multi-document YAML, text as it is."""
    if isinstance(content, str):
        return content
    listed = content if isinstance(content, list) else [content]
    return "---\n".join(yaml.safe_dump(item, sort_keys=False) for item in listed)


def _signature(author: str, when: datetime) -> pygit2.Signature:
    name, _, email = author.partition("<")
    return pygit2.Signature(name.strip(), email.rstrip(">").strip(), int(when.timestamp()), 0)


class GitRepository:
    """A repository with a work tree; ``branch`` is the one the applier follows."""

    def __init__(self, repo: pygit2.Repository, *, branch: str) -> None:
        self._repo = repo
        self.branch = branch

    @classmethod
    def create(cls, path: Path, *, branch: str) -> GitRepository:
        """A new repository at ``path`` (created, or an empty directory); ``GitOpsError``
        when ``path`` holds anything."""
        if path.exists() and (not path.is_dir() or any(path.iterdir())):
            raise GitOpsError(f"{path}: not an empty directory")
        path.mkdir(parents=True, exist_ok=True)
        return cls(pygit2.init_repository(str(path), initial_head=branch), branch=branch)

    @classmethod
    def open(cls, path: Path, *, branch: str) -> GitRepository:
        found = pygit2.discover_repository(str(path))
        if found is None:
            raise GitOpsError(f"{path}: not a Git repository")
        return cls(pygit2.Repository(found), branch=branch)

    @property
    def root(self) -> Path:
        """The work tree's root (the git directory of a bare repository)."""
        return Path(self._repo.workdir or self._repo.path).resolve()

    def head(self) -> str | None:
        """The commit the branch (or tag, or any revision) names now; None when it names none
        (an empty repository)."""
        for name in (f"refs/heads/{self.branch}", f"refs/tags/{self.branch}", self.branch):
            with contextlib.suppress(KeyError, ValueError, pygit2.GitError):
                return str(self._repo.revparse_single(name).peel(pygit2.Commit).id)
        return None

    def commit(
        self, files: Mapping[str, object], *, message: str, author: str, when: datetime
    ) -> str:
        """Write ``files`` into the work tree (None removes one), add them and commit on the
        branch; the new commit's SHA."""
        repo = self._repo
        if repo.workdir is None:
            raise GitOpsError(f"{self.root}: a bare repository has no work tree to commit from")
        if not repo.head_is_unborn and repo.head.shorthand != self.branch:
            raise GitOpsError(
                f"{self.root}: the work tree is on {repo.head.shorthand}, not {self.branch}"
            )
        index = repo.index
        index.read()
        for relative, content in files.items():
            target = Path(repo.workdir) / relative
            if content is None:
                target.unlink(missing_ok=True)
                with contextlib.suppress(OSError, KeyError):
                    index.remove(relative)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(dump_file(content))
            index.add(relative)
        index.write()
        tree = index.write_tree()
        parents = [] if repo.head_is_unborn else [repo.head.target]
        signature = _signature(author, when)
        return str(repo.create_commit("HEAD", signature, signature, message, tree, parents))

    def manifests(
        self, commit: str, path: str, *, recurse: bool
    ) -> list[tuple[str, dict[str, Any]]]:
        """Every object under ``path`` in ``commit``'s tree: ``(file, object)`` in file order
        (``GitOpsError`` for a missing path or a malformed file)."""
        tree = self._repo[commit].peel(pygit2.Tree)
        under = path.strip("/")
        if under and under != ".":
            try:
                entry = tree[under]
            except KeyError:
                raise GitOpsError(f"{commit[:7]}: no directory {under!r}") from None
            tree = self._repo[entry.id].peel(pygit2.Tree)
        else:
            under = ""
        out: list[tuple[str, dict[str, Any]]] = []
        for name, blob in self._files(tree, under, recurse=recurse):
            text = blob.data.decode("utf-8", errors="replace")
            try:
                if name.endswith(".json"):
                    loaded = [documents.load_json(text, where=name)]
                else:
                    loaded = documents.load_yaml_all(text, where=name)
            except documents.DocumentError as error:
                raise GitOpsError(str(error)) from None
            for item in loaded:
                if isinstance(item, dict) and item.get("apiVersion") and item.get("kind"):
                    out.append((name, item))
        return out

    def _files(
        self, tree: pygit2.Tree, prefix: str, *, recurse: bool
    ) -> Iterator[tuple[str, pygit2.Blob]]:
        for entry in sorted(tree, key=lambda e: e.name or ""):
            name = f"{prefix}/{entry.name}" if prefix else str(entry.name)
            obj = self._repo[entry.id]
            if isinstance(obj, pygit2.Tree):
                if recurse:
                    yield from self._files(obj, name, recurse=True)
            elif isinstance(obj, pygit2.Blob) and name.endswith(_MANIFEST_SUFFIXES):
                yield name, obj
