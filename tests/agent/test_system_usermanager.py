"""The real host against a real systemd: a user manager started for these tests.

systemd is installed on these machines but is not PID 1, so the system manager cannot be asked.
A systemd user manager can run, in a private mount namespace where ``/run/systemd/system``
exists (systemd refuses to start otherwise). The host reaches it as it reaches a node's systemd
from its pod: ``nsenter --target PID --mount --`` before ``systemctl`` (with ``--user``). So the
real ``systemctl show`` and ``systemctl restart`` run, through the real prefix, against real
units: a daemon, one that fails to start, one in a crash loop, one never started.

Needs root (a mount namespace), ``unshare``, ``nsenter`` and systemd; skipped with the reason
otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic.agent.host import HostError
from kubemedic.agent.system import CommandError, SystemHost, SystemSettings
from kubemedic.agent.system.systemd import Systemctl

UNITS = {
    "km-kubelet.service": "[Service]\nExecStart=/bin/sleep 600\n",
    "km-runtime.service": "[Service]\nType=oneshot\nExecStart=/bin/false\n",
    "km-crash.service": (
        "[Unit]\nStartLimitIntervalSec=0\n"
        "[Service]\nExecStart=/bin/false\nRestart=always\nRestartSec=200ms\n"
    ),
    "km-idle.service": "[Service]\nExecStart=/bin/sleep 600\n",
}
SYSTEMD = next(
    (p for p in (Path("/lib/systemd/systemd"), Path("/usr/lib/systemd/systemd")) if p.exists()),
    None,
)


@dataclass(frozen=True)
class UserManager:
    pid: int
    runtime: Path

    def settings(self, **changes: object) -> SystemSettings:
        prefix = ("nsenter", "--target", str(self.pid), "--mount", "--")
        settings = SystemSettings(
            kubelet_unit="km-kubelet.service",
            runtime_unit="km-crash.service",
            command_prefix=(*prefix, "env", f"XDG_RUNTIME_DIR={self.runtime}"),
            systemctl=("systemctl", "--user"),
            restart_timeout=timedelta(seconds=30),
        )
        return replace(settings, **changes)  # type: ignore[arg-type]


def _missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root for a private mount namespace"
    if SYSTEMD is None:
        return "systemd is not installed"
    for tool in ("unshare", "nsenter", "systemctl"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed"
    if not Path("/run/systemd").is_dir():
        return "/run/systemd does not exist to mount over"
    return None


@pytest.fixture(scope="module")
def manager() -> Iterator[UserManager]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    base = Path(tempfile.mkdtemp(prefix="km-", dir="/tmp"))  # short: a socket path lives here
    runtime = base / "run"
    runtime.mkdir(mode=0o700)
    units = base / "config" / "systemd" / "user"
    units.mkdir(parents=True)
    for name, text in UNITS.items():
        (units / name).write_text(text)
    log = (base / "manager.log").open("wb")
    script = 'mount -t tmpfs tmpfs /run/systemd && mkdir /run/systemd/system && exec "$0" --user'
    env = {
        **os.environ,
        "XDG_RUNTIME_DIR": str(runtime),
        "XDG_CONFIG_HOME": str(base / "config"),
    }
    process = subprocess.Popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(SYSTEMD)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=log,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (runtime / "systemd" / "private").exists():
            if process.poll() is not None or time.monotonic() > deadline:
                said = (base / "manager.log").read_text(errors="replace").strip()[:300]
                pytest.skip(f"a systemd user manager would not start here: {said or 'no output'}")
            time.sleep(0.05)
        yield UserManager(pid=process.pid, runtime=runtime)
    finally:
        process.terminate()  # SIGTERM: the user manager stops its units and exits
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)
            process.wait()
        log.close()
        shutil.rmtree(base, ignore_errors=True)


def test_restarting_the_daemon_runs_a_new_main_process(manager: UserManager) -> None:
    host = SystemHost(manager.settings())
    host.restart_unit("km-kubelet.service")  # a stopped unit: restart starts it
    first = host.unit_status("km-kubelet.service")
    assert (first.active_state, first.sub_state) == ("active", "running")
    assert first.main_pid > 0
    assert first.started_at is not None
    assert first.active_since is not None
    host.restart_unit("km-kubelet.service")
    second = host.unit_status("km-kubelet.service")
    assert second.active
    assert second.main_pid not in (0, first.main_pid)
    assert second.started_at is not None
    assert second.started_at >= first.started_at


def test_the_default_timestamp_form_reads_the_same_as_unix_seconds(manager: UserManager) -> None:
    settings = manager.settings()
    host = SystemHost(settings)
    host.restart_unit("km-kubelet.service")
    unix = host.unit_status("km-kubelet.service")
    pretty = Systemctl(
        program=settings.systemctl,
        prefix=settings.command_prefix,
        query_timeout=settings.query_timeout,
        restart_timeout=settings.restart_timeout,
    )
    pretty.unix_timestamps = False
    assert "--timestamp=unix" not in pretty.show_argv("km-kubelet.service")
    assert pretty.show("km-kubelet.service") == unix


def test_a_unit_that_fails_to_start_makes_restart_a_clear_error(manager: UserManager) -> None:
    host = SystemHost(manager.settings(runtime_unit="km-runtime.service"))
    with pytest.raises(CommandError) as caught:
        host.restart_unit("km-runtime.service")
    assert caught.value.status == 1
    assert caught.value.said.startswith("Job for km-runtime.service failed")
    assert "systemctl --user restart --no-ask-password -- km-runtime.service`" in str(caught.value)
    assert host.unit_status("km-runtime.service").active_state == "failed"


def test_a_crash_looping_unit_shows_its_restart_count(manager: UserManager) -> None:
    host = SystemHost(manager.settings())
    host.restart_unit("km-crash.service")
    deadline = time.monotonic() + 60
    status = host.unit_status("km-crash.service")
    while status.restarts < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
        status = host.unit_status("km-crash.service")
    assert status.restarts >= 2


def test_a_unit_never_started_has_no_start_time(manager: UserManager) -> None:
    status = SystemHost(manager.settings()).unit_status("km-idle.service")
    assert (status.active_state, status.sub_state) == ("inactive", "dead")
    assert status.started_at is None
    assert status.active_since is None
    assert (status.main_pid, status.restarts) == (0, 0)


def test_a_unit_systemd_does_not_have_is_an_error(manager: UserManager) -> None:
    with pytest.raises(HostError, match=r"systemd has no unit km-missing\.service"):
        SystemHost(manager.settings()).unit_status("km-missing.service")


def test_units_other_than_the_kubelet_and_runtime_are_never_restarted(
    manager: UserManager,
) -> None:
    host = SystemHost(manager.settings())
    with pytest.raises(HostError, match=r"refusing to restart 'km-idle\.service'"):
        host.restart_unit("km-idle.service")
    assert host.unit_status("km-idle.service").active_state == "inactive"
