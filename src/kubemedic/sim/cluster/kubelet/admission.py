"""The kubelet's admission of a pod bound to its node (``HandlePodAdditions`` -> ``canAdmitPod``).

The scheduler's decision is not the last word: every pod that reaches a node, including a pod
created with ``spec.nodeName`` already set that never met the scheduler, passes the kubelet's
admit handlers in order (Kubernetes 1.32, ``pkg/kubelet/kubelet.go``), against the pods it has
already admitted and that have not terminated:

1. the **eviction manager** (``pkg/kubelet/eviction``): under ``MemoryPressure`` alone only
   BestEffort pods that do not tolerate ``node.kubernetes.io/memory-pressure`` are refused;
   under any other pressure every pod is. Critical pods (static, mirror, priority >= 2e9) pass.
   Reason ``Evicted``, message ``The node had condition: [MemoryPressure]. ``;
2. the **predicate handler** (``pkg/kubelet/lifecycle/predicate.go``): the ``kubernetes.io/os``
   pod label and ``spec.os``, then ``scheduler.AdmissionCheck`` (the scheduler's NodeResourcesFit,
   NodeAffinity, NodeName and NodePorts filters), then untolerated ``NoExecute`` taints. Only the
   first failure is reported.

A resource shortfall is an ``InsufficientResourceError`` from the fit plugin
(``noderesources/fit.go``): checked in the order pods, cpu, memory, ephemeral-storage, then
extended resources; ``requested`` is the pod's effective request, ``used`` the sum over the
admitted pods, ``capacity`` the node's **allocatable**; cpu is counted in millicores and the rest
in whole units. The reason is ``OutOf`` + the resource name (``OutOfmemory``, ``OutOfcpu``,
``OutOfpods``) and the message ``Node didn't have enough resource: memory, requested: 838860800,
used: 7516192768, capacity: 8000000000``. Other failures read ``Predicate NodeAffinity failed:
node(s) didn't match Pod's node affinity/selector``. ``rejectPod`` records the message as a
Warning event and prefixes the pod's ``status.message`` with ``Pod was rejected: ``.

Not modelled: the critical-pod admission handler (it would evict lower-priority pods to make
room for a critical one), device plugins, sysctls and topology manager handlers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubemedic.model import placement, resources
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity

__all__ = [
    "InsufficientResource",
    "Rejection",
    "Usage",
    "admit",
    "allocatable",
    "held",
    "host_ports",
    "request_vector",
]

#: ``scheduling.SystemCriticalPriority``: pods at or above it pass the eviction manager.
CRITICAL_PRIORITY = 2_000_000_000
_NATIVE = ("cpu", "memory", "ephemeral-storage", "pods")
_AFFINITY_REASON = "node(s) didn't match Pod's node affinity/selector"
_PORTS_REASON = "node(s) didn't have free ports for the requested pod ports"
_TAINT_REASON = "node(s) had taints that the pod didn't tolerate"

Port = tuple[str, str, int]  # (protocol, hostIP, hostPort)


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why the kubelet refused a pod: the pod's ``status.reason`` and the event message."""

    reason: str
    message: str

    @property
    def status_message(self) -> str:
        return "Pod was rejected: " + self.message


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    resource: str
    requested: int
    used: int
    capacity: int

    @property
    def reason(self) -> str:
        return {"cpu": "OutOfcpu", "memory": "OutOfmemory", "pods": "OutOfpods"}.get(
            self.resource, f"OutOf{self.resource}"
        )

    @property
    def message(self) -> str:
        return (
            f"Node didn't have enough resource: {self.resource}, requested: {self.requested}, "
            f"used: {self.used}, capacity: {self.capacity}"
        )


def _count(name: str, quantity: Quantity) -> int:
    """MilliValue for cpu, Value (rounded up) for everything else, as the fit plugin counts."""
    return quantity.milli if name == "cpu" else math.ceil(quantity.value)


def _units(name: str, value: Any) -> int:
    try:
        return _count(name, parse_quantity(value))
    except QuantityError:
        return 0


def request_vector(pod: Mapping[str, Any]) -> dict[str, int]:
    """The pod's effective requests (init containers, sidecars, overhead, pod-level resources),
    in the fit plugin's units; zero requests are left out."""
    totals = resources.pod_requests(pod)
    vector = {name: _count(name, q) for name, q in totals.items()}
    return {name: value for name, value in vector.items() if value > 0}


def allocatable(node: Mapping[str, Any]) -> dict[str, int]:
    """``status.allocatable`` (capacity for old nodes) in the fit plugin's units."""
    status = node.get("status") or {}
    raw = status.get("allocatable") or status.get("capacity") or {}
    return {str(name): _units(str(name), value) for name, value in raw.items()}


def host_ports(pod: Mapping[str, Any]) -> frozenset[Port]:
    """The host ports a pod's containers claim."""
    found: set[Port] = set()
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        for port in container.get("ports") or ():
            number = port.get("hostPort")
            if isinstance(number, int) and number > 0:
                found.add((port.get("protocol") or "TCP", port.get("hostIP") or "0.0.0.0", number))  # noqa: S104
    return frozenset(found)


def held(pod: Mapping[str, Any] | None) -> tuple[dict[str, int], frozenset[Port]]:
    """What an admitted pod holds on its node: its requests and host ports."""
    return (request_vector(pod), host_ports(pod)) if pod is not None else ({}, frozenset())


