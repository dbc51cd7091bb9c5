"""The notification policy: once per group, updates when it grows (not too often), a resolve
when it ends, nothing for what nobody was told of."""

from __future__ import annotations

from dataclasses import replace

from kubemedic.notify.policy import Change, Sent, Status, Subject, SubjectKind, by_key, decide
from tests.notify.builders import T0, minutes, sent, subject

EVERY = minutes(30)


def _decide(subjects: list[Subject], records: list[Sent], *, at: float = 1) -> list[tuple]:
    messages = decide(subjects, by_key(records), now=T0 + minutes(at), update_every=EVERY)
    return [(m.subject.key, m.status, m.change) for m in messages]


def test_a_new_incident_is_sent_firing_once_with_its_reason() -> None:
    hub = subject()
    (message,) = decide([hub], {}, now=T0, update_every=EVERY)
    assert (message.status, message.change, message.reason) == (
        Status.FIRING,
        Change.NEW,
        "incident began",
    )
    assert message.subject == hub


def test_an_incident_already_sent_is_not_sent_again_however_often_it_is_seen() -> None:
    hub = subject()
    for at in (1, 5, 60, 600):
        assert _decide([hub], [sent(hub)], at=at) == []


def test_a_grown_incident_is_updated_only_once_update_every_has_passed() -> None:
    told = subject(size=3)
    grown = replace(told, size=7)
    assert _decide([grown], [sent(told, last=T0)], at=10) == []
    ((key, status, change),) = _decide([grown], [sent(told, last=T0)], at=30)
    assert (key, status, change) == (told.key, Status.FIRING, Change.UPDATE)
    (message,) = decide([grown], by_key([sent(told)]), now=T0 + minutes(31), update_every=EVERY)
    assert message.reason == "grew by 4 (3 -> 7) since the last message"


def test_a_shrunk_or_unchanged_incident_is_never_updated() -> None:
    told = subject(size=5)
    assert _decide([replace(told, size=5)], [sent(told)], at=120) == []
    assert _decide([replace(told, size=2)], [sent(told)], at=120) == []


def test_an_ended_incident_resolves_once() -> None:
    told = subject()
    ended = replace(told, ended=T0 + minutes(20))
    assert _decide([ended], [sent(told)], at=40) == [(told.key, Status.RESOLVED, Change.RESOLVE)]
    assert _decide([ended], [sent(ended, status=Status.RESOLVED)], at=41) == []


def test_a_group_no_longer_seen_resolves_with_what_was_last_sent() -> None:
    told = subject(title="storm of prod/Deployment/x", kind=SubjectKind.STORM, key="storm:x")
    (message,) = decide([], by_key([sent(told)]), now=T0 + minutes(9), update_every=EVERY)
    assert (message.status, message.reason) == (Status.RESOLVED, "no longer seen")
    assert message.subject.title == told.title
    assert message.subject.ended == T0 + minutes(9)


def test_an_incident_that_ended_before_anyone_was_told_is_not_sent() -> None:
    assert _decide([subject(ended=T0)], [], at=30) == []


def test_a_resolved_group_that_starts_again_fires_again() -> None:
    told = subject()
    again = replace(told, started=T0 + minutes(90))
    (message,) = decide(
        [again],
        by_key([sent(told, status=Status.RESOLVED)]),
        now=T0 + minutes(91),
        update_every=EVERY,
    )
    assert (message.change, message.reason) == (Change.NEW, "incident began again")


def test_firing_messages_come_before_resolves_in_key_order() -> None:
    a, b, c = (subject(key=k) for k in ("incident:a", "incident:b", "incident:c"))
    result = _decide([c, a], [sent(b)], at=3)
    assert result == [
        ("incident:a", Status.FIRING, Change.NEW),
        ("incident:c", Status.FIRING, Change.NEW),
        ("incident:b", Status.RESOLVED, Change.RESOLVE),
    ]


def test_of_two_subjects_with_one_key_the_one_going_on_is_sent() -> None:
    early = subject(ended=T0 + minutes(5))
    later = subject(started=T0 + minutes(40))
    (message,) = decide([later, early], {}, now=T0 + minutes(41), update_every=EVERY)
    assert message.subject == later


def test_a_record_keeps_when_the_group_was_first_sent() -> None:
    told = subject(size=1)
    record = sent(told, first=T0, last=T0)
    (message,) = decide(
        [replace(told, size=2)], by_key([record]), now=T0 + minutes(45), update_every=EVERY
    )
    after = message.recorded(at=T0 + minutes(45), before=record)
    assert (after.first_sent, after.last_sent, after.subject.size) == (T0, T0 + minutes(45), 2)


def test_a_subject_round_trips_through_json() -> None:
    told = subject(ended=T0 + minutes(3), labels={"node": "core-1"}, details=("one", "two"), size=4)
    assert Subject.from_json(told.to_json()) == told
