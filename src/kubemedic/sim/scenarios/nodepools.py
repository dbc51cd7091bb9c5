"""Node pools: the machines a scenario's cluster starts with, and the ones it gains or loses.

:class:`NodePools` keeps a scenario's pools on a :class:`~kubemedic.sim.cluster.assembly.Cluster`:

- **When the story begins** (:meth:`NodePools.provision`), a ``nodes`` pool is Node objects
  stored as their kubelets registered them a day earlier (capacity, allocatable, labels, taints,
  zone, Ready), with a healthy host each; the kubelets adopt them. A ``clusterapi`` pool becomes
  one MachineDeployment per zone (applied as ``kubectl``; replicas spread over the zones, the
  failure domain set, cluster-autoscaler's scale-from-zero ``capacity.*`` and node-group
  ``min-size`` / ``max-size`` annotations), and the cluster runs until its machines have booted
  and their nodes are Ready: the story begins with the pool provisioned, as it was when the
  incident started.
- **Growing a ``nodes`` pool** (:meth:`NodePools.scale`) adds new machines, spread over the
  action's ``over``: each boots for the pool's ``bootTime``, then its kubelet registers the Node
  (``Kubelets.register``) with the pool's taints and startup taints.
  ``node.kubernetes.io/not-ready`` is what the ``TaintNodesByCondition`` admission plugin puts on
  every new Node (the node lifecycle controller lifts it once the node is Ready);
  ``node.kubernetes.io/network-unavailable`` follows the ``NetworkUnavailable`` condition the
  kubelet registers with on clouds that configure routes, set ``False`` (``RouteCreated``)
  ``clearAfter`` registration as the route controller does; any other startup taint is removed
  ``clearAfter`` registration by its manager (a node agent finishing its setup). Without a node
  lifecycle controller in the cluster, every startup taint is a plain taint, removed by its
  manager ``clearAfter`` registration (kept if it has no ``clearAfter``).
- **Shrinking a ``nodes`` pool** removes its newest machines: powered off and their Nodes
  deleted, as cluster-autoscaler's scale-down and the cloud node lifecycle controller do.
- **The node agent**'s settings of a pool (``agent:``) apply to the nodes with its pool label.
- **Scaling a ``clusterapi`` pool** patches its MachineDeployments' replicas through the
  ``scale`` subresource as the action's manager (cluster-autoscaler by default), the total
  spread over the zones; Cluster API does the rest.

A write that fails while setting nodes up is reported through the ``fail`` callback; the story
goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from random import Random
from typing import Any

from kubemedic.sim.cluster.agent.agents import AgentSettings
from kubemedic.sim.cluster.assembly import Cluster
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.objects import Change, Obj
from kubemedic.sim.scenarios import generating
from kubemedic.sim.scenarios.spec import NodePool, ScalePool, Scenario

__all__ = ["CAPI_VERSION", "MD_STORE", "POOL_LABEL", "ZONE_LABEL", "NodePools"]

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


@dataclass
class _PoolState:
    spec: NodePool
    next_index: int = 1
    machine_deployments: list[str] = field(default_factory=list)


class NodePools:
    """A scenario's node pools on ``cluster``. ``random`` is the run's seeded source (boot
    times and ``clearAfter`` delays are drawn from it, in the order things happen), ``client``
    gives the run's client for a field manager, ``fail`` records a failed write."""

    def __init__(
        self,
        scenario: Scenario,
        cluster: Cluster,
        *,
        random: Random,
        client: Callable[[str], Client],
        fail: Callable[[str], None],
    ) -> None:
        self.scenario = scenario
        self.cluster = cluster
        self.sim = cluster.sim
        self.random = random
        self._client = client
        self._fail = fail
        self._pools = {p.name: _PoolState(p) for p in scenario.pools}
        self._ip = 0
        self._startup_conditions: dict[str, list[str]] = {}

    def provision(self) -> None:
        """Put the pools in place as they were when the story begins: ``nodes`` pools stored,
        ``clusterapi`` pools applied and run (cluster time passes) until their nodes are Ready."""
        self.sim.watch("nodes", self._on_node)
        self._configure_agents()
        now = self.sim.now()
        loaded: list[Obj] = []
        for state in self._pools.values():
            if state.spec.provider == "nodes":
                for _ in range(state.spec.count):
                    loaded.append(self._registered_node(state, created=now - timedelta(days=1)))
        if loaded:
            self.sim.server.load(loaded)
        self._provision_clusterapi_pools()

    def _configure_agents(self) -> None:
        """The node agent's settings of each pool that names some (by the pool label)."""
        if self.cluster.agent is None:
            return
        for state in self._pools.values():
            agent = state.spec.agent
            if agent is not None:
                settings = AgentSettings(
                    enabled=agent.enabled,
                    heartbeat=agent.heartbeat,
                    self_repair=agent.self_repair,
                    grace=agent.grace,
                    cooldown=agent.cooldown,
                    max_restarts=agent.max_restarts,
                )
                self.cluster.agent.configure({POOL_LABEL: state.spec.name}, settings)

    def nodes(self, pool: str) -> list[str]:
        """Names of the pool's nodes now in the API, sorted."""
        return sorted(
            str(n["metadata"]["name"])
            for n in self.sim.objects("nodes")
            if (n["metadata"].get("labels") or {}).get(POOL_LABEL) == pool
        )

    def scale(self, action: ScalePool) -> str:
        """Carry out a ``scale-pool`` action; says what it did."""
        state = self._pools[action.pool]
        if state.spec.provider == "clusterapi":
            return self._scale_machine_deployments(state, action)
        current = self.nodes(action.pool)
        wanted = len(current) + action.add if action.add is not None else action.replicas or 0
        if wanted < len(current):
            return self._remove_nodes(action.pool, current, len(current) - wanted)
        add = wanted - len(current)
        for i in range(add):
            delay = action.over * i / (add - 1) if add > 1 else 0.0
            self.sim.after(delay, lambda: self._add_node(state), name="scenario:machine")
        return f"{action.pool}: {add} new machines over {action.over:g}s"

    def untaint(self, name: str, key: str, *, manager: str) -> None:
        """Remove the taint ``key`` from node ``name`` as ``manager`` (if it has it)."""
        node = self.sim.get("nodes", "", name)
        if node is None:
            return
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if t.get("key") != key]
        if len(kept) != len(taints):
            self._client(manager).patch("v1", "Node", name, {"spec": {"taints": kept or None}})

    # building nodes ----------------------------------------------------------------------------

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
        client = self._client(managers.KUBECTL)
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
        self._fail(f"Cluster API pools not ready after {PROVISIONING_LIMIT:.0f}s")

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

    # scaling -------------------------------------------------------------------------------------

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
            self.sim.after(host.boot_seconds, _bind_create(self._client(managers.KUBELET), body))

    # startup taints and conditions -------------------------------------------------------------

    def _on_node(self, change: Change) -> None:
        if change.type != "ADDED":
            return
        name = str(change.obj["metadata"]["name"])
        keys = self._startup_conditions.pop(name, None)
        if keys:
            # Listeners must not write: the kubelet's first status follows at the next step.
            self.sim.after(0.0, lambda: self._set_startup_conditions(name, keys))

    def _set_startup_conditions(self, name: str, keys: list[str]) -> None:
        now = self.sim.stamp()
        conditions = []
        for key in keys:
            type_ = CONDITION_TAINTS[key][0]
            reason, message = _CONDITION_SET[type_]
            conditions.append(_condition(type_, "True", reason, message, now))
        try:
            self._client(managers.KUBELET).patch(
                "v1", "Node", name, {"status": {"conditions": conditions}}, subresource="status"
            )
        except errors.StatusError as exc:
            self._fail(f"registering {name}'s conditions: {exc.message}")

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
                condition = _condition(type_, "False", reason, message, self.sim.stamp())
                self._client(manager).patch(
                    "v1",
                    "Node",
                    name,
                    {"status": {"conditions": [condition]}},
                    subresource="status",
                )
            else:
                self.untaint(name, key, manager=manager)
        except errors.StatusError as exc:
            self._fail(f"clearing {key} on {name}: {exc.message}")


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
