"""Minimal Kubernetes object bodies (nodes, pods, workloads, events, metrics), shaped like what
the API server returns.

Used by kubemedic's tests, its bundled incident snapshots and its benchmarks, and offered to
users who test their own policies. Each builder returns a fresh ``dict`` (JSON as the API server
serialises it: camelCase, RFC 3339 times, quantities as strings) and takes keyword arguments for
what a test cares about; everything else gets realistic defaults (uids, resourceVersions,
``managedFields`` of the controller that would have written the object).
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.model.objects import format_micro_time, format_time

__all__ = [
    "container",
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

Obj = dict[str, Any]

BASE_TIME = datetime(2023, 2, 1, 19, 0, 0, tzinfo=UTC)


def stamp(when: datetime | timedelta | None = None) -> str:
    """RFC 3339 for ``when`` (a datetime, or an offset from ``BASE_TIME``)."""
    if when is None:
        when = BASE_TIME
    elif isinstance(when, timedelta):
        when = BASE_TIME + when
    return format_time(when)


def uid_for(*parts: str) -> str:
    """A deterministic UUID-shaped uid for an object identity."""
    digest = hashlib.sha256("/".join(parts).encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _meta(
    *,
    kind: str,
    name: str,
    namespace: str | None,
    created: datetime | timedelta | None,
    labels: dict[str, str] | None,
    annotations: dict[str, str] | None = None,
    owner: Obj | None = None,
    managed: list[Obj] | None = None,
) -> Obj:
    meta: Obj = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["uid"] = uid_for(kind, namespace or "", name)
    meta["resourceVersion"] = str(int(uid_for(kind, name)[:6], 16))
    meta["creationTimestamp"] = stamp(created)
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    if owner is not None:
        meta["ownerReferences"] = [
            {
                "apiVersion": owner["apiVersion"],
                "kind": owner["kind"],
                "name": owner["metadata"]["name"],
                "uid": owner["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
    if managed:
        meta["managedFields"] = managed
    return meta


def managed_entry(
    *,
    manager: str,
    fields: Obj,
    operation: str = "Update",
    time: datetime | timedelta | None = None,
    api_version: str = "apps/v1",
    subresource: str | None = None,
) -> Obj:
    """One ``metadata.managedFields`` entry (FieldsV1)."""
    entry: Obj = {
        "manager": manager,
        "operation": operation,
        "apiVersion": api_version,
        "time": stamp(time),
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def container(
    name: str = "main",
    *,
    image: str | None = None,
    requests: dict[str, str] | None = None,
    limits: dict[str, str] | None = None,
    restart_policy: str | None = None,
    liveness: Obj | None = None,
) -> Obj:
    body: Obj = {"name": name, "image": image or f"registry.example/{name}:1.0"}
    resources: Obj = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    body["resources"] = resources
    if restart_policy:
        body["restartPolicy"] = restart_policy
    if liveness:
        body["livenessProbe"] = liveness
    body["terminationMessagePath"] = "/dev/termination-log"
    body["terminationMessagePolicy"] = "File"
    body["imagePullPolicy"] = "IfNotPresent"
    return body


def node(
    name: str,
    *,
    cpu: str = "4",
    memory: str = "16Gi",
    pods: str = "110",
    allocatable_cpu: str | None = None,
    allocatable_memory: str | None = None,
    labels: dict[str, str] | None = None,
    ready: str = "True",
    ready_reason: str = "KubeletReady",
    ready_message: str = "kubelet is posting ready status",
    heartbeat: datetime | timedelta | None = None,
    transition: datetime | timedelta | None = None,
    created: datetime | timedelta | None = None,
    taints: list[Obj] | None = None,
    unschedulable: bool = False,
    boot_id: str | None = None,
) -> Obj:
    node_labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
    }
    node_labels.update(labels or {})
    spec: Obj = {"providerID": f"openstack:///{uid_for('vm', name)}"}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    beat = stamp(heartbeat)
    conditions = [
        {
            "type": kind,
            "status": "False",
            "reason": f"KubeletHas{reason}",
            "message": message,
            "lastHeartbeatTime": beat,
            "lastTransitionTime": stamp(created),
        }
        for kind, reason, message in (
            ("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
            ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"),
        )
    ]
    conditions.append(
        {
            "type": "Ready",
            "status": ready,
            "reason": ready_reason,
            "message": ready_message,
            "lastHeartbeatTime": beat,
            "lastTransitionTime": stamp(transition if transition is not None else created),
        }
    )
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": _meta(
            kind="Node", name=name, namespace=None, created=created, labels=node_labels
        ),
        "spec": spec,
        "status": {
            "capacity": {"cpu": cpu, "memory": memory, "pods": pods},
            "allocatable": {
                "cpu": allocatable_cpu or cpu,
                "memory": allocatable_memory or memory,
                "pods": pods,
            },
            "conditions": conditions,
            "nodeInfo": {
                "bootID": boot_id or uid_for("boot", name),
                "kubeletVersion": "v1.32.0",
                "containerRuntimeVersion": "containerd://1.7.24",
                "osImage": "Ubuntu 22.04.4 LTS",
                "kernelVersion": "5.15.0-119-generic",
                "architecture": "amd64",
                "operatingSystem": "linux",
            },
        },
    }


def node_lease(
    name: str,
    *,
    renewed: datetime | timedelta | None = None,
    holder: str | None = None,
    namespace: str = "kube-node-lease",
) -> Obj:
    """The kubelet's Lease of node ``name`` (``renewTime`` in microseconds, 40s, held and owned
    by the node); ``holder`` overrides ``holderIdentity``."""
    if renewed is None:
        renewed = BASE_TIME
    elif isinstance(renewed, timedelta):
        renewed = BASE_TIME + renewed
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid_for("Lease", namespace, name),
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid_for("Node", "", name)}
            ],
        },
        "spec": {
            "holderIdentity": name if holder is None else holder,
            "leaseDurationSeconds": 40,
            "renewTime": format_micro_time(renewed),
        },
    }


def deployment(
    name: str,
    *,
    namespace: str = "default",
    replicas: int = 1,
    containers: list[Obj] | None = None,
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    managed: list[Obj] | None = None,
    created: datetime | timedelta | None = None,
    priority_class: str | None = None,
) -> Obj:
    selector = {"app.kubernetes.io/name": name}
    template_spec: Obj = {"containers": containers or [container(name)]}
    if node_name:
        template_spec["nodeName"] = node_name
    if priority_class:
        template_spec["priorityClassName"] = priority_class
    template_spec.update({"restartPolicy": "Always", "schedulerName": "default-scheduler"})
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(
            kind="Deployment",
            name=name,
            namespace=namespace,
            created=created,
            labels={**selector, **(labels or {})},
            annotations=annotations,
            managed=managed,
        ),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": dict(selector)}, "spec": template_spec},
        },
        "status": {"replicas": replicas, "observedGeneration": 1},
    }


def replicaset(
    owner: Obj,
    *,
    pod_hash: str = "5d8f7c9b4",
    replicas: int | None = None,
    created: datetime | timedelta | None = None,
) -> Obj:
    """The ReplicaSet a Deployment controller would create for ``owner``'s template."""
    meta = owner["metadata"]
    name = f"{meta['name']}-{pod_hash}"
    template = dict(owner["spec"]["template"])
    template_labels = {**template["metadata"]["labels"], "pod-template-hash": pod_hash}
    template = {"metadata": {"labels": template_labels}, "spec": template["spec"]}
    count = owner["spec"]["replicas"] if replicas is None else replicas
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": _meta(
            kind="ReplicaSet",
            name=name,
            namespace=meta.get("namespace"),
            created=created,
            labels=template_labels,
            owner=owner,
        ),
        "spec": {
            "replicas": count,
            "selector": {"matchLabels": template_labels},
            "template": template,
        },
        "status": {"replicas": count},
    }


