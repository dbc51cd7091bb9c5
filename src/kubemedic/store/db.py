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
from kubemedic.store import breakers, episodes, repairs, schema, writer
from kubemedic.store.checking import RowError, scan_sqlite, shown_text

__all__ = [
    "DEFAULT_DB",
    "Archive",
    "ArchiveError",
    "NoArchive",
    "database_url",
    "describe",
    "postgres_timeouts",
]

DEFAULT_DB: Final = "kubemedic.db"
"""The archive used when neither ``--db`` nor ``KUBEMEDIC_DB`` names one (working directory)."""

MIGRATIONS: Final = Path(__file__).resolve().parent / "migrations"
BUSY_TIMEOUT_MS: Final = 5000
CACHE_KIB: Final = 64 * 1024
CHECKPOINT_PAGES: Final = 16384
CONNECT_TIMEOUT_S: Final = 5
"""PostgreSQL: seconds to wait for a server to accept and answer the connection (the URL's
``connect_timeout`` query parameter overrides it)."""
STATEMENT_TIMEOUT_MS: Final = 30_000
"""PostgreSQL: milliseconds a statement (or a lock it waits for) may take before the server
cancels it (the URL's ``options`` parameter, ``-c statement_timeout=...``, overrides it)."""

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


class NoArchive(ArchiveError):
    """The database answers but holds no archive (a new PostgreSQL database, an empty file),
    and it was opened without migrations (to read it)."""


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
    if _not_utf8(text):
        raise ArchiveError(
            f"database URL or path {shown_text(_mask_text(text))} is not valid UTF-8: name the "
            "archive with a UTF-8 path (rename the file or its directory)"
        )
    base = cwd if cwd is not None else Path.cwd()
    if not _SCHEME.match(text):
        return _sqlite_url(Path(text).expanduser(), base)
    try:
        url = make_url(text)
        port = url.port
    except (exc.ArgumentError, ValueError) as error:
        raise ArchiveError(
            f"cannot parse database URL {shown_text(_mask_text(text))}: {_port_problem(error)}"
        ) from None
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
    if port is not None and not 1 <= port <= 65535:
        raise ArchiveError(
            f"database URL {_masked(url)}: port {port}: expected a number from 1 to 65535"
        )
    return url.set(drivername=driver).render_as_string(hide_password=False)


