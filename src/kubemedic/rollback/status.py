"""What is overlaid on this node, and what a reboot would throw away.

``read_status(mountinfo_text)`` finds every OverlayFS mount whose upper dir lies on a tmpfs
(the rollback's kind of overlay; the container runtime's overlays have their upper dirs on the
disk and are left out), the mounts bound inside each (the kept directories and binds), the
tmpfs's size and use (``statvfs``), and what changed since boot, by walking each upper dir
without following links:

* a character device 0/0 is an OverlayFS whiteout: the path was ``deleted``;
* a directory with the ``trusted.overlay.opaque`` xattr ``y`` (readable by root) was
  ``replaced``: what the disk has beneath it is hidden;
* any other entry is ``modified`` when the lower dir has the path (a copy-up: contents or
  metadata changed) and ``added`` when it does not; a directory the lower dir has is only a
  parent of changes and is not listed itself. When the lower dir cannot be read (it is not
  mounted any more), files are ``changed`` and directories are not listed.

Up to ``limit`` changes are kept per overlay (all are counted). Nothing here writes.

May import: :mod:`kubemedic.rollback.mountinfo`, :mod:`kubemedic.errors`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from dataclasses import dataclass, field
from typing import Any, Final

from kubemedic.rollback.mountinfo import Mount, parse_mountinfo

__all__ = ["Change", "Overlay", "Status", "Tmpfs", "read_status", "walk_upper"]

OURS: Final = "kubemedic-rollback"
"""The source name the rendered script gives its tmpfs and overlays."""

OPAQUE_XATTR: Final = "trusted.overlay.opaque"


@dataclass(frozen=True, slots=True)
class Change:
    """One path a reboot would throw away: ``kind`` is added, modified, deleted, replaced or
    changed; ``size`` the bytes the upper dir holds for it (0 for directories and whiteouts)."""

    path: str
    kind: str
    size: int


@dataclass(frozen=True, slots=True)
class Tmpfs:
    """The tmpfs under one or more upper dirs; sizes are None when ``statvfs`` fails."""

    mountpoint: str
    ours: bool
    size_bytes: int | None
    used_bytes: int | None


@dataclass(slots=True)
class Overlay:
    """One overlaid directory."""

    mountpoint: str
    upper: str
    lower: tuple[str, ...]
    tmpfs: str
    ours: bool
    kept: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    count: int = 0
    bytes: int = 0
    error: str | None = None


@dataclass(slots=True)
class Status:
    overlays: list[Overlay]
    tmpfs: list[Tmpfs]

    def as_json(self) -> dict[str, Any]:
        return {
            "overlays": [
                {
                    "mountpoint": overlay.mountpoint,
                    "upper": overlay.upper,
                    "lower": list(overlay.lower),
                    "tmpfs": overlay.tmpfs,
                    "ours": overlay.ours,
                    "kept": overlay.kept,
                    "changes": [
                        {"path": change.path, "kind": change.kind, "size": change.size}
                        for change in overlay.changes
                    ],
                    "changeCount": overlay.count,
                    "changeBytes": overlay.bytes,
                    "truncated": overlay.count > len(overlay.changes),
                    "error": overlay.error,
                }
                for overlay in self.overlays
            ],
            "tmpfs": [
                {
                    "mountpoint": tmpfs.mountpoint,
                    "ours": tmpfs.ours,
                    "sizeBytes": tmpfs.size_bytes,
                    "usedBytes": tmpfs.used_bytes,
                }
                for tmpfs in self.tmpfs
            ],
        }


def _under(path: str, top: str) -> bool:
    return top in ("/", path) or path.startswith(top.rstrip("/") + "/")


def _holder(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount ``path`` lies on: the last-mounted one with the longest matching mount point."""
    best: Mount | None = None
    for mount in mounts:
        if _under(path, mount.mountpoint) and (
            best is None or len(mount.mountpoint) >= len(best.mountpoint)
        ):
            best = mount
    return best


