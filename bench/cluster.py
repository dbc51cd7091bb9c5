"""Cluster simulation benchmark: a generated 2,000-node / 60,000-pod cluster, steady then disturbed.

    python bench/cluster.py [--nodes 2000 --pods 60000 --steady 600 --disturbed 600]
    python bench/cluster.py --quick          # 50 nodes, 500 pods (what the smoke test runs)

Target (2-core machine, from the simulator's issue): the cluster runs at >= 10x real time,
i.e. at least ten seconds of cluster time per wall second, in both periods:

* *steady*: every component attached (controllers, scheduler, kubelets, pressure, node
  lifecycle, PodGC, Cluster API, autoscaler, metrics-server), nothing wrong: node Leases renewed
  every 10 s, node status checked every 10 s (and reported every 5 min), eviction and probe
  checks, the node lifecycle controller's 5 s pass, and metrics read every ``--metrics-every``
  seconds (as ``kubectl top`` or an HPA would);
* *disturbed*: at its start the kubelets of ``--fail`` of the nodes stop (no Leases, no status:
  the node lifecycle controller marks the nodes ``Unknown``, taints them ``unreachable``, and
  the taint-eviction controller deletes their pods after the 300 s toleration; the ReplicaSets
  replace the pods and the scheduler binds the replacements elsewhere), and ``--scale``
  Deployments are scaled (half up by 50%, half down by half) through the scale subresource.

The cluster comes from :func:`kubemedic.sim.scenarios.generating.generate` (Deployments with their
ReplicaSets, DaemonSets, Running pods with usage annotations) loaded into
:func:`kubemedic.sim.cluster.assembly.build`. Baselines measured in the same run: real time (1x),
and the bare engine (the same objects loaded, no component attached) stepped second by second over
the steady period's length: what the engine and the API server's own loops cost alone. Printed: the
generate and load times, each period's cluster seconds per wall second ("x real time"), API
writes (per cluster second and per wall second, by store), metrics reads, engine
steps/timers/passes, peak RSS, and what the disturbance did (nodes not Ready, pods evicted and
replaced). ``--profile FILE`` writes cProfile stats of both periods. Exit status: 0 when both
periods reach the target, 1 otherwise. Timing is never asserted in the test suite.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import sys
import time
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TARGET = 10.0
METRICS_STORES = ("nodes.metrics.k8s.io", "pods.metrics.k8s.io")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass
class Period:
    name: str
    cluster_seconds: float = 0.0
    wall: float = 0.0
    writes: Counter[str] = field(default_factory=Counter)
    steps: int = 0
    timers: int = 0
    passes: int = 0
    errors: int = 0
    reads: list[float] = field(default_factory=list)

    @property
    def speed(self) -> float:
        return self.cluster_seconds / self.wall if self.wall else float("inf")

    def lines(self, *, metrics_objects: int) -> str:
        total = sum(self.writes.values())
        top = ", ".join(f"{k} {v}" for k, v in self.writes.most_common(5))
        ok = "PASS" if self.speed >= TARGET else "FAIL"
        out = [
            f"{self.name}: {self.cluster_seconds:.0f} s of cluster time in {self.wall:.2f} s wall"
            f" = {self.speed:.1f}x real time (target >= {TARGET:.0f}x: {ok})",
            f"  API writes: {total} ({total / self.cluster_seconds:.0f} per cluster s, "
            f"{total / self.wall:.0f} per wall s): {top}",
            f"  engine: {self.steps} steps, {self.timers} timers fired, {self.passes} component "
            f"syncs, {self.errors} API errors retried",
        ]
        if self.reads:
            mean = sum(self.reads) / len(self.reads)
            out.append(
                f"  metrics: {_plural(len(self.reads), 'read')} of ~{metrics_objects} objects, "
                f"{mean:.2f} s each ({sum(self.reads) / self.wall:.0%} of the period)"
            )
        return "\n".join(out)


class WriteCounter:
    """Counts stored changes by store (a store listener: every write a watch would see)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def __call__(self, change: Any) -> None:
        self.counts[change.store] += 1


