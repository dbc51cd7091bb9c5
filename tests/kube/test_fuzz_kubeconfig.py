"""Fuzzing kubeconfigs: a working kubeconfig mutated at random (a value replaced by one of any
type, a key removed, bytes of the file overwritten) never ends ``scan`` or ``run``'s start (read
the kubeconfig, connect, probe the server) in a traceback (exit 3) or a hang: each works or exits 2
with one line. Bounded: a few dozen examples, each within seconds."""

from __future__ import annotations

import asyncio
import copy
import json
import time
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic.cli import _common, main
from kubemedic.errors import InputError
from kubemedic.kube import config as kubeconfig
from tests.kube.test_bad_access import api_server  # noqa: F401 - the fixture

SLOWEST = 12.0

FUZZ = settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def working(server: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": {"token": "t0k3n"}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "ns"}}],
        "current-context": "x",
        "preferences": {},
    }


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in ``value`` a mutation may hit."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*prefix, index))
    return found


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.sampled_from(
        [
            "https://127.0.0.1:99999",
            "http://[::1",
            "://",
            "x" * 300,
            "/nonexistent/file",
            "client.authentication.k8s.io/v1beta1",
            "",
        ]
    ),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
    st.builds(
        lambda command: {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "sh",
            "args": ["-c", command],
        },
        st.sampled_from(["exit 1", "echo nope", "echo '{}'", "echo '[]'", "true"]),
    ),
)


def mutate(document: dict[str, Any], where: tuple[Any, ...], value: Any, remove: bool) -> None:
    parent: Any = document
    for step in where[:-1]:
        parent = parent[step]
    if remove:
        del parent[where[-1]]
    else:
        parent[where[-1]] = value


def runs_or_names_the_problem(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    # A scan that succeeds ends the process at once (``leave_at_once``): not in a test.
    with (
        mock.patch.object(_common, "leaving_at_once", lambda: False),
        pytest.raises(SystemExit) as ended,
    ):
        main(["scan", "--kubeconfig", str(path), "-o", "json"])
    captured = capsys.readouterr()
    assert time.monotonic() - started < SLOWEST
    code = ended.value.code
    assert code in (0, 1, 2), (code, captured.err)
    if code == 2:
        lines = captured.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), captured.err
    # What `kubemedic run` does at start with the same file.
    started = time.monotonic()
    try:
        resolved = kubeconfig.resolve(path, None)
        api = kubeconfig.connect(resolved, timeout=5)

        async def probe() -> None:
            try:
                await kubeconfig.probe(api, resolved, timeout=5)
            finally:
                await api.close()

        asyncio.run(probe())
    except InputError as error:
        assert "\n" not in str(error)
    assert time.monotonic() - started < SLOWEST


@FUZZ
@given(data=st.data(), remove=st.booleans(), value=VALUES)
def test_mutated_values(
    api_server: str,  # noqa: F811 - the fixture
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    data: st.DataObject,
    remove: bool,
    value: Any,
) -> None:
    document = working(api_server)
    where = data.draw(st.sampled_from(paths(document)))
    mutate(document, where, copy.deepcopy(value), remove)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    runs_or_names_the_problem(path, capsys)


@FUZZ
@given(
    where=st.floats(min_value=0.0, max_value=0.999),
    fill=st.binary(min_size=1, max_size=12),
    as_json=st.booleans(),
)
def test_overwritten_bytes(
    api_server: str,  # noqa: F811 - the fixture
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    where: float,
    fill: bytes,
    as_json: bool,
) -> None:
    document = working(api_server)
    text = json.dumps(document) if as_json else yaml.safe_dump(document)
    data = bytearray(text.encode())
    start = int(len(data) * where)
    data[start : start + len(fill)] = fill
    path = tmp_path / "kubeconfig"
    path.write_bytes(bytes(data))
    runs_or_names_the_problem(path, capsys)
