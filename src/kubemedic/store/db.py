"""Opening an archive: from a database URL to a migrated, tuned SQLAlchemy engine.

The URL contract (``--db``, ``KUBEMEDIC_DB``): SQLAlchemy URLs, ``sqlite:///relative.db``,
``sqlite:////abs/path.db``, ``postgresql://user:pass@host:5432/db`` (driven by psycopg 3); a
bare path means a SQLite file; the default is ``kubemedic.db`` in the working directory.

SQLite runs in WAL mode with ``synchronous=NORMAL``: a commit is one append to the log, readers
never block the writer, and a process killed with ``kill -9`` at any moment loses at most the
transaction in flight (the log is replayed or ignored on the next open; only a power cut may lose
the last few commits, never consistency). Writers take the lock at ``BEGIN IMMEDIATE`` so two
writers queue on ``busy_timeout`` instead of failing on a lock upgrade half-way through.

Opening runs the Alembic migrations up to the head this kubemedic ships (a no-op when the
archive is up to date); an archive migrated by a newer kubemedic is refused rather than written
with a schema this version does not know.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import event, exc
from sqlalchemy.engine import URL, Connection, Engine, make_url

from kubemedic.checks.findings import Finding
from kubemedic.errors import InputError
from kubemedic.store import episodes, schema, writer

__all__ = ["DEFAULT_DB", "Archive", "ArchiveError", "database_url"]

DEFAULT_DB: Final = "kubemedic.db"
"""The archive used when neither ``--db`` nor ``KUBEMEDIC_DB`` names one (working directory)."""

MIGRATIONS: Final = Path(__file__).resolve().parent / "migrations"
BUSY_TIMEOUT_MS: Final = 5000
CACHE_KIB: Final = 64 * 1024
CHECKPOINT_PAGES: Final = 16384
CONNECT_TIMEOUT_S: Final = 10

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_DRIVERS: Final = {
    "sqlite": "sqlite",
    "sqlite+pysqlite": "sqlite",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "postgresql+psycopg": "postgresql+psycopg",
}
#: Execution option a connection sets before ``begin()`` to write (SQLite: ``BEGIN IMMEDIATE``).
WRITE: Final = "kubemedic_write"


class ArchiveError(InputError):
    """The archive cannot be opened or used: bad URL, unreachable server, not a database,
    unknown schema revision. The message names the URL (password masked)."""


def _masked(url: URL) -> str:
    return url.render_as_string(hide_password=True)


def database_url(
    text: str | None = None, *, env: Mapping[str, str] = os.environ, cwd: Path | None = None
) -> str:
    """The SQLAlchemy URL for ``--db`` text (``None``: ``KUBEMEDIC_DB``, else ``kubemedic.db``).

    A bare path, or a relative ``sqlite:///`` path, is resolved against ``cwd`` (the working
    directory by default) so messages name the file actually used. ``postgresql://`` and
    ``postgres://`` select the psycopg 3 driver. Raises ``ArchiveError`` for anything else.
    """
    if text is None:
        text = env.get("KUBEMEDIC_DB") or DEFAULT_DB
    text = text.strip()
    if not text:
        raise ArchiveError("empty database URL: expected a SQLite path or a SQLAlchemy URL")
    base = cwd if cwd is not None else Path.cwd()
    if not _SCHEME.match(text):
        return _sqlite_url(Path(text).expanduser(), base)
    try:
        url = make_url(text)
    except exc.ArgumentError as error:
        raise ArchiveError(f"cannot parse database URL {_mask_text(text)}: {error}") from None
    driver = _DRIVERS.get(url.drivername)
    if driver is None:
        raise ArchiveError(
            f"unsupported database URL {_masked(url)}: expected sqlite:///PATH or "
            "postgresql://USER:PASSWORD@HOST:PORT/DATABASE"
        )
    if driver == "sqlite":
        database = url.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            return url.set(drivername="sqlite").render_as_string(hide_password=False)
        return _sqlite_url(Path(database).expanduser(), base)
    if not url.database:
        raise ArchiveError(f"database URL {_masked(url)} names no database (…/DATABASE)")
    return url.set(drivername=driver).render_as_string(hide_password=False)


def _sqlite_url(path: Path, base: Path) -> str:
    return "sqlite:///" + str(path if path.is_absolute() else base / path)


def _mask_text(text: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", text)


class Archive:
    """An open archive. ``write``/``record_findings`` add to it, ``checkpoint(s)`` read where each
    stream's watch may resume; ``engine`` is there for queries. Close it (or use ``with``)."""

    def __init__(self, engine: Engine, *, url: str) -> None:
        self.engine = engine
        self.url = url
        """The URL for display (password masked)."""
        self.dialect: str = engine.dialect.name
        """``sqlite`` or ``postgresql``."""

    @classmethod
    def open(cls, url: str | None = None, *, migrate: bool = True) -> Archive:
        """Open (and by default migrate to the current schema) the archive at ``url``
        (``database_url`` rules: ``None`` is the default archive).

        With ``migrate=False`` the archive must already be at this version's schema.
        """
        parsed = make_url(database_url(url))
        shown = _masked(parsed)
        if parsed.drivername == "sqlite":
            _check_sqlite_path(parsed, shown)
            engine = sa.create_engine(parsed)
            _tune_sqlite(engine)
        else:
            timeout = (
                {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
            )
            engine = sa.create_engine(parsed, pool_pre_ping=True, connect_args=timeout)
        archive = cls(engine, url=shown)
        try:
            archive._prepare(migrate=migrate)
        except BaseException:
            engine.dispose()
            raise
        return archive

    def _prepare(self, *, migrate: bool) -> None:
        try:
            with self.transaction() as connection:
                if self.dialect == "postgresql":
                    # Serialise concurrent first opens (two replicas migrating a new database).
                    connection.execute(sa.select(sa.func.pg_advisory_xact_lock(0x6B75626D)))
                config = _alembic_config(connection)
                head = ScriptDirectory.from_config(config).get_current_head()
                current = MigrationContext.configure(connection).get_current_revision()
                if current == head:
                    return
                known = {script.revision for script in _scripts(config)}
                if current is not None and current not in known:
                    raise ArchiveError(
                        f"the archive {self.url} is at schema revision {current!r}, which this "
                        f"kubemedic does not know (it knows up to {head!r}): it was written by a "
                        "newer kubemedic; upgrade kubemedic to use it"
                    )
                if current is None:
                    _refuse_foreign_tables(connection, self.url)
                if not migrate:
                    raise ArchiveError(
                        f"the archive {self.url} is at schema revision {current!r}, not "
                        f"{head!r}: open it with migrations enabled to upgrade it"
                    )
                command.upgrade(config, "head")
        except exc.DBAPIError as error:
            raise ArchiveError(_describe(error, self.url)) from None

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Connection]:
        """A connection in one transaction (committed on success, rolled back on error).

        ``write`` takes SQLite's write lock at the start, so the transaction never fails half-way
        on a lock upgrade while another process writes.
        """
        with self.engine.connect() as connection:
            if write:
                connection.execution_options(**{WRITE: True})
            with connection.begin():
                yield connection

    def write(self, batch: writer.Batch) -> writer.WriteStats:
        """Write ``batch`` and its checkpoints in one transaction (``writer.write``)."""
        with self.transaction() as connection:
            return writer.write(connection, batch)

    def record_findings(
        self,
        cluster: str,
        findings: Sequence[Finding],
        at: datetime,
        *,
        reopen_after: timedelta = episodes.REOPEN_AFTER,
    ) -> int:
        """Record a scan's findings as episodes; return how many it opened
        (``episodes.record_findings``)."""
        with self.transaction() as connection:
            return episodes.record_findings(
                connection, cluster, findings, at, reopen_after=reopen_after
            )

    def checkpoint(self, cluster: str, stream: str) -> str | None:
        """The resourceVersion the ``stream``'s watch may resume from, if one was recorded."""
        table = schema.checkpoints
        query = sa.select(table.c.resource_version).where(
            table.c.cluster == cluster, table.c.stream == stream
        )
        with self.transaction(write=False) as connection:
            value = connection.execute(query).scalar_one_or_none()
        return None if value is None else str(value)

    def checkpoints(self, cluster: str) -> dict[str, str]:
        """Every stream's checkpoint for ``cluster``: ``{stream: resourceVersion}``."""
        table = schema.checkpoints
        query = sa.select(table.c.stream, table.c.resource_version).where(
            table.c.cluster == cluster
        )
        with self.transaction(write=False) as connection:
            return {str(stream): str(version) for stream, version in connection.execute(query)}

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Archive:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Archive({self.url!r})"


