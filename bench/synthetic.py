"""A large, realistic, deterministic synthetic snapshot for the scan benchmark.

Shapes come from ``kubemedic.testing.builders``; to stay fast, one template is built per shape
(node pool, workload, pod phase, event reason) and each object is a copy of it
(``orjson.loads`` of the template's bytes) with names, uids, placement and times varied. Files
are split by kind as ``kubectl get <kind> -A -o json`` prints them (a ``List``).

What is in it, besides the bulk of healthy Running pods of Deployments:

* node pools labelled the ways clouds do (GKE, EKS, AKS, Karpenter, JupyterHub), about 2% of
  nodes NotReady (``Unknown``, unreachable taint, stale heartbeat), NodeMetrics for the rest;
* three DaemonSets with a pod on every node; Deployments with one ReplicaSet each, sidecars and
  init containers in some; ``managedFields`` on every workload (Argo CD, controller manager,
  now and then a ``kubectl-edit``), including a few Deployments pinned by ``nodeName`` whose
  ReplicaSets churn ``OutOfmemory`` pods;
* a share of Failed (``OutOfmemory`` admission rejections, ``Evicted``) and Pending pods;
* a memory-hungry Prometheus beside hub pods on core nodes, PodMetrics for ~60% of pods;
* events of many reasons (Scheduled, Pulled, Started, FailedScheduling, Unhealthy, BackOff,
  Evicted, OOMKilling, Killing, NodeNotReady, SuccessfulCreate, ...), 5% in events.k8s.io/v1.
"""

from __future__ import annotations

import random
import zlib
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson

from kubemedic.testing import builders as b

Obj = dict[str, Any]
NOW = timedelta(hours=1)  # the snapshot is taken at BASE_TIME + 1h
POOLS = (  # (pool label key, value, share of nodes, cpu, memory)
    ("cloud.google.com/gke-nodepool", "core-pool", 0.04, "8", "32Gi"),
    ("cloud.google.com/gke-nodepool", "user-pool", 0.30, "16", "64Gi"),
    ("eks.amazonaws.com/nodegroup", "workers", 0.30, "8", "32Gi"),
    ("kubernetes.azure.com/agentpool", "batch", 0.16, "32", "128Gi"),
    ("karpenter.sh/nodepool", "dask", 0.20, "4", "16Gi"),
)
SHAPES = (  # (containers: (name, cpu req, mem req, mem limit or None), sidecar, init)
    ((("app", "100m", "128Mi", "256Mi"),), False, False),
    ((("api", "250m", "512Mi", "1Gi"),), True, False),
    ((("worker", "500m", "1Gi", None), ("metrics", "10m", "32Mi", "64Mi")), False, True),
    ((("jvm", "1", "2Gi", "3Gi"),), True, True),
)
EVENT_REASONS = (  # (reason, type, component, share, message)
    (
        "Scheduled",
        "Normal",
        "default-scheduler",
        0.12,
        "Successfully assigned {ns}/{pod} to {node}",
    ),
    ("Pulled", "Normal", "kubelet", 0.12, 'Container image "registry.example/app:1.0" present'),
    ("Created", "Normal", "kubelet", 0.08, "Created container app"),
    ("Started", "Normal", "kubelet", 0.08, "Started container app"),
    (
        "FailedScheduling",
        "Warning",
        "default-scheduler",
        0.14,
        "0/{nodes} nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
        "23 Insufficient cpu, 24 Insufficient memory, 96 node(s) had untolerated taint "
        "{{node.kubernetes.io/not-ready: }}. preemption: 0/{nodes} nodes are available.",
    ),
    (
        "Unhealthy",
        "Warning",
        "kubelet",
        0.14,
        'Liveness probe failed: Get "http://10.0.0.1:8081/health": context deadline exceeded',
    ),
    ("BackOff", "Warning", "kubelet", 0.08, "Back-off restarting failed container app"),
    (
        "Killing",
        "Normal",
        "kubelet",
        0.05,
        "Container app failed liveness probe, will be restarted",
    ),
    (
        "Evicted",
        "Warning",
        "kubelet",
        0.04,
        "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91Mi. "
        "Container app was using 900Mi, request is 128Mi, has larger consumption of memory.",
    ),
    (
        "OOMKilling",
        "Warning",
        "kernel-monitor",
        0.03,
        "Memory cgroup out of memory: Killed process 4242 (java) total-vm:5242880kB",
    ),
    ("NodeNotReady", "Normal", "node-controller", 0.04, "Node {node} status is now: NodeNotReady"),
    ("SuccessfulCreate", "Normal", "replicaset-controller", 0.05, "Created pod: {pod}"),
    (
        "FailedCreate",
        "Warning",
        "replicaset-controller",
        0.01,
        'Error creating: pods "{pod}" is forbidden: exceeded quota: compute-resources',
    ),
    ("SystemOOM", "Warning", "kubelet", 0.02, "System OOM encountered, victim process: java"),
)


