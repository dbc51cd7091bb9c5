"""The Prometheus metrics of ``kubemedic run``, in a registry of its own (served on ``/metrics``
by :mod:`kubemedic.kube.endpoints`; docs/metrics.md lists them with their alerts).

Scans:

- ``kubemedic_findings{check, severity}``: findings of the latest scan (every check run has its
  three severities, 0 when it found nothing);
- ``kubemedic_scans_total``; ``kubemedic_last_scan_timestamp_seconds``: the cluster time the
  latest scan judged (Unix time).

Node repair (fed by each round of :class:`kubemedic.repair.controller.Controller`):

- ``kubemedic_nodes{state}``: nodes by repair state (``healthy``, ``unhealthy``, ``repairing``,
  ``held``, ``quarantined``, ``gone``) after the latest round;
- ``kubemedic_repair_held_nodes{brake}``: the ``held`` nodes by what holds them (their
  ``brake``, see :data:`BRAKES`);
- ``kubemedic_repair_decisions_total{kind, reason}``: decisions announced (each once: a hold
  repeated every round counts once), by kind (``start``, ``act``, ``escalate``, ``finish``,
  ``hold``, ``skip``) and Event reason (``KubemedicRepairStarted``...);
- ``kubemedic_repair_holds_total{brake}``: holds announced, by brake;
- ``kubemedic_repair_actions_total{action, result}``: actions executed (``reboot``, ``drain``,
  ``quarantine``, ``alert``...; ``done``, ``failed``, or ``dry-run``: decided, nothing done).

Storm breaker (fed by each round of :class:`kubemedic.breaker.controller.Controller`):

- ``kubemedic_breaker_storms``: storms in progress;
- ``kubemedic_breaker_decisions_total{kind, reason}``: decisions (``act``, ``dry-run``,
  ``alert``, ``hold``, ``storm-ended``) by Event reason (``KubemedicBreakerStorm``...);
- ``kubemedic_breaker_actions_total{action, result}``: actions executed (``revert-out-of-band``:
  the reverts; ``scale-to-fit``, ``prune-failed``) by the executor's word: ``done``,
  ``dry-run``, ``conflict`` (the object changed meanwhile: decided again next round),
  ``failed``.

Recorder:

- ``kubemedic_archive_rows_total{table}``: rows sent to the archive (``events``,
  ``event_counts``, ``event_deletions``, ``terminations``, ``evictions``, ``node_transitions``,
  ``metric_samples``, ``checkpoints``, ``findings``; a replayed row counts again);
- ``kubemedic_archive_writes_total``: write transactions;
- ``kubemedic_archive_lag_seconds``: how long the oldest change not yet in the archive has
  waited (0 when all is written; it grows while the database is down or slow);
- ``kubemedic_archive_last_write_timestamp_seconds``.

Reflectors (read from their counters at each scrape, carried over leadership terms):

- ``kubemedic_watch_restarts_total{resource}``: watches reopened without a relist (the server
  ends every watch at ``timeoutSeconds``, about one per 5 minutes is normal; more means broken
  connections);
- ``kubemedic_watch_relists_total{resource}``: lists after the first (410 Gone, failures);
- ``kubemedic_watch_errors_total{resource, error}``: failed lists and watches by HTTP status or
  ``connection``;
- ``kubemedic_watch_synced{resource}``: 1 once the resource's cache holds a complete list.

Leadership: ``kubemedic_leader``: 1 while this replica holds the Lease and works (without leader
election: while it records), else 0.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields

from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from kubemedic.breaker import controller as breaking
from kubemedic.checks.findings import Finding, Severity
from kubemedic.kube.reflector import Reflector
from kubemedic.repair import controller as repairing
from kubemedic.repair.policy.records import Brake
from kubemedic.run.recorder import Recorder
from kubemedic.store.writer import WriteStats

__all__ = ["BRAKES", "NODE_STATES", "RunMetrics"]

NODE_STATES = ("healthy", "unhealthy", "repairing", "held", "quarantined", "gone")
"""The states of ``kubemedic nodes`` (:class:`kubemedic.repair.policy.records.NodeState`)."""

BRAKES = (*(brake.value for brake in Brake), "other")
"""The ``brake`` labels: what holds a repair back (``records.Brake``), and ``other`` for a hold
no brake makes (a drain a PodDisruptionBudget blocks)."""

_TABLES = {
    "events": "events",
    "event_counts": "event_counts",
    "event_deletions": "event_deletions",
    "terminations": "terminations",
    "evictions": "evictions",
    "transitions": "node_transitions",
    "samples": "metric_samples",
    "checkpoints": "checkpoints",
}
"""WriteStats' fields by the archive table (or update) they count."""


