"""What to send, to one receiver, this round (pure: subjects and records in, messages out).

A **subject** is one thing a person is told about as one group: an incident (keyed by its
incident cause, so an incident whose id moves as earlier evidence joins it stays one group), a
node quarantined or a node repair held by a brake (keyed by the node), a Failed-pod storm the
breaker is handling, with the actions it took (keyed by the owner). A **record** (``Sent``) is
what the receiver last accepted about a key: its status and the subject as it was then.

The rules, per receiver, for each key:

1. a subject going on that the receiver was never told of, or was last told had resolved, is
   sent ``firing`` (change ``new``): once, however many rounds it lasts;
2. a subject going on that the receiver was told of is sent again (change ``update``) only
   when it grew (more findings, signals or breaker actions than last sent) and at least
   ``update_every`` has passed since the last message about it; otherwise nothing, however
   often it is seen;
3. a key the receiver was told is firing whose subject has ended (or is no longer there at
   all) is sent ``resolved`` once, with the subject as last sent when it is gone;
4. a subject that ended before the receiver was ever told of it is not sent (nothing to
   resolve).

Nothing is marked sent here: the caller records a message once the receiver accepted it, so a
receiver that fails is given the same messages next round (and a restart sends nothing twice).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "Change",
    "Message",
    "Sent",
    "Status",
    "Subject",
    "SubjectKind",
    "by_key",
    "decide",
    "rfc3339",
]


class SubjectKind(enum.StrEnum):
    INCIDENT = "incident"
    QUARANTINE = "quarantine"
    HOLD = "hold"
    STORM = "storm"


class Status(enum.StrEnum):
    """As Alertmanager says it."""

    FIRING = "firing"
    RESOLVED = "resolved"


class Change(enum.StrEnum):
    NEW = "new"
    UPDATE = "update"
    RESOLVE = "resolve"


def rfc3339(value: datetime) -> str:
    """RFC 3339 in UTC, microseconds only when there are any (``2027-01-20T09:00:00Z``)."""
    exact = value.astimezone(UTC)
    return exact.strftime("%Y-%m-%dT%H:%M:%S.%fZ" if exact.microsecond else "%Y-%m-%dT%H:%M:%SZ")


def _parse(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"not a time: {value!r:.100}")
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


@dataclass(frozen=True, slots=True)
class Subject:
    """One group a person is told about (see the module docstring).

    ``size`` measures how much there is to tell (findings and signals of an incident, actions of
    a storm); a subject that grew may be sent again as an update. ``ended`` is None while it
    goes on. ``labels`` identify it (they become Alertmanager labels: ``cluster``, ``node``,
    ``owner``...); ``details`` are the lines a message lists (at most a few dozen).
    """

    key: str
    kind: SubjectKind
    cluster: str
    title: str
    summary: str
    severity: str
    started: datetime
    ended: datetime | None = None
    size: int = 1
    labels: Mapping[str, str] = field(default_factory=dict)
    details: tuple[str, ...] = ()
    ref: str = ""
    """What to look at: the incident id (``kubemedic incidents show ID``), the node, the owner."""

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "kind": self.kind.value,
            "cluster": self.cluster,
            "title": self.title,
            "summary": self.summary,
            "severity": self.severity,
            "started": rfc3339(self.started),
            "ended": None if self.ended is None else rfc3339(self.ended),
            "size": self.size,
            "labels": dict(sorted(self.labels.items())),
            "details": list(self.details),
            "ref": self.ref,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Subject:
        """The inverse of ``to_json``; ``ValueError`` (or ``KeyError``) when it is not one."""
        ended = value.get("ended")
        return cls(
            key=str(value["key"]),
            kind=SubjectKind(value["kind"]),
            cluster=str(value["cluster"]),
            title=str(value["title"]),
            summary=str(value["summary"]),
            severity=str(value["severity"]),
            started=_parse(value["started"]),
            ended=None if ended is None else _parse(ended),
            size=int(value["size"]),
            labels={str(k): str(v) for k, v in dict(value.get("labels") or {}).items()},
            details=tuple(str(line) for line in value.get("details") or ()),
            ref=str(value.get("ref") or ""),
        )


@dataclass(frozen=True, slots=True)
class Sent:
    """What a receiver last accepted about ``subject.key``."""

    subject: Subject
    status: Status
    first_sent: datetime
    last_sent: datetime

    @property
    def key(self) -> str:
        return self.subject.key


@dataclass(frozen=True, slots=True)
class Message:
    """One message for one receiver: the subject, its status, what changed and why."""

    subject: Subject
    status: Status
    change: Change
    reason: str

    def recorded(self, *, at: datetime, before: Sent | None) -> Sent:
        """The record once the receiver accepted this message at ``at``."""
        first = at if before is None or self.change is Change.NEW else before.first_sent
        return Sent(subject=self.subject, status=self.status, first_sent=first, last_sent=at)


def decide(
    subjects: Iterable[Subject],
    sent: Mapping[str, Sent],
    *,
    now: datetime,
    update_every: timedelta,
) -> list[Message]:
    """The messages due for one receiver (the rules are in the module docstring), firing ones
    first, each group at most once, in key order."""
    current: dict[str, Subject] = {}
    for given in subjects:
        # One subject per key; should two come (two incidents of one cause side by side), the
        # one going on wins, then the later one.
        held = current.get(given.key)
        if held is None or _rank(given) > _rank(held):
            current[given.key] = given
    firing: list[Message] = []
    resolved: list[Message] = []
    for key in sorted(current.keys() | sent.keys()):
        subject, record = current.get(key), sent.get(key)
        told = record is not None and record.status is Status.FIRING
        if subject is not None and subject.ended is None:
            if not told:
                again = " again" if record is not None else ""
                firing.append(
                    Message(subject, Status.FIRING, Change.NEW, f"{subject.kind} began{again}")
                )
                continue
            assert record is not None
            message = _update(subject, record, now=now, update_every=update_every)
            if message is not None:
                firing.append(message)
            continue
        if not told:
            continue  # rule 4: ended before anyone was told, or told it resolved already
        assert record is not None
        if subject is None:
            gone = replace(record.subject, ended=now)
            resolved.append(Message(gone, Status.RESOLVED, Change.RESOLVE, "no longer seen"))
        else:
            resolved.append(
                Message(subject, Status.RESOLVED, Change.RESOLVE, f"{subject.kind} ended")
            )
    return firing + resolved


def _rank(subject: Subject) -> tuple[bool, datetime]:
    return (subject.ended is None, subject.started)


def _update(
    subject: Subject, record: Sent, *, now: datetime, update_every: timedelta
) -> Message | None:
    grown = subject.size - record.subject.size
    if grown <= 0:
        return None
    if now - record.last_sent < update_every:
        return None
    return Message(
        subject,
        Status.FIRING,
        Change.UPDATE,
        f"grew by {grown} ({record.subject.size} -> {subject.size}) since the last message",
    )


def by_key(records: Sequence[Sent]) -> dict[str, Sent]:
    """Records keyed for ``decide``."""
    return {record.key: record for record in records}