def read_status(text: str, *, where: str = "mountinfo", limit: int = 1000) -> Status:
    """The overlays with a tmpfs upper dir described by mountinfo ``text`` (see the module)."""
    mounts = parse_mountinfo(text, where=where)
    overlays: list[Overlay] = []
    tmpfs_seen: dict[str, Tmpfs] = {}
    for mount in mounts:
        upper = mount.super_options.get("upperdir")
        if mount.fstype != "overlay" or not upper:
            continue
        holder = _holder(upper, mounts)
        if holder is None or holder.fstype != "tmpfs":
            continue
        lower = tuple(part for part in mount.super_options.get("lowerdir", "").split(":") if part)
        overlay = Overlay(
            mountpoint=mount.mountpoint,
            upper=upper,
            lower=lower,
            tmpfs=holder.mountpoint,
            ours=mount.source == OURS,
            kept=[
                child.mountpoint
                for child in mounts
                if child.parent_id == mount.mount_id and child.mountpoint != mount.mountpoint
            ],
        )
        _fill(overlay, limit=limit)
        overlays.append(overlay)
        if holder.mountpoint not in tmpfs_seen:
            tmpfs_seen[holder.mountpoint] = _tmpfs(holder)
    return Status(overlays, list(tmpfs_seen.values()))


def _tmpfs(mount: Mount) -> Tmpfs:
    try:
        info = os.statvfs(mount.mountpoint)
    except OSError:
        return Tmpfs(mount.mountpoint, mount.source == OURS, None, None)
    size = info.f_blocks * info.f_frsize
    used = (info.f_blocks - info.f_bfree) * info.f_frsize
    return Tmpfs(mount.mountpoint, mount.source == OURS, size, used)


def _fill(overlay: Overlay, *, limit: int) -> None:
    lower = overlay.lower[0] if len(overlay.lower) == 1 else None
    try:
        for change in walk_upper(overlay.upper, overlay.mountpoint, lower=lower):
            overlay.count += 1
            overlay.bytes += change.size
            if len(overlay.changes) < limit:
                overlay.changes.append(change)
    except OSError as error:
        overlay.error = f"cannot read the upper dir {overlay.upper}: {error.strerror or error}"


def walk_upper(upper: str, shown_as: str, *, lower: str | None) -> list[Change]:
    """The changes an upper dir holds, as paths under ``shown_as`` (the overlay's mount point),
    sorted; ``lower`` (the one lower dir, if readable) tells added from modified."""
    lower_ok = lower is not None and os.path.isdir(lower)
    changes: list[Change] = []
    stack = [""]
    while stack:
        relative = stack.pop()
        with os.scandir(os.path.join(upper, relative) if relative else upper) as entries:
            for entry in entries:
                path = f"{relative}/{entry.name}" if relative else entry.name
                info = entry.stat(follow_symlinks=False)
                shown = f"{shown_as.rstrip('/')}/{path}"
                in_lower = lower_ok and os.path.lexists(os.path.join(str(lower), path))
                if stat.S_ISCHR(info.st_mode) and info.st_rdev == 0:
                    changes.append(Change(shown, "deleted", 0))
                    continue
                if stat.S_ISDIR(info.st_mode):
                    stack.append(path)
                    if _opaque(entry.path):
                        changes.append(Change(shown, "replaced", 0))
                    elif lower_ok and not in_lower:
                        changes.append(Change(shown, "added", 0))
                    continue
                size = info.st_size if stat.S_ISREG(info.st_mode) else 0
                kind = "changed" if not lower_ok else "modified" if in_lower else "added"
                changes.append(Change(shown, kind, size))
    changes.sort(key=lambda change: change.path)
    return changes


def _opaque(path: str) -> bool:
    value = b""
    with contextlib.suppress(OSError):
        value = os.getxattr(path, OPAQUE_XATTR, follow_symlinks=False)
    return value == b"y"
