"""Synthetic nodes: pools labelled the ways clouds do, a few NotReady nodes, NodeMetrics.

Each pool is identified by the label its provisioner sets (GKE, EKS, AKS, Karpenter), so the
checks' pool detection is exercised on every convention at once. About 2% of nodes are
NotReady the way the node lifecycle controller leaves them when the kubelet stops posting
status: Ready ``Unknown`` (``NodeStatusUnknown``), a stale heartbeat and the
``node.kubernetes.io/unreachable:NoExecute`` taint. metrics-server reports only on nodes whose
kubelet answers, so NodeMetrics exist for the Ready ones only.
"""

from __future__ import annotations

import random
from datetime import timedelta

from kubemedic.testing import bodies as b
from synthetic_templates import NOW, Obj, copier, uid

POOLS = (  # (pool label key, value, share of nodes, cpu, memory)
    ("cloud.google.com/gke-nodepool", "core-pool", 0.04, "8", "32Gi"),
    ("cloud.google.com/gke-nodepool", "user-pool", 0.30, "16", "64Gi"),
    ("eks.amazonaws.com/nodegroup", "workers", 0.30, "8", "32Gi"),
    ("kubernetes.azure.com/agentpool", "batch", 0.16, "32", "128Gi"),
    ("karpenter.sh/nodepool", "dask", 0.20, "4", "16Gi"),
)


def nodes(rng: random.Random, count: int) -> tuple[list[Obj], list[str], dict[str, str]]:
    """``count`` nodes spread over ``POOLS`` by share; returns (nodes, names, name -> pool)."""
    result, names, pool_of = [], [], {}
    index = 0
    for key, pool, share, cpu, memory in POOLS:
        healthy = copier(
            b.node(
                "tpl",
                cpu=cpu,
                memory=memory,
                labels={key: pool},
                heartbeat=NOW - timedelta(seconds=20),
                created=-timedelta(days=9),
            )
        )
        for _ in range(max(1, round(count * share)) if index < count else 0):
            if index >= count:
                break
            name = f"{pool}-{index:05d}"
            body = healthy()
            meta = body["metadata"]
            meta.update(name=name, uid=uid("node", index))
            meta["labels"]["kubernetes.io/hostname"] = name
            body["spec"]["providerID"] = f"openstack:///{uid('vm', index)}"
            if rng.random() < 0.02:
                cond = body["status"]["conditions"][-1]
                cond.update(
                    status="Unknown",
                    reason="NodeStatusUnknown",
                    message="Kubelet stopped posting node status.",
                    lastHeartbeatTime=b.stamp(NOW - timedelta(minutes=rng.randint(3, 50))),
                )
                body["spec"]["taints"] = [
                    {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
                ]
            result.append(body)
            names.append(name)
            pool_of[name] = pool
            index += 1
    return result, names, pool_of


def is_ready(node: Obj) -> bool:
    """Whether the node's Ready condition (the builders put it last) is ``True``."""
    return bool(node["status"]["conditions"][-1]["status"] == "True")


def node_metrics(rng: random.Random, ready: list[Obj]) -> list[Obj]:
    """NodeMetrics for each of the ``ready`` nodes, usage drawn at random."""
    return [
        b.node_metrics(
            n["metadata"]["name"],
            cpu=f"{rng.randint(200, 3000)}m",
            memory=f"{rng.randint(2, 12)}Gi",
            at=NOW,
        )
        for n in ready
    ]
