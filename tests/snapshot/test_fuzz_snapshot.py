"""Mutation fuzzing of ``kubemedic scan --snapshot``: the bundled snapshots, truncated, with
bytes flipped, a value replaced by one of another type, nested deep, compressed (and the
compressed bytes broken). Whatever the input, the scan ends in exit 0 or 1 (valid input), or 2
with one ``error:`` line naming the file; never 3 (a bug), never a traceback.

Bounded here (300 examples, well under a minute); raise ``KUBEMEDIC_FUZZ_EXAMPLES`` for a
longer search.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic import cli
from kubemedic.cli import scan as scan_command
from kubemedic.model import documents

SNAPSHOTS = Path(cli.__file__).parent.parent / "data" / "snapshots"
BASES = [
    SNAPSHOTS / "4-healthy-control" / "events.json",
    SNAPSHOTS / "4-healthy-control" / "metrics.json",
    SNAPSHOTS / "3-hub-eviction" / "metrics.json.gz",
    SNAPSHOTS / "2-node-repair" / "workloads.yaml",
    SNAPSHOTS / "1-live-edit-storm" / "nodes.json",
]
EXAMPLES = int(os.environ.get("KUBEMEDIC_FUZZ_EXAMPLES", "300"))


def _content(path: Path) -> bytes:
    raw = path.read_bytes()
    return gzip.decompress(raw) if path.name.endswith(".gz") else raw


CONTENTS = {path: _content(path) for path in BASES}


def _parsed(path: Path) -> list[Any]:
    text = CONTENTS[path].decode()
    if ".json" in path.name:
        return [documents.load_json(text, where=path.name)]
    return documents.load_yaml_all(text, where=path.name)


_NEST = re.compile(rb"[\"']@@nest(\d+)@@[\"']")


def _serialised(path: Path, values: list[Any]) -> bytes:
    if ".json" in path.name:
        text = b"\n".join(orjson.dumps(value, option=orjson.OPT_INDENT_2) for value in values)
    else:
        text = yaml.safe_dump_all(values, sort_keys=False).encode()
    # Deep nesting is written here: the serialisers refuse it (as they should).
    return _NEST.sub(lambda m: b"[" * int(m[1]) + b'"leaf"' + b"]" * int(m[1]), text)


def _slots(value: Any, limit: int = 4000) -> Iterator[tuple[Any, Any]]:
    """(container, key or index) of every value inside ``value``, breadth first."""
    queue = [value]
    seen = 0
    while queue and seen < limit:
        node = queue.pop(0)
        keys: Any = node.keys() if isinstance(node, dict) else range(len(node))
        for key in keys:
            seen += 1
            yield node, key
            if isinstance(node[key], dict | list):
                queue.append(node[key])


def _nested(depth: int) -> str:
    """A value nested ``depth`` lists deep, once serialised."""
    return f"@@nest{depth}@@"


_INTS = st.integers(min_value=-(2**63), max_value=2**63 - 1)  # what JSON tools write
REPLACEMENTS = st.one_of(
    st.none(),
    st.booleans(),
    _INTS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["", "12XB", "-1", "1e400", "NaN", "2023-02-01T20:00:00", "\u0000", "List"]),
    st.text(max_size=30),
    st.lists(_INTS, max_size=3),
    st.dictionaries(st.text(max_size=5), _INTS, max_size=3),
    st.integers(min_value=150, max_value=3000).map(_nested),
)


@st.composite
def mutated(draw: st.DrawFn) -> tuple[str, bytes, bool]:
    """(file name, content, known to be invalid)."""
    base = draw(st.sampled_from(BASES))
    name = base.name.removesuffix(".gz")
    content = CONTENTS[base]
    invalid = False
    how = draw(st.sampled_from(["truncate", "flip", "replace", "nest", "kind"]))
    if how == "truncate":
        end = len(content.rstrip())
        at = draw(st.integers(min_value=0, max_value=end - 1))
        content = content[:at]
        invalid = ".json" in name  # any proper prefix of one JSON object is not JSON
    elif how == "flip":
        data = bytearray(content)
        for _ in range(draw(st.integers(min_value=1, max_value=8))):
            position = draw(st.integers(min_value=0, max_value=len(data) - 1))
            data[position] = draw(st.integers(min_value=0, max_value=255))
        content = bytes(data)
    else:
        values = _parsed(base)
        slots = list(_slots(values))
        node, key = slots[draw(st.integers(min_value=0, max_value=len(slots) - 1))]
        if how == "replace":
            node[key] = draw(REPLACEMENTS)
        elif how == "nest":
            depth = draw(st.integers(min_value=201, max_value=3000))
            node[key] = _nested(depth)
            invalid = True
        else:  # a kind (or what holds items) of another type, or gone
            kinds = [(n, k) for n, k in slots if k in ("kind", "items")]
            node, key = kinds[draw(st.integers(min_value=0, max_value=len(kinds) - 1))]
            if draw(st.booleans()):
                del node[key]
            else:
                node[key] = draw(REPLACEMENTS)
        content = _serialised(base, values)
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        content = gzip.compress(content, mtime=0)
        name += ".gz"
        if draw(st.booleans()):
            cut = draw(st.integers(min_value=0, max_value=len(content) - 1))
            content = content[:cut]
            invalid = invalid or cut > 0
    return name, content, invalid


@pytest.fixture(autouse=True)
def _stay_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scan_command, "leave_at_once", lambda: None)


@settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=mutated())
def test_any_mutated_snapshot_ends_in_a_result_or_one_clear_error(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    case: tuple[str, bytes, bool],
) -> None:
    name, content, invalid = case
    path = tmp_path_factory.mktemp("fuzz") / name
    path.write_bytes(content)
    with pytest.raises(SystemExit) as done:
        cli.main(["scan", "--snapshot", str(path), "--output", "json"])
    printed = capsys.readouterr()
    code = done.value.code
    assert "Traceback" not in printed.err and "Traceback" not in printed.out
    assert code in (0, 1, 2), printed.err
    if code == 2:
        lines = printed.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), printed.err
        assert str(path) in lines[0], lines[0]
        assert "NoneType" not in lines[0] and "Error:" not in lines[0]
    else:
        assert not invalid, f"accepted an invalid snapshot: {printed.err}"
        json.loads(printed.out)
