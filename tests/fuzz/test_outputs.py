"""Output targets of ``sim run --snapshot-out``: a directory, a symlink, a FIFO or a device is
refused (exit 2) and left as it was unless ``--force``; a normal target is written atomically."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fuzz.harness import _LAUNCH, assert_contract, environment, run_cli

pytestmark = pytest.mark.timeout(600)
RUN = ("sim", "run", "healthy", "--until", "1m", "--snapshot-out")


def test_a_directory_as_the_output_is_refused_and_kept(tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.mkdir()
    (target / "keep").write_text("mine")
    outcome = run_cli([*RUN, str(target)], timeout=30.0)
    assert_contract(outcome, valid=False, names="out", what="--snapshot-out a directory")
    assert target.is_dir() and (target / "keep").read_text() == "mine"


def test_a_symlink_as_the_output_is_refused_and_its_target_kept(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("precious")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    outcome = run_cli([*RUN, str(link)], timeout=30.0)
    assert_contract(outcome, valid=False, names="link.json", what="--snapshot-out a symlink")
    assert link.is_symlink() and real.read_text() == "precious"


def test_a_fifo_as_the_output_is_refused_and_kept(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    outcome = run_cli([*RUN, str(fifo)], timeout=30.0)
    assert_contract(outcome, valid=False, names="pipe.json", what="--snapshot-out a FIFO")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


def test_a_device_as_the_output_is_refused_and_stays_a_device(tmp_path: Path) -> None:
    device = tmp_path / "full"
    os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # /dev/full's numbers
    outcome = run_cli([*RUN, str(device)], timeout=30.0)
    assert_contract(outcome, valid=False, names="full", what="--snapshot-out a device")
    assert stat.S_ISCHR(device.lstat().st_mode)


def test_force_replaces_a_symlink_with_the_snapshot(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    outcome = run_cli([*RUN, str(link), "--force"], timeout=30.0)
    assert_contract(outcome, valid=True, names=None, what="--snapshot-out a symlink --force")
    assert not link.is_symlink() and real.read_text() == "old"


def test_an_interrupted_run_leaves_the_old_output_intact(tmp_path: Path) -> None:
    target = tmp_path / "snapshot.json"
    target.write_text('{"kind": "List", "items": []}')
    before = target.read_bytes()
    process = subprocess.Popen(
        [sys.executable, "-c", _LAUNCH, "sim", "run", "node-failures", "--speed", "1",
         "--until", "1h", "--snapshot-out", str(target)],
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    time.sleep(3.0)  # paced at real time, it is still running: killed mid-run
    assert process.poll() is None
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert target.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.json"] or all(
        p.name.startswith(".") for p in tmp_path.iterdir() if p.name != "snapshot.json"
    )
