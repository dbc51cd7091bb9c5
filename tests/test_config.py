from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic import checks
from kubemedic.checks.criticality import RoleSelector
from kubemedic.config import ConfigError, load_settings
from kubemedic.model.view import ClusterView
from tests.factories import container, node, pod


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "kubemedic.yaml"
    path.write_text(text)
    return path


def test_settings_accept_camel_and_snake_case_and_reach_the_checks(tmp_path: Path) -> None:
    settings = load_settings(
        write(
            tmp_path,
            "checks:\n"
            "  node-memory-overcommit:\n    limitsCriticalPercent: 150\n"
            "  critical-pod-underrequested:\n"
            "    memory_floor: 1Gi\n"
            "    critical:\n"
            "      extra_selectors: [{role: payments, selector: 'app=payments'}]\n"
            "disabled: [node-scale-burst]\n",
        )
    )
    assert settings.disabled == {"node-scale-burst"}
    memory = settings.configs["node-memory-overcommit"]
    assert memory.limits_critical_percent == 150
    under = settings.configs["critical-pod-underrequested"]
    assert under.memory_floor == "1Gi"
    assert under.critical.extra_selectors == (RoleSelector("payments", "app=payments"),)

    bodies = [
        node("n1", memory="10Gi"),
        pod(
            "pay-1",
            namespace="shop",
            node_name="n1",
            labels={"app": "payments"},
            containers=[container("api", requests={"cpu": "500m", "memory": "512Mi"})],
        ),
    ]
    view = ClusterView.build(bodies)
    found = checks.run_checks(view, names=["critical-pod-underrequested"], configs=settings.configs)
    [finding] = found
    assert "payments" in str(finding.evidence["criticalBecause"])
    assert "1Gi" in str(finding.evidence["shortfalls"])
    assert checks.run_checks(view, names=["critical-pod-underrequested"]) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("checks:\n  no-such-check: {}\n", "unknown check 'no-such-check'"),
        ("checks:\n  node-memory-overcommit:\n    limitz: 1\n", "node-memory-overcommit.limitz"),
        (
            "checks:\n  node-memory-overcommit:\n    top_consumers: lots\n",
            "checks.node-memory-overcommit: top_consumers",
        ),
        ("disabled: nope\n", "'disabled' must be a list"),
        ("colour: blue\n", "unknown top-level key(s): colour"),
        ("checks: [\n", "line 2"),
        ("- 1\n", "expected a mapping"),
    ],
)
def test_bad_settings_name_the_file_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)


def test_nested_settings_are_renamed_and_misspelt_nested_keys_are_errors(tmp_path: Path) -> None:
    good = write(
        tmp_path,
        "checks:\n  memory-hog-neighbour:\n    critical:\n"
        "      extraSelectors: [{role: db, selector: 'app=postgres'}]\n"
        "      priorityThreshold: 1000\n",
    )
    config = load_settings(good).configs["memory-hog-neighbour"]
    assert config.critical.priority_threshold == 1000
    assert config.critical.extra_selectors == (RoleSelector("db", "app=postgres"),)
    bad = write(
        tmp_path, "checks:\n  memory-hog-neighbour:\n    critical:\n      extraSelector: []\n"
    )
    with pytest.raises(ConfigError, match=r"checks\.memory-hog-neighbour\.critical\.extraSelector"):
        load_settings(bad)
    worse = write(
        tmp_path,
        "checks:\n  memory-hog-neighbour:\n    critical:\n      extraSelectors: [{rol: db}]\n",
    )
    with pytest.raises(ConfigError, match=r"extraSelectors\[0\]\.rol: unknown setting"):
        load_settings(worse)


@pytest.mark.parametrize(
    ("selector", "why"),
    [("app in (a", "unable to parse requirement"), ("", "empty"), ("=x", "expected")],
)
def test_a_selector_the_api_server_would_refuse_is_a_config_error(
    tmp_path: Path, selector: str, why: str
) -> None:
    bad = write(
        tmp_path,
        "checks:\n  critical-pod-underrequested:\n    critical:\n"
        f"      extraSelectors: [{{role: db, selector: '{selector}'}}]\n",
    )
    with pytest.raises(ConfigError, match=rf"extra_selectors\.0: .*invalid label selector .*{why}"):
        load_settings(bad)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90s", 90), ("2m", 120), ("1h30m", 5400), ("45", 45), ("PT3M", 180), ("00:04:00", 240)],
)
def test_duration_settings_read_go_durations_and_iso_8601(
    tmp_path: Path, text: str, seconds: int
) -> None:
    path = write(tmp_path, f"checks:\n  probe-restarts:\n    windowSlack: '{text}'\n")
    config = load_settings(path).configs["probe-restarts"]
    assert config.window_slack == timedelta(seconds=seconds)


def test_a_bad_duration_setting_says_what_a_duration_is(tmp_path: Path) -> None:
    path = write(tmp_path, "checks:\n  probe-restarts:\n    windowSlack: 5x\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert str(caught.value) == (
        f"{path}: checks.probe-restarts.windowSlack: "
        'expected a duration such as 2m or 1h30m, got "5x"'
    )
