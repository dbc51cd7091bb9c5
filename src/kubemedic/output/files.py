"""Writing a file a user named (``--snapshot-out``, ``--kubeconfig-out``, ``--out``): whole or not
at all, and never over something that is not a file.

* ``check_target`` refuses, before any work is done, a target that is a directory (always), or a
  symlink, a named pipe, a socket or a device (unless ``force``: then the link or special file
  itself is replaced by a regular file; what a symlink pointed to is never written through).
* ``write_atomically`` writes the bytes to a temporary file beside the target, flushes them to
  disk and renames it over the target: a reader sees the old file or the new one, never half of
  one; if writing fails (a full disk, an interrupt) the old file is left as it was and the
  temporary file is removed. A new file gets the usual mode (0666 less the umask); a replaced
  regular file keeps its mode.

Errors are ``OutputError`` (an ``InputError``: exit 2) naming the flag and the path.

May import: :mod:`kubemedic.errors`, :mod:`kubemedic.model.filemodes` (a file's type in words)
and the standard library.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from kubemedic.errors import InputError
from kubemedic.model import filemodes

__all__ = ["OutputError", "check_target", "write_atomically"]


class OutputError(InputError):
    """An output path kubemedic refuses or cannot write; the message names the flag and path."""


def check_target(path: Path, *, flag: str, force: bool = False) -> None:
    """Refuse ``path`` as an output unless it is absent or a regular file (or ``force`` allows
    replacing a link or special file); its directory must exist or be creatable."""
    label = f"{flag} {path}" if flag else str(path)
    if str(path) in {"", "."}:
        raise OutputError(f"{flag or 'output'}: expected a file path, got {str(path)!r}")
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # absent, or a parent is no directory
        mode = None
    except OSError as error:
        raise OutputError(f"{label}: cannot use it: {error.strerror or error}") from None
    if mode is not None:
        kind = filemodes.kind(mode, device_kinds=False)
        if kind == "a directory":
            raise OutputError(f"{label}: is a directory; give the path of a file to write")
        if kind is not None and not force:
            raise OutputError(
                f"{label}: is {kind}, not a regular file; refusing to replace it "
                "(--force replaces it with a regular file)"
            )
    parent = path.parent
    for ancestor in (parent, *parent.parents):
        try:
            ancestor_mode = os.stat(ancestor).st_mode
        except FileNotFoundError:
            continue  # made when writing
        except OSError as error:
            raise OutputError(f"{label}: cannot use {ancestor}: {error.strerror}") from None
        if not stat.S_ISDIR(ancestor_mode):
            raise OutputError(f"{label}: {ancestor} is not a directory")
        break


def write_atomically(path: Path, data: bytes, *, flag: str = "", force: bool = False) -> None:
    """Replace ``path`` with ``data`` in one step (see the module's docstring)."""
    check_target(path, flag=flag, force=force)
    label = f"{flag} {path}" if flag else str(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(f"{label}: cannot make {path.parent}: {error.strerror}") from None
    mode = _mode_for(path)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as error:
        raise OutputError(f"{label}: cannot write in {path.parent}: {error.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise OutputError(f"{label}: cannot write: {error.strerror or error}") from None
        raise
    with contextlib.suppress(OSError):  # the rename itself, durable where the system allows
        directory = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)


def _mode_for(path: Path) -> int:
    try:
        current = os.lstat(path)
    except OSError:
        current = None
    if current is not None and stat.S_ISREG(current.st_mode):
        return stat.S_IMODE(current.st_mode)
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
