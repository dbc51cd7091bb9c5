"""``kill -9`` at any moment leaves a consistent archive whose checkpoints never run ahead of
their data.

A child process writes numbered batches: batch ``n`` adds events ``uid-n-*`` at count 1, raises
batch ``n-1``'s events to count 2, records a termination keyed ``n`` and checkpoints ``n``; on
start it resumes after its checkpoint, as a recorder resumes its watch. The test kills it with
SIGKILL at random moments (including while it imports and migrates), restarts it, and finally
checks that the archive holds exactly what the batches up to the last checkpoint wrote: nothing
missing, nothing from a batch that did not commit.
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import sqlalchemy as sa

from kubemedic.store import schema
from kubemedic.store.db import Archive

PER_BATCH = 50
CLUSTER = "crash"

CHILD = """
import sys
from datetime import datetime, timedelta, timezone

from kubemedic.store.records import EventRow, TerminationRow
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch

url, per = sys.argv[1], int(sys.argv[2])
t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def event(n, i, count):
    return EventRow(
        uid=f"uid-{n}-{i}", api_version="v1", namespace="ns", name=f"e-{n}-{i}",
        type="Warning", reason="BackOff", message=f"batch {n} event {i}", object_kind="Pod",
        object_namespace="ns", object_name=f"pod-{i}", object_uid="", field_path="",
        source="kubelet", host="node", node="node", count=count, first_seen=t0,
        last_seen=t0 + timedelta(seconds=n + count), resource_version=str(n),
    )


def termination(n):
    return TerminationRow(
        pod_uid="pod", namespace="ns", pod="pod", container="app", key=str(n), node="node",
        owner_kind="", owner_name="", reason="OOMKilled", exit_code=137, signal=None,
        restart_count=n, started_at=t0, finished_at=t0 + timedelta(seconds=n), message="",
        memory_request=None, memory_limit=None,
    )


with Archive.open(url) as archive:
    done = archive.checkpoint("crash", "v1/events")
    n = 0 if done is None else int(done) + 1
    while True:
        events = [event(n, i, 1) for i in range(per)]
        if n:
            events += [event(n - 1, i, 2) for i in range(per)]
        archive.write(
            Batch(cluster="crash", events=events, terminations=[termination(n)],
                  checkpoints={"v1/events": str(n)})
        )
        print(n, flush=True)
        n += 1
"""


def _start(url: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", CHILD, url, str(PER_BATCH)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL, child.stderr.read() if child.stderr else ""
    for stream in (child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def _crash_repeatedly(url: str, *, seed: int) -> None:
    chance = random.Random(seed)
    # First: anywhere from interpreter start through import, migration and the first writes.
    child = _start(url)
    time.sleep(chance.uniform(0.0, 1.5))
    _kill(child)
    # Then: always after some progress, at a random point of the write loop.
    for _ in range(5):
        child = _start(url)
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip().isdigit(), (child.stderr.read() if child.stderr else "") or line
        time.sleep(chance.uniform(0.0, 0.4))
        _kill(child)


def _check(url: str) -> int:
    with Archive.open(url) as archive:
        last = archive.checkpoint(CLUSTER, "v1/events")
        assert last is not None
        committed = int(last)
        expected_events = {
            f"uid-{n}-{i}": 2 if n < committed else 1
            for n in range(committed + 1)
            for i in range(PER_BATCH)
        }
        expected_counts = {
            (uid, count) for uid, final in expected_events.items() for count in range(1, final + 1)
        }
        with archive.engine.connect() as connection:
            events = dict(
                connection.execute(sa.select(schema.events.c.uid, schema.events.c.count)).all()
            )
            counts = connection.execute(
                sa.select(schema.event_counts.c.uid, schema.event_counts.c.count)
            ).all()
            keys = connection.execute(sa.select(schema.terminations.c.key)).scalars().all()
    assert events == expected_events
    assert sorted(counts) == sorted(expected_counts)
    assert sorted(keys, key=int) == [str(n) for n in range(committed + 1)]
    return committed


def test_sigkill_never_leaves_a_checkpoint_ahead_of_its_data(archive_url: str) -> None:
    _crash_repeatedly(archive_url, seed=5)
    committed = _check(archive_url)
    assert committed >= 4  # each of the five restarts committed a batch
    if archive_url.startswith("sqlite:///"):
        path = archive_url.removeprefix("sqlite:///")
        with contextlib.closing(sqlite3.connect(path)) as raw:
            assert raw.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    # And the archive carries on from there.
    child = _start(archive_url)
    assert child.stdout is not None
    assert int(child.stdout.readline()) == committed + 1
    _kill(child)
    assert _check(archive_url) > committed
