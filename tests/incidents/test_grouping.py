"""Grouping findings and signals into incidents, and linking incidents by cause."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from kubemedic.checks.findings import Severity
from kubemedic.incidents import grouping
from kubemedic.incidents.model import FindingEpisode, Incident, IncidentKind, Signal, SignalKind
from tests.incidents import builders as b

DAY = timedelta(days=1)


def only(incidents: list[Incident], cause: str) -> Incident:
    found = [incident for incident in incidents if incident.cause == cause]
    assert len(found) == 1, [i.cause for i in incidents]
    return found[0]


def checks_of(incident: Incident) -> set[str]:
    return {episode.check for episode in incident.findings}


def test_the_hog_its_overcommit_the_burst_and_the_evicted_hub_are_one_incident() -> None:
    incidents = grouping.group(b.incident3(), b.hub_evictions(b.T0 + b.minutes(10)))
    assert len(incidents) == 1
    incident = incidents[0]
    assert incident.cause == b.MEMORY_CAUSE
    assert incident.title == (
        "JupyterHub hub evicted: memory overcommit on core pool, Prometheus beside it"
    )
    assert checks_of(incident) == {
        "node-memory-overcommit",
        "memory-hog-neighbour",
        "critical-pod-underrequested",
        "unschedulable-pods",
        "node-scale-burst",
        "evicted",
    }
    assert incident.kind is IncidentKind.INCIDENT
    assert incident.severity is Severity.CRITICAL
    assert set(incident.symptoms) >= {"pod eviction", "pod pending", "node scale-up burst"}
    assert incident.culprits == (b.PROMETHEUS,)
    assert b.HUB in incident.harmed
    assert len(incident.signals) == 3
    # From the pending Dask workers (the autoscaler's trigger) to the last archived eviction
    # (the evicted finding's episode goes on while the Failed pods stay).
    assert incident.start == b.T0 + b.minutes(5)
    assert incident.end == b.T0 + b.minutes(14)
    assert re.fullmatch(r"inc-[0-9a-f]{8}", incident.id)


def test_timeline_is_in_time_order_and_starts_with_the_standing_risk() -> None:
    incident = grouping.group(b.incident3(), b.hub_evictions(b.T0 + b.minutes(10)))[0]
    times = [entry.at for entry in incident.timeline]
    assert times == sorted(times)
    assert incident.timeline[0].kind == "condition"
    evictions = [entry for entry in incident.timeline if entry.kind == "eviction"]
    assert len(evictions) == 1 and evictions[0].count == 3  # one line for the run of three


def test_unrelated_findings_in_the_same_window_stay_separate() -> None:
    episodes = [*b.incident3(), *b.not_ready(b.T0 + b.minutes(8), ["batch-1", "batch-2"])]
    incidents = grouping.group(episodes)
    assert {i.cause for i in incidents} == {
        b.MEMORY_CAUSE,
        "node-not-ready:kubelet-stopped-posting@batch",
    }
    nodes = only(incidents, "node-not-ready:kubelet-stopped-posting@batch")
    assert checks_of(nodes) == {"node-not-ready"}
    assert (
        nodes.title == "batch-1 and batch-2 NotReady: kubelet stopped posting status on batch pool"
    )
    assert not nodes.related  # nothing of its cause is shared with the memory incident


def test_two_days_of_the_same_cause_are_two_incidents_linked_by_it() -> None:
    episodes = [*b.incident3(b.T0), *b.incident3(b.T0 + DAY)]
    incidents = grouping.group(episodes)
    assert [i.cause for i in incidents] == [b.MEMORY_CAUSE, b.MEMORY_CAUSE]
    first, second = incidents
    assert first.id != second.id
    assert second.start - first.start == DAY
    assert [r.id for r in first.related] == [second.id]
    assert [r.id for r in second.related] == [first.id]
    assert first.related[0].reason == "same cause: shared core node pool, Prometheus"


def test_one_long_evicted_episode_with_evictions_on_two_days_is_two_incidents() -> None:
    # The archive's ``evicted`` episode lasts while the Failed pods stay (until PodGC), so the
    # evictions' own times split it.
    long_hog = b.hog(b.T0, last=b.T0 + DAY + b.minutes(60))
    long_evicted = b.evicted(b.T0 + b.minutes(10), last=b.T0 + DAY + b.minutes(60))
    signals = [*b.hub_evictions(b.T0 + b.minutes(10)), *b.hub_evictions(b.T0 + DAY, count=2)]
    for index, item in enumerate(signals):
        signals[index] = Signal(**{**_fields(item), "source_id": str(index)})
    incidents = grouping.group([long_hog, long_evicted], signals)
    assert len(incidents) == 2
    assert [len(i.signals) for i in incidents] == [3, 2]
    assert incidents[1].start == b.T0 + DAY
    assert incidents[0].related[0].id == incidents[1].id


def _fields(item: Signal) -> dict[str, object]:
    return {name: getattr(item, name) for name in Signal.__dataclass_fields__}


def test_standing_conditions_without_harm_are_a_risk() -> None:
    incidents = grouping.group([b.hog(b.T0), b.overcommit(b.T0), b.underrequested_hub(b.T0)])
    assert len(incidents) == 1
    risk = incidents[0]
    assert risk.kind is IncidentKind.RISK
    assert risk.symptoms == ()
    assert risk.title.startswith("Risk: memory overcommit on core pool, Prometheus beside ")
    assert "JupyterHub hub" in risk.title
    assert "critical-pod-underrequested" in checks_of(risk)


def test_the_pin_the_hand_edit_the_storm_and_the_overcommit_are_one_incident() -> None:
    incidents = grouping.group(b.storm(b.T0))
    assert len(incidents) == 1
    incident = incidents[0]
    assert incident.cause == f"pinned-node-name:{b.GATEWAY}"
    assert checks_of(incident) == {
        "out-of-band-edit",
        "pinned-node-name",
        "failed-pod-storm",
        "node-memory-overcommit",
    }
    assert incident.title.startswith("Failed-pod storm of api-gateway: api-gateway pinned")
    assert "by kubectl-edit" in incident.title
    follow_ups = "\n".join(incident.follow_ups)
    assert '"path": "/spec/template/spec/nodeName"' in follow_ups
    assert "Pause the GitOps sync of app api-gateway" in follow_ups
    assert "--field-selector=status.phase=Failed" in follow_ups


def test_a_mass_outage_holds_the_nodes_it_names() -> None:
    nodes = ["batch-1", "batch-2", "workers-1"]
    mass = b.episode(
        "node-not-ready",
        "node-not-ready:mass@cluster",
        obj=b.CLUSTER_REF,
        first=b.T0,
        last=b.T0 + b.minutes(20),
        severity=Severity.CRITICAL,
        evidence={"notReady": 3, "nodesTotal": 6, "nodes": nodes},
    )
    episodes = [mass, *b.not_ready(b.T0, nodes[:2]), *b.not_ready(b.T0, nodes[2:], pool="workers")]
    incidents = grouping.group(episodes)
    assert len(incidents) == 1
    assert incidents[0].title.startswith("3 of 6 nodes NotReady")
    assert any("Pause automatic node repairs" in f for f in incidents[0].follow_ups)


def test_signals_join_only_the_incident_whose_objects_they_name() -> None:
    oom_elsewhere = b.signal(
        SignalKind.OOM_KILL,
        b.T0 + b.minutes(12),
        pod="dask-worker-6bfd56fdcf-x5tqb",
        node="dask-113",
        workload="prod/Deployment/dask-worker",
        source_id="900",
    )
    pressure = b.signal(SignalKind.NODE_PRESSURE, b.T0 + b.minutes(9), node="core-2")
    not_ours = b.signal(SignalKind.NODE_PRESSURE, b.T0 + b.minutes(9), node="batch-1")
    late = b.hub_evictions(b.T0 + b.minutes(200), count=1)
    incident = grouping.group(b.incident3(), [oom_elsewhere, pressure, not_ours, *late])[0]
    assert [s.kind for s in incident.signals] == [SignalKind.NODE_PRESSURE]
    assert incident.signals[0].node == "core-2"


def test_confidence_grows_with_independent_evidence_and_is_capped() -> None:
    bare = grouping.group([b.hog(b.T0), b.evicted(b.T0 + b.minutes(10))])[0]
    more = grouping.group(b.incident3())[0]
    archived = grouping.group(
        b.incident3(),
        [
            *b.hub_evictions(b.T0 + b.minutes(10)),
            b.signal(SignalKind.NODE_PRESSURE, b.T0 + b.minutes(9), node="core-2"),
        ],
    )[0]
    values = [i.suspected_cause.confidence for i in (bare, more, archived)]
    assert values == sorted(values) and len(set(values)) == 3
    assert all(0 < value <= 0.95 for value in values)
    reasons = [reason for _, reason in archived.suspected_cause.basis]
    assert "the memory-hog-neighbour finding states this cause" in reasons
    assert "archived eviction signals agree" in reasons


def test_the_same_cause_in_another_cluster_is_linked_with_its_cluster_named() -> None:
    episodes = [*b.incident3(b.T0), *b.incident3(b.T0 + b.minutes(3), cluster="staging")]
    incidents = grouping.group(episodes)
    assert len(incidents) == 2
    leap = next(i for i in incidents if i.cluster == "leap")
    assert [r.cluster for r in leap.related] == ["staging"]
    assert leap.related[0].reason.startswith("same cause in cluster staging: shared")


def test_follow_ups_carry_the_incidents_numbers() -> None:
    incident = grouping.group(b.incident3(), b.hub_evictions(b.T0 + b.minutes(10)))[0]
    text = "\n".join(incident.follow_ups)
    assert "Move Prometheus off the core pool" in text
    assert "95.7% of core-2's allocatable memory" in text
    assert "(20Gi request, 22Gi limit)" in text
    assert (
        "JupyterHub hub's memory request to its real usage (2200Mi used, 128Mi requested)" in text
    )
    assert "CPU request from 10m to at least 100m" in text
    assert "100 nodes joined in 1m" in text


# -- properties --------------------------------------------------------------------------------

BLOCKS: list[tuple[list[FindingEpisode], list[Signal]]] = [
    (b.incident3(b.T0), b.hub_evictions(b.T0 + b.minutes(10))),
    (b.incident3(b.T0 + DAY), []),
    (b.storm(b.T0 + b.minutes(3)), []),
    (b.not_ready(b.T0 + b.minutes(1), ["batch-1", "batch-2", "batch-3"]), []),
    (b.incident3(b.T0, cluster="staging"), []),
]


def _summary(incidents: list[Incident]) -> list[tuple[str, str, str, tuple[str, ...], int]]:
    return [
        (i.id, i.cause, i.title, tuple(r.id for r in i.related), len(i.findings)) for i in incidents
    ]


@given(st.permutations(range(len(BLOCKS))), st.randoms(use_true_random=False))
def test_incidents_do_not_depend_on_the_order_of_rows(order: list[int], rng: object) -> None:
    episodes = [e for index in order for e in BLOCKS[index][0]]
    signals = [s for index in order for s in BLOCKS[index][1]]
    rng.shuffle(episodes)  # type: ignore[attr-defined]
    rng.shuffle(signals)  # type: ignore[attr-defined]
    expected = grouping.group(
        [e for block in BLOCKS for e in block[0]], [s for block in BLOCKS for s in block[1]]
    )
    assert _summary(grouping.group(episodes, signals)) == _summary(expected)


@given(st.sets(st.integers(min_value=0, max_value=len(BLOCKS) - 1), min_size=1))
def test_an_incidents_id_depends_only_on_its_own_rows(chosen: set[int]) -> None:
    alone = {
        index: {i.id for i in grouping.group(BLOCKS[index][0], BLOCKS[index][1])}
        for index in chosen
    }
    together = grouping.group(
        [e for index in sorted(chosen) for e in BLOCKS[index][0]],
        [s for index in sorted(chosen) for s in BLOCKS[index][1]],
    )
    assert {i.id for i in together} == set().union(*alone.values())


CHECKS = [
    ("evicted", "eviction:memory@{pool}"),
    ("node-memory-overcommit", "memory-overcommit:ns/Deployment/{app}@{pool}"),
    ("memory-hog-neighbour", "memory-hog:ns/Deployment/{app}@{pool}"),
    ("oom-killed", "oom:ns/Deployment/{app}/main"),
    ("unschedulable-pods", "unschedulable:insufficient-cpu@ns/Deployment/{app}"),
    ("node-not-ready", "node-not-ready:runtime-not-ready@{pool}"),
    ("critical-pod-underrequested", "critical-underrequested:ns/Deployment/{app}"),
]


@st.composite
def episodes(draw: st.DrawFn) -> FindingEpisode:
    check, template = draw(st.sampled_from(CHECKS))
    pool = draw(st.sampled_from(["core-pool", "user"]))
    app = draw(st.sampled_from(["hub", "prom"]))
    start = b.T0 + timedelta(minutes=draw(st.integers(0, 3000)))
    length = timedelta(minutes=draw(st.integers(0, 120)))
    node = f"{pool}-{draw(st.integers(1, 2))}"
    return b.episode(
        check,
        template.format(pool=pool, app=app),
        obj=b.node_ref(node) if "node" in check else b.deployment("ns", app),
        first=start,
        last=start + length,
        evidence={"node": node, "nodePool": pool},
    )


@given(st.lists(episodes(), max_size=25))
def test_every_finding_lands_in_an_incident_with_a_unique_id(found: list[FindingEpisode]) -> None:
    incidents = grouping.group(found)
    assert len({i.id for i in incidents}) == len(incidents)
    placed = {e.fingerprint + str(e.first_seen) for i in incidents for e in i.findings}
    assert placed == {e.fingerprint + str(e.first_seen) for e in found}
    for incident in incidents:
        assert incident.start <= incident.end
        assert 0 <= incident.suspected_cause.confidence <= 0.95
        assert incident.title
    assert grouping.group(list(reversed(found))) == incidents