def pod(
    name: str,
    *,
    namespace: str = "default",
    node_name: str | None = None,
    containers: list[Obj] | None = None,
    init_containers: list[Obj] | None = None,
    owner: Obj | None = None,
    labels: dict[str, str] | None = None,
    phase: str = "Running",
    reason: str | None = None,
    message: str | None = None,
    priority: int | None = None,
    priority_class: str | None = None,
    created: datetime | timedelta | None = None,
    container_statuses: list[Obj] | None = None,
    overhead: dict[str, str] | None = None,
) -> Obj:
    spec: Obj = {"containers": containers or [container("main")]}
    if init_containers:
        spec["initContainers"] = init_containers
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    spec["priority"] = priority if priority is not None else 0
    if overhead:
        spec["overhead"] = dict(overhead)
    spec.update({"restartPolicy": "Always", "schedulerName": "default-scheduler"})
    pod_labels = dict(labels or {})
    if owner is not None:
        pod_labels = {**owner["spec"]["template"]["metadata"].get("labels", {}), **pod_labels}
    status: Obj = {"phase": phase}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    if phase == "Running":
        status["startTime"] = stamp(created)
        status["conditions"] = [
            {"type": "Ready", "status": "True", "lastTransitionTime": stamp(created)}
        ]
        status["containerStatuses"] = container_statuses or [
            {
                "name": c["name"],
                "ready": True,
                "restartCount": 0,
                "image": c["image"],
                "state": {"running": {"startedAt": stamp(created)}},
            }
            for c in spec["containers"]
        ]
    elif container_statuses:
        status["containerStatuses"] = container_statuses
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": _meta(
            kind="Pod",
            name=name,
            namespace=namespace,
            created=created,
            labels=pod_labels,
            owner=owner,
        ),
        "spec": spec,
        "status": status,
    }


