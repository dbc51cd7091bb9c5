"""The indexed grouping gives exactly the incidents of the rules applied pair by pair
(``tests/incidents/pairwise.py``), on random findings and signals."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.incidents import grouping, linking
from kubemedic.incidents.model import FindingEpisode, Signal, SignalKind
from tests.incidents import builders as b
from tests.incidents import pairwise

NODES = ["core-2", "core-pool-1", "user-1", "workers-2", "batch-1", "batch-2"]
WORKLOADS = [
    b.HUB,
    b.PROMETHEUS,
    b.GATEWAY,
    "ns/Deployment/hub",
    "ns/Deployment/prom",
    "prod/Deployment/dask-worker",
    "",
]
CHECKS = [
    ("evicted", "eviction:memory@{pool}"),
    ("node-memory-overcommit", "memory-overcommit:ns/Deployment/{app}@{pool}"),
    ("memory-hog-neighbour", "memory-hog:ns/Deployment/{app}@{pool}"),
    ("oom-killed", "oom:ns/Deployment/{app}/main"),
    ("oom-killed", "oom:node@{pool}"),
    ("unschedulable-pods", "unschedulable:insufficient-cpu@ns/Deployment/{app}"),
    ("node-not-ready", "node-not-ready:runtime-not-ready@{pool}"),
    ("critical-pod-underrequested", "critical-underrequested:ns/Deployment/{app}"),
    ("probe-restarts", "probe-restarts:ns/Deployment/{app}"),
]
BLOCKS = [
    b.incident3,
    lambda at: b.incident3(at, cluster="staging"),
    b.storm,
    lambda at: b.not_ready(at, ["batch-1", "batch-2"]),
    lambda at: [b.evicted(at, last=at + timedelta(days=2))],
    lambda at: [b.overcommit(at, last=at + timedelta(days=5))],
    lambda at: [b.burst(at), b.dask_pending(at + b.minutes(1))],
    lambda at: [b.hog(at), b.underrequested_hub(at)],
]


def _at(draw: st.DrawFn, most: int = 3000) -> timedelta:
    return timedelta(minutes=draw(st.integers(0, most)), seconds=draw(st.sampled_from([0, 30])))


@st.composite
def episodes(draw: st.DrawFn) -> list[FindingEpisode]:
    start = b.T0 + _at(draw)
    if draw(st.booleans()):
        return draw(st.sampled_from(BLOCKS))(start)
    check, template = draw(st.sampled_from(CHECKS))
    pool = draw(st.sampled_from(["core-pool", "user", "batch"]))
    app = draw(st.sampled_from(["hub", "prom"]))
    node = draw(st.sampled_from(NODES))
    evidence = {"node": node, "nodePool": pool, "resource": "memory"}
    if draw(st.booleans()):
        evidence["owner"] = f"Deployment ns/{app}"
        evidence["pods"] = [f"ns/{app}-5f45bffd5-x{draw(st.integers(0, 3))}"]
    return [
        b.episode(
            check,
            template.format(pool=pool, app=app),
            obj=b.node_ref(node) if "node" in check else b.deployment("ns", app),
            first=start,
            last=start + timedelta(minutes=draw(st.integers(0, 240))),
            evidence=evidence,
            cluster=draw(st.sampled_from([b.CLUSTER, b.CLUSTER, "staging"])),
        )
    ]


@st.composite
def signals(draw: st.DrawFn) -> Signal:
    workload = draw(st.sampled_from(WORKLOADS))
    name = workload.rsplit("/", 1)[-1] if workload else "lone"
    found = b.signal(
        draw(st.sampled_from(list(SignalKind))),
        b.T0 + _at(draw),
        pod=draw(st.sampled_from(["", f"{name}-5f45bffd5-x{draw(st.integers(0, 3))}"])),
        namespace=workload.split("/", 1)[0] if workload else "prod",
        node=draw(st.sampled_from(["", *NODES])),
        workload=workload,
        source_id=str(draw(st.integers(0, 10**6))),
        cluster=draw(st.sampled_from([b.CLUSTER, b.CLUSTER, "staging"])),
    )
    if draw(st.booleans()):
        found = replace(found, until=found.at + timedelta(minutes=draw(st.integers(0, 90))))
    return found


@settings(max_examples=150, deadline=None)
@given(
    st.lists(episodes(), max_size=30),
    st.lists(signals(), max_size=60),
    st.sampled_from([timedelta(0), timedelta(minutes=5), grouping.DEFAULT_WINDOW]),
)
def test_indexed_grouping_equals_the_pairwise_rules(
    blocks: list[list[FindingEpisode]], found: list[Signal], window: timedelta
) -> None:
    found_episodes = [episode for block in blocks for episode in block]
    expected = pairwise.group(found_episodes, found, window=window)
    assert grouping.group(found_episodes, found, window=window) == expected


@settings(max_examples=50, deadline=None)
@given(st.lists(episodes(), max_size=30), st.lists(signals(), max_size=40))
def test_links_asked_one_by_one_equal_the_linked_list(
    blocks: list[list[FindingEpisode]], found: list[Signal]
) -> None:
    found_episodes = [episode for block in blocks for episode in block]
    unlinked = grouping.group(found_episodes, found, linked=False)
    assert all(not incident.related for incident in unlinked)
    linked = grouping.group(found_episodes, found)
    links = linking.Links(unlinked)
    for index, incident in enumerate(linked):
        assert links.related(index) == incident.related
        assert links.count(index) == len(incident.related)
    assert pairwise.link(unlinked) == linked
