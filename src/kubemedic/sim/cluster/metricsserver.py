"""metrics-server: ``metrics.k8s.io/v1beta1`` NodeMetrics and PodMetrics from the usage model.

The real metrics-server scrapes every kubelet's resource endpoint each ``--metric-resolution``
(15 s by default), keeps the latest points in memory and answers reads of the aggregated
``metrics.k8s.io`` API from them (``pkg/storage``, ``pkg/api`` of kubernetes-sigs/metrics-server):

- a NodeMetrics per node it could scrape: ``metadata`` with the node's name and labels and a
  ``creationTimestamp`` of the read, ``timestamp`` of the scrape, ``window`` (the interval the
  CPU rate was computed over), ``usage.cpu`` in nanocores (``412345678n``, as
  ``resource.NewScaledQuantity(n, -9)`` prints) and ``usage.memory`` the working set in the
  binary format (``734212Ki``);
- a PodMetrics per pod with running containers on those nodes (name, namespace, pod labels), with
  ``containers[{name, usage{cpu, memory}}]``.

A kubelet that is not posting cannot be scraped, so its node and pods have no metrics (``kubectl
top`` then says ``metrics not available yet``), as on a real cluster.

Here memory is the working set from :class:`~kubemedic.sim.cluster.runtime.usage.UsageModel` and CPU
is what the container gets: its need, or less when the node's CPU is contended
(:func:`~kubemedic.sim.cluster.runtime.usage.allocate_cpu`), plus a deterministic sub-millicore
wobble so the nanocore figures look measured. The node's usage adds its system daemons'
(:func:`~kubemedic.sim.cluster.runtime.usage.system_usage`).

Materialising 60,000 PodMetrics costs time, so nothing is computed until someone reads: the
server's read hooks (``pods.metrics.k8s.io``, ``nodes.metrics.k8s.io``) refresh the stored
objects at most once per resolution of cluster time, and :meth:`MetricsServer.refresh` does it
on demand (snapshot writing). Objects of nodes and pods that went away are removed.
"""

from __future__ import annotations

import gc
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.runtime.hosts import Hosts
from kubemedic.sim.cluster.runtime.usage import (
    ContainerUsage,
    UsageModel,
    allocate_cpu,
    started_at,
    system_usage,
)
from kubemedic.sim.machinery import managers
from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Key, Obj

__all__ = ["RESOLUTION", "MetricsServer", "binary_quantity", "nano_quantity"]

#: ``--metric-resolution`` default (seconds).
RESOLUTION = 15.0
API_VERSION = "metrics.k8s.io/v1beta1"
MANAGER = managers.METRICS_SERVER
NODES = "nodes.metrics.k8s.io"
PODS = "pods.metrics.k8s.io"


def nano_quantity(nanos: int) -> str:
    """A DecimalSI quantity of ``nanos`` billionths, as ``Quantity.String()`` prints it:
    ``412345678n``, ``250m``, ``2``."""
    if nanos == 0:
        return "0"
    for suffix, unit in (("", 10**9), ("m", 10**6), ("u", 10**3)):
        if nanos % unit == 0:
            return f"{nanos // unit}{suffix}"
    return f"{nanos}n"


def binary_quantity(amount: int) -> str:
    """A BinarySI quantity of ``amount`` bytes as printed: ``734212Ki``, ``300Mi``, ``1000``."""
    if amount < 1024:
        return str(amount)
    for suffix in ("", "Ki", "Mi", "Gi", "Ti", "Pi"):
        if amount % 1024 or suffix == "Pi":
            return f"{amount}{suffix}"
        amount //= 1024
    return f"{amount}Ei"


@dataclass(slots=True)
class _Scrape:
    """One pod as the last scrape saw it: its running containers, when each started, and the
    CRC of ``<uid>/<container>/`` (the start of each measurement's wobble)."""

    pod: Obj
    key: Key
    uid: str
    node: str
    running: bool
    containers: list[tuple[str, ContainerUsage, float, int]]


