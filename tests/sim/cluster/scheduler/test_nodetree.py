"""The nodes a scheduling cycle looks at and their order."""

from kubemedic.sim.cluster.scheduler import filtering, nodetree
from kubemedic.testing import bodies as b


def test_nodes_are_visited_one_zone_at_a_time() -> None:
    nodes = [
        filtering.node_info(b.node(f"n{i}", labels={"topology.kubernetes.io/zone": zone}))
        for i, zone in enumerate("aaabbc")
    ]
    order = [n.name for n in nodetree.node_tree_order(nodes)]
    assert order == ["n0", "n3", "n5", "n1", "n4", "n2"]


def test_large_clusters_filter_only_enough_nodes_to_score() -> None:
    assert nodetree.feasible_nodes_to_find(80) == 80
    assert nodetree.feasible_nodes_to_find(500) == 230  # 46%
    assert nodetree.feasible_nodes_to_find(2000) == 680  # 34%
    assert nodetree.feasible_nodes_to_find(6000) == 300  # 5%
    assert nodetree.feasible_nodes_to_find(1000, 5) == 100
