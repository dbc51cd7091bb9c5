"""Outputs a user names are written whole or not at all, and never over what is not a file."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from kubemedic.errors import InputError
from kubemedic.output.files import OutputError, check_target, write_atomically


def test_a_new_file_is_written_with_the_usual_mode(tmp_path: Path) -> None:
    target = tmp_path / "deeper" / "out.json"
    write_atomically(target, b"{}", flag="--out")
    assert target.read_bytes() == b"{}"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in target.parent.iterdir()] == ["out.json"]  # no temporary left


def test_a_regular_file_is_replaced_and_keeps_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")
    target.chmod(0o640)
    write_atomically(target, b"new", flag="--out")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_directory_is_refused_even_with_force(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match=r"^--out .*: is a directory"):
        write_atomically(tmp_path, b"x", flag="--out", force=True)
    assert tmp_path.is_dir()


def test_a_symlink_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_bytes(b"precious")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(OutputError, match=r"is a symbolic link, not a regular file.*--force"):
        write_atomically(link, b"x", flag="--snapshot-out")
    assert link.is_symlink() and real.read_bytes() == b"precious"
    write_atomically(link, b"x", flag="--snapshot-out", force=True)
    assert not link.is_symlink() and link.read_bytes() == b"x"
    assert real.read_bytes() == b"precious"  # replaced the link, never wrote through it


def test_a_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="is a named pipe"):
        write_atomically(fifo, b"x", flag="--out")  # opening it would block forever
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(OutputError, match="is a socket"):
            check_target(path, flag="--out")
    finally:
        server.close()


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_a_device_is_refused_and_stays_a_device() -> None:
    with pytest.raises(OutputError, match=r"^--snapshot-out /dev/full: is a device"):
        write_atomically(Path("/dev/full"), b"x", flag="--snapshot-out")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_parent_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OutputError, match="is not a directory"):
        write_atomically(tmp_path / "file" / "out.json", b"x", flag="--out")


@pytest.mark.parametrize("text", ["", "."])
def test_an_empty_path_is_refused(text: str) -> None:
    with pytest.raises(OutputError, match="expected a file path"):
        check_target(Path(text), flag="--out")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.json"
    target.write_bytes(b"old")

    def full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OutputError, match="cannot write: No space left on device"):
        write_atomically(target, b"new" * 1000, flag="--out")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_output_errors_are_input_errors() -> None:
    assert issubclass(OutputError, InputError)