class MetricsServer:
    """The metrics.k8s.io API of the simulated cluster."""

    name = "metrics"

    def __init__(
        self, usage: UsageModel, *, hosts: Hosts | None = None, resolution: float = RESOLUTION
    ) -> None:
        self.usage = usage
        self.hosts = hosts
        self.resolution = resolution
        self.window = f"{resolution:g}s"
        self._last: float | None = None
        self._stored: dict[str, set[Key]] = {}
        self._scrapes: dict[Key, _Scrape] = {}

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, MANAGER)
        if sim.find(UsageModel) is None:
            self.usage.attach(sim)
        self.client.before_read(PODS, self._on_read)
        self.client.before_read(NODES, self._on_read)

    def sync(self) -> bool:
        return False

    def _on_read(self) -> None:
        now = self.sim.seconds()
        if self._last is None or now - self._last >= self.resolution:
            self.refresh()

    def refresh(self) -> None:
        """Scrape every reachable kubelet now and store the NodeMetrics and PodMetrics."""
        # Tens of thousands of short-lived dicts would trigger full collections of the whole
        # cluster's heap, which cost more than the refresh itself; nothing here makes cycles.
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._refresh()
        finally:
            if enabled:
                gc.enable()

    def _refresh(self) -> None:
        now = self.sim.seconds()
        self._last = now
        stamp = rfc3339(self.sim.now())
        scraped: dict[str, Obj] = {}
        for node in self.sim.objects("nodes"):
            name = str(node["metadata"]["name"])
            if self.hosts is None or self.hosts.get(name).posting(now):
                scraped[name] = node
        by_node: dict[str, list[_Scrape]] = {}
        cache, self._scrapes = self._scrapes, {}
        for key, pod in self.sim.items("pods"):
            scrape = cache.get(key)
            if scrape is None or scrape.pod is not pod:
                scrape = self._scrape(pod, key)
            self._scrapes[key] = scrape
            if scrape.node in scraped and scrape.running:
                by_node.setdefault(scrape.node, []).append(scrape)
        nodes: dict[Key, Obj] = {}
        pods: dict[Key, Obj] = {}
        for name, node in scraped.items():
            cpu, memory = self._pods_on(node, by_node.get(name, []), now, stamp, pods)
            system_memory, system_cpu = system_usage(node)
            nanos = self._nanos(cpu + system_cpu, name, "", now)
            meta: Obj = {"name": name, "creationTimestamp": stamp}
            labels = node["metadata"].get("labels")
            if labels:
                meta["labels"] = dict(labels)
            nodes["", name] = {
                "apiVersion": API_VERSION,
                "kind": "NodeMetrics",
                "metadata": meta,
                "timestamp": stamp,
                "window": self.window,
                "usage": {
                    "cpu": nano_quantity(nanos),
                    "memory": binary_quantity(memory + system_memory),
                },
            }
        self._store(NODES, nodes)
        self._store(PODS, pods)

    def _scrape(self, pod: Obj, key: Key) -> _Scrape:
        """What stays the same about a pod from one scrape to the next while the stored pod
        object does (stored objects are replaced, never changed, by a write)."""
        containers: list[tuple[str, ContainerUsage, float, int]] = []
        uid = str(pod["metadata"].get("uid", ""))
        for name, model in self.usage.specs(pod).items():
            started = started_at(pod, name)
            if started is not None:
                containers.append((name, model, started, zlib.crc32(f"{uid}/{name}/".encode())))
        return _Scrape(
            pod=pod,
            key=key,
            uid=uid,
            node=str((pod.get("spec") or {}).get("nodeName") or ""),
            running=(pod.get("status") or {}).get("phase") == "Running",
            containers=containers,
        )

    def _pods_on(
        self, node: Obj, pods: list[_Scrape], now: float, stamp: str, out: dict[Key, Obj]
    ) -> tuple[int, int]:
        """PodMetrics of one node's pods into ``out``; returns the pods' CPU (millicores) and
        memory (bytes) totals."""
        rows: list[tuple[_Scrape, str, int, int]] = []
        demands: list[tuple[int, int, int | None]] = []
        count = self.usage.node_count
        for scrape in pods:
            for name, model, started, crc in scrape.containers:
                running = now - started
                memory = model.memory_at(running_seconds=running, node_count=count)
                rows.append((scrape, name, memory, crc))
                need = model.cpu_at(running_seconds=running, node_count=count)
                demands.append((need, model.cpu_request or 0, model.cpu_limit))
        allocatable = ((node.get("status") or {}).get("allocatable") or {}).get("cpu", 0)
        try:
            capacity = parse_quantity(allocatable).milli
        except QuantityError:
            capacity = sum(need for need, _, _ in demands)
        got = allocate_cpu(capacity, demands)
        moment = str(int(now)).encode()
        total_cpu = total_memory = 0
        for (scrape, name, memory, crc), cpu in zip(rows, got, strict=True):
            metrics = out.get(scrape.key)
            if metrics is None:
                metrics = out[scrape.key] = self._pod_metrics(scrape.pod, stamp)
            # _nanos(cpu, uid, name, now), the CRC of "<uid>/<name>/" carried on from the scrape
            nanos = cpu * 1_000_000 - zlib.crc32(moment, crc) % 999_999 if cpu > 0 else 0
            usage = {"cpu": nano_quantity(nanos), "memory": binary_quantity(memory)}
            metrics["containers"].append({"name": name, "usage": usage})
            total_cpu += cpu
            total_memory += memory
        return total_cpu, total_memory

    def _pod_metrics(self, pod: Mapping[str, Any], stamp: str) -> Obj:
        meta = pod["metadata"]
        out_meta: Obj = {
            "name": meta["name"],
            "namespace": meta.get("namespace", ""),
            "creationTimestamp": stamp,
        }
        if meta.get("labels"):
            out_meta["labels"] = dict(meta["labels"])
        return {
            "apiVersion": API_VERSION,
            "kind": "PodMetrics",
            "metadata": out_meta,
            "timestamp": stamp,
            "window": self.window,
            "containers": [],
        }

    @staticmethod
    def _nanos(millis: int, uid: str, container: str, now: float) -> int:
        """Millicores as measured nanocores: less a sub-millicore wobble, the same for the
        same container and moment (``kubectl top`` rounds it back up)."""
        if millis <= 0:
            return 0
        return millis * 1_000_000 - zlib.crc32(f"{uid}/{container}/{int(now)}".encode()) % 999_999

    def _store(self, store_key: str, objects: dict[Key, Obj]) -> None:
        """Keep the scrape as computed objects: served on read, never watch events (the
        metrics API cannot be watched)."""
        previous = self._stored.get(store_key, set())
        self.client.publish_computed(store_key, objects, drop=previous - objects.keys())
        self._stored[store_key] = set(objects)
