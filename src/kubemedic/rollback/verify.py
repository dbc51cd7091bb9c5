"""``kubemedic rollback verify``: prove the rendered script on this machine, without touching it.

The proof runs in a child process that ``unshare --mount --propagation private`` puts in a
mount namespace of its own (:mod:`kubemedic.rollback.proving`): every mount it makes is
invisible outside and disappears with it, even when it crashes. The parent prepares a work
directory (the rendered script, the spec as JSON), runs the child, passes its step lines on as
they come, and removes the work directory afterwards.

Outcomes: ``True`` when every step held, ``False`` when one did not (the step says which and
why); ``VerifyUnavailable`` (exit 2) when the proof cannot run here: not root, no ``unshare``,
namespaces refused, or the kernel refuses OverlayFS (the reason is the kernel's, as ``mount``
reports it).

May import: :mod:`kubemedic.rollback.render`, :mod:`kubemedic.rollback.spec`,
:mod:`kubemedic.model`, :mod:`kubemedic.errors`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Final

import kubemedic
from kubemedic.errors import KubemedicError
from kubemedic.rollback import render
from kubemedic.rollback.spec import RollbackSpec

__all__ = ["UNAVAILABLE", "VerifyUnavailable", "probe", "verify"]

UNAVAILABLE: Final = 2
"""The child's exit status when the proof cannot run here (its last line says why)."""


class VerifyUnavailable(KubemedicError):
    """The proof cannot run on this machine; the message says why."""


def _preflight() -> str | None:
    if os.geteuid() != 0:
        return "verify needs root (it mounts file systems in a private mount namespace)"
    if shutil.which("unshare") is None:
        return "verify needs unshare (util-linux) to make a private mount namespace"
    return None


def _child(workdir: Path, *extra: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    source = str(Path(kubemedic.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(
        part for part in (source, env.get("PYTHONPATH", "")) if part
    )
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    return subprocess.Popen(  # noqa: S603 - an argument list, no shell
        [
            unshare,
            "--mount",
            "--propagation",
            "private",
            "--",
            sys.executable,
            "-m",
            "kubemedic.rollback.proving",
            str(workdir),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )


def probe() -> str | None:
    """Why the proof cannot run here (None when it can): root, ``unshare``, and a tmpfs and an
    OverlayFS mount tried in a private namespace."""
    reason = _preflight()
    if reason is not None:
        return reason
    workdir = Path(tempfile.mkdtemp(prefix="kubemedic-rollback-probe-"))
    try:
        child = _child(workdir, "--probe")
        output, _ = child.communicate(timeout=60)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if child.returncode == 0:
        return None
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else f"the probe ended with status {child.returncode}"


def verify(spec: RollbackSpec, *, echo: Callable[[str], None], keep_tree: bool = False) -> bool:
    """Run the proof for ``spec`` (see the module's docstring); each step line goes to
    ``echo`` as it is printed. ``keep_tree`` leaves the work directory in place (its path is
    echoed) for a look afterwards."""
    reason = _preflight()
    if reason is not None:
        raise VerifyUnavailable(reason)
    workdir = Path(tempfile.mkdtemp(prefix="kubemedic-rollback-verify-"))
    try:
        script = workdir / render.SCRIPT_NAME
        script.write_text(render.script(spec), encoding="utf-8")
        script.chmod(0o755)
        (workdir / "spec.json").write_text(json.dumps(spec.as_document()), encoding="utf-8")
        echo(f"proving the rollback in a private mount namespace; work directory {workdir}")
        try:
            child = _child(workdir)
        except OSError as error:
            raise VerifyUnavailable(f"cannot start unshare: {error.strerror or error}") from None
        last = ""
        with child:
            assert child.stdout is not None
            for line in child.stdout:
                text = line.rstrip("\n")
                if text.strip():
                    last = text.strip()
                echo(text)
            code = child.wait()
    finally:
        if keep_tree:
            echo(f"work directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if code == UNAVAILABLE:
        raise VerifyUnavailable(last or "the proof could not run here")
    if code not in (0, 1):
        raise VerifyUnavailable(
            f"the private mount namespace could not be made or the proof crashed "
            f"(status {code}): {last}"
        )
    return code == 0
