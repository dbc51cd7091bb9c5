"""Real Git repositories for the source tests, built with the ``git`` CLI in the test's temporary
directory (``GitRepo``), and builders of the manifests they hold."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

KUBECTL = shutil.which("kubectl") or (
    "/usr/bin/kubectl" if Path("/usr/bin/kubectl").exists() else None
)
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed")

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "Ops",
    "GIT_AUTHOR_EMAIL": "ops@example.com",
    "GIT_COMMITTER_NAME": "Ops",
    "GIT_COMMITTER_EMAIL": "ops@example.com",
}


class GitRepo:
    """A work tree with its repository, driven by the real git CLI."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str) -> str:
        env = {**os.environ, **GIT_ENV, "HOME": str(self.path.parent)}
        result = subprocess.run(
            ["git", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args],
            cwd=self.path,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.strip()

    @property
    def url(self) -> str:
        return self.path.as_uri()

    def write(self, relative: str, text: str) -> Path:
        target = self.path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target

    def remove(self, relative: str) -> None:
        self.git("rm", "-q", "-r", relative)

    def commit(self, message: str) -> str:
        self.git("add", "-A")
        self.git("commit", "-q", "-m", message)
        return self.git("rev-parse", "HEAD")

    def tag(self, name: str, *, annotated: bool = False) -> None:
        if annotated:
            self.git("tag", "-a", name, "-m", f"release {name}")
        else:
            self.git("tag", name)


@pytest.fixture
def repo(tmp_path: Path) -> GitRepo:
    return GitRepo(tmp_path / "ops")


def configmap(name: str, *, namespace: str | None = None, **data: str) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": dict(data)}


def deployment(name: str, *, namespace: str = "web", replicas: int = 2) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": f"example/{name}:1"}]},
            },
        },
    }


def dump(*bodies: dict[str, Any]) -> str:
    """Several objects as one multi-document YAML file."""
    return "---\n".join(yaml.safe_dump(body, sort_keys=False) for body in bodies)
