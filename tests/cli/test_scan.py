import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kubemedic import __version__
from kubemedic.cli import app
from tests.cli.terminal import fake_terminal, shown
from tests.factories import container, deployment, node, pod

runner = CliRunner()


def write_cluster(directory: Path, *, overcommitted: bool) -> Path:
    memory = "15Gi" if overcommitted else "2Gi"
    objects = [
        node("core-1", memory="16Gi"),
        pod(
            "prometheus-0",
            namespace="monitoring",
            node_name="core-1",
            containers=[
                container("prometheus", requests={"memory": memory}, limits={"memory": memory})
            ],
        ),
    ]
    path = directory / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return path


def test_json_output_follows_the_contract_and_exit_code_reflects_findings(tmp_path: Path) -> None:
    snapshot = write_cluster(tmp_path, overcommitted=True)
    result = runner.invoke(app, ["scan", "--snapshot", str(snapshot), "--output", "json"])
    document = json.loads(result.stdout)
    assert set(document) == {"kubemedic", "generatedAt", "findings", "summary"}
    assert document["kubemedic"] == __version__
    checks = {finding["check"] for finding in document["findings"]}
    assert "node-memory-overcommit" in checks
    finding = next(f for f in document["findings"] if f["check"] == "node-memory-overcommit")
    assert set(finding) == {
        "check",
        "severity",
        "object",
        "message",
        "evidence",
        "cause",
        "firstSeen",
        "lastSeen",
    }
    assert finding["object"] == {
        "apiVersion": "v1",
        "kind": "Node",
        "namespace": None,
        "name": "core-1",
    }
    assert sum(document["summary"].values()) == len(document["findings"])
    assert result.exit_code == 1


def test_fail_on_raises_or_lowers_the_bar(tmp_path: Path) -> None:
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    assert runner.invoke(app, ["scan", "-s", snapshot, "--fail-on", "never"]).exit_code == 0
    healthy = tmp_path / "healthy"
    healthy.mkdir()
    clean = str(write_cluster(healthy, overcommitted=False))
    assert runner.invoke(app, ["scan", "-s", clean, "--fail-on", "warning"]).exit_code == 0


def test_table_output_groups_by_severity_and_ends_with_a_summary(tmp_path: Path) -> None:
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    result = runner.invoke(app, ["scan", "-s", snapshot], terminal_width=200)
    assert "node-memory-overcommit" in result.stdout
    assert "critical" in result.stdout
    lines = result.stdout.strip().splitlines()
    summary = next(line for line in lines if line.endswith("info") and "finding" in line)
    assert summary.split(":")[1].split(",")[0].strip().endswith("critical")
    assert lines.index(summary) > max(i for i, line in enumerate(lines) if "overcommit" in line)


