"""Why a pod was disrupted, read from the words Kubernetes wrote about it.

**Node-pressure eviction** (the kubelet's eviction manager, ``pkg/kubelet/eviction``): when a
signal (``memory.available``, ``nodefs.available``, ``pid.available``...) crosses its threshold,
the kubelet ranks its pods and kills one per cycle. It sets ``status.phase: Failed``,
``status.reason: Evicted``, a ``DisruptionTarget`` condition with reason ``TerminationByKubelet``,
and records an ``Evicted`` Warning event, all carrying one message built from sentences::

    The node was low on resource: memory. Threshold quantity: 100Mi, available: 95Mi.
    Container hub was using 310Mi, request is 128Mi, has larger consumption of memory.

A ``Pod <name> was using ...`` sentence replaces the container ones for pods with pod-level
resources; older kubelets wrote ``Container c was using X, which exceeds its request of Y.`` and
``The node was low on resource: [DiskPressure].``. The event also carries annotations
(``starved_resource``, ``offending_containers``, ``offending_containers_usage``,
``offending_pod``, ``offending_pod_usage``); ``with_annotations`` fills gaps from them.

**Local-storage limit eviction**: a pod over an ``emptyDir.sizeLimit`` or an
``ephemeral-storage`` limit is evicted at once (``Usage of EmptyDir volume "cache" exceeds the
limit "1Gi".``, ``Pod ephemeral local storage usage exceeds the total limit of containers 2Gi.``,
``Container app exceeded its local ephemeral storage limit "1Gi".``).

**Admission rejection under pressure**: a pod arriving on a node with a pressure condition is
failed with reason ``Evicted`` and ``The node had condition: [MemoryPressure].``; it never ran.

**Other disruptions** are recognised so callers can tell them apart: the Eviction API (drains,
descheduler; condition reason ``EvictionByEvictionAPI``), scheduler preemption (event
``Preempted``: ``Preempted by pod <uid> on node <node>``; condition ``PreemptionByScheduler``),
the NoExecute taint manager (event ``TaintManagerEviction``; condition
``DeletionByTaintManager``), PodGC (``DeletionByPodGC``) and graceful node shutdown (reason
``Terminated``, ``Pod was terminated in response to imminent node shutdown.``).

Everything here is total: any input (garbage, megabytes, lone surrogates from a bad decode,
non-strings) gives a result and never raises. Quantities that do not parse are kept as their raw
text, so a message from a future kubelet still shows what it said.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from kubemedic.model import objects
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity

__all__ = [
    "KUBELET_KINDS",
    "Amount",
    "Consumer",
    "DisruptionKind",
    "Eviction",
    "StorageLimit",
    "classify",
    "parse_eviction_message",
    "pod_disruption",
    "with_annotations",
]

MAX_INPUT = 65536
"""Characters of a message that are read; the kubelet's own messages are a few hundred."""

MAX_KEPT = 512
"""Characters of the raw message kept in ``Eviction.message`` (evidence, not an archive)."""

Amount = Quantity | str
"""A quantity, or the raw text when it was not a valid quantity."""


class DisruptionKind(enum.StrEnum):
    NODE_PRESSURE = "node-pressure"
    LOCAL_STORAGE_LIMIT = "local-storage-limit"
    ADMISSION_REJECTED = "admission-rejected"
    NODE_SHUTDOWN = "node-shutdown"
    API_EVICTION = "api-eviction"
    PREEMPTION = "preemption"
    TAINT_MANAGER = "taint-manager"
    POD_GC = "pod-gc"
    UNKNOWN = "unknown"


KUBELET_KINDS = frozenset(
    {
        DisruptionKind.NODE_PRESSURE,
        DisruptionKind.LOCAL_STORAGE_LIMIT,
        DisruptionKind.ADMISSION_REJECTED,
    }
)
"""Kinds the kubelet reports as ``reason: Evicted`` because of the node's own resources."""

CONDITION_RESOURCES = {
    "MemoryPressure": "memory",
    "DiskPressure": "ephemeral-storage",
    "PIDPressure": "pids",
}
"""Node pressure conditions and the resource each one means (``signalToNodeCondition``)."""


@dataclass(frozen=True, slots=True)
class Consumer:
    """One ``Container|Pod <name> was using <usage>, request is <request>`` sentence."""

    name: str
    usage: Amount
    request: Amount | None
    resource: str
    scope: str = "container"

    @property
    def excess(self) -> Quantity | None:
        """Usage above request (what the kubelet ranks by), when both are quantities."""
        if isinstance(self.usage, Quantity) and isinstance(self.request, Quantity):
            return self.usage - self.request
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "scope": self.scope,
            "resource": self.resource,
            "usage": str(self.usage),
            "request": None if self.request is None else str(self.request),
        }