def _not_utf8(text: str) -> bool:
    """Text that came from bytes that are not UTF-8 (a file name, decoded by Python with
    ``surrogateescape``): SQLite and PostgreSQL only take UTF-8 names."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _port_problem(error: Exception) -> str:
    detail = str(error)
    if "int()" in detail:
        found = detail.rsplit(":", 1)[-1].strip()
        return f"the port is {found[:200]}: expected a number from 1 to 65535"
    return detail[:200]


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
    def open(
        cls, url: str | None = None, *, migrate: bool = True, check_pages: bool = True
    ) -> Archive:
        """Open (and by default migrate to the current schema) the archive at ``url``
        (``database_url`` rules: ``None`` is the default archive).

        With ``migrate=False`` the archive must already be at this version's schema. The
        tables and columns this version uses are checked either way; ``check_pages`` also
        reads every page of a SQLite file for damage (``PRAGMA quick_check``: about a second
        per 500 MB), which a writer should always do. Raises ``ArchiveError``.
        """
        parsed = make_url(database_url(url))
        shown = _masked(parsed)
        if parsed.drivername == "sqlite":
            _check_sqlite_path(parsed, shown)
            engine = sa.create_engine(parsed)
            _tune_sqlite(engine)
        else:
            engine = sa.create_engine(
                parsed, pool_pre_ping=True, connect_args=postgres_timeouts(parsed)
            )
        archive = cls(engine, url=shown)
        try:
            archive._prepare(migrate=migrate, check_pages=check_pages)
        except BaseException:
            engine.dispose()
            raise
        return archive

    def _prepare(self, *, migrate: bool, check_pages: bool) -> None:
        try:
            with self.transaction() as connection:
                if self.dialect == "postgresql":
                    # Serialise concurrent first opens (two replicas migrating a new database).
                    connection.execute(sa.select(sa.func.pg_advisory_xact_lock(0x6B75626D)))
                config = _alembic_config(connection)
                head = ScriptDirectory.from_config(config).get_current_head()
                current = MigrationContext.configure(connection).get_current_revision()
                if current == head:
                    _check_schema(
                        connection, self.url, pages=check_pages and self.dialect == "sqlite"
                    )
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
                        raise NoArchive(f"no archive at {self.url}: run `kubemedic run` first")
                if not migrate:
                    raise ArchiveError(
                        f"the archive {self.url} is at schema revision {current!r}, not "
                        f"{head!r}: open it with migrations enabled to upgrade it"
                    )
                command.upgrade(config, "head")
                _check_schema(connection, self.url, pages=check_pages and self.dialect == "sqlite")
        except exc.DBAPIError as error:
            raise ArchiveError(describe(error, self.url)) from None
        except UnicodeDecodeError:  # SQLite's message quoting a damaged schema
            raise ArchiveError(_undecodable(self.url)) from None

    @contextlib.contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[Connection]:
        """A connection in one transaction (committed on success, rolled back on error).

        ``write`` takes SQLite's write lock at the start, so the transaction never fails half-way
        on a lock upgrade while another process writes.
        """
        with self.failures(), self.engine.connect() as connection:
            if write:
                connection.execution_options(**{WRITE: True})
            with connection.begin():
                yield connection

    @contextlib.contextmanager
    def failures(self) -> Iterator[None]:
        """Inside: a database error (a damaged file, a missing table, a server that stopped
        answering, a value the driver cannot read) is raised as ``ArchiveError`` naming this
        archive, in one line."""
        try:
            yield
        except exc.DBAPIError as error:
            raise ArchiveError(describe(error, self.url)) from None
        except UnicodeDecodeError:  # SQLite's message quoting a damaged schema
            raise ArchiveError(_undecodable(self.url)) from None
        except RowError as error:
            raise ArchiveError(f"the archive {self.url}: {error}") from None

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

    # -- node repair (``repairs``: the repair package's codec dicts, epoch-second floats) ------

    def load_repairs(self, cluster: str) -> dict[str, dict[str, Any]]:
        """The repairs in flight: ``{node: repair dict}``."""
        with self.transaction(write=False) as connection:
            return repairs.load(connection, cluster)

    def save_repair_round(
        self,
        cluster: str,
        *,
        in_flight: Mapping[str, Mapping[str, Any]],
        finished: Sequence[Mapping[str, Any]],
        decisions: Sequence[Mapping[str, Any]],
        node_states: Sequence[Mapping[str, Any]],
        at: float,
    ) -> None:
        """One controller round in one transaction (``repairs.save_round``)."""
        with self.transaction() as connection:
            repairs.save_round(
                connection,
                cluster,
                in_flight=in_flight,
                finished=finished,
                decisions=decisions,
                node_states=node_states,
                at=at,
            )

    def ledger(
        self, cluster: str, *, since: float | None = None, node: str | None = None
    ) -> list[dict[str, Any]]:
        """Finished repairs, oldest first (``repairs.ledger``)."""
        with self.transaction(write=False) as connection:
            return repairs.ledger(connection, cluster, since=since, node=node)

    def repair_decisions(
        self, cluster: str, *, since: float | None = None, node: str | None = None
    ) -> list[dict[str, Any]]:
        """Decisions given, in order (``repairs.decisions``)."""
        with self.transaction(write=False) as connection:
            return repairs.decisions(connection, cluster, since=since, node=node)

    def node_states(self, cluster: str) -> list[dict[str, Any]]:
        """Each node's repair state, by name (``repairs.node_states``)."""
        with self.transaction(write=False) as connection:
            return repairs.node_states(connection, cluster)

    def not_ready_since(self, cluster: str, since: float) -> dict[str, list[float]]:
        """When each node's Ready went bad since ``since`` (``repairs.not_ready_since``)."""
        with self.transaction(write=False) as connection:
            return repairs.not_ready_since(connection, cluster, since)

    def release(self, cluster: str, node: str, *, by: str, at: float) -> dict[str, Any]:
        """Record a quarantine cleared by ``by`` (``repairs.release``); the ledger dict."""
        with self.transaction() as connection:
            return repairs.release(connection, cluster, node, by=by, at=at)

    # -- the storm breaker (``breakers``: the breaker package's codec dicts) ---------------------

    def load_breaker(self, cluster: str) -> dict[str, Any] | None:
        """The breaker's saved state, or None (``breakers.load``)."""
        with self.transaction(write=False) as connection:
            return breakers.load(connection, cluster)

    def save_breaker_round(
        self,
        cluster: str,
        *,
        state: Mapping[str, Any],
        decisions: Sequence[Mapping[str, Any]],
        at: float,
    ) -> None:
        """One breaker round in one transaction (``breakers.save_round``)."""
        with self.transaction() as connection:
            breakers.save_round(connection, cluster, state=state, decisions=decisions, at=at)

    def breaker_decisions(
        self, cluster: str, *, since: float | None = None
    ) -> list[dict[str, Any]]:
        """The breaker's decisions, in order (``breakers.decisions``)."""
        with self.transaction(write=False) as connection:
            return breakers.decisions(connection, cluster, since=since)

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
    try:
        if not path.parent.is_dir():
            raise ArchiveError(
                f"cannot open the archive {shown}: directory {path.parent} does not exist"
            )
        if path.is_dir():
            raise ArchiveError(
                f"cannot open the archive {shown}: {path} is a directory, not a file"
            )
        if path.exists() and not path.is_file():
            raise ArchiveError(f"cannot open the archive {shown}: {path} is not a file")
    except OSError as error:  # a name too long, a parent that cannot be searched
        raise ArchiveError(f"cannot open the archive {shown}: {error.strerror or error}") from None


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
            # Check each page's cells as it is read: a damaged page the query reads is
            # reported as damage instead of read as rows (a cost too small to measure).
            cursor.execute("PRAGMA cell_size_check = ON")
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


