"""Object factories for tests: the package's own builders under a short name, and ``deployed``,
the Deployment -> ReplicaSet -> Pod chain most check tests start from."""

from typing import Any

from kubemedic.testing.bodies import (
    container,
    deployment,
    event,
    managed_entry,
    node,
    node_lease,
    node_metrics,
    pod,
    pod_metrics,
    priority_class,
    replicaset,
    stamp,
    uid_for,
)

__all__ = [
    "container",
    "deployed",
    "deployment",
    "event",
    "managed_entry",
    "node",
    "node_lease",
    "node_metrics",
    "pod",
    "pod_metrics",
    "priority_class",
    "replicaset",
    "stamp",
    "uid_for",
]


def deployed(
    name: str,
    *,
    namespace: str,
    node_name: str,
    requests: dict[str, str],
    limits: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """``[deployment, replicaset, pod]``: a one-container Deployment ``name``, its ReplicaSet
    (pod-template-hash ``5d8f7c9b4``) and one Running pod of it, ``<name>-5d8f7c9b4-x7k2p``,
    bound to ``node_name``; ``labels`` go on the pod only."""
    app = deployment(
        name, namespace=namespace, containers=[container(name, requests=requests, limits=limits)]
    )
    rs = replicaset(app)
    running = pod(
        f"{name}-5d8f7c9b4-x7k2p",
        namespace=namespace,
        node_name=node_name,
        owner=rs,
        labels=labels,
        containers=[container(name, requests=requests, limits=limits)],
    )
    return [app, rs, running]
