"""The bundled cluster snapshots: the three incidents of INCIDENTS.md and a healthy control.

Each function returns the object bodies of one cluster at one moment, as the API server would
serve them; ``main()`` writes them where ``kubemedic demo`` finds them
(``kubemedic/data/snapshots/<name>/``), split by kind the way a person dumps a cluster::

    kubectl get nodes -o json > nodes.json
    kubectl get deploy,rs,sts,ds -A -o json --show-managed-fields > workloads.json
    kubectl get pods -A -o json > pods.json
    kubectl get events -A -o json > events.json
    kubectl get podmetrics,nodemetrics -A -o json > metrics.json

Each directory also holds an ``ABOUT`` file (title, then the story) for the demo.
``1-live-edit-storm`` and ``3-hub-eviction`` compress their largest files (``.json.gz``) and
``2-node-repair`` is written as multi-document YAML, so the bundled data exercises every
snapshot format. Output is
deterministic: generating twice gives identical bytes (gzip without a timestamp).

Regenerate with ``PYTHONPATH=src python -m kubemedic.testing.incidents [OUTPUT_DIR]``.
"""

from __future__ import annotations

import gzip
import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kubemedic.testing import _control_cluster, _hub_scaleout, _repair_cluster, _storm_build

__all__ = [
    "SNAPSHOTS",
    "Snapshot",
    "healthy_control",
    "hub_eviction",
    "live_edit_storm",
    "main",
    "node_repair",
    "render",
    "write_snapshots",
]

Obj = dict[str, Any]

DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "data" / "snapshots"

FILES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("nodes", ("Node",)),
    ("workloads", ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")),
    ("pods", ("Pod",)),
    ("events", ("Event",)),
    ("metrics", ("PodMetrics", "NodeMetrics")),
    ("priorityclasses", ("PriorityClass",)),
)
"""Output files and the kinds each holds, in ``kubectl get a,b`` order (kind, then
namespace and name, as the API server lists them)."""

RESOURCES = {
    "Node": "nodes",
    "Deployment": "deployments",
    "ReplicaSet": "replicasets",
    "StatefulSet": "statefulsets",
    "DaemonSet": "daemonsets",
    "Job": "jobs",
    "CronJob": "cronjobs",
    "Pod": "pods",
    "Event": "events",
    "PodMetrics": "podmetrics",
    "NodeMetrics": "nodemetrics",
    "PriorityClass": "priorityclasses",
}


def live_edit_storm() -> list[Obj]:
    """Incident 1: ``kubectl edit`` pinned ``nodeName``, Argo CD restored 12 replicas, the
    kubelet rejects every pod that does not fit (``OutOfmemory``) and the ReplicaSet replaces it."""
    return _storm_build.build()


def node_repair() -> list[Obj]:
    """Incident 2: one worker unreachable for 12 minutes, another with its runtime down."""
    return _repair_cluster.build()


def hub_eviction() -> list[Obj]:
    """Incident 3: Prometheus beside the hub at 93%/124% of memory, 100 nodes in one minute,
    the hub's liveness failures and eviction, Dask workers unschedulable."""
    return _hub_scaleout.build()


