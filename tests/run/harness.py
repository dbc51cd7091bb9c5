"""Acceptance harness: a scenario served over HTTP, ``kubemedic run`` recording it in a separate
process (killable at any moment), and the ground truth the archive must equal.

The ground truth is taken inside the simulator, from every write as it is stored (``Simulation.
watch``): every Event object ever created with its last version, every container termination any
pod version ever showed, every pod the kubelet evicted. It passes through the same pure
extraction functions as the recorder (``kubemedic.store.extraction``), so what is compared is the
transport: lists, watches, resumes after restarts, relists after 410, retries after 429/500 and
dropped streams, batching, checkpoints and idempotent upserts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery.objects import Change
from kubemedic.sim.scenarios.timeline import ScenarioRun
from kubemedic.store import extraction, schema
from kubemedic.store.db import database_url

KUBEMEDIC = [sys.executable, "-c", "from kubemedic.cli import main; main()"]


@dataclass
class Truth:
    """Everything a perfect observer of the API would have archived."""

    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    terminations: set[tuple[str, str, str]] = field(default_factory=set)
    evicted_pods: set[str] = field(default_factory=set)
    oom_kills: set[tuple[str, str, str]] = field(default_factory=set)
    deleted_events: set[str] = field(default_factory=set)
    last_rv: dict[str, int] = field(default_factory=dict)

    def attach(self, sim: Simulation) -> None:
        sim.watch("events", self._event)
        sim.watch("pods", self._pod)

    def _event(self, change: Change) -> None:
        self.last_rv["events"] = change.rv
        uid = change.obj["metadata"]["uid"]
        if change.type == "DELETED":
            self.deleted_events.add(uid)
        else:
            self.events[uid] = change.obj

    def _pod(self, change: Change) -> None:
        self.last_rv["pods"] = change.rv
        pod = change.obj
        for row in extraction.terminations(pod):
            self.terminations.add((row.pod_uid, row.container, row.key))
            if row.reason == "OOMKilled":
                self.oom_kills.add((row.pod_uid, row.container, row.key))
        if extraction.eviction_from_pod(pod) is not None:
            self.evicted_pods.add(pod["metadata"]["uid"])

    def event_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for uid, body in self.events.items():
            row = extraction.event_row(body)
            assert row is not None
            out[uid] = row.count
        return out


@dataclass
class Archived:
    events: dict[str, int]
    event_rows: int
    deleted_events: set[str]
    terminations: set[tuple[str, str, str]]
    termination_rows: int
    evicted_pods: set[str]
    eviction_rows: int
    checkpoints: dict[str, str]


def read_archive(url: str) -> Archived:
    engine = sa.create_engine(database_url(url))
    try:
        with engine.connect() as conn:
            events = conn.execute(
                sa.select(schema.events.c.uid, schema.events.c.count, schema.events.c.deleted_at)
            ).all()
            terms = conn.execute(
                sa.select(
                    schema.terminations.c.pod_uid,
                    schema.terminations.c.container,
                    schema.terminations.c.key,
                )
            ).all()
            evictions = conn.execute(sa.select(schema.evictions.c.pod_uid)).all()
            cps = conn.execute(
                sa.select(schema.checkpoints.c.stream, schema.checkpoints.c.resource_version)
            ).all()
    finally:
        engine.dispose()
    return Archived(
        events={uid: count for uid, count, _ in events},
        event_rows=len(events),
        deleted_events={uid for uid, _, gone in events if gone is not None},
        terminations={(a, b, c) for a, b, c in terms},
        termination_rows=len(terms),
        evicted_pods={uid for (uid,) in evictions},
        eviction_rows=len(evictions),
        checkpoints=dict(cps),
    )


class RecorderProcess:
    """``kubemedic run`` in its own process, started, killed and restarted by the test."""

    def __init__(self, url: str, kubeconfig: Path, log: Path, *extra: str) -> None:
        self.args = [
            *KUBEMEDIC,
            "run",
            "--db",
            url,
            "--kubeconfig",
            str(kubeconfig),
            "--clock",
            "server",
            # Any free port: replicas and tests side by side must not fight over 9808.
            *([] if "--listen" in extra else ["--listen", "127.0.0.1:0"]),
            *extra,
        ]
        self.log = log
        self.identity = ""
        self.process: asyncio.subprocess.Process | None = None
        self.starts = 0

    async def start(self) -> None:
        self.starts += 1
        with self.log.open("ab") as out:
            out.write(f"--- start {self.starts}\n".encode())
        handle = self.log.open("ab")
        identity = ["--identity", self.identity] if self.identity else []
        self.process = await asyncio.create_subprocess_exec(
            *self.args,
            *identity,
            stdout=handle,
            stderr=handle,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        handle.close()

    async def kill(self) -> None:
        """SIGKILL: no flush, no lease release, no goodbye."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGKILL)
        await self.process.wait()

    async def stop(self) -> int:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            self.process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.process.wait(), timeout=30)
        except TimeoutError:
            await self.kill()
            raise AssertionError(
                f"kubemedic run did not stop on SIGTERM; log: {self.tail()}"
            ) from None

    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


