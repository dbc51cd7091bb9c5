"""Playing a scenario: its cluster set up, its actions fired as engine timers.

:func:`start` turns a :class:`~kubemedic.sim.scenarios.Scenario` into a :class:`ScenarioRun` on a
:class:`~kubemedic.sim.cluster.Cluster` (built from the scenario's settings unless one is given):

1. **Node pools.** A ``nodes`` pool becomes Node objects stored as their kubelets registered
   them (capacity, allocatable, labels, taints, zone, Ready), with a healthy host each; the
   kubelets adopt them. A ``clusterapi`` pool becomes one MachineDeployment per zone, and the
   cluster runs until its machines have booted and their nodes are Ready: the story begins with
   the pool provisioned, as it was when the incident started.
2. **The story begins** (scenario time 0, :attr:`ScenarioRun.origin`): the ``objects`` are
   written in order, each group as its field manager (server-side apply or create), so
   ``managedFields`` read as on the real cluster (``argocd-controller`` with ``Apply``...).
3. **The timeline.** Each action is an engine timer at ``origin + at``; ``repeat`` re-arms it.
   Writes go through :class:`~kubemedic.sim.client.Client` as the action's manager; host faults
   change :class:`~kubemedic.sim.hosts.Host` state, which the kubelets act on at their next beat
   (a stopped kubelet stops renewing its Lease, the node lifecycle controller notices after the
   grace period). Nodes added to a ``nodes`` pool are new machines: each boots for the pool's
   ``bootTime``, then its kubelet registers the Node (``Kubelets.register``) with the pool's
   taints and startup taints. ``node.kubernetes.io/not-ready`` is what the
   ``TaintNodesByCondition`` admission plugin puts on every new Node (the node lifecycle
   controller lifts it once the node is Ready); ``node.kubernetes.io/network-unavailable``
   follows the ``NetworkUnavailable`` condition the kubelet registers with on clouds that
   configure routes, set ``False`` (``RouteCreated``) ``clearAfter`` registration as the route
   controller does; any other startup taint is removed ``clearAfter`` registration by its
   manager (a node agent finishing its setup). Removing machines powers them off and deletes
   their Nodes, as cluster-autoscaler's scale-down and the cloud node lifecycle controller do.

An action that fails (a 404, a 422) is recorded in :attr:`ScenarioRun.failures` and logged; the
story goes on, as a human's failed ``kubectl`` command would leave the cluster running.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubemedic.sim import errors, generating
from kubemedic.sim.client import Client
from kubemedic.sim.cluster import Cluster, build
from kubemedic.sim.engine import Simulation
from kubemedic.sim.hosts import Host
from kubemedic.sim.scenarios import (
    Apply,
    Create,
    Delete,
    Edit,
    Fault,
    Mark,
    NodePool,
    NodeSelection,
    ObjectGroup,
    Patch,
    Reboot,
    ScalePool,
    Scenario,
    Target,
    Untaint,
    default_api_version,
    selector_labels,
)
from kubemedic.sim.storing import Change, Obj

__all__ = ["Progress", "ScenarioRun", "Step", "start"]

log = logging.getLogger(__name__)

POOL_LABEL = generating.POOL_LABEL
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
MD_STORE = "machinedeployments.cluster.x-k8s.io"
CAPI_VERSION = "cluster.x-k8s.io/v1beta1"
#: How long a Cluster API pool may take to come up before the story begins.
PROVISIONING_LIMIT = 3600.0
#: Taints that follow a node condition, and the condition's cleared state (who clears it).
CONDITION_TAINTS: Mapping[str, tuple[str, str, str]] = {
    "node.kubernetes.io/network-unavailable": (
        "NetworkUnavailable",
        "RouteCreated",
        "RouteController created a route",
    ),
}
NOT_READY = "node.kubernetes.io/not-ready"
_CONDITION_SET = {
    "NetworkUnavailable": ("NoRouteCreated", "Node created without a route"),
}


@dataclass(frozen=True)
class Step:
    """One action done: when (scenario time), which timeline entry (-1 for the end of a
    fault's ``for``), what it did."""

    elapsed: timedelta
    index: int
    text: str


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


@dataclass
class _PoolState:
    spec: NodePool
    next_index: int = 1
    machine_deployments: list[str] = field(default_factory=list)


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
        self.failures: list[str] = []
        self.total = 0
        self._pools = {p.name: _PoolState(p) for p in scenario.pools}
        self._ip = 0
        self._clients: dict[str, Client] = {}
        self._startup_conditions: dict[str, list[str]] = {}
        self._setup()
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
        return sorted(
            str(n["metadata"]["name"])
            for n in self.sim.objects("nodes")
            if (n["metadata"].get("labels") or {}).get(POOL_LABEL) == pool
        )

    # setting up ------------------------------------------------------------------------------

    def _setup(self) -> None:
        self.sim.watch("nodes", self._on_node)
        now = self.sim.now()
        loaded: list[Obj] = []
        for state in self._pools.values():
            if state.spec.provider == "nodes":
                for _ in range(state.spec.count):
                    loaded.append(self._registered_node(state, created=now - timedelta(days=1)))
        if loaded:
            self.sim.server.load(loaded)
        self._provision_clusterapi_pools()
        self.origin = self.sim.now()
        self.end = self.origin + timedelta(seconds=self.scenario.duration)
        for group in self.scenario.objects:
            self._write_group(group)
        for index, action in enumerate(self.scenario.timeline):
            self.total += self._occurrences(action)
            self.sim.at(
                self.origin + timedelta(seconds=action.at),
                self._firing(index, 0),
                name=f"scenario:{index}",
            )

    def _next_ip(self) -> str:
        self._ip += 1
        return f"10.0.{self._ip // 250}.{self._ip % 250 + 2}"

    def _node_name(self, state: _PoolState) -> str:
        while True:
            name = f"{state.spec.prefix}{state.next_index}"
            state.next_index += 1
            if self.sim.get("nodes", "", name) is None and self.cluster.hosts.find(name) is None:
                return name

    def _labels(self, spec: NodePool, index: int) -> dict[str, str]:
        labels = {POOL_LABEL: spec.name}
        if spec.instance_type:
            labels[INSTANCE_TYPE_LABEL] = spec.instance_type
        if spec.region:
            labels[REGION_LABEL] = spec.region
        if spec.zones:
            labels[ZONE_LABEL] = spec.zones[index % len(spec.zones)]
        labels.update(spec.labels)
        return labels

    def _sample(self, bounds: tuple[float, float]) -> float:
        low, high = bounds
        return low if high <= low else self.random.uniform(low, high)

    def _registered_node(self, state: _PoolState, *, created: datetime) -> Obj:
        spec = state.spec
        index = state.next_index - 1
        name = self._node_name(state)
        taints = [t.body() for t in spec.taints]
        zone = spec.zones[index % len(spec.zones)] if spec.zones else ""
        body = generating.node(
            name,
            capacity=spec.capacity,
            allocatable=spec.allocatable,
            labels=self._labels(spec, index),
            taints=taints,
            created=created,
            heartbeat=self.sim.now(),
            internal_ip=self._next_ip(),
            provider_id=f"kubemedic-sim:///{zone or 'default'}/{name}",
        )
        host = self.cluster.hosts.get(name)
        host.boot_seconds = self._sample(spec.boot_time)
        return body

    # Cluster API pools -------------------------------------------------------------------------

    def _provision_clusterapi_pools(self) -> None:
        pools = [s for s in self._pools.values() if s.spec.provider == "clusterapi"]
        if not pools:
            return
        if self.cluster.clusterapi is None:
            raise RuntimeError("clusterapi pools need the cluster's clusterapi component")
        client = self._client("kubectl")
        expected = 0
        for state in pools:
            for md in self._machine_deployments(state):
                client.patch(
                    CAPI_VERSION,
                    "MachineDeployment",
                    md["metadata"]["name"],
                    md,
                    namespace=self.scenario.cluster.namespace,
                    patch_type="apply",
                    force=True,
                )
            expected += state.spec.count
        deadline = self.sim.now() + timedelta(seconds=PROVISIONING_LIMIT)
        names = {s.spec.name for s in pools}
        while self.sim.now() < deadline:
            ready = sum(
                1
                for n in self.sim.objects("nodes")
                if (n["metadata"].get("labels") or {}).get(POOL_LABEL) in names and _ready(n)
            )
            if ready >= expected:
                return
            self.sim.run_for(10.0)
        self._fail(-1, f"Cluster API pools not ready after {PROVISIONING_LIMIT:.0f}s")

    def _machine_deployments(self, state: _PoolState) -> list[Obj]:
        spec = state.spec
        cluster = self.scenario.cluster.name
        zones: list[str] = list(spec.zones) or [""]
        out = []
        for i, zone in enumerate(zones):
            replicas = spec.count // len(zones) + (1 if i < spec.count % len(zones) else 0)
            name = f"{cluster}-{spec.name}" + (f"-{zone}" if zone else "")
            state.machine_deployments.append(name)
            out.append(self._machine_deployment(spec, name, zone=zone, replicas=replicas))
        return out

    def _machine_deployment(self, spec: NodePool, name: str, *, zone: str, replicas: int) -> Obj:
        cluster = self.scenario.cluster.name
        labels = self._labels(spec, 0)
        if zone:
            labels[ZONE_LABEL] = zone
        else:
            labels.pop(ZONE_LABEL, None)
        selector = {
            "cluster.x-k8s.io/cluster-name": cluster,
            "cluster.x-k8s.io/deployment-name": name,
        }
        annotations = {
            # cluster-autoscaler's Cluster API provider: scale-from-zero capacity hints.
            "capacity.cluster-autoscaler.kubernetes.io/cpu": str(spec.capacity["cpu"]),
            "capacity.cluster-autoscaler.kubernetes.io/memory": str(spec.capacity["memory"]),
            "capacity.cluster-autoscaler.kubernetes.io/maxPods": str(
                spec.capacity.get("pods", "110")
            ),
            "capacity.cluster-autoscaler.kubernetes.io/labels": ",".join(
                f"{k}={v}" for k, v in sorted(labels.items())
            ),
        }
        if spec.taints:
            annotations["capacity.cluster-autoscaler.kubernetes.io/taints"] = ",".join(
                f"{t.key}={t.value}:{t.effect}" for t in spec.taints
            )
        if spec.autoscaling is not None:
            prefix = "cluster.x-k8s.io/cluster-api-autoscaler-node-group"
            annotations[f"{prefix}-min-size"] = str(spec.autoscaling.min)
            annotations[f"{prefix}-max-size"] = str(spec.autoscaling.max)
        template_spec: Obj = {
            "clusterName": cluster,
            "version": generating.KUBELET_VERSION,
            "bootstrap": {
                "configRef": {
                    "apiVersion": "bootstrap.cluster.x-k8s.io/v1beta1",
                    "kind": "KubeadmConfigTemplate",
                    "name": name,
                }
            },
            "infrastructureRef": {
                "apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                "kind": "OpenStackMachineTemplate",
                "name": name,
            },
        }
        if zone:
            template_spec["failureDomain"] = zone
        return {
            "apiVersion": CAPI_VERSION,
            "kind": "MachineDeployment",
            "metadata": {
                "name": name,
                "namespace": self.scenario.cluster.namespace,
                "labels": {"cluster.x-k8s.io/cluster-name": cluster},
                "annotations": annotations,
            },
            "spec": {
                "clusterName": cluster,
                "replicas": replicas,
                "selector": {"matchLabels": selector},
                "template": {
                    "metadata": {"labels": {**selector, **labels}},
                    "spec": template_spec,
                },
            },
        }

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
        try:
            text = self._perform(action)
        except errors.ApiError as exc:
            self._fail(index, f"{_describe(action)}: {exc.code} {exc.reason}: {exc.message}")
            text = f"{_describe(action)} (failed: {exc.reason})"
        except LookupError as exc:
            self._fail(index, f"{_describe(action)}: {exc}")
            text = f"{_describe(action)} (failed)"
        self.steps.append(Step(self.elapsed(), index, action.note or text))
        log.info("scenario %s +%s: %s", self.scenario.name, self.elapsed(), action.note or text)

    def _fail(self, index: int, message: str) -> None:
        where = f"timeline[{index}]" if index >= 0 else "setup"
        self.failures.append(f"{where}: {message}")
        log.warning("scenario %s: %s: %s", self.scenario.name, where, message)

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
                _break(self.cluster.hosts.get(name), action.fault, self.sim.seconds())
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
            return self._scale_pool(action)
        if isinstance(action, Untaint):
            names = self.select(action.nodes)
            for name in names:
                self._untaint(name, action.key, manager=action.manager)
            return f"untaint {action.key} from {_some(names)}"
        if isinstance(action, Mark):
            return action.note or "mark"
        raise LookupError(f"unhandled action {action!r}")  # pragma: no cover

    def _undo(self, names: list[str], fault: str) -> None:
        now = self.sim.seconds()
        for name in names:
            host = self.cluster.hosts.find(name)
            if host is not None:
                _mend(host, fault, now)
        self.steps.append(Step(self.elapsed(), -1, f"{fault} over on {_some(names)}"))

    # writing -----------------------------------------------------------------------------------

    def _client(self, manager: str) -> Client:
        client = self._clients.get(manager)
        if client is None:
            client = self._clients[manager] = Client(self.sim.server, manager)
        return client

    def _namespace(self, target: Target) -> str:
        res = self._client("kubectl").resource(_api_version(target), target.kind)
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
            except errors.ApiError as exc:
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
            if selection.pool is not None and node_labels.get(POOL_LABEL) != selection.pool:
                continue
            if selection.zone is not None and node_labels.get(ZONE_LABEL) != selection.zone:
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

    def _untaint(self, name: str, key: str, *, manager: str) -> None:
        node = self.sim.get("nodes", "", name)
        if node is None:
            return
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != key]
        if len(kept) != len(taints):
            self._client(manager).patch("v1", "Node", name, {"spec": {"taints": kept or None}})

    def _scale_pool(self, action: ScalePool) -> str:
        state = self._pools[action.pool]
        if state.spec.provider == "clusterapi":
            return self._scale_machine_deployments(state, action)
        current = self.pool_nodes(action.pool)
        wanted = len(current) + action.add if action.add is not None else action.replicas or 0
        if wanted < len(current):
            return self._remove_nodes(action.pool, current, len(current) - wanted)
        add = wanted - len(current)
        for i in range(add):
            delay = action.over * i / (add - 1) if add > 1 else 0.0
            self.sim.after(delay, lambda: self._add_node(state), name="scenario:machine")
        return f"{action.pool}: {add} new machines over {action.over:g}s"

    def _remove_nodes(self, pool: str, names: list[str], count: int) -> str:
        """The newest machines go (as cluster-autoscaler's scale-down and the cloud's node
        lifecycle controller end them): powered off, their Nodes deleted."""

        def created(name: str) -> tuple[str, str]:
            node = self.sim.get("nodes", "", name) or {}
            return (str(node.get("metadata", {}).get("creationTimestamp") or ""), name)

        doomed = sorted(names, key=created, reverse=True)[:count]
        client = self._client("cloud-node-lifecycle-controller")
        for name in doomed:
            host = self.cluster.hosts.find(name)
            if host is not None:
                host.power_off()
                self.cluster.hosts.remove(name)
            client.delete("v1", "Node", name)
        return f"{pool}: {count} machines removed"

    def _scale_machine_deployments(self, state: _PoolState, action: ScalePool) -> str:
        client = self._client(action.manager)
        namespace = self.scenario.cluster.namespace
        mds = [self.sim.get(MD_STORE, namespace, n) for n in state.machine_deployments]
        current = [int((md or {}).get("spec", {}).get("replicas") or 0) for md in mds]
        total = sum(current) + action.add if action.add is not None else (action.replicas or 0)
        count = len(state.machine_deployments)
        for i, name in enumerate(state.machine_deployments):
            replicas = total // count + (1 if i < total % count else 0)
            client.patch(
                CAPI_VERSION,
                "MachineDeployment",
                name,
                {"spec": {"replicas": replicas}},
                namespace=namespace,
                patch_type="merge",
                subresource="scale",
            )
        return f"{action.pool}: {sum(current)} -> {total} machines"

    def _add_node(self, state: _PoolState) -> None:
        """A new machine of a ``nodes`` pool: it boots, then its kubelet registers the Node."""
        managed = self.cluster.nodelifecycle is not None
        body = _fresh(self._registered_node(state, created=self.sim.now()))
        name = str(body["metadata"]["name"])
        host = self.cluster.hosts.get(name)
        host.booting_until = self.sim.seconds() + host.boot_seconds
        taints = body["spec"].setdefault("taints", [])
        for taint in state.spec.startup_taints:
            if taint.key in CONDITION_TAINTS and managed:
                # The kubelet registers NetworkUnavailable=True; the controller taints after it.
                self._startup_conditions.setdefault(name, []).append(taint.key)
            else:
                taints.append(taint.body())
            if taint.clear_after is not None and not (taint.key == NOT_READY and managed):
                delay = host.boot_seconds + self._sample(taint.clear_after)
                clear = _bind(self._clear_startup_taint, name, taint.key, taint.manager)
                self.sim.after(delay, clear, name="scenario:startup-taint")
        if not taints:
            del body["spec"]["taints"]
        if self.cluster.kubelets is not None:
            self.cluster.kubelets.register(body)
        else:
            # No kubelets in this cluster: the Node appears once the machine has booted.
            self.sim.after(host.boot_seconds, _bind_create(self._client("kubelet"), body))

    def _on_node(self, change: Change) -> None:
        if change.type != "ADDED":
            return
        name = str(change.obj["metadata"]["name"])
        keys = self._startup_conditions.pop(name, None)
        if keys:
            # Listeners must not write: the kubelet's first status follows at the next step.
            self.sim.after(0.0, lambda: self._set_startup_conditions(name, keys))

    def _set_startup_conditions(self, name: str, keys: list[str]) -> None:
        now = self.sim.server.writer.now()
        conditions = []
        for key in keys:
            type_ = CONDITION_TAINTS[key][0]
            reason, message = _CONDITION_SET[type_]
            conditions.append(_condition(type_, "True", reason, message, now))
        try:
            self._client("kubelet").patch(
                "v1", "Node", name, {"status": {"conditions": conditions}}, subresource="status"
            )
        except errors.ApiError as exc:
            self._fail(-1, f"registering {name}'s conditions: {exc.message}")

    def _clear_startup_taint(self, name: str, key: str, manager: str) -> None:
        node = self.sim.get("nodes", "", name)
        if node is None:
            # Not registered yet (a slow boot): look again shortly.
            if self.cluster.hosts.find(name) is not None:
                clear = _bind(self._clear_startup_taint, name, key, manager)
                self.sim.after(10.0, clear, name="scenario:startup-taint")
            return
        try:
            if key in CONDITION_TAINTS and self.cluster.nodelifecycle is not None:
                type_, reason, message = CONDITION_TAINTS[key]
                condition = _condition(
                    type_, "False", reason, message, self.sim.server.writer.now()
                )
                self._client(manager).patch(
                    "v1",
                    "Node",
                    name,
                    {"status": {"conditions": [condition]}},
                    subresource="status",
                )
            else:
                self._untaint(name, key, manager=manager)
        except errors.ApiError as exc:
            self._fail(-1, f"clearing {key} on {name}: {exc.message}")


