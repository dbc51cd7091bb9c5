"""What a kubelet reports about its node: conditions, node info, addresses, and the patch.

Built the way ``pkg/kubelet/nodestatus/setters.go`` (Kubernetes 1.32) fills ``Node.status``:

- **Pressure conditions** (``MemoryPressure``, ``DiskPressure``, ``PIDPressure``) come from the
  eviction manager; ``False`` reads ``KubeletHasSufficientMemory`` / ``kubelet has sufficient
  memory available``, ``True`` reads ``KubeletHasInsufficientMemory`` / ``kubelet has
  insufficient memory available`` (and the disk and PID counterparts). A transition records the
  event ``NodeHasSufficientMemory`` etc. with the message ``Node <n> status is now: <event>``.
- **Ready** is ``True``/``KubeletReady``/``kubelet is posting ready status`` unless the kubelet
  collected errors: runtime errors (``container runtime is down`` once the runtime status check
  has not succeeded for 30 s, ``PLEG is not healthy: pleg was last seen active 3m2.5s ago;
  threshold is 3m0s`` once relisting has stalled for 3 minutes), network errors (``container
  runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network
  plugin returns error: cni plugin not initialized``). They are joined by ``utilerrors``'
  aggregate: one error is printed as is, several as ``[a, b]``. Reason ``KubeletNotReady``.
  Only a change of an existing Ready condition records ``NodeReady``/``NodeNotReady``.
- **Node info** carries ``bootID`` (``/proc/sys/kernel/random/boot_id``); when it changes the
  kubelet records a Warning ``Rebooted``: ``Node <n> has been rebooted, boot id: <id>``.

The kubelet checks every ``nodeStatusUpdateFrequency`` (10 s) and PATCHes ``nodes/status`` only
when something other than heartbeat times changed or ``nodeStatusReportFrequency`` (5 min) has
passed; :func:`status_patch` builds that strategic merge patch from the stored conditions, so
the kubelet sends the few fields that move rather than a copy of the node. Between reports the
node Lease (``kube-node-lease/<node>``, 40 s, owned by the Node) is what says the kubelet is
alive: renewed by an update every 10 s (``pkg/kubelet/nodelease``, :func:`renewed`).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubemedic.model.durations import go_duration

__all__ = [
    "DEFAULT_CAPACITY",
    "KUBELET_VERSION",
    "LEASE_DURATION",
    "LEASE_NAMESPACE",
    "PLEG_THRESHOLD",
    "RUNTIME_DOWN_AFTER",
    "Condition",
    "NodeEvent",
    "aggregate",
    "changed",
    "conditions_body",
    "daemon_endpoints",
    "desired",
    "event_for",
    "initial_node",
    "internal_ip",
    "lease",
    "network_not_ready",
    "node_info",
    "node_ref",
    "pressure_condition",
    "ready_condition",
    "rebooted_message",
    "renewed",
    "runtime_errors",
    "startup_events",
    "status_message",
    "status_patch",
]

Obj = dict[str, Any]

KUBELET_VERSION = "v1.32.0"
LEASE_NAMESPACE = "kube-node-lease"
#: ``NodeLeaseDurationSeconds``; the kubelet renews every quarter of it (10 s).
LEASE_DURATION = 40
#: ``maxWaitForContainerRuntime``: runtime status stale this long -> ``container runtime is down``.
RUNTIME_DOWN_AFTER = 30.0
#: ``genericPlegRelistThreshold``.
PLEG_THRESHOLD = 180.0

#: What ``cadvisor`` reports for a VM when the machine template says nothing.
DEFAULT_CAPACITY: dict[str, str] = {
    "cpu": "4",
    "ephemeral-storage": "101430960Ki",
    "hugepages-1Gi": "0",
    "hugepages-2Mi": "0",
    "memory": "16374584Ki",
    "pods": "110",
}

_PRESSURE: dict[str, tuple[tuple[str, str, str], tuple[str, str, str]]] = {
    # type: ((reason, message, event) when False, (reason, message, event) when True)
    "MemoryPressure": (
        (
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
            "NodeHasSufficientMemory",
        ),
        (
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
            "NodeHasInsufficientMemory",
        ),
    ),
    "DiskPressure": (
        ("KubeletHasNoDiskPressure", "kubelet has no disk pressure", "NodeHasNoDiskPressure"),
        ("KubeletHasDiskPressure", "kubelet has disk pressure", "NodeHasDiskPressure"),
    ),
    "PIDPressure": (
        ("KubeletHasSufficientPID", "kubelet has sufficient PID available", "NodeHasSufficientPID"),
        (
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
            "NodeHasInsufficientPID",
        ),
    ),
}


@dataclass(frozen=True, slots=True)
class Condition:
    """A node condition as the kubelet wants it (times are added when it is posted)."""

    type: str
    status: str
    reason: str
    message: str


#: An event the kubelet records on its node: (type, reason, message).
NodeEvent = tuple[str, str, str]


def pressure_condition(type_: str, *, under: bool) -> Condition:
    """A pressure condition as the eviction manager's setter writes it."""
    reason, message, _ = _PRESSURE[type_][under]
    return Condition(type_, "True" if under else "False", reason, message)


