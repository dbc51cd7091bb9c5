"""``kubemedic nodes`` on an archive filled through the Archive's repair methods, and
``kubemedic nodes release`` against the API emulator over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from kubemedic.repair.policy import codec
from kubemedic.repair.policy.records import LedgerEntry, NodeState, Repair, Step, StepRecord
from kubemedic.store import schema
from kubemedic.store.db import Archive
from kubemedic.testing import bodies
from tests.inprocess import kubemedic, one_error_line
from tests.sim.conftest import Running, start_emulator

T0 = datetime(2025, 12, 2, 10, 0, tzinfo=UTC)  # before the emulator's clock
SIM = "kubemedic-sim"  # the cluster name in the emulator's kubeconfig


def t(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def entry(node: str, id_: str, minutes: float, outcome: str = "repaired") -> LedgerEntry:
    return LedgerEntry(
        id=id_,
        node=node,
        trigger="Ready False for 10m",
        started=t(minutes - 15),
        finished=t(minutes),
        outcome=outcome,
        steps=(
            StepRecord("cordon", t(minutes - 15), t(minutes - 14), "done"),
            StepRecord("reboot", t(minutes - 14), t(minutes), "done", "new bootID"),
        ),
    )


def in_flight(node: str) -> Repair:
    return Repair(
        id="r-flight",
        node=node,
        pool="workers",
        trigger="KubeletUnhealthy True for 2m",
        started=t(100),
        step=Step.RESTART,
        phase="requested",
        phase_started=t(100),
        step_started=t(100),
        steps=(StepRecord("restart-kubelet", t(100)),),
    )


def fill(url: str, cluster: str = "prod") -> None:
    with Archive.open(url) as archive:
        archive.save_repair_round(
            cluster,
            in_flight={"worker-2": codec.repair_to_json(in_flight("worker-2"))},
            finished=[
                codec.entry_to_json(entry("worker-1", "a", 20)),
                codec.entry_to_json(entry("worker-1", "b", 60, "quarantined")),
            ],
            decisions=[],
            node_states=[
                codec.node_state_to_json(
                    NodeState("worker-1", "quarantined", "quarantine", "2 repairs in 24h"),
                    since=t(60),
                ),
                codec.node_state_to_json(NodeState("worker-2", "repairing", "restart", "kubelet")),
                codec.node_state_to_json(NodeState("worker-3", "healthy")),
            ],
            at=t(100).timestamp(),
        )


@pytest.fixture
def filled(sqlite_url: str) -> str:
    fill(sqlite_url)
    return sqlite_url


def test_nodes_as_json(capsys: pytest.CaptureFixture[str], filled: str) -> None:
    code, out, err = kubemedic(capsys, "nodes", "--db", filled, "--output", "json")
    assert (code, err) == (0, "")
    found = json.loads(out)
    assert [(n["name"], n["state"], n["step"], n["reason"]) for n in found] == [
        ("worker-1", "quarantined", "quarantine", "2 repairs in 24h"),
        ("worker-2", "repairing", "restart", "kubelet"),
        ("worker-3", "healthy", None, None),
    ]
    assert found[0]["repairs"] == [
        {
            "trigger": "Ready False for 10m",
            "action": "cordon",
            "started": "2025-12-02T10:05:00Z",
            "finished": "2025-12-02T10:06:00Z",
            "outcome": "done",
        },
        {
            "trigger": "Ready False for 10m",
            "action": "reboot",
            "started": "2025-12-02T10:06:00Z",
            "finished": "2025-12-02T10:20:00Z",
            "outcome": "done",
        },
        {
            "trigger": "Ready False for 10m",
            "action": "cordon",
            "started": "2025-12-02T10:45:00Z",
            "finished": "2025-12-02T10:46:00Z",
            "outcome": "done",
        },
        {
            "trigger": "Ready False for 10m",
            "action": "reboot",
            "started": "2025-12-02T10:46:00Z",
            "finished": "2025-12-02T11:00:00Z",
            "outcome": "done",
        },
    ]
    assert found[1]["repairs"] == [
        {
            "trigger": "KubeletUnhealthy True for 2m",
            "action": "restart-kubelet",
            "started": "2025-12-02T11:40:00Z",
            "finished": None,
            "outcome": None,
        }
    ]
    assert found[2]["repairs"] == []


def test_nodes_as_a_table(
    capsys: pytest.CaptureFixture[str], filled: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = kubemedic(capsys, "nodes", "--db", filled)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATE", "STEP", "REPAIRS", "LAST", "OUTCOME", "REASON"]
    assert lines[1].split()[:5] == ["worker-1", "quarantined", "quarantine", "2", "quarantined"]
    assert lines[2].split()[:5] == ["worker-2", "repairing", "restart", "1", "<none>"]
    assert "3 node(s) of cluster prod: 1 healthy, 1 quarantined, 1 repairing" in out
    header = ["NODE", "TRIGGER", "ACTION", "STARTED", "FINISHED", "OUTCOME"]
    assert header in [line.split() for line in lines]
    assert "<in flight>" in out
    assert "5 repair step(s)" in out


def test_nodes_of_an_archive_without_repairs(
    capsys: pytest.CaptureFixture[str], sqlite_url: str
) -> None:
    Archive.open(sqlite_url).close()
    assert kubemedic(capsys, "nodes", "--db", sqlite_url) == (
        0,
        "no nodes recorded by node repair\n",
        "",
    )
    assert kubemedic(capsys, "nodes", "--db", sqlite_url, "-o", "json")[1] == "[]\n"


def test_several_clusters_need_cluster(capsys: pytest.CaptureFixture[str], filled: str) -> None:
    fill(filled, "staging")
    code, _, err = kubemedic(capsys, "nodes", "--db", filled)
    assert code == 2
    assert "holds several clusters (prod, staging): choose one with --cluster" in one_error_line(
        err
    )
    code, out, _ = kubemedic(capsys, "nodes", "--db", filled, "--cluster", "staging", "-o", "json")
    assert code == 0 and len(json.loads(out)) == 3


@pytest.mark.parametrize(
    ("db", "said"),
    [
        ("mysql://x/y", "unsupported database URL"),
        ("{tmp}/missing.db", "no archive at"),
        ("{tmp}", "is a directory"),
    ],
)
def test_a_bad_db_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, db: str, said: str
) -> None:
    code, out, err = kubemedic(capsys, "nodes", "--db", db.format(tmp=tmp_path))
    assert (code, out) == (2, "")
    assert said in one_error_line(err)


def test_a_damaged_record_exits_2_naming_it(
    capsys: pytest.CaptureFixture[str], filled: str
) -> None:
    with Archive.open(filled) as archive, archive.transaction() as connection:
        connection.execute(sa.update(schema.repair_ledger).values(trigger="x"))
        connection.execute(
            sa.update(schema.repair_ledger)
            .where(schema.repair_ledger.c.repair == "b")
            .values(steps='[{"action": "cordon", "started": "soon"}]')
        )
    code, _, err = kubemedic(capsys, "nodes", "--db", filled)
    assert code == 2
    assert (
        "is damaged: table repair_ledger, repair b.steps[0].started: expected an RFC 3339 time"
        in one_error_line(err)
    )


# -- release --------------------------------------------------------------------------------


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path)


def quarantined(name: str, *, cordoned: bool = True) -> dict[str, Any]:
    node = bodies.node(name, labels={"kubemedic.io/quarantined": "true"}, unschedulable=cordoned)
    if cordoned:
        node["metadata"]["annotations"] = {
            "kubemedic.io/quarantine-reason": "4 repairs in 24h",
            "team": "infra",
        }
    return node


def _node(emulator: Running, name: str) -> dict[str, Any]:
    status, body, _ = emulator.request("GET", f"/api/v1/nodes/{name}")
    assert status == 200
    return dict(body)


def _events(emulator: Running) -> list[dict[str, Any]]:
    status, body, _ = emulator.request("GET", "/api/v1/namespaces/default/events")
    assert status == 200
    return [item for item in body["items"] if item["reason"] == "KubemedicRepairReleased"]


def test_release_clears_the_quarantine_and_starts_the_ledger_over(
    capsys: pytest.CaptureFixture[str], emulator: Running, sqlite_url: str
) -> None:
    fill(sqlite_url, SIM)
    emulator.load(quarantined("worker-1"))
    code, out, err = kubemedic(
        capsys,
        "nodes",
        "release",
        "worker-1",
        "--kubeconfig",
        str(emulator.kubeconfig),
        "--db",
        sqlite_url,
        "--by",
        "alice",
    )
    assert (code, err) == (0, ""), err
    assert "node/worker-1 released by alice" in out
    node = _node(emulator, "worker-1")
    assert "kubemedic.io/quarantined" not in node["metadata"].get("labels", {})
    assert node["metadata"]["annotations"] == {"team": "infra"}
    assert not node["spec"].get("unschedulable")
    [event] = _events(emulator)
    assert event["involvedObject"]["name"] == "worker-1"
    assert event["involvedObject"]["kind"] == "Node"
    assert event["source"]["component"] == "kubemedic-repair"
    assert "released by alice" in event["message"] and "4 repairs in 24h" in event["message"]
    with Archive.open(sqlite_url) as archive:
        last = archive.ledger(SIM, node="worker-1")[-1]
        states = {state["node"]: state for state in archive.node_states(SIM)}
    assert (last["outcome"], last["trigger"]) == ("released", "quarantine released by alice")
    assert states["worker-1"]["state"] == "healthy"
    code, out, _ = kubemedic(capsys, "nodes", "--db", sqlite_url, "-o", "json")
    [shown] = [item for item in json.loads(out) if item["name"] == "worker-1"]
    assert shown["state"] == "healthy"
    assert shown["repairs"][-1]["action"] == "release"
    assert shown["repairs"][-1]["outcome"] == "done"
    # The repairs before the release no longer count: the REPAIRS column starts over.
    code, out, _ = kubemedic(capsys, "nodes", "--db", sqlite_url)
    [row] = [line.split() for line in out.splitlines() if line.startswith("worker-1 ")]
    assert row[:5] == ["worker-1", "healthy", "<none>", "0", "released"]


def test_release_uncordons_only_what_the_quarantine_cordoned(
    capsys: pytest.CaptureFixture[str], emulator: Running, sqlite_url: str
) -> None:
    Archive.open(sqlite_url).close()
    node = quarantined("worker-1", cordoned=False)
    node["spec"]["unschedulable"] = True  # cordoned by a person, not by the quarantine
    emulator.load(node)
    code, _, err = kubemedic(
        capsys, "nodes", "release", "worker-1", "--kubeconfig", str(emulator.kubeconfig),
        "--db", sqlite_url, "--by", "bob",
    )  # fmt: skip
    assert code == 0, err
    after = _node(emulator, "worker-1")
    assert "kubemedic.io/quarantined" not in after["metadata"].get("labels", {})
    assert after["spec"]["unschedulable"] is True


def test_releasing_a_node_that_is_not_quarantined_exits_2(
    capsys: pytest.CaptureFixture[str], emulator: Running, sqlite_url: str
) -> None:
    Archive.open(sqlite_url).close()
    emulator.load(bodies.node("worker-1"))
    args = ("--kubeconfig", str(emulator.kubeconfig), "--db", sqlite_url)
    code, _, err = kubemedic(capsys, "nodes", "release", "worker-1", *args)
    assert code == 2
    assert "node 'worker-1' is not quarantined" in one_error_line(err)
    code, _, err = kubemedic(capsys, "nodes", "release", "worker-9", *args)
    assert code == 2
    assert "node 'worker-9' not found in context 'kubemedic-sim'" in one_error_line(err)
    with Archive.open(sqlite_url) as archive:
        assert archive.ledger(SIM) == []
    assert _events(emulator) == []


def test_release_with_a_bad_db_changes_nothing(
    capsys: pytest.CaptureFixture[str], emulator: Running, tmp_path: Path
) -> None:
    emulator.load(quarantined("worker-1"))
    code, _, err = kubemedic(
        capsys, "nodes", "release", "worker-1", "--kubeconfig", str(emulator.kubeconfig),
        "--db", str(tmp_path / "missing.db"),
    )  # fmt: skip
    assert code == 2
    assert "no archive at" in one_error_line(err)
    assert _node(emulator, "worker-1")["metadata"]["labels"]["kubemedic.io/quarantined"] == "true"