def healthy_control() -> list[Obj]:
    """A cluster run as the postmortems recommend: no finding at warning or above."""
    return _control_cluster.build()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One bundled snapshot. The directory name sorts in the order ``kubemedic demo`` shows
    them; ``title`` and ``story`` become its ``ABOUT`` file (first line the title)."""

    name: str
    build: Callable[[], list[Obj]]
    title: str
    story: str
    yaml: bool = False
    gzip: tuple[str, ...] = ()
    """Files (by stem) written as ``.json.gz``."""


SNAPSHOTS: tuple[Snapshot, ...] = (
    Snapshot(
        "1-live-edit-storm",
        live_edit_storm,
        "Incident 1: the live edit GitOps never saw",
        "An engineer ran kubectl edit to scale the API gateway to 1 and pin it to one node with "
        "spec.template.spec.nodeName. Argo CD restored 12 replicas from Git but never saw the "
        "added nodeName, so 12 x 800Mi pods went to one ~8 GiB node: the kubelet rejects each "
        "one that does not fit (OutOfmemory) and the ReplicaSet replaces it at once, forever.",
        gzip=("pods", "events"),
    ),
    Snapshot(
        "2-node-repair",
        node_repair,
        "Incident 2: worker nodes that need repairing",
        "A Cluster API + OpenStack cluster: one worker stopped posting its status 12 minutes "
        "ago (past the 10-minute drain-and-reboot line), another reports its container "
        "runtime down for 4 minutes.",
        yaml=True,
    ),
    Snapshot(
        "3-hub-eviction",
        hub_eviction,
        "Incident 3: the monitoring that evicted the hub",
        "Prometheus (20Gi request, 22Gi limit) shares a core node with the JupyterHub hub "
        "(10m / 128Mi): 93% of the node's memory requested, 124% in limits. 100 nodes joined "
        "in one minute for Dask workers, Prometheus grew, and the kubelet evicted the hub, "
        "whose liveness probe had already failed 30 times in 5 minutes.",
        gzip=("nodes", "pods", "events", "metrics"),
    ),
    Snapshot(
        "4-healthy-control",
        healthy_control,
        "Control: the same workloads, run as the postmortems recommend",
        "No pinned nodes, generous requests for the hub, proxy and ingress, Prometheus on its "
        "own node pool, every node Ready, nothing Failed. kubemedic should find nothing.",
    ),
)


def _order(body: Obj) -> tuple[str, str]:
    meta = body.get("metadata", {})
    return (meta.get("namespace") or "", meta.get("name") or "")


def _grouped(bodies: Iterable[Obj], kinds: Sequence[str]) -> list[Obj]:
    chosen = [b for b in bodies if b.get("kind") in kinds]
    return sorted(chosen, key=lambda b: (kinds.index(b["kind"]), *_order(b)))


def render(snapshot: Snapshot) -> dict[str, bytes]:
    """File name -> content for one snapshot (nothing written)."""
    bodies = snapshot.build()
    known = {kind for _, kinds in FILES for kind in kinds}
    stray = sorted({str(b.get("kind")) for b in bodies} - known)
    if stray:
        raise ValueError(f"{snapshot.name}: no output file for kinds {', '.join(stray)}")
    about = "\n".join([snapshot.title, *textwrap.wrap(snapshot.story, width=79)])
    files: dict[str, bytes] = {"ABOUT": (about + "\n").encode()}
    for stem, kinds in FILES:
        items = _grouped(bodies, kinds)
        if not items:
            continue
        if snapshot.yaml:
            present = [RESOURCES[k] for k in kinds if any(i["kind"] == k for i in items)]
            header = f"# kubectl get {','.join(present)} -A -o yaml, one document per object\n"
            text = header + yaml.safe_dump_all(
                items, sort_keys=False, explicit_start=True, width=100, allow_unicode=True
            )
            files[f"{stem}.yaml"] = text.encode()
            continue
        document = {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
        data = (json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode()
        if stem in snapshot.gzip:
            files[f"{stem}.json.gz"] = gzip.compress(data, compresslevel=9, mtime=0)
        else:
            files[f"{stem}.json"] = data
    return files


def write_snapshots(root: Path = DEFAULT_ROOT) -> list[Path]:
    """Write every snapshot under ``root``, removing files a snapshot no longer has."""
    written = []
    for snapshot in SNAPSHOTS:
        directory = root / snapshot.name
        directory.mkdir(parents=True, exist_ok=True)
        files = render(snapshot)
        for old in directory.iterdir():
            if old.is_file() and old.name not in files:
                old.unlink()
        for name, content in files.items():
            path = directory / name
            path.write_bytes(content)
            written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    root = Path(args[0]) if args else DEFAULT_ROOT
    for path in write_snapshots(root):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
