"""The collections kubemedic reads, as ``Kind`` constants shared by scans, reflectors and the
recorder.

Each names the group/version the checks understand. Secrets are deliberately absent: nothing in
kubemedic lists or watches them, so a read-only ClusterRole never has to grant them.
"""

from __future__ import annotations

from kubemedic.kube.api import Kind

__all__ = [
    "CRONJOBS",
    "DAEMONSETS",
    "DEPLOYMENTS",
    "EVENTS",
    "JOBS",
    "LEASES",
    "MACHINES",
    "MACHINE_DEPLOYMENTS",
    "MACHINE_SETS",
    "NODES",
    "NODE_METRICS",
    "PODS",
    "POD_METRICS",
    "PRIORITY_CLASSES",
    "REPLICASETS",
    "REPLICATION_CONTROLLERS",
    "STATEFULSETS",
]

NODES = Kind("", "v1", "nodes", "Node", namespaced=False)
PODS = Kind("", "v1", "pods", "Pod", namespaced=True)
EVENTS = Kind("", "v1", "events", "Event", namespaced=True)
REPLICATION_CONTROLLERS = Kind(
    "", "v1", "replicationcontrollers", "ReplicationController", namespaced=True
)
DEPLOYMENTS = Kind("apps", "v1", "deployments", "Deployment", namespaced=True)
REPLICASETS = Kind("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)
DAEMONSETS = Kind("apps", "v1", "daemonsets", "DaemonSet", namespaced=True)
STATEFULSETS = Kind("apps", "v1", "statefulsets", "StatefulSet", namespaced=True)
JOBS = Kind("batch", "v1", "jobs", "Job", namespaced=True)
CRONJOBS = Kind("batch", "v1", "cronjobs", "CronJob", namespaced=True)
PRIORITY_CLASSES = Kind(
    "scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", namespaced=False
)
#: metrics.k8s.io is an aggregated API served by metrics-server, absent on many clusters.
POD_METRICS = Kind("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", namespaced=True)
NODE_METRICS = Kind("metrics.k8s.io", "v1beta1", "nodes", "NodeMetrics", namespaced=False)
LEASES = Kind("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True)
MACHINES = Kind("cluster.x-k8s.io", "v1beta1", "machines", "Machine", namespaced=True)
MACHINE_SETS = Kind("cluster.x-k8s.io", "v1beta1", "machinesets", "MachineSet", namespaced=True)
MACHINE_DEPLOYMENTS = Kind(
    "cluster.x-k8s.io", "v1beta1", "machinedeployments", "MachineDeployment", namespaced=True
)
