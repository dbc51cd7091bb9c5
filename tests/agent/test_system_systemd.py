"""Reading systemd: ``systemctl show``'s real output parsed, unit names checked before use, the
argument lists systemctl gets, the fallback for a systemctl without ``--timestamp=unix``, and the
real systemctl of this machine (which says clearly when systemd is not PID 1)."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kubemedic.agent.host import HostError, UnitStatus
from kubemedic.agent.system import CommandError, SystemHost, SystemSettings
from kubemedic.agent.system.systemd import Systemctl, parse_show, parse_timestamp, unit_name_problem

# Real output of systemd 252 (Debian 12), ``systemctl show --no-pager --property=LoadState,
# ActiveState,SubState,InactiveExitTimestamp,ActiveEnterTimestamp,NRestarts,MainPID
# [--timestamp=unix] -- UNIT``: properties come in systemd's order, not the order asked.
RUNNING_UNIX = """\
MainPID=10646
NRestarts=0
LoadState=loaded
ActiveState=active
SubState=running
InactiveExitTimestamp=@1796188578
ActiveEnterTimestamp=@1796188578
"""
RUNNING_PRETTY = """\
MainPID=10646
NRestarts=0
LoadState=loaded
ActiveState=active
SubState=running
InactiveExitTimestamp=Wed 2026-12-02 05:16:18 UTC
ActiveEnterTimestamp=Wed 2026-12-02 05:16:18 UTC
"""
RUNNING_US_UTC = """\
MainPID=10646
NRestarts=0
LoadState=loaded
ActiveState=active
SubState=running
InactiveExitTimestamp=Wed 2026-12-02 05:16:18.977401 UTC
ActiveEnterTimestamp=Wed 2026-12-02 05:16:18.977401 UTC
"""
# A unit with Restart=always whose process keeps failing: between attempts.
CRASH_LOOPING = """\
MainPID=0
NRestarts=3
LoadState=loaded
ActiveState=activating
SubState=auto-restart
InactiveExitTimestamp=@1796188582
ActiveEnterTimestamp=@1796188582
"""
NEVER_STARTED = """\
MainPID=0
NRestarts=0
LoadState=loaded
ActiveState=inactive
SubState=dead
InactiveExitTimestamp=
ActiveEnterTimestamp=
"""
NOT_FOUND = """\
MainPID=0
NRestarts=0
LoadState=not-found
ActiveState=inactive
SubState=dead
InactiveExitTimestamp=
ActiveEnterTimestamp=
"""
NOT_PID1 = "System has not been booted with systemd as init system (PID 1). Can't operate."
STARTED = datetime(2026, 12, 2, 5, 16, 18, tzinfo=UTC)


def test_a_running_unit_reads_the_same_in_unix_and_default_timestamps() -> None:
    expected = UnitStatus(
        unit="kubelet.service",
        active_state="active",
        sub_state="running",
        started_at=STARTED,
        active_since=STARTED,
        restarts=0,
        main_pid=10646,
    )
    assert parse_show("kubelet.service", RUNNING_UNIX) == expected
    assert parse_show("kubelet.service", RUNNING_PRETTY) == expected
    assert parse_show("kubelet.service", RUNNING_UNIX).active


def test_microsecond_timestamps_keep_their_fraction() -> None:
    status = parse_show("kubelet.service", RUNNING_US_UTC)
    assert status.started_at == STARTED.replace(microsecond=977401)


def test_a_crash_looping_unit_is_activating_with_its_restart_count() -> None:
    status = parse_show("containerd.service", CRASH_LOOPING)
    assert (status.active_state, status.sub_state, status.restarts) == (
        "activating",
        "auto-restart",
        3,
    )
    assert not status.active
    assert status.main_pid == 0
    assert status.started_at == datetime(2026, 12, 2, 5, 16, 22, tzinfo=UTC)


def test_a_unit_never_started_has_no_timestamps() -> None:
    status = parse_show("kubelet.service", NEVER_STARTED)
    assert status.active_state == "inactive"
    assert status.started_at is None
    assert status.active_since is None


def test_properties_systemctl_leaves_out_take_their_defaults() -> None:
    status = parse_show("kubelet.service", "ActiveState=failed\nSubState=failed\n")
    assert status == UnitStatus(unit="kubelet.service", active_state="failed", sub_state="failed")


def test_a_unit_systemd_lacks_is_an_error_not_an_inactive_daemon() -> None:
    with pytest.raises(HostError, match=r"systemd has no unit kubelet\.service .*not-found"):
        parse_show("kubelet.service", NOT_FOUND)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "no ActiveState"),
        ("MainPID=1\n", "no ActiveState"),
        ("ActiveState=active\nNRestarts=many\n", "NRestarts='many' is not a number"),
        ("ActiveState=active\nActiveEnterTimestamp=yesterday\n", "ActiveEnterTimestamp"),
        (
            "ActiveState=active\nInactiveExitTimestamp=Wed 2026-12-02 05:16:18 AEST\n",
            "not in UTC",
        ),
    ],
)
def test_unreadable_output_is_a_host_error_naming_the_unit(text: str, problem: str) -> None:
    with pytest.raises(HostError, match=r"kubelet\.service") as caught:
        parse_show("kubelet.service", text)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("@1796188578", STARTED),
        ("@1796188578.5", STARTED.replace(microsecond=500000)),
        ("Wed 2026-12-02 05:16:18 UTC", STARTED),
        ("2026-12-02 05:16:18 GMT", STARTED),
        ("", None),
        ("n/a", None),
    ],
)
def test_timestamps_in_every_form_systemctl_prints(value: str, expected: datetime | None) -> None:
    assert parse_timestamp(value) == expected


@pytest.mark.parametrize(
    "name",
    ["kubelet.service", "containerd.service", "getty@tty1.service", "-.mount", "a:b_c.socket"],
)
def test_systemd_unit_names_are_accepted(name: str) -> None:
    assert unit_name_problem(name) is None


@pytest.mark.parametrize(
    "name",
    [
        "",
        "kubelet",
        "kubelet.exe",
        "getty@.service",
        "kube let.service",
        "kubelet.service; reboot",
        "$(reboot).service",
        "../kubelet.service",
        "x" * 250 + ".service",
    ],
)
def test_anything_else_is_refused_before_systemctl_runs(name: str) -> None:
    assert unit_name_problem(name)
    host = SystemHost(SystemSettings(systemctl=("/nonexistent/systemctl",)))
    with pytest.raises(HostError, match="refusing unit"):
        host.unit_status(name)


# -- systemctl's argument lists, through a stand-in program -----------------------------------

FAKE_SYSTEMCTL = """\
import json, os, sys
args = sys.argv[1:]
with open(os.environ["RECORD"], "a") as out:
    seen = {name: os.environ.get(name) for name in ("TZ", "LC_ALL", "SYSTEMD_IGNORE_CHROOT")}
    out.write(json.dumps({"argv": args, "env": seen}) + "\\n")
