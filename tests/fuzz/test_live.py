"""Live ``scan`` and ``run`` against bad kubeconfigs, the emulator's fault injection, and a proxy
that spoils the emulator's answers."""

from __future__ import annotations

import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubemedic.sim.apiserver.http.faults import Faults
from tests.fuzz import servers, snapshots
from tests.fuzz.harness import assert_contract, run_cli
from tests.sim.conftest import Running, start_emulator

pytestmark = pytest.mark.timeout(600)
BOUND = 30.0


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    """One emulator for the module, loaded with the small base snapshot."""
    for running in start_emulator(tmp_path_factory.mktemp("emulator")):
        running.load(*[item for doc in snapshots.base().values() for item in doc["items"]])
        yield running


def scan_live(config: Path, *, valid: bool | None, names: str | None, what: str) -> None:
    outcome = run_cli(["scan", "--kubeconfig", str(config)], timeout=BOUND)
    assert_contract(outcome, valid=valid, names=names, what=what)


def test_a_live_scan_of_the_emulator_is_valid(emulator: Running) -> None:
    scan_live(emulator.kubeconfig, valid=True, names=None, what="the emulator, no faults")


def _script(path: Path, text: str) -> str:
    path.write_text(f"#!{sys.executable}\n{text}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def bad_kubeconfigs(tmp: Path, good: str) -> list[tuple[str, Path, str]]:
    """(label, kubeconfig file, what the error must name)."""
    exec_user = {"apiVersion": "client.authentication.k8s.io/v1beta1", "interactiveMode": "Never"}
    cases = [
        (
            "server port 99999",
            servers.kubeconfig(tmp / "kubeconfig-a", "http://127.0.0.1:99999"),
            "99999",
        ),
        ("server port -1", servers.kubeconfig(tmp / "kubeconfig-b", "http://127.0.0.1:-1"), "-1"),
        (
            "server not a URL",
            servers.kubeconfig(tmp / "kubeconfig-c", "::not a url::"),
            "not a url",
        ),
        (
            "server refuses",
            servers.kubeconfig(tmp / "kubeconfig-d", "http://127.0.0.1:9"),
            "127.0.0.1",
        ),
        (
            "exec plugin missing",
            servers.kubeconfig(
                tmp / "kubeconfig-e",
                good,
                user={"exec": {**exec_user, "command": "/no/such/plugin"}},
            ),
            "/no/such/plugin",
        ),
        (
            "exec plugin prints non-JSON",
            servers.kubeconfig(
                tmp / "kubeconfig-f",
                good,
                user={
                    "exec": {**exec_user, "command": _script(tmp / "plugin-p1", "print('hello')")}
                },
            ),
            "plugin-p1",
        ),
        (
            "exec plugin fails",
            servers.kubeconfig(
                tmp / "kubeconfig-g",
                good,
                user={
                    "exec": {
                        **exec_user,
                        "command": _script(tmp / "plugin-p2", "raise SystemExit(3)"),
                    }
                },
            ),
            "plugin-p2",
        ),
    ]
    (tmp / "kubeconfig-h").write_text("clusters: [\n")
    (tmp / "kubeconfig-i").write_text("clusters:\n  - " + "[" * 5000 + "]" * 5000 + "\n")
    (tmp / "kubeconfig-j").write_bytes(b"\xff\xfe not yaml")
    (tmp / "kubeconfig-k").write_text(json.dumps({"apiVersion": "v1", "kind": "Config"}))
    cases += [
        ("not YAML", tmp / "kubeconfig-h", "kubeconfig-h"),
        ("nested 5,000 deep", tmp / "kubeconfig-i", "kubeconfig-i"),
    ]
    cases += [
        ("not UTF-8", tmp / "kubeconfig-j", "kubeconfig-j"),
        ("no contexts", tmp / "kubeconfig-k", "kubeconfig-k"),
    ]
    cases += [("a directory", tmp, tmp.name), ("missing", tmp / "nope", "nope")]
    return cases


KUBECONFIG_LABELS = [
    "server port 99999", "server port -1", "server not a URL", "server refuses",
    "exec plugin missing", "exec plugin prints non-JSON", "exec plugin fails", "not YAML",
    "nested 5,000 deep", "not UTF-8", "no contexts", "a directory", "missing",
]  # fmt: skip


@pytest.mark.parametrize("command", ["scan", "run"])
@pytest.mark.parametrize("label", KUBECONFIG_LABELS)
def test_each_bad_kubeconfig_exits_2_naming_it(
    tmp_path: Path, emulator: Running, label: str, command: str
) -> None:
    chosen = {case[0]: case for case in bad_kubeconfigs(tmp_path, emulator.url)}
    _, config, names = chosen[label]
    argv = [command, "--kubeconfig", str(config)]
    if command == "run":
        argv += ["--db", str(tmp_path / "a.db"), "--no-leader-elect", "--log-level", "error"]
    outcome = run_cli(argv, timeout=BOUND)
    assert_contract(outcome, valid=False, names=names, what=f"{command}: {label}")


FAULTS = [
    {"error_rate": 1.0},
    {"error_rate": 0.3, "seed": 1},
    {"throttle_rate": 1.0, "retry_after": 1},
    {"throttle_rate": 0.5, "throttle_status": True},
    {"timeout_rate": 1.0, "timeout_seconds": 2.0},
    {"latency": 1.0},
]


@pytest.mark.parametrize("faults", FAULTS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()))
def test_a_live_scan_under_injected_faults_keeps_the_contract(
    tmp_path: Path, faults: dict[str, object]
) -> None:
    injected = Faults()
    injected.update(faults)
    for running in start_emulator(tmp_path, faults=injected):
        running.load(*[i for doc in snapshots.base().values() for i in doc["items"]])
        scan_live(running.kubeconfig, valid=None, names=None, what=f"faults {faults}")


@pytest.mark.parametrize("how", sorted(servers.spoilers()))
def test_a_live_scan_of_spoiled_responses_exits_2(
    tmp_path: Path, emulator: Running, how: str
) -> None:
    with servers.spoiling_proxy(emulator.server.port, servers.spoilers()[how]) as port:
        config = servers.kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{port}")
        scan_live(config, valid=False, names="/api", what=f"API responses: {how}")


def test_run_against_a_server_that_refuses_connections_exits_2(tmp_path: Path) -> None:
    config = servers.kubeconfig(tmp_path / "kubeconfig", "http://127.0.0.1:9")
    argv = ["run", "--kubeconfig", str(config), "--db", str(tmp_path / "a.db")]
    outcome = run_cli([*argv, "--no-leader-elect", "--log-level", "error"], timeout=BOUND)
    assert_contract(outcome, valid=False, names="127.0.0.1", what="run: connection refused")
