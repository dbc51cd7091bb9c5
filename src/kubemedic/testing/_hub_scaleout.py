"""Incident 3, the scale-out half: users, Dask workers, daemons on 126 nodes, metrics.

See ``_hub_cluster`` for the story; ``build()`` assembles the whole snapshot.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import _apps, _gke, _hub_core, bodies, lifelike
from kubemedic.testing import _hub_cluster as hub

Obj = dict[str, Any]

_WORKER_BYTES = str(100 * 1024**3)
_USERS = (
    "mkoch",
    "s-2dpatel",
    "jlindqvist",
    "rhashimoto",
    "tnguyen",
    "abenali",
    "kfischer",
    "l-2dmoreau",
    "dokafor",
    "ysato",
    "epetrova",
    "cwhite",
    "ffernandes",
    "hkim",
)


def _dask_owner() -> Obj:
    return {
        "apiVersion": "gateway.dask.org/v1alpha1",
        "kind": "DaskCluster",
        "name": hub.DASK_ID,
        "uid": bodies.uid_for("DaskCluster", "prod", hub.DASK_ID),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _dask_pod(
    component: str, suffix: str, *, node: Obj | None, created: datetime, requests: dict[str, str]
) -> Obj:
    name = f"dask-{component}-{hub.DASK_ID}" + (f"-{suffix}" if suffix else "")
    tolerations = [
        {
            "effect": "NoSchedule",
            "key": f"k8s.dask.org{sep}dedicated",
            "operator": "Equal",
            "value": component if component == "worker" else "scheduler",
        }
        for sep in ("/", "_")
    ]
    purpose = "worker" if component == "worker" else "scheduler"
    pod = lifelike.controlled_pod(
        None,
        name,
        namespace="prod",
        node=node,
        created=created,
        phase="Running" if node else "Pending",
        labels={
            "app.kubernetes.io/component": f"dask-{component}",
            "app.kubernetes.io/name": "dask-gateway",
            "app.kubernetes.io/version": "2022.11.0",
            "gateway.dask.org/cluster": hub.DASK_ID,
            "gateway.dask.org/instance": "prod-dask-gateway",
        },
        modern=False,
        extra_spec={
            "containers": [
                _apps.container(
                    f"dask-{component}",
                    "pangeo/pangeo-notebook:2023.01.13",
                    requests=requests,
                    limits=requests,
                    args=[f"dask-gateway-{component}"],
                )
            ],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "k8s.dask.org/node-purpose",
                                        "operator": "In",
                                        "values": [purpose],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
            "restartPolicy": "Never",
            "tolerations": tolerations,
        },
    )
    pod["metadata"]["ownerReferences"] = [_dask_owner()]
    if node is None:
        pod["status"]["conditions"] = [
            {
                "lastProbeTime": None,
                "lastTransitionTime": bodies.stamp(created + timedelta(seconds=1)),
                "message": hub.FAILED_SCHEDULING,
                "reason": "Unschedulable",
                "status": "False",
                "type": "PodScheduled",
            }
        ]
    return pod


def _dask(workers: list[Obj], users: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    pods: list[Obj] = []
    events: list[Obj] = []
    worker_requests = {"cpu": "13", "memory": _WORKER_BYTES}
    for i, node_body in enumerate(workers):
        created = datetime(2023, 2, 1, 17, 21, 48, tzinfo=UTC) + timedelta(seconds=117 * i)
        pods.append(
            _dask_pod(
                "worker",
                lifelike.kube_name(hub.DASK_ID, str(i)),
                node=node_body,
                created=created,
                requests=worker_requests,
            )
        )
    pods.append(
        _dask_pod(
            "scheduler",
            "",
            node=users[6],
            created=datetime(2023, 2, 1, 17, 19, 2, tzinfo=UTC),
            requests={"cpu": "1", "memory": "4Gi"},
        )
    )
    group = lifelike.digest("group", hub.CLUSTER.name, "dask-medium", hub.ZONE).hex()[:8]
    scale_up = (
        "pod triggered scale-up: [{https://www.googleapis.com/compute/v1/projects/"
        f"{hub.CLUSTER.project}/zones/{hub.ZONE}/instanceGroups/gke-{hub.CLUSTER.name}-"
        f"dask-medium-{group}-grp 13->113 (max: 200)}}]"
    )
    for i in range(100):
        created = datetime(2023, 2, 1, 18, 1, 5, tzinfo=UTC) + timedelta(seconds=i * 35 // 99)
        pod = _dask_pod(
            "worker",
            lifelike.kube_name(hub.DASK_ID, "pending", str(i)),
            node=None,
            created=created,
            requests=worker_requests,
        )
        pods.append(pod)
        retry = datetime(2023, 2, 1, 18, 5, 19, tzinfo=UTC) + timedelta(seconds=i % 11)
        events.extend(
            [
                lifelike.emit(
                    pod,
                    "FailedScheduling",
                    hub.EARLIER_SCHEDULING,
                    type="Warning",
                    first=created + timedelta(seconds=1),
                    last=created + timedelta(seconds=71),
                    count=2,
                    component="default-scheduler",
                ),
                lifelike.emit(
                    pod,
                    "TriggeredScaleUp",
                    scale_up,
                    first=created + timedelta(seconds=14),
                    component="cluster-autoscaler",
                ),
                lifelike.emit(
                    pod,
                    "FailedScheduling",
                    hub.FAILED_SCHEDULING,
                    type="Warning",
                    first=retry,
                    last=retry + timedelta(seconds=84 + i % 9),
                    count=3,
                    component="default-scheduler",
                ),
            ]
        )
    return pods, events


def _users(users: list[Obj]) -> list[Obj]:
    pods = []
    for i, name in enumerate(_USERS):
        node_body = users[i % len(users)]
        created = datetime(2023, 2, 1, 14, 9, 41, tzinfo=UTC) + timedelta(minutes=15 * i + i % 4)
        pod = lifelike.controlled_pod(
            None,
            f"jupyter-{name}",
            namespace="prod",
            node=node_body,
            created=created,
            modern=False,
            labels={
                "app": "jupyterhub",
                "chart": "jupyterhub-2.0.0",
                "component": "singleuser-server",
                "heritage": "jupyterhub",
                "hub.jupyter.org/network-access-hub": "true",
                "hub.jupyter.org/servername": "",
                "hub.jupyter.org/username": name,
                "release": "prod",
            },
            extra_spec={
                "containers": [
                    _apps.container(
                        "notebook",
                        "quay.io/leap-stc/leap-pangeo-image:2023.01.24",
                        requests={"cpu": "1500m", "memory": "11Gi"},
                        limits={"memory": "12Gi"},
                        ports=[("notebook-port", 8888)],
                        args=["jupyterhub-singleuser"],
                    )
                ],
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "hub.jupyter.org/node-purpose",
                                            "operator": "In",
                                            "values": ["user"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                },
                "schedulerName": "prod-user-scheduler",
                "tolerations": [
                    {
                        "effect": "NoSchedule",
                        "key": f"hub.jupyter.org{sep}dedicated",
                        "operator": "Equal",
                        "value": "user",
                    }
                    for sep in ("/", "_")
                ],
            },
        )
        pod["metadata"]["annotations"] = {"hub.jupyter.org/username": name.replace("-2d", "-")}
        pods.append(pod)
    return pods


def build() -> list[Obj]:
    core, users, workers, fresh, _ = hub._nodes()
    objects, pods, events = _hub_core.core_workloads(core)
    daemonsets = _gke.system_daemonsets(
        hub.CLUSTER, created=datetime(2022, 11, 14, 9, 8, tzinfo=UTC), calico=True
    )
    daemonsets.append(
        lifelike.daemonset(
            "support-prometheus-node-exporter",
            namespace="support",
            created=datetime(2022, 11, 14, 10, 1, tzinfo=UTC),
            labels={"app": "prometheus", "component": "node-exporter", "release": "support"},
            containers=[
                _apps.container(
                    "prometheus-node-exporter",
                    "quay.io/prometheus/node-exporter:v1.3.1",
                    ports=[("metrics", 9100)],
                )
            ],
            pod_spec={
                "hostNetwork": True,
                "hostPID": True,
                "serviceAccountName": "support-prometheus-node-exporter",
            },
        )
    )
    all_nodes = [*core, *users, *workers, *fresh]
    for ds in daemonsets:
        ds["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
        ds["status"] = lifelike.daemonset_status(len(all_nodes), 30)
    for node_body in all_nodes:
        meta = node_body["metadata"]
        ready = node_body["status"]["conditions"][-1]["status"] == "True"
        pods.extend(
            _gke.daemon_pods(
                hub.CLUSTER,
                daemonsets,
                node_body,
                started=lifelike.parse_stamp(meta["creationTimestamp"]) + timedelta(seconds=6),
                running=ready,
            )
        )
    dask_pods, dask_events = _dask(workers, users)
    pods.extend(dask_pods)
    pods.extend(_users(users))
    events.extend(dask_events)
    for i, node_body in enumerate(fresh):
        name = node_body["metadata"]["name"]
        created = lifelike.parse_stamp(node_body["metadata"]["creationTimestamp"])
        events.append(
            lifelike.emit(node_body, "Starting", "Starting kubelet.", first=created, host=name)
        )
        events.append(
            lifelike.emit(
                node_body,
                "RegisteredNode",
                f"Node {name} event: Registered Node {name} in Controller",
                first=created + timedelta(seconds=1),
                component="node-controller",
            )
        )
        if i < 4:
            events.append(
                lifelike.emit(
                    node_body,
                    "NodeReady",
                    f"Node {name} status is now: NodeReady",
                    first=created + timedelta(seconds=24),
                    host=name,
                )
            )
    metrics = _metrics(pods, [*core, *users, *workers])
    return [*all_nodes, *objects, *daemonsets, *pods, *events, *metrics]


def _metrics(pods: list[Obj], nodes: list[Obj]) -> list[Obj]:
    at = hub.NOW - timedelta(seconds=11)
    special = {
        "support-prometheus-server": {
            "prometheus-server": {"cpu": "1483220117n", "memory": "20761804Ki"},
            "prometheus-server-configmap-reload": {"cpu": "0", "memory": "3108Ki"},
        },
        "hub": {"hub": {"cpu": "84611203n", "memory": "190464Ki"}},
        "proxy": {"chp": {"cpu": "3918442n", "memory": "72508Ki"}},
        "dask-worker": {"dask-worker": {"cpu": "12418006335n", "memory": "63963136Ki"}},
    }
    names = {n["metadata"]["name"] for n in nodes}
    by_node: dict[str, list[Obj]] = {}
    out = []
    for pod in pods:
        status = pod["status"]
        if status["phase"] != "Running" or pod["spec"].get("nodeName") not in names:
            continue
        if not all(c.get("ready") for c in status.get("containerStatuses", [])):
            continue
        key = next((k for k in special if pod["metadata"]["name"].startswith(k)), None)
        if pod["metadata"]["namespace"] == "staging":
            key = None
        metrics = _apps.pod_metrics(pod, at=at, usage=special.get(key) if key else None)
        out.append(metrics)
        by_node.setdefault(pod["spec"]["nodeName"], []).append(metrics)
    for node_body in nodes:
        name = node_body["metadata"]["name"]
        out.append(_apps.node_metrics(name, by_node.get(name, []), at=at))
    return out
