"""A whole simulated cluster: the emulator plus every component, wired in sync order.

:func:`build` creates a :class:`~kubemedic.sim.cluster.runtime.engine.Simulation` and adds the
components in the order a change flows through a real cluster, so one engine pass carries a write as
far as it would go in one informer round trip:

1. controllers: Deployment, ReplicaSet, DaemonSet, StatefulSet (kube-controller-manager);
2. the scheduler (kube-scheduler);
3. the kubelets, then the kubelets' eviction manager, OOM killer and probes (``pressure``), then
   kubemedic's node agent on every node (``agent``: its own process next to the kubelet);
4. the node lifecycle controller and PodGC (kube-controller-manager);
5. Cluster API (MachineDeployment -> MachineSet -> Machine -> Node, and its infrastructure
   provider), then the cluster-autoscaler;
6. metrics-server.

One :class:`~kubemedic.sim.cluster.runtime.hosts.Hosts` is shared by the kubelets, the pressure
model, the node agents, Cluster API's infrastructure provider and the scenarios (which break
hosts), and one :class:`~kubemedic.sim.cluster.runtime.usage.UsageModel` by the pressure model
and metrics-server; the usage model is attached first so its node count is current before anyone
reads it.

``only`` builds a partial cluster (tests of one behaviour, or an API server with a scheduler
and nothing else); components that another needs come along (``pressure`` and ``metrics``
need the usage model). Attributes of components left out are ``None``.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts

if TYPE_CHECKING:
    from kubemedic.sim.cluster.agent.agents import NodeAgents
    from kubemedic.sim.cluster.controllers.daemonsets import DaemonSetController
    from kubemedic.sim.cluster.controllers.deployments import DeploymentController
    from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController
    from kubemedic.sim.cluster.controllers.podgc import PodGC
    from kubemedic.sim.cluster.controllers.replicasets import ReplicaSetController
    from kubemedic.sim.cluster.controllers.statefulsets import StatefulSetController
    from kubemedic.sim.cluster.infra.autoscaling import Autoscaler
    from kubemedic.sim.cluster.infra.clusterapi import ClusterAPI
    from kubemedic.sim.cluster.kubelet.kubelets import Kubelets
    from kubemedic.sim.cluster.kubelet.pressure import NodePressure
    from kubemedic.sim.cluster.metricsserver import MetricsServer
    from kubemedic.sim.cluster.runtime.usage import UsageModel
    from kubemedic.sim.cluster.scheduler.scheduling import Scheduler

__all__ = ["COMPONENTS", "Cluster", "build"]

#: Component names in sync order.
COMPONENTS: tuple[str, ...] = (
    "deployments",
    "replicasets",
    "daemonsets",
    "statefulsets",
    "scheduler",
    "kubelets",
    "pressure",
    "agent",
    "nodelifecycle",
    "podgc",
    "clusterapi",
    "autoscaler",
    "metrics",
)


@dataclass
class Cluster:
    """The simulation and its components (``None`` for one left out by ``build(only=...)``)."""

    sim: Simulation
    hosts: Hosts
    usage: UsageModel | None = None
    deployments: DeploymentController | None = None
    replicasets: ReplicaSetController | None = None
    daemonsets: DaemonSetController | None = None
    statefulsets: StatefulSetController | None = None
    scheduler: Scheduler | None = None
    kubelets: Kubelets | None = None
    pressure: NodePressure | None = None
    agent: NodeAgents | None = None
    nodelifecycle: NodeLifecycleController | None = None
    podgc: PodGC | None = None
    clusterapi: ClusterAPI | None = None
    autoscaler: Autoscaler | None = None
    metrics: MetricsServer | None = None

    @property
    def server(self) -> ApiServer:
        return self.sim.server


def build(
    *,
    start: datetime | None = None,
    seed: int = 0,
    event_ttl: timedelta = timedelta(hours=1),
    resolution: float = 1.0,
    only: Collection[str] | None = None,
) -> Cluster:
    """A cluster with every component (or those named in ``only``), clock paused at ``start``."""
    wanted = set(COMPONENTS if only is None else only)
    unknown = wanted - set(COMPONENTS)
    if unknown:
        raise ValueError(f"unknown components {sorted(unknown)}; known: {', '.join(COMPONENTS)}")
    sim = Simulation(start=start, seed=seed, resolution=resolution, event_ttl=event_ttl)
    cluster = Cluster(sim=sim, hosts=Hosts(seed=seed))
    hosts = cluster.hosts
    if wanted & {"pressure", "metrics"} or only is None:
        from kubemedic.sim.cluster.runtime.usage import UsageModel  # noqa: PLC0415

        cluster.usage = sim.add(UsageModel())
    usage = cluster.usage
    for name in COMPONENTS:
        if name not in wanted:
            continue
        if name == "deployments":
            from kubemedic.sim.cluster.controllers.deployments import DeploymentController  # noqa: PLC0415

            cluster.deployments = sim.add(DeploymentController())
        elif name == "replicasets":
            from kubemedic.sim.cluster.controllers.replicasets import ReplicaSetController  # noqa: PLC0415

            cluster.replicasets = sim.add(ReplicaSetController())
        elif name == "daemonsets":
            from kubemedic.sim.cluster.controllers.daemonsets import DaemonSetController  # noqa: PLC0415

            cluster.daemonsets = sim.add(DaemonSetController())
        elif name == "statefulsets":
            from kubemedic.sim.cluster.controllers.statefulsets import StatefulSetController  # noqa: PLC0415

            cluster.statefulsets = sim.add(StatefulSetController())
        elif name == "scheduler":
            from kubemedic.sim.cluster.scheduler.scheduling import Scheduler  # noqa: PLC0415

            cluster.scheduler = sim.add(Scheduler())
        elif name == "kubelets":
            from kubemedic.sim.cluster.kubelet.kubelets import Kubelets  # noqa: PLC0415

            cluster.kubelets = sim.add(Kubelets(hosts))
        elif name == "pressure":
            from kubemedic.sim.cluster.kubelet.pressure import NodePressure  # noqa: PLC0415

            assert usage is not None
            cluster.pressure = sim.add(NodePressure(hosts, usage))
        elif name == "agent":
            from kubemedic.sim.cluster.agent.agents import NodeAgents  # noqa: PLC0415

            cluster.agent = sim.add(NodeAgents(hosts))
        elif name == "nodelifecycle":
            from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController  # noqa: PLC0415

            cluster.nodelifecycle = sim.add(NodeLifecycleController())
        elif name == "podgc":
            from kubemedic.sim.cluster.controllers.podgc import PodGC  # noqa: PLC0415

            cluster.podgc = sim.add(PodGC())
        elif name == "clusterapi":
            from kubemedic.sim.cluster.infra.clusterapi import ClusterAPI  # noqa: PLC0415

            cluster.clusterapi = sim.add(ClusterAPI(hosts))
        elif name == "autoscaler":
            from kubemedic.sim.cluster.infra.autoscaling import Autoscaler  # noqa: PLC0415

            cluster.autoscaler = sim.add(Autoscaler())
        elif name == "metrics":
            from kubemedic.sim.cluster.metricsserver import MetricsServer  # noqa: PLC0415

            assert usage is not None
            cluster.metrics = sim.add(MetricsServer(usage))
    return cluster