@dataclass(frozen=True, slots=True)
class StorageLimit:
    """A local-storage limit the pod went over: ``scope`` is container, pod, emptyDir, overlay."""

    scope: str
    name: str | None
    limit: Amount

    def to_json(self) -> dict[str, Any]:
        return {"scope": self.scope, "name": self.name, "limit": str(self.limit)}


@dataclass(frozen=True, slots=True)
class Eviction:
    """What a disruption message says. Fields a message did not state are None or empty."""

    kind: DisruptionKind
    resource: str | None = None
    threshold: Amount | None = None
    available: Amount | None = None
    conditions: tuple[str, ...] = ()
    containers: tuple[Consumer, ...] = ()
    pod: Consumer | None = None
    limits: tuple[StorageLimit, ...] = ()
    preemptor: str | None = None
    node: str | None = None
    message: str = ""

    @property
    def biggest_consumer(self) -> Consumer | None:
        """The consumer furthest above its request (the kubelet's ranking), else the largest."""
        consumers = [*self.containers, *([self.pod] if self.pod else [])]
        if not consumers:
            return None

        def key(consumer: Consumer) -> tuple[bool, Fraction, Fraction]:
            # Exact values: float() overflows on a quantity such as 1e999.
            excess = consumer.excess
            usage = consumer.usage
            return (
                excess is not None,
                excess.value if excess is not None else Fraction(0),
                usage.value if isinstance(usage, Quantity) else Fraction(0),
            )

        return max(consumers, key=key)

    @property
    def by_kubelet(self) -> bool:
        return self.kind in KUBELET_KINDS

    def to_json(self) -> dict[str, Any]:
        biggest = self.biggest_consumer
        return {
            "kind": str(self.kind),
            "resource": self.resource,
            "threshold": None if self.threshold is None else str(self.threshold),
            "available": None if self.available is None else str(self.available),
            "conditions": list(self.conditions),
            "containers": [consumer.to_json() for consumer in self.containers],
            "pod": self.pod.to_json() if self.pod else None,
            "limits": [limit.to_json() for limit in self.limits],
            "biggestConsumer": biggest.to_json() if biggest else None,
            "preemptor": self.preemptor,
            "node": self.node,
            "message": self.message,
        }


# -- the kubelet's sentences (pkg/kubelet/eviction/helpers.go) ------------------------------------

_NAME = r"\S{1,253}"
_AMOUNT = r"\S{1,128}?"
_QUOTED = r'"(?:[^"\\]|\\.){0,300}"'
_END = r"\.(?=\s|$)"

_NODE_LOW = re.compile(
    rf"The node was low on resource: (?P<resource>\[[^\]]{{0,300}}\]|[\w./-]{{1,253}}?){_END}"
)
_NODE_CONDITION = re.compile(r"The node had condition: (?P<conditions>\[[^\]]{0,300}\])")
_THRESHOLD = re.compile(
    r"Threshold quantity: (?P<threshold>[^,\s]{1,128}), "
    rf"available: (?P<available>{_AMOUNT}){_END}"
)
_CONSUMER = re.compile(
    rf"(?P<scope>Container|Pod) (?P<name>{_NAME}) was using (?P<usage>{_AMOUNT}), "
    rf"request is (?P<request>{_AMOUNT}), "
    rf"has larger consumption of (?P<resource>[\w./-]{{1,253}}?){_END}"
)
_CONSUMER_OLD = re.compile(
    rf"Container (?P<name>{_NAME}) was using (?P<usage>{_AMOUNT}), "
    rf"which exceeds its request of (?P<request>{_AMOUNT}){_END}"
)
_STORAGE_SENTENCES = tuple(
    (re.compile(pattern), scope)
    for pattern, scope in (
        (
            rf"Usage of EmptyDir volume (?P<name>{_QUOTED}) exceeds the limit (?P<limit>{_QUOTED})",
            "emptyDir",
        ),
        (rf"emptyDir usage exceeds the limit (?P<limit>{_QUOTED})", "emptyDir"),
        (
            r"Pod ephemeral local storage usage exceeds the total limit of containers "
            rf"(?P<limit>{_AMOUNT}){_END}",
            "pod",
        ),
        (
            rf"Container (?P<name>{_NAME}) exceeded its local ephemeral storage limit "
            rf"(?P<limit>{_QUOTED})",
            "container",
        ),
        (rf"container's overlay usage exceeds the limit (?P<limit>{_QUOTED})", "overlay"),
    )
)
"""Local-storage limit sentences, current and older kubelets, with the scope each names."""
_PREEMPTED = re.compile(
    r"Preempted by (?:pod |a pod )?(?P<preemptor>\S{0,300}?) ?on node (?P<node>[^\s(]{1,253})"
)
_SHUTDOWN = re.compile(r"node shutdown|node is shutting down", re.IGNORECASE)
_ESCAPE = re.compile(r"\\(.)")

