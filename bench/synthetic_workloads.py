"""Synthetic workloads: DaemonSets and Deployments, their ReplicaSets, and the pods they own.

Three DaemonSets put a pod on every node. Deployments have one ReplicaSet each, their pod
templates drawn from ``SHAPES`` (sidecars as restartable init containers, init containers in
some), and ``managedFields`` as a GitOps-managed cluster has them: Argo CD applying the spec,
the controller manager writing status. Among the bulk of Running pods:

* about 2% Failed (``OutOfmemory`` admission rejections by the kubelet, half of them
  ``Evicted`` instead) and 2% Pending (``PodScheduled=False``, ``Unschedulable``), a few
  Running ones with OOMKilled restarts;
* every 997th Deployment pinned to a core node by ``spec.template.spec.nodeName`` through a
  ``kubectl-edit``, its pods all rejected ``OutOfmemory`` (incident 1's churn);
* every 101st a JupyterHub hub and every 103rd a Prometheus server (20Gi request), placed in
  pairs on the same few core nodes (incident 3).
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

import synthetic_pods
from kubemedic.testing import bodies as b
from synthetic_templates import NOW, Obj, copier, uid

SHAPES = (  # (containers: (name, cpu req, mem req, mem limit or None), sidecar, init)
    ((("app", "100m", "128Mi", "256Mi"),), False, False),
    ((("api", "250m", "512Mi", "1Gi"),), True, False),
    ((("worker", "500m", "1Gi", None), ("metrics", "10m", "32Mi", "64Mi")), False, True),
    ((("jvm", "1", "2Gi", "3Gi"),), True, True),
)


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
    spec_fields: Obj = {
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


def daemonsets(
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
        ds["metadata"]["uid"] = uid("ds", i)
        del ds["spec"]["replicas"]
        result.append(ds)
        copy = copier(
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
            pod["metadata"].update(name=f"{name}-{j:05x}", uid=uid(f"ds{i}", j))
            pod["spec"]["nodeName"] = node_name
            synthetic_pods.add_extras(pod, ip=j, heavy=heavy)
            pod_list.append(pod)
    return result


def deployments(
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
        copy = copier(shape)
        failed_copy = copier(
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
        pending_copy = copier(
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
            pod["metadata"].update(name=f"{rs_name}-{suffix}", uid=uid("pod", made))
            if pod["status"]["phase"] != "Pending":
                # hubs and Prometheus servers share a few core nodes, as in incident 3
                pair = index // 101 if labels else index // 103
                pod["spec"]["nodeName"] = pinned or (
                    core[pair % min(len(core), 50)]
                    if labels or name.startswith("prom")
                    else rng.choice(nodes)
                )
            synthetic_pods.add_extras(pod, ip=made, heavy=heavy)
            pod_list.append(pod)
            made += 1
    return deployments, replicasets
