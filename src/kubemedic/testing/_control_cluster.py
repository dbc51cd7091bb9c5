"""The healthy control: the same kinds of workloads as the incidents, run the way their
postmortems recommend (snapshot at 2024-12-10 10:30:00 UTC).

A GKE 1.30 cluster managed by Argo CD: an API gateway with no pinned node, JupyterHub with
generous requests for the hub, proxy and ingress controller, Prometheus alone on a tainted
``monitoring-pool`` node, users on a tainted ``user-pool``. Every node Ready, created days (or for
autoscaled user nodes, hours) apart; no Failed pods, no restarts, only Normal events; every
Argo CD-tracked object written only by ``argocd-controller`` and the controllers. Dumped with
``--show-managed-fields``. kubemedic should find nothing at warning or above.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import _apps, _gke, bodies, lifelike

Obj = dict[str, Any]

NOW = datetime(2024, 12, 10, 10, 30, 0, tzinfo=UTC)
SINCE = datetime(2024, 5, 6, 13, 20, 0, tzinfo=UTC)
SYNCED = datetime(2024, 12, 9, 15, 42, 10, tzinfo=UTC)
CLUSTER = _gke.Cluster(
    name="platform-prod",
    project="platform-prod-7a1c",
    region="europe-west1",
    version="v1.30.5-gke.1014001",
    runtime="containerd://1.7.22",
    kernel="6.1.100+",
    modern=True,
    pod_range="10.60",
    node_range="10.132.0",
)
ZONE = "europe-west1-b"


# (pool, machine type, nodes, first created, interval, labels, taint)
# fmt: off
_POOLS: tuple[tuple[str, str, int, datetime, timedelta, dict[str, str], Obj | None], ...] = (
    ("core-pool", "n2-standard-8", 3, datetime(2024, 11, 19, 3, 12, tzinfo=UTC),
     timedelta(days=1, minutes=17), {"hub.jupyter.org/node-purpose": "core"}, None),
    ("monitoring-pool", "n2-highmem-4", 1, datetime(2024, 11, 20, 3, 40, tzinfo=UTC),
     timedelta(0), {"workload": "monitoring"}, _gke.taint("workload", "monitoring", "NoSchedule")),
    ("user-pool", "n2-highmem-4", 3, datetime(2024, 12, 10, 6, 51, tzinfo=UTC),
     timedelta(minutes=53), {"hub.jupyter.org/node-purpose": "user"},
     _gke.taint("hub.jupyter.org_dedicated", "user", "NoSchedule")),
)
# fmt: on


def _nodes() -> dict[str, list[Obj]]:
    """Pools by the first word of their name. Heartbeats within the kubelet's 5-minute status
    report period (the first core node's is the snapshot's newest timestamp)."""
    return {
        pool.split("-", 1)[0]: [
            _gke.node(
                CLUSTER,
                pool=pool,
                machine=machine,
                zone=ZONE,
                index=i,
                created=first + step * i,
                labels=labels,
                taints=[taint] if taint else None,
                heartbeat=NOW - timedelta(seconds=(i + j) and lifelike.digest(pool, str(i))[0]),
            )
            for i in range(count)
        ]
        for j, (pool, machine, count, first, step, labels, taint) in enumerate(_POOLS)
    }


def _argo_managed(app: str, kind: str, ns: str, name: str) -> tuple[Obj, list[Obj]]:
    """Argo CD's tracking annotation and the managedFields of an object only it writes."""
    annotations = {"argocd.argoproj.io/tracking-id": f"{app}:apps/{kind}:{ns}/{name}"}
    managed = [
        bodies.managed_entry(
            manager="argocd-controller",
            time=SYNCED,
            fields={
                "f:metadata": {
                    "f:annotations": {".": {}, "f:argocd.argoproj.io/tracking-id": {}},
                    "f:labels": {".": {}, "f:app.kubernetes.io/instance": {}},
                },
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {
                        "f:metadata": {"f:labels": {".": {}}},
                        "f:spec": {"f:containers": {}},
                    },
                },
            },
        ),
        bodies.managed_entry(
            manager="kube-controller-manager",
            time=SYNCED,
            fields={"f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}}},
        ),
        bodies.managed_entry(
            manager="kube-controller-manager",
            subresource="status",
            time=SYNCED + timedelta(seconds=35),
            fields={
                "f:status": {
                    "f:availableReplicas": {},
                    "f:readyReplicas": {},
                    "f:replicas": {},
                    "f:updatedReplicas": {},
                }
            },
        ),
    ]
    return annotations, managed


_Z2JH = {"chart": "jupyterhub-4.0.0", "heritage": "Helm"}
_HELM = {"app.kubernetes.io/managed-by": "Helm"}
_CORE = lifelike.node_affinity("hub.jupyter.org/node-purpose", "core")
_MONITORING = {
    "tolerations": [
        {"effect": "NoSchedule", "key": "workload", "operator": "Equal", "value": "monitoring"}
    ],
    "nodeSelector": {"workload": "monitoring"},
}
_SYSTEM = {"priorityClassName": "system-cluster-critical"}
_GW = "europe-west1-docker.pkg.dev/platform-prod-7a1c/gateway"