async def eventually(
    check: Callable[[], str | None], *, timeout: float, recorder: RecorderProcess
) -> None:
    """Poll ``check`` (None when satisfied, else what is still wrong) until ``timeout``."""
    deadline = time.monotonic() + timeout
    problem: str | None = "never checked"
    while time.monotonic() < deadline:
        problem = await asyncio.to_thread(check)
        if problem is None:
            return
        if not recorder.alive():
            raise AssertionError(f"kubemedic run exited; log:\n{recorder.tail()}")
        await asyncio.sleep(0.5)
    raise AssertionError(f"archive never matched: {problem}\nlog:\n{recorder.tail()}")


async def play_recorded(
    run: ScenarioRun, recorder: RecorderProcess, *, ready: str, speed: float
) -> None:
    """Play ``run`` to its end at ``speed`` with ``recorder`` working through it, as in a cluster
    where kubemedic was installed before anything broke: start ``recorder``, wait (up to 120 s)
    for ``ready`` in its log, play paced; it must still be running then, and stop on SIGTERM
    with exit 0. Whatever happens, ``recorder`` is killed if still alive and the run's API server
    (started by the caller, who wrote the kubeconfig from its port) is stopped."""
    try:
        await recorder.start()
        await eventually(
            lambda: None if ready in recorder.log.read_text(errors="replace") else "starting",
            timeout=120,
            recorder=recorder,
        )
        await run.run_paced(speed)
        assert recorder.alive(), recorder.tail()
        assert await recorder.stop() == 0
    finally:
        if recorder.alive():
            await recorder.kill()
        await run.sim.server.stop()


def archive_mismatch(truth: Truth, url: str) -> str | None:
    """What differs between the ground truth and the archive at ``url``, including an archive
    that ``kubemedic run`` has not created yet (it starts in another process, and the play does
    not wait for it)."""
    engine = sa.create_engine(database_url(url))
    try:
        tables = (schema.events, schema.terminations, schema.evictions, schema.checkpoints)
        inspector = sa.inspect(engine)
        if not all(inspector.has_table(table.name) for table in tables):
            return "the archive's tables are not all there yet: kubemedic run is creating them"
    finally:
        engine.dispose()
    return mismatch(truth, read_archive(url))


def mismatch(truth: Truth, archived: Archived) -> str | None:
    """What differs between the ground truth and the archive (None: nothing)."""
    expected = truth.event_counts()
    missing = expected.keys() - archived.events.keys()
    extra = archived.events.keys() - expected.keys()
    wrong = {
        u for u in expected.keys() & archived.events.keys() if expected[u] != archived.events[u]
    }
    problems = []
    if missing or extra or wrong:
        problems.append(
            f"events: {len(missing)} missing, {len(extra)} unknown, {len(wrong)} wrong counts "
            f"(of {len(expected)})"
        )
    if truth.deleted_events != archived.deleted_events:
        problems.append(
            f"event deletions: {len(truth.deleted_events - archived.deleted_events)} missing, "
            f"{len(archived.deleted_events - truth.deleted_events)} unknown"
        )
    if archived.event_rows != len(archived.events):
        problems.append("duplicate event rows")
    if truth.terminations != archived.terminations:
        problems.append(
            f"terminations: {len(truth.terminations - archived.terminations)} missing, "
            f"{len(archived.terminations - truth.terminations)} unknown"
        )
    if archived.termination_rows != len(archived.terminations):
        problems.append("duplicate termination rows")
    if truth.evicted_pods != archived.evicted_pods:
        problems.append(
            f"evictions: {len(truth.evicted_pods - archived.evicted_pods)} missing, "
            f"{len(archived.evicted_pods - truth.evicted_pods)} unknown"
        )
    return "; ".join(problems) or None
