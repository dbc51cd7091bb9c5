"""The Alembic migrations build exactly ``schema.metadata``, run once, and refuse the unknown."""

from __future__ import annotations

from importlib import resources

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Engine

from kubemedic.store import db, schema
from kubemedic.store.db import Archive, ArchiveError


def _head() -> str | None:
    """The newest revision this kubemedic ships (each new migration moves it)."""
    config = Config()
    config.set_main_option("script_location", str(db.MIGRATIONS))
    return ScriptDirectory.from_config(config).get_current_head()


def _revision(archive: Archive) -> str | None:
    with archive.engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def test_the_migrated_database_matches_the_schema_exactly(archive: Archive) -> None:
    with archive.engine.connect() as connection:
        differences = compare_metadata(MigrationContext.configure(connection), schema.metadata)
    assert differences == []
    assert _revision(archive) == _head()


def test_text_columns_carry_the_schema_s_collation(archive: Archive) -> None:
    # compare_metadata does not compare collations: byte order on PostgreSQL is checked here.
    inspector = sa.inspect(archive.engine)
    dialect = archive.engine.dialect
    for table in schema.metadata.sorted_tables:
        reflected = {column["name"]: column["type"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            expected = getattr(column.type.dialect_impl(dialect), "collation", None)
            assert getattr(reflected[column.name], "collation", None) == expected, column


def test_every_table_and_index_of_the_schema_is_created(archive: Archive) -> None:
    inspector = sa.inspect(archive.engine)
    assert set(inspector.get_table_names()) == {*schema.metadata.tables, "alembic_version"}
    for table in schema.metadata.sorted_tables:
        expected = {index.name for index in table.indexes}
        assert {index["name"] for index in inspector.get_indexes(table.name)} >= expected


def test_opening_an_up_to_date_archive_runs_no_ddl(archive_url: str) -> None:
    Archive.open(archive_url).close()
    statements: list[str] = []

    def record(*args: object) -> None:
        statements.append(str(args[2]))

    sa.event.listen(Engine, "before_cursor_execute", record)
    try:
        Archive.open(archive_url).close()
    finally:
        sa.event.remove(Engine, "before_cursor_execute", record)
    assert any("alembic_version" in statement for statement in statements)
    ddl = ("CREATE", "ALTER", "DROP", "INSERT", "UPDATE")
    assert [s for s in statements if s.lstrip().upper().startswith(ddl)] == []


def test_an_archive_from_a_newer_kubemedic_is_refused_not_migrated(archive_url: str) -> None:
    with Archive.open(archive_url) as archive, archive.transaction() as connection:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = '0042'"))
    with pytest.raises(ArchiveError, match=r"revision '0042'.*newer kubemedic"):
        Archive.open(archive_url)


def test_without_migrations_an_empty_database_is_refused(archive_url: str) -> None:
    with pytest.raises(ArchiveError, match=r"no archive at .*run `kubemedic run` first"):
        Archive.open(archive_url, migrate=False)
    Archive.open(archive_url).close()
    Archive.open(archive_url, migrate=False).close()


def test_downgrade_removes_everything_and_upgrade_rebuilds_it(archive_url: str) -> None:
    with Archive.open(archive_url) as archive:
        with archive.transaction() as connection:
            command.downgrade(db._alembic_config(connection), "base")
        assert set(sa.inspect(archive.engine).get_table_names()) == {"alembic_version"}
    with Archive.open(archive_url) as archive:
        assert _revision(archive) == _head()
        assert set(sa.inspect(archive.engine).get_table_names()) > set(schema.metadata.tables)


def test_the_migrations_ship_inside_the_package() -> None:
    migrations = resources.files("kubemedic.store") / "migrations"
    for name in (
        "env.py",
        "script.py.mako",
        "versions/0001_initial.py",
        "versions/0002_repair_ledger.py",
        "versions/0003_breaker.py",
        "versions/0004_notifications.py",
        "versions/0005_browsing.py",
    ):
        assert (migrations / name).is_file(), name
