import os
from datetime import timedelta
from pathlib import Path

import pytest

from kubemedic import checks
from kubemedic.checks.criticality import RoleSelector
from kubemedic.cli import main
from kubemedic.config import ConfigError, load_settings
from kubemedic.model.view import ClusterView
from tests.factories import container, node, pod
from tests.paths import SNAPSHOTS


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
        ("checks:\n  no-such-check: {}\n", 'checks: unknown check "no-such-check"'),
        (
            "checks:\n  node-memory-overcommit:\n    limitz: 1\n",
            'node-memory-overcommit: unknown setting "limitz"',
        ),
        (
            "checks:\n  node-memory-overcommit:\n    top_consumers: lots\n",
            'checks.node-memory-overcommit.top_consumers: expected a whole number >= 0, got "lots"',
        ),
        ("disabled: nope\n", "'disabled' must be a list"),
        ("colour: blue\n", 'unknown key "colour"'),
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
    with pytest.raises(
        ConfigError,
        match=r"checks\.memory-hog-neighbour\.critical: unknown setting \"extraSelector\"; "
        r"did you mean 'extraSelectors'\?",
    ):
        load_settings(bad)
    worse = write(
        tmp_path,
        "checks:\n  memory-hog-neighbour:\n    critical:\n      extraSelectors: [{rol: db}]\n",
    )
    with pytest.raises(ConfigError, match=r"extraSelectors\[0\]: unknown setting \"rol\""):
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
    with pytest.raises(ConfigError, match=rf"extraSelectors\[0\]: invalid label selector .*{why}"):
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


# -- every bad setting is exit 2 with one line naming the file and the key (issue 12) --------

SNAPSHOT = SNAPSHOTS / "3-hub-eviction"


