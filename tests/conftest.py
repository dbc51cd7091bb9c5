"""Test-wide settings and the archive database fixtures.

Property tests must not flake on a busy 2-core CI machine: no per-example deadline, and under CI
(``CI`` set) a fixed derandomised search, so a run is reproducible from the commit alone.

``archive_url`` (SQLite and PostgreSQL), ``sqlite_url`` and ``postgres_url`` give any test an
empty archive database; see below.
"""

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")


# -- archive databases (kubemedic.store) ----------------------------------------------------
#
# ``archive_url`` runs a test on SQLite and on PostgreSQL. PostgreSQL comes from
# KUBEMEDIC_TEST_POSTGRES (a URL whose role may create databases); each test gets a fresh
# database, dropped afterwards. Without the variable those tests skip, except under CI, where
# they fail: CI must exercise PostgreSQL.

POSTGRES_ENV = "KUBEMEDIC_TEST_POSTGRES"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A SQLite archive file in the test's temporary directory (not created yet)."""
    return f"sqlite:///{tmp_path / 'archive.db'}"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test (dropped afterwards)."""
    server = os.environ.get(POSTGRES_ENV, "").strip()
    if not server:
        if os.environ.get("CI"):
            pytest.fail(f"{POSTGRES_ENV} is not set: CI must run the PostgreSQL tests")
        pytest.skip(f"{POSTGRES_ENV} is not set (a PostgreSQL URL that may create databases)")
    import psycopg
    from psycopg import sql
    from sqlalchemy.engine import make_url

    admin = make_url(server).set(drivername="postgresql")
    name = f"kubemedic_test_{uuid.uuid4().hex[:16]}"
    conninfo = admin.render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as connection:
            connection.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.fixture(params=["sqlite", "postgresql"])
def archive_url(request: pytest.FixtureRequest) -> str:
    """An empty archive's URL, once on SQLite and once on PostgreSQL."""
    fixture = {"sqlite": "sqlite_url", "postgresql": "postgres_url"}[request.param]
    url: str = request.getfixturevalue(fixture)
    return url