def _brake(brake: Brake | None) -> str:
    return "other" if brake is None else brake.value


class RunMetrics:
    """The metrics of one ``kubemedic run`` process (see the module docstring)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.findings = Gauge(
            "kubemedic_findings",
            "Findings of the latest scan, by check and severity.",
            ["check", "severity"],
            registry=r,
        )
        self.scans = Counter("kubemedic_scans", "Scans run.", registry=r)
        self.last_scan = Gauge(
            "kubemedic_last_scan_timestamp_seconds",
            "The cluster time the latest scan judged (Unix time).",
            registry=r,
        )
        self.nodes = Gauge(
            "kubemedic_nodes", "Nodes by repair state (latest repair round).", ["state"], registry=r
        )
        self.held = Gauge(
            "kubemedic_repair_held_nodes",
            "Nodes whose repair is held, by what holds it.",
            ["brake"],
            registry=r,
        )
        self.repair_decisions = Counter(
            "kubemedic_repair_decisions",
            "Repair decisions announced, by kind and Event reason.",
            ["kind", "reason"],
            registry=r,
        )
        self.holds = Counter(
            "kubemedic_repair_holds", "Repair holds announced, by brake.", ["brake"], registry=r
        )
        self.repair_actions = Counter(
            "kubemedic_repair_actions",
            "Repair actions executed, by action and result.",
            ["action", "result"],
            registry=r,
        )
        self.storms = Gauge("kubemedic_breaker_storms", "Storms in progress.", registry=r)
        self.breaker_decisions = Counter(
            "kubemedic_breaker_decisions",
            "Storm breaker decisions, by kind and Event reason.",
            ["kind", "reason"],
            registry=r,
        )
        self.breaker_actions = Counter(
            "kubemedic_breaker_actions",
            "Storm breaker actions executed (revert-out-of-band: reverts), by result.",
            ["action", "result"],
            registry=r,
        )
        self.rows = Counter(
            "kubemedic_archive_rows", "Rows sent to the archive, by table.", ["table"], registry=r
        )
        self.writes = Counter(
            "kubemedic_archive_writes", "Write transactions of the recorder.", registry=r
        )
        self.last_write = Gauge(
            "kubemedic_archive_last_write_timestamp_seconds",
            "When the recorder last wrote the archive (Unix time).",
            registry=r,
        )
        self.lag = Gauge(
            "kubemedic_archive_lag_seconds",
            "How long the oldest change not yet in the archive has waited.",
            registry=r,
        )
        self.lag.set_function(self._lag)
        self.leader = Gauge(
            "kubemedic_leader", "1 while this replica leads (records, scans, acts).", registry=r
        )
        self.recorder: Recorder | None = None
        self.watches = _Reflectors()
        r.register(self.watches)
        for state in NODE_STATES:
            self.nodes.labels(state).set(0)
        for brake in BRAKES:
            self.held.labels(brake).set(0)

    # feeds --------------------------------------------------------------------------------

    def scanned(self, checks: Iterable[str], findings: Sequence[Finding], at: float) -> None:
        """A scan's findings (``checks``: those that ran; ``at``: the time judged)."""
        counts = Tally((f.check, f.severity.label) for f in findings)
        self.findings.clear()
        for check in {*checks, *(c for c, _ in counts)}:
            for severity in Severity:
                self.findings.labels(check, severity.label).set(counts[check, severity.label])
        self.scans.inc()
        self.last_scan.set(at)

    def leading(self, recorder: Recorder, reflectors: Sequence[Reflector]) -> None:
        """This replica leads: follow its ``recorder`` (writes, lag) and ``reflectors``."""
        self.recording(recorder)
        self.watches.watching(reflectors)
        self.leader.set(1)

    def standing_down(self) -> None:
        """This replica stopped leading: what only a leader knows goes back to nothing (a
        standby must not add stale findings or nodes to a sum over replicas); counters stay."""
        self.leader.set(0)
        self.recorder = None
        self.watches.retire()
        self.findings.clear()
        for state in NODE_STATES:
            self.nodes.labels(state).set(0)
        for brake in BRAKES:
            self.held.labels(brake).set(0)
        self.storms.set(0)

    def recording(self, recorder: Recorder) -> None:
        """Follow ``recorder`` (this term's): its writes and its lag."""
        self.recorder = recorder
        recorder.on_write = self.written

    def written(self, stats: WriteStats, at: float | None = None) -> None:
        for item in fields(stats):
            table = _TABLES.get(item.name)
            count = getattr(stats, item.name)
            if table is not None and count:
                self.rows.labels(table).inc(count)
        self.writes.inc()
        if at is None:
            self.last_write.set_to_current_time()
        else:
            self.last_write.set(at)

    def findings_written(self, count: int) -> None:
        if count:
            self.rows.labels("findings").inc(count)

    def repair_round(self, done: repairing.Round) -> None:
        states = Tally(s.state for s in done.plan.states)
        for state in {*NODE_STATES, *states}:
            self.nodes.labels(state).set(states[state])
        brakes = Tally(_brake(s.brake) for s in done.plan.states if s.state == "held")
        for brake in BRAKES:
            self.held.labels(brake).set(brakes[brake])
        for decision in done.announced:
            self.repair_decisions.labels(decision.kind.value, decision.reason).inc()
            if decision.kind.value == "hold":
                self.holds.labels(_brake(decision.brake)).inc()
        for decision, outcome in done.outcomes:
            action = decision.action.value if decision.action is not None else ""
            result = "dry-run" if decision.dry_run else "done" if outcome.ok else "failed"
            self.repair_actions.labels(action, result).inc()

    def breaker_round(self, done: breaking.Round, storms: int) -> None:
        self.storms.set(storms)
        for decision in done.plan.decisions:
            self.breaker_decisions.labels(decision.kind.value, decision.reason).inc()
        for decision, b_outcome in done.outcomes:
            action = decision.action.value if decision.action is not None else ""
            self.breaker_actions.labels(action, b_outcome.word).inc()

    def _lag(self) -> float:
        return 0.0 if self.recorder is None else self.recorder.pending_seconds()


