"""``kubemedic scan --snapshot``: every bad input or flag ends in exit 2 and one line naming it."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import time
from pathlib import Path

import pytest

from kubemedic import cli
from kubemedic.cli import scan as scan_command
from tests.factories import container, deployment, node, node_metrics, pod, pod_metrics

BUNDLED = Path(cli.__file__).parent.parent / "data" / "snapshots"


@pytest.fixture(autouse=True)
def _stay_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finished scan ends its process at once; under test, return to the test instead."""
    monkeypatch.setattr(scan_command, "leave_at_once", lambda: None)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The exit status, stderr and stdout of ``kubemedic scan ARGS``."""
    with pytest.raises(SystemExit) as done:
        cli.main(["scan", *args])
    code = done.value.code
    assert isinstance(code, int)
    printed = capsys.readouterr()
    return code, printed.err, printed.out


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code, err, _ = run(capsys, *args)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "NoneType" not in err
    return lines[0].removeprefix("error: ")


def overcommitted(directory: Path) -> Path:
    path = directory / "cluster.json"
    hog = container("prometheus", requests={"memory": "15Gi"}, limits={"memory": "15Gi"})
    bodies = [node("core-1", memory="16Gi"), pod("prom-0", node_name="core-1", containers=[hog])]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": bodies}))
    return path


def test_deep_json_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    assert refused(capsys, "--snapshot", str(deep)) == (
        f"{deep}: line 1: nested deeper than 200 levels"
    )


def test_deep_yaml_exits_2_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "deep.yaml: line 1: nested deeper than 200 levels" in refused(
        capsys, "--snapshot", str(deep)
    )


def test_a_named_pipe_exits_2_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    os.mkfifo(tmp_path / "pods.json")
    started = time.monotonic()
    message = refused(capsys, "--snapshot", str(tmp_path))
    assert message == f"{tmp_path / 'pods.json'} is a named pipe, not a file or directory"
    assert time.monotonic() - started < 5


def test_a_gzip_bomb_exits_2_within_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bomb = tmp_path / "pods.json.gz"
    with gzip.open(bomb, "wb") as out:
        for _ in range(1024):  # 1 GiB of spaces: about 1 MB compressed
            out.write(b" " * 1024**2)
    started = time.monotonic()
    message = refused(capsys, "--snapshot", str(bomb))
    assert time.monotonic() - started < 5
    assert message.startswith(f"{bomb}: cannot read: it inflates more than 100 times its size")


@pytest.mark.parametrize(
    "text",
    [
        '{"kind": "List", "items": {"a": 1}}',
        '{"kind": "Frob", "items": [{"kind": "Pod"}]}',
        '{"items": [{"metadata": {"name": "a"}}]}',
        "{}",
        "null",
        '{"kind": "List", "items": [1, 2]}',
    ],
)
def test_documents_that_were_read_as_nothing_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "snap.json"
    path.write_text(text)
    assert refused(capsys, "--snapshot", str(path)).startswith(f"{path}: ")


@pytest.mark.parametrize("text", ["", "# only a comment\n", "---\n---\n"])
def test_empty_or_comment_only_yaml_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text(text)
    assert refused(capsys, "--snapshot", str(path)) == (
        f"{path}: no Kubernetes object or List in it (the file is empty or only comments)"
    )


def test_a_yaml_document_that_is_not_an_object_gives_its_number_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "snap.yaml"
    path.write_text("kind: Node\nmetadata: {name: n1}\n---\nnull\n---\n- 1\n")
    assert refused(capsys, "--snapshot", str(path)) == (
        f"{path}: document 3 (line 6): expected a Kubernetes object or List, found a list"
    )


def test_an_empty_snapshot_needs_allow_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "pods.json"
    path.write_text('{"apiVersion": "v1", "kind": "PodList", "items": []}')
    message = refused(capsys, "--snapshot", str(path))
    assert message == f"{path}: no Kubernetes objects in it (only empty lists); " + (
        "--allow-empty scans an empty snapshot"
    )
    code, _, _ = run(capsys, "--snapshot", str(path), "--allow-empty")
    assert code == 0


def test_unused_kinds_are_still_counted_and_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cm.json"
    path.write_text('{"kind": "ConfigMap", "metadata": {"name": "x"}}')
    code, _, out = run(capsys, "--snapshot", str(path))
    assert code == 0
    assert "Ignored (kinds kubemedic does not use): 1 ConfigMap." in out


def cronjob_with(memory: str) -> dict[str, object]:
    template = deployment("nightly", containers=[container("job", requests={"memory": memory})])
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "nightly", "namespace": "ops"},
        "spec": {"jobTemplate": {"spec": {"template": template["spec"]["template"]}}},
    }


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (
            cronjob_with("12XB"),
            "CronJob ops/nightly spec.jobTemplate.spec.template.spec.containers[name=job]"
            ".resources.requests.memory",
        ),
        (
            pod_metrics(pod("prom-0"), {"prometheus": {"memory": "lots"}}),
            "PodMetrics default/prom-0 containers[name=prometheus].usage.memory",
        ),
        (node_metrics("core-1", cpu="x", memory="1Gi"), "NodeMetrics core-1 usage.cpu"),
    ],
)
def test_an_invalid_quantity_fails_the_gate_instead_of_turning_a_check_off(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: dict[str, object], field: str
) -> None:
    snapshot = tmp_path / "snap"
    shutil.copytree(BUNDLED / "3-hub-eviction", snapshot)
    code, _, _ = run(capsys, "--snapshot", str(snapshot), "--fail-on", "critical")
    assert code == 1
    (snapshot / "extra.json").write_text(json.dumps(extra))
    message = refused(capsys, "--snapshot", str(snapshot), "--fail-on", "critical")
    assert message.startswith(f"{snapshot / 'extra.json'}: invalid quantity ")
    assert f" in {field}: " in message


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (
            "0001-01-01T00:00:00Z",
            "expected a time from 1970-01-01T00:00:00Z to 2999-12-31T23:59:59Z",
        ),
        (
            "9999-12-31T23:59:59Z",
            "expected a time from 1970-01-01T00:00:00Z to 2999-12-31T23:59:59Z",
        ),
        (
            "2023-02-01T20:00:00",
            "expected an RFC 3339 time with a zone, such as 2023-02-01T20:00:00Z",
        ),
        ("2023-02-01", "expected an RFC 3339 time with a zone, such as 2023-02-01T20:00:00Z"),
        ("yesterday", "expected an RFC 3339 time with a zone, such as 2023-02-01T20:00:00Z"),
    ],
)
def test_at_outside_the_range_or_without_a_zone_exits_2(
    capsys: pytest.CaptureFixture[str], at: str, expected: str
) -> None:
    snapshot = BUNDLED / "3-hub-eviction"
    assert refused(capsys, "--snapshot", str(snapshot), "--at", at) == f"--at {at!r}: {expected}"


@pytest.mark.parametrize(
    "at", ["2023-02-01T20:00:00Z", "2023-02-01T21:00:00.123456789+01:00", "1970-01-01T00:00:00Z"]
)
def test_at_with_a_zone_in_range_is_accepted(capsys: pytest.CaptureFixture[str], at: str) -> None:
    code, err, _ = run(capsys, "--snapshot", str(BUNDLED / "3-hub-eviction"), "--at", at)
    assert code in (0, 1), err


def test_an_empty_snapshot_path_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    overcommitted(tmp_path)
    monkeypatch.chdir(tmp_path)  # it used to scan the working directory
    assert refused(capsys, "--snapshot", "") == (
        "--snapshot '': expected a snapshot file or directory"
    )


def test_a_dangling_symlink_in_the_snapshot_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    overcommitted(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pods.json").symlink_to(tmp_path / "nowhere")
    assert refused(capsys, "--snapshot", str(tmp_path)).startswith(
        f"{tmp_path / 'sub' / 'pods.json'}: cannot read it"
    )
