"""Object factories for tests: the package's own builders, under a short name."""

from kubemedic.testing.builders import (
    container,
    deployment,
    event,
    managed_entry,
    node,
    node_metrics,
    pod,
    pod_metrics,
    priority_class,
    replicaset,
    stamp,
    uid_for,
)

__all__ = [
    "container",
    "deployment",
    "event",
    "managed_entry",
    "node",
    "node_metrics",
    "pod",
    "pod_metrics",
    "priority_class",
    "replicaset",
    "stamp",
    "uid_for",
]