def _hub(component: str, image: str, cpu: str, memory: str) -> _apps.App:
    return _apps.App(
        component,
        "prod",
        image,
        {"cpu": cpu, "memory": memory},
        {"memory": "2Gi" if component == "hub" else memory},
        selector={"app": "jupyterhub", "component": component, "release": "prod"},
        labels=_Z2JH,
        spec=_CORE,
        container=component.split("-", 1)[0],
    )


# (Argo CD application or None for GKE's own add-ons, the app, nodes: c=core m=monitoring)
# fmt: off
_APPS: tuple[tuple[str | None, _apps.App, str], ...] = (
    ("api-gateway", _apps.App("api-gateway", "gateway", f"{_GW}/api-gateway:v3.15.0",
                              {"cpu": "200m", "memory": "800Mi"}, {"memory": "800Mi"},
                              ports=(("http", 8080),)), "c0 c1 c2 c0 c1 c2"),
    ("jwt-authorizer", _apps.App("jwt-authorizer", "gateway", f"{_GW}/jwt-authorizer:v1.9.0",
                                 {"cpu": "100m", "memory": "512Mi"}, {"memory": "512Mi"}),
     "c1 c2"),
    ("jupyterhub", _hub("hub", "quay.io/jupyterhub/k8s-hub:4.0.0", "500m", "1Gi"), "c0"),
    ("jupyterhub", _hub("proxy", "quay.io/jupyterhub/configurable-http-proxy:4.6.2", "200m",
                        "512Mi"), "c1"),
    ("jupyterhub", _hub("user-scheduler", "registry.k8s.io/kube-scheduler:v1.30.6", "50m",
                        "256Mi"), "c1 c2"),
    ("ingress-nginx", _apps.App(
        "ingress-nginx-controller", "ingress-nginx",
        "registry.k8s.io/ingress-nginx/controller:v1.11.3", {"cpu": "250m", "memory": "512Mi"},
        {"memory": "1Gi"}, container="controller", labels=_HELM, ports=(("http", 80),),
        selector={"app.kubernetes.io/component": "controller",
                  "app.kubernetes.io/instance": "ingress-nginx",
                  "app.kubernetes.io/name": "ingress-nginx"}), "c0 c2"),
    ("support", _apps.App(
        "support-prometheus-server", "support", "quay.io/prometheus/prometheus:v2.55.1",
        {"cpu": "1", "memory": "20Gi"}, {"memory": "22Gi"}, container="prometheus-server",
        labels=_HELM, spec=_MONITORING, ports=(("web", 9090),),
        selector={"app.kubernetes.io/component": "server",
                  "app.kubernetes.io/name": "prometheus"}), "m0"),
    ("support", _apps.App("support-grafana", "support", "docker.io/grafana/grafana:11.3.1",
                          {"cpu": "100m", "memory": "512Mi"}, {"memory": "1Gi"},
                          container="grafana", labels=_HELM), "c2"),
    ("support", _apps.App(
        "support-kube-state-metrics", "support",
        "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.14.0",
        {"cpu": "50m", "memory": "256Mi"}, {"memory": "512Mi"}, container="kube-state-metrics",
        labels=_HELM), "c1"),
    (None, _apps.App("konnectivity-agent", "kube-system",
                     CLUSTER.image("proxy-agent:v0.30.3-gke.10"), {"cpu": "10m", "memory": "30Mi"},
                     {"memory": "125Mi"}, selector={"k8s-app": "konnectivity-agent"},
                     spec=_SYSTEM), "c0 c1 c2"),
    (None, _apps.App("metrics-server-v1.30.3", "kube-system",
                     CLUSTER.image("metrics-server:v0.7.1-gke.23"),
                     {"cpu": "48m", "memory": "105Mi"}, {"memory": "105Mi"},
                     container="metrics-server", selector={"k8s-app": "metrics-server"},
                     spec=_SYSTEM), "c1"),
)
# fmt: on


def _workloads(nodes: dict[str, list[Obj]]) -> tuple[list[Obj], list[Obj]]:
    place = {"c": nodes["core"], "m": nodes["monitoring"]}
    objects: list[Obj] = []
    pods: list[Obj] = []
    for i, (argo_app, listed, where) in enumerate((*_APPS, (None, _KUBE_DNS, "c0 c2"))):
        app = listed
        if argo_app:
            annotations, managed = _argo_managed(argo_app, "Deployment", app.namespace, app.name)
            app = replace(
                app, labels={"app.kubernetes.io/instance": argo_app, **(app.labels or {})}
            )
        else:
            annotations, managed = (
                {},
                [
                    bodies.managed_entry(
                        manager="kubectl-client-side-apply",
                        time=SINCE,
                        fields={"f:spec": {"f:template": {}}},
                    )
                ],
            )
        body, rs, placed = _apps.rollout(
            app,
            nodes=[place[w[0]][int(w[1:])] for w in where.split()],
            created=SINCE,
            rolled=SYNCED - timedelta(days=6, minutes=i),
            annotations=annotations or None,
            managed=managed,
            containers=_kube_dns() if listed is _KUBE_DNS else None,
        )
        objects.extend([body, rs])
        pods.extend(placed)
    return objects, pods


