"""Subjects and records for notification tests, and a local HTTP receiver that remembers what
it was sent (aiohttp on 127.0.0.1, any free port)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from aiohttp import web

from kubemedic.notify.policy import Sent, Status, Subject, SubjectKind

T0 = datetime(2027, 1, 20, 9, 0, tzinfo=UTC)
CLUSTER = "leap"


def minutes(value: float) -> timedelta:
    return timedelta(minutes=value)


def subject(
    key: str = "incident:memory-pressure:prod/Deployment/hub@core-pool",
    *,
    kind: SubjectKind = SubjectKind.INCIDENT,
    started: datetime = T0,
    ended: datetime | None = None,
    size: int = 1,
    title: str = "hub evicted under memory pressure on core-pool",
    labels: Mapping[str, str] | None = None,
    details: tuple[str, ...] = (),
) -> Subject:
    return Subject(
        key=key,
        kind=kind,
        cluster=CLUSTER,
        title=title,
        summary=f"summary of {key}",
        severity="critical",
        started=started,
        ended=ended,
        size=size,
        labels=dict(labels or {}),
        details=details,
        ref="inc-0123abcd",
    )


def sent(
    told: Subject,
    *,
    status: Status = Status.FIRING,
    first: datetime = T0,
    last: datetime | None = None,
) -> Sent:
    return Sent(subject=told, status=status, first_sent=first, last_sent=last or first)


class FakeClock:
    """Cluster time that moves only when the test says so."""

    def __init__(self, now: datetime = T0) -> None:
        self.moment = now

    def now(self) -> datetime:
        return self.moment

    async def sleep(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


@dataclass
class Receiver:
    """An HTTP receiver on 127.0.0.1: ``bodies[path]`` is every JSON body accepted there;
    ``answers[path]`` are statuses to give before accepting (``[500]``: fail once)."""

    bodies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: dict[str, int] = field(default_factory=dict)
    answers: dict[str, list[int]] = field(default_factory=dict)
    headers: dict[str, list[Mapping[str, str]]] = field(default_factory=dict)
    runner: web.AppRunner | None = None
    port: int = 0

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}"

    async def _handle(self, request: web.Request) -> web.Response:
        path = request.match_info["path"]
        self.requests[path] = self.requests.get(path, 0) + 1
        self.headers.setdefault(path, []).append(dict(request.headers))
        waiting = self.answers.get(path) or []
        if waiting:
            return web.Response(status=waiting.pop(0), text="not now")
        self.bodies.setdefault(path, []).append(json.loads(await request.read()))
        return web.Response(text="ok")

    async def start(self) -> Receiver:
        app = web.Application()
        app.router.add_post("/{path}", self._handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])
        return self

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
