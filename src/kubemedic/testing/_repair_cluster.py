"""Incident 2: worker nodes that need repairing (snapshot at 2021-11-04 06:41:17 UTC).

* ``md-0`` worker 3 stopped posting status 12 minutes ago (kubelet hung or the machine cut
  off): ``Ready=Unknown``/``NodeStatusUnknown``, ``unreachable`` taints. Five minutes later the
  taint manager marked its Deployment and StatefulSet pods for deletion; they stay Terminating
  because no kubelet confirms, replacements run elsewhere, and ``redis-node-1`` has none: a
  StatefulSet waits for the old pod to be gone.
* ``md-0`` worker 6's containerd died four and a half minutes ago: the kubelet still posts,
  ``Ready=False`` with ``container runtime is down`` and PLEG unhealthy, ``not-ready`` taints;
  its pods have not been evicted yet (300 s toleration).

metrics-server cannot scrape either node, so neither they nor their pods have metrics.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.testing import _apps, bodies, lifelike
from kubemedic.testing import _repair_nodes as rn

Obj = dict[str, Any]

SINCE = datetime(2021, 10, 18, 2, 30, 12, tzinfo=UTC)
ROLLED = datetime(2021, 11, 1, 10, 2, 44, tzinfo=UTC)
EVICT = rn.UNREACHABLE_SINCE + timedelta(seconds=300)


def _daemonsets() -> list[Obj]:
    node_critical = {
        "priorityClassName": "system-node-critical",
        "hostNetwork": True,
        "tolerations": [{"operator": "Exists"}],
    }
    specs = [
        (
            "calico-node",
            "kube-system",
            {"k8s-app": "calico-node"},
            _apps.container(
                "calico-node", "docker.io/calico/node:v3.20.2", requests={"cpu": "250m"}
            ),
            node_critical,
        ),
        (
            "kube-proxy",
            "kube-system",
            {"k8s-app": "kube-proxy"},
            _apps.container("kube-proxy", f"k8s.gcr.io/kube-proxy:{rn.VERSION}"),
            node_critical,
        ),
        (
            "csi-cinder-nodeplugin",
            "kube-system",
            {"app": "csi-cinder-nodeplugin"},
            _apps.container(
                "cinder-csi-plugin",
                "docker.io/k8scloudprovider/cinder-csi-plugin:v1.21.0",
                requests={"cpu": "10m", "memory": "32Mi"},
            ),
            node_critical,
        ),
        (
            "prometheus-node-exporter",
            "monitoring",
            {
                "app.kubernetes.io/instance": "kube-prometheus-stack",
                "app.kubernetes.io/name": "prometheus-node-exporter",
            },
            _apps.container(
                "node-exporter",
                "quay.io/prometheus/node-exporter:v1.2.2",
                requests={"cpu": "50m", "memory": "32Mi"},
                limits={"memory": "64Mi"},
            ),
            {"hostNetwork": True, "tolerations": [{"operator": "Exists"}]},
        ),
    ]
    return [
        lifelike.daemonset(
            name,
            namespace=ns,
            containers=[c],
            created=SINCE,
            labels=labels,
            pod_spec=spec,
            scheduled=11,
            ready=9,
        )
        for name, ns, labels, c, spec in specs
    ]


def _static_pods(plane: Obj) -> list[Obj]:
    name = plane["metadata"]["name"]
    pods = []
    for component, cpu in (
        ("etcd", "100m"),
        ("kube-apiserver", "250m"),
        ("kube-controller-manager", "200m"),
        ("kube-scheduler", "100m"),
    ):
        image = (
            f"k8s.gcr.io/{component}:{rn.VERSION}"
            if component != "etcd"
            else "k8s.gcr.io/etcd:3.4.13-0"
        )
        requests = {"cpu": cpu, **({"memory": "100Mi"} if component == "etcd" else {})}
        pod = lifelike.controlled_pod(
            None,
            f"{component}-{name}",
            namespace="kube-system",
            node=plane,
            created=lifelike.parse_stamp(plane["metadata"]["creationTimestamp"])
            + timedelta(seconds=20),
            labels={"component": component, "tier": "control-plane"},
            extra_spec={
                "containers": [_apps.container(component, image, requests=requests)],
                "hostNetwork": True,
                "priorityClassName": "system-node-critical",
                "tolerations": [{"effect": "NoExecute", "operator": "Exists"}],
            },
        )
        pod["metadata"]["ownerReferences"] = [
            {
                "apiVersion": "v1",
                "controller": True,
                "kind": "Node",
                "name": name,
                "uid": plane["metadata"]["uid"],
            }
        ]
        pod["metadata"]["annotations"] = {"kubernetes.io/config.source": "file"}
        pods.append(pod)
    return pods


def _not_ready(pod: Obj, since: datetime) -> None:
    """What the node lifecycle controller does to pods on a node that is not Ready: it sets
    their Ready condition False and leaves everything else (container statuses included) as the
    kubelet last reported it."""
    for condition in pod["status"].get("conditions", []):
        if condition["type"] == "Ready":
            condition.update({"status": "False", "lastTransitionTime": bodies.stamp(since)})


_HARBOR = "harbor.ake.internal/ads"
_SYSTEM = {"priorityClassName": "system-cluster-critical"}
# (app, indexes of the workers its pods ran on; worker 3 is the one that stopped posting)
# fmt: off
_APPS: tuple[tuple[_apps.App, tuple[int, ...]], ...] = (
    (_apps.App("ad-delivery-api", "prod", f"{_HARBOR}/ad-delivery-api:2.31.0",
               {"cpu": "500m", "memory": "1Gi"}, {"memory": "1Gi"}, selector={"app":
               "ad-delivery-api"}), (0, 1, 2, 3, 5, 6)),
    (_apps.App("ad-report-worker", "prod", f"{_HARBOR}/ad-report-worker:2.31.0",
               {"cpu": "1", "memory": "2Gi"}, {"memory": "2Gi"}, selector={"app":
               "ad-report-worker"}), (1, 3, 4, 7)),
    (_apps.App("ingress-nginx-controller", "ingress-nginx",
               "k8s.gcr.io/ingress-nginx/controller:v1.0.4", {"cpu": "500m", "memory": "512Mi"},
               {"memory": "1Gi"}, container="controller",
               selector={"app.kubernetes.io/component": "controller",
                         "app.kubernetes.io/instance": "ingress-nginx",
                         "app.kubernetes.io/name": "ingress-nginx"}), (0, 3, 5)),
    (_apps.App("coredns", "kube-system", "k8s.gcr.io/coredns/coredns:v1.8.0",
               {"cpu": "100m", "memory": "70Mi"}, {"memory": "170Mi"},
               selector={"k8s-app": "kube-dns"},
               spec={**_SYSTEM, "serviceAccountName": "coredns"}), (2, 7)),
    (_apps.App("calico-kube-controllers", "kube-system",
               "docker.io/calico/kube-controllers:v3.20.2", {"cpu": "50m", "memory": "64Mi"},
               selector={"k8s-app": "calico-kube-controllers"}, spec=_SYSTEM), (1,)),
    (_apps.App("csi-cinder-controllerplugin", "kube-system",
               "docker.io/k8scloudprovider/cinder-csi-plugin:v1.21.0",
               {"cpu": "20m", "memory": "64Mi"}, container="cinder-csi-plugin",
               selector={"app": "csi-cinder-controllerplugin"}), (2,)),
)
# fmt: on


def _replaced(
    app: _apps.App, where: list[Obj], *, dead: Obj
) -> tuple[Obj, Obj, list[Obj], list[Obj]]:
    """A Deployment whose pods on ``dead`` the taint manager marked for deletion five minutes
    after the node became unreachable: they stay Terminating beside their replacements."""
    deployment, rs, pods = _apps.rollout(app, nodes=where, created=SINCE, rolled=ROLLED,
                                         modern=False)  # fmt: skip
    events: list[Obj] = []
    container = app.container or app.name
    for i, old in enumerate(list(pods)):
        if old["spec"]["nodeName"] != dead["metadata"]["name"]:
            continue
        lifelike.mark_deleted(old, EVICT)
        _not_ready(old, rn.UNREACHABLE_SINCE)
        host = where[(i + 1) % len(where)]
        name = (
            f"{rs['metadata']['name']}-{lifelike.kube_name(app.namespace, app.name, str(i), 'new')}"
        )
        new = lifelike.controlled_pod(rs, name, node=host, created=EVICT, modern=False)
        pods.append(new)
        on = host["metadata"]["name"]
        field = f"spec.containers{{{container}}}"
        emit = lifelike.emit
        events += [
            emit(old, "NodeNotReady", "Node is not ready", type="Warning",
                    first=rn.UNREACHABLE_SINCE + timedelta(seconds=1), component="node-controller"),
            emit(old, "TaintManagerEviction", f"Marking for deletion Pod {app.namespace}/"
                    f"{old['metadata']['name']}", first=EVICT, component="taint-controller"),
            emit(rs, "SuccessfulCreate", f"Created pod: {name}", first=EVICT,
                    component="replicaset-controller"),
            emit(new, "Scheduled", f"Successfully assigned {app.namespace}/{name} to {on}",
                    first=EVICT, component="default-scheduler"),
            emit(new, "Pulled", f'Container image "{app.image}" already present on machine',
                    first=EVICT + timedelta(seconds=2), host=on, field_path=field),
            emit(new, "Created", f"Created container {container}",
                    first=EVICT + timedelta(seconds=2), host=on, field_path=field),
            emit(new, "Started", f"Started container {container}",
                    first=EVICT + timedelta(seconds=2), host=on, field_path=field),
        ]  # fmt: skip
    return deployment, rs, pods, events


def build() -> list[Obj]:
    planes, workers = rn.nodes()
    dead, sick = workers[3], workers[6]
    nodes = [*planes, *workers]
    objects: list[Obj] = []
    pods: list[Obj] = []
    events: list[Obj] = []
    daemonsets = _daemonsets()
    objects.extend(daemonsets)
    for i, n in enumerate(nodes):
        started = lifelike.parse_stamp(n["metadata"]["creationTimestamp"]) + timedelta(seconds=35)
        for ds in daemonsets:
            pod_name = (
                f"{ds['metadata']['name']}-{lifelike.kube_name(ds['metadata']['name'], str(i))}"
            )
            pods.append(
                lifelike.controlled_pod(
                    ds,
                    pod_name,
                    node=n,
                    created=started,
                    modern=False,
                    labels={
                        "controller-revision-hash": lifelike.pod_template_hash(pod_name),
                        "pod-template-generation": "1",
                    },
                )
            )
    for plane in planes:
        pods.extend(_static_pods(plane))

    for app, where in _APPS:
        body, rs, placed, told = _replaced(app, [workers[w] for w in where], dead=dead)
        objects.extend([body, rs])
        pods.extend(placed)
        events.extend(told)
    redis = lifelike.statefulset(
        "redis-node",
        namespace="prod",
        created=SINCE,
        replicas=3,
        ready=2,
        labels={"app.kubernetes.io/instance": "redis", "app.kubernetes.io/name": "redis"},
        containers=[
            _apps.container(
                "redis",
                "docker.io/bitnami/redis:6.2.6",
                requests={"cpu": "250m", "memory": "1Gi"},
                limits={"memory": "1Gi"},
            )
        ],
    )
    objects.append(redis)
    for ordinal, w in enumerate((2, 3, 7)):
        pod = lifelike.controlled_pod(
            redis,
            f"redis-node-{ordinal}",
            node=workers[w],
            modern=False,
            created=ROLLED + timedelta(minutes=2 * ordinal),
            deleted=EVICT if w == 3 else None,
            labels={
                "controller-revision-hash": redis["status"]["currentRevision"],
                "statefulset.kubernetes.io/pod-name": f"redis-node-{ordinal}",
            },
        )
        if w == 3:
            _not_ready(pod, rn.UNREACHABLE_SINCE)
            events.append(
                lifelike.emit(
                    pod,
                    "TaintManagerEviction",
                    f"Marking for deletion Pod prod/redis-node-{ordinal}",
                    first=EVICT,
                    component="taint-controller",
                )
            )
        pods.append(pod)
    for pod in pods:
        if pod["spec"].get("nodeName") == dead["metadata"]["name"] and not pod["metadata"].get(
            "deletionTimestamp"
        ):
            _not_ready(pod, rn.UNREACHABLE_SINCE)
        if pod["spec"].get("nodeName") == sick["metadata"]["name"]:
            _not_ready(pod, rn.RUNTIME_DOWN_SINCE)
    events.extend(_node_events(dead, sick, pods))
    return [*nodes, *objects, *pods, *events, *_metrics(nodes, pods, skip=(dead, sick))]


def _node_events(dead: Obj, sick: Obj, pods: list[Obj]) -> list[Obj]:
    dead_name, sick_name = dead["metadata"]["name"], sick["metadata"]["name"]
    events = [
        lifelike.emit(
            dead,
            "NodeNotReady",
            f"Node {dead_name} status is now: NodeNotReady",
            first=rn.UNREACHABLE_SINCE,
            component="node-controller",
        ),
        lifelike.emit(
            sick,
            "NodeNotReady",
            f"Node {sick_name} status is now: NodeNotReady",
            first=rn.RUNTIME_DOWN_SINCE,
            host=sick_name,
        ),
        lifelike.emit(
            sick,
            "NodeNotReady",
            f"Node {sick_name} status is now: NodeNotReady",
            first=rn.RUNTIME_DOWN_SINCE + timedelta(seconds=3),
            component="node-controller",
        ),
        lifelike.emit(
            sick,
            "ContainerGCFailed",
            "rpc error: code = Unavailable desc = connection "
            'error: desc = "transport: Error while dialing dial unix '
            '/run/containerd/containerd.sock: connect: connection refused"',
            type="Warning",
            count=4,
            first=rn.RUNTIME_DOWN_SINCE + timedelta(seconds=17),
            last=rn.NOW - timedelta(seconds=46),
            host=sick_name,
        ),
    ]
    for pod in pods:
        on = pod["spec"].get("nodeName")
        if on == sick_name or (
            on == dead_name
            and pod["metadata"].get("ownerReferences", [{}])[0].get("kind") == "DaemonSet"
        ):
            since = rn.RUNTIME_DOWN_SINCE if on == sick_name else rn.UNREACHABLE_SINCE
            events.append(
                lifelike.emit(
                    pod,
                    "NodeNotReady",
                    "Node is not ready",
                    type="Warning",
                    first=since + timedelta(seconds=1),
                    component="node-controller",
                )
            )
    return events


def _metrics(nodes: list[Obj], pods: list[Obj], *, skip: tuple[Obj, ...]) -> list[Obj]:
    at = rn.NOW - timedelta(seconds=14)
    blind = {n["metadata"]["name"] for n in skip}
    out = []
    for n in nodes:
        name = n["metadata"]["name"]
        if name in blind:
            continue
        here = [
            _apps.pod_metrics(p, at=at)
            for p in pods
            if p["spec"].get("nodeName") == name and p["status"]["phase"] == "Running"
        ]
        out.extend(here)
        out.append(_apps.node_metrics(name, here, at=at, system=900))
    return out