_KUBE_DNS = _apps.App(
    "kube-dns",
    "kube-system",
    "",
    {},
    selector={"k8s-app": "kube-dns"},
    spec={**_SYSTEM, "serviceAccountName": "kube-dns"},
)


def _kube_dns() -> list[Obj]:
    return [
        _apps.container(
            name,
            CLUSTER.image(f"k8s-dns-{image}:1.23.0-gke.9"),
            requests={"cpu": cpu, "memory": memory},
            limits={"memory": "210Mi"} if name == "kubedns" else None,
        )
        for name, image, cpu, memory in (
            ("kubedns", "kube-dns", "100m", "70Mi"),
            ("dnsmasq", "dnsmasq-nanny", "150m", "20Mi"),
            ("sidecar", "sidecar", "10m", "20Mi"),
        )
    ]


def _users(nodes: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    pods, events = [], []
    for i, user in enumerate(("dana", "ilker", "mei-2dling", "oskar")):
        node_body = nodes[i % len(nodes)]
        created = NOW - timedelta(hours=2, minutes=55) + timedelta(minutes=50 * i)
        pod = lifelike.controlled_pod(
            None,
            f"jupyter-{user}",
            namespace="prod",
            node=node_body,
            created=created,
            started=created + timedelta(seconds=19),
            labels={
                "app": "jupyterhub",
                "component": "singleuser-server",
                "release": "prod",
                "hub.jupyter.org/username": user,
                "hub.jupyter.org/servername": "",
            },
            extra_spec={
                "containers": [
                    _apps.container(
                        "notebook",
                        "quay.io/jupyter/scipy-notebook:2024-12-02",
                        requests={"cpu": "1", "memory": "8Gi"},
                        limits={"memory": "8Gi"},
                        ports=[("notebook-port", 8888)],
                    )
                ],
                "schedulerName": "prod-user-scheduler",
                "tolerations": [
                    {
                        "effect": "NoSchedule",
                        "key": "hub.jupyter.org_dedicated",
                        "operator": "Equal",
                        "value": "user",
                    }
                ],
            },
        )
        pods.append(pod)
        if NOW - created <= timedelta(hours=1):
            host = node_body["metadata"]["name"]
            events.append(
                lifelike.emit(
                    pod,
                    "Scheduled",
                    f"Successfully assigned prod/jupyter-{user} to {host}",
                    first=created,
                    component="prod-user-scheduler",
                )
            )
            for reason, message in (
                (
                    "Pulled",
                    'Container image "quay.io/jupyter/scipy-notebook:2024-12-02" '
                    "already present on machine",
                ),
                ("Created", "Created container notebook"),
                ("Started", "Started container notebook"),
            ):
                events.append(
                    lifelike.emit(
                        pod,
                        reason,
                        message,
                        first=created + timedelta(seconds=18),
                        host=host,
                        field_path="spec.containers{notebook}",
                    )
                )
    culled = bodies.pod("jupyter-rafael", namespace="prod")
    events.append(
        lifelike.emit(
            culled,
            "Killing",
            "Stopping container notebook",
            first=NOW - timedelta(minutes=14),
            host=nodes[2]["metadata"]["name"],
            field_path="spec.containers{notebook}",
        )
    )
    return pods, events


def build() -> list[Obj]:
    nodes = _nodes()
    every = [*nodes["core"], *nodes["monitoring"], *nodes["user"]]
    objects, pods = _workloads(nodes)
    daemonsets = _gke.system_daemonsets(CLUSTER, created=SINCE, calico=True)
    for ds in daemonsets:
        ds["spec"]["template"]["spec"]["tolerations"] = [{"operator": "Exists"}]
        ds["status"] = lifelike.daemonset_status(len(every), len(every))
    objects.extend(daemonsets)
    for n in every:
        pods.extend(
            _gke.daemon_pods(
                CLUSTER,
                daemonsets,
                n,
                started=lifelike.parse_stamp(n["metadata"]["creationTimestamp"])
                + timedelta(seconds=25),
            )
        )
    user_pods, events = _users(nodes["user"])
    pods.extend(user_pods)
    at = NOW - timedelta(seconds=12)
    metrics = []
    for n in every:
        name = n["metadata"]["name"]
        here = [_apps.pod_metrics(p, at=at) for p in pods if p["spec"].get("nodeName") == name]
        metrics.extend(here)
        metrics.append(_apps.node_metrics(name, here, at=at))
    return [*every, *objects, *pods, *events, *metrics]