def event(
    *,
    involved: Obj,
    reason: str,
    message: str,
    type: str = "Warning",
    count: int = 1,
    first: datetime | timedelta | None = None,
    last: datetime | timedelta | None = None,
    component: str = "kubelet",
    host: str | None = None,
    name_suffix: str | None = None,
    field_path: str | None = None,
    annotations: dict[str, str] | None = None,
) -> Obj:
    """A ``core/v1`` Event about ``involved`` (any object body); ``field_path`` names a container
    as the kubelet does (``spec.containers{name}``)."""
    meta = involved["metadata"]
    suffix = name_suffix or uid_for(reason, message, stamp(first))[:16].replace("-", "")
    name = f"{meta['name']}.{suffix}"
    namespace = meta.get("namespace") or "default"
    source: Obj = {"component": component}
    if host:
        source["host"] = host
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": _meta(
            kind="Event",
            name=name,
            namespace=namespace,
            created=first,
            labels=None,
            annotations=annotations,
        ),
        "involvedObject": {
            "apiVersion": involved["apiVersion"],
            "kind": involved["kind"],
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "uid": meta["uid"],
            **({"fieldPath": field_path} if field_path else {}),
        },
        "reason": reason,
        "message": message,
        "type": type,
        "count": count,
        "firstTimestamp": stamp(first),
        "lastTimestamp": stamp(last if last is not None else first),
        "source": source,
        "reportingComponent": component,
        "reportingInstance": host or "",
    }


def priority_class(name: str, value: int, *, global_default: bool = False) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": _meta(
            kind="PriorityClass", name=name, namespace=None, created=None, labels=None
        ),
        "value": value,
        "globalDefault": global_default,
        "preemptionPolicy": "PreemptLowerPriority",
    }


def pod_metrics(
    target: Obj, usage: dict[str, dict[str, str]], *, at: datetime | timedelta | None = None
) -> Obj:
    """``metrics.k8s.io/v1beta1`` PodMetrics for ``target``; ``usage``: container -> resources."""
    meta = target["metadata"]
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "PodMetrics",
        "metadata": {
            "name": meta["name"],
            "namespace": meta.get("namespace"),
            "creationTimestamp": stamp(at),
        },
        "timestamp": stamp(at),
        "window": "30s",
        "containers": [{"name": name, "usage": dict(values)} for name, values in usage.items()],
    }


def node_metrics(
    name: str, *, cpu: str, memory: str, at: datetime | timedelta | None = None
) -> Obj:
    return {
        "apiVersion": "metrics.k8s.io/v1beta1",
        "kind": "NodeMetrics",
        "metadata": {"name": name, "creationTimestamp": stamp(at)},
        "timestamp": stamp(at),
        "window": "30s",
        "usage": {"cpu": cpu, "memory": memory},
    }
