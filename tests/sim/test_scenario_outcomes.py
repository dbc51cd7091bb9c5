"""The bundled scenarios, played on a whole simulated cluster, end the way their incidents did.

Each story runs once per module (a fixture) while listeners record what a watcher of the API
would have seen; the tests then check the outcome, and that ``kubemedic scan`` of the cluster at
the end finds the incident's risks (or, for ``healthy``, nothing at warning or above).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kubemedic import checks
from kubemedic.checks.findings import Severity
from kubemedic.sim.apiserver import snapshotting
from kubemedic.sim.cluster import assembly as cluster
from kubemedic.sim.machinery.objects import Change
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios import timeline
from kubemedic.sim.scenarios.timeline import ScenarioRun
from kubemedic.snapshot import loading


@dataclass
class Watched:
    """What a watcher saw during a run."""

    run: ScenarioRun
    events: list[tuple[datetime, dict[str, Any]]] = field(default_factory=list)
    scheduling: set[str] = field(default_factory=set)
    ready: dict[str, list[str]] = field(default_factory=dict)

    def on_event(self, change: Change) -> None:
        if change.type == "ADDED":
            self.events.append((self.run.sim.now(), change.obj))
        if change.type != "DELETED" and change.obj.get("reason") == "FailedScheduling":
            self.scheduling.add(str(change.obj.get("message") or change.obj.get("note") or ""))

    def on_pod(self, change: Change) -> None:
        if change.type == "DELETED":
            return
        for condition in change.obj.get("status", {}).get("conditions") or ():
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
                self.scheduling.add(str(condition.get("message", "")))

    def on_node(self, change: Change) -> None:
        if change.type == "DELETED":
            return
        name = change.obj["metadata"]["name"]
        status = next(
            (
                c["status"]
                for c in change.obj["status"].get("conditions", ())
                if c["type"] == "Ready"
            ),
            "",
        )
        seen = self.ready.setdefault(name, [])
        if not seen or seen[-1] != status:
            seen.append(status)


def play(name: str, *, only: tuple[str, ...] | None = None) -> Watched:
    scenario = scenarios.load(name)
    built = cluster.build(
        start=scenario.start,
        seed=scenario.seed,
        event_ttl=timedelta(seconds=scenario.cluster.event_ttl),
        only=only,
    )
    run = timeline.start(scenario, cluster=built)
    watched = Watched(run)
    run.sim.watch("events", watched.on_event)
    run.sim.watch("pods", watched.on_pod)
    run.sim.watch("nodes", watched.on_node)
    return watched


def scan(run: ScenarioRun, tmp: Path) -> list[checks.Finding]:
    path = tmp / "snapshot.json"
    snapshotting.write_snapshot(path, run.sim.server)
    return checks.run_checks(loading.load_snapshot(path).view())


def found(findings: list[checks.Finding], *, at_least: Severity = Severity.WARNING) -> set[str]:
    return {f.check for f in findings if f.severity >= at_least}


def pods(run: ScenarioRun, namespace: str) -> list[dict[str, Any]]:
    return list(run.sim.objects("pods", namespace=namespace))


def node(run: ScenarioRun, name: str) -> dict[str, Any]:
    body = run.sim.get("nodes", "", name)
    assert body is not None, name
    return body


def ready(body: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in body["status"]["conditions"] if c["type"] == "Ready")


# gitops-nodename-storm ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def storm() -> Iterator[Watched]:
    watched = play("gitops-nodename-storm")
    # The applier restores replicas 12 at 5m; four minutes of storm are thousands of pods.
    watched.run.run(until=watched.run.origin + timedelta(minutes=9))
    yield watched


def test_storm_leaves_thousands_of_out_of_memory_pods_within_minutes(storm: Watched) -> None:
    run = storm.run
    failed = [p for p in pods(run, "gateway") if p["status"].get("phase") == "Failed"]
    assert len(failed) >= 2000
    assert {p["status"].get("reason") for p in failed} == {"OutOfmemory"}
    assert {p["spec"]["nodeName"] for p in failed} == {"workers-2"}
    assert {p["metadata"]["ownerReferences"][0]["kind"] for p in failed} == {"ReplicaSet"}
    message = failed[0]["status"]["message"]
    assert re.fullmatch(
        r"Pod was rejected: Node didn't have enough resource: memory, requested: 838860800, "
        r"used: \d+, capacity: \d+",
        message,
    ), message
    running = [p for p in pods(run, "gateway") if p["status"].get("phase") == "Running"]
    assert len(running) == 9  # what fits in ~7.6 GiB at 800Mi each
    assert run.failures == []


def test_storm_starts_when_the_applier_restores_the_replicas(storm: Watched) -> None:
    run = storm.run
    rejected = [at for at, e in storm.events if e.get("reason") == "OutOfmemory"]
    assert rejected
    assert run.origin + timedelta(minutes=5) <= min(rejected) < run.origin + timedelta(minutes=6)


def test_storm_deployment_records_who_wrote_what(storm: Watched) -> None:
    deployment = storm.run.sim.get("deployments.apps", "gateway", "api-gateway")
    assert deployment is not None
    entries = {e["manager"]: e for e in deployment["metadata"]["managedFields"]}
    assert entries["argocd-controller"]["operation"] == "Apply"
    assert "f:replicas" in entries["argocd-controller"]["fieldsV1"]["f:spec"]
    assert entries["kubectl-edit"]["operation"] == "Update"
    assert entries["kubectl-edit"]["fieldsV1"] == {
        "f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}
    }
    assert deployment["spec"]["replicas"] == 12


def test_storm_is_what_kubemedic_finds(storm: Watched, tmp_path: Path) -> None:
    findings = found(scan(storm.run, tmp_path), at_least=Severity.CRITICAL)
    assert {"failed-pod-storm", "out-of-band-edit", "pinned-node-name"} <= findings


# node-failures ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def failures() -> Iterator[Watched]:
    watched = play("node-failures")
    watched.run.run(until=watched.run.origin + timedelta(minutes=20))
    yield watched


def test_a_stopped_kubelet_leaves_its_node_unknown_and_tainted(failures: Watched) -> None:
    body = node(failures.run, "workers-1")
    assert (ready(body)["status"], ready(body)["reason"]) == ("Unknown", "NodeStatusUnknown")
    taints = {(t["key"], t["effect"]) for t in body["spec"].get("taints", ())}
    assert ("node.kubernetes.io/unreachable", "NoExecute") in taints


def test_a_hung_runtime_makes_the_kubelet_report_not_ready(failures: Watched) -> None:
    condition = ready(node(failures.run, "workers-2"))
    assert condition["status"] == "False"
    assert "container runtime is down" in condition["message"]


def test_a_reboot_cures_a_transient_misconfiguration_only(failures: Watched) -> None:
    run = failures.run
    assert ready(node(run, "workers-3"))["status"] == "True"
    assert ready(node(run, "workers-4"))["status"] == "False"
    # NotReady, Unknown while it reboots, NotReady until the CNI is up again, then Ready.
    assert failures.ready["workers-3"] == ["True", "False", "Unknown", "False", "True"]
    hosts = run.cluster.hosts
    assert hosts.get("workers-3").reboots == hosts.get("workers-4").reboots == 1
    for name in ("workers-3", "workers-4"):
        assert node(run, name)["status"]["nodeInfo"]["bootID"] == hosts.get(name).boot_id


def test_a_flapping_node_goes_unknown_and_back_again(failures: Watched) -> None:
    history = failures.ready["workers-5"]
    assert history[:5] == ["True", "Unknown", "True", "Unknown", "True"]


def test_forty_percent_of_a_zone_goes_unknown_at_once(failures: Watched) -> None:
    run = failures.run
    batch = [node(run, name) for name in run.pool_nodes("batch")]
    statuses = Counter(ready(body)["status"] for body in batch)
    assert statuses == {"True": 6, "Unknown": 4}
    assert ready(node(run, "workers-6"))["status"] == "True"


def test_node_failures_are_what_kubemedic_finds(failures: Watched, tmp_path: Path) -> None:
    assert "node-not-ready" in found(scan(failures.run, tmp_path), at_least=Severity.CRITICAL)
    assert failures.run.failures == []  # every action happened as written


# core-node-prometheus -----------------------------------------------------------------------

# The story has no Cluster API node groups, so the autoscaler could only record
# NotTriggerScaleUp for the pending workers: leaving it out halves the run.
CORE_COMPONENTS = tuple(c for c in cluster.COMPONENTS if c != "autoscaler")
DASK_REASONS = (
    "node(s) didn't match Pod's node affinity/selector",
    "Insufficient cpu",
    "Insufficient memory",
    "node(s) had untolerated taint {node.kubernetes.io/network-unavailable: }",
    "node(s) had untolerated taint {hub.jupyter.org_dedicated: user}",
    "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
)


@dataclass
class Core:
    watched: Watched
    at_half_hour: list[str]
    findings: list[checks.Finding]


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Core]:
    watched = play("core-node-prometheus", only=CORE_COMPONENTS)
    run = watched.run
    run.run(until=run.origin + timedelta(minutes=29))
    at_half_hour = [str(e.get("reason")) for e in run.sim.objects("events")]
    run.run()
    findings = scan(run, tmp_path_factory.mktemp("core"))
    yield Core(watched, at_half_hour, findings)


def histogram(message: str) -> dict[str, int]:
    """``0/N nodes are available: <count> <reason>, ...`` as {reason: count}."""
    head = message.split(". preemption: ", 1)[0].rstrip(".")
    body = head.split(": ", 1)[1]
    return {
        reason: int(count) for count, reason in (part.split(" ", 1) for part in body.split(", "))
    }


@pytest.mark.timeout(300)
def test_dask_workers_fail_scheduling_with_the_incidents_shape(core: Core) -> None:
    shaped = [
        m
        for m in core.watched.scheduling
        if m.startswith("0/126 nodes are available: ")
        and all(reason in histogram(m) for reason in DASK_REASONS)
    ]
    assert shaped, sorted(core.watched.scheduling)[:5]
    message = shaped[0]
    parts = message.split(". preemption: ", 1)[0].split(": ", 1)[1].split(", ")
    assert parts == sorted(parts)  # sorted as strings, as the scheduler sorts them
    assert " preemption: 0/126 nodes are available: " in message
    assert (
        histogram(message)["node(s) had untolerated taint {hub.jupyter.org_dedicated: user}"] == 9
    )


@pytest.mark.timeout(300)
def test_the_hub_is_evicted_by_memory_pressure_and_prometheus_is_not(core: Core) -> None:
    evictions = [e for _, e in core.watched.events if e.get("reason") == "Evicted"]
    assert evictions
    assert {e["involvedObject"]["name"].rsplit("-", 2)[0] for e in evictions} == {"hub"}
    assert all(
        "The node was low on resource: memory." in e["message"]
        and "Container hub was using" in e["message"]
        for e in evictions
    )
    evicted = [p for p in pods(core.watched.run, "prod") if p["status"].get("reason") == "Evicted"]
    assert evicted and {p["spec"]["nodeName"] for p in evicted} == {"core-2"}
    prometheus = pods(core.watched.run, "support")
    assert not [p for p in prometheus if p["status"].get("phase") == "Failed"]
    assert "EvictionThresholdMet" in core.at_half_hour


@pytest.mark.timeout(300)
def test_workers_are_oom_killed_while_the_story_runs(core: Core) -> None:
    assert "SystemOOM" in core.at_half_hour


@pytest.mark.timeout(300)
def test_the_oom_and_eviction_events_are_gone_an_hour_later(core: Core) -> None:
    run = core.watched.run
    telling = [
        (at, e)
        for at, e in core.watched.events
        if "OOM" in str(e.get("reason")) + str(e.get("message")) or e.get("reason") == "Evicted"
    ]
    assert telling
    last = max(at for at, _ in telling)
    assert run.sim.now() - last > timedelta(minutes=61)
    left = [
        e
        for e in run.sim.objects("events")
        if "OOM" in str(e.get("reason")) + str(e.get("message")) or e.get("reason") == "Evicted"
    ]
    assert left == []
    hub = [p for p in pods(run, "prod") if p["metadata"]["name"].startswith("hub-")]
    assert [p["status"]["phase"] for p in hub].count("Running") == 1


@pytest.mark.timeout(300)
def test_core_node_risks_are_what_kubemedic_finds(core: Core) -> None:
    assert core.watched.run.failures == []  # every action happened as written
    critical = found(core.findings, at_least=Severity.CRITICAL)
    assert {
        "node-memory-overcommit",
        "memory-hog-neighbour",
        "critical-pod-underrequested",
        "evicted",
    } <= critical
    overcommit = next(f for f in core.findings if f.check == "node-memory-overcommit")
    assert overcommit.evidence["node"] == "core-2"
    assert round(overcommit.evidence["requestsPercent"]) == 93
    assert round(overcommit.evidence["limitsPercent"]) == 124


# healthy --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def healthy() -> Iterator[Watched]:
    watched = play("healthy")
    watched.run.run()
    yield watched


def test_healthy_cluster_runs_every_pod_and_warns_of_nothing(healthy: Watched) -> None:
    run = healthy.run
    everything = list(run.sim.objects("pods"))
    assert len(everything) >= 30
    assert {p["status"].get("phase") for p in everything} == {"Running"}
    assert not [e for _, e in healthy.events if e.get("type") == "Warning"]
    api = run.sim.get("deployments.apps", "shop", "api")
    assert api is not None and api["status"].get("availableReplicas") == 9
    assert run.failures == []  # every action happened as written


def test_healthy_cluster_is_clean_for_kubemedic(healthy: Watched, tmp_path: Path) -> None:
    assert found(scan(healthy.run, tmp_path)) == set()