@dataclass
class Usage:
    """What the admitted, non-terminated pods hold on a node."""

    requested: dict[str, int] = field(default_factory=dict)
    pods: int = 0
    ports: set[Port] = field(default_factory=set)

    @classmethod
    def of(cls, pods: Iterable[Mapping[str, Any]]) -> Usage:
        usage = cls()
        for pod in pods:
            usage.add(request_vector(pod), host_ports(pod))
        return usage

    def add(self, requests: Mapping[str, int], ports: Iterable[Port] = ()) -> None:
        for name, value in requests.items():
            self.requested[name] = self.requested.get(name, 0) + value
        self.pods += 1
        self.ports.update(ports)


def insufficient(
    requests: Mapping[str, int], *, usage: Usage, capacity: Mapping[str, int]
) -> list[InsufficientResource]:
    """``fitsRequest``: every resource the pod does not fit, in the plugin's order."""
    short: list[InsufficientResource] = []
    allowed = capacity.get("pods", 0)
    if usage.pods + 1 > allowed:
        short.append(InsufficientResource("pods", 1, usage.pods, allowed))
    if not requests:
        return short
    extended = sorted(name for name in requests if name not in _NATIVE)
    for name in ("cpu", "memory", "ephemeral-storage", *extended):
        want = requests.get(name, 0)
        if want <= 0:
            continue
        if name in extended and "/" in name and name not in capacity:
            continue  # removeMissingExtendedResources: unknown to the node, not checked
        used = usage.requested.get(name, 0)
        have = capacity.get(name, 0)
        if want > have - used:
            short.append(InsufficientResource(name, want, used, have))
    return short


def _critical(pod: Mapping[str, Any]) -> bool:
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if "kubernetes.io/config.mirror" in annotations:
        return True
    priority = (pod.get("spec") or {}).get("priority")
    return isinstance(priority, int) and priority >= CRITICAL_PRIORITY


def _best_effort(pod: Mapping[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for container in [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]:
        res = container.get("resources") or {}
        for part in ("requests", "limits"):
            for name in ("cpu", "memory"):
                if _units(name, (res.get(part) or {}).get(name, "0")) > 0:
                    return False
    return True


def _pressure_rejection(pod: Mapping[str, Any], pressure: Sequence[str]) -> Rejection | None:
    if not pressure or _critical(pod):
        return None
    if list(pressure) == ["MemoryPressure"]:
        if not _best_effort(pod):
            return None
        taint = {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}
        tolerations = (pod.get("spec") or {}).get("tolerations") or ()
        if any(placement.tolerates(t, taint) for t in tolerations):
            return None
    return Rejection("Evicted", f"The node had condition: [{' '.join(pressure)}]. ")


def _untolerated_no_execute(pod: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    tolerations = (pod.get("spec") or {}).get("tolerations") or ()
    for taint in (node.get("spec") or {}).get("taints") or ():
        if taint.get("effect") != "NoExecute":
            continue
        if not any(placement.tolerates(t, taint) for t in tolerations):
            return True
    return False


def _ports_conflict(wanted: Iterable[Port], used: set[Port]) -> bool:
    for protocol, ip, port in wanted:
        for other_protocol, other_ip, other_port in used:
            if (protocol, port) != (other_protocol, other_port):
                continue
            if "0.0.0.0" in (ip, other_ip) or ip == other_ip:  # noqa: S104
                return True
    return False


def _predicate(name: str, reason: str) -> Rejection:
    return Rejection(name, f"Predicate {name} failed: {reason}")


def admit(
    pod: Mapping[str, Any],
    node: Mapping[str, Any],
    *,
    usage: Usage | None = None,
    admitted: Iterable[Mapping[str, Any]] = (),
    requests: Mapping[str, int] | None = None,
    pressure: Sequence[str] = (),
) -> Rejection | None:
    """Whether the kubelet admits ``pod`` on ``node``: None, or the first reason it does not.

    ``usage`` is what the admitted pods hold (or give the pods as ``admitted``); ``requests``
    the pod's :func:`request_vector` when the caller has it; ``pressure`` the node conditions
    the eviction manager currently reports (``MemoryPressure``, ``DiskPressure``...).
    """
    rejection = _pressure_rejection(pod, pressure)
    if rejection is not None:
        return rejection
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if labels.get("kubernetes.io/os", "linux") != "linux":
        return Rejection(
            "PodOSSelectorNodeLabelDoesNotMatch",
            "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
        )
    spec = pod.get("spec") or {}
    if (spec.get("os") or {}).get("name", "linux") != "linux":
        return Rejection(
            "PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"
        )
    if usage is None:
        usage = Usage.of(admitted)
    wanted = request_vector(pod) if requests is None else requests
    short = insufficient(wanted, usage=usage, capacity=allocatable(node))
    if short:
        return Rejection(short[0].reason, short[0].message)
    if not placement.affinity_matches(spec, node):
        return _predicate("NodeAffinity", _AFFINITY_REASON)
    node_name = (node.get("metadata") or {}).get("name")
    if spec.get("nodeName") and spec.get("nodeName") != node_name:
        return _predicate("NodeName", "node(s) didn't match the requested node name")
    if _ports_conflict(host_ports(pod), usage.ports):
        return _predicate("NodePorts", _PORTS_REASON)
    if "kubernetes.io/config.mirror" not in (pod.get("metadata") or {}).get(
        "annotations", {}
    ) and _untolerated_no_execute(pod, node):
        return _predicate("TaintToleration", _TAINT_REASON)
    return None
