"""Opening an archive: the URL contract, SQLite's settings, clear errors, checkpoints."""

from __future__ import annotations

import contextlib
import socket
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from kubemedic.store.db import Archive, ArchiveError, database_url
from kubemedic.store.writer import Batch

# -- database_url -----------------------------------------------------------------------------


def test_a_bare_relative_path_is_a_sqlite_file_in_the_working_directory(tmp_path: Path) -> None:
    assert database_url("data/archive.db", cwd=tmp_path) == f"sqlite:///{tmp_path}/data/archive.db"


def test_a_bare_absolute_path_is_kept(tmp_path: Path) -> None:
    assert database_url(str(tmp_path / "a.db")) == f"sqlite:///{tmp_path}/a.db"


def test_sqlite_urls_with_relative_and_absolute_paths(tmp_path: Path) -> None:
    assert database_url("sqlite:///rel.db", cwd=tmp_path) == f"sqlite:///{tmp_path}/rel.db"
    assert database_url("sqlite:////abs/path.db", cwd=tmp_path) == "sqlite:////abs/path.db"


def test_the_default_is_kubemedic_db_in_the_working_directory_or_kubemedic_db_env(
    tmp_path: Path,
) -> None:
    assert database_url(env={}, cwd=tmp_path) == f"sqlite:///{tmp_path}/kubemedic.db"
    env = {"KUBEMEDIC_DB": "postgresql://u:p@db:5432/archive"}
    assert database_url(env=env, cwd=tmp_path) == "postgresql+psycopg://u:p@db:5432/archive"
    assert database_url("other.db", env=env, cwd=tmp_path) == f"sqlite:///{tmp_path}/other.db"


@pytest.mark.parametrize(
    "text",
    [
        "postgresql://kubemedic:secret@127.0.0.1:5432/archive",
        "postgres://kubemedic:secret@127.0.0.1:5432/archive",
        "postgresql+psycopg://kubemedic:secret@127.0.0.1:5432/archive",
    ],
)
def test_postgresql_urls_use_the_psycopg_3_driver(text: str) -> None:
    assert database_url(text) == "postgresql+psycopg://kubemedic:secret@127.0.0.1:5432/archive"


def test_postgresql_url_keeps_its_query_options() -> None:
    url = database_url("postgresql://u@h/db?sslmode=require")
    assert url == "postgresql+psycopg://u@h/db?sslmode=require"


@pytest.mark.parametrize(
    "text",
    ["mysql://root:hunter2@db/archive", "postgresql+psycopg2://root:hunter2@db/archive"],
)
def test_an_unsupported_scheme_is_named_with_the_password_masked(text: str) -> None:
    with pytest.raises(ArchiveError, match="unsupported database URL") as caught:
        database_url(text)
    assert "root:***@db/archive" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_postgresql_url_without_a_database_is_refused() -> None:
    with pytest.raises(ArchiveError, match="names no database"):
        database_url("postgresql://u:p@host:5432")


def test_an_empty_url_is_refused() -> None:
    with pytest.raises(ArchiveError, match="empty database URL"):
        database_url("  ")


# -- opening ----------------------------------------------------------------------------------


def test_a_sqlite_archive_runs_in_wal_mode_with_a_busy_timeout(sqlite_url: str) -> None:
    with Archive.open(sqlite_url) as archive:
        assert archive.dialect == "sqlite"
        assert archive.url == sqlite_url
        with archive.engine.connect() as connection:

            def pragma(name: str) -> object:
                return connection.exec_driver_sql(f"PRAGMA {name}").scalar()

            assert pragma("journal_mode") == "wal"
            assert pragma("synchronous") == 1  # NORMAL
            assert pragma("busy_timeout") == 5000
            assert pragma("foreign_keys") == 1


def test_a_missing_directory_is_a_clear_error_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "archive.db"
    with pytest.raises(ArchiveError, match=f"directory {tmp_path / 'nowhere'} does not exist"):
        Archive.open(str(missing))
    assert not missing.parent.exists()


def test_a_file_that_is_not_a_database_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_text("these are my notes, not a database\n" * 200)
    with pytest.raises(ArchiveError, match="file is not a database") as caught:
        Archive.open(str(path))
    assert str(path) in str(caught.value)


def test_a_directory_in_place_of_the_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="is a directory, not a file"):
        Archive.open(str(tmp_path))


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_a_postgresql_server_that_is_down_is_a_clear_error_with_the_password_masked() -> None:
    url = f"postgresql://kubemedic:hunter2@127.0.0.1:{_closed_port()}/archive"
    with pytest.raises(ArchiveError, match="cannot connect to the archive") as caught:
        Archive.open(url)
    message = str(caught.value)
    assert "kubemedic:***@127.0.0.1" in message
    assert "hunter2" not in message


def test_the_display_url_masks_the_password(postgres_url: str) -> None:
    with Archive.open(postgres_url) as archive:
        assert archive.dialect == "postgresql"
        assert archive.url.startswith("postgresql+psycopg://")
        shown = sa.make_url(postgres_url).set(drivername="postgresql+psycopg")
        assert archive.url == shown.render_as_string(hide_password=True)
        assert ":***@" in archive.url


def test_closing_disposes_of_the_connections(sqlite_url: str) -> None:
    archive = Archive.open(sqlite_url)
    with archive:
        archive.checkpoints("c")
    assert archive.engine.pool.checkedout() == 0
    assert repr(archive) == f"Archive({sqlite_url!r})"


# -- checkpoints ------------------------------------------------------------------------------


def test_checkpoints_are_per_cluster_and_stream_and_move_forward(archive: Archive) -> None:
    assert archive.checkpoint("prod", "v1/events") is None
    assert archive.checkpoints("prod") == {}
    archive.write(Batch(cluster="prod", checkpoints={"v1/events": "100", "v1/pods": "90"}))
    archive.write(Batch(cluster="staging", checkpoints={"v1/events": "7"}))
    archive.write(Batch(cluster="prod", checkpoints={"v1/events": "120"}))
    assert archive.checkpoint("prod", "v1/events") == "120"
    assert archive.checkpoints("prod") == {"v1/events": "120", "v1/pods": "90"}
    assert archive.checkpoints("staging") == {"v1/events": "7"}


def test_archives_survive_reopening(archive_url: str) -> None:
    with Archive.open(archive_url) as archive:
        archive.write(Batch(cluster="prod", checkpoints={"v1/nodes": "5"}))
    with Archive.open(archive_url) as archive:
        assert archive.checkpoints("prod") == {"v1/nodes": "5"}


def test_a_database_of_another_application_is_not_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(path)) as other:
        other.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, title TEXT)")
        other.commit()
    with pytest.raises(ArchiveError, match=r"tables named like the archive's \(events\)"):
        Archive.open(str(path))
