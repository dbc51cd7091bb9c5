"""Finding what may be near in time and shares a key, without trying every pair (pure).

Grouping asks, for each symptom, signal or condition, which of thousands of others are within
``window`` of it *and* share something with it (a node, a workload, a cause). ``Near`` answers
with a superset, as positions in the order the items were added: each item is filed under each
of its keys and each time bucket its span (widened by ``window``) covers; a query looks in the
buckets of its own span under its own keys. Callers then apply their exact rule to the
candidates, so results are the same as trying every pair, only without the pairs that cannot
match. Items whose span covers more than ``LONG`` buckets are filed once per key and offered to
every query of that key, so a condition that lasted a month costs no more than one of a day.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Hashable, Iterable
from datetime import datetime, timedelta
from typing import Final, Generic, TypeVar

__all__ = ["LONG", "Near"]

LONG: Final = 64
"""Buckets an item may cover before it is offered to every query of its keys instead."""

_T = TypeVar("_T")


class Near(Generic[_T]):
    """Items by key and time bucket; ``near`` gives the positions of those that may match."""

    def __init__(self, window: timedelta) -> None:
        self.window = window.total_seconds()
        # A bucket as wide as the window (an hour when the window is zero): a query of a
        # short span then looks in two or three buckets.
        self.width = self.window if self.window > 0 else 3600.0
        self.items: list[_T] = []
        self._buckets: dict[Hashable, dict[int, list[int]]] = defaultdict(dict)
        self._long: dict[Hashable, list[int]] = defaultdict(list)

    def _range(self, first: float, last: float) -> range:
        return range(math.floor(first / self.width), math.floor(last / self.width) + 1)

    def add(self, item: _T, keys: Iterable[Hashable], first: datetime, last: datetime) -> None:
        """File ``item`` under ``keys`` over ``[first, last]`` widened by the window."""
        position = len(self.items)
        self.items.append(item)
        # A millisecond more on each side: epoch seconds are floats, and an item exactly
        # ``window`` away must not fall out by a rounding.
        reach = self.window + 0.001
        span = self._range(first.timestamp() - reach, last.timestamp() + reach)
        for key in set(keys):
            if len(span) > LONG:
                self._long[key].append(position)
            else:
                filed = self._buckets[key]
                for bucket in span:
                    filed.setdefault(bucket, []).append(position)

    def near(self, keys: Iterable[Hashable], first: datetime, last: datetime) -> list[int]:
        """Positions (ascending) of the items filed under one of ``keys`` whose widened span
        may meet ``[first, last]``: every item that does is among them."""
        found: set[int] = set()
        span = self._range(first.timestamp(), last.timestamp())
        for key in set(keys):
            found.update(self._long.get(key, ()))
            filed = self._buckets.get(key)
            if not filed:
                continue
            if len(span) > len(filed):
                # A long query: walk the key's buckets rather than every bucket of the span.
                for bucket, positions in filed.items():
                    if span.start <= bucket < span.stop:
                        found.update(positions)
            else:
                for bucket in span:
                    found.update(filed.get(bucket, ()))
        return sorted(found)