def aggregate(groups: Sequence[Sequence[str]]) -> str:
    """``utilerrors.NewAggregate`` of per-source aggregates, as ``.Error()`` prints it.

    One non-empty source prints its own aggregate (one message bare, several as ``[a, b]``);
    several sources are flattened, duplicates dropped, and bracketed when more than one remains.
    """
    present = [list(dict.fromkeys(group)) for group in groups if group]
    if not present:
        return ""
    flat = present[0] if len(present) == 1 else list(dict.fromkeys(m for g in present for m in g))
    return flat[0] if len(flat) == 1 else "[" + ", ".join(flat) + "]"


def runtime_errors(*, hung_for: float | None) -> list[str]:
    """``runtimeState.runtimeErrors()`` for a runtime that stopped answering ``hung_for``
    seconds ago (None: healthy). The runtime status check is the first to notice
    (``maxWaitForContainerRuntime``, 30 s); the PLEG relist follows after 3 minutes."""
    if hung_for is None or hung_for < RUNTIME_DOWN_AFTER:
        return []
    found = ["container runtime is down"]
    if hung_for >= PLEG_THRESHOLD:
        found.append(
            f"PLEG is not healthy: pleg was last seen active {go_duration(hung_for)} ago; "
            f"threshold is {go_duration(PLEG_THRESHOLD)}"
        )
    return found


def network_not_ready(
    message: str = "Network plugin returns error: cni plugin not initialized",
    *,
    reason: str = "NetworkPluginNotReady",
) -> str:
    """``runtimeState.networkErrors()`` when the CRI reports ``NetworkReady=false`` (the
    ``RuntimeCondition`` printed as ``%v``), e.g. a CNI configuration missing or broken."""
    return (
        f"container runtime network not ready: NetworkReady=false reason:{reason} message:{message}"
    )


def ready_condition(*, runtime: Sequence[str] = (), network: Sequence[str] = ()) -> Condition:
    """The Ready condition from the kubelet's collected errors (``ReadyCondition`` setter)."""
    message = aggregate([runtime, network])
    if message:
        return Condition("Ready", "False", "KubeletNotReady", message)
    return Condition("Ready", "True", "KubeletReady", "kubelet is posting ready status")


def desired(
    overrides: Mapping[str, Condition], *, hung_for: float | None, network: Sequence[str]
) -> list[Condition]:
    """Every condition the kubelet reports: the three pressure conditions (``False`` unless
    the eviction manager set them), any other condition set for it, and Ready last."""
    pressures = ("MemoryPressure", "DiskPressure", "PIDPressure")
    found = [overrides.get(t) or pressure_condition(t, under=False) for t in pressures]
    found += [c for t, c in sorted(overrides.items()) if t not in pressures]
    runtime = runtime_errors(hung_for=hung_for)
    found.append(ready_condition(runtime=runtime, network=network))
    return found