def _copier(template: Obj) -> Any:
    raw = orjson.dumps(template)
    return lambda: orjson.loads(raw)


def _uid(kind: str, index: int) -> str:
    tag = zlib.crc32(kind.encode()) & 0xFFFF
    return f"{index:08x}-{tag:04x}-4000-8000-{index * 7919 % 16**12:012x}"


def _pod_extras(body: Obj, *, ip: int, heavy: bool) -> None:
    """Fields real pods carry that the builders leave out: addresses and the default tolerations
    always; with ``heavy``, also volumes, env, ports and mounts (they cost parse time and memory
    but no check reads them)."""
    body["status"].update(
        {
            "hostIP": f"10.1.{ip >> 8 & 255}.{ip & 255}",
            "qosClass": "Burstable",
            "podIP": f"10.8.{ip >> 8 & 255}.{ip & 255}",
        }
    )
    spec = body["spec"]
    spec["tolerations"] = [
        {
            "key": f"node.kubernetes.io/{k}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        }
        for k in ("not-ready", "unreachable")
    ]
    if not heavy:
        return
    spec.update(
        {
            "dnsPolicy": "ClusterFirst",
            "enableServiceLinks": True,
            "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30,
            "preemptionPolicy": "PreemptLowerPriority",
            "securityContext": {"runAsNonRoot": True, "fsGroup": 2000},
            "volumes": [
                {
                    "name": "kube-api-access",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                    },
                }
            ],
        }
    )
    for c in spec["containers"]:
        c["env"] = [
            {"name": "LOG_LEVEL", "value": "info"},
            {
                "name": "POD_NAME",
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}},
            },
        ]
        c["ports"] = [{"containerPort": 8080, "name": "http", "protocol": "TCP"}]
        c["volumeMounts"] = [
            {
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                "name": "kube-api-access",
                "readOnly": True,
            }
        ]


def _containers(shape: tuple[Any, ...]) -> tuple[list[Obj], list[Obj]]:
    specs, sidecar, init = shape
    regular = [
        b.container(
            n,
            requests={"cpu": cpu, "memory": mem},
            limits={"memory": lim} if lim else None,
            liveness={"httpGet": {"path": "/health", "port": 8081}, "periodSeconds": 10},
        )
        for n, cpu, mem, lim in specs
    ]
    inits = []
    if init:
        inits.append(b.container("migrate", requests={"cpu": "200m", "memory": "256Mi"}))
    if sidecar:
        inits.append(
            b.container(
                "istio-proxy",
                requests={"cpu": "100m", "memory": "128Mi"},
                limits={"memory": "1Gi"},
                restart_policy="Always",
            )
        )
    return regular, inits


