"""``kubemedic run``: record the cluster into the archive and scan it on a schedule.

One process, one asyncio loop:

* leader election on a Lease (several replicas may run; only the leader records, scans and, in
  later versions, acts; a replica that loses the Lease stops at once and flushes what it has;
  the Lease's timing is real time, whatever clock the cluster runs on);
* reflectors for Events, Pods and Nodes feed the recorder (archive rows, checkpointed per
  stream); reflectors for the workloads and PriorityClasses only keep caches for the scans;
* metrics.k8s.io is polled (it cannot be watched) and kept as samples;
* every ``scan_interval`` of cluster time the checks run on a view built from the caches and the
  findings are recorded as episodes;
* with ``retain`` set, rows older than that are deleted once an hour;
* with ``listen`` set, ``/metrics`` (:mod:`kubemedic.run.metrics`), ``/healthz`` and ``/readyz``
  are served there (:mod:`kubemedic.kube.endpoints`) from the moment the API server and the
  archive answered. ``/healthz`` is the event loop answering (a wedged loop answers nothing);
  ``/readyz`` is ready once the leader's caches hold a complete list of every stream, and at
  once for a replica waiting for the Lease (a standby is a healthy, ready replica);
* with ``web`` set, the dashboard (:mod:`kubemedic.web`) is served there over the archive the
  daemon records, read-only, by uvicorn in this same loop (:mod:`kubemedic.web.embedding`),
  on the leader and on a standby alike; it stops when the daemon stops. The web stack is
  loaded only then.

Time is the cluster's: with ``clock="server"`` the daemon follows the API server's clock, so
against the simulator running at 20x a 60 s scan interval passes in 3 s of wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aiohttp import web

from kubemedic import checks
from kubemedic.breaker import controller as breaking
from kubemedic.breaker.settings import BreakerRun
from kubemedic.checks.findings import Finding
from kubemedic.drift.rules import DriftRules
from kubemedic.kube import config as kubeconfig
from kubemedic.kube import endpoints, kinds
from kubemedic.kube.api import (
    Api,
    ApiError,
    ConnectionLost,
    Forbidden,
    Kind,
    NotFound,
    ServiceUnavailable,
)
from kubemedic.kube.clock import Clock, ServerClock, WallClock
from kubemedic.kube.leader import LeaderElector
from kubemedic.kube.reflector import Reflector
from kubemedic.model.view import ClusterView
from kubemedic.notify.controller import Notifier
from kubemedic.notify.settings import NotifyRun
from kubemedic.repair import controller as repairing
from kubemedic.repair.policy.settings import RepairSettings
from kubemedic.run.metrics import RunMetrics
from kubemedic.run.recorder import Recorder
from kubemedic.store import retention
from kubemedic.store.db import Archive

if TYPE_CHECKING:
    from kubemedic.web import embedding

__all__ = ["Daemon", "DaemonOptions"]

log = logging.getLogger("kubemedic.run")

RECORDED = (kinds.EVENTS, kinds.PODS, kinds.NODES)
"""Streams written to the archive (and checkpointed)."""

CACHED = (
    kinds.DEPLOYMENTS,
    kinds.REPLICASETS,
    kinds.DAEMONSETS,
    kinds.STATEFULSETS,
    kinds.JOBS,
    kinds.PRIORITY_CLASSES,
    kinds.LEASES,  # node liveness (model.liveness); the view keeps those of kube-node-lease
)
"""Streams kept only in memory, for the scans."""

METRICS = (kinds.POD_METRICS, kinds.NODE_METRICS)

REPAIR_CACHED = (kinds.LEASES, kinds.MACHINES, kinds.MACHINE_SETS, kinds.MACHINE_DEPLOYMENTS)
"""Streams the node repair reads besides the nodes: node Leases (liveness) and the Cluster API
objects behind the nodes (replacement)."""


@dataclass
class DaemonOptions:
    """What ``kubemedic run`` was asked to do."""

    db_url: str
    kubeconfig: Path | None = None
    context: str | None = None
    cluster: str | None = None
    clock: str = "wall"
    scan_interval: float = 60.0
    metrics_interval: float = 60.0
    retain: timedelta | None = None
    leader_elect: bool = True
    lease_namespace: str = "default"
    lease_name: str = "kubemedic"
    identity: str = ""
    check_names: list[str] | None = None
    check_configs: Mapping[str, Any] = field(default_factory=dict)
    #: Node repair (``repair:`` of --config); None: no repair at all.
    repair: RepairSettings | None = None
    #: The storm breaker (``breaker:`` of --config); None: no breaker at all.
    breaker: BreakerRun | None = None
    #: The ``drift:`` rules the breaker's drift against Git follows (None: the defaults).
    drift_rules: DriftRules | None = None
    #: Notifications (``notify:`` of --config); None: none are sent.
    notify: NotifyRun | None = None
    #: Where to serve /metrics, /healthz and /readyz (host, port; port 0: any); None: nowhere.
    listen: tuple[str, int] | None = None
    #: Where to serve the dashboard (host, port; port 0: any); None: nowhere.
    web: tuple[str, int] | None = None
    #: The token the dashboard requires (``--web-token-file``); None: loopback only.
    web_token: str | None = None


class Daemon:
    """The running daemon; ``run`` returns when ``stop`` is set (after flushing)."""

    def __init__(self, options: DaemonOptions) -> None:
        self.options = options
        self.identity = options.identity or f"{socket.gethostname()}_{uuid.uuid4().hex[:8]}"
        self.api: Api | None = None
        self.archive: Archive | None = None
        self.clock: Clock = WallClock()
        self.cluster = options.cluster or ""
        self.recorder: Recorder | None = None
        self.reflectors: list[Reflector] = []
        self.metrics: list[dict[str, Any]] = []
        self.scans = 0
        self.repair: repairing.Controller | None = None
        self.breaker: breaking.Controller | None = None
        self.notifier: Notifier | None = None
        self._reported: dict[str, tuple[int, int, int]] = {}
        self.prometheus = RunMetrics()
        self.recording = False
        self.stopping = False
        self.port: int | None = None
        """The port /metrics is served on, once it is."""
        self.web_port: int | None = None
        """The port the dashboard is served on, once it is."""

    async def run(self, stop: asyncio.Event) -> None:
        options = self.options
        resolved = kubeconfig.resolve(options.kubeconfig, options.context)
        self.cluster = options.cluster or resolved.cluster
        self.api = api = kubeconfig.connect(resolved)
        try:
            # At start, an API server that refuses, a plugin that gives no credentials or an
            # archive that is damaged ends the daemon at once with the reason (exit 2); once
            # running, lost connections are retried.
            await kubeconfig.probe(api, resolved)
            archive = await asyncio.to_thread(Archive.open, options.db_url)
        except BaseException:
            await api.close()
            raise
        self.archive = archive
        runner = None
        dashboard: embedding.Dashboard | None = None
        try:
            if options.listen is not None:
                runner = await self._serve(*options.listen)
            if options.web is not None:
                dashboard = await self._dashboard(*options.web)
            if options.clock == "server":
                server_clock = ServerClock(api)
                await server_clock.sync()
                self.clock = server_clock
            log.info(
                "cluster %s (%s); archive %s",
                self.cluster,
                api.server,
                archive.url,
            )
            if options.leader_elect:
                await self._run_elected(api, stop)
            else:
                await self._record(stop)
        finally:
            self.stopping = True
            if dashboard is not None:
                await dashboard.stop()
            if runner is not None:
                await runner.cleanup()
            await asyncio.to_thread(archive.close)
            await api.close()

    # endpoints ----------------------------------------------------------------------------

    async def _serve(self, host: str, port: int) -> web.AppRunner:
        try:
            runner = await endpoints.serve(
                host,
                port,
                registry=self.prometheus.registry,
                healthy=self.healthy,
                ready=self.ready,
            )
        except OSError as error:
            raise kubeconfig.KubeAccessError(
                f"--listen {host}:{port}: cannot serve: {error.strerror or error}"
            ) from None
        self.port = endpoints.bound_port(runner)
        log.info("serving /metrics, /healthz and /readyz on %s:%d", host, self.port)
        return runner

    async def _dashboard(self, host: str, port: int) -> embedding.Dashboard:
        from kubemedic.web import embedding  # noqa: PLC0415 - the web stack only with --web

        assert self.archive is not None
        dashboard = await embedding.start(
            self.archive,
            host=host,
            port=port,
            token=self.options.web_token,
            cluster=self.cluster,
        )
        self.web_port = dashboard.port
        return dashboard

    def healthy(self) -> str | None:
        """The liveness probe's answer (None: alive)."""
        return "stopping" if self.stopping else None

    def ready(self) -> str | None:
        """The readiness probe's answer (None: ready): a leader is ready once every stream is
        listed; a standby is ready as it is."""
        if self.stopping:
            return "stopping"
        if not self.recording:
            return None
        waiting = [r.kind.stream for r in self.reflectors if not r.synced.is_set()]
        if waiting:
            return "the caches are not synced yet: " + ", ".join(waiting)
        return None

    # leadership ---------------------------------------------------------------------------

    async def _run_elected(self, api: Api, stop: asyncio.Event) -> None:
        leading = asyncio.Event()
        lost = asyncio.Event()

        def started() -> None:
            log.info("%s is the leader: recording", self.identity)
            lost.clear()
            leading.set()

        def stopped() -> None:
            log.warning("%s lost the lease: stopping", self.identity)
            leading.clear()
            lost.set()

        elector = LeaderElector(
            api,
            namespace=self.options.lease_namespace,
            name=self.options.lease_name,
            identity=self.identity,
            # Lease timing guards against real processes dying, so it runs on real time even
            # when the cluster's clock runs faster (a simulator at 20x would otherwise give a
            # replica 0.5 s of wall time to renew).
            clock=WallClock(),
            on_started_leading=started,
            on_stopped_leading=stopped,
        )
        election = asyncio.get_running_loop().create_task(elector.run(stop))
        try:
            while not stop.is_set():
                if not await _first(stop.wait(), leading.wait()):
                    break
                either = asyncio.Event()
                watchers = [
                    asyncio.ensure_future(_relay(stop, either)),
                    asyncio.ensure_future(_relay(lost, either)),
                ]
                try:
                    await self._record(either)
                finally:
                    for task in watchers:
                        task.cancel()
        finally:
            # With ``stop`` set the election releases the Lease itself (ReleaseOnCancel), so
            # another replica takes over at once; otherwise it is cancelled like a crash.
            if not stop.is_set():
                election.cancel()
            with contextlib.suppress(
                asyncio.CancelledError, TimeoutError, ApiError, ConnectionLost
            ):
                await asyncio.wait_for(election, timeout=10)

    # recording ----------------------------------------------------------------------------

    async def _record(self, stop: asyncio.Event) -> None:
        api, archive = self.api, self.archive
        assert api is not None and archive is not None
        checkpoints = await asyncio.to_thread(archive.checkpoints, self.cluster)
        recorder = Recorder(archive, self.cluster, now=self.clock.now)
        self.recorder = recorder
        self.reflectors = [
            Reflector(api, kind, recorder, resume_from=checkpoints.get(kind.stream))
            for kind in RECORDED
        ]
        self.recording = True
        wanted = [*CACHED]
        if self.options.repair is not None:
            wanted += [kind for kind in REPAIR_CACHED if kind not in wanted]
        for kind in wanted:
            if await _served(api, kind):
                self.reflectors.append(Reflector(api, kind))
            else:
                log.info("%s is not served: the scans go without it", kind.stream)
        self.prometheus.leading(recorder, self.reflectors)
        recorder.start()
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(reflector.run()) for reflector in self.reflectors]
        tasks.append(loop.create_task(self._every(self.options.scan_interval, self._scan)))
        tasks.append(loop.create_task(self._every(self.options.metrics_interval, self._poll)))
        if self.options.retain is not None:
            tasks.append(loop.create_task(self._every(3600.0, self._retain)))
        if self.options.repair is not None:
            tasks.append(loop.create_task(self._repair(self.options.repair, stop)))
        if self.options.breaker is not None:
            tasks.append(loop.create_task(self._breaker(self.options.breaker, stop)))
        if self.options.notify is not None and self.options.notify.receivers:
            tasks.append(loop.create_task(self._notify(self.options.notify, stop)))
        stopper = loop.create_task(stop.wait())
        try:
            done, _ = await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task is not stopper and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
        finally:
            for task in [*tasks, stopper]:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await recorder.stop()
            self.recording = False
            self.prometheus.standing_down()
            self._report(everything=True)
            log.info(
                "recorder stopped: %d changes, %d rows in %d batches",
                recorder.stats.changes,
                recorder.stats.rows,
                recorder.stats.batches,
            )

    async def _every(self, seconds: float, job: Callable[[], Awaitable[None]]) -> None:
        await self._synced()
        while True:
            try:
                await job()
            except (ApiError, ConnectionLost) as error:
                log.warning("%s failed: %s", job.__name__.strip("_"), error)
            await self.clock.sleep(seconds)

    async def _synced(self) -> None:
        for reflector in self.reflectors:
            await reflector.synced.wait()

    def bodies(self) -> Iterator[dict[str, Any]]:
        """Everything cached, as a ClusterView reads it."""
        return itertools.chain.from_iterable(
            [*(reflector.bodies() for reflector in self.reflectors), self.metrics]
        )

    async def _scan(self) -> None:
        archive, recorder = self.archive, self.recorder
        assert archive is not None and recorder is not None
        behind = {r.kind.stream for r in self.reflectors if r.handler and not r.streaming}
        at = recorder.as_of(self.clock.now(), behind=behind)
        # The caches change under the event loop; the scan reads a list of their bodies (each
        # replaced, never mutated, on change) in a worker thread so the loop keeps renewing
        # the Lease and reading watches meanwhile.
        bodies = list(self.bodies())
        findings = await asyncio.to_thread(self._assess, bodies, at)
        written = await asyncio.to_thread(archive.record_findings, self.cluster, findings, at)
        self.scans += 1
        ran = self.options.check_names or list(checks.REGISTRY)
        self.prometheus.scanned(ran, findings, at.timestamp())
        self.prometheus.findings_written(written)
        log.info("scan %d: %d findings", self.scans, len(findings))
        self._report()

    def _report(self, *, everything: bool = False) -> None:
        """Log each stream's counters when its troubles changed (or all, at the end)."""
        for reflector in self.reflectors:
            st = reflector.stats
            troubles = (st.relists, st.resume_expired, sum(st.errors.values()))
            if not everything and self._reported.get(reflector.kind.stream) == troubles:
                continue
            self._reported[reflector.kind.stream] = troubles
            log.info(
                "%s: %d lists (%d relists), %d watches, %d events, %d replayed, "
                "%d resumes expired, errors %s",
                reflector.kind.stream,
                st.lists,
                st.relists,
                st.watches,
                st.events,
                st.replayed,
                st.resume_expired,
                dict(sorted(st.errors.items())) or "none",
            )

    def _assess(self, bodies: list[dict[str, Any]], at: datetime) -> list[Finding]:
        view = ClusterView.build(bodies, at=at)
        return checks.run_checks(
            view, names=self.options.check_names, configs=self.options.check_configs
        )

    async def _repair(self, settings: RepairSettings, stop: asyncio.Event) -> None:
        """Node repair, on the leader, once the caches are filled."""
        api, archive = self.api, self.archive
        assert api is not None and archive is not None
        await self._synced()
        controller = repairing.build(
            api=api,
            archive=archive,
            settings=settings,
            cluster=self.cluster,
            clock=self.clock,
            identity=self.identity,
            bodies=self.bodies,
        )
        self.repair = controller
        controller.observers.append(self.prometheus.repair_round)
        await controller.run(stop)

    async def _breaker(self, run: BreakerRun, stop: asyncio.Event) -> None:
        """The storm breaker, on the leader, once the caches are filled."""
        api, archive = self.api, self.archive
        assert api is not None and archive is not None
        await self._synced()
        controller = breaking.build(
            api=api,
            archive=archive,
            run=run,
            cluster=self.cluster,
            clock=self.clock,
            identity=self.identity,
            bodies=self.bodies,
            rules=self.options.drift_rules,
        )
        self.breaker = controller
        controller.observers.append(
            lambda done: self.prometheus.breaker_round(done, len(controller.state.storms))
        )
        await controller.run(stop)

    async def _notify(self, run: NotifyRun, stop: asyncio.Event) -> None:
        """Notifications, on the leader, once the caches are filled (so the first round sees
        what the recorder and the first scan wrote)."""
        archive = self.archive
        assert archive is not None
        await self._synced()
        notifier = Notifier(archive=archive, run=run, cluster=self.cluster, clock=self.clock)
        self.notifier = notifier
        await notifier.run(stop)

    async def _poll(self) -> None:
        api, recorder = self.api, self.recorder
        assert api is not None and recorder is not None
        bodies: list[dict[str, Any]] = []
        for kind in METRICS:
            try:
                bodies += await api.list_all(kind)
            except (NotFound, ServiceUnavailable):
                continue  # no metrics-server: nothing to sample
        self.metrics = bodies
        recorder.add_metrics(bodies)

    async def _retain(self) -> None:
        archive, retain = self.archive, self.options.retain
        assert archive is not None and retain is not None
        cutoff = self.clock.now() - retain
        removed = await asyncio.to_thread(retention.retain, archive, self.cluster, cutoff)
        if any(removed.values()):
            log.info("retention: removed %s", removed)


async def _served(api: Api, kind: Kind) -> bool:
    """Whether ``kind`` is served (and readable). Only a 403 or 404 says no: a throttled,
    failing or cut-off answer says nothing, and the reflector retries it with back-off (a
    leader starting again in the middle of an API server's bad minute must not exit)."""
    try:
        await api.list_page(kind, limit=1)
    except (Forbidden, NotFound):
        return False
    except (ApiError, ConnectionLost) as error:
        log.info("%s: cannot tell yet whether it is served (%s); watching it", kind.stream, error)
    return True


async def _first(*waits: Awaitable[Any]) -> bool:
    """Wait for the first of ``waits``; True when it was not the first one (stop)."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    for task in pending:
        task.cancel()
    return tasks[0] not in done


async def _relay(source: asyncio.Event, target: asyncio.Event) -> None:
    await source.wait()
    target.set()
