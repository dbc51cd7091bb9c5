"""Dump a simulated cluster the way ``kubectl get ... -o json`` would, for ``kubemedic scan``.

The snapshot is one ``List`` (``{"apiVersion": "v1", "kind": "List", "items": [...]}``), each
item carrying its ``apiVersion`` and ``kind`` as kubectl prints items of a mixed list. It holds
what ``kubectl get nodes,pods,events,deployments,replicasets,daemonsets,... -A -o json`` plus
``kubectl get --raw /apis/metrics.k8s.io/...`` would return at the scenario's end: events in the
``core/v1`` form (the form ``kubectl get events`` prints), metrics refreshed from the usage model
first (as metrics-server would serve them). A name ending in ``.gz`` is written gzipped. The file
is written atomically, so an interrupted run never leaves half a snapshot.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson

from kubemedic.output.files import write_atomically
from kubemedic.sim.apiserver.server import ApiServer

__all__ = ["SNAPSHOT_KINDS", "snapshot", "write_snapshot"]

#: (apiVersion, kind) in the order the snapshot lists them.
SNAPSHOT_KINDS: tuple[tuple[str, str], ...] = (
    ("v1", "Namespace"),
    ("v1", "Node"),
    ("v1", "Pod"),
    ("v1", "Event"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("policy/v1", "PodDisruptionBudget"),
    ("coordination.k8s.io/v1", "Lease"),
    ("metrics.k8s.io/v1beta1", "NodeMetrics"),
    ("metrics.k8s.io/v1beta1", "PodMetrics"),
    ("cluster.x-k8s.io/v1beta1", "MachineDeployment"),
    ("cluster.x-k8s.io/v1beta1", "MachineSet"),
    ("cluster.x-k8s.io/v1beta1", "Machine"),
)


def snapshot(server: ApiServer) -> dict[str, Any]:
    """Everything the checks read, as one ``List``."""
    items: list[dict[str, Any]] = []
    for api_version, kind in SNAPSHOT_KINDS:
        res = server.registry.for_kind(api_version, kind)
        if res is None:
            continue
        refresh = server.read_hooks.get(res.store_key)
        if refresh is not None:
            refresh()
        for _, entry in server.store.scan(res.store_key):
            obj = entry.obj
            if obj.get("apiVersion") != api_version or obj.get("kind") != kind:
                obj = {"apiVersion": api_version, "kind": kind, **obj}
            items.append(obj)
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def write_snapshot(
    path: Path, server: ApiServer, *, force: bool = False, flag: str = "--snapshot-out"
) -> int:
    """Write the snapshot to ``path`` (gzipped for ``.gz``) atomically, never over a directory,
    link or special file unless ``force``; returns the number of items."""
    body = snapshot(server)
    data = orjson.dumps(body, option=orjson.OPT_INDENT_2)
    if path.suffix == ".gz":
        data = gzip.compress(data, compresslevel=6, mtime=0)
    write_atomically(path, data, flag=flag, force=force)
    return len(body["items"])
