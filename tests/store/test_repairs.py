"""Node repair's state in the archive: one round in one transaction, a ledger that a replayed
round does not double, decisions kept as given, node states, Ready transitions, releases, an
upgrade from a 0001 archive and a damaged row named. SQLite and PostgreSQL alike."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from kubemedic.repair.policy import codec
from kubemedic.repair.policy.records import (
    Action,
    Decision,
    Kind,
    LedgerEntry,
    NodeState,
    Repair,
    Step,
    StepRecord,
)
from kubemedic.store import db, schema
from kubemedic.store.db import Archive, ArchiveError
from kubemedic.store.retention import retain
from kubemedic.store.writer import Batch
from tests.store.rows import transition

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)


def t(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def repair(node: str = "worker-1", id_: str = "r-1", **changes: object) -> Repair:
    fields: dict[str, object] = {
        "id": id_,
        "node": node,
        "pool": "workers",
        "trigger": "Ready False for 10m",
        "started": T0,
        "step": Step.REBOOT,
        "phase": "draining",
        "phase_started": t(1),
        "step_started": t(0.5),
        "steps": (StepRecord("cordon", T0, t(0.01), "done"),),
    }
    fields.update(changes)
    return Repair(**fields)  # type: ignore[arg-type]


def finished(node: str = "worker-1", id_: str = "r-1", minutes: float = 20) -> LedgerEntry:
    return LedgerEntry(
        id=id_,
        node=node,
        trigger="Ready False for 10m",
        started=T0,
        finished=t(minutes),
        outcome="repaired",
        steps=(
            StepRecord("cordon", T0, t(0.01), "done"),
            StepRecord("reboot", t(1), t(minutes), "done", "bootID changed"),
        ),
    )


def decision(node: str | None = "worker-1", **changes: object) -> Decision:
    fields: dict[str, object] = {
        "kind": Kind.ACT,
        "node": node,
        "reason": "KubemedicRepairReboot",
        "message": "worker-1 has been NotReady for 10m: rebooting it",
        "action": Action.REBOOT,
        "repair": "r-1",
        "args": {"request": "abc"},
    }
    fields.update(changes)
    return Decision(**fields)  # type: ignore[arg-type]


def state(node: str = "worker-1", word: str = "repairing") -> dict[str, object]:
    return codec.node_state_to_json(
        NodeState(node, word, "reboot", "Ready False for 10m"), since=T0
    )


def test_a_repair_in_flight_is_saved_and_resumed_as_it_was(archive: Archive) -> None:
    archive.save_repair_round(
        "prod",
        in_flight={"worker-1": codec.repair_to_json(repair())},
        finished=[],
        decisions=[codec.decision_to_json(decision())],
        node_states=[state()],
        at=t(1).timestamp(),
    )
    loaded = archive.load_repairs("prod")
    assert list(loaded) == ["worker-1"]
    assert codec.repair_from_json(loaded["worker-1"]) == repair()
    assert archive.load_repairs("staging") == {}
    moved = repair(phase="rebooting", phase_started=t(5))
    archive.save_repair_round(
        "prod",
        in_flight={"worker-1": codec.repair_to_json(moved)},
        finished=[],
        decisions=[],
        node_states=[],
        at=t(5).timestamp(),
    )
    assert codec.repair_from_json(archive.load_repairs("prod")["worker-1"]) == moved


def test_a_finished_repair_leaves_the_flight_for_the_ledger_once(archive: Archive) -> None:
    archive.save_repair_round(
        "prod",
        in_flight={
            "worker-1": codec.repair_to_json(repair()),
            "worker-2": codec.repair_to_json(repair("worker-2", "r-2")),
        },
        finished=[],
        decisions=[],
        node_states=[],
        at=t(1).timestamp(),
    )
    round_ = {
        "in_flight": {"worker-2": codec.repair_to_json(repair("worker-2", "r-2"))},
        "finished": [codec.entry_to_json(finished())],
        "decisions": [codec.decision_to_json(decision(kind=Kind.FINISH, outcome="repaired"))],
        "node_states": [state(word="healthy")],
        "at": t(20).timestamp(),
    }
    archive.save_repair_round("prod", **round_)  # type: ignore[arg-type]
    archive.save_repair_round("prod", **round_)  # type: ignore[arg-type]  # replayed
    assert list(archive.load_repairs("prod")) == ["worker-2"]
    ledger = archive.ledger("prod")
    assert [codec.entry_from_json(entry) for entry in ledger] == [finished()]
    assert ledger[0]["finished"] == "2026-12-02T10:20:00Z"
    # Decisions are an audit trail: each one given is a row, a replayed round's too.
    assert len(archive.repair_decisions("prod")) == 2


def test_the_ledger_by_node_and_window(archive: Archive) -> None:
    archive.save_repair_round(
        "prod",
        in_flight={},
        finished=[
            codec.entry_to_json(finished("worker-1", "a", 20)),
            codec.entry_to_json(finished("worker-2", "b", 30)),
            codec.entry_to_json(finished("worker-1", "c", 60)),
        ],
        decisions=[],
        node_states=[],
        at=t(60).timestamp(),
    )
    assert [e["id"] for e in archive.ledger("prod")] == ["a", "b", "c"]
    assert [e["id"] for e in archive.ledger("prod", node="worker-1")] == ["a", "c"]
    assert [e["id"] for e in archive.ledger("prod", since=t(30).timestamp())] == ["b", "c"]
    assert archive.ledger("staging") == []


def test_decisions_keep_what_was_given_in_order(archive: Archive) -> None:
    given = [
        decision(),
        decision(None, kind=Kind.HOLD, reason="KubemedicRepairHeld", action=None, repair=""),
    ]
    archive.save_repair_round(
        "prod",
        in_flight={},
        finished=[],
        decisions=[codec.decision_to_json(item) for item in given],
        node_states=[],
        at=t(3).timestamp(),
    )
    read = archive.repair_decisions("prod")
    assert [item.pop("at") for item in read] == ["2026-12-02T10:03:00Z"] * 2
    assert [codec.decision_from_json(item) for item in read] == given
    assert len(archive.repair_decisions("prod", node="worker-1")) == 1
    with archive.engine.connect() as connection:
        rows = connection.execute(sa.select(schema.repair_decisions)).mappings().all()
    assert [(r["node"], r["kind"], r["action"]) for r in rows] == [
        ("worker-1", "act", "reboot"),
        ("", "hold", ""),
    ]


def test_node_states_are_upserted(archive: Archive) -> None:
    for word, minutes in (("unhealthy", 10), ("quarantined", 30)):
        archive.save_repair_round(
            "prod",
            in_flight={},
            finished=[],
            decisions=[],
            node_states=[state(word=word), state("worker-2", "healthy")],
            at=t(minutes).timestamp(),
        )
    states = archive.node_states("prod")
    assert [(s["node"], s["state"]) for s in states] == [
        ("worker-1", "quarantined"),
        ("worker-2", "healthy"),
    ]
    assert states[0]["since"] == "2026-12-02T10:00:00Z"
    assert states[0]["updatedAt"] == "2026-12-02T10:30:00Z"


def test_a_bad_round_writes_nothing(archive: Archive) -> None:
    with pytest.raises(ValueError, match="state 'sick' is not one of healthy"):
        archive.save_repair_round(
            "prod",
            in_flight={"worker-1": codec.repair_to_json(repair())},
            finished=[],
            decisions=[],
            node_states=[{**state(), "state": "sick"}],
            at=t(1).timestamp(),
        )
    assert archive.load_repairs("prod") == {}


def test_not_ready_since_counts_outages_not_their_changes(archive: Archive) -> None:
    archive.write(
        Batch(
            cluster="prod",
            transitions=[
                transition("False", 0, previous=""),  # first seen NotReady
                transition("True", 60, previous="False"),
                transition("False", 120, previous="True"),
                transition("Unknown", 180, previous="False"),  # the same outage
                transition("True", 240, previous="Unknown"),
                transition("Unknown", 300, previous="True"),
                transition("True", 300, previous="", condition="MemoryPressure"),
                transition("False", 400, previous="True", node="node-2"),
            ],
        )
    )
    base = datetime(2024, 5, 1, 12, 0, tzinfo=UTC).timestamp()  # tests.store.rows.T0
    assert archive.not_ready_since("prod", base) == {
        "node-1": [base, base + 120, base + 300],
        "node-2": [base + 400],
    }
    assert archive.not_ready_since("prod", base + 200) == {
        "node-1": [base + 300],
        "node-2": [base + 400],
    }
    assert archive.not_ready_since("staging", base) == {}


def test_a_release_is_a_ledger_row_and_a_healthy_state(archive: Archive) -> None:
    archive.save_repair_round(
        "prod",
        in_flight={},
        finished=[codec.entry_to_json(finished())],
        decisions=[],
        node_states=[state(word="quarantined")],
        at=t(20).timestamp(),
    )
    entry = archive.release("prod", "worker-1", by="alice", at=t(90).timestamp())
    ledger = archive.ledger("prod", node="worker-1")
    assert ledger[-1] == entry
    released = codec.entry_from_json(entry)
    assert (released.outcome, released.finished, released.trigger) == (
        "released",
        t(90),
        "quarantine released by alice",
    )
    assert [step.action for step in released.steps] == ["release"]
    [now] = archive.node_states("prod")
    assert (now["state"], now["reason"], now["since"]) == (
        "healthy",
        "quarantine released by alice",
        "2026-12-02T11:30:00Z",
    )


def test_retention_trims_decisions_but_keeps_the_ledger(archive: Archive) -> None:
    for minutes in (0, 60):
        archive.save_repair_round(
            "prod",
            in_flight={},
            finished=[codec.entry_to_json(finished(id_=f"r-{minutes}", minutes=minutes))],
            decisions=[codec.decision_to_json(decision())],
            node_states=[state()],
            at=t(minutes).timestamp(),
        )
    removed = retain(archive, "prod", t(30))
    assert removed["repair_decisions"] == 1
    assert [d["at"] for d in archive.repair_decisions("prod")] == ["2026-12-02T11:00:00Z"]
    assert len(archive.ledger("prod")) == 2
    assert len(archive.node_states("prod")) == 1


def _revision(archive: Archive) -> str | None:
    with archive.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def test_an_archive_of_revision_0001_is_upgraded_on_open_keeping_its_rows(
    archive_url: str,
) -> None:
    with Archive.open(archive_url) as archive:
        archive.write(Batch(cluster="prod", transitions=[transition("False", 0)]))
        with archive.transaction() as connection:
            command.downgrade(db._alembic_config(connection), "0001")
        assert _revision(archive) == "0001"
        assert "repair_ledger" not in sa.inspect(archive.engine).get_table_names()
    with Archive.open(archive_url) as archive:
        with archive.transaction() as connection:
            head = ScriptDirectory.from_config(db._alembic_config(connection)).get_current_head()
        assert _revision(archive) == head  # every later migration ran too
        assert list(archive.not_ready_since("prod", 0)) == ["node-1"]
        archive.release("prod", "node-1", by="bob", at=T0.timestamp())
        assert [entry["outcome"] for entry in archive.ledger("prod")] == ["released"]


def test_a_damaged_repair_body_is_named_not_half_read(archive: Archive) -> None:
    archive.save_repair_round(
        "prod",
        in_flight={"worker-1": codec.repair_to_json(repair())},
        finished=[codec.entry_to_json(finished("worker-2", "r-2"))],
        decisions=[],
        node_states=[],
        at=t(1).timestamp(),
    )
    with archive.transaction() as connection:
        connection.execute(sa.update(schema.repairs).values(body="{not json"))
        connection.execute(sa.update(schema.repair_ledger).values(steps='{"a": 1}'))
    with pytest.raises(
        ArchiveError,
        match=r"table repairs, row \(cluster='prod', node='worker-1'\): column body: "
        r"expected a JSON object, found '\{not json'",
    ):
        archive.load_repairs("prod")
    with pytest.raises(ArchiveError, match=r"table repair_ledger, row 1: column steps: expected"):
        archive.ledger("prod")


def test_a_sqlite_row_of_the_wrong_type_is_found_on_open(sqlite_url: str) -> None:
    with Archive.open(sqlite_url) as archive:
        archive.save_repair_round(
            "prod",
            in_flight={},
            finished=[],
            decisions=[],
            node_states=[state()],
            at=t(1).timestamp(),
        )
    connection = sqlite3.connect(Path(sqlite_url.removeprefix("sqlite:///")))
    with connection:
        connection.execute("UPDATE node_states SET state = 'sick'")
    connection.close()
    with pytest.raises(
        ArchiveError,
        match=r"damaged: table node_states, row \(cluster='prod', node='worker-1'\): column "
        r"state: expected one of healthy, unhealthy, repairing, held, quarantined, gone, "
        r"found 'sick'",
    ):
        Archive.open(sqlite_url)
