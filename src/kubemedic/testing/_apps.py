"""Deployments with their ReplicaSets and statuses, as the deployment controller leaves them."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kubemedic.model.quantities import parse_quantity
from kubemedic.testing import bodies, lifelike

Obj = dict[str, Any]


def container(
    name: str,
    image: str,
    *,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    ports: list[tuple[str, int]] | None = None,
    liveness: Obj | None = None,
    readiness: Obj | None = None,
    args: list[str] | None = None,
) -> Obj:
    body = bodies.container(name, image=image, requests=requests, limits=limits, liveness=liveness)
    if readiness:
        body["readinessProbe"] = readiness
    if ports:
        body["ports"] = [
            {"containerPort": port, "name": port_name, "protocol": "TCP"}
            for port_name, port in ports
        ]
    if args:
        body["args"] = list(args)
    return body


def http_probe(
    path: str,
    port: str | int,
    *,
    period: int = 10,
    failures: int = 3,
    timeout: int = 1,
    delay: int = 0,
) -> Obj:
    return {
        "failureThreshold": failures,
        "httpGet": {"path": path, "port": port, "scheme": "HTTP"},
        "initialDelaySeconds": delay,
        "periodSeconds": period,
        "successThreshold": 1,
        "timeoutSeconds": timeout,
    }


def deploy(
    name: str,
    *,
    namespace: str,
    containers: list[Obj],
    selector: dict[str, str],
    created: datetime,
    rolled: datetime,
    replicas: int = 1,
    ready: int | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    pod_spec: Obj | None = None,
    revision: int = 1,
    recreate: bool = False,
    managed: list[Obj] | None = None,
) -> tuple[Obj, Obj]:
    """A Deployment and its current ReplicaSet (created at ``rolled``, revision ``revision``).

    Statuses say ``ready`` of ``replicas`` pods are available (all by default).
    """
    body = bodies.deployment(
        name,
        namespace=namespace,
        replicas=replicas,
        containers=containers,
        annotations=annotations,
        managed=managed,
        created=created,
    )
    lifelike.relabel(body, selector, extra=labels)
    body["metadata"]["generation"] = revision
    body["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = str(
        revision
    )
    spec = body["spec"]
    spec["template"]["spec"].update(copy.deepcopy(pod_spec or {}))
    spec["template"]["spec"].setdefault("dnsPolicy", "ClusterFirst")
    spec["template"]["spec"].setdefault("securityContext", {})
    spec["template"]["spec"].setdefault("terminationGracePeriodSeconds", 30)
    spec["progressDeadlineSeconds"] = 600
    spec["revisionHistoryLimit"] = 10
    spec["strategy"] = (
        {"type": "Recreate"}
        if recreate
        else {
            "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
            "type": "RollingUpdate",
        }
    )
    pod_hash = lifelike.pod_template_hash(namespace, name, str(revision))
    rs = bodies.replicaset(body, pod_hash=pod_hash, created=rolled)
    rs["metadata"]["labels"] = {**selector, "pod-template-hash": pod_hash}
    rs["spec"]["selector"] = {"matchLabels": {**selector, "pod-template-hash": pod_hash}}
    rs["metadata"]["generation"] = 1
    set_status(
        body,
        rs,
        replicas=replicas,
        ready=replicas if ready is None else ready,
        revision=revision,
        rolled=rolled,
    )
    return body, rs


def set_status(
    deployment: Obj,
    rs: Obj,
    *,
    replicas: int,
    ready: int,
    revision: int,
    rolled: datetime,
    active: int | None = None,
) -> None:
    """Fill both statuses; ``active`` is the ReplicaSet's non-terminal pods (default ``ready``)."""
    surge = 0 if deployment["spec"]["strategy"]["type"] == "Recreate" else -(-replicas // 4)
    rs["metadata"]["annotations"] = {
        "deployment.kubernetes.io/desired-replicas": str(replicas),
        "deployment.kubernetes.io/max-replicas": str(replicas + surge),
        "deployment.kubernetes.io/revision": str(revision),
    }
    rs["metadata"]["ownerReferences"] = [lifelike.owner_reference(deployment)]
    count = ready if active is None else active
    rs["status"] = {
        "availableReplicas": ready,
        "fullyLabeledReplicas": count,
        "observedGeneration": rs["metadata"]["generation"],
        "readyReplicas": ready,
        "replicas": count,
    }
    if not ready:
        for key in ("availableReplicas", "readyReplicas"):
            del rs["status"][key]
    since = bodies.stamp(rolled)
    name = rs["metadata"]["name"]
    available = ready >= replicas - (replicas // 4 if surge else 0) and ready > 0
    conditions = [
        {
            "lastTransitionTime": since,
            "lastUpdateTime": since,
            "message": "Deployment has minimum availability."
            if available
            else "Deployment does not have minimum availability.",
            "reason": "MinimumReplicasAvailable" if available else "MinimumReplicasUnavailable",
            "status": "True" if available else "False",
            "type": "Available",
        },
        {
            "lastTransitionTime": since,
            "lastUpdateTime": since,
            "message": f'ReplicaSet "{name}" has successfully progressed.'
            if ready >= replicas
            else f'ReplicaSet "{name}" is progressing.',
            "reason": "NewReplicaSetAvailable" if ready >= replicas else "ReplicaSetUpdated",
            "status": "True",
            "type": "Progressing",
        },
    ]
    status: Obj = {
        "availableReplicas": ready,
        "conditions": conditions,
        "observedGeneration": deployment["metadata"]["generation"],
        "readyReplicas": ready,
        "replicas": count,
        "updatedReplicas": count,
    }
    if count > ready:
        status["unavailableReplicas"] = replicas - ready
    if not ready:
        for key in ("availableReplicas", "readyReplicas"):
            del status[key]
    deployment["status"] = status


def _share(seed: bytes, low: int, high: int) -> int:
    """A stable percentage in ``[low, high)``."""
    return low + seed[0] % (high - low)


def pod_metrics(pod: Obj, *, at: datetime, usage: dict[str, dict[str, str]] | None = None) -> Obj:
    """metrics.k8s.io PodMetrics for a running pod, as metrics-server reports it (CPU in
    nanocores, memory working set in Ki). Containers not in ``usage`` use a stable share of
    their request: 35-75% of memory, 5-50% of CPU (small fixed amounts when nothing is asked)."""
    given = usage or {}
    values: dict[str, dict[str, str]] = {}
    for c in pod["spec"]["containers"]:
        if c["name"] in given:
            values[c["name"]] = dict(given[c["name"]])
            continue
        seed = lifelike.digest("usage", pod["metadata"]["name"], c["name"])
        requests = c.get("resources", {}).get("requests", {})
        memory = requests.get("memory")
        cpu = requests.get("cpu")
        memory_bytes = (
            int(parse_quantity(memory).value) * _share(seed, 35, 75) // 100
            if memory
            else (8 + seed[1] % 56) * 1024 * 1024
        )
        nanocores = (
            int(parse_quantity(cpu).value * 10**9) * _share(seed[2:], 5, 50) // 100
            if cpu
            else (1 + seed[3] % 9) * 10**6
        )
        values[c["name"]] = {
            "cpu": f"{nanocores + seed[4]}n",
            "memory": f"{memory_bytes // 1024}Ki",
        }
    return bodies.pod_metrics(pod, values, at=at)


def node_metrics(name: str, pods: list[Obj], *, at: datetime, system: int = 1200) -> Obj:
    """NodeMetrics: the node's pods' usage plus ``system`` MiB and a little CPU for the OS."""
    memory = system * 1024 * 1024
    cpu = 60 * 10**6
    for metrics in pods:
        for c in metrics["containers"]:
            memory += int(parse_quantity(c["usage"]["memory"]).value)
            cpu += int(parse_quantity(c["usage"]["cpu"]).value * 10**9)
    return bodies.node_metrics(name, cpu=f"{cpu}n", memory=f"{memory // 1024}Ki", at=at)


@dataclass(frozen=True, slots=True)
class App:
    """One Deployment in a scenario's table: its single container and where it runs."""

    name: str
    namespace: str
    image: str
    requests: Mapping[str, str]
    limits: Mapping[str, str] | None = None
    selector: Mapping[str, str] | None = None
    """Defaults to ``app.kubernetes.io/name: <name>``."""
    labels: Mapping[str, str] | None = None
    spec: Mapping[str, Any] | None = None
    container: str | None = None
    """Defaults to the name."""
    ports: tuple[tuple[str, int], ...] = ()

    def containers(self) -> list[Obj]:
        return [
            container(
                self.container or self.name,
                self.image,
                requests=dict(self.requests),
                limits=dict(self.limits) if self.limits else None,
                ports=list(self.ports) or None,
            )
        ]


def rollout(
    app: App,
    *,
    nodes: list[Obj],
    created: datetime,
    rolled: datetime,
    modern: bool = True,
    containers: list[Obj] | None = None,
    annotations: dict[str, str] | None = None,
    managed: list[Obj] | None = None,
    recreate: bool = False,
) -> tuple[Obj, Obj, list[Obj]]:
    """``deploy`` plus one running pod per entry of ``nodes`` (a node may repeat)."""
    deployment, rs = deploy(
        app.name,
        namespace=app.namespace,
        containers=containers or app.containers(),
        selector=dict(app.selector or {"app.kubernetes.io/name": app.name}),
        labels=dict(app.labels) if app.labels else None,
        created=created,
        rolled=rolled,
        replicas=len(nodes),
        annotations=annotations,
        pod_spec=dict(app.spec) if app.spec else None,
        managed=managed,
        recreate=recreate,
    )
    pods = [
        lifelike.controlled_pod(
            rs,
            f"{rs['metadata']['name']}-{lifelike.kube_name(app.namespace, app.name, str(i))}",
            node=node,
            created=rolled + timedelta(seconds=2 + 5 * i),
            modern=modern,
        )
        for i, node in enumerate(nodes)
    ]
    return deployment, rs, pods
