"""The configuration file under hostile edits: whatever is written, ``kubemedic scan --config``
either accepts it (exit 0 or 1) or exits 2 with one line naming the file, never 3 (a bug), never
pydantic's or Python's wording, never a hang."""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from kubemedic import cli
from kubemedic.checks import REGISTRY
from kubemedic.checks.settings import shown
from kubemedic.cli import main
from kubemedic.config import ConfigError, load_settings
from tests.factories import node, pod
from tests.mutations import mutated, render

#: More for a long run: ``KUBEMEDIC_FUZZ_EXAMPLES=5000 pytest --timeout=0 THIS_FILE``.
EXAMPLES = int(os.environ.get("KUBEMEDIC_FUZZ_EXAMPLES", "150"))

PYTHON_WORDS = ("Input should be", "validation error", "type=", "Traceback", "NoneType")


def _written(value: Any) -> Any:
    """A default setting as a configuration file writes it."""
    if isinstance(value, timedelta):
        return shown(value)
    if isinstance(value, tuple | list):
        return [_written(item) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _written(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


#: Every check with every setting at its default, camelCase and snake_case mixed.
VALID: dict[str, Any] = {
    "checks": {name: _written(spec.config_type()) for name, spec in REGISTRY.items()},
    "disabled": ["node-scale-burst"],
}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    directory = tmp_path_factory.mktemp("config-fuzz")
    cluster = [node("n1", memory="8Gi"), pod("p", node_name="n1")]
    (directory / "cluster.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": cluster})
    )
    yield directory


def test_the_valid_document_is_valid(workspace: Path) -> None:
    path = workspace / "valid.yaml"
    path.write_text(render(VALID))
    assert set(load_settings(path).configs) == set(REGISTRY)


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(document=mutated(VALID))
def test_a_mutated_config_is_accepted_or_refused_in_one_line(
    workspace: Path, document: Any
) -> None:
    path = workspace / "kubemedic.yaml"
    path.write_text(render(document))
    started = time.perf_counter()
    try:
        load_settings(path)
    except ConfigError as error:
        message = str(error)
        assert message.startswith(f"{path}: "), message
        assert "\n" not in message
        assert not any(words in message for words in PYTHON_WORDS), message
        assert len(message) < 1500, message
    assert time.perf_counter() - started < 5


@settings(
    max_examples=max(25, EXAMPLES // 6), suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(document=mutated(VALID, edits=2))
def test_scan_with_a_mutated_config_exits_0_1_or_2_never_3(
    workspace: Path,
    document: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A scan that succeeds ends the process at once (os._exit) to skip freeing the snapshot:
    # here main() must raise SystemExit instead, so the test process lives on.
    monkeypatch.setattr(cli, "_leave", lambda code: None)
    path = workspace / "scan.yaml"
    path.write_text(render(document))
    snapshot = str(workspace / "cluster.json")
    with pytest.raises(SystemExit) as done:
        main(["scan", "--snapshot", snapshot, "--config", str(path), "--output", "json"])
    err = capsys.readouterr().err
    assert done.value.code in (0, 1, 2), err
    if done.value.code == 2:
        assert err.startswith(f"error: --config {path}: ") and err.count("\n") == 1, err
        assert not any(words in err for words in PYTHON_WORDS), err