def _managed(pinned_node: str | None, when: timedelta) -> list[Obj]:
    spec_fields = {
        "f:spec": {
            "f:replicas": {},
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"app"}': {
                            ".": {},
                            "f:image": {},
                            "f:resources": {"f:requests": {}},
                        }
                    }
                }
            },
        }
    }
    entries = [
        b.managed_entry(
            manager="argocd-controller",
            operation="Apply",
            fields=spec_fields,
            time=timedelta(days=-30),
        ),
        b.managed_entry(
            manager="kube-controller-manager",
            subresource="status",
            fields={"f:status": {"f:replicas": {}, "f:observedGeneration": {}}},
            time=when,
        ),
    ]
    if pinned_node:
        entries.append(
            b.managed_entry(
                manager="kubectl-edit",
                fields={"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}},
                time=NOW - timedelta(minutes=40),
            )
        )
    return entries


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

    node_list, node_names, pool_of = _nodes(rng, nodes)
    ready = [n for n in node_list if n["status"]["conditions"][-1]["status"] == "True"]
    out.write("nodes.json", node_list)
    out.write(
        "nodemetrics.json",
        [
            b.node_metrics(
                n["metadata"]["name"],
                cpu=f"{rng.randint(200, 3000)}m",
                memory=f"{rng.randint(2, 12)}Gi",
                at=NOW,
            )
            for n in ready
        ],
    )
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
                "metadata": {"name": ns, "uid": _uid("ns", i)},
                "status": {"phase": "Active"},
            }
            for i, ns in enumerate(namespaces)
        ],
    )

    ready_names = [n["metadata"]["name"] for n in ready]
    core = [name for name in ready_names if pool_of[name] == "core-pool"] or ready_names
    pod_list: list[Obj] = []
    ds_list = _daemonsets(node_names, pod_list, pods, heavy=heavy)
    deployments, replicasets = _deployments(
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
    out.write("podmetrics.json", _pod_metrics(rng, pod_list))
    del replicasets, deployments
    core_events, new_events = _events(rng, pod_list, node_list, events)
    out.write("events.json", core_events)
    out.write("events-v1.json", new_events)
    return out.sizes


def _nodes(rng: random.Random, count: int) -> tuple[list[Obj], list[str], dict[str, str]]:
    result, names, pool_of = [], [], {}
    index = 0
    for key, pool, share, cpu, memory in POOLS:
        healthy = _copier(
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
            meta.update(name=name, uid=_uid("node", index))
            meta["labels"]["kubernetes.io/hostname"] = name
            body["spec"]["providerID"] = f"openstack:///{_uid('vm', index)}"
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


def _daemonsets(
    node_names: list[str], pod_list: list[Obj], budget: int, *, heavy: bool
) -> list[Obj]:
    result = []
    for i, name in enumerate(("node-exporter", "kube-proxy", "fluent-bit")):
        if len(pod_list) + len(node_names) > budget // 3:
            break
        ds = b.deployment(
            name,
            namespace="kube-system",
            containers=[
                b.container(
                    name, requests={"cpu": "50m", "memory": "64Mi"}, limits={"memory": "128Mi"}
                )
            ],
            managed=_managed(None, -NOW),
        )
        ds.update(kind="DaemonSet")
        ds["metadata"]["uid"] = _uid("ds", i)
        del ds["spec"]["replicas"]
        result.append(ds)
        copy = _copier(
            b.pod(
                "tpl",
                namespace="kube-system",
                owner=ds,
                priority=2000001000,
                priority_class="system-node-critical",
                containers=ds["spec"]["template"]["spec"]["containers"],
                created=-timedelta(days=9),
            )
        )
        for j, node_name in enumerate(node_names):
            pod = copy()
            pod["metadata"].update(name=f"{name}-{j:05x}", uid=_uid(f"ds{i}", j))
            pod["spec"]["nodeName"] = node_name
            _pod_extras(pod, ip=j, heavy=heavy)
            pod_list.append(pod)
    return result


def _deployments(
    rng: random.Random,
    *,
    namespaces: list[str],
    nodes: list[str],
    core: list[str],
    pod_list: list[Obj],
    budget: int,
    heavy: bool,
) -> tuple[list[Obj], list[Obj]]:
    deployments: list[Obj] = []
    replicasets: list[Obj] = []
    made = 0
    index = 0
    while made < budget:
        index += 1
        ns = rng.choice(namespaces)
        name = f"svc-{index:05d}"
        replicas = min(budget - made, rng.choice((1, 2, 3, 5, 10, 20, 30, 50, 100)))
        pinned = rng.choice(core) if index % 997 == 0 else None
        labels, priority = {}, None
        if index % 101 == 0:  # hub pods on the core nodes, and a prometheus beside them
            name, labels, replicas = f"hub-{index}", {"component": "hub", "app": "jupyterhub"}, 1
        elif index % 103 == 0:
            name, replicas = f"prometheus-server-{index}", 1
        regular, inits = _containers(SHAPES[index % len(SHAPES)])
        if name.startswith("hub-"):  # incident 3's hub: 10m CPU, 128Mi
            regular = [b.container("hub", requests={"cpu": "10m", "memory": "128Mi"})]
        if name.startswith("prometheus"):
            regular = [
                b.container(
                    "prometheus-server",
                    requests={"cpu": "1", "memory": "20Gi"},
                    limits={"memory": "22Gi"},
                )
            ]
        created = -timedelta(days=rng.randint(1, 60))
        dep = b.deployment(
            name,
            namespace=ns,
            replicas=replicas,
            containers=regular,
            labels=labels,
            node_name=pinned,
            created=created,
            managed=_managed(pinned, NOW - timedelta(minutes=5)),
        )
        if inits:
            dep["spec"]["template"]["spec"]["initContainers"] = inits
        dep["spec"]["template"]["metadata"]["labels"].update(labels)  # the pods carry them too
        rs = b.replicaset(dep, pod_hash=f"{index * 2654435761 % 16**9:09x}", created=created)
        rs["metadata"]["managedFields"] = _managed(None, NOW - timedelta(minutes=5))[1:]
        deployments.append(dep)
        replicasets.append(rs)
        shape = b.pod(
            "tpl",
            namespace=ns,
            owner=rs,
            containers=regular,
            init_containers=inits,
            priority=priority,
            created=created,
        )
        copy = _copier(shape)
        failed_copy = _copier(
            {
                **shape,
                "status": {
                    "phase": "Failed",
                    "reason": "OutOfmemory",
                    "message": "Pod was rejected: Node didn't have enough resource: "
                    "memory, requested: 838860800, used: 7516192768, capacity: "
                    "8025849856",
                },
            }
        )
        pending_copy = _copier(
            {
                **shape,
                "status": {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "lastTransitionTime": b.stamp(NOW - timedelta(minutes=30)),
                        }
                    ],
                },
            }
        )
        rs_name = rs["metadata"]["name"]
        for j in range(replicas):
            roll = rng.random()
            if pinned or roll < 0.02:
                pod = failed_copy()
                if roll < 0.01 and not pinned:
                    pod["status"].update(
                        reason="Evicted",
                        message="The node was low on "
                        "resource: memory. Container app was using 900Mi, "
                        "request is 128Mi, has larger consumption of memory.",
                    )
            elif roll < 0.04:
                pod = pending_copy()
            else:
                pod = copy()
                if roll > 0.97:
                    status = pod["status"]["containerStatuses"][0]
                    status["restartCount"] = rng.randint(1, 40)
                    status["lastState"] = {
                        "terminated": {
                            "reason": "OOMKilled",
                            "exitCode": 137,
                            "finishedAt": b.stamp(NOW - timedelta(minutes=2)),
                        }
                    }
            suffix = f"{(index * 7 + j * 31337) % 36**5:05x}"
            pod["metadata"].update(name=f"{rs_name}-{suffix}", uid=_uid("pod", made))
            if pod["status"]["phase"] != "Pending":
                # hubs and Prometheus servers share a few core nodes, as in incident 3
                pair = index // 101 if labels else index // 103
                pod["spec"]["nodeName"] = pinned or (
                    core[pair % min(len(core), 50)]
                    if labels or name.startswith("prom")
                    else rng.choice(nodes)
                )
            _pod_extras(pod, ip=made, heavy=heavy)
            pod_list.append(pod)
            made += 1
    return deployments, replicasets