def scan_with(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``kubemedic scan --config`` on a file holding ``text``: the exit status and stderr."""
    path = write(tmp_path, text)
    with pytest.raises(SystemExit) as done:
        main(["scan", "--snapshot", str(SNAPSHOT), "--config", str(path), "--output", "json"])
    code = done.value.code
    assert isinstance(code, int)
    return code, capsys.readouterr().err


def section(check: str, body: str) -> str:
    return f"checks:\n  {check}:\n" + "".join(f"    {line}\n" for line in body.splitlines())


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            section("failed-pod-storm", "recentMinutes: .nan"),
            "checks.failed-pod-storm.recentMinutes: expected a number of minutes >= 0, got .nan",
        ),
        (
            section("node-scale-burst", "windowSeconds: -1"),
            "checks.node-scale-burst.windowSeconds: expected a whole number of seconds > 0, got -1",
        ),
        (section("node-scale-burst", "windowSeconds: 0"), "windowSeconds: expected"),
        (
            section("node-memory-overcommit", "limitsCriticalPercent: .inf"),
            "limitsCriticalPercent: expected a percentage from 0 to 1000000, got .inf",
        ),
        (section("node-not-ready", "brakeFraction: 1.5"), "a fraction from 0 to 1, got 1.5"),
        (section("node-not-ready", "brake_min_nodes: 0"), "brake_min_nodes: expected a whole"),
        (section("evicted", "criticalCount: 2.5"), "criticalCount: expected a whole number"),
        (section("oom-killed", "criticalRestarts: 10" + "0" * 400), "from 0 to 2147483647"),
        (section("oom-killed", "includeLikely: maybe"), 'expected true or false, got "maybe"'),
        (
            section("critical-pod-underrequested", "memoryFloor: 12XB"),
            'memoryFloor: expected a quantity such as 256Mi or 100m, got "12XB"',
        ),
        (
            section("critical-pod-underrequested", "cpuFloor: -1"),
            "cpuFloor: expected a quantity of zero or more",
        ),
        (
            section("critical-pod-underrequested", "roleFloors: [{role: dns, memory: lots}]"),
            "roleFloors[0].memory: expected a quantity",
        ),
        (section("probe-restarts", "starvationCpuRequest: x"), "starvationCpuRequest: expected"),
        (
            section("probe-restarts", "windowSlack: x"),
            'windowSlack: expected a duration such as 2m or 1h30m, got "x"',
        ),
        (section("probe-restarts", "windowSlack: -2m"), "windowSlack: expected a duration of"),
        (section("probe-restarts", "windowSlack: -PT2M"), "windowSlack: expected a duration of"),
        (
            section("failed-pod-storm", "recentMinutes: 1\nrecent_minutes: 2"),
            "checks.failed-pod-storm: recentMinutes and recent_minutes are the same setting",
        ),
        (
            section("failed-pod-storm", "recentMinute: 1"),
            "unknown setting \"recentMinute\"; did you mean 'recentMinutes'?",
        ),
        (
            section("failed-pod-storm", "recent_minute: 1"),
            "unknown setting \"recent_minute\"; did you mean 'recent_minutes'?",
        ),
        (section("failed-pod-storm", "extraReasons: OutOfcpu"), "extraReasons: expected a list"),
        (section("failed-pod-storm", "extraReasons: [1]"), "extraReasons[0]: expected text"),
        (
            section("probe-restarts", "critical: {extraSelectors: [{role: db}]}"),
            "critical.extraSelectors[0]: missing selector",
        ),
        (
            section("probe-restarts", "critical: {extraSelectors: [{role: db, selector: ''}]}"),
            "critical.extraSelectors[0]: invalid label selector '': empty",
        ),
        (
            section(
                "probe-restarts", "critical: {extraSelectors: [{role: a, selector: 'app in (a'}]}"
            ),
            "critical.extraSelectors[0]: invalid label selector 'app in (a'",
        ),
        (section("probe-restarts", "critical: [1]"), "critical: expected a mapping of settings"),
        ("checks:\n  node-memory-overcommt: {}\n", "did you mean 'node-memory-overcommit'?"),
        ("check: {}\n", "unknown key \"check\"; did you mean 'checks'?"),
        ("disabled: [evicted, nope]\n", 'disabled[1]: unknown check "nope"'),
        ("a: " + "[" * 1000 + "]" * 1000 + "\n", "line 1: nested deeper than 200 levels"),
    ],
)
def test_a_bad_setting_exits_2_with_one_line_naming_the_file_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    code, err = scan_with(tmp_path, text, capsys)
    assert code == 2
    assert err.startswith("error: ") and err.count("\n") == 1
    assert "kubemedic.yaml" in err and message in err
    for pydantic_words in ("Input should be", "validation error", "type=", "Value error"):
        assert pydantic_words not in err


def test_an_alias_bomb_in_the_config_is_refused_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 12)]
    code, err = scan_with(tmp_path, "\n".join(lines) + "\n", capsys)
    assert code == 2
    assert "kubemedic.yaml: line 1: YAML aliases expand the document" in err


def test_a_fifo_as_config_is_refused_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "kubemedic.yaml"
    os.mkfifo(fifo)
    with pytest.raises(SystemExit) as done:
        main(["scan", "--snapshot", str(SNAPSHOT), "--config", str(fifo)])
    assert done.value.code == 2
    assert "kubemedic.yaml: not a regular file" in capsys.readouterr().err


def test_numbers_and_durations_in_range_are_accepted(tmp_path: Path) -> None:
    text = (
        "checks:\n"
        "  node-scale-burst: {windowSeconds: 60.0, lookbackSeconds: 0, criticalGrowth: 0.5}\n"
        "  probe-restarts: {windowSlack: 0, critical: {priorityThreshold: -5}}\n"
        "  node-memory-overcommit: {limitsCriticalPercent: null, topConsumers: 0}\n"
    )
    path = write(tmp_path, text)
    configs = load_settings(path).configs
    assert configs["node-scale-burst"].window_seconds == 60
    assert isinstance(configs["node-scale-burst"].window_seconds, int)
    assert configs["probe-restarts"].window_slack == timedelta(0)
    assert configs["probe-restarts"].critical.priority_threshold == -5
    assert configs["node-memory-overcommit"].limits_critical_percent is None


def test_checks_shows_settings_as_the_configuration_file_writes_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["checks", "probe-restarts"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "window_slack = 2m\n" in out
    assert "starvation_cpu_request = 100m" in out
    assert "critical.extra_selectors = []" in out
    assert "timedelta" not in out and "RoleSelector(" not in out


def test_every_printed_section_reads_back_as_its_defaults(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubemedic.agent import settings as agent
    from kubemedic.breaker import settings as breaker
    from kubemedic.drift import settings as drift
    from kubemedic.guard import settings as guard
    from kubemedic.notify import settings as notify
    from kubemedic.repair import settings as repair

    with pytest.raises(SystemExit) as done:
        main(["config", "show-defaults"])
    assert done.value.code in (0, None)
    printed = write(tmp_path, capsys.readouterr().out)
    loaded = load_settings(printed)
    empty = load_settings(write(tmp_path, "{}\n"))
    assert loaded.repair and loaded.agent and loaded.breaker and loaded.drift and loaded.guard
    assert repair.load(loaded) == repair.load(empty)
    assert agent.load(loaded) == agent.load(empty)
    assert drift.load(loaded) == drift.load(empty)
    assert guard.load(loaded) == guard.load(empty)
    assert breaker.load(loaded) == breaker.read({}, source="defaults")
    assert notify.load(loaded) == notify.read({}, source="defaults")
