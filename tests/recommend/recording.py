"""A scenario recorded into an archive with its usage samples, as ``kubemedic run`` keeps them.

:func:`tests.incidents.recording` records events, terminations, evictions and node transitions
from every stored write; here metrics-server is also read every ``poll_every`` of cluster time
(``kubemedic run`` polls it each ``metrics_interval``) and each PodMetrics becomes samples
through the recorder's own extraction (``extraction.metric_samples``). No checks run: sizing
reads no findings. At the end the API's objects are written as a snapshot file, the "current
spec" a live scan would read.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from kubemedic.sim.apiserver import snapshotting
from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios import timeline
from kubemedic.store import extraction, writer
from tests.incidents.recording import _Collector

POD_METRICS = ("metrics.k8s.io/v1beta1", "PodMetrics")


def pod_metrics(server: ApiServer) -> list[dict[str, Any]]:
    """The PodMetrics a ``GET /apis/metrics.k8s.io/v1beta1/pods`` would list now."""
    res = server.registry.for_kind(*POD_METRICS)
    assert res is not None
    refresh = server.read_hooks.get(res.store_key)
    if refresh is not None:
        refresh()
    return [entry.obj for _, entry in server.store.scan(res.store_key)]


def record(
    engine: sa.Engine,
    scenario: str,
    *,
    cluster: str,
    until: timedelta,
    poll_every: timedelta = timedelta(seconds=30),
    snapshot: Path | None = None,
) -> None:
    """Play ``scenario`` for ``until`` of cluster time into ``engine``'s archive, with usage
    samples every ``poll_every``; write the final objects to ``snapshot`` when given."""
    run = timeline.ScenarioRun(scenarios.load(scenario), until=until)
    collector = _Collector(cluster)
    run.sim.watch("events", collector.event)
    run.sim.watch("pods", collector.pod)
    run.sim.watch("nodes", collector.node)
    moment = run.origin
    while moment < run.end:
        moment = min(moment + poll_every, run.end)
        run.run(until=moment)
        batch = collector.take()
        for body in pod_metrics(run.sim.server):
            batch.samples.extend(extraction.metric_samples({"kind": "PodMetrics", **body}))
        with engine.begin() as connection:
            writer.write(connection, batch)
    if snapshot is not None:
        snapshotting.write_snapshot(snapshot, run.sim.server)