def _refuse_foreign_tables(connection: Connection, shown: str) -> None:
    """A database without our revision but with tables of our names belongs to something else:
    migrating it would fail half-way or, worse, mix two applications' rows."""
    clash = set(schema.metadata.tables) & set(sa.inspect(connection).get_table_names())
    if clash:
        raise ArchiveError(
            f"the archive {shown} already has tables named like the archive's "
            f"({', '.join(sorted(clash))}) but no kubemedic schema revision: it is not a "
            "kubemedic archive"
        )


def _check_sqlite_path(url: URL, shown: str) -> None:
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return
    path = Path(database)
    if not path.parent.is_dir():
        raise ArchiveError(
            f"cannot open the archive {shown}: directory {path.parent} does not exist"
        )
    if path.exists() and not path.is_file():
        raise ArchiveError(f"cannot open the archive {shown}: {path} is not a file")


def _tune_sqlite(engine: Engine) -> None:
    """Per connection: WAL, ``synchronous=NORMAL``, a 5 s busy timeout, foreign keys, a larger
    page cache; and the driver's own transaction handling replaced by explicit ``BEGIN``
    (pysqlite would otherwise start transactions only at the first write, outside SQLAlchemy's
    view)."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
            # 64 MiB of page cache (allocated as used): a batch touches pages of seven indexes
            # on events, at random places (uids); the 2 MiB default makes it read them again.
            cursor.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
            # Copy the log back into the database every ~64 MiB of it rather than every 4 MiB:
            # a batch dirties pages all over the indexes, and a page changed by many batches is
            # then copied once, not once per batch (measured: ~25% more events/s).
            cursor.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_PAGES}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        immediate = connection.get_execution_options().get(WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def _alembic_config(connection: Connection) -> Config:
    """Alembic's configuration, built in code (no ``alembic.ini``): the migrations shipped in
    this package, run on ``connection`` inside the caller's transaction."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    config.attributes["connection"] = connection
    return config


def _scripts(config: Config) -> list[Any]:
    return list(ScriptDirectory.from_config(config).walk_revisions())


def _describe(error: exc.DBAPIError, shown: str) -> str:
    original = str(error.orig).strip().splitlines()
    detail = original[0] if original else type(error.orig).__name__
    if isinstance(error, exc.OperationalError) and shown.startswith("postgresql"):
        return f"cannot connect to the archive {shown}: {detail}"
    return f"cannot use the archive {shown}: {detail}"
