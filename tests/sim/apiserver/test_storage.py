"""The store's key order survives any interleaving of creates, deletes and re-creates."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from kubemedic.sim.apiserver.storage import Store

NAMES = st.sampled_from([("a", "x"), ("a", "y"), ("b", "x"), ("", "n1"), ("", "n2"), ("c", "z")])


@given(st.lists(st.tuples(st.booleans(), NAMES), max_size=60), st.randoms())
def test_scan_yields_every_live_key_once_in_order(
    steps: list[tuple[bool, tuple[str, str]]], rng: random.Random
) -> None:
    store = Store(wall=lambda: 0.0)
    live: set[tuple[str, str]] = set()
    for put, key in steps:
        if put:
            store.put("pods", key, {"metadata": {"name": key[1]}}, event="ADDED")
            live.add(key)
        else:
            store.remove("pods", key)
            live.discard(key)
        if rng.random() < 0.3:  # reads in between build and rebuild the sorted list
            assert [k for k, _ in store.scan("pods")] == sorted(live)
    assert [k for k, _ in store.scan("pods")] == sorted(live)
    for namespace in ("a", "b", ""):
        assert [k for k, _ in store.scan("pods", namespace=namespace)] == sorted(
            k for k in live if k[0] == namespace
        )
