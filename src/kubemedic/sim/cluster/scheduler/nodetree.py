"""Which nodes a scheduling cycle looks at, in which order: the node tree's zone-by-zone order
and ``numFeasibleNodesToFind`` (``pkg/scheduler/schedule_one.go``, Kubernetes 1.32)."""

from __future__ import annotations

from collections.abc import Iterable

from kubemedic.sim.cluster.scheduler.filtering import NodeInfo

__all__ = ["feasible_nodes_to_find", "node_tree_order"]

_ZONE = "topology.kubernetes.io/zone"


def node_tree_order(nodes: Iterable[NodeInfo]) -> list[NodeInfo]:
    """The order the scheduler's node tree lists nodes in: one node of each zone (region and
    ``topology.kubernetes.io/zone``) in turn, zones in the order they were first seen."""
    zones: dict[tuple[str, str], list[NodeInfo]] = {}
    for info in nodes:
        labels = info.labels
        key = (labels.get("topology.kubernetes.io/region", ""), labels.get(_ZONE, ""))
        zones.setdefault(key, []).append(info)
    lists = list(zones.values())
    order: list[NodeInfo] = []
    for i in range(max((len(x) for x in lists), default=0)):
        order.extend(x[i] for x in lists if i < len(x))
    return order


def feasible_nodes_to_find(count: int, percentage: int = 0) -> int:
    """``numFeasibleNodesToFind``: every node below 100, else ``percentage`` of them (0: the
    adaptive 50% - N/125, at least 5%), at least 100."""
    if count < 100:
        return count
    percentage = percentage or max(5, 50 - count // 125)
    return max(100, count * percentage // 100)
