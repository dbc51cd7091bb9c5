"""Nodes as their kubelets register and report them, for generated clusters and scenarios.

:func:`node` builds one Node as the kubelet registered it and last reported it ``Ready``:
labels (``kubernetes.io/hostname``, OS and architecture, plus the caller's), capacity and
allocatable in the kubelet's units (memory in whole KiB, less the default hard eviction
threshold for allocatable) printed as the API server serves quantities (canonical: a kubelet's
``33554432Ki`` is served as ``32Gi``), the pressure conditions and ``Ready``, ``nodeInfo`` with
a boot ID, addresses, and the ``managedFields`` of the kubelet and kube-controller-manager
(``podCIDR``, the TTL annotation). Names, uids and machine IDs are derived from the node name,
so the same name always gives the same node.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from kubemedic.model.quantities import parse_quantity
from kubemedic.sim.machinery import managers
from kubemedic.sim.machinery.clock import rfc3339

__all__ = ["KUBELET_VERSION", "node", "update_entry"]

Obj = dict[str, Any]

KUBELET_VERSION = "v1.32.0"
_CONDITIONS = (
    ("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
_EPHEMERAL_KI = 101430960


def _ki(quantity: object, *, less_ki: int = 0) -> str:
    """Whole KiB as the kubelet reports memory (``33554432Ki``), printed as the API server
    serves it (canonical: ``32Gi``)."""
    return parse_quantity(f"{int(parse_quantity(quantity).value) // 1024 - less_ki}Ki").canonical()


def node(
    name: str,
    *,
    capacity: Mapping[str, object],
    allocatable: Mapping[str, object] | None = None,
    labels: Mapping[str, str] | None = None,
    taints: Sequence[Mapping[str, str]] = (),
    created: datetime,
    heartbeat: datetime | None = None,
    boot_id: str | None = None,
    internal_ip: str = "10.0.0.1",
    pod_cidr: str | None = None,
    provider_id: str | None = None,
) -> Obj:
    """A Node as its kubelet registered it and last reported it (Ready).

    ``capacity`` needs ``cpu`` and ``memory`` (``pods`` defaults to 110). ``allocatable``
    defaults to the capacity less 100Mi of memory, the kubelet's default hard eviction threshold
    (``memory.available<100Mi``); memory is reported in whole Ki as the kubelet does, printed
    canonically as the server serves it.
    """
    cap = {
        "cpu": str(capacity["cpu"]),
        "ephemeral-storage": f"{_EPHEMERAL_KI}Ki",
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        "memory": _ki(capacity["memory"]),
        "pods": str(capacity.get("pods", 110)),
    }
    for key, value in capacity.items():
        if key not in ("cpu", "memory", "pods"):
            cap[key] = str(value)
    alloc = dict(cap)
    alloc["ephemeral-storage"] = str(_EPHEMERAL_KI * 1024 * 9 // 10)
    alloc["memory"] = _ki(capacity["memory"], less_ki=100 * 1024)
    for key, value in (allocatable or {}).items():
        alloc[key] = _ki(value) if key == "memory" else str(value)
    arch = "amd64"
    all_labels = {
        "beta.kubernetes.io/arch": arch,
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        **(labels or {}),
    }
    beat = rfc3339(heartbeat or created)
    since = rfc3339(created)
    conditions = [
        {
            "lastHeartbeatTime": beat,
            "lastTransitionTime": since,
            "message": message,
            "reason": reason,
            "status": "False",
            "type": type_,
        }
        for type_, reason, message in _CONDITIONS
    ]
    conditions.append(
        {
            "lastHeartbeatTime": beat,
            "lastTransitionTime": since,
            "message": "kubelet is posting ready status",
            "reason": "KubeletReady",
            "status": "True",
            "type": "Ready",
        }
    )
    spec: Obj = {}
    if pod_cidr:
        spec["podCIDR"] = pod_cidr
        spec["podCIDRs"] = [pod_cidr]
    spec["providerID"] = provider_id or f"kubemedic-sim:///{name}"
    if taints:
        spec["taints"] = [dict(t) for t in taints]
    digest = hashlib.sha256(name.encode()).hexdigest()
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
            "creationTimestamp": since,
            "labels": all_labels,
            "name": name,
            "uid": str(uuid.UUID(digest[:32])),
            "managedFields": _node_managed(all_labels, created),
        },
        "spec": spec,
        "status": {
            "addresses": [
                {"address": internal_ip, "type": "InternalIP"},
                {"address": name, "type": "Hostname"},
            ],
            "allocatable": alloc,
            "capacity": cap,
            "conditions": conditions,
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "architecture": arch,
                "bootID": boot_id or str(uuid.UUID(digest[32:64])),
                "containerRuntimeVersion": "containerd://1.7.24",
                "kernelVersion": "6.8.0-1019-gcp",
                "kubeProxyVersion": KUBELET_VERSION,
                "kubeletVersion": KUBELET_VERSION,
                "machineID": digest[:32],
                "operatingSystem": "linux",
                "osImage": "Ubuntu 24.04.1 LTS",
                "systemUUID": str(uuid.UUID(digest[16:48])),
            },
        },
    }


def update_entry(manager: str, fields: Obj, at: str, *, subresource: str = "") -> Obj:
    """One ``managedFields`` entry of an ``Update`` (as controllers and kubelets write)."""
    entry: Obj = {
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": fields,
        "manager": manager,
        "operation": "Update",
        "time": at,
    }
    if subresource:
        entry["subresource"] = subresource
    return entry


def _node_managed(labels: Mapping[str, str], created: datetime) -> list[Obj]:
    at = rfc3339(created)
    annotation = "f:volumes.kubernetes.io/controller-managed-attach-detach"
    meta: Obj = {"f:annotations": {".": {}, annotation: {}}, "f:labels": {".": {}}}
    meta["f:labels"].update({f"f:{k}": {} for k in labels})
    status: Obj = {"f:allocatable": {}, "f:capacity": {}, "f:conditions": {}, "f:nodeInfo": {}}
    controller: Obj = {
        "f:metadata": {"f:annotations": {"f:node.alpha.kubernetes.io/ttl": {}}},
        "f:spec": {"f:podCIDR": {}, "f:podCIDRs": {".": {}}},
    }
    return [
        update_entry(managers.KUBELET, {"f:metadata": meta}, at),
        update_entry(managers.KUBE_CONTROLLER_MANAGER, controller, at),
        update_entry(managers.KUBELET, {"f:status": status}, at, subresource="status"),
    ]
