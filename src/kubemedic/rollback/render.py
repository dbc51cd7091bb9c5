"""Rendering a spec: the overlay script, its systemd unit, the cloud-init snippet, and writing them.

* ``script(spec)``: a POSIX ``sh`` script (``script.sh`` beside this module with the spec filled
  in): ``start [ROOT]`` mounts a tmpfs for the upper dirs, binds each overlaid directory's disk
  view privately under ``/run/kubemedic-rollback/lower``, makes the kept directories and binds
  exist on the disk, mounts OverlayFS over each overlaid directory (lower dir: its disk view;
  upper and work dirs: on the tmpfs), binds each kept directory back from the disk view, mounts
  the extra binds, then makes the disk view read-only (it stays, for ``status``). ``stop
  [ROOT]`` unmounts in reverse order; ``check [ROOT]`` says whether it is active. ``start`` on
  an active system does nothing; a failing ``start`` undoes what it mounted.
* ``unit(spec)``: ``kubemedic-rollback.service``, a oneshot that stays active, run as part of
  ``local-fs.target`` (``DefaultDependencies=no``; after the root is remounted read-write and
  the overlaid directories' own mounts, before ``local-fs.target``, the journal flush,
  tmpfiles, the kubelet and the container runtimes). Booting with ``kubemedic.rollback=off`` on
  the kernel command line skips it (to change the disk on purpose).
* ``cloud_config(spec)``: ``#cloud-config`` writing both files and, in ``runcmd`` (after
  ``kubeadm join``), enabling the unit once ``/etc/kubernetes/kubelet.conf`` exists: the
  overlays take effect at the next boot, as the talk does.
* ``write(spec, out)``: the three files and the effective spec into the directory ``out``,
  each through :func:`kubemedic.output.files.write_atomically`.

May import: :mod:`kubemedic.rollback.spec`, :mod:`kubemedic.output`, :mod:`kubemedic.errors`.
"""

from __future__ import annotations

import os
import stat
from importlib import resources
from pathlib import Path
from typing import Final

from kubemedic.output.files import OutputError, write_atomically
from kubemedic.rollback.spec import RollbackSpec

__all__ = [
    "CLOUD_CONFIG_NAME",
    "INSTALL_PATH",
    "SCRIPT_NAME",
    "SPEC_NAME",
    "UNIT_NAME",
    "UNIT_PATH",
    "cloud_config",
    "script",
    "unit",
    "write",
]

SCRIPT_NAME: Final = "kubemedic-rollback"
UNIT_NAME: Final = "kubemedic-rollback.service"
CLOUD_CONFIG_NAME: Final = "cloud-config.yaml"
SPEC_NAME: Final = "rollback-spec.yaml"
INSTALL_PATH: Final = "/usr/local/sbin/kubemedic-rollback"
UNIT_PATH: Final = "/etc/systemd/system/kubemedic-rollback.service"
OFF_SWITCH: Final = "kubemedic.rollback=off"

BEFORE: Final = (
    "local-fs.target",
    "systemd-journal-flush.service",
    "systemd-tmpfiles-setup.service",
    "kubelet.service",
    "containerd.service",
    "crio.service",
)
"""What the unit runs before: the end of local file systems (so every service after it sees the
overlays), the journal's move to /var/log, tmpfiles, the kubelet and the container runtimes."""


def script(spec: RollbackSpec) -> str:
    """The overlay script for ``spec`` (see the module's docstring)."""
    template = resources.files("kubemedic.rollback").joinpath("script.sh").read_text("utf-8")
    values = {
        "@@OVERLAY@@": " ".join(spec.overlay),
        "@@KEEP@@": " ".join(spec.ordered_keep()),
        "@@BINDS@@": " ".join(f"{bind.source}:{bind.target}" for bind in spec.binds),
        "@@SIZE@@": spec.tmpfs_option(),
    }
    for marker, value in values.items():
        template = template.replace(marker, value)
    return template


