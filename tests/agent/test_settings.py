"""The agent: section: the printed defaults read back as the defaults, every key is checked,
and the policy's rules follow it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
import yaml

from kubemedic.agent import settings
from kubemedic.agent.policy import KUBELET, RUNTIME
from kubemedic.config import ConfigError
from tests.inprocess import kubemedic


def test_the_printed_defaults_read_back_as_the_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = kubemedic(capsys, "config", "show-defaults")
    assert code == 0
    raw = yaml.safe_load(out)
    assert settings.read(raw["agent"], source="k.yaml") == settings.AgentConfig()
    kubelet, runtime = settings.rules_of(settings.AgentConfig())
    assert (kubelet, runtime) == (KUBELET, RUNTIME)  # health-monitor.sh's timings


def test_keys_in_either_spelling_reach_the_rules() -> None:
    loaded = settings.read(
        {
            "selfRepair": False,
            "kubelet": {"cooldown": "90s", "max_restarts": 5},
            "runtime": {"unit": "crio.service", "socket": "unix:///var/run/crio/crio.sock"},
            "host": {"commandPrefix": ["nsenter", "--target", "1", "--mount", "--"]},
        },
        source="k.yaml",
    )
    kubelet, runtime = settings.rules_of(loaded)
    assert kubelet.cooldown == timedelta(seconds=90) and kubelet.max_restarts == 5
    assert runtime.unit == "crio.service" and runtime.timeout == timedelta(seconds=60)
    assert loaded.host.command_prefix == ("nsenter", "--target", "1", "--mount", "--")
    assert not loaded.self_repair


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        ({"kubelet": {"unit": "kubelet; reboot"}}, "agent.kubelet.unit: expected a systemd unit"),
        ({"heartbeat": "5m"}, "agent.heartbeat: expected 1s to 2m"),
        ({"kubelet": {"failures": 0}}, "agent.kubelet.failures: expected a whole number >= 1"),
        ({"runtime": {"sockt": "x"}}, "did you mean 'socket'?"),
        ({"kubelet": {"backoff": float("nan")}}, "agent.kubelet.backoff: expected a number"),
        ({"kubelet": {"healthzUrl": "127.0.0.1:10248"}}, "healthzUrl: expected an http://"),
        ({"runtime": {"socket": "tcp://x"}}, "runtime.socket: expected unix://"),
        ({"host": {"rebootCommand": []}}, "host.rebootCommand: expected a command"),
        ({"stateFile": "state.json"}, "agent.stateFile: expected an absolute path"),
        ({"kubelet": {"period": "10ms"}}, "agent.kubelet.period: expected at least 100ms"),
        ({"kubelet": {"maxBackoff": "10s"}}, "agent.kubelet.maxBackoff: expected at least"),
        ({"kubelet": {"cooldown": -5}}, "agent.kubelet.cooldown"),
        ({"runtime": []}, "agent.runtime"),
    ],
)
def test_a_bad_setting_is_named(raw: dict[str, Any], words: str) -> None:
    with pytest.raises(ConfigError) as error:
        settings.read(raw, source="k.yaml")
    assert words in str(error.value)
    assert str(error.value).startswith("k.yaml: agent")
