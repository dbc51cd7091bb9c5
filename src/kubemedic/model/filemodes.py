"""A file's type in words, from the ``st_mode`` of a ``stat`` the caller made: for the messages
that refuse a path which is not a regular file (a snapshot that is a named pipe, an output that
is a device). Pure: the mode is a number; nothing here looks at a file.
"""

from __future__ import annotations

import stat

__all__ = ["kind"]

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind(mode: int, *, device_kinds: bool = True) -> str | None:
    """What a file of ``mode`` is, as a message says it (``"a named pipe"``), or None for a
    regular file. A device is ``"a character device"`` or ``"a block device"``, or ``"a
    device"`` when ``device_kinds`` is false; a type with no name here is ``"not a regular
    file"``."""
    if stat.S_ISREG(mode):
        return None
    if not device_kinds and (stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
        return "a device"
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"