def unit(spec: RollbackSpec, *, exec_path: str = INSTALL_PATH) -> str:
    """The systemd unit running ``exec_path start`` at boot (see the module's docstring)."""
    mounts = ["/run", *spec.overlay, *(bind.source for bind in spec.binds)]
    overlaid = " ".join(spec.overlay)
    return "\n".join(
        [
            "[Unit]",
            f"Description=kubemedic filesystem rollback: tmpfs overlays on {overlaid}",
            "Documentation=https://docs.kernel.org/filesystems/overlayfs.html",
            "DefaultDependencies=no",
            f"ConditionKernelCommandLine=!{OFF_SWITCH}",
            "After=systemd-remount-fs.service",
            f"RequiresMountsFor={' '.join(dict.fromkeys(mounts))}",
            f"Before={' '.join(BEFORE)}",
            "",
            "[Service]",
            "Type=oneshot",
            "RemainAfterExit=yes",
            f"ExecStart={exec_path} start",
            "# No ExecStop: /etc and /var cannot be unmounted under a running system; the next",
            "# boot starts from the disk again.",
            "",
            "[Install]",
            "WantedBy=local-fs.target",
            "",
        ]
    )


def cloud_config(spec: RollbackSpec) -> str:
    """The ``#cloud-config`` installing the script and the unit after ``kubeadm join``."""
    lines = [
        "#cloud-config",
        "# kubemedic filesystem rollback. Merge write_files and runcmd into the node's own",
        "# cloud-config, with these runcmd entries AFTER the kubeadm join command (Cluster API:",
        "# KubeadmConfig spec.files and spec.postKubeadmCommands). The unit is enabled only once",
        "# kubeadm join has written /etc/kubernetes/kubelet.conf; the overlays take effect at the",
        "# next boot.",
        "write_files:",
        *_write_file(INSTALL_PATH, "0755", script(spec)),
        *_write_file(UNIT_PATH, "0644", unit(spec)),
        "runcmd:",
        "  - - sh",
        "    - -c",
        "    - >-",
        "      if test -s /etc/kubernetes/kubelet.conf;",
        "      then systemctl daemon-reload && systemctl enable kubemedic-rollback.service;",
        "      else echo 'kubemedic-rollback: kubeadm join has not run: not enabled' >&2; exit 1;",
        "      fi",
        "",
    ]
    return "\n".join(lines)


def _write_file(path: str, mode: str, content: str) -> list[str]:
    body = [f"      {line}" if line else "" for line in content.rstrip("\n").split("\n")]
    return [
        f"  - path: {path}",
        "    owner: root:root",
        f"    permissions: '{mode}'",
        "    content: |",
        *body,
    ]


def spec_yaml(spec: RollbackSpec) -> str:
    """The effective spec, as YAML that ``--spec`` reads back."""
    document = spec.as_document()
    lines = ["# kubemedic rollback spec (the one these files were rendered from)"]
    for key in ("overlay", "keep"):
        lines.append(f"{key}:")
        lines.extend(f"  - {path}" for path in document[key])
    if spec.binds:
        lines.append("binds:")
        for bind in spec.binds:
            lines.extend([f"  - source: {bind.source}", f"    target: {bind.target}"])
    else:
        lines.append("binds: []")
    lines.append(f"tmpfsSize: '{spec.tmpfs_size}'")
    lines.append(f"runtimeRoot: {spec.runtime_root}")
    return "\n".join(lines) + "\n"


def write(spec: RollbackSpec, out: Path, *, force: bool = False) -> list[Path]:
    """Write the script (mode 0755), the unit, the cloud-config and the spec into ``out``
    (made when missing; a path that is not a directory is refused); returns their paths."""
    try:
        mode = os.stat(out).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise OutputError(f"--out {out}: cannot use it: {error.strerror or error}") from None
    if mode is not None and not stat.S_ISDIR(mode):
        raise OutputError(f"--out {out}: is not a directory; give a directory to write into")
    files = [
        (SCRIPT_NAME, script(spec)),
        (UNIT_NAME, unit(spec)),
        (CLOUD_CONFIG_NAME, cloud_config(spec)),
        (SPEC_NAME, spec_yaml(spec)),
    ]
    written: list[Path] = []
    for name, text in files:
        path = out / name
        write_atomically(path, text.encode("utf-8"), flag="--out", force=force)
        written.append(path)
    try:
        os.chmod(out / SCRIPT_NAME, 0o755)  # noqa: S103 - an executable script, as installed
    except OSError as error:
        raise OutputError(f"--out {out / SCRIPT_NAME}: cannot chmod: {error.strerror}") from None
    return written
