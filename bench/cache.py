"""Reflector cache benchmark: memory per cached pod, and a reflector's list and watch rates.

    python bench/cache.py [--pods 150000 --full-sample 30000 --serve-pods 5000 --changes 20000]
    python bench/cache.py --quick        # 3,000 pods; what the smoke test runs

Target (from the live-access issue): a cached pod costs <= 1.5 KB, so a 150,000-pod cluster's
cache fits in ~220 MB. Pods are generated as a kubelet-updated Deployment pod looks when the API
serves it: ``managedFields`` from four managers (the ReplicaSet controller that created it, the
CNI plugin's annotations, a ``kubectl label`` by hand, the kubelet's status), a few annotations,
one to three containers with env, ports, mounts and probes, the service-account volume,
addresses, five conditions and container statuses with IDs, timestamps spread over 30 days (so
interning gets no free ride). Each pod is encoded to JSON and decoded again with orjson, as a
watch event is, then:

* *full*: kept as decoded (the baseline: a cache without compaction);
* *pruned*: ``compact_for("Pod")`` dicts (what the checks read, as plain dicts);
* *packed*: pruned, then stored in a ``CompactCache`` (what a Reflector keeps).

Each mode runs in its own subprocess and is measured twice: the RSS growth while building it,
and (in a second build) the Python heap growth per ``tracemalloc`` (current after minus before,
divided by the pod count; it includes dict and key overhead, interned strings and templates).
The *full* and *pruned* modes run on ``--full-sample`` pods: per-pod figures do not depend on the
count, and the full bodies of 150,000 pods take gigabytes.

Reflector rates: an emulator in its own process (so client and server do not share a GIL)
serves ``--serve-pods`` pods; a Reflector lists them (pods/s), and once the list is handed over
the emulator rewrites pod statuses ``--changes`` times (a kubelet's status updates); the time
until the Reflector has handled every event (decode, handler, compact, cache) gives events/s.
Exit status: 0 when the packed cache meets the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
TARGET_BYTES = 1536
_WORDS = ("api", "web", "worker", "cache", "search", "billing", "auth", "catalog", "orders")
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


# -- realistic pods ---------------------------------------------------------------------------


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _suffix(number: int, length: int) -> str:
    out = []
    for _ in range(length):
        number, digit = divmod(number, len(_ALPHABET))
        out.append(_ALPHABET[digit])
    return "".join(out)


def _container(app: str, name: str, workload: int, *, main: bool) -> dict[str, Any]:
    memory = (64, 128, 256, 512, 1024)[workload % 5]
    body: dict[str, Any] = {
        "name": name,
        "image": f"registry.example/{app}/{name}:1.{workload % 17}.{workload % 5}",
        "imagePullPolicy": "IfNotPresent",
        "env": [
            {"name": "LOG_LEVEL", "value": "info"},
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
        ],
        "ports": [{"containerPort": 8080 + workload % 3, "name": "http", "protocol": "TCP"}],
        "resources": {
            "requests": {"cpu": f"{50 * (1 + workload % 8)}m", "memory": f"{memory}Mi"},
            "limits": {"memory": f"{memory * 2}Mi"},
        },
        "volumeMounts": [
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": "kube-api-access-x7k2p",
                "readOnly": True,
            }
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    if main:
        body["livenessProbe"] = {
            "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
            "failureThreshold": 3,
            "periodSeconds": 10,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        }
        body["readinessProbe"] = {
            "httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
            "failureThreshold": 3,
            "periodSeconds": 5,
            "successThreshold": 1,
            "timeoutSeconds": 1,
        }
    return body


def _managed(created: str, started: str, ready: str, labelled: bool) -> list[dict[str, Any]]:
    def entry(manager: str, time: str, fields: dict[str, Any], sub: str = "") -> dict[str, Any]:
        out = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": "v1",
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        }
        if sub:
            out["subresource"] = sub
        return out

    container = {
        "f:image": {},
        "f:imagePullPolicy": {},
        "f:name": {},
        "f:env": {".": {}, 'k:{"name":"LOG_LEVEL"}': {".": {}, "f:name": {}, "f:value": {}}},
        "f:ports": {".": {}, 'k:{"containerPort":8080,"protocol":"TCP"}': {".": {}}},
        "f:resources": {".": {}, "f:limits": {".": {}, "f:memory": {}}, "f:requests": {}},
    }
    condition = {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}}
    entries = [
        entry(
            "kube-controller-manager",
            created,
            {
                "f:metadata": {
                    "f:generateName": {},
                    "f:labels": {".": {}, "f:app": {}, "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, 'k:{"uid":"..."}': {}},
                },
                "f:spec": {
                    "f:containers": {'k:{"name":"main"}': container},
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                },
            },
        ),
        entry(
            "calico",
            started,
            {"f:metadata": {"f:annotations": {"f:cni.projectcalico.org/podIP": {}}}},
            "status",
        ),
        entry(
            "kubelet",
            ready,
            {
                "f:status": {
                    "f:conditions": {
                        f'k:{{"type":"{kind}"}}': condition
                        for kind in ("ContainersReady", "Initialized", "Ready")
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:startTime": {},
                }
            },
            "status",
        ),
    ]
    entries.append(
        entry(
            "kubectl-label" if labelled else "kube-scheduler",
            created,
            {"f:metadata": {"f:labels": {"f:debug": {}}}}
            if labelled
            else {"f:status": {"f:conditions": {'k:{"type":"PodScheduled"}': condition}}},
            "" if labelled else "status",
        )
    )
    return entries


def make_pod(index: int, total: int) -> dict[str, Any]:
    """Pod ``index`` of a ``total``-pod cluster (deterministic)."""
    workloads = max(1, total // 30)
    workload = (index * 7919) % workloads
    app = f"{_WORDS[workload % len(_WORDS)]}-{workload}"
    namespace = f"team-{workload % 40}"
    template_hash = _suffix(workload * 104729 + 7, 10)
    name = f"{app}-{template_hash}-{_suffix(index * 31 + 11, 5)}"
    node = f"pool-{workload % 4}-{(index * 131) % max(10, total // 30):05d}"
    created_at = _EPOCH - timedelta(seconds=(index * 7777) % (30 * 86400))
    created = _stamp(created_at)
    started = _stamp(created_at + timedelta(seconds=2 + index % 7))
    ready = _stamp(created_at + timedelta(seconds=9 + index % 31))
    ip = f"10.{64 + index // 65536 % 64}.{index // 256 % 256}.{index % 256}"
    host_ip = f"172.16.{index // 4096 % 256}.{index // 30 % 256}"
    restarts = 3 if index % 20 == 0 else 0
    names = ["main", *(["sidecar"] * (workload % 3 == 0)), *(["proxy"] * (workload % 7 == 0))]
    containers = [_container(app, c, workload, main=c == "main") for c in names]
    statuses = []
    for number, c in enumerate(containers):
        cid = uuid.UUID(int=index * 8 + number).hex * 2
        status: dict[str, Any] = {
            "containerID": f"containerd://{cid}",
            "image": c["image"],
            "imageID": f"{c['image']}@sha256:{uuid.UUID(int=workload).hex * 2}",
            "lastState": {},
            "name": c["name"],
            "ready": True,
            "restartCount": restarts,
            "started": True,
            "state": {"running": {"startedAt": started}},
        }
        if restarts:
            status["lastState"] = {
                "terminated": {
                    "containerID": f"containerd://{cid[::-1]}",
                    "exitCode": 137,
                    "finishedAt": started,
                    "reason": "OOMKilled",
                    "startedAt": created,
                }
            }
        statuses.append(status)
    conditions = [
        {"lastProbeTime": None, "lastTransitionTime": when, "status": "True", "type": kind}
        for kind, when in (
            ("PodReadyToStartContainers", started),
            ("Initialized", created),
            ("Ready", ready),
            ("ContainersReady", ready),
            ("PodScheduled", created),
        )
    ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": {
                "cni.projectcalico.org/containerID": uuid.UUID(int=index).hex * 2,
                "cni.projectcalico.org/podIP": f"{ip}/32",
                "cni.projectcalico.org/podIPs": f"{ip}/32",
                "kubectl.kubernetes.io/restartedAt": "2025-12-01T10:00:00Z",
                "prometheus.io/scrape": "true",
            },
            "creationTimestamp": created,
            "generateName": f"{app}-{template_hash}-",
            "labels": {"app": app, "pod-template-hash": template_hash},
            "managedFields": _managed(created, started, ready, index % 10 == 0),
            "name": name,
            "namespace": namespace,
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "blockOwnerDeletion": True,
                    "controller": True,
                    "kind": "ReplicaSet",
                    "name": f"{app}-{template_hash}",
                    "uid": str(uuid.UUID(int=workload + 2**64)),
                }
            ],
            "resourceVersion": str(1_000_000 + index),
            "uid": str(uuid.UUID(int=index + 2**96)),
        },
        "spec": {
            "containers": containers,
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "nodeName": node,
            "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0,
            "restartPolicy": "Always",
            "schedulerName": "default-scheduler",
            "securityContext": {},
            "serviceAccount": "default",
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "tolerations": [
                {
                    "effect": "NoExecute",
                    "key": f"node.kubernetes.io/{key}",
                    "operator": "Exists",
                    "tolerationSeconds": 300,
                }
                for key in ("not-ready", "unreachable")
            ],
            "volumes": [
                {
                    "name": "kube-api-access-x7k2p",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                    "name": "kube-root-ca.crt",
                                }
                            },
                        ],
                    },
                }
            ],
        },
        "status": {
            "conditions": conditions,
            "containerStatuses": statuses,
            "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "phase": "Running",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "qosClass": "Burstable",
            "startTime": created,
        },
    }


# -- memory (each mode in a child process) -----------------------------------------------------


def _rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _build(mode: str, count: int) -> tuple[Any, float]:
    """The structure ``mode`` keeps for ``count`` pods, and the seconds spent decoding and
    storing (generation and encoding excluded)."""
    import orjson
    from lightkube.resources.core_v1 import Pod

    from kubemedic.kube.compact import CompactCache, compact_for

    compact = compact_for("Pod")
    cache = CompactCache()
    kept: list[Any] = []
    spent = 0.0
    for start in range(0, count, 1000):
        batch = [orjson.dumps(make_pod(i, count)) for i in range(start, min(count, start + 1000))]
        began = time.perf_counter()
        for raw in batch:
            body = orjson.loads(raw)
            if mode == "full":
                kept.append(body)
            elif mode == "typed":
                kept.append(Pod.from_dict(body))
            elif mode == "pruned":
                kept.append(compact(body))
            else:
                cache.put(compact(body))
        spent += time.perf_counter() - began
    return (cache if mode == "packed" else kept), spent


def child(mode: str, count: int) -> dict[str, Any]:
    gc.collect()
    before = _rss()
    built, seconds = _build(mode, count)
    gc.collect()
    rss = (_rss() - before) / count
    extra: dict[str, Any] = {}
    if mode == "packed":
        extra["templates"] = built.template_count
        began = time.perf_counter()
        rebuilt = sum(1 for _ in built.bodies())
        extra["read_us"] = (time.perf_counter() - began) / rebuilt * 1e6
    del built
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    kept_alive, _ = _build(mode, count)
    gc.collect()
    traced = (tracemalloc.get_traced_memory()[0] - start) / count
    tracemalloc.stop()
    del kept_alive
    size = len(json.dumps(make_pod(count // 2, count), separators=(",", ":")))
    return {"traced": traced, "rss": rss, "us": seconds / count * 1e6, "json": size, **extra}


def _run_child(mode: str, count: int) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, __file__, "--child", mode, "--pods", str(count)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])},
    )
    if result.returncode != 0:
        raise SystemExit(f"the {mode} child failed:\n{result.stderr[-3000:]}")
    found: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return found


# -- reflector rates -----------------------------------------------------------------------------


async def serve(pods: int, changes: int) -> None:
    """The emulator child: serve ``pods`` pods; on ``go`` (stdin), rewrite statuses."""
    from kubemedic.sim.apiserver import ApiServer

    server = ApiServer(history=changes + pods + 1000, seed=1)
    server.load(make_pod(i, pods) for i in range(pods))
    await server.start(port=0, tick=False)
    print(server.port, flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.readline)
    keys = [key for key, _ in server.store.scan("pods")]
    for number in range(changes):
        key = keys[number % len(keys)]
        entry = server.store.get("pods", key)
        assert entry is not None
        obj = {**entry.obj, "status": dict(entry.obj["status"])}
        statuses = [dict(s) for s in obj["status"]["containerStatuses"]]
        statuses[0]["restartCount"] = int(statuses[0].get("restartCount") or 0) + 1
        obj["status"]["containerStatuses"] = statuses
        server.store.put("pods", key, obj, event="MODIFIED")
        if number % 100 == 99:
            await asyncio.sleep(0)
    await loop.run_in_executor(None, sys.stdin.readline)  # until the parent is done
    await server.stop()


class _Counting:
    def __init__(self, on_list: Callable[[], None]) -> None:
        self.on_list = on_list
        self.changes = 0
        self.started = 0.0
        self.cpu = 0.0

    async def replaced(self, kind: Any, items: Any, deleted: Any, resource_version: str) -> None:
        self.on_list()
        self.started = time.perf_counter()
        self.cpu = time.process_time()

    async def changed(self, kind: Any, type_: str, obj: Any, resource_version: str) -> None:
        self.changes += 1

    async def bookmark(self, kind: Any, resource_version: str) -> None:
        pass


async def reflector_rates(pods: int, changes: int) -> dict[str, float]:
    from lightkube import AsyncClient
    from lightkube.config.kubeconfig import KubeConfig

    from kubemedic.kube.api import Api, Kind
    from kubemedic.kube.reflector import Reflector
    from kubemedic.sim.apiserver import kubeconfig

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(HERE)])}
    args = ["--serve", "--serve-pods", str(pods), "--changes", str(changes)]
    proc = subprocess.Popen(
        [sys.executable, __file__, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin
    try:
        port = int(proc.stdout.readline())
        api = Api(AsyncClient(config=KubeConfig.from_dict(kubeconfig(f"http://127.0.0.1:{port}"))))

        def go() -> None:
            stdin.write(b"go\n")
            stdin.flush()

        handler = _Counting(go)
        reflector = Reflector(api, Kind("", "v1", "pods", "Pod", True), handler)
        began, cpu = time.perf_counter(), time.process_time()
        task = asyncio.get_running_loop().create_task(reflector.run())
        await reflector.synced.wait()
        listed, list_cpu = time.perf_counter() - began, time.process_time() - cpu
        while handler.changes < changes:
            if task.done():
                task.result()
            await asyncio.sleep(0.005)
        watched = time.perf_counter() - handler.started
        watch_cpu = time.process_time() - handler.cpu
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await api.close()
        return {
            "list_s": listed,
            "list_rate": pods / listed,
            "watch_s": watched,
            "watch_rate": changes / watched,
            "list_cpu_us": list_cpu / pods * 1e6,
            "watch_cpu_us": watch_cpu / changes * 1e6,
            "cached": float(len(reflector.cache)),
        }
    finally:
        stdin.close()
        proc.wait(timeout=60)


# -- report ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=150_000)
    parser.add_argument("--full-sample", type=int, default=30_000)
    parser.add_argument("--serve-pods", type=int, default=5000)
    parser.add_argument("--changes", type=int, default=20_000)
    parser.add_argument(
        "--quick", action="store_true", help="3,000 pods, 500 served, 2,000 changes"
    )
    parser.add_argument(
        "--child", choices=("full", "typed", "pruned", "packed"), help=argparse.SUPPRESS
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    sys.path[:0] = [str(SRC)]
    if args.child:
        print(json.dumps(child(args.child, args.pods)))
        return 0
    if args.serve:
        asyncio.run(serve(args.serve_pods, args.changes))
        return 0
    if args.quick:
        args.pods, args.full_sample, args.serve_pods, args.changes = 3000, 3000, 500, 2000
    sample = min(args.pods, args.full_sample)
    print(
        f"machine: {platform.system()} {platform.machine()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}"
    )
    full = _run_child("full", sample)
    typed = _run_child("typed", sample)
    pruned = _run_child("pruned", sample)
    packed = _run_child("packed", args.pods)
    print(f"pods: {args.pods:,} generated (~{full['json']:,} bytes of JSON each, as served)")
    print("bytes per cached pod          tracemalloc      RSS   ingest")
    for name, found, count in (
        ("full bodies (baseline)", full, sample),
        ("lightkube typed models", typed, sample),
        ("pruned dicts", pruned, sample),
        ("packed cache (Reflector)", packed, args.pods),
    ):
        print(
            f"  {name:<26} {found['traced']:>9,.0f} {found['rss']:>9,.0f} "
            f"{found['us']:>6.1f} us/pod  ({count:,} pods)"
        )
    ratio = full["traced"] / packed["traced"]
    verdict = "PASS" if packed["traced"] <= TARGET_BYTES else "FAIL"
    print(
        f"ratio full/packed: {ratio:.1f}x; packed: {packed['templates']} templates, "
        f"{packed['read_us']:.1f} us per body read back (bodies())"
    )
    print(
        f"target <= {TARGET_BYTES} bytes per cached pod: {verdict} "
        f"({packed['traced']:,.0f} bytes; {packed['traced'] * args.pods / 2**20:,.0f} MiB "
        f"for {args.pods:,} pods)"
    )
    rates = asyncio.run(reflector_rates(args.serve_pods, args.changes))
    print(
        f"reflector: list of {args.serve_pods:,} pods in {rates['list_s']:.2f} s "
        f"({rates['list_rate']:,.0f} pods/s); watch of {args.changes:,} changes in "
        f"{rates['watch_s']:.2f} s ({rates['watch_rate']:,.0f} events/s); "
        f"{rates['cached']:,.0f} pods cached"
    )
    print(
        f"reflector CPU (client process): {rates['list_cpu_us']:.0f} us per listed pod, "
        f"{rates['watch_cpu_us']:.0f} us per event (a ceiling of "
        f"{1e6 / rates['watch_cpu_us']:,.0f} events/s on one core; the rest is the emulator)"
    )
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
