"""The errors of reading a desired state: one tree under ``InputError`` (the command line answers
each with exit status 2 and its message).

* ``GitError``: a repository that cannot be opened or fetched, a revision it does not have, a
  path that is not in the tree at that revision;
* ``ManifestError``: a file that is not valid YAML or JSON, or a document in it that is not a
  Kubernetes object kubemedic can place (no ``kind``, no ``metadata.name``...). The message
  names the file (as a path inside the repository, with the revision) and the line or document;
* ``KustomizeError``: ``kubectl kustomize`` failed (its stderr's first line is in the message) or
  took longer than the timeout; ``KubectlMissingError`` when there is no kubectl to run at all.

May import: kubemedic.errors.
"""

from __future__ import annotations

from kubemedic.errors import InputError

__all__ = ["GitError", "KubectlMissingError", "KustomizeError", "ManifestError", "SourceError"]


class SourceError(InputError):
    """The desired state could not be read from a source; the message names the source."""


class GitError(SourceError):
    """A repository could not be opened or fetched, or has no such revision or path."""


class ManifestError(SourceError, ValueError):
    """A manifest file could not be read; the message names the file and the line or document."""


class KustomizeError(SourceError):
    """``kubectl kustomize`` failed on a directory, or did not finish in time."""


class KubectlMissingError(KustomizeError):
    """A Kustomize directory needs kubectl to be rendered and there is none to run."""
