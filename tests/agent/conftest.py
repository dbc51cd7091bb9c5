"""The agent against the API emulator (one Node, ``served.NODE``) and a fake host."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.repair.served import Served, serve


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    yield from serve(tmp_path)
