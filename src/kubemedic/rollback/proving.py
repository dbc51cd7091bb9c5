"""The proof ``kubemedic rollback verify`` runs, inside its private mount namespace.

Run as ``python -m kubemedic.rollback.proving WORKDIR [--probe]`` by
:mod:`kubemedic.rollback.verify` under ``unshare --mount --propagation private`` (never on its
own: it refuses to run in the namespace of its parent, or where ``/`` still propagates mounts).
``WORKDIR`` holds the rendered script and ``spec.json``; the root-like tree is built in
``WORKDIR/root``. The steps, each printed as ``ok: ...`` or ``FAILED: ...``:

1. the namespace is private (not the parent's; ``/`` is not shared);
2. a tmpfs and an OverlayFS mount work here (else exit 2 with the kernel's reason);
3. the tree: each overlaid directory with a file from "the disk", each kept directory, binds;
4. ``start``: the overlays have tmpfs upper dirs and the kept directories are mounts;
5. a write into an overlaid directory, a delete of a disk file there, a write into a kept one;
6. the disk (the script's read-only view of it) lacks the overlaid write, has the kept one, and
   refuses writes; ``status`` shows the write as added and the delete as deleted;
7. a second ``start`` changes nothing;
8. the "reboot": ``stop`` leaves no mount in the tree, ``start`` mounts it all again;
9. the overlaid write is gone, the deleted file is back, the kept write persists;
10. ``stop`` again leaves nothing mounted.

Exit status: 0 when every step held, 1 when one did not, 2 when the proof cannot run here.

May import: :mod:`kubemedic.rollback`, :mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

from kubemedic.model import documents
from kubemedic.rollback import render
from kubemedic.rollback.mountinfo import Mount, parse_mountinfo
from kubemedic.rollback.spec import RollbackSpec, parse_spec
from kubemedic.rollback.status import read_status

__all__ = ["main"]

ORIGINAL: Final = "kubemedic-verify-original.txt"
OVERLAID: Final = "kubemedic-verify-overlaid.txt"
KEPT: Final = "kubemedic-verify-kept.txt"


class _Unavailable(Exception):
    pass


class _Proof:
    def __init__(self, workdir: Path, spec: RollbackSpec) -> None:
        self.workdir = workdir
        self.spec = spec
        self.root = workdir / "root"
        self.script = workdir / render.SCRIPT_NAME
        self.failed = 0

    def say(self, ok: bool, text: str, detail: str = "") -> bool:
        if ok:
            print(f"ok: {text}", flush=True)
        else:
            self.failed += 1
            print(f"FAILED: {text}{': ' + detail if detail else ''}", flush=True)
        return ok

    def run(self, action: str) -> tuple[int, str]:
        done = subprocess.run(  # noqa: S603 - an argument list, no shell
            ["/bin/sh", str(self.script), action, str(self.root)],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        return done.returncode, (done.stdout + done.stderr).strip()

    def mounts(self) -> list[Mount]:
        text = Path("/proc/self/mountinfo").read_text(encoding="utf-8")
        return parse_mountinfo(text, where="/proc/self/mountinfo")

    def in_tree(self) -> list[str]:
        top = str(self.root)
        return [
            f"{mount.fstype} {mount.mountpoint}"
            for mount in self.mounts()
            if mount.mountpoint == top or mount.mountpoint.startswith(top + "/")
        ]

    def path(self, node_path: str) -> Path:
        return self.root / node_path.lstrip("/")


def _private() -> str:
    """Refuse to go on outside a private mount namespace; says which namespaces these are."""
    mine = os.readlink("/proc/self/ns/mnt")
    parents = os.readlink(f"/proc/{os.getppid()}/ns/mnt")
    if mine == parents:
        raise _Unavailable("refusing to run in the parent's mount namespace (run it via verify)")
    text = Path("/proc/self/mountinfo").read_text(encoding="utf-8")
    tops = [mount for mount in parse_mountinfo(text) if mount.mountpoint == "/"]
    if tops and tops[-1].shared:
        raise _Unavailable("/ still propagates mounts (shared) in this namespace: not private")
    return f"a private mount namespace ({mine}; the machine's is {parents})"


def _probe(workdir: Path) -> None:
    scratch = workdir / "probe"
    for name in ("tmpfs", "lower", "merged"):
        (scratch / name).mkdir(parents=True, exist_ok=True)
    mount, umount = _tool("mount"), _tool("umount")
    steps = [
        [mount, "-t", "tmpfs", "-o", "size=1m", "kubemedic-probe", str(scratch / "tmpfs")],
        [
            mount,
            "-t",
            "overlay",
            "-o",
            f"lowerdir={scratch / 'lower'},upperdir={scratch / 'tmpfs/upper'},"
            f"workdir={scratch / 'tmpfs/work'}",
            "kubemedic-probe",
            str(scratch / "merged"),
        ],
    ]
    for command in steps:
        if "overlay" in command:
            (scratch / "tmpfs/upper").mkdir()
            (scratch / "tmpfs/work").mkdir()
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: S603
        if done.returncode != 0:
            said = " ".join((done.stderr or done.stdout).split()) or f"status {done.returncode}"
            what = "OverlayFS" if "overlay" in command else "a tmpfs"
            raise _Unavailable(f"the kernel refused {what} here: {said}")
    subprocess.run([umount, str(scratch / "merged")], check=False)  # noqa: S603
    subprocess.run([umount, str(scratch / "tmpfs")], check=False)  # noqa: S603


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise _Unavailable(f"{name} not found (util-linux)")
    return found


def _build(proof: _Proof) -> None:
    spec = proof.spec
    (proof.root / "run").mkdir(parents=True, exist_ok=True)
    for top in spec.overlay:
        proof.path(top).mkdir(parents=True, exist_ok=True)
        proof.path(top + "/" + ORIGINAL).write_text("from the disk\n", encoding="utf-8")
    for kept in spec.keep:
        proof.path(kept).mkdir(parents=True, exist_ok=True)
    for bind in spec.binds:
        proof.path(bind.source).mkdir(parents=True, exist_ok=True)
    proof.say(
        True,
        f"a root-like tree in {proof.root}: overlaid {' '.join(spec.overlay)}; kept "
        f"{' '.join(spec.keep) or '<none>'}",
    )


def _start(proof: _Proof, label: str, *, show: bool) -> bool:
    code, output = proof.run("start")
    if show or code != 0:
        for line in output.splitlines():
            print(f"    {line}", flush=True)
    return proof.say(code == 0, f"{label}: the rendered script's start", f"exit {code}")


def _mounted(proof: _Proof) -> None:
    status = read_status(Path("/proc/self/mountinfo").read_text(encoding="utf-8"))
    overlaid = {overlay.mountpoint for overlay in status.overlays}
    for top in proof.spec.overlay:
        where = str(proof.path(top))
        proof.say(where in overlaid, f"{top} is an overlay with a tmpfs upper dir", "it is not")
    mounted = {mount.mountpoint for mount in proof.mounts()}
    for kept in proof.spec.keep:
        where = str(proof.path(kept))
        proof.say(where in mounted, f"{kept} is bound back from the disk", "it is not a mount")


def _disk(proof: _Proof, top: str, kept: str | None) -> None:
    view = proof.root / "run/kubemedic-rollback/lower"
    on_disk = view / top.lstrip("/") / OVERLAID
    proof.say(not on_disk.exists(), f"the disk does not have {top}/{OVERLAID}", "it does")
    if kept is not None:
        kept_disk = view / kept.lstrip("/") / KEPT
        proof.say(kept_disk.is_file(), f"the disk has {kept}/{KEPT}", "it does not")
    outcome = "a write succeeded"
    try:
        (view / top.lstrip("/") / "kubemedic-verify-probe").write_text("x", encoding="utf-8")
    except OSError as error:
        outcome = "" if error.errno == errno.EROFS else str(error)
    proof.say(not outcome, "the disk view the script keeps is read-only", outcome)
    status = read_status(Path("/proc/self/mountinfo").read_text(encoding="utf-8"))
    changes = {
        change.path: change.kind for overlay in status.overlays for change in overlay.changes
    }
    where = str(proof.path(top))
    proof.say(
        changes.get(f"{where}/{OVERLAID}") == "added"
        and changes.get(f"{where}/{ORIGINAL}") == "deleted",
        f"status lists {top}/{OVERLAID} as added and {top}/{ORIGINAL} as deleted",
        f"it lists {sorted(changes.items())}",
    )


def prove(workdir: Path) -> int:
    """The steps of the module's docstring; the exit status."""
    text = (workdir / "spec.json").read_text(encoding="utf-8")
    spec = parse_spec(documents.load_json(text, where="spec.json"), where="spec.json")
    proof = _Proof(workdir, spec)
    proof.say(True, _private())
    _probe(workdir)
    proof.say(True, "the kernel mounts a tmpfs and OverlayFS here")
    _build(proof)
    if not _start(proof, "boot", show=True):
        return 1
    _mounted(proof)
    top = spec.overlay[0]
    kept = spec.ordered_keep()[0] if spec.keep else None
    proof.path(top + "/" + OVERLAID).write_text("thrown away at reboot\n", encoding="utf-8")
    proof.path(top + "/" + ORIGINAL).unlink()
    if kept is not None:
        proof.path(kept + "/" + KEPT).write_text("kept across reboots\n", encoding="utf-8")
    proof.say(
        True,
        f"wrote {top}/{OVERLAID}, deleted {top}/{ORIGINAL}"
        + (f", wrote {kept}/{KEPT}" if kept else " (no kept directory in the spec)"),
    )
    _disk(proof, top, kept)
    before = proof.in_tree()
    code, output = proof.run("start")
    proof.say(
        code == 0 and proof.in_tree() == before,
        "a second start on the active tree changes nothing",
        f"exit {code}: {output}",
    )
    code, output = proof.run("stop")
    left = proof.in_tree()
    proof.say(code == 0 and not left, "reboot: stop unmounts it all", f"exit {code}: {left}")
    if not _start(proof, "after the reboot", show=False):
        return 1
    proof.say(
        not proof.path(top + "/" + OVERLAID).exists(),
        f"{top}/{OVERLAID} is gone: the overlaid write did not survive the reboot",
        "it is still there",
    )
    original = proof.path(top + "/" + ORIGINAL)
    proof.say(
        original.is_file() and original.read_text(encoding="utf-8") == "from the disk\n",
        f"{top}/{ORIGINAL} is back as the disk has it",
        "it is missing or changed",
    )
    if kept is not None:
        kept_file = proof.path(kept + "/" + KEPT)
        proof.say(
            kept_file.is_file()
            and kept_file.read_text(encoding="utf-8") == "kept across reboots\n",
            f"{kept}/{KEPT} persists: the kept write survived the reboot",
            "it is missing",
        )
    code, output = proof.run("stop")
    left = proof.in_tree()
    proof.say(code == 0 and not left, "stop leaves nothing mounted", f"exit {code}: {left}")
    return 1 if proof.failed else 0


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m kubemedic.rollback.proving WORKDIR [--probe]", file=sys.stderr)
        return 2
    workdir = Path(argv[0])
    try:
        if argv[1:] == ["--probe"]:
            _private()
            _probe(workdir)
            print("ok: the kernel mounts a tmpfs and OverlayFS here", flush=True)
            return 0
        return prove(workdir)
    except _Unavailable as reason:
        print(str(reason), flush=True)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
