"""The rendered files: the unit's directives, the script's order of mounts, the cloud-config,
and both linters (shellcheck, systemd-analyze verify) on what is rendered."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import pytest

from kubemedic.model import documents
from kubemedic.rollback import render
from kubemedic.rollback.spec import RollbackSpec, load_spec, parse_spec
from tests.inprocess import kubemedic, one_error_line
from tests.rollback.conftest import tool_or_skip

SPEC = parse_spec(
    {
        "overlay": ["/etc", "/var"],
        "keep": ["/etc/kubernetes", "/var/lib/kubelet", "/var/lib/containerd", "/var/log"],
        "binds": [{"source": "/srv/persist/ssh", "target": "/etc/ssh"}],
        "tmpfsSize": "1Gi",
    }
)


def directives(unit: str) -> dict[str, dict[str, list[str]]]:
    sections: dict[str, dict[str, list[str]]] = {}
    current = ""
    for line in unit.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            sections[current] = {}
            continue
        key, _, value = line.partition("=")
        sections[current].setdefault(key, []).append(value)
    return sections


def test_the_unit_runs_the_script_once_as_part_of_local_fs_before_the_kubelet() -> None:
    unit = directives(render.unit(SPEC))
    assert unit["Unit"]["DefaultDependencies"] == ["no"]
    before = unit["Unit"]["Before"][0].split()
    for name in ("local-fs.target", "kubelet.service", "containerd.service"):
        assert name in before
    assert unit["Unit"]["After"] == ["systemd-remount-fs.service"]
    assert unit["Unit"]["RequiresMountsFor"][0].split() == [
        "/run",
        "/etc",
        "/var",
        "/srv/persist/ssh",
    ]
    assert unit["Unit"]["ConditionKernelCommandLine"] == ["!kubemedic.rollback=off"]
    assert unit["Service"] == {
        "Type": ["oneshot"],
        "RemainAfterExit": ["yes"],
        "ExecStart": ["/usr/local/sbin/kubemedic-rollback start"],
    }
    assert unit["Install"] == {"WantedBy": ["local-fs.target"]}


def test_the_script_carries_the_spec_and_mounts_in_order() -> None:
    script = render.script(SPEC)
    assert script.startswith("#!/bin/sh\n")
    assert "set -eu\n" in script
    assert "OVERLAY='/etc /var'\n" in script
    assert "KEEP='/etc/kubernetes /var/log /var/lib/containerd /var/lib/kubelet'\n" in script
    assert "BINDS='/srv/persist/ssh:/etc/ssh'\n" in script
    assert f"SIZE='{2**30}'\n" in script
    assert "@@" not in script
    start = script.split("\nstart() {", 1)[1].split("\n}\n", 1)[0]
    order = [
        'mount -t tmpfs -o "size=$SIZE,mode=0700"',
        'bind_lower "$dir"',
        'on_disk "$lower$dir"',
        'mount_overlay "$dir"',
        'mount --rbind -- "$lower$dir" "$root$dir"',
        'mount --rbind -- "$(disk_path "${pair%%:*}")"',
        "mount -o remount,bind,ro",
    ]
    positions = [start.index(step) for step in order]
    assert positions == sorted(positions)
    stop = script.split("\nstop() {", 1)[1].split("\n}\n", 1)[0]
    assert stop.index('umount -R -- "$root$dir"') < stop.index('umount -R -- "$lower$dir"')
    assert stop.index('umount -R -- "$lower$dir"') < stop.index('umount -- "$tmpfs"')
    assert '$(reverse "$OVERLAY")' in stop


def test_the_cloud_config_installs_both_files_and_enables_the_unit_after_kubeadm_join() -> None:
    text = render.cloud_config(SPEC)
    assert text.startswith("#cloud-config\n")
    config = documents.load_yaml(text, where="cloud-config")
    files = {item["path"]: item for item in config["write_files"]}
    assert files[render.INSTALL_PATH]["content"] == render.script(SPEC)
    assert files[render.INSTALL_PATH]["permissions"] == "0755"
    assert files[render.UNIT_PATH]["content"] == render.unit(SPEC)
    (command,) = config["runcmd"]
    assert command[:2] == ["sh", "-c"]
    assert "test -s /etc/kubernetes/kubelet.conf" in command[2]
    assert "systemctl enable kubemedic-rollback.service" in command[2]


def test_shellcheck_passes_the_rendered_script(tmp_path: Path) -> None:
    shellcheck = tool_or_skip("shellcheck", "shellcheck")
    for spec in (RollbackSpec(), SPEC):
        path = tmp_path / "kubemedic-rollback"
        path.write_text(render.script(spec), encoding="utf-8")
        done = subprocess.run(
            [shellcheck, "--shell=sh", str(path)], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, done.stdout + done.stderr


def _install(root: Path, unit: str) -> None:
    script = root / render.INSTALL_PATH.lstrip("/")
    script.parent.mkdir(parents=True)
    script.write_text(render.script(SPEC), encoding="utf-8")
    script.chmod(0o755)
    path = root / render.UNIT_PATH.lstrip("/")
    path.parent.mkdir(parents=True)
    path.write_text(unit, encoding="utf-8")


def _analyze(analyze: str, root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [analyze, "verify", f"--root={root}", render.UNIT_NAME],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_systemd_analyze_verify_passes_the_rendered_unit_installed_in_a_root(
    tmp_path: Path,
) -> None:
    analyze = tool_or_skip("systemd-analyze", "systemd")
    _install(tmp_path / "good", render.unit(SPEC))
    done = _analyze(analyze, tmp_path / "good")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "" and done.stderr.strip() == "", done.stdout + done.stderr
    # The linter is live: the same check reports a broken unit.
    broken = render.unit(SPEC).replace("Type=oneshot", "Type=oneshoot")
    _install(tmp_path / "bad", broken)
    said = _analyze(analyze, tmp_path / "bad")
    assert "oneshoot" in said.stdout + said.stderr


def test_render_writes_the_files_and_the_spec_reads_back(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec_file = tmp_path / "spec.yaml"
    spec_file.write_text(
        "overlay: [/etc, /var]\n"
        "keep: [/etc/kubernetes, /var/lib/kubelet, /var/lib/containerd, /var/log]\n"
        "binds: [{source: /srv/persist/ssh, target: /etc/ssh}]\ntmpfsSize: 1Gi\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code, stdout, err = kubemedic(
        capsys, "rollback", "render", "--out", str(out), "--spec", str(spec_file)
    )
    assert code == 0, err
    names = sorted(path.name for path in out.iterdir())
    assert names == sorted(
        [render.SCRIPT_NAME, render.UNIT_NAME, render.CLOUD_CONFIG_NAME, render.SPEC_NAME]
    )
    assert f"wrote {out / render.SCRIPT_NAME}" in stdout
    assert (out / render.SCRIPT_NAME).stat().st_mode & stat.S_IXUSR
    assert (out / render.SCRIPT_NAME).read_text(encoding="utf-8") == render.script(SPEC)
    again = load_spec((out / render.SPEC_NAME).read_text(encoding="utf-8"), where="x")
    assert again == SPEC


def test_render_refuses_an_out_that_is_a_file_and_a_bad_spec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    taken = tmp_path / "taken"
    taken.write_text("x", encoding="utf-8")
    code, _, err = kubemedic(capsys, "rollback", "render", "--out", str(taken))
    assert code == 2
    assert "is not a directory" in one_error_line(err)
    bad = tmp_path / "bad.yaml"
    bad.write_text("overlay: [/etc]\nkeep: []\n", encoding="utf-8")
    code, _, err = kubemedic(
        capsys, "rollback", "render", "--out", str(tmp_path / "o"), "--spec", str(bad)
    )
    assert code == 2
    assert re.search(
        r"--spec .*bad.yaml: overlay /etc without keeping /etc/kubernetes", one_error_line(err)
    )
    assert not (tmp_path / "o").exists()
    code, _, err = kubemedic(
        capsys,
        "rollback",
        "render",
        "--out",
        str(tmp_path / "o"),
        "--spec",
        str(tmp_path / "none.yaml"),
    )
    assert code == 2
    assert "cannot read it" in one_error_line(err)
