"""Rendering a Kustomize directory with ``kubectl kustomize``, as Argo CD and Flux do before they
apply it.

kubectl carries Kustomize (``kubectl kustomize DIR`` is ``kustomize build DIR``), and every
machine that talks to a cluster has it, so kubemedic runs it rather than re-implementing
Kustomize. It is run with an argument list (no shell), in its default load restrictor (files
outside the directory tree it is given are refused), with a timeout; its output is read as YAML
through ``kubemedic.model.documents``. Remote bases (``github.com/org/repo//path?ref=...``) are
fetched by kubectl itself.

The caller gives a directory on disk: a revision that is not checked out is materialised first
(``gitstore.Repository.materialise``), whole, because overlays refer to ``../base``.

May import: kubemedic.drift.sources.errors and the standard library.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kubemedic.drift.sources.errors import KubectlMissingError, KustomizeError

__all__ = ["DEFAULT_TIMEOUT", "find_kubectl", "render"]

DEFAULT_TIMEOUT = 60.0
"""Seconds one ``kubectl kustomize`` may take (remote bases included)."""


def find_kubectl(kubectl: str, *, directory: str) -> str:
    """The kubectl executable to run: ``kubectl`` as given when it is a path, else looked up on
    ``PATH``; ``KubectlMissingError`` naming the directory that needed it when there is none."""
    if os.sep in kubectl or (os.altsep and os.altsep in kubectl):
        if Path(kubectl).is_file() and os.access(kubectl, os.X_OK):
            return kubectl
        found = None
    else:
        found = shutil.which(kubectl)
    if found is None:
        raise KubectlMissingError(
            f"kubectl is needed to render the Kustomize directory {directory} "
            f"(install kubectl or set --kubectl; {kubectl!r} was not found"
            + ("" if os.sep in kubectl else " on PATH")
            + ")"
        )
    return found


def render(
    directory: Path, *, label: str, kubectl: str = "kubectl", timeout: float = DEFAULT_TIMEOUT
) -> str:
    """The YAML ``kubectl kustomize directory`` prints. ``label`` names the directory in
    messages (its path in the repository, with the revision). ``KustomizeError`` carries the
    first line of kubectl's stderr when it fails."""
    executable = find_kubectl(kubectl, directory=label)
    try:
        result = subprocess.run(  # noqa: S603 - an argument list, no shell
            [executable, "kustomize", str(directory)],
            capture_output=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise KustomizeError(
            f"kubectl kustomize {label}: no answer within {timeout:g} s (remote bases?)"
        ) from None
    except OSError as error:
        raise KubectlMissingError(
            f"kubectl is needed to render the Kustomize directory {label} "
            f"(install kubectl or set --kubectl; running {executable} failed: {error.strerror})"
        ) from None
    if result.returncode != 0:
        stderr = result.stderr.decode("utf-8", "replace").strip()
        first = stderr.splitlines()[0] if stderr else f"exit status {result.returncode}"
        raise KustomizeError(f"kubectl kustomize {label} failed: {first}")
    try:
        return result.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise KustomizeError(f"kubectl kustomize {label} printed text that is not UTF-8") from None
