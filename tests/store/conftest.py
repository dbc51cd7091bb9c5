"""Store fixtures: an open archive on each database (``archive_url`` is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kubemedic.store.db import Archive


@pytest.fixture
def archive(archive_url: str) -> Iterator[Archive]:
    """A freshly migrated, empty archive: SQLite, then PostgreSQL."""
    with Archive.open(archive_url) as opened:
        yield opened
