"""Incident 1 assembled: nodes, the other workloads, the storm's pods, events and metrics."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.model import resources
from kubemedic.testing import _apps, _gke, bodies, lifelike
from kubemedic.testing import _storm_cluster as storm

Obj = dict[str, Any]

ZONES = ("asia-northeast1-a", "asia-northeast1-b", "asia-northeast1-c")
NOW = storm.SYNC + timedelta(seconds=1 + 3 * (storm.REJECTED - 1) // 2)


def _nodes() -> list[Obj]:
    return [
        _gke.node(
            storm.CLUSTER,
            pool="apigw-pool",
            machine="e2-standard-2",
            zone=ZONES[i % 3],
            index=i,
            created=datetime(2024, 11, 26, 2, 10, 33, tzinfo=UTC)
            + timedelta(minutes=7 * i, seconds=i * i),
            heartbeat=NOW - timedelta(seconds=12 + 47 * i),
            labels={"workload": "gateway"},
        )
        for i in range(6)
    ]


def _argo(fields_time: datetime, *, kind: str) -> list[Obj]:
    """managedFields of an object Argo CD applies (client-side) and a controller reports on."""
    spec = {
        "f:replicas": {},
        "f:selector": {},
        "f:template": {
            "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/name": {}}},
            "f:spec": {"f:containers": {}},
        },
    }
    if kind == "StatefulSet":
        spec["f:serviceName"] = {}
    return [
        bodies.managed_entry(
            manager="argocd-controller",
            time=fields_time,
            fields={
                "f:metadata": {
                    "f:annotations": {
                        ".": {},
                        "f:argocd.argoproj.io/tracking-id": {},
                        "f:kubectl.kubernetes.io/last-applied-configuration": {},
                    },
                    "f:labels": {
                        ".": {},
                        "f:app.kubernetes.io/instance": {},
                        "f:app.kubernetes.io/name": {},
                    },
                },
                "f:spec": spec,
            },
        ),
        bodies.managed_entry(
            manager="kube-controller-manager",
            subresource="status",
            time=fields_time + timedelta(seconds=40),
            fields={"f:status": {"f:replicas": {}, "f:readyReplicas": {}}},
        ),
    ]


_GAR = "asia-northeast1-docker.pkg.dev/apigw-stg-31f2/gateway"
_ARGOCD = "quay.io/argoproj/argocd:v2.12.6"
_REDIS = "docker.io/bitnami/redis:7.2.4-debian-12-r9"
_SYSTEM = {"priorityClassName": "system-cluster-critical"}
_SINCE = datetime(2024, 6, 12, 8, 29, 50, tzinfo=UTC)
_UPGRADED = datetime(2024, 11, 26, 2, 55, 9, tzinfo=UTC)
# (Argo CD application, or None for GKE's add-ons; the app; indexes of its nodes). Node 0 is the
# one the gateway gets pinned to: Redis, the admin API and an authorizer already take 4.1Gi there.
# fmt: off
_APPS: tuple[tuple[str | None, _apps.App, tuple[int, ...]], ...] = (
    ("api-gateway-admin", _apps.App("api-gateway-admin", "gateway",
     f"{_GAR}/api-gateway-admin:v3.14.2", {"cpu": "100m", "memory": "1Gi"}, {"memory": "1Gi"}),
     (0,)),
    ("jwt-authorizer", _apps.App("jwt-authorizer", "gateway", f"{_GAR}/jwt-authorizer:v1.9.0",
     {"cpu": "100m", "memory": "512Mi"}, {"memory": "512Mi"}), (0, 3)),
    *(("argocd", _apps.App(name, "argocd", _ARGOCD, {"cpu": "50m", "memory": memory},
       {"memory": memory}), (where,))
      for name, memory, where in (("argocd-repo-server", "256Mi", 2), ("argocd-server", "128Mi", 3),
                                  ("argocd-applicationset-controller", "128Mi", 5),
                                  ("argocd-notifications-controller", "64Mi", 5))),
    ("argocd", _apps.App("argocd-redis", "argocd",
     "public.ecr.aws/docker/library/redis:7.0.15-alpine", {"cpu": "50m", "memory": "64Mi"},
     {"memory": "128Mi"}, container="redis"), (4,)),
    (None, _apps.App("konnectivity-agent", "kube-system",
     storm.CLUSTER.image("proxy-agent:v0.30.3-gke.10"), {"cpu": "10m", "memory": "30Mi"},
     {"memory": "125Mi"}, selector={"k8s-app": "konnectivity-agent"}, spec=_SYSTEM), (1, 2, 4)),
    (None, _apps.App("metrics-server-v1.30.3", "kube-system",
     storm.CLUSTER.image("metrics-server:v0.7.1-gke.23"), {"cpu": "48m", "memory": "105Mi"},
     {"memory": "105Mi"}, container="metrics-server", selector={"k8s-app": "metrics-server"},
     spec=_SYSTEM), (2,)),
    (None, _apps.App("event-exporter-gke", "kube-system",
     storm.CLUSTER.image("event-exporter:v0.4.0-gke.4"), {"cpu": "10m", "memory": "20Mi"},
     container="event-exporter", selector={"k8s-app": "event-exporter"}), (5,)),
)
# (StatefulSet, namespace, Argo CD application, labels, image, requests, nodes)
_STATEFUL: tuple[tuple[str, str, str, dict[str, str], str, dict[str, str], tuple[int, ...]],
                 ...] = (
    ("redis-ratelimit-master", "gateway", "redis-ratelimit",
     {"app.kubernetes.io/component": "master", "app.kubernetes.io/name": "redis"}, _REDIS,
     {"cpu": "250m", "memory": "2560Mi"}, (0,)),
    ("redis-ratelimit-replicas", "gateway", "redis-ratelimit",
     {"app.kubernetes.io/component": "replica", "app.kubernetes.io/name": "redis"}, _REDIS,
     {"cpu": "250m", "memory": "1Gi"}, (2, 4)),
    ("argocd-application-controller", "argocd", "argocd",
     {"app.kubernetes.io/name": "argocd-application-controller"}, _ARGOCD,
     {"cpu": "250m", "memory": "1Gi"}, (1,)),
)
# fmt: on


def _kube_dns() -> list[Obj]:
    return [
        _apps.container(name, storm.CLUSTER.image(f"k8s-dns-{image}:1.23.0-gke.9"),
                        requests={"cpu": cpu, "memory": memory},
                        limits={"memory": "210Mi"} if name == "kubedns" else None)
        for name, image, cpu, memory in (("kubedns", "kube-dns", "100m", "70Mi"),
                                         ("dnsmasq", "dnsmasq-nanny", "150m", "20Mi"),
                                         ("sidecar", "sidecar", "10m", "20Mi"))
    ]  # fmt: skip


def _statefulsets(nodes: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    objects, pods = [], []
    for name, ns, app, labels, image, requests, where in _STATEFUL:
        body = lifelike.statefulset(
            name,
            namespace=ns,
            created=_SINCE,
            replicas=len(where),
            labels={"app.kubernetes.io/instance": app, **labels},
            containers=[
                _apps.container(
                    labels["app.kubernetes.io/name"].split("-")[-1],
                    image,
                    requests=requests,
                    limits={"memory": requests["memory"]},
                )
            ],
        )
        body["metadata"]["labels"]["app.kubernetes.io/managed-by"] = "Helm"
        body["metadata"]["annotations"] = {
            "argocd.argoproj.io/tracking-id": f"{app}:apps/StatefulSet:{ns}/{name}"
        }
        body["metadata"]["managedFields"] = _argo(storm.RELEASED, kind="StatefulSet")
        objects.append(body)
        for ordinal, n in enumerate(where):
            pod_name = f"{name}-{ordinal}"
            pods.append(
                lifelike.controlled_pod(
                    body,
                    pod_name,
                    node=nodes[n],
                    created=_UPGRADED + timedelta(minutes=3 * n, seconds=ordinal),
                    labels={
                        "controller-revision-hash": body["status"]["currentRevision"],
                        "statefulset.kubernetes.io/pod-name": pod_name,
                        "apps.kubernetes.io/pod-index": str(ordinal),
                    },
                )
            )
    return objects, pods  # fmt: skip


def _apps_of(nodes: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """Everything but the gateway itself: (workloads, pods)."""
    objects, pods = _statefulsets(nodes)
    kube_dns = _apps.App(
        "kube-dns",
        "kube-system",
        "",
        {},
        selector={"k8s-app": "kube-dns"},
        spec={**_SYSTEM, "serviceAccountName": "kube-dns"},
    )
    addon = [bodies.managed_entry(manager="kubectl-client-side-apply", time=_UPGRADED,
                                    fields={"f:spec": {"f:template": {}}})]  # fmt: skip
    for i, (argo_app, listed, where) in enumerate(((None, kube_dns, (0, 3)), *_APPS)):
        app, annotations, managed = listed, None, addon
        if argo_app:
            tracking = f"{argo_app}:apps/Deployment:{app.namespace}/{app.name}"
            annotations = {"argocd.argoproj.io/tracking-id": tracking}
            managed = _argo(storm.RELEASED, kind="Deployment")
            app = replace(app, labels={"app.kubernetes.io/instance": argo_app})
        body, rs, placed = _apps.rollout(
            app, nodes=[nodes[n] for n in where], created=_SINCE,
            rolled=_UPGRADED + timedelta(minutes=i), annotations=annotations, managed=managed,
            containers=_kube_dns() if listed is kube_dns else None)  # fmt: skip
        objects.extend([body, rs])
        pods.extend(placed)
    daemonsets = _gke.system_daemonsets(storm.CLUSTER, created=_SINCE, calico=False)
    for ds in daemonsets:
        ds["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
        ds["status"] = lifelike.daemonset_status(len(nodes), len(nodes))
        ds["metadata"]["managedFields"] = addon
    objects.extend(daemonsets)
    for n in nodes:
        started = lifelike.parse_stamp(n["metadata"]["creationTimestamp"]) + timedelta(seconds=25)
        pods.extend(_gke.daemon_pods(storm.CLUSTER, daemonsets, n, started=started))
    return objects, pods


def _storm_pods(rs: Obj, node_body: Obj, others: list[Obj]) -> list[Obj]:
    """The one pod that fits, then ``REJECTED`` the kubelet turned away. ``used`` in the
    kubelet's message is the requests of the pods it has admitted, ``capacity`` the node's
    allocatable, in bytes."""
    name = rs["metadata"]["name"]
    first = lifelike.controlled_pod(
        rs,
        f"{name}-{lifelike.kube_name('gw', 'running')}",
        node=node_body,
        created=storm.EDIT_NODE + timedelta(seconds=1),
    )
    admitted = [p for p in others if p["spec"].get("nodeName") == node_body["metadata"]["name"]]
    used = sum(
        int(resources.pod_requests(p)["memory"].value)
        for p in [*admitted, first]
        if "memory" in resources.pod_requests(p)
    )
    capacity = int(resources.node_allocatable(node_body)["memory"].value)
    requested = int(resources.pod_requests(first)["memory"].value)
    detail = (
        f"Node didn't have enough resource: memory, requested: {requested}, used: {used}, "
        f"capacity: {capacity}"
    )
    pods = [first]
    for i in range(storm.REJECTED):
        created = storm.SYNC + timedelta(seconds=1 + 3 * i // 2)
        pod = lifelike.controlled_pod(
            rs,
            f"{name}-{lifelike.kube_name('gw', str(i))}",
            node=node_body,
            created=created,
            phase="Failed",
            reason="OutOfmemory",
            message=f"Pod was rejected: {detail}",
        )
        pod["status"]["startTime"] = bodies.stamp(created)
        pods.append(pod)
    return pods


def build() -> list[Obj]:
    nodes = _nodes()
    target = nodes[0]
    objects, pods = _apps_of(nodes)
    deployment, rs, old_rs = storm._gateway(target["metadata"]["name"])
    gateway_pods = _storm_pods(rs, target, pods)
    events = storm.storm_events(deployment, rs, old_rs, gateway_pods, target["metadata"]["name"])
    pods.extend(gateway_pods)
    at = NOW - timedelta(seconds=9)
    running = [p for p in pods if p["status"]["phase"] == "Running"]
    pod_metrics = [_apps.pod_metrics(p, at=at) for p in running]
    metrics = [*pod_metrics]
    for n in nodes:
        name = n["metadata"]["name"]
        here = [
            m for m, p in zip(pod_metrics, running, strict=True) if p["spec"]["nodeName"] == name
        ]
        metrics.append(_apps.node_metrics(name, here, at=at))
    return [*nodes, deployment, rs, old_rs, *objects, *pods, *events, *metrics]