class MetricsReader:
    """Reads NodeMetrics and PodMetrics as a client would (the server's read hooks), timing
    each read."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.seconds: list[float] = []

    def __call__(self) -> None:
        started = time.perf_counter()
        for key in METRICS_STORES:
            hook = self.server.read_hooks.get(key)
            if hook is not None:
                hook()
        self.seconds.append(time.perf_counter() - started)

    def objects(self) -> int:
        return sum(self.server.store.count(key) for key in METRICS_STORES)


def _profiled(path: str | None) -> tuple[Any, Callable[[], AbstractContextManager[Any]]]:
    if not path:
        return None, nullcontext
    import cProfile

    profile = cProfile.Profile()

    class _On:
        def __enter__(self) -> None:
            profile.enable()

        def __exit__(self, *exc: object) -> None:
            profile.disable()

    return profile, _On


def measure(
    sim: Any,
    *,
    name: str,
    seconds: float,
    counter: WriteCounter,
    reader: MetricsReader,
    profiling: Callable[[], AbstractContextManager[Any]],
) -> Period:
    def stats() -> tuple[int, int, int, int]:
        return sim.stats.steps, sim.stats.timers, sim.stats.passes, sim.stats.errors

    before, writes, reads = stats(), Counter(counter.counts), len(reader.seconds)
    started = time.perf_counter()
    with profiling():
        sim.run_for(seconds)
    period = Period(name, cluster_seconds=seconds, wall=time.perf_counter() - started)
    period.writes = counter.counts - writes
    period.reads = reader.seconds[reads:]
    period.steps, period.timers, period.passes, period.errors = (
        now - then for now, then in zip(stats(), before, strict=True)
    )
    return period


def bare_engine(objects: list[dict[str, Any]], *, start: Any, seconds: float) -> Period:
    """The same objects in an API server whose engine has no component: stepped once per
    second of cluster time (the engine would otherwise jump straight to the end)."""
    from kubemedic.sim.cluster import Simulation

    sim = Simulation(start=start)
    sim.server.load(objects, defaulted=True)
    counter = WriteCounter()
    sim.server.store.listeners.append(counter)
    started = time.perf_counter()
    end = sim.seconds() + seconds
    while sim.seconds() < end:
        sim.clock.advance(1.0)
        sim.step()
    period = Period("bare engine", cluster_seconds=seconds, wall=time.perf_counter() - started)
    period.writes = counter.counts
    period.steps = sim.stats.steps
    return period


def disturb(cluster: Any, *, fail: float, scale: int) -> tuple[list[str], dict[str, int]]:
    """Stop the kubelets of a share of the nodes and scale some Deployments."""
    from kubemedic.sim.cluster import Client

    sim = cluster.sim
    rng = sim.random
    names = sorted(n["metadata"]["name"] for n in sim.objects("nodes"))
    victims = sorted(rng.sample(names, max(1, round(len(names) * fail))))
    for name in victims:
        cluster.hosts.get(name).kubelet = "stopped"
    deployments = sorted(
        (str(d["metadata"]["namespace"]), str(d["metadata"]["name"]), int(d["spec"]["replicas"]))
        for d in sim.objects("deployments.apps")
    )
    client = Client(cluster.server, "kubectl")
    scaled: dict[str, int] = {}
    for i, (namespace, name, replicas) in enumerate(
        rng.sample(deployments, min(scale, len(deployments)))
    ):
        wanted = replicas + max(1, replicas // 2) if i % 2 == 0 else max(1, replicas // 2)
        client.patch(
            "apps/v1",
            "Deployment",
            name,
            {"spec": {"replicas": wanted}},
            namespace=namespace,
            patch_type="merge",
            subresource="scale",
        )
        scaled[f"{namespace}/{name}"] = wanted - replicas
    return victims, scaled


def outcome(cluster: Any, victims: list[str], scaled: dict[str, int]) -> str:
    sim = cluster.sim
    not_ready = 0
    for name in victims:
        node = sim.get("nodes", "", name) or {}
        ready = [c for c in node.get("status", {}).get("conditions", []) if c["type"] == "Ready"]
        not_ready += bool(ready) and ready[0]["status"] != "True"
    phases: Counter[str] = Counter()
    on_victims = terminating = 0
    failed = set(victims)
    for pod in sim.objects("pods"):
        phases[pod.get("status", {}).get("phase", "")] += 1
        if pod["spec"].get("nodeName") in failed:
            on_victims += 1
            terminating += "deletionTimestamp" in pod["metadata"]
    reasons = Counter(e.get("reason", "") for e in sim.objects("events"))
    phase_text = ", ".join(f"{k or '?'} {v}" for k, v in sorted(phases.items()))
    up = sum(1 for v in scaled.values() if v > 0)
    shown = ("TaintManagerEviction", "NodeNotReady", "SuccessfulCreate", "SuccessfulDelete")
    shown += ("Scheduled", "Started")
    return (
        f"disturbance: {_plural(len(victims), 'kubelet')} stopped ({not_ready} of those nodes "
        f"not Ready at the end), {_plural(len(scaled), 'Deployment')} scaled ({up} up, "
        f"{len(scaled) - up} down, net {sum(scaled.values()):+d} replicas)\n"
        f"  pods at the end: {phase_text}; on the stopped nodes {on_victims} "
        f"({terminating} Terminating, kept so until their kubelet confirms)\n"
        f"  events: " + ", ".join(f"{reason} {reasons[reason]}" for reason in shown)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--pods", type=int, default=60_000)
    parser.add_argument("--steady", type=float, default=600.0, help="cluster seconds")
    parser.add_argument("--disturbed", type=float, default=600.0, help="cluster seconds")
    parser.add_argument("--fail", type=float, default=0.02, help="share of kubelets stopped")
    parser.add_argument("--scale", type=int, default=20, help="Deployments scaled")
    parser.add_argument("--metrics-every", type=float, default=60.0, help="0: never read")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-baseline", action="store_true", help="skip the bare engine")
    parser.add_argument("--profile", metavar="FILE", help="cProfile stats of both periods")
    parser.add_argument("--quick", action="store_true", help="50 nodes, 500 pods")
    args = parser.parse_args(argv)
    if args.quick:
        args.nodes, args.pods = 50, 500

    sys.path[:0] = [str(SRC)]
    from kubemedic.sim.cluster import build
    from kubemedic.sim.scenarios import Layout, generate

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(
        f"machine: {platform.system()} {platform.machine()}, {cpus} CPUs, "
        f"Python {platform.python_version()}"
    )
    layout = Layout(nodes=args.nodes, pods=args.pods, seed=args.seed)
    mark = time.perf_counter()
    generated = generate(layout)
    print(
        f"generated {generated.nodes} nodes, {generated.pods} pods, {generated.deployments} "
        f"Deployments, {generated.daemonsets} DaemonSets ({len(generated.objects)} objects) in "
        f"{time.perf_counter() - mark:.2f} s"
    )

    baseline = None
    if not args.no_baseline:
        baseline = bare_engine(generated.objects, start=layout.now, seconds=args.steady)
        gc.collect()

    mark = time.perf_counter()
    cluster = build(start=layout.now, seed=args.seed)
    built = time.perf_counter() - mark
    mark = time.perf_counter()
    # The generator's objects are already in stored form: no per-object defaulting needed.
    cluster.server.load(generated.objects, defaulted=True)
    loaded = time.perf_counter() - mark
    del generated
    mark = time.perf_counter()
    cluster.sim.step()  # the components adopt what was loaded (queues, indexes, first syncs)
    adopted = time.perf_counter() - mark
    print(
        f"load: build {built:.2f} s, server.load {loaded:.2f} s, first step (adoption) "
        f"{adopted:.2f} s: {built + loaded + adopted:.2f} s for "
        f"{cluster.server.store.count('pods')} pods"
    )
    sim = cluster.sim
    reader = MetricsReader(sim.server)
    if args.metrics_every > 0:
        sim.every(args.metrics_every, reader, name="metrics reader")
    counter = WriteCounter()
    sim.server.store.listeners.append(counter)
    profile, profiling = _profiled(args.profile)
    run = {"counter": counter, "reader": reader, "profiling": profiling}

    steady = measure(sim, name="steady", seconds=args.steady, **run)
    victims, scaled = disturb(cluster, fail=args.fail, scale=args.scale)
    disturbed = measure(sim, name="disturbed", seconds=args.disturbed, **run)
    if profile is not None:
        profile.dump_stats(args.profile)

    print("real time (baseline): 1.0x")
    if baseline is not None:
        print(
            f"bare engine (baseline: the same objects, no components, stepped each second): "
            f"{baseline.speed:.0f}x real time ({baseline.wall:.3f} s wall for "
            f"{baseline.cluster_seconds:.0f} s)"
        )
    for period in (steady, disturbed):
        print(period.lines(metrics_objects=reader.objects()))
        if baseline is not None:
            print(
                f"  vs the baselines: {period.speed:.1f}x real time; "
                f"{baseline.speed / period.speed:.0f}x slower than the bare engine"
            )
    print(outcome(cluster, victims, scaled))
    leases = cluster.server.store.count("leases.coordination.k8s.io")
    print(f"node Leases at the end: {leases}; peak RSS: {_peak_rss_mb():.0f} MB")
    ok = steady.speed >= TARGET and disturbed.speed >= TARGET
    print(f"target >= {TARGET:.0f}x real time in both periods: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
