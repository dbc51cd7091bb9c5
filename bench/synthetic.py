"""A large, realistic, deterministic synthetic snapshot for the scan benchmark.

Shapes come from ``kubemedic.testing.bodies``; to stay fast, one template is built per shape
(node pool, workload, pod phase, event reason) and each object is a copy of it
(``orjson.loads`` of the template's bytes) with names, uids, placement and times varied. Files
are split by kind as ``kubectl get <kind> -A -o json`` prints them (a ``List``).

What is in it, besides the bulk of healthy Running pods of Deployments:

* node pools labelled the ways clouds do (GKE, EKS, AKS, Karpenter), about 2% of
  nodes NotReady (``Unknown``, unreachable taint, stale heartbeat), NodeMetrics for the rest;
* three DaemonSets with a pod on every node; Deployments with one ReplicaSet each, sidecars and
  init containers in some; ``managedFields`` on every workload (Argo CD, controller manager,
  now and then a ``kubectl-edit``), including a few Deployments pinned by ``nodeName`` whose
  ReplicaSets churn ``OutOfmemory`` pods;
* a share of Failed (``OutOfmemory`` admission rejections, ``Evicted``) and Pending pods;
* a memory-hungry Prometheus beside hub pods on core nodes, PodMetrics for ~60% of pods;
* events of many reasons (Scheduled, Pulled, Started, FailedScheduling, Unhealthy, BackOff,
  Evicted, OOMKilling, Killing, NodeNotReady, SuccessfulCreate, ...), 5% in events.k8s.io/v1.

The parts are built by ``synthetic_nodes``, ``synthetic_workloads`` (with ``synthetic_pods``)
and ``synthetic_events``, from templates copied by ``synthetic_templates``; this module draws
them in a fixed order from one seeded ``random.Random`` (so the order of the calls below is
part of the output) and writes the files.
"""

from __future__ import annotations

import random
from pathlib import Path

import orjson

import synthetic_events
import synthetic_nodes
import synthetic_pods
import synthetic_workloads
from kubemedic.testing import bodies as b
from synthetic_templates import Obj, uid


class _Writer:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.sizes: dict[str, int] = {}

    def write(self, name: str, items: list[Obj]) -> None:
        document = {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
        data = orjson.dumps(document, option=orjson.OPT_INDENT_2)
        (self.directory / name).write_bytes(data)
        self.sizes[name] = len(data)


def write_snapshot(
    directory: Path, *, nodes: int, pods: int, events: int, seed: int = 7, heavy: bool = False
) -> dict[str, int]:
    """Write the snapshot files into ``directory``; returns file name -> bytes. ``heavy`` adds
    the bulky pod fields no check reads (volumes, env, ports, mounts)."""
    rng = random.Random(seed)
    directory.mkdir(parents=True, exist_ok=True)
    out = _Writer(directory)

    node_list, node_names, pool_of = synthetic_nodes.nodes(rng, nodes)
    ready = [n for n in node_list if synthetic_nodes.is_ready(n)]
    out.write("nodes.json", node_list)
    out.write("nodemetrics.json", synthetic_nodes.node_metrics(rng, ready))
    out.write(
        "priorityclasses.json",
        [
            b.priority_class("high", 1_000_000),
            b.priority_class("batch-low", -10),
            b.priority_class("default", 0, global_default=True),
        ],
    )
    namespaces = [f"team-{i:03d}" for i in range(200)]
    out.write(
        "namespaces.json",
        [
            {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ns, "uid": uid("ns", i)},
                "status": {"phase": "Active"},
            }
            for i, ns in enumerate(namespaces)
        ],
    )

    ready_names = [n["metadata"]["name"] for n in ready]
    core = [name for name in ready_names if pool_of[name] == "core-pool"] or ready_names
    pod_list: list[Obj] = []
    ds_list = synthetic_workloads.daemonsets(node_names, pod_list, pods, heavy=heavy)
    deployments, replicasets = synthetic_workloads.deployments(
        rng,
        namespaces=namespaces,
        nodes=ready_names,
        core=core,
        pod_list=pod_list,
        budget=pods - len(pod_list),
        heavy=heavy,
    )
    out.write("daemonsets.json", ds_list)
    out.write("deployments.json", deployments)
    out.write("replicasets.json", replicasets)
    out.write("pods.json", pod_list)
    out.write("podmetrics.json", synthetic_pods.pod_metrics(rng, pod_list))
    del replicasets, deployments
    core_events, new_events = synthetic_events.events(rng, pod_list, node_list, events)
    out.write("events.json", core_events)
    out.write("events-v1.json", new_events)
    return out.sizes