class _Reflectors(Collector):
    """The reflectors' counters, read at each scrape. A leader that loses the Lease drops its
    reflectors; their counts are carried (``retire``) so the counters never go back."""

    def __init__(self) -> None:
        self.live: list[Reflector] = []
        self.carried: dict[tuple[str, ...], float] = {}

    def watching(self, reflectors: Sequence[Reflector]) -> None:
        self.live = list(reflectors)

    def retire(self) -> None:
        for key, value in self._counts():
            if key[0] != "synced":
                self.carried[key] = self.carried.get(key, 0.0) + value
        self.live = []

    def _counts(self) -> Iterator[tuple[tuple[str, ...], float]]:
        for reflector in self.live:
            resource, st = reflector.kind.stream, reflector.stats
            yield ("restarts", resource), float(max(st.watches - st.lists, 0))
            yield ("relists", resource), float(st.relists)
            for error, count in st.errors.items():
                yield ("errors", resource, error), float(count)
            yield ("synced", resource), 1.0 if reflector.synced.is_set() else 0.0

    def describe(self) -> Iterable[CounterMetricFamily | GaugeMetricFamily]:
        return self._families(include=False)

    def collect(self) -> Iterable[CounterMetricFamily | GaugeMetricFamily]:
        return self._families(include=True)

    def _families(self, *, include: bool) -> list[CounterMetricFamily | GaugeMetricFamily]:
        restarts = CounterMetricFamily(
            "kubemedic_watch_restarts",
            "Watches reopened without a relist, by resource.",
            labels=["resource"],
        )
        relists = CounterMetricFamily(
            "kubemedic_watch_relists",
            "Lists after the first (410 Gone, failures), by resource.",
            labels=["resource"],
        )
        errors = CounterMetricFamily(
            "kubemedic_watch_errors",
            "Failed lists and watches, by resource and HTTP status or connection.",
            labels=["resource", "error"],
        )
        synced = GaugeMetricFamily(
            "kubemedic_watch_synced",
            "1 once the resource's cache holds a complete list.",
            labels=["resource"],
        )
        if include:
            totals = dict(self.carried)
            for key, value in self._counts():
                totals[key] = (0.0 if key[0] == "synced" else totals.get(key, 0.0)) + value
            family = {"restarts": restarts, "relists": relists, "errors": errors}
            for key, value in sorted(totals.items()):
                if key[0] == "synced":
                    synced.add_metric(list(key[1:]), value)
                else:
                    family[key[0]].add_metric(list(key[1:]), value)
        return [restarts, relists, errors, synced]
