"""The old name of :mod:`kubemedic.testing.bodies` (minimal object bodies)."""

# TODO(reshape): remove after cli/sim imports move (tests/sim/* import this module)
from kubemedic.testing.bodies import (
    BASE_TIME,
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
    "BASE_TIME",
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
