"""A file's type in words from a ``stat`` mode: the one wording of the snapshot reader's and the
output writer's refusals."""

from __future__ import annotations

import stat

import pytest

from kubemedic.model import filemodes


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        (stat.S_IFREG | 0o644, None),
        (stat.S_IFDIR | 0o755, "a directory"),
        (stat.S_IFLNK | 0o777, "a symbolic link"),
        (stat.S_IFIFO | 0o600, "a named pipe"),
        (stat.S_IFSOCK | 0o600, "a socket"),
        (stat.S_IFCHR | 0o666, "a character device"),
        (stat.S_IFBLK | 0o660, "a block device"),
        (0o644, "not a regular file"),  # no type bits: nothing a stat returns, still worded
    ],
)
def test_each_file_type_has_its_words(mode: int, words: str | None) -> None:
    assert filemodes.kind(mode) == words


@pytest.mark.parametrize("mode", [stat.S_IFCHR | 0o666, stat.S_IFBLK | 0o660])
def test_devices_may_be_named_together(mode: int) -> None:
    assert filemodes.kind(mode, device_kinds=False) == "a device"


def test_naming_devices_together_leaves_the_other_types_alone() -> None:
    assert filemodes.kind(stat.S_IFIFO, device_kinds=False) == "a named pipe"
    assert filemodes.kind(stat.S_IFREG, device_kinds=False) is None
