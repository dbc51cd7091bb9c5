"""The desired state, read from Git: what a GitOps tool applies, object by object, with where each
object is declared.

    from kubemedic.drift import sources

    desired = sources.load(sources.Source(repository="https://git.example/ops.git",
                                          path="apps/web", revision="main"))
    desired.objects     # DesiredObject(body, origin), in file order
    desired.skipped     # Skipped(file, reason): README.md, values.yaml, Chart.yaml dirs...

    for managed in sources.discover(cluster_objects):   # Argo CD Applications, Flux Kustomizations
        managed.sources, managed.objects, managed.notes
    sources.owner_of(live_body, managed_list)            # which of them owns a live object

* ``Source`` names a repository (a local checkout or a URL: ``https://``, ``ssh://``,
  ``file://``), a path in it and a revision (branch, tag, commit SHA, ``HEAD``). The tree of the
  commit is read from Git's object database, never the work tree. A URL is fetched into a bare
  cache (``default_cache()``), shallow where the transport allows, refreshed on each ``load``.
* Plain manifests (YAML, multi-document; JSON; ``List`` kinds flattened) are parsed through
  ``kubemedic.model.documents``; files that are not manifests are skipped with a reason; a
  malformed file is a ``ManifestError`` (exit status 2) naming the file and line, unless
  ``skip_malformed``. Kustomize directories are rendered by ``kubectl kustomize`` (the revision
  materialised in a temporary directory first); ``KubectlMissingError`` when there is none.
* ``discover`` maps Argo CD ``Application`` and Flux ``Kustomization`` objects (with their
  ``GitRepository``) to ``Managed``: sources, the live objects they manage, and notes on what
  could not be followed.

The Git library (pygit2) is used only in ``gitstore``; the choice is measured in
bench/README.md (``git_read.py``).

May import: kubemedic.errors, kubemedic.model and pygit2 (in ``gitstore`` only).
"""

from kubemedic.drift.sources.desired import (
    DesiredObject,
    DesiredSet,
    ObjectRef,
    Origin,
    Skipped,
    Source,
)
from kubemedic.drift.sources.discovering import Managed, discover, owner_of
from kubemedic.drift.sources.errors import (
    GitError,
    KubectlMissingError,
    KustomizeError,
    ManifestError,
    SourceError,
)
from kubemedic.drift.sources.loading import default_cache, is_url, load

__all__ = [
    "DesiredObject",
    "DesiredSet",
    "GitError",
    "KubectlMissingError",
    "KustomizeError",
    "Managed",
    "ManifestError",
    "ObjectRef",
    "Origin",
    "Skipped",
    "Source",
    "SourceError",
    "default_cache",
    "discover",
    "is_url",
    "load",
    "owner_of",
]
