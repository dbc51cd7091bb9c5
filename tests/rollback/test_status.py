"""``kubemedic rollback status``: crafted mount tables, and a real overlay set up by the rendered
script in a private mount namespace."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from kubemedic.rollback import render
from kubemedic.rollback.mountinfo import MountinfoError, parse_mountinfo
from kubemedic.rollback.spec import parse_spec
from kubemedic.rollback.status import read_status
from tests.inprocess import kubemedic, one_error_line
from tests.rollback.conftest import in_namespace

HOST = (
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "25 22 0:22 / /run rw,nosuid shared:5 - tmpfs tmpfs rw,size=400000k\n"
    # containerd's own overlay: upper dir on the disk, not the rollback's kind
    "40 22 0:40 / /run/containerd/rootfs rw - overlay overlay rw,lowerdir=/var/lib/c/1/fs,"
    "upperdir=/var/lib/c/2/fs,workdir=/var/lib/c/2/work\n"
)


def crafted(tmp_path: Path) -> tuple[str, Path]:
    """A mount table whose tmpfs is ``tmp_path`` (statvfs reads it) and whose overlay on
    ``/my\\040etc`` has its upper and lower dirs in ``tmp_path``."""
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    (lower / "sub").mkdir(parents=True)
    (lower / "hostname").write_text("disk\n", encoding="utf-8")
    (lower / "sub" / "old").write_text("disk\n", encoding="utf-8")
    (lower / "gone").write_text("disk\n", encoding="utf-8")
    (upper / "sub").mkdir(parents=True)
    (upper / "hostname").write_text("changed\n", encoding="utf-8")
    (upper / "sub" / "new").write_text("12345", encoding="utf-8")
    (upper / "newdir").mkdir()
    os.mknod(upper / "gone", stat.S_IFCHR | 0o000, os.makedev(0, 0))
    text = HOST + (
        f"50 25 0:50 / {tmp_path} rw - tmpfs kubemedic-rollback rw,size=1024k\n"
        f"60 22 0:60 / /my\\040etc rw shared:9 - overlay kubemedic-rollback rw,lowerdir={lower},"
        f"upperdir={upper},workdir={tmp_path}/work\n"
        "61 60 254:1 /etc/kubernetes /my\\040etc/kubernetes rw - ext4 /dev/vda1 rw\n"
    )
    return text, upper


@pytest.fixture
def root_only() -> None:
    if os.geteuid() != 0:
        pytest.skip("a whiteout (a character device 0/0) needs root to make")


def test_mountinfo_lines_are_read_with_their_escapes() -> None:
    mounts = parse_mountinfo(HOST + "61 60 254:1 /a\\040b /x\\134y rw - ext4 /dev/vda1 rw\n")
    assert [mount.mountpoint for mount in mounts] == [
        "/",
        "/run",
        "/run/containerd/rootfs",
        "/x\\y",
    ]
    assert mounts[3].root == "/a b"
    assert mounts[0].shared and not mounts[2].shared
    assert mounts[2].super_options["upperdir"] == "/var/lib/c/2/fs"
    with pytest.raises(MountinfoError, match="line 2"):
        parse_mountinfo("22 1 254:1 / / rw - ext4 /dev/vda1 rw\nnot a mount line\n")


def test_status_of_a_crafted_table_lists_what_a_reboot_throws_away(
    tmp_path: Path, root_only: None
) -> None:
    text, _ = crafted(tmp_path)
    status = read_status(text)
    (overlay,) = status.overlays
    assert overlay.mountpoint == "/my etc"
    assert overlay.ours and overlay.tmpfs == str(tmp_path)
    assert overlay.kept == ["/my etc/kubernetes"]
    kinds = {change.path: change.kind for change in overlay.changes}
    assert kinds == {
        "/my etc/hostname": "modified",
        "/my etc/sub/new": "added",
        "/my etc/newdir": "added",
        "/my etc/gone": "deleted",
    }
    assert overlay.bytes == len("changed\n") + 5
    (tmpfs,) = status.tmpfs
    assert tmpfs.size_bytes is not None and tmpfs.size_bytes > 0
    assert read_status(text, limit=1).overlays[0].count == 4
    assert len(read_status(text, limit=1).overlays[0].changes) == 1


def test_status_json_and_table_through_the_cli(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, root_only: None
) -> None:
    text, _ = crafted(tmp_path)
    table = tmp_path / "mountinfo"
    table.write_text(text, encoding="utf-8")
    code, out, err = kubemedic(
        capsys, "rollback", "status", "--mountinfo", str(table), "-o", "json"
    )
    assert code == 0, err
    document = json.loads(out)
    (overlay,) = document["overlays"]
    assert overlay["changeCount"] == 4 and not overlay["truncated"]
    assert {"path": "/my etc/gone", "kind": "deleted", "size": 0} in overlay["changes"]
    code, out, err = kubemedic(
        capsys, "rollback", "status", "--mountinfo", str(table), "--limit", "1"
    )
    assert code == 0, err
    assert "/my etc" in out and "3 more under /my etc" in out and "(RAM)" in out


def test_nothing_overlaid_is_said_plainly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    table = tmp_path / "mountinfo"
    table.write_text(HOST, encoding="utf-8")
    code, out, _ = kubemedic(capsys, "rollback", "status", "--mountinfo", str(table))
    assert code == 0
    assert out.startswith("nothing overlaid")
    code, out, _ = kubemedic(capsys, "rollback", "status", "--mountinfo", str(table), "-o", "json")
    assert json.loads(out) == {"overlays": [], "tmpfs": []}


def test_a_bad_mount_table_is_an_input_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    table = tmp_path / "mountinfo"
    table.write_text("garbage\n", encoding="utf-8")
    code, _, err = kubemedic(capsys, "rollback", "status", "--mountinfo", str(table))
    assert code == 2
    assert "line 1" in one_error_line(err)


DRIVER = """
script=$1 root=$2
sh "$script" start "$root" >/dev/null
echo changed > "$root/etc/hostname"
echo new > "$root/etc/new.conf"
rm "$root/etc/motd"
rm -r "$root/etc/ssh" && mkdir "$root/etc/ssh" && echo fresh > "$root/etc/ssh/sshd_config"
echo persisted > "$root/etc/kubernetes/kubelet.conf"
python3 -m kubemedic.cli rollback status -o json
sh "$script" stop "$root" >/dev/null
"""


def test_status_of_a_real_overlay_in_a_private_namespace(
    namespaces_or_skip: None, tmp_path: Path
) -> None:
    spec = parse_spec({"overlay": ["/etc", "/home"], "keep": ["/etc/kubernetes"]})
    script = tmp_path / "kubemedic-rollback"
    script.write_text(render.script(spec), encoding="utf-8")
    root = tmp_path / "root"
    for path in ("etc/kubernetes", "etc/ssh", "home", "run"):
        (root / path).mkdir(parents=True)
    for path in ("etc/hostname", "etc/motd", "etc/ssh/ssh_config"):
        (root / path).write_text("disk\n", encoding="utf-8")
    done = in_namespace(DRIVER, str(script), str(root))
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    mine = [
        overlay for overlay in document["overlays"] if overlay["mountpoint"].startswith(str(root))
    ]
    by_mount = {overlay["mountpoint"]: overlay for overlay in mine}
    assert set(by_mount) == {f"{root}/etc", f"{root}/home"}
    etc = by_mount[f"{root}/etc"]
    assert etc["ours"] and etc["kept"] == [f"{root}/etc/kubernetes"]
    kinds = {change["path"]: change["kind"] for change in etc["changes"]}
    assert kinds == {
        f"{root}/etc/hostname": "modified",
        f"{root}/etc/new.conf": "added",
        f"{root}/etc/motd": "deleted",
        f"{root}/etc/ssh": "replaced",
        f"{root}/etc/ssh/sshd_config": "added",
    }
    assert by_mount[f"{root}/home"]["changeCount"] == 0
    (tmpfs,) = [t for t in document["tmpfs"] if t["mountpoint"].startswith(str(root))]
    assert tmpfs["ours"] and tmpfs["usedBytes"] > 0
    # The kept write went to the disk; nothing is mounted outside the namespace.
    assert (root / "etc/kubernetes/kubelet.conf").read_text(encoding="utf-8") == "persisted\n"
    assert (root / "etc/hostname").read_text(encoding="utf-8") == "disk\n"
    assert not (root / "etc/new.conf").exists()
