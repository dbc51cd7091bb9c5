"""End to end: findings in the archive, incidents formed over it, notifications POSTed to a
local HTTP receiver in each format: one firing message per incident, one resolve when it ends,
nothing twice across a failing receiver or a restart."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import datetime

import pytest

from kubemedic.checks.findings import Finding, Severity
from kubemedic.model.objects import ObjectRef
from kubemedic.notify.controller import Notifier, load_sent
from kubemedic.notify.settings import NotifyRun, Receiver
from kubemedic.store.db import Archive
from tests.notify.builders import CLUSTER, T0, FakeClock, minutes
from tests.notify.builders import Receiver as HttpReceiver

FORMATS = ("alertmanager", "slack", "webhook")


def _not_ready(node: str) -> Finding:
    """A NotReady node in a pool of its own (``core-1`` in ``pool-core-1``): one incident each,
    as the check's cause is per class and pool."""
    return Finding(
        check="node-not-ready",
        severity=Severity.CRITICAL,
        object=ObjectRef(kind="Node", name=node),
        message=f"node {node} is NotReady",
        cause=f"node-not-ready:kubelet-stopped@pool-{node}",
        first_seen=T0,
        last_seen=T0,
    )


def _scan(archive: Archive, at: datetime, *nodes: str) -> None:
    archive.record_findings(CLUSTER, [_not_ready(node) for node in nodes], at)


def _run(receiver: HttpReceiver, *, attempts: int = 3) -> NotifyRun:
    return NotifyRun(
        receivers=tuple(Receiver(name=fmt, format=fmt, url=receiver.url(fmt)) for fmt in FORMATS),
        resolve_after=minutes(10),
        update_every=minutes(30),
        attempts=attempts,
        backoff_seconds=0.01,
        timeout_seconds=5.0,
    )


@pytest.fixture
def archive(archive_url: str) -> Iterator[Archive]:
    with Archive.open(archive_url) as opened:
        yield opened


def _statuses(receiver: HttpReceiver, path: str) -> list[tuple[str, str]]:
    """(status, group) of each body the receiver accepted at ``path``."""
    found = []
    for body in receiver.bodies.get(path, []):
        if path == "alertmanager":
            found.append((body["status"], body["groupLabels"]["group"]))
        elif path == "webhook":
            found.append((body["status"], body["subject"]["key"]))
        else:
            found.append((body["text"].split("]")[0].strip("["), body["text"]))
    return found


async def _rounds(notifier: Notifier, clock: FakeClock, *moments: float) -> int:
    sent = 0
    for at in moments:
        clock.moment = T0 + minutes(at)
        sent += len(await notifier.round())
    return sent


def test_each_incident_reaches_every_receiver_once_and_resolves_once(archive: Archive) -> None:
    async def scenario() -> HttpReceiver:
        receiver = await HttpReceiver().start()
        clock = FakeClock()
        notifier = Notifier(archive=archive, run=_run(receiver), cluster=CLUSTER, clock=clock)
        try:
            for minute in range(0, 6):  # two nodes NotReady for five minutes, scanned each one
                _scan(archive, T0 + minutes(minute), "core-1", "core-2")
                await _rounds(notifier, clock, minute + 0.5)
            # quiet: still going on until resolveAfter has passed since the last scan
            assert await _rounds(notifier, clock, 8, 12) == 0
            assert await _rounds(notifier, clock, 16) == 6  # two resolves to three receivers
            assert await _rounds(notifier, clock, 17, 60, 600) == 0
        finally:
            await notifier.sender.close()
            await receiver.stop()
        return receiver

    receiver = asyncio.run(scenario())
    for path in ("alertmanager", "webhook"):
        statuses = _statuses(receiver, path)
        groups = sorted({group for _, group in statuses})
        assert len(groups) == 2, statuses
        assert sorted(statuses) == sorted(
            [("firing", group) for group in groups] + [("resolved", group) for group in groups]
        )
    slack = [status for status, _ in _statuses(receiver, "slack")]
    assert sorted(slack) == ["FIRING", "FIRING", "RESOLVED", "RESOLVED"]
    firing = receiver.bodies["alertmanager"][0]
    assert firing["version"] == "4"
    assert firing["alerts"][0]["endsAt"] == "0001-01-01T00:00:00Z"
    assert firing["alerts"][0]["labels"]["alertname"] == "KubemedicIncident"
    resolved = receiver.bodies["alertmanager"][-1]
    assert resolved["alerts"][0]["endsAt"] != "0001-01-01T00:00:00Z"
    assert receiver.headers["webhook"][0]["Content-Type"] == "application/json"


def test_a_receiver_failing_once_gets_the_message_once_after_a_retry(archive: Archive) -> None:
    async def scenario() -> tuple[HttpReceiver, list[int]]:
        receiver = await HttpReceiver().start()
        receiver.answers["webhook"] = [500]
        clock = FakeClock()
        notifier = Notifier(archive=archive, run=_run(receiver), cluster=CLUSTER, clock=clock)
        try:
            _scan(archive, T0, "core-1")
            clock.moment = T0 + minutes(1)
            outcomes = await notifier.round()
            again = await notifier.round()
        finally:
            await notifier.sender.close()
            await receiver.stop()
        attempts = [o.delivery.attempts for o in outcomes if o.receiver == "webhook"]
        assert again == []
        return receiver, attempts

    receiver, attempts = asyncio.run(scenario())
    assert attempts == [2]
    assert receiver.requests["webhook"] == 2
    assert [b["status"] for b in receiver.bodies["webhook"]] == ["firing"]


def test_a_receiver_down_for_a_whole_round_gets_the_message_the_next_round(
    archive: Archive,
) -> None:
    async def scenario() -> HttpReceiver:
        receiver = await HttpReceiver().start()
        receiver.answers["slack"] = [503, 503]
        clock = FakeClock()
        notifier = Notifier(
            archive=archive, run=_run(receiver, attempts=2), cluster=CLUSTER, clock=clock
        )
        try:
            _scan(archive, T0, "core-1")
            clock.moment = T0 + minutes(1)
            first = await notifier.round()
            assert [o.delivery.delivered for o in first if o.receiver == "slack"] == [False]
            assert "slack" not in load_sent(archive, CLUSTER)
            await notifier.round()
            await notifier.round()
        finally:
            await notifier.sender.close()
            await receiver.stop()
        return receiver

    receiver = asyncio.run(scenario())
    assert len(receiver.bodies["slack"]) == 1
    assert len(receiver.bodies["webhook"]) == 1


def test_a_restarted_notifier_sends_nothing_again_but_still_resolves(archive_url: str) -> None:
    async def scenario() -> HttpReceiver:
        receiver = await HttpReceiver().start()
        try:
            with Archive.open(archive_url) as archive:
                clock = FakeClock()
                first = Notifier(archive=archive, run=_run(receiver), cluster=CLUSTER, clock=clock)
                _scan(archive, T0, "core-1")
                assert await _rounds(first, clock, 1) == 3
                await first.sender.close()
            with Archive.open(archive_url) as archive:
                clock = FakeClock()
                second = Notifier(archive=archive, run=_run(receiver), cluster=CLUSTER, clock=clock)
                assert await _rounds(second, clock, 2, 5) == 0
                assert await _rounds(second, clock, 11) == 3
                assert await _rounds(second, clock, 12) == 0
                await second.sender.close()
        finally:
            await receiver.stop()
        return receiver

    receiver = asyncio.run(scenario())
    for path in FORMATS:
        assert len(receiver.bodies[path]) == 2, path
    assert [b["status"] for b in receiver.bodies["webhook"]] == ["firing", "resolved"]
