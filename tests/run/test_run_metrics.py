"""The run's metrics fed by hand (scans, repair and breaker rounds, archive writes, reflectors
over two leadership terms), holds counted by the policy's brakes, and the daemon's
probes: ready as a standby, not ready while the leader's caches list."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from prometheus_client import CollectorRegistry

from kubemedic.breaker import controller as breaking
from kubemedic.breaker.executing import Outcome as BreakerOutcome
from kubemedic.breaker.policy import BreakerAction, BreakerState, DecisionKind
from kubemedic.breaker.policy.records import Decision as BreakerDecision
from kubemedic.breaker.policy.records import Plan as BreakerPlan
from kubemedic.checks.findings import Finding, Severity
from kubemedic.kube import kinds
from kubemedic.kube.reflector import Reflector
from kubemedic.model.objects import ObjectRef
from kubemedic.repair import controller as repairing
from kubemedic.repair.policy.records import (
    Action,
    Brake,
    Decision,
    Kind,
    NodeState,
    Outcome,
    Plan,
)
from kubemedic.run.daemon import Daemon, DaemonOptions
from kubemedic.run.metrics import BRAKES, RunMetrics
from kubemedic.store.writer import WriteStats

AT = datetime(2026, 1, 1, tzinfo=UTC)


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def finding(check: str, severity: Severity, name: str) -> Finding:
    return Finding(check, severity, ObjectRef("Node", name), "m", "c", AT, AT)


def test_a_scan_replaces_the_findings_and_zeroes_the_checks_that_found_nothing() -> None:
    metrics = RunMetrics()
    r = metrics.registry
    metrics.scanned(
        ["oom-killed", "node-not-ready"],
        [
            finding("node-not-ready", Severity.CRITICAL, "a"),
            finding("node-not-ready", Severity.CRITICAL, "b"),
        ],
        AT.timestamp(),
    )
    assert sample(r, "kubemedic_findings", check="node-not-ready", severity="critical") == 2
    assert sample(r, "kubemedic_findings", check="node-not-ready", severity="info") == 0
    assert sample(r, "kubemedic_findings", check="oom-killed", severity="warning") == 0
    metrics.scanned(["oom-killed", "node-not-ready"], [], AT.timestamp() + 60)
    assert sample(r, "kubemedic_findings", check="node-not-ready", severity="critical") == 0
    assert sample(r, "kubemedic_scans_total") == 2
    assert sample(r, "kubemedic_last_scan_timestamp_seconds") == AT.timestamp() + 60


def test_archive_writes_count_rows_by_table() -> None:
    metrics = RunMetrics()
    metrics.written(WriteStats(events=3, transitions=2, samples=5, checkpoints=1), at=10.0)
    metrics.written(WriteStats(events=1), at=11.0)
    metrics.findings_written(4)
    r = metrics.registry
    assert sample(r, "kubemedic_archive_rows_total", table="events") == 4
    assert sample(r, "kubemedic_archive_rows_total", table="node_transitions") == 2
    assert sample(r, "kubemedic_archive_rows_total", table="metric_samples") == 5
    assert sample(r, "kubemedic_archive_rows_total", table="findings") == 4
    assert sample(r, "kubemedic_archive_rows_total", table="terminations") is None
    assert sample(r, "kubemedic_archive_writes_total") == 2
    assert sample(r, "kubemedic_archive_last_write_timestamp_seconds") == 11.0
    assert sample(r, "kubemedic_archive_lag_seconds") == 0  # no recorder: nothing pending


HELD_BY_ZONE = (
    "repair of batch-c-1 held (NotReady): correlated failure in zone zone-c since "
    "2026-01-01T00:05:00Z: a control-plane, network or zone fault, not a node fault"
)


def test_the_brake_labels_stay_those_the_alerts_and_the_dashboard_use() -> None:
    assert BRAKES == (
        "correlated",
        "max-unhealthy",
        "max-in-flight",
        "paused",
        "quarantined",
        "do-not-repair",
        "other",
    )


def test_a_repair_round_sets_node_states_and_counts_announced_decisions() -> None:
    metrics = RunMetrics()
    hold = Decision(
        Kind.HOLD, "batch-c-1", "KubemedicRepairHeld", HELD_BY_ZONE, key="h", brake=Brake.CORRELATED
    )
    blocked = Decision(Kind.HOLD, "w-4", "KubemedicRepairDrainBlocked", "maxInFlight", key="b")
    reboot = Decision(Kind.ACT, "w-1", "KubemedicRepairReboot", "reboot", action=Action.REBOOT)
    states = (
        NodeState("batch-c-1", "held", "", HELD_BY_ZONE, Brake.CORRELATED),
        NodeState("batch-c-2", "held", "", HELD_BY_ZONE, Brake.CORRELATED),
        NodeState("w-1", "repairing", "reboot"),
        NodeState("w-4", "held", "drain", "the drain has not finished after 30m"),
        NodeState("w-2", "healthy"),
        NodeState("w-3", "quarantined", "quarantine", "flapping"),
    )
    done = repairing.Round(
        AT,
        Plan(decisions=(hold, blocked, reboot), repairs={}, states=states),
        outcomes=[(reboot, Outcome(Action.REBOOT, False, "nova said no"))],
        announced=[hold, blocked, reboot],
    )
    metrics.repair_round(done)
    r = metrics.registry
    assert sample(r, "kubemedic_nodes", state="held") == 3
    assert sample(r, "kubemedic_nodes", state="repairing") == 1
    assert sample(r, "kubemedic_nodes", state="quarantined") == 1
    assert sample(r, "kubemedic_nodes", state="unhealthy") == 0
    assert sample(r, "kubemedic_repair_held_nodes", brake="correlated") == 2
    assert sample(r, "kubemedic_repair_held_nodes", brake="other") == 1
    assert sample(r, "kubemedic_repair_held_nodes", brake="max-in-flight") == 0
    assert sample(r, "kubemedic_repair_holds_total", brake="correlated") == 1
    # By the brake the policy named, not by the words of the message.
    assert sample(r, "kubemedic_repair_holds_total", brake="other") == 1
    assert sample(r, "kubemedic_repair_holds_total", brake="max-in-flight") is None
    assert (
        sample(r, "kubemedic_repair_decisions_total", kind="hold", reason="KubemedicRepairHeld")
        == 1
    )
    assert sample(r, "kubemedic_repair_actions_total", action="reboot", result="failed") == 1
    # The next round: the zone is back, nobody held.
    metrics.repair_round(repairing.Round(AT, Plan((), {}, states=(NodeState("w-2", "healthy"),))))
    assert sample(r, "kubemedic_nodes", state="held") == 0
    assert sample(r, "kubemedic_repair_held_nodes", brake="correlated") == 0
    assert sample(r, "kubemedic_repair_holds_total", brake="correlated") == 1


def test_a_breaker_round_sets_storms_and_counts_decisions_and_reverts() -> None:
    metrics = RunMetrics()
    owner = ObjectRef("Deployment", "web", "shop", "apps/v1")
    storm = BreakerDecision(DecisionKind.ALERT, owner, "KubemedicBreakerStorm", "storm", "s")
    revert = BreakerDecision(
        DecisionKind.ACT,
        owner,
        "KubemedicBreakerRevertOutOfBand",
        "revert",
        "r",
        action=BreakerAction.REVERT_OUT_OF_BAND,
    )
    done = breaking.Round(
        AT,
        BreakerPlan((storm, revert), BreakerState()),
        outcomes=[(revert, BreakerOutcome("done"))],
    )
    metrics.breaker_round(done, storms=1)
    r = metrics.registry
    assert sample(r, "kubemedic_breaker_storms") == 1
    assert (
        sample(r, "kubemedic_breaker_decisions_total", kind="alert", reason="KubemedicBreakerStorm")
        == 1
    )
    assert (
        sample(r, "kubemedic_breaker_actions_total", action="revert-out-of-band", result="done")
        == 1
    )


def test_reflector_counters_are_carried_over_leadership_terms() -> None:
    metrics = RunMetrics()
    r = metrics.registry
    first = Reflector(cast(Any, None), kinds.PODS)
    first.stats.lists, first.stats.relists, first.stats.watches = 3, 2, 7
    first.stats.errors["410"] = 2
    first.synced.set()
    metrics.watches.watching([first])
    assert sample(r, "kubemedic_watch_restarts_total", resource="v1/pods") == 4
    assert sample(r, "kubemedic_watch_relists_total", resource="v1/pods") == 2
    assert sample(r, "kubemedic_watch_errors_total", resource="v1/pods", error="410") == 2
    assert sample(r, "kubemedic_watch_synced", resource="v1/pods") == 1
    metrics.watches.retire()  # the Lease is lost: the reflectors go, their counts stay
    assert sample(r, "kubemedic_watch_relists_total", resource="v1/pods") == 2
    assert sample(r, "kubemedic_watch_synced", resource="v1/pods") is None
    second = Reflector(cast(Any, None), kinds.PODS)
    second.stats.lists, second.stats.relists, second.stats.watches = 2, 1, 2
    metrics.watches.watching([second])
    assert sample(r, "kubemedic_watch_relists_total", resource="v1/pods") == 3
    assert sample(r, "kubemedic_watch_restarts_total", resource="v1/pods") == 4
    assert sample(r, "kubemedic_watch_synced", resource="v1/pods") == 0


def test_the_daemon_is_ready_as_a_standby_and_once_the_leaders_caches_are_listed() -> None:
    daemon = Daemon(DaemonOptions(db_url="sqlite:///unused.db"))
    assert daemon.healthy() is None
    assert daemon.ready() is None  # a standby (or one not yet elected) serves as such
    pods = Reflector(cast(Any, None), kinds.PODS)
    nodes = Reflector(cast(Any, None), kinds.NODES)
    daemon.reflectors, daemon.recording = [pods, nodes], True
    pods.synced.set()
    assert daemon.ready() == "the caches are not synced yet: v1/nodes"
    nodes.synced.set()
    assert daemon.ready() is None
    daemon.stopping = True
    assert daemon.ready() == daemon.healthy() == "stopping"


def test_standing_down_forgets_what_only_a_leader_knows_and_keeps_the_counters() -> None:
    metrics = RunMetrics()
    r = metrics.registry
    metrics.scanned(["oom-killed"], [finding("oom-killed", Severity.WARNING, "a")], 1.0)
    metrics.repair_round(
        repairing.Round(
            AT,
            Plan((), {}, states=(NodeState("a", "held", "", HELD_BY_ZONE, Brake.CORRELATED),)),
        )
    )
    metrics.leader.set(1)
    metrics.standing_down()
    assert sample(r, "kubemedic_leader") == 0
    assert sample(r, "kubemedic_findings", check="oom-killed", severity="warning") is None
    assert sample(r, "kubemedic_nodes", state="held") == 0
    assert sample(r, "kubemedic_repair_held_nodes", brake="correlated") == 0
    assert sample(r, "kubemedic_scans_total") == 1
