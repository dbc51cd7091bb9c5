"""Seeded chaos (kubemedic.chaos): random node faults on a simulated cluster, repaired in process,
every invariant checked after every round. A few small seeds here; bench/repair.py runs many
seeds on 500 nodes and prints the figures."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from kubemedic.chaos import ChaosOptions, play

#: A simulated hour of a 60-node cluster: about 20 s each on a 2-core machine.
pytestmark = pytest.mark.timeout(600)


@pytest.mark.parametrize("seed", [1, 2])
def test_seeded_chaos_keeps_every_invariant(seed: int) -> None:
    options = ChaosOptions(seed=seed, nodes=60, pools=3, faults=4, duration=timedelta(minutes=60))
    report = asyncio.run(play(options))
    assert report.violations == []
    # The faults happened and the controller answered them: something was repaired, the
    # flapping node was quarantined, and the first action followed each threshold at once
    # (the policy wakes exactly when a threshold passes).
    assert report.outcomes["quarantined"] >= 1, report.outcomes
    assert report.outcomes["repaired"] + report.outcomes["replaced"] >= 1, report.outcomes
    assert len(report.repaired) + len(report.held) >= 2, report
    assert report.latencies and max(report.latencies) <= 1.0, report.latencies
