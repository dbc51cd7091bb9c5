"""The policy's records survive the archive's JSON unchanged, and a dict that is not one of
them is refused naming its field."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.repair.policy import codec
from kubemedic.repair.policy.records import (
    Action,
    Brake,
    Decision,
    Kind,
    LedgerEntry,
    NodeState,
    Repair,
    Step,
    StepRecord,
)

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)

times = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2999, 12, 31), timezones=st.just(UTC)
)
texts = st.text(max_size=20)
steps = st.builds(
    StepRecord,
    action=st.sampled_from([action.value for action in Action]),
    started=times,
    finished=st.none() | times,
    outcome=st.sampled_from(["", "done", "failed", "timeout", "blocked", "dry-run"]),
    detail=texts,
)
repairs = st.builds(
    Repair,
    id=texts,
    node=texts,
    pool=texts,
    trigger=texts,
    started=times,
    step=st.sampled_from(Step),
    phase=texts,
    phase_started=times,
    step_started=times,
    cause=st.sampled_from(["kubelet", "runtime", "node", "startup"]),
    boot_id=texts,
    request=texts,
    fenced=st.booleans(),
    cordoned=st.booleans(),
    machine=texts,
    owner=texts,
    ready_since=st.none() | times,
    detail=texts,
    dry_run=st.booleans(),
    steps=st.lists(steps, max_size=4).map(tuple),
)
entries = st.builds(
    LedgerEntry,
    id=texts,
    node=texts,
    trigger=texts,
    started=times,
    finished=times,
    outcome=st.sampled_from(["repaired", "replaced", "quarantined", "released", "dry-run"]),
    steps=st.lists(steps, max_size=4).map(tuple),
    dry_run=st.booleans(),
)
decisions = st.builds(
    Decision,
    kind=st.sampled_from(Kind),
    node=st.none() | texts,
    reason=texts,
    message=texts,
    action=st.none() | st.sampled_from(Action),
    repair=texts,
    key=texts,
    args=st.dictionaries(texts, texts, max_size=3),
    outcome=texts,
    dry_run=st.booleans(),
    brake=st.none() | st.sampled_from(Brake),
)


def _through_json(document: dict[str, object]) -> object:
    return json.loads(json.dumps(document))


@given(repairs)
def test_a_repair_round_trips_through_json(repair: Repair) -> None:
    assert codec.repair_from_json(_through_json(codec.repair_to_json(repair))) == repair


@given(entries)
def test_a_ledger_entry_round_trips_through_json(entry: LedgerEntry) -> None:
    assert codec.entry_from_json(_through_json(codec.entry_to_json(entry))) == entry


@given(decisions)
def test_a_decision_round_trips_through_json(decision: Decision) -> None:
    assert codec.decision_from_json(_through_json(codec.decision_to_json(decision))) == decision


@given(steps)
def test_a_step_round_trips_through_json(step: StepRecord) -> None:
    assert codec.step_from_json(_through_json(codec.step_to_json(step))) == step


def _repair(**changes: object) -> Repair:
    fields: dict[str, object] = {
        "id": "r-1",
        "node": "worker-1",
        "pool": "workers",
        "trigger": "Ready False for 10m",
        "started": T0,
        "step": Step.REBOOT,
        "phase": "draining",
        "phase_started": T0 + timedelta(minutes=1),
        "step_started": T0 + timedelta(seconds=30),
        "steps": (StepRecord("cordon", T0, T0 + timedelta(seconds=1), "done"),),
    }
    fields.update(changes)
    return Repair(**fields)  # type: ignore[arg-type]


def test_times_are_rfc3339_utc_and_enums_their_values() -> None:
    paris = timezone(timedelta(hours=1))
    document = codec.repair_to_json(_repair(started=datetime(2026, 12, 2, 11, 0, 0, 250000, paris)))
    assert document["started"] == "2026-12-02T10:00:00.250000Z"
    assert document["phaseStarted"] == "2026-12-02T10:01:00Z"
    assert document["step"] == "reboot"
    assert document["readySince"] is None
    assert document["steps"][0] == {
        "action": "cordon",
        "started": "2026-12-02T10:00:00Z",
        "finished": "2026-12-02T10:00:01Z",
        "outcome": "done",
        "detail": "",
    }
    decision = codec.decision_to_json(
        Decision(Kind.ACT, "worker-1", "KubemedicRepairReboot", "m", action=Action.REBOOT)
    )
    assert (decision["kind"], decision["action"]) == ("act", "reboot")


def test_optional_fields_take_their_defaults_when_missing() -> None:
    document = codec.repair_to_json(_repair())
    for optional in ("pool", "cause", "bootId", "fenced", "readySince", "dryRun", "steps"):
        del document[optional]
    read = codec.repair_from_json(document)
    assert read == _repair(pool="", steps=())
    assert read.cause == "node"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"started": None}, r"^repair\.started: expected an RFC 3339 time"),
        ({"started": "2026-12-02T10:00:00"}, r"^repair\.started: expected .* with a zone"),
        ({"step": "reinstall"}, r"^repair\.step: expected one of restart, reboot, replace"),
        ({"fenced": "yes"}, r"^repair\.fenced: expected true or false, found 'yes'"),
        ({"surprise": 1}, r"^repair\.surprise: not a field of this record"),
        ({"steps": {}}, r"^repair\.steps: expected a list of steps"),
        ({"steps": [{"action": "cordon", "started": "x"}]}, r"^repair\.steps\[0\]\.started:"),
        ({"steps": [{"started": "2026-12-02T10:00:00Z"}]}, r"^repair\.steps\[0\]\.action: missing"),
    ],
)
def test_a_bad_repair_names_its_field(change: dict[str, object], message: str) -> None:
    document = {**codec.repair_to_json(_repair()), **change}
    with pytest.raises(codec.CodecError, match=message):
        codec.repair_from_json(document)


def test_a_missing_required_field_is_named() -> None:
    document = codec.entry_to_json(LedgerEntry("r-1", "worker-1", "t", T0, T0, "repaired"))
    del document["outcome"]
    with pytest.raises(
        codec.CodecError, match=r"^ledger entry\.outcome: missing \(a required field\)"
    ):
        codec.entry_from_json(document)
    with pytest.raises(codec.CodecError, match=r"^ledger entry: expected an object, found \[\]"):
        codec.entry_from_json([])


def test_a_decision_given_at_a_time_reads_back_without_it() -> None:
    given = Decision(Kind.SKIP, "worker-1", "KubemedicRepairSkipped", "do-not-repair")
    document = codec.decision_to_json(given, T0)
    assert document["at"] == "2026-12-02T10:00:00Z"
    assert codec.decision_from_json(document) == given
    with pytest.raises(codec.CodecError, match=r"^decision\.at: expected an RFC 3339 time"):
        codec.decision_from_json({**document, "at": 5})


def test_decision_args_must_be_text() -> None:
    document = codec.decision_to_json(Decision(Kind.HOLD, None, "KubemedicRepairHeld", "held"))
    assert document["node"] is None
    with pytest.raises(codec.CodecError, match=r"^decision\.args: expected an object of text"):
        codec.decision_from_json({**document, "args": {"pods": 3}})
    with pytest.raises(codec.CodecError, match=r"^decision\.action: expected one of"):
        codec.decision_from_json({**document, "action": "explode"})
    with pytest.raises(codec.CodecError, match=r"^decision\.brake: expected one of"):
        codec.decision_from_json({**document, "brake": "handbrake"})


def test_a_decision_written_before_brakes_were_kept_reads_back_without_one() -> None:
    given = Decision(Kind.HOLD, "w1", "KubemedicRepairHeld", "held", brake=Brake.MAX_IN_FLIGHT)
    document = codec.decision_to_json(given)
    assert document["brake"] == "max-in-flight"
    del document["brake"]
    assert codec.decision_from_json(document) == replace(given, brake=None)


def test_a_node_state_is_one_of_the_five() -> None:
    held = NodeState("worker-1", "held", "reboot", "brake")
    assert codec.node_state_to_json(held, since=T0) == {
        "node": "worker-1",
        "state": "held",
        "step": "reboot",
        "reason": "brake",
        "since": "2026-12-02T10:00:00Z",
    }
    with pytest.raises(ValueError, match="not one of healthy, unhealthy"):
        codec.node_state_to_json(NodeState("worker-1", "sick"))
