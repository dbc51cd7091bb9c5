"""``kubemedic agent`` from the command line, against the API emulator over HTTP and this
machine's real host (no kubelet on :10248, no container runtime socket, systemd not PID 1): the
round it runs, the conditions it writes, and the errors it ends with."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubemedic.model import agentcontract as contract
from kubemedic.testing import bodies
from tests.inprocess import kubemedic, one_error_line
from tests.sim.conftest import Running, start_emulator

CONFIG = """\
agent:
  selfRepair: false          # never restart this machine's units from a test
  stateFile: {state}
  kubelet:
    healthzUrl: http://127.0.0.1:{port}/healthz
  runtime:
    socket: unix://{socket}
"""


def config(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(
        CONFIG.format(state=tmp_path / "state.json", port=port, socket=tmp_path / "no.sock")
    )
    return path


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_once_reports_what_it_finds_on_this_machine(
    capsys: pytest.CaptureFixture[str], emulator: Running, tmp_path: Path
) -> None:
    body = bodies.node("worker-9")
    body["metadata"] = {"name": "worker-9"}
    status, answer, _ = emulator.request("POST", "/api/v1/nodes?fieldManager=kubelet", body)
    assert status == 201, answer
    code, out, err = kubemedic(
        capsys, "agent", "--once", "--node", "worker-9",
        "--kubeconfig", str(emulator.kubeconfig),
        "--config", str(config(tmp_path, free_port())),
    )  # fmt: skip
    assert code == 1, err  # both daemons unhealthy here
    assert "kubelet: KubeletUnhealthy=True" in out
    assert "connection refused" in out
    assert "runtime: ContainerRuntimeUnhealthy=True" in out
    assert "self-repair is off" in out
    status, node, _ = emulator.request("GET", "/api/v1/nodes/worker-9")
    assert status == 200
    conditions = {c["type"]: c for c in node["status"]["conditions"]}
    assert conditions[contract.AGENT_READY]["status"] == "True"
    assert conditions[contract.KUBELET_UNHEALTHY]["status"] == "True"
    assert conditions[contract.RUNTIME_UNHEALTHY]["status"] == "True"
    owners = {m["manager"] for m in node["metadata"]["managedFields"]}
    assert contract.AGENT_MANAGER in owners


def test_bad_invocations_end_in_one_clear_line(
    capsys: pytest.CaptureFixture[str],
    emulator: Running,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("NODE_NAME", raising=False)
    kc = ("--kubeconfig", str(emulator.kubeconfig))
    code, _, err = kubemedic(capsys, "agent", "--once", *kc)
    assert code == 2 and "--node" in one_error_line(err)
    code, _, err = kubemedic(capsys, "agent", "--once", "--node", "ghost", *kc)
    assert code == 2 and "node 'ghost' does not exist" in one_error_line(err)
    code, _, err = kubemedic(capsys, "agent", "--node", "n", "--listen", "nowhere", *kc)
    assert code == 2 and "--listen" in one_error_line(err)
    bad = tmp_path / "bad.yaml"
    bad.write_text(json.dumps({"agent": {"kubelet": {"cooldwn": "1m"}}}))
    code, _, err = kubemedic(capsys, "agent", "--once", "--node", "n", "--config", str(bad), *kc)
    line = one_error_line(err)
    assert code == 2 and "agent.kubelet" in line and "cooldown" in line