if os.environ.get("OLD") and any(a.startswith("--timestamp") for a in args):
    print("systemctl: unrecognized option '--timestamp=unix'", file=sys.stderr)
    sys.exit(1)
if "restart" in args:
    print("Job for kubelet.service failed because the control process exited with error code.",
          file=sys.stderr)
    print('See "systemctl status kubelet.service" for details.', file=sys.stderr)
    sys.exit(1)
sys.stdout.write(os.environ["SHOW"])
"""


@pytest.fixture
def fake_systemctl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A program standing in for systemctl: records its arguments in ``record.jsonl``."""
    program = tmp_path / "systemctl.py"
    program.write_text(FAKE_SYSTEMCTL)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("RECORD", str(record))
    monkeypatch.setenv("SHOW", RUNNING_PRETTY)
    return program


def recorded(program: Path) -> list[dict[str, object]]:
    lines = (program.parent / "record.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def systemctl(program: Path, *, prefix: tuple[str, ...] = ()) -> Systemctl:
    return Systemctl(
        program=(sys.executable, str(program)),
        prefix=prefix,
        query_timeout=timedelta(seconds=30),
        restart_timeout=timedelta(seconds=30),
    )


def test_show_passes_one_argument_each_with_the_unit_after_a_double_dash(
    fake_systemctl: Path,
) -> None:
    status = systemctl(fake_systemctl, prefix=("env",)).show("kubelet.service")
    assert status.started_at == STARTED
    [call] = recorded(fake_systemctl)
    assert call["argv"] == [
        "show",
        "--no-pager",
        "--property=LoadState,ActiveState,SubState,InactiveExitTimestamp,"
        "ActiveEnterTimestamp,NRestarts,MainPID",
        "--timestamp=unix",
        "--",
        "kubelet.service",
    ]
    # UTC timestamps, C messages, and no "Running in chroot, ignoring request" in a host-PID pod
    assert call["env"] == {"TZ": "UTC", "LC_ALL": "C", "SYSTEMD_IGNORE_CHROOT": "1"}


def test_a_systemctl_older_than_248_is_asked_again_without_unix_timestamps(
    fake_systemctl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OLD", "1")
    tool = systemctl(fake_systemctl)
    assert tool.show("kubelet.service").started_at == STARTED
    assert tool.show("kubelet.service").started_at == STARTED
    calls = [call["argv"] for call in recorded(fake_systemctl)]
    assert ["--timestamp=unix" in argv for argv in calls] == [True, False, False]


def test_a_failed_restart_names_the_command_its_status_and_first_stderr_line(
    fake_systemctl: Path,
) -> None:
    with pytest.raises(CommandError) as caught:
        systemctl(fake_systemctl).restart("kubelet.service")
    message = str(caught.value)
    assert "restart --no-ask-password -- kubelet.service` exited with status 1: " in message
    assert message.endswith("the control process exited with error code.")
    assert caught.value.status == 1
    [call] = recorded(fake_systemctl)
    assert call["argv"] == ["restart", "--no-ask-password", "--", "kubelet.service"]


# -- the real systemctl -----------------------------------------------------------------------

SYSTEMD_BOOTED = Path("/run/systemd/system").is_dir()  # sd_booted(): systemd is PID 1
needs_systemctl = pytest.mark.skipif(
    shutil.which("systemctl") is None, reason="systemctl is not installed"
)


@needs_systemctl
@pytest.mark.skipif(SYSTEMD_BOOTED, reason="systemd is PID 1 here: systemctl can operate")
def test_real_systemctl_without_systemd_as_init_is_a_clear_host_error() -> None:
    with pytest.raises(CommandError) as caught:
        SystemHost().unit_status("kubelet.service")
    error = caught.value
    assert error.said == NOT_PID1
    assert error.status == 1
    assert str(error).startswith("`systemctl show --no-pager --property=")
    assert str(error).endswith(f"-- kubelet.service` exited with status 1: {NOT_PID1}")


@needs_systemctl
@pytest.mark.skipif(not SYSTEMD_BOOTED, reason="systemd is not PID 1 on this machine")
def test_real_systemctl_shows_the_journal_daemon_running() -> None:
    status = SystemHost().unit_status("systemd-journald.service")
    assert status.active
    assert status.main_pid > 0
    assert status.started_at is not None