def _condition(type_: str, status: str, reason: str, message: str, now: str) -> Obj:
    return {
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def _bind(fn: Callable[[str, str, str], None], *args: str) -> Callable[[], None]:
    a, b, c = args
    return lambda: fn(a, b, c)


def _bind_create(client: Client, body: Obj) -> Callable[[], None]:
    def create() -> None:
        client.create(body)

    return create


def _fresh(body: Obj) -> Obj:
    """A node body as a kubelet POSTs it: no uid, managedFields or server-set fields."""
    meta = body["metadata"]
    for key in ("uid", "managedFields", "creationTimestamp", "resourceVersion"):
        meta.pop(key, None)
    meta["creationTimestamp"] = None
    return body


def _ready(node: Mapping[str, Any]) -> bool:
    for condition in (node.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Ready":
            return bool(condition.get("status") == "True")
    return False


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


def _break(host: Host, fault: str, now: float) -> None:
    if fault == "kubelet-stopped":
        host.kubelet = "stopped"
    elif fault == "kubelet-hung":
        host.kubelet = "hung"
    elif fault == "runtime-hung":
        host.runtime = "hung"
    elif fault == "misconfig-transient":
        host.misconfig = "transient"
    elif fault == "misconfig-persistent":
        host.misconfig = "persistent"
    elif fault == "unreachable":
        host.reachable = False
    elif fault == "power-off":
        host.power_off()
    elif fault == "recovered":
        for kind in ("kubelet-stopped", "runtime-hung", "misconfig-persistent", "unreachable"):
            _mend(host, kind, now)
        host.power_on(now)


def _mend(host: Host, fault: str, now: float) -> None:
    if fault in ("kubelet-stopped", "kubelet-hung"):
        host.kubelet = "running"
    elif fault == "runtime-hung":
        host.runtime = "running"
    elif fault.startswith("misconfig"):
        host.misconfig = ""
    elif fault == "unreachable":
        host.reachable = True
    elif fault == "power-off":
        host.power_on(now)
