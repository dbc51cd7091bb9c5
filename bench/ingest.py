"""Archive ingest benchmark: sustained event writes into SQLite and PostgreSQL.

    python bench/ingest.py [--seconds 10 --batch 2500] [--postgres URL]
    python bench/ingest.py --quick           # ~1 s per database (what the smoke test runs)

Target (2-core machine, from the archive's issue): sustained ingest of >= 20,000 events/s into
SQLite and into PostgreSQL. An event here is what a recorder writes for one watch event of an
Event object: its row in ``events`` (inserted, or updated in place when its count grew) plus a
row in ``event_counts``, through ``Archive.write`` in batches with a checkpoint, as
``kubemedic run`` writes them.

The stream is realistic rather than uniform: about half the rows are new Events, the other half
recurrences of Events already stored (the count raised by 1-5, lastTimestamp later), drawn
mostly from recent ones; 15 reasons with kubelet-, scheduler- and controller-shaped messages,
60 namespaces, 300 nodes. Generation is not timed (it is the recorder's work, not the
archive's); the rate is events per second spent inside ``Archive.write``.

Baseline, measured in the same run on the same database: the naive way, one event per
transaction (a plain Core ``INSERT`` of the event and its count, committed one by one), for a
short sample. Printed per database: events/s, the ratio to the baseline, the slowest batch, a
replay of already stored batches (what a relist after ``410 Gone`` costs: every version known,
nothing to change), and PASS/FAIL. PostgreSQL comes from ``--postgres URL`` or the environment
variable ``KUBEMEDIC_TEST_POSTGRES`` (a role that may create databases: the bench creates a
scratch database and drops it); without either it is reported as not measured. Exit status: 0
when every measured database reaches the target, 1 otherwise. Timing is never asserted in the
test suite.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import resource
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TARGET = 20_000.0
POSTGRES_ENV = "KUBEMEDIC_TEST_POSTGRES"

REASONS: list[tuple[str, str, str, str, int]] = [
    # reason, type, source, message template, weight
    ("BackOff", "Warning", "kubelet", "Back-off restarting failed container {c} in pod {p}", 20),
    (
        "Unhealthy",
        "Warning",
        "kubelet",
        'Liveness probe failed: Get "http://10.{a}.{b}.7:8081/healthz": context deadline '
        "exceeded (Client.Timeout exceeded while awaiting headers)",
        14,
    ),
    (
        "Pulled",
        "Normal",
        "kubelet",
        'Container image "registry.local/{c}:1.{a}.{b}" already present on machine',
        10,
    ),
    ("Created", "Normal", "kubelet", "Created container {c}", 8),
    ("Started", "Normal", "kubelet", "Started container {c}", 8),
    ("Killing", "Normal", "kubelet", "Stopping container {c}", 5),
    (
        "FailedScheduling",
        "Warning",
        "default-scheduler",
        "0/{a} nodes are available: {b} Insufficient memory, 3 node(s) had untolerated taint "
        "{{node.kubernetes.io/unreachable: }}. preemption: 0/{a} nodes are available: {b} No "
        "preemption victims found for incoming pod.",
        9,
    ),
    (
        "Evicted",
        "Warning",
        "kubelet",
        "The node was low on resource: memory. Threshold "
        "quantity: 100Mi, available: {b}Mi. Container {c} was using {a}Mi, request is 128Mi.",
        4,
    ),
    (
        "OOMKilling",
        "Warning",
        "kernel-monitor",
        "Memory cgroup out of memory: Killed process {a}{b} ({c}) total-vm:{a}kB, anon-rss:{b}kB",
        3,
    ),
    ("NodeNotReady", "Warning", "node-controller", "Node is not ready", 2),
    (
        "SandboxChanged",
        "Normal",
        "kubelet",
        "Pod sandbox changed, it will be killed and re-created.",
        3,
    ),
    (
        "FailedMount",
        "Warning",
        "kubelet",
        'MountVolume.SetUp failed for volume "{c}-config" : configmap "{c}-config" not found',
        3,
    ),
    ("ScalingReplicaSet", "Normal", "deployment-controller", "Scaled up replica set {p} to {a}", 3),
    ("SuccessfulCreate", "Normal", "replicaset-controller", "Created pod: {p}", 3),
    (
        "FailedCreate",
        "Warning",
        "replicaset-controller",
        'Error creating: pods "{p}" is '
        "forbidden: exceeded quota: compute-resources, requested: memory=512Mi",
        1,
    ),
]
CONTAINERS = ["api", "worker", "hub", "proxy", "prometheus-server", "notebook", "sidecar"]


@dataclass
class Stream:
    """A deterministic stream of Event versions: new Events and recurrences of stored ones."""

    seed: int = 0
    update_share: float = 0.5
    rng: random.Random = field(init=False)
    live: deque[list[Any]] = field(default_factory=lambda: deque(maxlen=200_000))
    serial: int = 0
    version: int = 10_000_000
    clock: datetime = datetime(2024, 5, 1, tzinfo=UTC)
    updates: int = 0
    created: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._weights = [weight for *_, weight in REASONS]
        self._namespaces = [f"team-{n:02d}" for n in range(60)]
        self._nodes = [f"pool-{n % 5}-node-{n:03d}" for n in range(300)]

    def batch(self, size: int) -> list[Any]:
        rows: list[Any] = []
        for _ in range(size):
            self.clock += timedelta(milliseconds=3)
            self.version += 1
            if self.live and self.rng.random() < self.update_share:
                # Recurrences cluster on recent Events (crash loops, probes failing in a row).
                depth = min(len(self.live), int(self.rng.expovariate(1 / 2000)) + 1)
                state = self.live[-depth]
                state[1] += self.rng.randint(1, 5)
                self.updates += 1
            else:
                state = [self._new(), 1]
                self.live.append(state)
                self.created += 1
            rows.append(
                replace(
                    state[0],
                    count=state[1],
                    last_seen=self.clock,
                    resource_version=str(self.version),
                )
            )
        return rows

    def _new(self) -> Any:
        from kubemedic.store.records import EventRow

        self.serial += 1
        rng = self.rng
        reason, kind, source, message, _ = rng.choices(REASONS, self._weights)[0]
        namespace = rng.choice(self._namespaces)
        container = rng.choice(CONTAINERS)
        pod = f"{container}-{rng.randrange(16**6):06x}-{rng.randrange(36**5):05d}"
        node = rng.choice(self._nodes)
        on_node = reason == "NodeNotReady"
        text = message.format(c=container, p=pod, a=rng.randint(2, 999), b=rng.randint(1, 99))
        return EventRow(
            uid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            api_version="v1",
            namespace="default" if on_node else namespace,
            name=f"{node if on_node else pod}.{self.serial:016x}",
            type=kind,
            reason=reason,
            message=text,
            object_kind="Node" if on_node else "Pod",
            object_namespace="" if on_node else namespace,
            object_name=node if on_node else pod,
            object_uid=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            field_path="" if on_node else f"spec.containers{{{container}}}",
            source=source,
            host=node if source == "kubelet" else "",
            node=node,
            count=1,
            first_seen=self.clock,
            last_seen=self.clock,
            resource_version=str(self.version),
        )


@dataclass
class Result:
    name: str
    events: int = 0
    seconds: float = 0.0
    batches: list[float] = field(default_factory=list)
    baseline: float = 0.0
    replay: float = 0.0
    rows: int = 0
    client_cpu: float = 0.0
    server_cpu: float | None = None
    recurrences: float = 0.0
    note: str = ""

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0

    @property
    def ok(self) -> bool:
        return self.rate >= TARGET

    def cpu_line(self) -> str:
        per = 1e6 / self.events if self.events else 0.0
        text = f"this process {self.client_cpu * per:.1f} µs"
        if self.server_cpu is not None:
            total = (self.client_cpu + self.server_cpu) * per
            text += f", server backend {self.server_cpu * per:.1f} µs, together {total:.1f} µs"
        return text

    def lines(self) -> str:
        if self.note:
            return f"{self.name}: NOT MEASURED ({self.note})"
        ratio = self.rate / self.baseline if self.baseline else float("nan")
        slowest = max(self.batches) if self.batches else 0.0
        median = statistics.median(self.batches) if self.batches else 0.0
        return "\n".join(
            [
                f"{self.name}: {self.events:,} events in {self.seconds:.2f} s of writes: "
                f"{self.rate:,.0f} events/s (target >= {TARGET:,.0f}/s: "
                f"{'PASS' if self.ok else 'FAIL'})",
                f"  baseline (one event per transaction): {self.baseline:,.0f} events/s; "
                f"ratio {ratio:.1f}x",
                f"  batches: {len(self.batches)}, median {median * 1000:.0f} ms, slowest "
                f"{slowest * 1000:.0f} ms; {self.recurrences:.0%} of the events were recurrences "
                f"of stored ones; rows in events at the end: {self.rows:,}",
                f"  replay of stored batches (a relist after 410 Gone): {self.replay:,.0f} "
                "events/s",
                f"  CPU per event: {self.cpu_line()} (with other load on the machine the "
                "rate falls, the CPU per event much less)",
            ]
        )


def baseline(url: str, stream: Stream, *, seconds: float) -> float:
    """Events/s inserting one event (and its count) per transaction, the naive way."""
    import sqlalchemy as sa

    from kubemedic.store import schema
    from kubemedic.store.db import Archive

    with Archive.open(url) as archive:
        rows = stream.batch(5000)
        done = 0
        start = time.perf_counter()
        for row in rows:
            values = {
                name: getattr(row, name)
                for name in row.__slots__
                if name not in ("first_seen", "last_seen")
            }
            values["uid"] = f"baseline-{done}"
            values["first_seen"] = row.first_seen.timestamp() if row.first_seen else None
            values["last_seen"] = row.last_seen.timestamp() if row.last_seen else None
            with archive.engine.begin() as connection:
                connection.execute(
                    sa.insert(schema.events), {**values, "cluster": "b", "recorded_at": 0.0}
                )
                connection.execute(
                    sa.insert(schema.event_counts),
                    {
                        "cluster": "b",
                        "uid": values["uid"],
                        "count": row.count,
                        "last_seen": values["last_seen"],
                    },
                )
            done += 1
            if time.perf_counter() - start >= seconds:
                break
        return done / (time.perf_counter() - start)


def ingest(name: str, url: str, *, seconds: float, batch: int, seed: int) -> Result:
    import sqlalchemy as sa

    from kubemedic.store import schema
    from kubemedic.store.db import Archive
    from kubemedic.store.writer import Batch

    result = Result(name)
    stream = Stream(seed=seed)
    kept: list[Batch] = []
    with Archive.open(url) as archive:
        server = _backend(archive.engine)
        server_start = _process_cpu(server)
        number = 0
        wall = time.perf_counter()
        while result.seconds < seconds and time.perf_counter() - wall < seconds * 4:
            rows = stream.batch(batch)
            number += 1
            work = Batch(cluster="bench", events=rows, checkpoints={"v1/events": str(number)})
            mark = time.perf_counter()
            used = _own_cpu()
            archive.write(work)
            result.client_cpu += _own_cpu() - used
            elapsed = time.perf_counter() - mark
            result.seconds += elapsed
            result.batches.append(elapsed)
            result.events += len(rows)
            if len(kept) < 4:
                kept.append(work)
        result.recurrences = stream.updates / max(1, stream.updates + stream.created)
        server_end = _process_cpu(server)
        if server_start is not None and server_end is not None:
            result.server_cpu = server_end - server_start
        mark = time.perf_counter()
        for work in kept:
            archive.write(work)
        replayed = sum(len(work.events) for work in kept)
        result.replay = replayed / (time.perf_counter() - mark)
        with archive.engine.connect() as connection:
            result.rows = connection.execute(
                sa.select(sa.func.count()).select_from(schema.events)
            ).scalar_one()
    result.baseline = baseline(url, Stream(seed=seed + 1), seconds=min(2.0, seconds / 4))
    return result


def _own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _backend(engine: Any) -> int | None:
    """The PostgreSQL backend's process id, when the server runs on this machine (the pool
    keeps the one connection the sequential writes use)."""
    if engine.dialect.name != "postgresql":
        return None
    with engine.connect() as connection:
        pid = int(connection.exec_driver_sql("SELECT pg_backend_pid()").scalar())
    return pid if Path(f"/proc/{pid}/stat").exists() else None


def _process_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system) of process ``pid`` from /proc, if readable."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def _postgres_database(server: str) -> Iterator[str]:
    """A scratch database on ``server`` (created, yielded as a URL, dropped)."""
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import make_url

    admin = make_url(server).set(drivername="postgresql")
    conninfo = admin.render_as_string(hide_password=False)
    name = f"kubemedic_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def _postgres_version(url: str) -> str:
    import sqlalchemy as sa

    engine = sa.create_engine(sa.make_url(url).set(drivername="postgresql+psycopg"))
    try:
        with engine.connect() as connection:
            return str(connection.exec_driver_sql("SHOW server_version").scalar())
    finally:
        engine.dispose()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="write time per database")
    parser.add_argument("--batch", type=int, default=2500, help="events per Archive.write")
    parser.add_argument("--postgres", metavar="URL", help=f"default: ${POSTGRES_ENV}")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="~1 s per database")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds = 1.0
    sys.path[:0] = [str(SRC)]

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"machine: {platform.system()} {platform.machine()}, {cpus} CPUs, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    print(
        f"stream: batches of {args.batch} events, about half new and half recurrences of stored "
        f"events (higher counts); each event writes its row and an event_counts row; "
        f"~{args.seconds:g} s of writes per database"
    )
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="kubemedic-ingest-") as scratch:
        url = f"sqlite:///{Path(scratch) / 'archive.db'}"
        results.append(
            ingest("sqlite", url, seconds=args.seconds, batch=args.batch, seed=args.seed)
        )
        print(results[-1].lines(), flush=True)

    server = args.postgres or os.environ.get(POSTGRES_ENV, "").strip()
    if not server:
        results.append(Result("postgresql", note=f"no --postgres URL and ${POSTGRES_ENV} unset"))
    else:
        with _postgres_database(server) as url:
            print(f"PostgreSQL {_postgres_version(url)}")
            results.append(
                ingest("postgresql", url, seconds=args.seconds, batch=args.batch, seed=args.seed)
            )
    print(results[-1].lines())

    measured = [result for result in results if not result.note]
    ok = all(result.ok for result in measured)
    names = ", ".join(result.name for result in measured)
    print(f"target >= {TARGET:,.0f} events/s ({names}): {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
