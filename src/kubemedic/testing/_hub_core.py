"""Incident 3, the core pool: the hub's two deaths, Prometheus, and everything beside them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import _apps, bodies, lifelike
from kubemedic.testing import _hub_cluster as hub

Obj = dict[str, Any]

SINCE = datetime(2023, 1, 9, 16, 40, tzinfo=UTC)
KILLED = datetime(2023, 2, 1, 18, 4, 30, tzinfo=UTC)
EVICTED = datetime(2023, 2, 1, 18, 6, 5, tzinfo=UTC)
OOM = datetime(2023, 2, 1, 17, 31, 12, tzinfo=UTC)
HUB_IMAGE = "quay.io/jupyterhub/k8s-hub:2.0.0"
_CORE = lifelike.node_affinity("hub.jupyter.org/node-purpose", "core", required=False)
_HELM = {"app.kubernetes.io/managed-by": "Helm"}
_SYSTEM = {"priorityClassName": "system-cluster-critical"}


def _z2jh(component: str, release: str) -> dict[str, str]:
    return {"app": "jupyterhub", "component": component, "release": release}


def _small(component: str, release: str, image: str, memory: str, limit: str) -> _apps.App:
    """A JupyterHub component as 2i2c then ran them: 10m CPU and a small memory request."""
    return _apps.App(
        component,
        release,
        image,
        {"cpu": "10m", "memory": memory},
        {"memory": limit},
        selector=_z2jh(component, release),
        labels={"chart": "jupyterhub-2.0.0", "heritage": "Helm"},
        spec=_CORE,
        container="chp" if component == "proxy" else component,
    )


# (app, indexes of the core nodes its pods run on)
# fmt: off
_APPS: tuple[tuple[_apps.App, tuple[int, ...]], ...] = (
    (_apps.App("support-prometheus-kube-state-metrics", "support",
               "registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.5.0",
               {"cpu": "10m", "memory": "256Mi"}, {"memory": "3056Mi"},
               selector={"app.kubernetes.io/instance": "support",
                         "app.kubernetes.io/name": "kube-state-metrics"},
               labels=_HELM, container="kube-state-metrics"), (1,)),
    (_small("proxy", "prod", "jupyterhub/configurable-http-proxy:4.5.3", "64Mi", "1Gi"), (0,)),
    (_small("hub", "staging", HUB_IMAGE, "128Mi", "2Gi"), (3,)),
    (_small("proxy", "staging", "jupyterhub/configurable-http-proxy:4.5.3", "64Mi", "1Gi"), (2,)),
    (_apps.App("user-scheduler", "prod", "registry.k8s.io/kube-scheduler:v1.23.14",
               {"cpu": "50m", "memory": "256Mi"}, selector=_z2jh("user-scheduler", "prod"),
               container="kube-scheduler"), (0, 2)),
    (_apps.App("support-ingress-nginx-controller", "support",
               "registry.k8s.io/ingress-nginx/controller:v1.2.1",
               {"cpu": "100m", "memory": "90Mi"}, container="controller", labels=_HELM,
               selector={"app.kubernetes.io/component": "controller",
                         "app.kubernetes.io/instance": "support",
                         "app.kubernetes.io/name": "ingress-nginx"}), (2,)),
    (_apps.App("support-grafana", "support", "grafana/grafana:9.0.2",
               {"cpu": "100m", "memory": "256Mi"}, {"memory": "1Gi"}, container="grafana",
               selector={"app.kubernetes.io/instance": "support",
                         "app.kubernetes.io/name": "grafana"}, labels=_HELM), (3,)),
    *(
        (_apps.App(f"{part}-prod-dask-gateway", "prod",
                   "ghcr.io/dask/dask-gateway-server:2022.11.0",
                   {"cpu": "50m", "memory": "128Mi"}, {"memory": "512Mi"}, container=part,
                   selector={"app.kubernetes.io/component": part,
                             "app.kubernetes.io/instance": "prod",
                             "app.kubernetes.io/name": "dask-gateway"}, labels=_HELM), (3,))
        for part in ("api", "controller", "traefik")
    ),
    (_apps.App("metrics-server-v0.5.2", "kube-system",
               hub.CLUSTER.image("metrics-server:v0.5.2-gke.1"),
               {"cpu": "53m", "memory": "155Mi"}, {"memory": "405Mi"}, container="metrics-server",
               selector={"k8s-app": "metrics-server", "version": "v0.5.2"}, spec=_SYSTEM), (3,)),
)
# fmt: on

_KUBE_DNS = _apps.App(
    "kube-dns",
    "kube-system",
    "",
    {},
    selector={"k8s-app": "kube-dns"},
    labels={"addonmanager.kubernetes.io/mode": "Reconcile"},
    spec={**_SYSTEM, "serviceAccountName": "kube-dns"},
)


def _kube_dns() -> list[Obj]:
    return [
        _apps.container(
            name,
            hub.CLUSTER.image(f"k8s-dns-{image}:1.22.12-gke.0"),
            requests={"cpu": cpu, "memory": memory},
            limits={"memory": "210Mi"} if name == "kubedns" else None,
        )
        for name, image, cpu, memory in (
            ("kubedns", "kube-dns", "100m", "70Mi"),
            ("dnsmasq", "dnsmasq-nanny", "150m", "20Mi"),
            ("sidecar", "sidecar", "10m", "20Mi"),
        )
    ]


def _hub(node2: Obj) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """The hub: a pod up since 2023-01-30 whose liveness probe failed 30 times (restarted),
    then evicted under memory pressure; its replacement on the same node."""
    container = _apps.container(
        "hub",
        HUB_IMAGE,
        requests={"cpu": "10m", "memory": "128Mi"},
        limits={"memory": "2Gi"},
        ports=[("http", 8081)],
        liveness=_apps.http_probe("/hub/health", "http", failures=30, timeout=3, delay=300),
        readiness=_apps.http_probe("/hub/health", "http", period=2, failures=1000),
        args=[
            "jupyterhub",
            "--config",
            "/usr/local/etc/jupyterhub/jupyterhub_config.py",
            "--upgrade-db",
        ],
    )
    deployment, rs = _apps.deploy(
        "hub",
        namespace="prod",
        containers=[container],
        selector=_z2jh("hub", "prod"),
        labels={"chart": "jupyterhub-2.0.0", "heritage": "Helm"},
        created=SINCE,
        rolled=datetime(2023, 1, 30, 11, 2, 5, tzinfo=UTC),
        recreate=True,
        pod_spec={**_CORE, "serviceAccountName": "hub"},
    )
    host = node2["metadata"]["name"]
    up = datetime(2023, 1, 30, 11, 2, 31, tzinfo=UTC)
    old = lifelike.controlled_pod(
        rs,
        f"{rs['metadata']['name']}-{lifelike.kube_name('hub', 'a')}",
        node=node2,
        created=up - timedelta(seconds=9),
        started=up,
        modern=False,
        restarts={"hub": 1},
        last_states={
            "hub": lifelike.terminated(
                reason="Error",
                exit_code=137,
                started=up,
                finished=KILLED + timedelta(seconds=30),
                container_id="containerd://" + "7e" * 32,
            )
        },
    )
    url = f"http://{old['status']['podIP']}:8081/hub/health"
    old["status"].update({"phase": "Failed", "reason": "Evicted", "message": hub.EVICTION})
    for key in ("podIP", "podIPs"):
        del old["status"][key]
    for condition in old["status"]["conditions"]:
        if condition["type"] in ("Ready", "ContainersReady"):
            condition.update(
                {
                    "status": "False",
                    "reason": "PodFailed",
                    "lastTransitionTime": bodies.stamp(EVICTED),
                }
            )
    old["status"]["containerStatuses"][0].update(
        {
            "ready": False,
            "started": False,
            "state": {
                "terminated": {
                    "exitCode": 137,
                    "finishedAt": None,
                    "reason": "ContainerStatusUnknown",
                    "message": "The container could not be located when the pod was terminated",
                    "startedAt": None,
                }
            },
        }
    )
    new = lifelike.controlled_pod(
        rs,
        f"{rs['metadata']['name']}-{lifelike.kube_name('hub', 'b')}",
        node=node2,
        created=EVICTED + timedelta(seconds=2),
        started=EVICTED + timedelta(seconds=16),
        modern=False,
    )
    field = "spec.containers{hub}"
    timeout = "context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
    pulled = f'Container image "{HUB_IMAGE}" already present on machine'
    later = timedelta(seconds=31)
    # (pod or node, reason, message, type, count, first, last, component, container event)
    # fmt: off
    table: list[tuple[Obj, str, str, str, int, datetime, datetime | None, str, bool]] = [
        (old, "Unhealthy", f'Liveness probe failed: Get "{url}": {timeout}', "Warning", 30,
         KILLED - timedelta(seconds=290), KILLED, "kubelet", True),
        (old, "Unhealthy", f'Readiness probe failed: Get "{url}": {timeout}', "Warning", 147,
         KILLED - timedelta(seconds=296), KILLED, "kubelet", True),
        (old, "Killing", "Container hub failed liveness probe, will be restarted", "Normal", 1,
         KILLED, None, "kubelet", True),
        (old, "Pulled", pulled, "Normal", 1, KILLED + later, None, "kubelet", True),
        (old, "Created", "Created container hub", "Normal", 1, KILLED + later, None, "kubelet",
         True),
        (old, "Started", "Started container hub", "Normal", 1, KILLED + later, None, "kubelet",
         True),
        (node2, "NodeHasInsufficientMemory", f"Node {host} status is now: "
         "NodeHasInsufficientMemory", "Normal", 1, EVICTED - timedelta(seconds=2), None,
         "kubelet", False),
        (node2, "EvictionThresholdMet", "Attempting to reclaim memory", "Warning", 1,
         EVICTED - timedelta(seconds=2), None, "kubelet", False),
        (old, "Evicted", hub.EVICTION, "Warning", 1, EVICTED, None, "kubelet", False),
        (old, "Killing", "Stopping container hub", "Normal", 1, EVICTED, None, "kubelet", True),
        (rs, "SuccessfulCreate", f"Created pod: {new['metadata']['name']}", "Normal", 1,
         EVICTED + timedelta(seconds=2), None, "replicaset-controller", False),
        (new, "Scheduled", f"Successfully assigned prod/{new['metadata']['name']} to {host}",
         "Normal", 1, EVICTED + timedelta(seconds=3), None, "default-scheduler", False),
        (new, "Pulled", pulled, "Normal", 1, EVICTED + timedelta(seconds=15), None, "kubelet",
         True),
        (new, "Created", "Created container hub", "Normal", 1, EVICTED + timedelta(seconds=15),
         None, "kubelet", True),
        (new, "Started", "Started container hub", "Normal", 1, EVICTED + timedelta(seconds=16),
         None, "kubelet", True),
    ]
    # fmt: on
    events = [
        lifelike.emit(
            about,
            reason,
            message,
            type=kind,
            count=count,
            first=first,
            last=last,
            component=component,
            host=host if component == "kubelet" else None,
            field_path=field if in_container else None,
        )
        for about, reason, message, kind, count, first, last, component, in_container in table
    ]
    return [deployment, rs], [old, new], events


def _prometheus(node2: Obj) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """Prometheus: 20Gi request, 22Gi limit, OOM-killed once at 17:31 and running since."""
    selector = {"app": "prometheus", "component": "server", "release": "support"}
    server = _apps.container(
        "prometheus-server",
        "quay.io/prometheus/prometheus:v2.36.2",
        requests={"cpu": "1", "memory": "20Gi"},
        limits={"memory": "22Gi"},
        ports=[("web", 9090)],
        liveness=_apps.http_probe("/-/healthy", 9090, period=15, timeout=10, delay=30),
        readiness=_apps.http_probe("/-/ready", 9090, period=5, timeout=4, delay=30),
    )
    reload = _apps.container(
        "prometheus-server-configmap-reload", "jimmidyson/configmap-reload:v0.5.0"
    )
    deployment, rs = _apps.deploy(
        "support-prometheus-server",
        namespace="support",
        selector=selector,
        labels={"chart": "prometheus-15.10.1", "heritage": "Helm"},
        created=SINCE,
        rolled=SINCE + timedelta(days=9),
        recreate=True,
        containers=[reload, server],
        pod_spec={**_CORE, "serviceAccountName": "support-prometheus-server"},
    )
    up = SINCE + timedelta(days=9, seconds=20)
    pod = lifelike.controlled_pod(
        rs,
        f"{rs['metadata']['name']}-{lifelike.kube_name('prom')}",
        node=node2,
        created=up - timedelta(seconds=9),
        started=up,
        modern=False,
        restarts={"prometheus-server": 1},
        last_states={
            "prometheus-server": lifelike.terminated(
                reason="OOMKilled",
                exit_code=137,
                started=up,
                finished=OOM,
                container_id="containerd://" + "3c" * 32,
            )
        },
        states={
            "prometheus-server": {
                "running": {"startedAt": bodies.stamp(OOM + timedelta(seconds=2))}
            }
        },
    )
    kill = lifelike.emit(
        node2,
        "OOMKilling",
        "Memory cgroup out of memory: Killed process 2481766 (prometheus) "
        "total-vm:25931764kB, anon-rss:23017120kB, file-rss:0kB, shmem-rss:0kB, UID:65534 "
        "pgtables:46756kB oom_score_adj:216",
        type="Warning",
        first=OOM,
        component="kernel-monitor",
        host=node2["metadata"]["name"],
    )
    return [deployment, rs], [pod], [kill]


def core_workloads(core: list[Obj]) -> tuple[list[Obj], list[Obj], list[Obj]]:
    """(workloads, pods, events) of the core pool. Node 2 holds Prometheus, the hub and
    kube-state-metrics: 93.0% of its allocatable memory requested, 124.0% in limits."""
    objects, pods, events = [], [], []
    for part in (_hub(core[1]), _prometheus(core[1])):
        objects.extend(part[0])
        pods.extend(part[1])
        events.extend(part[2])
    for i, (app, where) in enumerate(((_KUBE_DNS, (0, 2)), *_APPS)):
        body, rs, placed = _apps.rollout(
            app,
            nodes=[core[n] for n in where],
            created=SINCE,
            rolled=SINCE + timedelta(days=2, minutes=i),
            modern=False,
            containers=_kube_dns() if app is _KUBE_DNS else None,
        )
        objects.extend([body, rs])
        pods.extend(placed)
    return objects, pods, events
