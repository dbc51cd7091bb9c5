"""Scenario files under hostile edits: each bundled scenario with values replaced by ones of the
wrong type, NaN, infinities, negative or huge numbers, deep nests, unknown or doubled keys. A
file either loads or is refused with one ``ScenarioError`` line naming it (``sim run`` exits 2
with that line), at once: never another exception, never a cluster built from a huge count."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic import cli
from kubemedic.cli import main
from kubemedic.model import documents
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.loading import ScenarioError
from tests.mutations import mutated, render

#: More for a long run: ``KUBEMEDIC_FUZZ_EXAMPLES=5000 pytest --timeout=0 THIS_FILE``.
EXAMPLES = int(os.environ.get("KUBEMEDIC_FUZZ_EXAMPLES", "150"))

BUNDLED = {
    path.stem: documents.load_yaml(path.read_text(), where=str(path))
    for path in sorted(scenarios.BUNDLED.glob("*.yaml"))
}
PYTHON_WORDS = ("Input should be", "validation error", "type=", "Traceback", "NoneType")


def _story(name: str) -> st.SearchStrategy[Any]:
    return mutated(BUNDLED[name])


ANY_STORY = st.one_of(*(_story(name) for name in BUNDLED))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("scenario-fuzz")


def _refused_in_one_line(path: Path, error: ScenarioError) -> str:
    message = str(error)
    assert message.startswith(f"{path}: "), message
    assert "\n" not in message
    assert not any(words in message for words in PYTHON_WORDS), message
    return message


@settings(max_examples=EXAMPLES, suppress_health_check=list(HealthCheck))
@given(document=ANY_STORY)
def test_a_mutated_scenario_loads_or_is_refused_in_one_line(workspace: Path, document: Any) -> None:
    path = workspace / "story.yaml"
    path.write_text(render(document))
    started = time.perf_counter()
    try:
        scenarios.load(path)
    except ScenarioError as error:
        _refused_in_one_line(path, error)
    assert time.perf_counter() - started < 5


def _small(value: Any) -> bool:
    """Whether every number in ``value`` is at most 1,000 (a cluster quick to build)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int | float) and not (math.isfinite(item) and abs(item) <= 1000):
            return False
    return True


#: Manifests and patches are left alone when a run follows: what the emulator does with a
#: malformed manifest is the emulator's fuzzing (tests/sim), not the scenario reader's.
UNTOUCHED = frozenset({"manifests", "patch"})


@settings(max_examples=max(10, EXAMPLES // 10), suppress_health_check=list(HealthCheck))
@given(document=mutated(BUNDLED["healthy"], skip=UNTOUCHED))
def test_sim_run_on_a_mutated_scenario_exits_0_or_2_never_3(
    workspace: Path,
    document: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "_leave", lambda code: None)
    path = workspace / "run.yaml"
    path.write_text(render(document))
    try:
        scenarios.load(path)
    except ScenarioError:
        refused = True
    else:
        refused = False
        if not _small(document):
            return  # valid, but a big cluster: too slow to build here
    started = time.perf_counter()
    with pytest.raises(SystemExit) as done:
        main(["sim", "run", str(path), "--until", "1m"])
    err = capsys.readouterr().err
    assert done.value.code == (2 if refused else 0), err
    if refused:
        assert err.startswith(f"error: {path}: ") and err.count("\n") == 1, err
    assert time.perf_counter() - started < 30
