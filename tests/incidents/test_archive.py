"""Reading findings and signals from the archive's tables into incidents."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from kubemedic.incidents import archive
from kubemedic.incidents.model import SignalKind
from kubemedic.store import schema
from tests.incidents import archived
from tests.incidents import builders as b


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[sa.Engine]:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'archive.db'}")
    schema.metadata.create_all(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def filled(engine: sa.Engine) -> sa.Engine:
    with engine.begin() as connection:
        archived.fill_incident3(connection)
    return engine


def test_findings_come_back_as_the_episodes_written(filled: sa.Engine) -> None:
    episodes, _ = archive.load(filled)
    written = {e.fingerprint: e for e in b.incident3()}
    assert {e.fingerprint for e in episodes} == set(written)
    for episode in episodes:
        original = written[episode.fingerprint]
        assert (episode.check, episode.cause, episode.object) == (
            original.check,
            original.cause,
            original.object,
        )
        assert (episode.first_seen, episode.last_seen) == (
            original.first_seen,
            original.last_seen,
        )
        assert episode.evidence == original.evidence
        assert episode.severity is original.severity
        assert episode.row_id is not None and episode.scans == 3


def test_signals_are_read_from_every_table_with_their_workloads(filled: sa.Engine) -> None:
    _, signals = archive.load(filled)
    kinds = Counter(s.kind for s in signals)
    assert kinds == {
        SignalKind.EVICTION: 3,  # the Evicted event of x0 is merged into its eviction row
        SignalKind.NODE_PRESSURE: 1,  # Ready=True is no symptom
        SignalKind.POD_PENDING: 1,
        SignalKind.OOM_KILL: 1,  # reason Error is not an OOM kill
        SignalKind.NODE_OOM: 1,
        SignalKind.EVENT: 1,  # the liveness failures; "Stopping container" is left out
    }
    eviction = next(s for s in signals if s.kind is SignalKind.EVICTION)
    assert eviction.workload == b.HUB and eviction.node == "core-2"
    assert "container hub used 2.15Gi of a 128Mi request" in eviction.summary
    pending = next(s for s in signals if s.kind is SignalKind.POD_PENDING)
    assert pending.workload == "prod/Deployment/dask-worker"
    assert pending.count == 7 and pending.node == ""  # the scheduler is not where the pod is
    assert "0/126 nodes are available" in pending.summary
    oom = next(s for s in signals if s.kind is SignalKind.OOM_KILL)
    assert oom.workload == "prod/Deployment/dask-worker" and oom.source == "terminations"
    assert not any(s.namespace == "billing" for s in signals)  # no finding names it


def test_signals_far_from_every_finding_are_not_read(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        archived.insert_findings(connection, [b.hog(b.T0), b.evicted(b.T0 + b.minutes(10))])
        archived.insert_eviction(connection, b.T0 + b.minutes(12), pod="hub-5f45bffd5-nbbbb")
        archived.insert_eviction(connection, b.T0 + b.minutes(300), pod="hub-5f45bffd5-fzzzz")
    _, signals = archive.load(engine)
    assert [s.object_name for s in signals] == ["hub-5f45bffd5-nbbbb"]


def test_an_evicted_event_without_an_eviction_row_is_an_eviction(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        archived.insert_findings(connection, [b.evicted(b.T0)])
        archived.insert_event(
            connection,
            b.T0,
            reason="Evicted",
            message="The node was low on resource: memory.",
            name="hub-5f45bffd5-q2wrt",
            host="core-2",
        )
    _, signals = archive.load(engine)
    assert [(s.kind, s.workload, s.node) for s in signals] == [
        (SignalKind.EVICTION, b.HUB, "core-2")
    ]


def test_cluster_and_time_filters_choose_the_episodes(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        archived.insert_findings(connection, b.incident3(b.T0))
        archived.insert_findings(
            connection, b.incident3(b.T0 + b.minutes(60 * 24), cluster="staging")
        )
    assert {e.cluster for e in archive.load(engine, cluster="staging")[0]} == {"staging"}
    late = archive.load(engine, since=b.T0 + b.minutes(60 * 23))[0]
    assert {e.cluster for e in late} == {"staging"}
    early = archive.load(engine, until=b.T0 + b.minutes(60))[0]
    assert {e.cluster for e in early} == {"leap"}
    assert archive.load(engine, cluster="nowhere") == ([], [])


def test_a_row_that_cannot_be_read_is_named(engine: sa.Engine) -> None:
    with engine.begin() as connection:
        archived.insert_findings(connection, [b.hog(b.T0)], evidence="{not json")
    with pytest.raises(
        archive.ArchiveDataError,
        match=r"table findings, row 1: column evidence: expected a JSON object",
    ):
        archive.load(engine)


def test_incidents_of_the_archive_carry_its_signals(filled: sa.Engine) -> None:
    incidents = archive.incidents(filled)
    memory = next(i for i in incidents if i.cause == b.MEMORY_CAUSE)
    kinds = Counter(s.kind for s in memory.signals)
    assert kinds[SignalKind.EVICTION] == 3
    assert kinds[SignalKind.NODE_PRESSURE] == 1
    assert kinds[SignalKind.POD_PENDING] == 1  # the Dask workers' FailedScheduling
    assert kinds[SignalKind.EVENT] == 1  # the hub's liveness failures
    assert SignalKind.OOM_KILL not in kinds  # Dask workers OOM-killed elsewhere are not this


def test_postgresql_reads_the_same(postgres_url: str) -> None:
    from kubemedic.store.db import database_url

    engine = sa.create_engine(database_url(postgres_url))
    try:
        schema.metadata.create_all(engine)
        with engine.begin() as connection:
            archived.fill_incident3(connection)
        episodes, signals = archive.load(engine)
        assert len(episodes) == len(b.incident3())
        assert Counter(s.kind for s in signals)[SignalKind.EVICTION] == 3
        assert [i.id for i in archive.incidents(engine)] == [
            i.id for i in archive.incidents(_sqlite_copy())
        ]
    finally:
        engine.dispose()


def _sqlite_copy() -> sa.Engine:
    engine = sa.create_engine("sqlite://")
    schema.metadata.create_all(engine)
    with engine.begin() as connection:
        archived.fill_incident3(connection)
    return engine
