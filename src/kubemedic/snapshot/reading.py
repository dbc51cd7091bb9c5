"""Finding and reading the files of a snapshot, with limits, before anything is parsed.

* Only regular files are read (a symlink to one is fine). A named pipe, socket or device, given
  as the snapshot or found in a snapshot directory under a snapshot name (``.json``, ``.yaml``,
  ``.yml``, optionally ``.gz``), is refused without being opened: opening a named pipe waits for
  a writer, forever. Files are opened non-blocking and checked again once open, so one swapped
  for a pipe in between is refused too.
* A directory is walked in name order, hidden entries skipped; a subdirectory or entry that
  cannot be listed or examined (no permission, a dangling symlink) is an error naming it, never
  skipped silently. A symlink to a directory is followed, unless it leads back to a directory
  that contains it.
* Compressed files are inflated in bounded chunks: a file may inflate to at most
  ``MAX_INFLATED_BYTES``, and, once past ``RATIO_CHECKED_FROM`` bytes, to at most
  ``MAX_INFLATION_RATIO`` times its own size. ``kubectl`` output compresses about 10 to 25 times;
  a "gzip bomb" (a few megabytes that inflate to gigabytes) is refused within a fraction of a
  second, naming the file.

Every failure is a ``SnapshotError`` naming the path and what is wrong with it.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from kubemedic.errors import InputError
from kubemedic.model import filemodes

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_INFLATED_BYTES",
    "MAX_INFLATION_RATIO",
    "RATIO_CHECKED_FROM",
    "SUFFIXES",
    "Inflating",
    "SnapshotError",
    "decode",
    "format_of",
    "is_gzip",
    "open_regular",
    "read_bytes",
    "snapshot_files",
]

SUFFIXES = (".json", ".yaml", ".yml")
MAX_FILE_BYTES = 4 * 1024**3
"""The largest snapshot file read (as stored on disk)."""
MAX_INFLATED_BYTES = 4 * 1024**3
"""The most a compressed snapshot file may inflate to."""
MAX_INFLATION_RATIO = 100
"""How many times its own size a compressed file may inflate to, once past
``RATIO_CHECKED_FROM`` bytes (JSON from kubectl compresses 10 to 25 times)."""
RATIO_CHECKED_FROM = 64 * 1024**2
_CHUNK = 1024**2
_GZIP_MAGIC = b"\x1f\x8b"


class SnapshotError(InputError):
    """A snapshot cannot be read. ``str()`` names the file and where in it."""


def _not_a_file(path: Path, mode: int) -> SnapshotError:
    if stat.S_ISDIR(mode):  # a file swapped for a directory between listing and opening
        return SnapshotError(f"{path} is a directory, not a regular file")
    return SnapshotError(f"{path} is {filemodes.kind(mode)}, not a file or directory")


def _cannot(path: Path, what: str, error: OSError) -> SnapshotError:
    reason = error.strerror or type(error).__name__
    if isinstance(error, FileNotFoundError) and path.is_symlink():
        reason = "a symlink to nothing (dangling)"
    return SnapshotError(f"{path}: cannot {what}: {reason}")


def format_of(file: Path) -> str | None:
    """``"json"``, ``"yaml"`` or None (not a snapshot file) from the name."""
    name = file.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    for suffix in SUFFIXES:
        if name.endswith(suffix):
            return "json" if suffix == ".json" else "yaml"
    return None


def snapshot_files(root: Path, skipped: list[Path]) -> Iterator[Path]:
    """The snapshot files at ``root`` (a file, or a directory walked in name order); entries of a
    directory whose names are not snapshot names go to ``skipped`` (never opened)."""
    if str(root) == "":
        raise SnapshotError("the snapshot path is empty: expected a file or directory")
    try:
        found = root.stat()
    except OSError as error:
        if isinstance(error, FileNotFoundError) and not root.is_symlink():
            raise SnapshotError(f"{root}: no such file or directory") from None
        raise _cannot(root, "read it", error) from None
    if stat.S_ISREG(found.st_mode):
        yield root
        return
    if not stat.S_ISDIR(found.st_mode):
        raise _not_a_file(root, found.st_mode)
    yield from _walk(root, skipped, ancestors=((found.st_dev, found.st_ino),))


def _walk(
    directory: Path, skipped: list[Path], *, ancestors: tuple[tuple[int, int], ...]
) -> Iterator[Path]:
    try:
        with os.scandir(directory) as listing:
            entries = sorted((entry.name for entry in listing), key=lambda name: name)
    except OSError as error:
        raise _cannot(directory, "list the directory", error) from None
    for name in entries:
        if name.startswith("."):
            continue
        path = directory / name
        try:
            found = path.stat()
        except OSError as error:
            raise _cannot(path, "read it", error) from None
        if stat.S_ISDIR(found.st_mode):
            key = (found.st_dev, found.st_ino)
            if key in ancestors:
                raise SnapshotError(f"{path}: a symlink back to a directory that contains it")
            yield from _walk(path, skipped, ancestors=(*ancestors, key))
        elif format_of(path) is None:
            skipped.append(path)
        elif stat.S_ISREG(found.st_mode):
            yield path
        else:
            raise _not_a_file(path, found.st_mode)


def open_regular(file: Path) -> BinaryIO:
    """``file`` opened for reading, when it is a regular file (checked once open, without ever
    waiting on a pipe or device)."""
    try:
        descriptor = os.open(file, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise _cannot(file, "read it", error) from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_a_file(file, mode)
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return os.fdopen(descriptor, "rb")


def is_gzip(file: Path, first: bytes) -> bool:
    return file.name.lower().endswith(".gz") or first[:2] == _GZIP_MAGIC


class Inflating:
    """A readable stream of the inflated content of a gzip file (several members allowed, as
    ``gzip`` writes them), refused past the limits of the module docstring."""

    def __init__(self, source: BinaryIO, *, file: Path, size: int) -> None:
        self._source = source
        self._file = file
        self._size = max(size, 1)
        self._inflater = zlib.decompressobj(wbits=31)
        self._pending = b""  # compressed input not yet given to the inflater
        self._exhausted = False
        self._read_any = False
        self._out = 0
        self._done = False

    def _fail(self, what: str) -> SnapshotError:
        return SnapshotError(f"{self._file}: cannot read: {what}")

    def _check(self) -> None:
        if self._out > MAX_INFLATED_BYTES:
            raise self._fail(
                f"it inflates to more than {MAX_INFLATED_BYTES // 1024**3} GiB "
                "(the most a compressed snapshot file may hold)"
            )
        if self._out > RATIO_CHECKED_FROM and self._out > MAX_INFLATION_RATIO * self._size:
            raise self._fail(
                f"it inflates more than {MAX_INFLATION_RATIO} times its size "
                f"({self._size:,} bytes to over {self._out:,}): a compression bomb?"
            )

    def _more(self) -> bytes:
        if self._exhausted:
            return b""
        data = self._source.read(_CHUNK)
        self._exhausted = not data
        self._read_any = self._read_any or bool(data)
        return data

    def _next_member(self) -> bool:
        """After a member ends: start the next one (True) or find the end (False)."""
        rest = self._inflater.unused_data  # all the input given after the member's end
        while len(rest) < 2 and not self._exhausted:
            rest += self._more()
        while rest.strip(b"\0") == b"":  # zero padding after the last member, as gzip allows
            if self._exhausted:
                return False
            rest = self._more()
        if rest[:2] != _GZIP_MAGIC:
            raise self._fail("data after the end of the compressed stream is not gzip")
        self._inflater = zlib.decompressobj(wbits=31)
        self._pending = rest
        return True

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` inflated bytes (all that is left when negative); b"" at the end."""
        wanted = size if size >= 0 else MAX_INFLATED_BYTES + 1
        parts: list[bytes] = []
        got = 0
        try:
            while got < wanted and not self._done:
                if self._inflater.eof:
                    self._done = not self._next_member()
                    continue
                if not self._pending:
                    self._pending = self._more()
                data = self._inflater.decompress(self._pending, min(wanted - got, _CHUNK))
                self._pending = self._inflater.unconsumed_tail
                if data:
                    parts.append(data)
                    got += len(data)
                    self._out += len(data)
                    self._check()
                elif self._exhausted and not self._pending and not self._inflater.eof:
                    if not self._read_any:  # an empty file: nothing in it, like gzip says
                        self._done = True
                        break
                    raise self._fail("the compressed data ends early (truncated?)")
        except zlib.error as error:
            reason = str(error).rsplit(": ", 1)[-1]  # zlib's "Error -3 while ...: <reason>"
            raise self._fail(f"not valid gzip data ({reason})") from None
        except OSError as error:
            raise _cannot(self._file, "read it", error) from None
        return b"".join(parts)


def read_bytes(file: Path) -> bytes:
    """The content of ``file``, inflated when it is gzip-compressed."""
    with open_regular(file) as stream:
        try:
            size = os.fstat(stream.fileno()).st_size
            if size > MAX_FILE_BYTES:
                raise SnapshotError(f"{file}: larger than {MAX_FILE_BYTES // 1024**3} GiB")
            first = stream.read(2)
            if not is_gzip(file, first):
                return first + stream.read()
            stream.seek(0)
        except OSError as error:
            raise _cannot(file, "read it", error) from None
        return Inflating(stream, file=file, size=size).read()


def decode(file: Path, raw: bytes) -> str:
    """``raw`` as UTF-8 text; an error names the line and byte that is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise SnapshotError(
            f"{file}: line {line} (byte {error.start}): not valid UTF-8 ({error.reason})"
        ) from None