def node_info(
    *,
    boot_id: str,
    machine_id: str,
    system_uuid: str,
    kubelet_version: str = KUBELET_VERSION,
    kernel_version: str = "6.8.0-51-generic",
    os_image: str = "Ubuntu 24.04.1 LTS",
    container_runtime_version: str = "containerd://1.7.24",
    architecture: str = "amd64",
) -> Obj:
    """``status.nodeInfo``. ``kubeProxyVersion`` stays empty: 1.31 stopped reporting it
    (``DisableNodeKubeProxyVersion``); the field has no omitempty, so it prints as ``""``."""
    return {
        "machineID": machine_id,
        "systemUUID": system_uuid,
        "bootID": boot_id,
        "kernelVersion": kernel_version,
        "osImage": os_image,
        "containerRuntimeVersion": container_runtime_version,
        "kubeletVersion": kubelet_version,
        "kubeProxyVersion": "",
        "operatingSystem": "linux",
        "architecture": architecture,
    }


def internal_ip(node: Mapping[str, Any]) -> str:
    """The node's ``InternalIP`` address, or empty."""
    for address in (node.get("status") or {}).get("addresses") or ():
        if address.get("type") == "InternalIP":
            return str(address.get("address") or "")
    return ""


def daemon_endpoints(port: int = 10250) -> Obj:
    return {"kubeletEndpoint": {"Port": port}}


def conditions_body(desired: Sequence[Condition], *, stamp: str) -> list[Obj]:
    """Full condition entries for a Node being created (all transitions happen now)."""
    return [
        {
            "type": c.type,
            "status": c.status,
            "lastHeartbeatTime": stamp,
            "lastTransitionTime": stamp,
            "reason": c.reason,
            "message": c.message,
        }
        for c in desired
    ]


def changed(stored: Mapping[str, Any] | None, desired: Sequence[Condition], boot_id: str) -> bool:
    """``nodeStatusHasChanged``: any condition's status, reason or message, or the bootID."""
    status = (stored or {}).get("status") or {}
    if (status.get("nodeInfo") or {}).get("bootID", "") != boot_id:
        return True
    have = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, dict)}
    for want in desired:
        got = have.get(want.type)
        if got is None or (got.get("status"), got.get("reason"), got.get("message")) != (
            want.status,
            want.reason,
            want.message,
        ):
            return True
    return False


def status_patch(
    stored: Mapping[str, Any], desired: Sequence[Condition], *, stamp: str, boot_id: str
) -> tuple[Obj, list[NodeEvent]]:
    """The kubelet's PATCH of ``nodes/status`` and the events it records with it
    (``Rebooted`` when the bootID changed, then the condition transitions).

    Every condition the kubelet owns gets a new ``lastHeartbeatTime``; one whose status moved
    gets a new ``lastTransitionTime``; reason and message follow. Conditions owned by others
    (``NetworkUnavailable`` from the CNI) keep their place: ``$setElementOrder`` lists the
    stored order with new conditions appended, as the two-way merge patch client-go builds.
    """
    status = stored.get("status") or {}
    have = {c.get("type"): c for c in status.get("conditions") or () if isinstance(c, dict)}
    order = [str(t) for t in have]
    entries: list[Obj] = []
    name = str((stored.get("metadata") or {}).get("name"))
    old_boot = (status.get("nodeInfo") or {}).get("bootID", "")
    events: list[NodeEvent] = []
    if old_boot and old_boot != boot_id:
        events.append(("Warning", "Rebooted", rebooted_message(name, boot_id)))
    for want in desired:
        got = have.get(want.type)
        entry: Obj = {"type": want.type, "lastHeartbeatTime": stamp}
        if got is None or got.get("status") != want.status:
            entry["status"] = want.status
            entry["lastTransitionTime"] = stamp
            event = event_for(want)
            # A Ready condition first appearing records nothing; pressure conditions start
            # from Unknown in the setter, so their first value records an event.
            if event and (got is not None or want.type != "Ready"):
                events.append(("Normal", event, status_message(name, event)))
        if got is None or got.get("reason") != want.reason:
            entry["reason"] = want.reason
        if got is None or got.get("message") != want.message:
            entry["message"] = want.message
        if got is None:
            order.append(want.type)
        entries.append(entry)
    body: Obj = {"$setElementOrder/conditions": [{"type": t} for t in order], "conditions": entries}
    if old_boot != boot_id:
        body["nodeInfo"] = {"bootID": boot_id}
    return {"status": body}, events


