"""Incident 3 (INCIDENTS.md, "the monitoring that evicted the hub") as test data.

The incident's facts that several tests pin, each from its own side, kept in one place: the core
node where ``support-prometheus-server`` (20Gi request, 22Gi limit) runs beside the JupyterHub
hub (10m CPU, 128Mi) and proxy; the kubelet's message when it evicted the hub; and the
``FailedScheduling`` message the Dask workers piled up while 100 nodes came up.
"""

from __future__ import annotations

from typing import Any

from tests.factories import container, deployed, deployment, node, pod, replicaset

CORE_POOL = {"cloud.google.com/gke-nodepool": "core-pool"}
PROMETHEUS_SERVER = "support-prometheus-server"

# Built with the kubelet's own format strings (pkg/kubelet/eviction/helpers.go).
HUB_EVICTION = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 91436Ki. "
    "Container hub was using 318892Ki, request is 128Mi, has larger consumption of memory. "
)

# The scheduler's FitError, as the Dask workers' FailedScheduling events carried it; its reasons
# are sorted as strings, not by count.
FIT_ERROR = (
    "0/126 nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
    "23 Insufficient cpu, 24 Insufficient memory, 6 node(s) had untolerated taint "
    "{node.kubernetes.io/network-unavailable: }, 9 node(s) had untolerated taint "
    "{hub.jupyter.org_dedicated: user}, 96 node(s) had untolerated taint "
    "{node.kubernetes.io/not-ready: }."
)
FIT_ERROR_REASONS = {
    "node(s) didn't match Pod's node affinity/selector": 14,
    "Insufficient cpu": 23,
    "Insufficient memory": 24,
    "node(s) had untolerated taint {node.kubernetes.io/network-unavailable: }": 6,
    "node(s) had untolerated taint {hub.jupyter.org_dedicated: user}": 9,
    "node(s) had untolerated taint {node.kubernetes.io/not-ready: }": 96,
}


def jupyterhub(
    component: str,
    *,
    node_name: str,
    requests: dict[str, str],
    limits: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """``deployed`` zero-to-jupyterhub ``component`` (hub, proxy) in namespace ``jhub``, its pod
    labelled as the chart labels it (``app=jupyterhub``, ``component=<component>``): the labels
    that make it a critical pod."""
    return deployed(
        component,
        namespace="jhub",
        node_name=node_name,
        requests=requests,
        limits=limits,
        labels={"app": "jupyterhub", "component": component},
    )


def prometheus_beside_hub(*, memory: str = "25Gi") -> list[dict[str, Any]]:
    """Node ``core-1`` (4 CPUs, ``memory`` allocatable) in the core pool, with the incident's
    three residents ``deployed`` on it: Prometheus (500m, 20Gi, limit 22Gi), the hub (10m,
    128Mi, limit 1Gi) and the proxy (10m, 64Mi, limit 512Mi). Tests add the node's other
    residents after these."""
    bodies = [node("core-1", cpu="4", memory=memory, labels=CORE_POOL)]
    bodies += deployed(
        PROMETHEUS_SERVER,
        namespace="support",
        node_name="core-1",
        requests={"cpu": "500m", "memory": "20Gi"},
        limits={"memory": "22Gi"},
    )
    bodies += jupyterhub(
        "hub",
        node_name="core-1",
        requests={"cpu": "10m", "memory": "128Mi"},
        limits={"memory": "1Gi"},
    )
    bodies += jupyterhub(
        "proxy",
        node_name="core-1",
        requests={"cpu": "10m", "memory": "64Mi"},
        limits={"memory": "512Mi"},
    )
    return bodies


def prometheus(
    *statuses: dict[str, Any], suffix: str = "q2x7z", **extra: Any
) -> list[dict[str, Any]]:
    """``[deployment, replicaset, pod]`` of the Prometheus server (20Gi, limit 22Gi), its pod
    ``support-prometheus-server-5d8f7c9b4-<suffix>`` on ``core-2`` (the node the hub was
    evicted from); ``statuses`` are its containerStatuses (the builder's running ones when
    none), ``extra`` goes to the pod builder."""
    owner = deployment(
        PROMETHEUS_SERVER,
        namespace="support",
        containers=[
            container(PROMETHEUS_SERVER, requests={"memory": "20Gi"}, limits={"memory": "22Gi"})
        ],
    )
    rs = replicaset(owner)
    body = pod(
        f"{PROMETHEUS_SERVER}-5d8f7c9b4-{suffix}",
        namespace="support",
        node_name="core-2",
        containers=owner["spec"]["template"]["spec"]["containers"],
        owner=rs,
        container_statuses=list(statuses) or None,
        **extra,
    )
    return [owner, rs, body]
