"""kube-controller-manager's loops: ReplicaSet, Deployment (rollouts), DaemonSet, StatefulSet,
PodGC, node lifecycle and taint eviction.

May import: :mod:`kubemedic.sim.cluster.runtime`, :mod:`kubemedic.sim.apiserver` (options and
types), :mod:`kubemedic.sim.machinery`, :mod:`kubemedic.model`; no other component group.
"""

from kubemedic.sim.cluster.controllers.daemonsets import DaemonSetController
from kubemedic.sim.cluster.controllers.deployments import DeploymentController
from kubemedic.sim.cluster.controllers.nodelifecycle import NodeLifecycleController
from kubemedic.sim.cluster.controllers.podgc import PodGC
from kubemedic.sim.cluster.controllers.replicasets import ReplicaSetController
from kubemedic.sim.cluster.controllers.statefulsets import StatefulSetController

__all__ = [
    "DaemonSetController",
    "DeploymentController",
    "NodeLifecycleController",
    "PodGC",
    "ReplicaSetController",
    "StatefulSetController",
]
