"""Helpers of the rollback tests: the machine's tools, and running the rendered script in a
private mount namespace of its own (mounts vanish with it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kubemedic.rollback import verify

SRC = str(Path(__file__).resolve().parents[2] / "src")


def tool_or_skip(name: str, package: str) -> str:
    """The path of ``name``; a skip naming the package, or under CI (CI=true) a failure, since
    .ci/run installs it."""
    found = shutil.which(name)
    if found is None:
        message = f"{name} is not installed (Debian package {package})"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; .ci/run installs it")
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def namespaces_or_skip() -> None:
    """Skip (with the kernel's or the machine's reason) where the proof cannot run."""
    reason = verify.probe()
    if reason is not None:
        pytest.skip(reason)


def in_namespace(driver: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the ``sh`` text ``driver`` with ``args`` as $1.. in a private mount namespace."""
    env = {**os.environ, "PYTHONPATH": SRC}
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "--", "sh", "-euc", driver, "sh", *args],
        capture_output=True,
        text=True,
        check=False,
        env=env,
        timeout=120,
    )
