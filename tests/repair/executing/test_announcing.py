"""Every decision is an Event on its Node, aggregated while it repeats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kubemedic.kube.api import Api
from kubemedic.repair.executing.announcing import Announcer, event_type
from kubemedic.repair.policy.records import Action, Decision, Kind, Outcome
from tests.repair.served import NODE, Served

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)

HOLD = Decision(
    Kind.HOLD,
    NODE,
    "KubemedicRepairHeld",
    "3 of 5 nodes of pool workers are unhealthy (at most 2): no repair starts",
    key=f"hold/{NODE}/max-unhealthy",
)


def announce_at(served: Served, *moments: tuple[datetime, Decision]) -> None:
    clock = [T0]

    async def scenario(api: Api) -> None:
        announcer = Announcer(api=api, identity="kubemedic-0_ab12", now=lambda: clock[0])
        for moment, decision in moments:
            clock[0] = moment
            await announcer.announce(decision)

    served.run(scenario)


def test_a_repeated_decision_bumps_count_and_last_timestamp(served: Served) -> None:
    announce_at(served, (T0, HOLD), (T0 + timedelta(minutes=1), HOLD))

    [event] = served.events()
    assert event["count"] == 2
    assert event["firstTimestamp"] == "2026-12-02T10:00:00Z"
    assert event["lastTimestamp"] == "2026-12-02T10:01:00Z"
    assert event["involvedObject"] == {
        "apiVersion": "v1", "kind": "Node", "name": NODE, "uid": NODE,
    }  # fmt: skip
    assert event["reason"] == "KubemedicRepairHeld"
    assert event["message"] == HOLD.message
    assert event["type"] == "Warning"
    assert event["source"] == {"component": "kubemedic-repair"}
    assert event["reportingComponent"] == "kubemedic-repair"
    assert event["reportingInstance"] == "kubemedic-0_ab12"
    managers = {m["manager"] for m in event["metadata"]["managedFields"]}
    assert managers == {"kubemedic-repair"}


def test_a_new_message_or_an_old_event_makes_a_new_object(served: Served) -> None:
    changed = Decision(
        Kind.HOLD, NODE, HOLD.reason, "4 of 5 nodes of pool workers are unhealthy", key=HOLD.key
    )
    announce_at(
        served,
        (T0, HOLD),
        (T0 + timedelta(minutes=1), changed),
        (T0 + timedelta(minutes=12), changed),
    )

    events = sorted(served.events(), key=lambda e: e["firstTimestamp"])
    assert [(e["message"][:6], e["count"]) for e in events] == [
        ("3 of 5", 1),
        ("4 of 5", 1),
        ("4 of 5", 1),
    ]


def test_warnings_are_for_what_a_person_should_look_at() -> None:
    cordon = Decision(Kind.ACT, NODE, "KubemedicRepairCordon", "cordon", action=Action.CORDON)
    quarantine = Decision(
        Kind.ACT, NODE, "KubemedicRepairQuarantine", "q", action=Action.QUARANTINE
    )
    escalate = Decision(Kind.ESCALATE, NODE, "KubemedicRepairEscalated", "reboot did not cure")

    assert event_type(cordon) == "Normal"
    assert event_type(cordon, Outcome(Action.CORDON, ok=False, detail="403")) == "Warning"
    assert event_type(HOLD) == "Warning"
    assert event_type(quarantine) == "Warning"
    assert event_type(escalate) == "Warning"
