"""bench/git_read.py still runs end to end (its figures are measured by hand, never asserted)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT


@pytest.mark.timeout(300)
def test_the_git_reading_benchmark_runs_on_a_small_repository() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "git_read.py"), "--files", "40", "--runs", "1"],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr[-2000:]
    out = result.stdout
    assert "built a repository of 40 manifests" in out
    for phase in ("parse only", "pygit2", "dulwich", "kubemedic load"):
        assert f"{phase}: " in out
    assert "40 objects" in out
    assert "ratio dulwich/pygit2: reading the tree" in out