def postgres_timeouts(url: URL) -> dict[str, Any]:
    """psycopg connection arguments bounding how long a PostgreSQL server that does not answer
    is waited for: ``connect_timeout`` (connecting, authenticating) and, through ``options``,
    ``statement_timeout`` (each statement, lock waits included); either is left to the URL when
    it sets it."""
    found: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        found["connect_timeout"] = CONNECT_TIMEOUT_S
    if "options" not in url.query:
        found["options"] = f"-c statement_timeout={STATEMENT_TIMEOUT_MS}"
    return found


_DAMAGED = ("malformed", "not a database", "corrupt", "disk i/o error")


def describe(error: exc.DBAPIError, shown: str) -> str:
    """One line saying what went wrong with the archive ``shown`` (its masked URL)."""
    original = str(error.orig).strip().splitlines()
    detail = shown_text(original[0] if original else type(error.orig).__name__)
    lowered = detail.lower()
    if "timeout expired" in lowered or "timed out" in lowered:
        return (
            f"the archive {shown} did not answer within {CONNECT_TIMEOUT_S} s (connecting: "
            f"{detail}); is it a PostgreSQL server, and is it up?"
        )
    if "statement timeout" in lowered:
        return (
            f"the archive {shown} did not answer within {STATEMENT_TIMEOUT_MS // 1000} s "
            f"(the server cancelled the statement: {detail})"
        )
    if any(word in lowered for word in _DAMAGED):
        return (
            f"the archive {shown} is damaged: {detail} (kubemedic changed nothing in it; "
            "restore a copy, or recover what is readable with `sqlite3 FILE .recover`)"
        )
    if "no such table" in lowered or "no such column" in lowered or "does not exist" in lowered:
        return (
            f"the archive {shown} is damaged: {detail} (a table or column of its schema is "
            "missing; kubemedic changed nothing in it)"
        )
    if "could not decode" in lowered:
        return f"the archive {shown} holds text that is not UTF-8: {detail}"
    if isinstance(error, exc.OperationalError) and shown.startswith("postgresql"):
        return f"cannot connect to the archive {shown}: {detail}"
    return f"cannot use the archive {shown}: {detail}"


def _undecodable(shown: str) -> str:
    return (
        f"the archive {shown} is damaged: its schema or a message about it is not UTF-8 "
        "(kubemedic changed nothing in it; restore a copy, or recover what is readable with "
        "`sqlite3 FILE .recover`)"
    )


def _check_schema(connection: Connection, shown: str, *, pages: bool) -> None:
    """The tables and columns this version reads and writes are all there: a table dropped or
    altered by hand is named now, rather than failing half-way through a command (or a write).
    With ``pages``, every page of a SQLite file is read for damage too."""
    inspector = sa.inspect(connection)
    present = set(inspector.get_table_names())
    for table in schema.metadata.sorted_tables:
        if table.name not in present:
            raise ArchiveError(
                f"the archive {shown} is damaged: table {table.name} is missing (kubemedic "
                "changed nothing in it; restore a copy of the archive)"
            )
        columns = {column["name"] for column in inspector.get_columns(table.name)}
        missing = [column.name for column in table.columns if column.name not in columns]
        if missing:
            raise ArchiveError(
                f"the archive {shown} is damaged: table {table.name} has no column "
                f"{', '.join(missing)} (kubemedic changed nothing in it; restore a copy)"
            )
    if pages:
        _check_sqlite_pages(connection, shown)


def _check_sqlite_pages(connection: Connection, shown: str) -> None:
    """Every page readable, then every row's values of their columns' types (SQLite keeps
    whatever was written): a damaged archive is named before anything reads or writes it."""
    found = [str(row[0]) for row in connection.exec_driver_sql("PRAGMA quick_check(3)")]
    if found and found != ["ok"]:
        said = " ".join(" ".join(found).replace("*** in database main ***", "").split())
        raise ArchiveError(
            f"the archive {shown} is damaged: {shown_text(said)} (kubemedic "
            "changed nothing in it; restore a copy, or recover what is readable with "
            "`sqlite3 FILE .recover`)"
        )
    try:
        scan_sqlite(connection)
    except RowError as error:
        raise ArchiveError(
            f"the archive {shown} is damaged: {error} (kubemedic changed nothing in it)"
        ) from None
