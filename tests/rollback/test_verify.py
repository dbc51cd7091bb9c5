"""``kubemedic rollback verify`` end to end: the rendered script proves itself in a private mount
namespace (root and OverlayFS work on CI machines; elsewhere the test skips with the reason)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kubemedic.rollback import render
from kubemedic.rollback.spec import parse_spec
from tests.inprocess import kubemedic, one_error_line
from tests.rollback.conftest import SRC, in_namespace


def test_verify_proves_the_default_spec(
    capsys: pytest.CaptureFixture[str], namespaces_or_skip: None
) -> None:
    code, out, err = kubemedic(capsys, "rollback", "verify")
    assert code == 0, out + err
    assert "FAILED" not in out
    for step in (
        "ok: a private mount namespace",
        "ok: /etc is an overlay with a tmpfs upper dir",
        "ok: /var/lib/kubelet is bound back from the disk",
        "ok: the disk does not have /etc/kubemedic-verify-overlaid.txt",
        "ok: the disk has /etc/kubernetes/kubemedic-verify-kept.txt",
        "ok: a second start on the active tree changes nothing",
        "ok: reboot: stop unmounts it all",
        "the overlaid write did not survive the reboot",
        "the kept write survived the reboot",
        "ok: stop leaves nothing mounted",
    ):
        assert step in out
    assert out.rstrip().endswith("the kept write persists")
    work = out.split("work directory ", 1)[1].split()[0]
    assert not Path(work).exists()


def test_verify_proves_a_spec_with_binds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, namespaces_or_skip: None
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "overlay: [/home, /opt]\nkeep: [/opt/cni/bin]\ntmpfsSize: 16Mi\n"
        "binds: [{source: /srv/persist, target: /home/persist}]\n",
        encoding="utf-8",
    )
    code, out, err = kubemedic(capsys, "rollback", "verify", "--spec", str(spec))
    assert code == 0, out + err
    assert "ok: /home/kubemedic-verify-overlaid.txt is gone" in out
    assert "ok: /opt/cni/bin/kubemedic-verify-kept.txt persists" in out


def test_verify_as_another_user_is_refused_with_the_reason() -> None:
    # A user namespace without a mapping: the same files, but the process is not root in it.
    unshare = shutil.which("unshare")
    if unshare is None:
        pytest.skip("unshare (util-linux) is not installed")
    done = subprocess.run(
        [unshare, "--user", sys.executable, "-m", "kubemedic.cli", "rollback", "verify"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": SRC},
        timeout=60,
    )
    if "unshare failed" in done.stderr:
        pytest.skip(f"user namespaces are refused here: {done.stderr.strip()}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "verify needs root" in one_error_line(done.stderr)


START_TWICE = """
script=$1 root=$2
sh "$script" start "$root" > /dev/null
before=$(grep -c " $root/" /proc/self/mountinfo)
sh "$script" start "$root"
after=$(grep -c " $root/" /proc/self/mountinfo)
test "$before" = "$after"
sh "$script" check "$root"
sh "$script" stop "$root" > /dev/null
sh "$script" stop "$root"
if sh "$script" check "$root"; then exit 9; fi
"""


def test_the_script_is_idempotent_both_ways(namespaces_or_skip: None, tmp_path: Path) -> None:
    script = tmp_path / "kubemedic-rollback"
    script.write_text(
        render.script(parse_spec({"overlay": ["/home"], "keep": []})), encoding="utf-8"
    )
    (tmp_path / "root/home").mkdir(parents=True)
    done = in_namespace(START_TWICE, str(script), str(tmp_path / "root"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already active" in done.stdout
    assert "active\n" in done.stdout
    assert "not active" in done.stdout and "inactive" in done.stdout


FAILING = """
script=$1 root=$2
if sh "$script" start "$root"; then exit 9; fi
grep -c " $root/" /proc/self/mountinfo || true
"""


def test_a_failing_start_undoes_what_it_mounted(namespaces_or_skip: None, tmp_path: Path) -> None:
    # /opt is missing from the tree: start mounts the tmpfs and /home's view, then fails.
    script = tmp_path / "kubemedic-rollback"
    script.write_text(
        render.script(parse_spec({"overlay": ["/home", "/opt"], "keep": []})), encoding="utf-8"
    )
    (tmp_path / "root/home").mkdir(parents=True)
    done = in_namespace(FAILING, str(script), str(tmp_path / "root"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "expected a directory" in done.stderr
    assert "undoing what it mounted" in done.stderr
    assert done.stdout.strip().splitlines()[-1] == "0"


def test_the_script_refuses_a_root_it_cannot_quote_into_mount_options(tmp_path: Path) -> None:
    script = tmp_path / "kubemedic-rollback"
    script.write_text(render.script(parse_spec({})), encoding="utf-8")
    done = subprocess.run(
        ["sh", str(script), "check", "/tmp/a,b"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert "only letters, digits" in done.stderr
    done = subprocess.run(["sh", str(script), "bogus"], capture_output=True, text=True, check=False)
    assert done.returncode == 2 and "usage:" in done.stderr
