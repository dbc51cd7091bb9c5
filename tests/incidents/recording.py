"""A scenario recorded into an archive in-process: what ``kubemedic run`` would have written.

The simulator plays the scenario; every stored write of events, pods and nodes passes through
the same pure extraction functions the recorder uses (``kubemedic.store.extraction``) and the
store's own writer; every ``scan_every`` of cluster time the checks run on a snapshot of the
API and their findings are recorded as episodes (``writer.record_findings``), as the daemon does.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa

from kubemedic import checks
from kubemedic.model.view import ClusterView
from kubemedic.sim.apiserver import snapshotting
from kubemedic.sim.machinery.objects import Change
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios import timeline
from kubemedic.store import extraction, writer


class _Collector:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.batch = writer.Batch(cluster=cluster)

    def event(self, change: Change) -> None:
        if change.type == "DELETED":
            return
        row = extraction.event_row(change.obj)
        if row is not None:
            self.batch.events.append(row)
        evicted = extraction.eviction_from_event(change.obj)
        if evicted is not None:
            self.batch.evictions.append(evicted)

    def pod(self, change: Change) -> None:
        self.batch.terminations.extend(extraction.terminations(change.obj))
        evicted = extraction.eviction_from_pod(change.obj)
        if evicted is not None:
            self.batch.evictions.append(evicted)

    def node(self, change: Change) -> None:
        if change.type == "DELETED":
            return
        self.batch.transitions.extend(extraction.node_transitions(change.old, change.obj))

    def take(self) -> writer.Batch:
        batch, self.batch = self.batch, writer.Batch(cluster=self.cluster)
        return batch


def record(
    engine: sa.Engine,
    scenario: str,
    *,
    cluster: str,
    until: timedelta,
    scan_every: timedelta = timedelta(minutes=1),
) -> dict[str, Any]:
    """Play ``scenario`` for ``until`` of cluster time into ``engine``'s archive; returns what
    the run left in the API server at the end (its counts of events, nodes, pods)."""
    run = timeline.ScenarioRun(scenarios.load(scenario), until=until)
    collector = _Collector(cluster)
    run.sim.watch("events", collector.event)
    run.sim.watch("pods", collector.pod)
    run.sim.watch("nodes", collector.node)
    moment = run.origin
    while moment < run.end:
        moment = min(moment + scan_every, run.end)
        run.run(until=moment)
        now = run.sim.now()
        items = snapshotting.snapshot(run.sim.server)["items"]
        found = checks.run_checks(ClusterView.build(items, at=now))
        with engine.begin() as connection:
            writer.write(connection, collector.take())
            writer.record_findings(connection, cluster, found, now)
    return {
        "events": run.sim.count("events"),
        "nodes": run.sim.count("nodes"),
        "pods": run.sim.count("pods"),
        "end": run.sim.now(),
    }
