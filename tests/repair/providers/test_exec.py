"""The exec provider runs its command with separate arguments, never a shell, and its exit
status, output and timeout decide."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic.repair.policy.records import Power
from kubemedic.repair.providers import exec as exec_provider
from kubemedic.repair.providers.base import ProviderContext, ProviderError, Target
from kubemedic.repair.providers.registry import make_provider

SCRIPT = """\
import json, os, sys, time
record, *rest = sys.argv[1:]
with open(record, "w") as out:
    json.dump({"argv": rest, "pid": os.getpid()}, out)
args = dict(zip(rest[::2], rest[1::2]))
action = args["--action"]
if action == "status":
    print("off")
elif args["--node"] == "slow":
    time.sleep(60)
elif action == "replace":
    print("looking for the server", file=sys.stderr)
    print("quota exceeded\\n", file=sys.stderr)
    sys.exit(3)
else:
    print("power cycled")
"""


@pytest.fixture
def script(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "machines.py"
    path.write_text(SCRIPT)
    return path, tmp_path / "record.json"


def provider(script: tuple[Path, Path], *, timeout: float = 30.0) -> exec_provider.ExecProvider:
    path, record = script
    context = ProviderContext(
        api=None,
        identity="kubemedic-0",
        settings=None,
        extra={"command": [sys.executable, str(path), str(record)]},
        timeout=timedelta(seconds=timeout),
    )
    made = make_provider("exec", context)
    assert isinstance(made, exec_provider.ExecProvider)
    return made


def recorded(script: tuple[Path, Path]) -> list[str]:
    argv: list[str] = json.loads(script[1].read_text())["argv"]
    return argv


def test_reboot_passes_node_provider_id_and_action_as_separate_arguments(
    script: tuple[Path, Path],
) -> None:
    said = asyncio.run(provider(script).reboot(Target("worker-1", "openstack:///4c1f")))

    assert recorded(script) == [
        "--node", "worker-1", "--provider-id", "openstack:///4c1f", "--action", "reboot",
    ]  # fmt: skip
    assert said.endswith("--action reboot: done: power cycled")


def test_shell_syntax_in_a_node_name_stays_one_argument(
    script: tuple[Path, Path], tmp_path: Path
) -> None:
    pwned = tmp_path / "pwned"
    name = f"worker-1; touch {pwned} && echo $(touch {pwned}) `touch {pwned}` --action replace"

    asyncio.run(provider(script).reboot(Target(name, "id with spaces")))

    assert recorded(script) == [
        "--node", name, "--provider-id", "id with spaces", "--action", "reboot",
    ]  # fmt: skip
    assert not pwned.exists()


def test_a_value_that_looks_like_an_option_is_refused_before_anything_runs(
    script: tuple[Path, Path],
) -> None:
    with pytest.raises(ProviderError, match="begins with '-'"):
        asyncio.run(provider(script).reboot(Target("--action=replace")))
    assert not script[1].exists()


def test_a_non_zero_exit_is_an_error_with_the_status_and_the_last_stderr_line(
    script: tuple[Path, Path],
) -> None:
    with pytest.raises(ProviderError) as raised:
        asyncio.run(provider(script).replace(Target("worker-1", "openstack:///4c1f")))

    assert "exited with status 3: quota exceeded" in str(raised.value)
    assert "node worker-1" in str(raised.value)


def test_a_command_past_its_timeout_is_killed(script: tuple[Path, Path]) -> None:
    with pytest.raises(ProviderError, match="did not finish within 3s and was killed"):
        asyncio.run(provider(script, timeout=3.0).reboot(Target("slow")))

    pid = json.loads(script[1].read_text())["pid"]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_power_reads_the_status_actions_output(script: tuple[Path, Path]) -> None:
    assert asyncio.run(provider(script).power(Target("worker-1"))) == Power.OFF
    assert recorded(script)[-1] == "status"


def test_an_empty_command_and_an_unknown_provider_are_errors() -> None:
    context = ProviderContext(api=None, identity="kubemedic-0", settings=None)
    with pytest.raises(ProviderError, match=r"repair\.exec\.command"):
        make_provider("exec", context)
    with pytest.raises(ProviderError, match="known: agent, clusterapi, exec, openstack"):
        make_provider("ipmi", context)