_REASONS = {
    "EvictionByEvictionAPI": DisruptionKind.API_EVICTION,
    "PreemptionByScheduler": DisruptionKind.PREEMPTION,
    "Preempted": DisruptionKind.PREEMPTION,
    "DeletionByTaintManager": DisruptionKind.TAINT_MANAGER,
    "TaintManagerEviction": DisruptionKind.TAINT_MANAGER,
    "DeletionByPodGC": DisruptionKind.POD_GC,
    "NodeShutdown": DisruptionKind.NODE_SHUTDOWN,
}


def _text(value: object) -> str:
    """Any input as a bounded, encodable ``str`` (lone surrogates become ``?``)."""
    if isinstance(value, bytes | bytearray):
        value = bytes(value[: MAX_INPUT * 4]).decode("utf-8", "replace")
    if not isinstance(value, str):
        return ""
    return value[:MAX_INPUT].encode("utf-8", "replace").decode("utf-8")


def _kept(text: str) -> str:
    return text if len(text) <= MAX_KEPT else text[:MAX_KEPT] + "…"


def _amount(raw: str) -> Amount:
    try:
        return parse_quantity(raw)
    except QuantityError:
        return raw[:128]


def _unquote(raw: str) -> str:
    """Undo Go's ``%q`` for the characters that matter here (quotes and backslashes)."""
    inner = raw[1:-1] if len(raw) >= 2 and raw[0] == raw[-1] == '"' else raw
    return _ESCAPE.sub(r"\1", inner)


def _conditions(raw: str) -> tuple[str, ...]:
    return tuple(part for part in re.split(r"[\s,\[\]]+", raw) if part)


def parse_eviction_message(text: object) -> Eviction:
    """Parse a kubelet eviction message (pod ``status.message``, ``Evicted`` event message or
    ``TerminationByKubelet`` condition message). Never raises; unrecognised text gives
    ``kind=UNKNOWN`` with the text kept in ``message``."""
    message = _text(text)
    resource: str | None = None
    conditions: tuple[str, ...] = ()
    kind = DisruptionKind.UNKNOWN

    if low := _NODE_LOW.search(message):
        kind = DisruptionKind.NODE_PRESSURE
        raw = low.group("resource")
        if raw.startswith("["):
            conditions = _conditions(raw)
        else:
            resource = raw
    elif had := _NODE_CONDITION.search(message):
        kind = DisruptionKind.ADMISSION_REJECTED
        conditions = _conditions(had.group("conditions"))
    if resource is None and conditions:
        resource = next(
            (CONDITION_RESOURCES[c] for c in conditions if c in CONDITION_RESOURCES), None
        )

    threshold: Amount | None = None
    available: Amount | None = None
    if met := _THRESHOLD.search(message):
        threshold, available = _amount(met.group("threshold")), _amount(met.group("available"))

    containers: list[Consumer] = []
    pod: Consumer | None = None
    for pattern in (_CONSUMER, _CONSUMER_OLD):
        for match in pattern.finditer(message):
            found = match.groupdict()
            consumer = Consumer(
                name=found["name"],
                usage=_amount(found["usage"]),
                request=_amount(found["request"]),
                resource=found.get("resource") or resource or "unknown",
                scope=(found.get("scope") or "container").lower(),
            )
            if consumer.scope == "pod":
                pod = consumer
            else:
                containers.append(consumer)

    limits = _storage_limits(message)
    if limits and kind is DisruptionKind.UNKNOWN:
        kind = DisruptionKind.LOCAL_STORAGE_LIMIT
        resource = "ephemeral-storage"
    if resource is None:
        resource = next((c.resource for c in containers if c.resource != "unknown"), None)
    if kind is DisruptionKind.UNKNOWN and containers:
        kind = DisruptionKind.NODE_PRESSURE  # truncated before the first sentence
    return Eviction(
        kind=kind,
        resource=resource,
        threshold=threshold,
        available=available,
        conditions=conditions,
        containers=tuple(containers),
        pod=pod,
        limits=limits,
        message=_kept(message),
    )


