"""Playing a scenario: its cluster set up, its actions fired as engine timers.

:func:`start` turns a :class:`~kubemedic.sim.scenarios.spec.Scenario` into a :class:`ScenarioRun`
on a :class:`~kubemedic.sim.cluster.assembly.Cluster` (built from the scenario's settings unless one
is given):

1. **Node pools** are put in place as they were when the incident started
   (:mod:`~kubemedic.sim.scenarios.nodepools`: Nodes as their kubelets registered them, Cluster API
   pools provisioned and Ready).
2. **The story begins** (scenario time 0, :attr:`ScenarioRun.origin`): the ``objects`` are
   written in order, each group as its field manager (server-side apply or create), so
   ``managedFields`` read as on the real cluster (``argocd-controller`` with ``Apply``...). A
   namespaced object's namespace is created first if missing, as Argo CD's
   ``CreateNamespace=true`` and ``helm --create-namespace`` do.
3. **The timeline.** Each action is an engine timer at ``origin + at``; ``repeat`` re-arms it.
   Writes go through :class:`~kubemedic.sim.cluster.runtime.client.Client` as the action's manager.
   Host faults (:mod:`~kubemedic.sim.scenarios.hostfaults`) change
   :class:`~kubemedic.sim.cluster.runtime.hosts.Host` state, which the kubelets act on at their next
   beat (a stopped kubelet stops renewing its Lease, the node lifecycle controller notices after the
   grace period); a fault's ``for`` ends it later. ``scale-pool`` adds or removes machines
   (:mod:`~kubemedic.sim.scenarios.nodepools`). Node selections are resolved when the action fires,
   sampled with the run's seeded source.

An action that fails (a 404, a 422, a selection that matches no node) is recorded in
:attr:`ScenarioRun.failures` as a :class:`Failure` (which entry, when, what and why) and logged;
the story goes on, as a human's failed ``kubectl`` command would leave the cluster running. So
do an object of ``objects`` the API refuses (``setup``) and a node pool's own writes that fail
later (``pools``). The run then is not the scenario as written: ``sim run`` reports the failures
at its end and exits 2 (see :mod:`kubemedic.simulating`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.sim.cluster.assembly import Cluster, build
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.scenarios import hostfaults, nodepools
from kubemedic.sim.scenarios.gitops import Applier, GitTarget
from kubemedic.sim.scenarios.spec import (
    Apply,
    Create,
    Delete,
    Edit,
    Fault,
    Mark,
    NodeSelection,
    ObjectGroup,
    Patch,
    Push,
    Reboot,
    ScalePool,
    Scenario,
    Sync,
    Target,
    Untaint,
    default_api_version,
    selector_labels,
)

__all__ = ["Failure", "Progress", "ScenarioRun", "Step", "start"]

log = logging.getLogger(__name__)

#: The store of the MachineDeployments that ``clusterapi`` pools become.
MD_STORE = nodepools.MD_STORE


@dataclass(frozen=True)
class Step:
    """One action done: when (scenario time), which timeline entry (-1 for the end of a
    fault's ``for``), what it did."""

    elapsed: timedelta
    index: int
    text: str


@dataclass(frozen=True)
class Failure:
    """A write or action the cluster refused. ``where`` is ``timeline[3]`` (that timeline entry),
    ``setup`` (an object of ``objects``, or node pools being put in place) or ``pools`` (a node
    pool's own writes while the story runs); ``elapsed`` is scenario time (zero for setup);
    ``message`` says what was refused and why (``reboot: no node matches``)."""

    where: str
    elapsed: timedelta
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


@dataclass(frozen=True)
class Progress:
    """Where a run is: the scenario clock and the last action done."""

    clock: datetime
    elapsed: timedelta
    end: datetime
    last: str
    done: int
    total: int
    failures: int

    @property
    def fraction(self) -> float:
        span = (self.end - (self.clock - self.elapsed)).total_seconds()
        return 1.0 if span <= 0 else min(1.0, self.elapsed.total_seconds() / span)


def start(scenario: Scenario, *, cluster: Cluster | None = None) -> ScenarioRun:
    """Set up ``scenario`` (pools, then its objects at scenario time 0) and arm its timeline."""
    return ScenarioRun(scenario, cluster)


class ScenarioRun:
    """A scenario being played on a cluster. ``run`` plays it fast; ``run_paced`` at a speed.

    Constructing one sets the scenario up on ``cluster`` (built from the scenario's settings,
    with ``seed`` instead of the scenario's when given). ``origin`` is scenario time 0 (cluster
    time when the objects were written), ``end`` is ``origin`` plus ``until`` or the scenario's
    duration (assignable); ``steps`` lists the actions done, ``failures`` those that failed;
    ``progress()`` reads the scenario clock."""

    def __init__(
        self,
        scenario: Scenario,
        cluster: Cluster | None = None,
        *,
        seed: int | None = None,
        until: timedelta | None = None,
        git: GitTarget | None = None,
    ) -> None:
        seed = scenario.seed if seed is None else seed
        if cluster is None:
            cluster = build(
                start=scenario.start,
                seed=seed,
                event_ttl=timedelta(seconds=scenario.cluster.event_ttl),
                resolution=scenario.cluster.resolution,
            )
        self.scenario = scenario
        self.cluster = cluster
        self.sim: Simulation = cluster.sim
        self.random = random.Random(seed)  # noqa: S311 (simulation, not cryptography)
        self.origin: datetime = self.sim.now()
        self.end: datetime = self.origin + timedelta(seconds=scenario.duration)
        self.steps: list[Step] = []
        self.failures: list[Failure] = []
        self.total = 0
        self._setting_up = True
        self._acting = -1  # the timeline entry being done, whose pool writes fail in its name
        self._clients: dict[str, Client] = {}
        self._git = git
        #: The GitOps applier of a scenario with a ``gitops`` block (None before it is set up).
        self.gitops: Applier | None = None
        self._pools = nodepools.NodePools(
            scenario,
            cluster,
            random=self.random,
            client=self._client,
            fail=lambda message: self._fail(self._acting, message),
        )
        self._setup()
        self._setting_up = False
        if until is not None:
            self.end = self.origin + until

    @property
    def duration(self) -> timedelta:
        """How long the run plays (``end - origin``)."""
        return self.end - self.origin

    # running ---------------------------------------------------------------------------------

    def run(
        self, on_step: Callable[[], None] | None = None, *, until: datetime | None = None
    ) -> None:
        """Play until ``until`` (default :attr:`end`) as fast as the machine allows."""
        self.sim.run_until(until or self.end, on_step=on_step)

    async def run_paced(
        self,
        speed: float,
        stop: asyncio.Event | None = None,
        on_step: Callable[[], None] | None = None,
        *,
        until: datetime | None = None,
    ) -> None:
        """Play at ``speed`` x real time, serving the API meanwhile; ``stop`` is an
        ``asyncio.Event`` that ends the run early."""
        await self.sim.run_paced(speed=speed, until=until or self.end, on_step=on_step, stop=stop)

    def progress(self) -> Progress:
        now = self.sim.now()
        return Progress(
            clock=now,
            elapsed=now - self.origin,
            end=self.end,
            last=self.steps[-1].text if self.steps else "",
            done=sum(1 for step in self.steps if step.index >= 0),
            total=self.total,
            failures=len(self.failures),
        )

    def elapsed(self) -> timedelta:
        return self.sim.now() - self.origin

    def pool_nodes(self, pool: str) -> list[str]:
        """Names of the pool's nodes now in the API, sorted."""
        return self._pools.nodes(pool)

    # setting up ------------------------------------------------------------------------------

    def _setup(self) -> None:
        self._pools.provision()
        self.origin = self.sim.now()
        self.end = self.origin + timedelta(seconds=self.scenario.duration)
        for group in self.scenario.objects:
            self._write_group(group)
        if self.scenario.gitops is not None:
            self._start_gitops()
        for index, action in enumerate(self.scenario.timeline):
            self.total += self._occurrences(action)
            self.sim.at(
                self.origin + timedelta(seconds=action.at),
                self._firing(index, 0),
                name=f"scenario:{index}",
            )

    def _start_gitops(self) -> None:
        spec = self.scenario.gitops
        assert spec is not None
        try:
            self.gitops = Applier(
                spec,
                sim=self.sim,
                target=self._git,
                apply=lambda body, manager: self._apply(body, manager=manager, force=True),
                create=lambda body, manager: self._create(body, manager=manager),
                note=lambda text: self.steps.append(Step(self.elapsed(), -1, text)),
                fail=lambda text: self.failures.append(Failure("gitops", self.elapsed(), text)),
            )
            self.gitops.start()
        except (LookupError, errors.StatusError) as exc:
            self._fail(-1, f"gitops {spec.application}: {exc}")

    def close(self) -> None:
        """Release what the run holds outside the cluster (a temporary Git repository)."""
        if self.gitops is not None:
            self.gitops.close()

    # firing ----------------------------------------------------------------------------------

    def _occurrences(self, action: Any) -> int:
        repeat = action.repeat
        if repeat is None:
            return 1
        if repeat.times is not None:
            return int(repeat.times)
        last = repeat.until if repeat.until is not None else self.scenario.duration
        return max(1, int((last - action.at) // repeat.every) + 1)

    def _firing(self, index: int, occurrence: int) -> Callable[[], None]:
        def fire() -> None:
            action = self.scenario.timeline[index]
            repeat = action.repeat
            if repeat is not None:
                nxt = action.at + repeat.every * (occurrence + 1)
                more = repeat.times is None or occurrence + 1 < repeat.times
                if more and (repeat.until is None or nxt <= repeat.until):
                    self.sim.at(
                        self.origin + timedelta(seconds=nxt),
                        self._firing(index, occurrence + 1),
                        name=f"scenario:{index}",
                    )
            self._do(index, action)

        return fire

    def _do(self, index: int, action: Any) -> None:
        self._acting = index
        try:
            text = self._perform(action)
        except errors.StatusError as exc:
            self._fail(index, f"{_describe(action)}: {exc.code} {exc.reason}: {exc.message}")
            text = f"{_describe(action)} (failed: {exc.reason})"
        except LookupError as exc:
            self._fail(index, f"{_describe(action)}: {exc}")
            text = f"{_describe(action)} (failed)"
        finally:
            self._acting = -1
        self.steps.append(Step(self.elapsed(), index, action.note or text))
        log.info("scenario %s +%s: %s", self.scenario.name, self.elapsed(), action.note or text)

    def _fail(self, index: int, message: str) -> None:
        if index >= 0:
            failure = Failure(f"timeline[{index}]", self.elapsed(), message)
        elif self._setting_up:
            failure = Failure("setup", timedelta(0), message)
        else:
            failure = Failure("pools", self.elapsed(), message)
        self.failures.append(failure)
        log.warning("scenario %s: %s", self.scenario.name, failure)

    def _perform(self, action: Any) -> str:
        if isinstance(action, Apply):
            for manifest in action.manifests:
                self._apply(manifest, manager=action.manager, force=action.force)
            return _describe(action)
        if isinstance(action, Create):
            for manifest in action.manifests:
                self._create(manifest, manager=action.manager)
            return _describe(action)
        if isinstance(action, Patch | Edit):
            target = action.target
            patch_type = action.patch_type if isinstance(action, Patch) else "strategic"
            self._client(action.manager).patch(
                _api_version(target),
                target.kind,
                target.name,
                action.patch,
                namespace=self._namespace(target),
                patch_type=patch_type,
                subresource=action.subresource if isinstance(action, Patch) else "",
            )
            return _describe(action)
        if isinstance(action, Delete):
            target = action.target
            self._client(action.manager).delete(
                _api_version(target),
                target.kind,
                target.name,
                namespace=self._namespace(target),
                grace_seconds=action.grace_period_seconds,
                propagation=action.propagation_policy,
            )
            return _describe(action)
        if isinstance(action, Fault):
            names = self.select(action.nodes)
            for name in names:
                hostfaults.inflict(self.cluster.hosts.get(name), action.fault, self.sim.seconds())
            if action.for_ is not None and action.fault != "recovered":
                fault = action.fault
                self.sim.after(action.for_, lambda: self._undo(names, fault), name="scenario:undo")
            return f"{action.fault} on {_some(names)}"
        if isinstance(action, Reboot):
            names = self.select(action.nodes)
            for name in names:
                self.cluster.hosts.get(name).reboot(self.sim.seconds())
            return f"reboot {_some(names)}"
        if isinstance(action, ScalePool):
            return self._pools.scale(action)
        if isinstance(action, Untaint):
            names = self.select(action.nodes)
            for name in names:
                self._pools.untaint(name, action.key, manager=action.manager)
            return f"untaint {action.key} from {_some(names)}"
        if isinstance(action, Push | Sync):
            if self.gitops is None:
                raise LookupError("no GitOps applier (its setup failed)")
            return self.gitops.push(action) if isinstance(action, Push) else self.gitops.sync()
        if isinstance(action, Mark):
            return action.note or "mark"
        raise LookupError(f"unhandled action {action!r}")  # pragma: no cover

    def _undo(self, names: list[str], fault: str) -> None:
        now = self.sim.seconds()
        for name in names:
            host = self.cluster.hosts.find(name)
            if host is not None:
                hostfaults.mend(host, fault, now)
        self.steps.append(Step(self.elapsed(), -1, f"{fault} over on {_some(names)}"))

    # writing -----------------------------------------------------------------------------------

    def _client(self, manager: str) -> Client:
        client = self._clients.get(manager)
        if client is None:
            client = self._clients[manager] = Client(self.sim.server, manager)
        return client

    def _namespace(self, target: Target) -> str:
        res = self._client(managers.KUBECTL).resource(_api_version(target), target.kind)
        return (target.namespace or "default") if res.namespaced else ""

    def _ensure_namespace(self, manifest: Mapping[str, Any], manager: str) -> str:
        client = self._client(manager)
        res = client.resource(str(manifest["apiVersion"]), str(manifest["kind"]))
        if not res.namespaced:
            return ""
        namespace = str((manifest.get("metadata") or {}).get("namespace") or "default")
        if self.sim.get("namespaces", "", namespace) is None:
            # What Argo CD's CreateNamespace=true and `helm --create-namespace` do.
            client.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )
        return namespace

    def _apply(self, manifest: Mapping[str, Any], *, manager: str, force: bool) -> None:
        namespace = self._ensure_namespace(manifest, manager)
        self._client(manager).patch(
            str(manifest["apiVersion"]),
            str(manifest["kind"]),
            str(manifest["metadata"]["name"]),
            dict(manifest),
            namespace=namespace,
            patch_type="apply",
            force=force,
        )

    def _create(self, manifest: Mapping[str, Any], *, manager: str) -> None:
        self._ensure_namespace(manifest, manager)
        self._client(manager).create(manifest)

    def _write_group(self, group: ObjectGroup) -> None:
        for manifest in group.manifests:
            try:
                if group.operation == "Apply":
                    self._apply(manifest, manager=group.manager, force=True)
                else:
                    self._create(manifest, manager=group.manager)
            except errors.StatusError as exc:
                meta = manifest.get("metadata") or {}
                self._fail(-1, f"{manifest.get('kind')} {meta.get('name')}: {exc.message}")

    # nodes -------------------------------------------------------------------------------------
    def select(self, selection: NodeSelection) -> list[str]:
        """Names of the nodes ``selection`` picks now (sampled with the scenario's seed)."""
        labels = selector_labels(selection.selector)
        names = set(selection.names)
        picked = []
        for node in self.sim.objects("nodes"):
            meta = node["metadata"]
            name = str(meta["name"])
            node_labels = meta.get("labels") or {}
            if names and name not in names:
                continue
            if (
                selection.pool is not None
                and node_labels.get(nodepools.POOL_LABEL) != selection.pool
            ):
                continue
            if (
                selection.zone is not None
                and node_labels.get(nodepools.ZONE_LABEL) != selection.zone
            ):
                continue
            if any(node_labels.get(k) != v for k, v in labels.items()):
                continue
            picked.append(name)
        picked.sort()
        if selection.fraction is not None and picked:
            k = max(1, math.floor(len(picked) * selection.fraction + 0.5))
            picked = sorted(self.random.sample(picked, k))
        elif selection.count is not None:
            picked = sorted(self.random.sample(picked, min(selection.count, len(picked))))
        if not picked:
            raise LookupError("no node matches")
        return picked


def _api_version(target: Target) -> str:
    return target.api_version or default_api_version(target.kind)


def _some(names: Iterable[str]) -> str:
    names = list(names)
    if len(names) <= 3:
        return ", ".join(names)
    return f"{len(names)} nodes ({', '.join(names[:2])}, ...)"


def _describe(action: Any) -> str:
    if isinstance(action, Apply | Create):
        kinds = ", ".join(
            f"{m.get('kind')} {(m.get('metadata') or {}).get('name')}" for m in action.manifests
        )
        return f"{action.action} {kinds} as {action.manager}"
    if isinstance(action, Patch | Edit | Delete):
        target = action.target
        where = f"{target.namespace}/{target.name}" if target.namespace else target.name
        return f"{action.action} {target.kind} {where} as {action.manager}"
    if isinstance(action, Fault):
        return f"fault {action.fault}"
    if isinstance(action, ScalePool):
        return f"scale pool {action.pool}"
    return str(action.action)
