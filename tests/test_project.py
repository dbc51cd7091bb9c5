"""The project's promises about itself: the README quickstart, CI, and the public surface."""

import re
from pathlib import Path

import kubemedic

ROOT = Path(__file__).resolve().parents[1]


def quickstart_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ")]


def test_quickstart_holds_exactly_two_commands_demo_then_tests() -> None:
    commands = quickstart_commands()
    assert len(commands) == 2
    assert commands[0].endswith("kubemedic demo")
    assert "pytest" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert quickstart_commands()[1] in ci


def test_public_surface_is_sorted_and_complete() -> None:
    exported = kubemedic.__all__
    assert list(exported) == sorted(exported)
    for name in exported:
        assert getattr(kubemedic, name) is not None
    public = {name for name in vars(kubemedic) if not name.startswith("_")}
    modules = {name for name in public if re.fullmatch(r"[a-z_]+", name) and name not in exported}
    assert public - set(exported) - modules == set()


def test_under_ci_the_recorded_peer_data_is_where_the_tests_look() -> None:
    """The fidelity tests skip without ``../shared/peer``; under CI it is always there, so a
    test that looks in the wrong place must not pass by skipping."""
    import os

    import pytest

    from tests import paths

    if not os.environ.get("CI"):
        pytest.skip("outside CI the peer data may be absent")
    for name in ("gitops-engine-diff", "kubectl-edit", "structured-merge-diff"):
        assert (paths.PEER / name).is_dir(), paths.PEER / name