def _pod_metrics(rng: random.Random, pod_list: list[Obj]) -> list[Obj]:
    result = []
    for pod in pod_list:
        if pod["status"]["phase"] != "Running" or rng.random() > 0.6:
            continue
        meta = pod["metadata"]
        big = meta["name"].startswith("prometheus")
        usage = {
            c["name"]: {
                "cpu": f"{rng.randint(1, 900)}m",
                "memory": "21Gi" if big else f"{rng.randint(20, 900)}Mi",
            }
            for c in pod["spec"]["containers"]
        }
        result.append(
            {
                "apiVersion": "metrics.k8s.io/v1beta1",
                "kind": "PodMetrics",
                "metadata": {
                    "name": meta["name"],
                    "namespace": meta["namespace"],
                    "creationTimestamp": b.stamp(NOW),
                },
                "timestamp": b.stamp(NOW),
                "window": "30s",
                "containers": [{"name": n, "usage": u} for n, u in usage.items()],
            }
        )
    return result


def _events(
    rng: random.Random, pod_list: list[Obj], node_list: list[Obj], count: int
) -> tuple[list[Obj], list[Obj]]:
    reasons = [r for r in EVENT_REASONS]
    weights = [r[3] for r in reasons]
    pending = [p for p in pod_list if p["status"]["phase"] == "Pending"] or pod_list
    core_events: list[Obj] = []
    new_events: list[Obj] = []
    copies = {
        r[0]: _copier(
            b.event(involved=pod_list[0], reason=r[0], message="", type=r[1], component=r[2])
        )
        for r in reasons
    }
    for i, (reason, _, _, _, text) in enumerate(rng.choices(reasons, weights, k=count)):
        about_node = reason in ("OOMKilling", "SystemOOM", "NodeNotReady") and i % 2 == 0
        target = (
            rng.choice(node_list)
            if about_node
            else rng.choice(pending)
            if reason == "FailedScheduling"
            else rng.choice(pod_list)
        )
        meta = target["metadata"]
        node_name = meta["name"] if about_node else target["spec"].get("nodeName", "")
        body = copies[reason]()
        first = NOW - timedelta(seconds=rng.randint(60, 3600))
        last = min(NOW, first + timedelta(seconds=rng.randint(0, 1800)))
        body["metadata"].update(
            name=f"{meta['name']}.{i:016x}",
            uid=_uid("event", i),
            namespace=meta.get("namespace", "default"),
            creationTimestamp=b.stamp(first),
        )
        body["involvedObject"] = {
            "apiVersion": target["apiVersion"],
            "kind": target["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta["uid"],
        }
        body.update(
            message=text.format(
                ns=meta.get("namespace"), pod=meta["name"], node=node_name, nodes=len(node_list)
            ),
            count=rng.randint(1, 30),
            firstTimestamp=b.stamp(first),
            lastTimestamp=b.stamp(last),
        )
        body["source"]["host"] = node_name
        if i % 20:
            core_events.append(body)
        else:  # served in the events.k8s.io/v1 shape
            new_events.append(
                {
                    "apiVersion": "events.k8s.io/v1",
                    "kind": "Event",
                    "metadata": body["metadata"],
                    "regarding": body["involvedObject"],
                    "reason": reason,
                    "note": body["message"],
                    "type": body["type"],
                    "eventTime": None,
                    "reportingController": body["source"]["component"],
                    "reportingInstance": node_name,
                    "action": reason,
                    "deprecatedCount": body["count"],
                    "deprecatedFirstTimestamp": body["firstTimestamp"],
                    "deprecatedLastTimestamp": body["lastTimestamp"],
                    "deprecatedSource": body["source"],
                }
            )
    return core_events, new_events