def _storage_limits(message: str) -> tuple[StorageLimit, ...]:
    found: list[StorageLimit] = []
    for pattern, scope in _STORAGE_SENTENCES:
        for match in pattern.finditer(message):
            name = match.groupdict().get("name")
            limit = _amount(_unquote(match.group("limit")))
            found.append(StorageLimit(scope, _unquote(name) if name else None, limit))
    return tuple(found)


def classify(reason: object, message: object) -> Eviction:
    """Classify a disruption from a reason (event reason, ``status.reason`` or
    ``DisruptionTarget`` condition reason) and its message. Never raises."""
    why = _text(reason)[:256]
    text = _text(message)
    kind = _REASONS.get(why)
    if kind is DisruptionKind.PREEMPTION:
        found = _PREEMPTED.search(text)
        return Eviction(
            kind=kind,
            preemptor=(found.group("preemptor") or None) if found else None,
            node=found.group("node").rstrip(".") if found else None,
            message=_kept(text),
        )
    if kind is not None:
        return Eviction(kind=kind, message=_kept(text))
    if why == "Terminated" and _SHUTDOWN.search(text):
        return Eviction(kind=DisruptionKind.NODE_SHUTDOWN, message=_kept(text))
    if why in ("", "Evicted", "TerminationByKubelet"):
        parsed = parse_eviction_message(text)
        if parsed.kind is DisruptionKind.UNKNOWN and why == "Evicted" and "descheduler" in text:
            return replace(parsed, kind=DisruptionKind.API_EVICTION)
        if parsed.kind is DisruptionKind.UNKNOWN and _SHUTDOWN.search(text):
            return replace(parsed, kind=DisruptionKind.NODE_SHUTDOWN)
        return parsed
    return Eviction(kind=DisruptionKind.UNKNOWN, message=_kept(text))


def with_annotations(eviction: Eviction, annotations: object) -> Eviction:
    """Fill what the message lacked (it may have been truncated) from the kubelet's eviction
    event annotations: ``starved_resource``, ``offending_containers`` (comma-separated names),
    ``offending_containers_usage`` (same order), ``offending_pod``/``offending_pod_usage``."""
    if not isinstance(annotations, Mapping):
        return eviction
    starved = _text(annotations.get("starved_resource"))[:253] or None
    resource = eviction.resource or starved
    changes: dict[str, Any] = {"resource": resource}
    if not eviction.containers:
        names = _text(annotations.get("offending_containers")).split(",")
        usages = _text(annotations.get("offending_containers_usage")).split(",")
        changes["containers"] = tuple(
            Consumer(
                name=name.strip()[:253],
                usage=_amount(usage.strip()),
                request=None,
                resource=resource or "unknown",
            )
            for name, usage in zip(names, usages, strict=False)
            if name.strip()
        )
    if eviction.pod is None and (pod_name := _text(annotations.get("offending_pod")).strip()):
        usage = _amount(_text(annotations.get("offending_pod_usage")).strip())
        changes["pod"] = Consumer(pod_name[:253], usage, None, resource or "unknown", "pod")
    if eviction.kind is DisruptionKind.UNKNOWN and starved:
        changes["kind"] = DisruptionKind.NODE_PRESSURE
    return replace(eviction, **changes)


def pod_disruption(pod: objects.Body) -> Eviction | None:
    """How ``pod`` was disrupted, from ``status`` (phase, reason, message) and its
    ``DisruptionTarget`` condition; None when it shows no disruption. Never raises."""
    status = objects.get_map(pod, "status")
    phase = status.get("phase")
    reason = status.get("reason")
    message = status.get("message")
    target: Mapping[str, Any] = {}
    for condition in objects.get_list(status, "conditions"):
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "DisruptionTarget"
            and condition.get("status") == "True"
        ):
            target = condition
    if phase == "Failed" and reason == "Evicted":
        return classify(
            "Evicted", message if isinstance(message, str) and message else target.get("message")
        )
    if target:
        return classify(target.get("reason"), target.get("message"))
    if phase == "Failed" and reason in ("Terminated", "NodeShutdown"):
        found = classify(reason, message)
        return found if found.kind is DisruptionKind.NODE_SHUTDOWN else None
    return None
