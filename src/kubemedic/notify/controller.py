"""The notifier inside ``kubemedic run`` (on the leader): a round every ``intervalSeconds``.

A round reads the subjects from the archive (``subjects.collect``, in a worker thread) and what
each receiver has accepted (``notifications``), asks ``policy.decide`` what each receiver is
due, and sends it, the receivers side by side. A message the receiver accepted is recorded at
once (one transaction per message), so a crash, a lost Lease or a restart in the middle of a
round sends nothing twice, and a receiver that failed is sent what it missed next round. A
receiver that is down (no answer, a timeout, a ``5xx`` after the retries) is given no more
messages that round; one that refused a message (a ``4xx``) still gets the others.

The archive's and the receivers' failures are logged and the round is tried again later: a
notifier never stops the daemon.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kubemedic.config import ConfigError
from kubemedic.errors import KubemedicError
from kubemedic.kube.clock import Clock, WallClock, sleep_or_stop
from kubemedic.notify import formats, policy, subjects
from kubemedic.notify.policy import Message, Sent, Status, Subject
from kubemedic.notify.sending import Delivery, Sender
from kubemedic.notify.settings import NotifyRun, Receiver, read_url
from kubemedic.store import notices
from kubemedic.store.db import Archive

__all__ = ["Notifier", "Outcome", "load_sent"]

log = logging.getLogger("kubemedic.notify")


@dataclass(frozen=True, slots=True)
class Outcome:
    """One message of a round and how it went."""

    receiver: str
    message: Message
    delivery: Delivery


def load_sent(archive: Archive, cluster: str) -> dict[str, dict[str, Sent]]:
    """What each receiver accepted: ``{receiver: {key: Sent}}``. A record whose body this
    version cannot read is left out (that group is then sent once more, never lost)."""
    with archive.transaction(write=False) as connection:
        rows = notices.load(connection, cluster)
    found: dict[str, dict[str, Sent]] = {}
    for row in rows:
        try:
            sent = Sent(
                subject=Subject.from_json(row["body"]),
                status=Status(row["status"]),
                first_sent=datetime.fromtimestamp(float(row["firstSent"]), UTC),
                last_sent=datetime.fromtimestamp(float(row["lastSent"]), UTC),
            )
        except (KeyError, TypeError, ValueError) as error:
            log.warning(
                "notifications: record %s of %s unreadable (%s)", row["key"], row["receiver"], error
            )
            continue
        found.setdefault(str(row["receiver"]), {})[sent.key] = sent
    return found


def _save(archive: Archive, cluster: str, receiver: str, sent: Sent) -> None:
    with archive.transaction() as connection:
        notices.save(
            connection,
            cluster,
            {
                "receiver": receiver,
                "key": sent.key,
                "status": sent.status.value,
                "body": sent.subject.to_json(),
                "firstSent": sent.first_sent.timestamp(),
                "lastSent": sent.last_sent.timestamp(),
            },
        )


class Notifier:
    """Sends what ``policy.decide`` says, to every receiver of ``run``; ``run(stop)`` loops,
    ``round()`` is one round (what tests drive)."""

    def __init__(
        self,
        *,
        archive: Archive,
        run: NotifyRun,
        cluster: str,
        clock: Clock | None = None,
        sender: Sender | None = None,
    ) -> None:
        self.archive = archive
        self.settings = run
        self.cluster = cluster
        self.clock: Clock = clock or WallClock()
        self.sender = sender or Sender(
            timeout_seconds=run.timeout_seconds,
            attempts=run.attempts,
            backoff_seconds=run.backoff_seconds,
        )
        self.rounds = 0
        self.delivered = 0
        self.failed = 0

    async def run(self, stop: asyncio.Event) -> None:
        """Rounds until ``stop`` is set; closes the sender then."""
        log.info(
            "notifications on: %s",
            ", ".join(f"{r.name} ({r.format})" for r in self.settings.receivers) or "no receiver",
        )
        try:
            while not stop.is_set():
                try:
                    await self.round()
                except KubemedicError as error:
                    log.warning("notify round failed: %s", error)
                except Exception:  # a notifier never stops the daemon; the next round retries
                    log.exception("notify round failed")
                await sleep_or_stop(self.clock.sleep(self.settings.interval_seconds), stop)
        finally:
            await self.sender.close()

    async def round(self) -> list[Outcome]:
        """One round (module docstring): the messages tried and how each went."""
        now = self.clock.now()
        found = await asyncio.to_thread(
            subjects.collect, self.archive, cluster=self.cluster, run=self.settings, now=now
        )
        sent = await asyncio.to_thread(load_sent, self.archive, self.cluster)
        results = await asyncio.gather(
            *(
                self._receiver(receiver, found, sent.get(receiver.name, {}), now)
                for receiver in self.settings.receivers
            )
        )
        self.rounds += 1
        return [outcome for outcomes in results for outcome in outcomes]

    async def _receiver(
        self,
        receiver: Receiver,
        found: Sequence[Subject],
        sent: dict[str, Sent],
        now: datetime,
    ) -> list[Outcome]:
        due = policy.decide(found, sent, now=now, update_every=self.settings.update_every)
        if not due:
            return []
        try:
            url = read_url(receiver)
        except ConfigError as error:
            log.warning("notify %s: %s; %d messages wait", receiver.name, error, len(due))
            return []
        outcomes: list[Outcome] = []
        for message in due:
            body = formats.body(
                receiver.format,
                message,
                receiver=receiver.name,
                external_url=self.settings.external_url,
            )
            delivery = await self.sender.post(receiver=receiver.name, url=url, body=body)
            outcomes.append(Outcome(receiver.name, message, delivery))
            if delivery.delivered:
                self.delivered += 1
                record = message.recorded(at=now, before=sent.get(message.subject.key))
                await asyncio.to_thread(_save, self.archive, self.cluster, receiver.name, record)
                log.info(
                    "notify %s: %s %s (%s): %s",
                    receiver.name,
                    message.change.value,
                    message.subject.key,
                    message.status.value,
                    message.reason,
                )
                continue
            self.failed += 1
            if delivery.status is None or delivery.status >= 500 or delivery.status == 429:
                log.warning(
                    "notify %s: down (%s); %d messages wait for the next round",
                    receiver.name,
                    delivery.error,
                    len(due) - len(outcomes),
                )
                break
        return outcomes
