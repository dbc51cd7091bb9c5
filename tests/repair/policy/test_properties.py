"""Properties of the repair policy over random clusters and many rounds.

Each run builds a random cluster (pools, zones, Ready statuses and times, the agent's
heartbeats, quarantine labels and opt-out annotations, Cluster API Machines, repairs in flight,
a ledger and a history of transitions, settings anywhere in their valid ranges, dry run or not)
and plays rounds: decide, check every rule of docs/repair.md (tests/repair/policy/invariants.py),
carry out the acts (each failing at random) and fold their outcomes, let faults happen, and move
the clock by the plan's ``wake_at`` or a random tick. bench/policy_chaos.py plays the same
chaos with 500-node clusters and many seeds.
"""

from __future__ import annotations

import math
import random
from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic.repair.policy import brakes
from kubemedic.repair.policy.records import NodeObservation
from kubemedic.repair.policy.settings import CorrelationSettings

from . import chaos
from .invariants import in_correlated_groups

QUICK = settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@QUICK
@given(rng=st.randoms(use_true_random=False), nodes=st.integers(1, 30))
def test_every_round_of_a_small_cluster_keeps_the_rules(rng: random.Random, nodes: int) -> None:
    run = chaos.chaos(rng, nodes=nodes, rounds=10)
    assert not run.violations, "\n".join(run.violations[:5])


@settings(max_examples=2, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_round_of_a_500_node_cluster_keeps_the_rules(seed: int) -> None:
    run = chaos.chaos(random.Random(seed), nodes=500, rounds=4)
    assert not run.violations, f"seed {seed}:\n" + "\n".join(run.violations[:5])


# -- correlated failures against the rule by brute force --------------------------------------

_TIMES = st.lists(
    st.tuples(st.sampled_from(["a", "b", "c", ""]), st.integers(0, 900)), min_size=0, max_size=40
)


@settings(max_examples=150, deadline=None)
@given(
    times=_TIMES,
    healthy=st.integers(0, 20),
    window=st.integers(10, 300),
    wide=st.integers(2, 12),
    percent=st.integers(1, 100),
    least=st.integers(2, 6),
)
def test_every_node_of_every_correlated_window_is_in_a_group(
    times: list[tuple[str, int]], healthy: int, window: int, wide: int, percent: int, least: int
) -> None:
    """Whatever the times: the groups hold exactly the nodes the rule names (every window,
    cluster-wide or of one zone), and a cluster-wide group is found whenever one exists."""
    correlation = CorrelationSettings(
        window=timedelta(seconds=window),
        nodes=wide,
        zone_percent=float(percent),
        zone_min_nodes=least,
    )
    down = [chaos.Host(f"d{i}", "p", zone, chaos.T0) for i, (zone, _) in enumerate(times)]
    up = [chaos.Host(f"u{i}", "p", "abc"[i % 3], chaos.T0) for i in range(healthy)]
    for host, (_, offset) in zip(down, times, strict=True):
        host.ready, host.since = "Unknown", chaos.T0 + timedelta(seconds=offset)
    now = chaos.T0 + timedelta(hours=1)
    nodes: list[NodeObservation] = [h.observe(now, power_known=False) for h in down + up]
    observed = chaos.ClusterState(now=now, nodes=tuple(nodes))
    since = {h.name: h.since for h in down}

    groups = brakes.correlated(nodes, since, correlation)
    cluster_wide, zone_held = in_correlated_groups(observed, correlation)
    assert cluster_wide == {n for g in groups if not g.zone for n in g.nodes}
    assert zone_held | cluster_wide == {n for g in groups for n in g.nodes}
    for group in groups:
        zone_size = sum(1 for n in nodes if n.zone == group.zone) if group.zone else len(nodes)
        need = max(least, math.ceil(zone_size * percent / 100)) if group.zone else correlation.nodes
        assert len(group.nodes) >= need
    assert len({g.key for g in groups}) == len(groups)