def test_malformed_input_exits_2_naming_the_file_and_prints_nothing_to_stdout(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "pods.json"
    bad.write_text('{"kind": "Pod", "metadata": {"name": "a",}}')
    result = runner.invoke(app, ["scan", "-s", str(tmp_path), "--output", "json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "pods.json" in result.stderr
    assert "line 1" in result.stderr


def test_unknown_check_and_bad_time_are_usage_errors(tmp_path: Path) -> None:
    snapshot = str(write_cluster(tmp_path, overcommitted=False))
    result = runner.invoke(app, ["scan", "-s", snapshot, "--check", "no-such-check"])
    assert result.exit_code == 2
    assert "no-such-check" in result.stderr
    result = runner.invoke(app, ["scan", "-s", snapshot, "--at", "yesterday"])
    assert result.exit_code == 2
    assert "--at" in result.stderr


def test_only_the_chosen_checks_run(tmp_path: Path) -> None:
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    result = runner.invoke(
        app, ["scan", "-s", snapshot, "-o", "json", "--check", "node-cpu-overcommit"]
    )
    assert json.loads(result.stdout)["findings"] == []
    assert result.exit_code == 0


def test_checks_lists_every_check_and_explains_one_with_its_settings() -> None:
    listing = runner.invoke(app, ["checks"], terminal_width=200)
    assert listing.exit_code == 0
    for name in ("node-memory-overcommit", "failed-pod-storm", "out-of-band-edit"):
        assert name in listing.stdout
    explained = runner.invoke(app, ["checks", "node-memory-overcommit"])
    assert explained.exit_code == 0
    assert "Evidence" in explained.stdout
    assert "limits_critical_percent = 120.0" in explained.stdout
    assert runner.invoke(app, ["checks", "no-such-check"]).exit_code == 2


def test_config_file_changes_thresholds_and_a_bad_one_is_a_usage_error(tmp_path: Path) -> None:
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    relaxed = tmp_path / "relaxed.yaml"
    relaxed.write_text("disabled: [node-memory-overcommit, memory-hog-neighbour]\n")
    result = runner.invoke(app, ["scan", "-s", snapshot, "-o", "json", "-c", str(relaxed)])
    checks = {f["check"] for f in json.loads(result.stdout)["findings"]}
    assert "node-memory-overcommit" not in checks
    broken = tmp_path / "broken.yaml"
    broken.write_text("checks:\n  node-memory-overcommit:\n    limitz: 1\n")
    result = runner.invoke(app, ["scan", "-s", snapshot, "-c", str(broken)])
    assert result.exit_code == 2
    assert "broken.yaml" in result.stderr and "limitz" in result.stderr


def test_the_table_notes_workloads_dumped_without_managed_fields(tmp_path: Path) -> None:
    path = tmp_path / "deploy.json"
    path.write_text(json.dumps(deployment("api", namespace="shop")))
    result = runner.invoke(app, ["scan", "-s", str(path)], terminal_width=200)
    assert "1 of 1 workloads carry no managedFields" in result.stdout
    assert "--show-managed-fields" in result.stdout


def test_table_shows_a_limited_number_of_rows_per_check_but_counts_everything(
    tmp_path: Path,
) -> None:
    objects = []
    for index in range(5):
        objects.append(node(f"core-{index}", memory="16Gi"))
        objects.append(
            pod(
                f"prometheus-{index}",
                namespace="monitoring",
                node_name=f"core-{index}",
                containers=[container("p", requests={"memory": "15Gi"}, limits={"memory": "15Gi"})],
            )
        )
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    limited = runner.invoke(
        app,
        ["scan", "-s", str(path), "--check", "node-memory-overcommit", "--limit", "2"],
        env={"COLUMNS": "200"},
    )
    assert limited.stdout.count("has memory requests") == 2
    assert "… and 3 more (--limit 0 shows all)" in limited.stdout
    assert "5 findings: 0 critical, 5 warning" in limited.stdout
    everything = runner.invoke(
        app,
        ["scan", "-s", str(path), "--check", "node-memory-overcommit", "--limit", "0"],
        env={"COLUMNS": "200"},
    )
    assert everything.stdout.count("has memory requests") == 5
    assert "more (--limit 0" not in everything.stdout


# -- progress -----------------------------------------------------------------------------------


def test_no_progress_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    result = runner.invoke(app, ["scan", "-s", snapshot, "-o", "json"])
    assert result.exit_code == 1
    assert result.stderr == ""
    done = subprocess.run(
        [sys.executable, "-m", "kubemedic.cli", "scan", "-s", snapshot, "-o", "json"],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr == b""
    assert json.loads(done.stdout)["findings"]


def test_on_a_terminal_progress_names_reading_the_view_and_each_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    buffer = fake_terminal(monkeypatch)
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    chosen = ["--check", "node-memory-overcommit", "--check", "evicted"]
    result = runner.invoke(app, ["scan", "-s", snapshot, "-o", "json", *chosen])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["findings"]  # stdout carries the document only
    text = shown(buffer)
    for phase in (
        f"reading {snapshot}",
        "building the view of 2 objects",
        "checking: node-memory-overcommit (1 of 2)",
        "checking: evicted (2 of 2)",
        "writing 1 finding(s) as JSON",
    ):
        assert phase in text


@pytest.mark.parametrize("quiet", ["--quiet", "-q"])
def test_quiet_turns_progress_off_even_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: str
) -> None:
    buffer = fake_terminal(monkeypatch)
    snapshot = str(write_cluster(tmp_path, overcommitted=True))
    result = runner.invoke(app, [quiet, "scan", "-s", snapshot, "-o", "json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["findings"]
    assert buffer.getvalue() == ""
    assert runner.invoke(app, [quiet, "checks"]).exit_code == 0
