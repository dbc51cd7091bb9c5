"""Reading ``/proc/<pid>/mountinfo`` (proc(5)): one ``Mount`` per line.

A line is ``ID PARENT MAJOR:MINOR ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER``;
the kernel escapes space, tab, newline and backslash in paths as octal (``\\040``), and in the
super options (``lowerdir=...``) commas too, so splitting ``SUPER`` on commas is safe before
unescaping. A line that does not have this shape is a ``MountinfoError`` naming its number.

Pure: text in, values out. May import: :mod:`kubemedic.errors`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kubemedic.errors import InputError

__all__ = ["Mount", "MountinfoError", "parse_mountinfo", "unescape"]


class MountinfoError(InputError, ValueError):
    """A mountinfo text that is not what the kernel writes; the message names the line."""


_OCTAL = re.compile(r"\\([0-7]{3})")


def unescape(text: str) -> str:
    """A mountinfo field with its octal escapes (``\\040`` for a space) decoded."""
    return _OCTAL.sub(lambda match: chr(int(match.group(1), 8)), text)


@dataclass(frozen=True, slots=True)
class Mount:
    """One mount as mountinfo describes it."""

    mount_id: int
    parent_id: int
    device: str
    root: str
    mountpoint: str
    options: tuple[str, ...]
    optional: tuple[str, ...]
    fstype: str
    source: str
    super_options: dict[str, str]

    @property
    def read_only(self) -> bool:
        return "ro" in self.options

    @property
    def shared(self) -> bool:
        """Whether mounts under it propagate to peers (an optional field ``shared:N``)."""
        return any(tag.startswith("shared:") for tag in self.optional)


def parse_mountinfo(text: str, *, where: str = "mountinfo") -> list[Mount]:
    """Every mount of ``text``, in the kernel's order (parents before children)."""
    mounts: list[Mount] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split(" ")
        try:
            separator = fields.index("-", 6)
            mount_id, parent_id = int(fields[0]), int(fields[1])
        except ValueError:
            raise MountinfoError(
                f"{where}: line {number}: expected 'ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS "
                f"... - FSTYPE SOURCE SUPER', got {line[:120]!r}"
            ) from None
        if len(fields) < separator + 3:
            raise MountinfoError(f"{where}: line {number}: no file system type and source")
        supers: dict[str, str] = {}
        for option in (fields[separator + 3] if len(fields) > separator + 3 else "").split(","):
            if option:
                key, _, value = option.partition("=")
                supers[key] = unescape(value)
        mounts.append(
            Mount(
                mount_id=mount_id,
                parent_id=parent_id,
                device=fields[2],
                root=unescape(fields[3]),
                mountpoint=unescape(fields[4]),
                options=tuple(fields[5].split(",")),
                optional=tuple(fields[6:separator]),
                fstype=unescape(fields[separator + 1]),
                source=unescape(fields[separator + 2]),
                super_options=supers,
            )
        )
    return mounts
