"""The real host's settings, boot ID and reboot: values checked when the settings are made, the
boot ID read from the kernel (and refused when it is not one), the reboot command run for real
with harmless programs in its place, and its failures and deadline."""

from __future__ import annotations

import stat
import uuid
from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic.agent.host import Host, HostError
from kubemedic.agent.system import CommandError, SystemHost, SystemSettings, SystemSettingsError
from kubemedic.agent.system.settings import CRIO_SOCKET
from kubemedic.errors import InputError


def test_the_system_host_is_a_host() -> None:
    host: Host = SystemHost()
    assert isinstance(host, SystemHost)


def test_defaults_fit_a_kubeadm_node_with_containerd() -> None:
    settings = SystemSettings()
    assert settings.restartable_units == {"kubelet.service", "containerd.service"}
    assert settings.cri_socket == Path("/run/containerd/containerd.sock")
    assert settings.kubelet_healthz_url == "http://127.0.0.1:10248/healthz"
    assert settings.command_prefix == ()
    assert settings.reboot_command == ("systemctl", "reboot")
    assert settings.boot_id_path == Path("/proc/sys/kernel/random/boot_id")


def test_cri_o_is_a_socket_and_a_unit_away() -> None:
    settings = SystemSettings(runtime_unit="crio.service", cri_endpoint=CRIO_SOCKET)
    assert settings.cri_socket == Path("/var/run/crio/crio.sock")
    assert SystemSettings(cri_endpoint="/run/k3s/containerd/containerd.sock").cri_socket == Path(
        "/run/k3s/containerd/containerd.sock"
    )


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"kubelet_unit": "kubelet"}, "kubelet_unit 'kubelet'"),
        ({"runtime_unit": "containerd.service; reboot"}, "runtime_unit"),
        ({"cri_endpoint": "tcp://10.0.0.1:1234"}, "cri_endpoint"),
        ({"cri_endpoint": "unix://run/containerd.sock"}, "cri_endpoint"),
        ({"kubelet_healthz_url": "https://127.0.0.1:10248/healthz"}, "kubelet_healthz_url"),
        ({"kubelet_healthz_url": "http://127.0.0.1/healthz"}, "kubelet_healthz_url"),
        ({"kubelet_healthz_url": "http://127.0.0.1:99999/healthz"}, "kubelet_healthz_url"),
        ({"systemctl": ()}, "systemctl"),
        ({"reboot_command": ()}, "reboot_command"),
        ({"command_prefix": ("nsenter", "")}, "command_prefix"),
        ({"restart_timeout": timedelta(0)}, "restart_timeout"),
    ],
)
def test_unusable_settings_are_refused_naming_the_field(
    changes: dict[str, object], named: str
) -> None:
    with pytest.raises(SystemSettingsError, match=named) as caught:
        SystemSettings(**changes)  # type: ignore[arg-type]
    assert isinstance(caught.value, InputError)


def test_the_boot_id_is_the_kernels() -> None:
    boot_id = SystemHost().boot_id()
    assert boot_id == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    assert str(uuid.UUID(boot_id)) == boot_id


def test_the_boot_id_file_is_read_and_stripped(tmp_path: Path) -> None:
    path = tmp_path / "boot_id"
    path.write_text("70a59253-f9df-4709-ad25-bc712049c072\n")
    assert SystemHost(SystemSettings(boot_id_path=path)).boot_id() == (
        "70a59253-f9df-4709-ad25-bc712049c072"
    )


@pytest.mark.parametrize("text", ["", "not a uuid\n", "70A59253-F9DF-4709-AD25-BC712049C072"])
def test_a_boot_id_that_is_not_a_uuid_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "boot_id"
    path.write_text(text)
    with pytest.raises(HostError, match="not a boot ID"):
        SystemHost(SystemSettings(boot_id_path=path)).boot_id()


def test_a_missing_boot_id_file_is_a_host_error(tmp_path: Path) -> None:
    with pytest.raises(HostError, match=r"cannot read the boot ID from .*: No such file"):
        SystemHost(SystemSettings(boot_id_path=tmp_path / "absent")).boot_id()


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_reboot_runs_the_reboot_command(tmp_path: Path) -> None:
    marker = tmp_path / "rebooted"
    command = executable(
        tmp_path / "reboot", f'#!/bin/sh\necho "$@" "$SYSTEMD_IGNORE_CHROOT" > {marker}\n'
    )
    SystemHost(SystemSettings(reboot_command=(str(command), "--now"))).reboot()
    assert marker.read_text() == "--now 1\n"


def test_reboot_goes_through_the_command_prefix(tmp_path: Path) -> None:
    marker = tmp_path / "rebooted"
    command = executable(tmp_path / "reboot", f'#!/bin/sh\necho "$WHERE" > {marker}\n')
    settings = SystemSettings(
        reboot_command=(str(command),), command_prefix=("env", "WHERE=through the prefix")
    )
    SystemHost(settings).reboot()
    assert marker.read_text() == "through the prefix\n"


def test_a_failing_reboot_names_the_command_status_and_first_stderr_line(tmp_path: Path) -> None:
    command = executable(
        tmp_path / "reboot",
        "#!/bin/sh\necho 'Failed to reboot system via logind: Access denied' >&2\n"
        "echo 'second line' >&2\nexit 4\n",
    )
    with pytest.raises(CommandError) as caught:
        SystemHost(SystemSettings(reboot_command=(str(command),))).reboot()
    assert str(caught.value) == (
        f"`{command}` exited with status 4: Failed to reboot system via logind: Access denied"
    )
    assert (caught.value.status, caught.value.said) == (
        4,
        "Failed to reboot system via logind: Access denied",
    )


def test_a_first_stderr_line_is_cut_at_200_characters(tmp_path: Path) -> None:
    command = executable(tmp_path / "reboot", f"#!/bin/sh\necho {'x' * 300} >&2\nexit 1\n")
    with pytest.raises(CommandError) as caught:
        SystemHost(SystemSettings(reboot_command=(str(command),))).reboot()
    assert caught.value.said == "x" * 200


def test_a_reboot_command_that_does_not_exist_is_a_host_error(tmp_path: Path) -> None:
    settings = SystemSettings(reboot_command=(str(tmp_path / "absent"),))
    with pytest.raises(CommandError, match="could not be started: No such file") as caught:
        SystemHost(settings).reboot()
    assert caught.value.status is None


def test_a_reboot_command_past_its_deadline_is_killed_with_its_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    command = executable(
        tmp_path / "reboot", f"#!/bin/sh\nsleep 60 &\necho $! > {pids}\nsleep 60\n"
    )
    settings = SystemSettings(reboot_command=(str(command),), reboot_timeout=timedelta(seconds=1))
    with pytest.raises(CommandError, match="did not finish within 1s and was killed"):
        SystemHost(settings).reboot()
    assert not alive(int(pids.read_text()))


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a killed child not yet reaped by its new parent is a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[0] not in ("Z", "X")


def test_only_the_kubelet_and_runtime_units_are_restarted(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    systemctl = executable(tmp_path / "systemctl", f"#!/bin/sh\ntouch {marker}\n")
    host = SystemHost(SystemSettings(systemctl=(str(systemctl),)))
    with pytest.raises(HostError, match=r"refusing to restart 'sshd\.service'.*containerd"):
        host.restart_unit("sshd.service")
    assert not marker.exists()
    host.restart_unit("kubelet.service")
    assert marker.exists()
