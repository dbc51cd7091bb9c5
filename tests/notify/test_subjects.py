"""Quarantined and held nodes and the breaker's storms, read from the archive as subjects, go
out and resolve like incidents."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from kubemedic.notify.controller import Notifier
from kubemedic.notify.policy import SubjectKind
from kubemedic.notify.settings import NotifyRun, Receiver
from kubemedic.store.db import Archive
from tests.notify.builders import CLUSTER, T0, FakeClock, minutes
from tests.notify.builders import Receiver as HttpReceiver

OWNER = "prod/Deployment/pinned"
SINCE = "2027-01-20T09:00:00Z"


@pytest.fixture
def archive(sqlite_url: str) -> Iterator[Archive]:
    with Archive.open(sqlite_url) as opened:
        yield opened


def _states(archive: Archive, *states: tuple[str, str, str]) -> None:
    archive.save_repair_round(
        CLUSTER,
        in_flight={},
        finished=[],
        decisions=[],
        node_states=[
            {"node": node, "state": state, "step": "", "reason": reason, "since": SINCE}
            for node, state, reason in states
        ],
        at=T0.timestamp(),
    )


def _storm(archive: Archive, *, storming: bool, decisions: int, at: float) -> None:
    storms = (
        {
            OWNER: {
                "owner": {"kind": "Deployment", "name": "pinned", "namespace": "prod"},
                "started": "2027-01-20T09:00:00Z",
                "alerted": True,
                "calmSince": None,
            }
        }
        if storming
        else {}
    )
    archive.save_breaker_round(
        CLUSTER,
        state={"storms": storms, "reverted": {}, "announced": []},
        decisions=[
            {
                "owner": OWNER,
                "kind": "act",
                "action": "revert-out-of-band",
                "reason": "KubemedicBreakerReverted",
                "message": f"reverted spec.template.spec.nodeName ({index})",
                "outcome": "done",
                "dryRun": False,
            }
            for index in range(decisions)
        ],
        at=(T0 + minutes(at)).timestamp(),
    )


def test_quarantines_holds_and_storms_fire_grow_and_resolve(archive: Archive) -> None:
    async def scenario() -> list[dict]:
        receiver = await HttpReceiver().start()
        run = NotifyRun(
            receivers=(Receiver(name="hook", format="webhook", url=receiver.url("hook")),),
            update_every=minutes(5),
            backoff_seconds=0.01,
        )
        clock = FakeClock()
        notifier = Notifier(archive=archive, run=run, cluster=CLUSTER, clock=clock)
        try:
            _states(
                archive,
                ("core-3", "quarantined", "3 repairs in 24h"),
                ("core-4", "held", "part of a correlated failure in zone a"),
                ("core-5", "healthy", ""),
            )
            _storm(archive, storming=True, decisions=1, at=0.5)
            clock.moment = T0 + minutes(1)
            assert len(await notifier.round()) == 3
            _storm(archive, storming=True, decisions=1, at=2)  # a second action
            clock.moment = T0 + minutes(3)
            assert await notifier.round() == []  # grown, but an update waits 5 minutes
            clock.moment = T0 + minutes(7)
            (update,) = await notifier.round()
            assert update.message.change.value == "update"
            _states(archive, ("core-3", "healthy", ""), ("core-4", "repairing", ""))
            _storm(archive, storming=False, decisions=0, at=8)
            clock.moment = T0 + minutes(9)
            assert len(await notifier.round()) == 3
            assert await notifier.round() == []
        finally:
            await notifier.sender.close()
            await receiver.stop()
        return receiver.bodies["hook"]

    bodies = asyncio.run(scenario())
    told = [(b["status"], b["change"], b["subject"]["key"]) for b in bodies]
    assert told == [
        ("firing", "new", "hold:core-4"),
        ("firing", "new", "quarantine:core-3"),
        ("firing", "new", f"storm:{OWNER}"),
        ("firing", "update", f"storm:{OWNER}"),
        ("resolved", "resolve", "hold:core-4"),
        ("resolved", "resolve", "quarantine:core-3"),
        ("resolved", "resolve", f"storm:{OWNER}"),
    ]
    kinds = {b["subject"]["key"]: b["subject"]["kind"] for b in bodies}
    assert kinds["quarantine:core-3"] == SubjectKind.QUARANTINE.value
    assert "3 repairs in 24h" in bodies[1]["subject"]["summary"]
    assert bodies[3]["subject"]["size"] == 3
    assert any("revert-out-of-band: reverted" in line for line in bodies[3]["subject"]["details"])
