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


def _at(draw: st.DrawFn, most: int = 900) -> timedelta:
    """A time in the first fifteen hours: close enough for windows to meet, far enough apart
    for separate incidents."""
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


KINDS = {
    "evicted": SignalKind.EVICTION,
    "oom-killed": SignalKind.OOM_KILL,
    "unschedulable-pods": SignalKind.POD_PENDING,
    "node-not-ready": SignalKind.NODE_NOT_READY,
    "failed-pod-storm": SignalKind.FAILED_POD,
}


@st.composite
def echo(draw: st.DrawFn, episode: FindingEpisode) -> Signal:
    """A signal about what ``episode`` names (its node, its workload), near its span: the
    signals that do join incidents, which random ones rarely are."""
    node = str(episode.evidence.get("node") or draw(st.sampled_from(NODES)))
    kind = KINDS.get(episode.check, SignalKind.EVENT)
    if episode.cause.startswith("oom:node") or draw(st.integers(0, 5)) == 0:
        kind = draw(st.sampled_from([SignalKind.NODE_OOM, SignalKind.NODE_PRESSURE, kind]))
    workload = pod = ""
    if episode.object.kind != "Node" and episode.object.namespace:
        workload = f"{episode.object.namespace}/Deployment/{episode.object.name}"
        pod = f"{episode.object.name}-5f45bffd5-x{draw(st.integers(0, 3))}"
    at = episode.first_seen + timedelta(minutes=draw(st.integers(-40, 120)))
    return b.signal(
        kind,
        at,
        pod=pod,
        namespace=episode.object.namespace or "prod",
        node=draw(st.sampled_from([node, node, ""])),
        workload=draw(st.sampled_from([workload, workload, ""])),  # "": known by its pod alone
        source_id=str(draw(st.integers(0, 10**6))),
        cluster=episode.cluster,
    )


@st.composite
def archives(draw: st.DrawFn) -> tuple[list[FindingEpisode], list[Signal]]:
    found = [e for block in draw(st.lists(episodes(), max_size=30)) for e in block]
    near = [draw(echo(e)) for e in found for _ in range(draw(st.integers(0, 2)))]
    return found, [*near, *draw(st.lists(signals(), max_size=30))]


@settings(max_examples=150, deadline=None)
@given(
    archives(),
    st.sampled_from([timedelta(0), timedelta(minutes=5), grouping.DEFAULT_WINDOW]),
)
def test_indexed_grouping_equals_the_pairwise_rules(
    archive: tuple[list[FindingEpisode], list[Signal]], window: timedelta
) -> None:
    found_episodes, found = archive
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
