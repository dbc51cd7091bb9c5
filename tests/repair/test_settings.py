"""The configuration file's repair: section: defaults, every key checked, clear errors."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic.config import ConfigError, load_settings
from kubemedic.model.documents import load_yaml
from kubemedic.repair import settings
from kubemedic.repair.policy.settings import Budget, RepairSettings

from ..inprocess import kubemedic, one_error_line


def _read(text: str) -> RepairSettings:
    raw = load_yaml(text, where="k.yaml")
    assert isinstance(raw, dict)
    return settings.read(raw["repair"], source="k.yaml")


def test_the_printed_defaults_read_back_as_the_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = kubemedic(capsys, "config", "show-defaults")
    assert code == 0
    assert _read(out) == RepairSettings()
    assert "dryRun: true" in out and "maxUnhealthy: {count: 2, percent: 40}" in out


def test_a_full_section_in_the_issues_words() -> None:
    loaded = _read(
        """
repair:
  dryRun: false
  provider: openstack
  openstack: {cloud: prod}
  maxInFlight: 2
  maxUnhealthy: 30%
  conditions:
    - {type: Ready, statuses: [False, Unknown], after: 5m}
    - {type: KernelDeadlock, statuses: ["True"], after: 1m}
  pools:
    - name: gpu
      selector: node.kubernetes.io/pool=gpu
      maxInFlight: 1
      maxUnhealthy: {count: 1}
      startupTimeout: 20m
  ledger: {maxRepairs: 2, window: 12h}
"""
    )
    assert not loaded.dry_run and loaded.provider == "openstack"
    assert loaded.openstack.cloud == "prod"
    assert loaded.max_unhealthy == Budget(percent=30.0)
    assert loaded.conditions[0].statuses == ("False", "Unknown")
    assert loaded.conditions[0].after == timedelta(minutes=5)
    (gpu,) = loaded.pools
    assert gpu.selector.matches({"node.kubernetes.io/pool": "gpu"})
    assert gpu.max_unhealthy == Budget(count=1)
    assert loaded.ledger.max_repairs == 2 and loaded.ledger.window == timedelta(hours=12)


@pytest.mark.parametrize(
    ("section", "named"),
    [
        ("maxInFlihgt: 2", """unknown setting "maxInFlihgt"; did you mean 'maxInFlight'?"""),
        ("maxInFlight: 0", "repair.maxInFlight: expected a whole number >= 1, got 0"),
        ("maxUnhealthy: 140%", "repair.maxUnhealthy: expected a count (2), a percentage"),
        ("maxUnhealthy: true", "repair.maxUnhealthy: expected a count"),
        ("provider: vmware", "repair.provider: unknown provider 'vmware'; known:"),
        ("provider: exec", "repair.exec.command: the exec provider needs a command"),
        ("provider: openstack", "repair.openstack.cloud: the openstack provider needs a cloud"),
        ("ledger: {window: soon}", "repair.ledger.window:"),
        ("flapping: {transitions: 1}", "repair.flapping.transitions: expected a whole number >= 2"),
        ("conditions: [{type: Ready, statuses: [Maybe], after: 1m}]", "expected True, False or"),
        ("pools: [{name: a, selector: 'app in (x'}]", "repair.pools[0].selector:"),
        ("pools: [{name: a, selector: 'x=1'}, {name: a, selector: 'y=1'}]", "unique"),
        ("correlation: {zonePercent: 0}", "repair.correlation.zonePercent"),
        ("dryRun: maybe", "repair.dryRun: expected true or false"),
    ],
)
def test_a_bad_setting_is_named_with_what_was_expected(section: str, named: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _read(f"repair:\n  {section}\n")
    assert named in str(raised.value)
    assert str(raised.value).startswith("k.yaml: ")


def test_run_refuses_a_bad_repair_section_before_connecting(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "kubemedic.yaml"
    config.write_text("repair:\n  maxInFlight: -1\n")
    code, _, err = kubemedic(
        capsys, "run", "--config", str(config), "--kubeconfig", str(tmp_path / "none")
    )
    assert code == 2
    line = one_error_line(err)
    assert "repair.maxInFlight" in line and str(config) in line


def test_a_file_without_a_repair_section_turns_repair_off(tmp_path: Path) -> None:
    config = tmp_path / "k.yaml"
    config.write_text("checks: {}\n")
    assert load_settings(config).repair is None
    assert settings.load(load_settings(config)) == RepairSettings()
