"""Fixtures for the dashboard's tests: one filled SQLite archive per module, and a client."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from kubemedic.store.db import Archive
from kubemedic.web.app import create_app
from tests.web.filling import fill


@pytest.fixture(scope="module")
def archive_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("web") / "kubemedic.db"
    with Archive.open(str(path)) as archive:
        fill(archive)
    return path


@pytest.fixture(scope="module")
def client(archive_path: Path) -> Iterator[TestClient]:
    with Archive.open(str(archive_path), migrate=False) as archive:
        yield TestClient(create_app(archive))