def event_for(condition: Condition) -> str:
    """The event the setter records when ``condition`` takes its status (``NodeReady``,
    ``NodeHasSufficientMemory``...); empty for conditions the kubelet does not announce."""
    if condition.type == "Ready":
        return "NodeReady" if condition.status == "True" else "NodeNotReady"
    options = _PRESSURE.get(condition.type)
    if options is None:
        return ""
    return options[condition.status == "True"][2]


def initial_node(
    template: Mapping[str, Any],
    *,
    host_ip: str,
    boot_id: str,
    pressure: Sequence[Condition],
    network: Sequence[str],
    stamp: str,
    kubelet_version: str = KUBELET_VERSION,
) -> Obj:
    """``initialNode``: the Node a kubelet registers, from the machine's ``template`` (name,
    labels, annotations, taints and providerID, capacity and allocatable). The kubelet adds its
    default labels and the attach-detach annotation, and sends a first status, whose Ready is
    ``False`` while the runtime status check has not completed yet."""
    runtime = ["container runtime status check may not have completed yet"]
    conditions = [*pressure, ready_condition(runtime=runtime, network=network)]
    meta = template.get("metadata") or {}
    name = str(meta.get("name"))
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        **(meta.get("labels") or {}),
    }
    annotations = {
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        **(meta.get("annotations") or {}),
    }
    given = template.get("status") or {}
    capacity = given.get("capacity") or dict(DEFAULT_CAPACITY)
    digest = hashlib.sha256(name.encode()).hexdigest()
    addresses = [{"type": "InternalIP", "address": host_ip}, {"type": "Hostname", "address": name}]
    info = node_info(
        boot_id=boot_id,
        machine_id=digest[:32],
        system_uuid=str(uuid.UUID(digest[32:64])),
        kubelet_version=kubelet_version,
    )
    info.update({k: v for k, v in (given.get("nodeInfo") or {}).items() if v and k != "bootID"})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {**meta, "labels": labels, "annotations": annotations},
        "spec": dict(template.get("spec") or {}),
        "status": {
            "capacity": capacity,
            "allocatable": given.get("allocatable") or capacity,
            "conditions": conditions_body(conditions, stamp=stamp),
            "addresses": given.get("addresses") or addresses,
            "daemonEndpoints": daemon_endpoints(),
            "nodeInfo": info,
        },
    }


def lease(name: str, *, node_uid: str | None, stamp: str) -> Obj:
    """The node Lease the lease controller creates: held by the node, 40 s, owned by the Node
    (when it exists yet) so it goes with it."""
    meta: Obj = {"name": name, "namespace": LEASE_NAMESPACE}
    if node_uid:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}
        ]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": meta,
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION,
            "renewTime": stamp,
        },
    }


def renewed(stored: Mapping[str, Any], *, stamp: str) -> Obj:
    """The stored Lease with a new ``renewTime`` (an update of the cached object)."""
    name = (stored.get("metadata") or {}).get("name")
    spec = {**(stored.get("spec") or {}), "holderIdentity": name, "renewTime": stamp}
    spec.setdefault("leaseDurationSeconds", LEASE_DURATION)
    return {**stored, "spec": spec}


def startup_events(node_name: str, pressure: Sequence[Condition]) -> list[tuple[str, str]]:
    """What a starting kubelet records on its node (reason, message): ``Starting``, the
    pressure conditions its fresh ``initialNode`` computes, ``NodeAllocatableEnforced``."""
    found = [("Starting", "Starting kubelet.")]
    for condition in pressure:
        event = event_for(condition)
        if event:
            found.append((event, status_message(node_name, event)))
    found.append(("NodeAllocatableEnforced", "Updated Node Allocatable limit across pods"))
    return found


def status_message(node_name: str, event: str) -> str:
    """``recordNodeStatusEvent``'s message."""
    return f"Node {node_name} status is now: {event}"


def rebooted_message(node_name: str, boot_id: str) -> str:
    return f"Node {node_name} has been rebooted, boot id: {boot_id}"


def node_ref(name: str) -> dict[str, Any]:
    """The kubelet's ``involvedObject`` for a node: kind Node, the node's name as its uid, no
    apiVersion or namespace."""
    return {"kind": "Node", "metadata": {"name": name, "uid": name}}
