"""Keyset pages of the archive (``store.browsing``) on SQLite and PostgreSQL: every row once,
newest first, untimed rows last, ties on the time broken by id; tokens refused when forged."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from kubemedic.store import browsing
from kubemedic.store.db import Archive
from kubemedic.store.writer import Batch
from tests.store.rows import T0, event


def fill(archive: Archive, count: int = 61) -> None:
    rows = []
    for index in range(count):
        seen = None if index % 13 == 5 else T0 + timedelta(seconds=index // 3)
        rows.append(
            replace(
                event(f"e{index:03d}"),
                first_seen=seen,
                last_seen=seen,
                reason="BackOff" if index % 2 else "Unhealthy",
            )
        )
    archive.write(Batch("c1", events=rows))
    archive.write(Batch("c2", events=[event("other")]))


def walk(archive: Archive, limit: int, **filters: str) -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    token = None
    while True:
        with archive.transaction(write=False) as connection:
            page = browsing.events(
                connection, "c1", browsing.EventFilter(**filters), limit=limit, token=token
            )
        found.extend(page.items)
        if page.next is None:
            return found
        token = page.next


@pytest.mark.parametrize("limit", [1, 4, 13, 61, 500])
def test_pages_hold_every_row_once_in_order(archive: Archive, limit: int) -> None:
    fill(archive)
    rows = walk(archive, limit)
    assert len(rows) == 61
    assert len({row["uid"] for row in rows}) == 61
    timed = [row for row in rows if row["last_seen"] is not None]
    untimed = [row for row in rows if row["last_seen"] is None]
    assert rows == timed + untimed
    keys = [(row["last_seen"], row["id"]) for row in timed]
    assert keys == sorted(keys, reverse=True)
    assert [row["id"] for row in untimed] == sorted((row["id"] for row in untimed), reverse=True)


def test_filters_narrow_the_pages(archive: Archive) -> None:
    fill(archive)
    rows = walk(archive, 5, reason="Unhealthy")
    assert len(rows) == 31
    assert {row["reason"] for row in rows} == {"Unhealthy"}


@pytest.mark.parametrize(
    "token",
    [
        "",
        "!!!",
        browsing.encode_token("findings", 1.0, 3),
        browsing.encode_token("events", 1.0, 3)[:-2],
    ],
)
def test_a_forged_or_foreign_token_is_refused(archive: Archive, token: str) -> None:
    with (
        pytest.raises(browsing.PageError, match="not one this list gave"),
        archive.transaction(write=False) as connection,
    ):
        browsing.events(connection, "c1", browsing.EventFilter(), token=token)


@pytest.mark.parametrize("limit", [0, browsing.MAX_LIMIT + 1])
def test_limit_is_bounded(archive: Archive, limit: int) -> None:
    with pytest.raises(browsing.PageError), archive.transaction(write=False) as connection:
        browsing.events(connection, "c1", browsing.EventFilter(), limit=limit)


def test_clusters_are_found_by_a_few_index_lookups(archive: Archive) -> None:
    fill(archive)
    with archive.transaction(write=False) as connection:
        assert browsing.clusters(connection) == ["c1", "c2"]
