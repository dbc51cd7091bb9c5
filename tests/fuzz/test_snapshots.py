"""``scan --snapshot``: mutated snapshots (JSON, YAML, gzip, directories), the issue's bad
snapshots, FIFOs, a gzip bomb and ``--allow-empty``."""

from __future__ import annotations

import functools
import gzip
import os
import zlib
from pathlib import Path

import pytest
from hypothesis import given

from tests.fuzz import snapshots
from tests.fuzz.harness import (
    Case,
    assert_contract,
    budget,
    check_case,
    run_cli,
)
from tests.paths import SNAPSHOTS

pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("fmt", snapshots.FORMATS)
def test_the_base_snapshot_is_valid_in_every_format(fmt: str) -> None:
    content = snapshots.encode(snapshots.base()["pods.json"], fmt.replace("dir", "json"))
    check_case(snapshots.snapshot_case("the base", "pods.json", content, fmt, valid=True))


@budget(40)
@given(case=snapshots.wrong_types())
def test_a_wrong_type_anywhere_in_a_snapshot_keeps_the_contract(case: Case) -> None:
    check_case(case)


@budget(25)
@given(case=snapshots.bad_quantities())
def test_an_invalid_quantity_where_a_check_reads_one_is_refused_at_load(case: Case) -> None:
    check_case(case)


@budget(40)
@given(case=snapshots.byte_mutations())
def test_truncated_flipped_non_utf8_or_deep_snapshots_keep_the_contract(case: Case) -> None:
    check_case(case)


@pytest.mark.parametrize("case", snapshots.catalogue(), ids=lambda c: c.label)
def test_each_known_snapshot_case_keeps_the_contract(case: Case) -> None:
    check_case(Case(**{**case.__dict__, "inprocess": False}))


def scan(target: Path | str, *extra: str, timeout: float = 15.0) -> None:
    outcome = run_cli(["scan", "--snapshot", str(target), *extra], timeout=timeout)
    name = Path(target).name if str(target) else "--snapshot"
    assert_contract(outcome, valid=False, names=name, what=f"scan --snapshot {target}")


def test_a_fifo_in_a_snapshot_directory_is_refused_not_read(tmp_path: Path) -> None:
    snap = tmp_path / "snap"
    snap.mkdir()
    (snap / "pods.json").write_bytes(snapshots.encode(snapshots.base()["pods.json"], "json"))
    os.mkfifo(snap / "nodes.json")
    outcome = run_cli(["scan", "--snapshot", str(snap)], timeout=15.0)
    assert_contract(outcome, valid=False, names="nodes.json", what="a FIFO in the directory")


def test_a_fifo_as_the_snapshot_is_refused_not_read(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pods.json")
    scan(tmp_path / "pods.json")


def test_a_device_as_the_snapshot_is_refused_not_read() -> None:
    scan("/dev/zero")


def test_an_empty_snapshot_path_is_refused_not_the_current_directory() -> None:
    scan("")


@functools.cache
def _spaces_member(megabytes: int = 64) -> bytes:
    """One gzip member inflating to ``megabytes`` MiB of spaces (valid JSON whitespace)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    return b"".join(packer.compress(block) for _ in range(megabytes)) + packer.flush()


def write_gzip_bomb(path: Path, *, gibibytes: float = 1.1) -> None:
    """A small ``.json.gz`` that inflates past ``gibibytes`` GiB: a List cut by gzip members of
    spaces, built member by member so the test stays cheap (~1 MB on disk)."""
    members = int(gibibytes * 1024 / 64) + 1
    with path.open("wb") as out:
        out.write(gzip.compress(b'{"apiVersion": "v1", "kind": "List", "items": [', mtime=0))
        for _ in range(members):
            out.write(_spaces_member())
        out.write(gzip.compress(b"]}", mtime=0))


def test_a_gzip_bomb_is_refused_in_seconds(tmp_path: Path) -> None:
    bomb = tmp_path / "pods.json.gz"
    write_gzip_bomb(bomb)
    assert bomb.stat().st_size < 4 << 20
    outcome = run_cli(["scan", "--snapshot", str(bomb)], timeout=20.0, memory=3 << 30)
    assert_contract(outcome, valid=False, names="pods.json.gz", what="a 1.1 GiB gzip bomb")


def test_the_bundled_snapshots_are_valid() -> None:
    for snapshot in sorted(SNAPSHOTS.iterdir()):
        if snapshot.is_dir():
            outcome = run_cli(["scan", "--snapshot", str(snapshot)], timeout=30.0)
            assert_contract(outcome, valid=True, names=None, what=snapshot.name)
