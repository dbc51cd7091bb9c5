"""Server-side printing: the ``meta.k8s.io`` ``Table`` the real API server answers to kubectl.

``kubectl get`` does not format objects itself. It sends ``Accept:
application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,
application/json`` and prints the columns and cells the server computed
(``pkg/printers/internalversion/printers.go``), so a pod's STATUS (``CrashLoopBackOff``,
``Init:0/1``, ``Terminating``), its RESTARTS (``5 (3m ago)``) and every AGE are decided here.
The server always renders the wide variant (``GenerateOptions{Wide: true}``); the
``priority: 1`` columns are the ones kubectl hides without ``-o wide``.

Each row carries ``object``: by default (``includeObject`` absent or ``Metadata``) a
``PartialObjectMetadata`` holding the whole ``metadata`` (kubectl reads labels and namespace from
it), the full object for ``Object`` (kubectl asks for it with ``--sort-by``), ``null`` for
``None``. The table's ``metadata`` is the list's ``resourceVersion``/``continue`` (the object's
``resourceVersion`` for a single GET). On a watch the first event carries the column
definitions and later ones omit them (``no_headers``).

Kinds without a built-in printer are rendered the way the CRD handler renders a custom resource
without ``additionalPrinterColumns``: ``Name`` and an ``Age`` column of type ``date``, computed
from ``.metadata.creationTimestamp`` (``printer_columns`` passes a CRD's own columns; simple
JSONPaths with ``[n]`` and ``[?(@.k=="v")]`` are supported). ``metrics.k8s.io`` follows
metrics-server's table (usage per resource, ``Window``). Column descriptions come from the
official OpenAPI documents (the same doc comments the Go ``SwaggerDoc`` holds; the few columns
documented from retired ``extensions/v1beta1`` types use the ``apps/v1`` text).

Objects are the stored ``v1`` JSON. Where the server's storage would have defaulted a field the
emulator may lack (``spec.replicas``, a Service's ``clusterIPs``/``type``/port ``protocol``), the
default is assumed. Events may be core-shaped or ``events.k8s.io``-shaped; both print alike.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from kubemedic.model.quantities import Quantity, QuantityError
from kubemedic.sim import errors, schema
from kubemedic.sim.selecting import LabelSelector, go_quote

__all__ = [
    "accepts_table",
    "human_duration",
    "include_object_from",
    "negotiate_table",
    "table",
]

Obj = Mapping[str, Any]
Row = dict[str, Any]

# ---------------------------------------------------------------- negotiation


def negotiate_table(accept: str | None) -> str | None:
    """The ``apiVersion`` of the Table to answer (``meta.k8s.io/v1`` or ``/v1beta1``), or None
    when the first acceptable ``Accept`` clause (by ``q``, then order) is not a Table."""
    clauses: list[tuple[float, int, str, dict[str, str]]] = []
    for index, raw in enumerate((accept or "").split(",")):
        kind, *params = (part.strip() for part in raw.split(";"))
        options = dict(p.partition("=")[::2] for p in params)
        try:
            q = float(options.pop("q", "1"))
        except ValueError:
            q = 1.0
        clauses.append((-q, index, kind.lower(), options))
    for _, _, kind, options in sorted(clauses):
        if kind not in ("application/json", "application/*", "*/*"):
            continue
        if "as" not in options:
            return None
        table = options["as"] == "Table" and options.get("g") == "meta.k8s.io"
        if table and options.get("v") in ("v1", "v1beta1"):
            return f"meta.k8s.io/{options['v']}"
    return None


def accepts_table(accept: str | None) -> bool:
    """True when the request asks for server-side printing."""
    return negotiate_table(accept) is not None


def include_object_from(query: Mapping[str, str]) -> str:
    """``includeObject`` from the query: ``Metadata`` (default), ``Object`` or ``None``."""
    value = query.get("includeObject", "")
    if value in ("", "Metadata"):
        return "Metadata"
    if value in ("Object", "None"):
        return value
    raise errors.bad_request(f"unrecognized includeObject value: {go_quote(value)}")


# ---------------------------------------------------------------- time


def human_duration(delta: timedelta) -> str:
    """``duration.HumanDuration``: ``45s``, ``5m30s``, ``2d3h``, ``3y45d``."""
    micros = delta // timedelta(microseconds=1)
    seconds = int(micros / 1_000_000) if micros >= 0 else -((-micros) // 1_000_000)
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        return f"{minutes}m" if seconds % 60 == 0 else f"{minutes}m{seconds % 60}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = minutes // 60
    if hours < 8:
        return f"{hours}h" if minutes % 60 == 0 else f"{hours}h{minutes % 60}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d" if hours % 24 == 0 else f"{hours // 24}d{hours % 24}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if days == 0 else f"{hours // 24 // 365}y{days}d"
    return f"{hours // 24 // 365}y"


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _since(value: Any, now: datetime) -> str:
    """``translateTimestampSince``: ``<unknown>`` for a zero/absent time."""
    when = _time(value)
    return "<unknown>" if when is None else human_duration(now - when)


# ---------------------------------------------------------------- columns

_APPS, _PARTS = ("Deployment", "ReplicaSet", "DaemonSet"), ("Spec", "Status")
_DEFINITIONS = {
    "ObjectMeta": "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
    "LeaseSpec": "io.k8s.api.coordination.v1.LeaseSpec",
    **{f"{kind}{part}": f"io.k8s.api.apps.v1.{kind}{part}" for kind in _APPS for part in _PARTS},
}


@functools.cache
def _doc(ref: str) -> str:
    """The OpenAPI description of ``Type.field`` (core/v1 unless listed), '' when unknown."""
    type_name, field = ref.split(".")
    full = _DEFINITIONS.get(type_name, f"io.k8s.api.core.v1.{type_name}")
    body = schema.definitions().raw.get(full) or {}
    return str((body.get("properties") or {}).get(field, {}).get("description", ""))


def _col(name: str, kind: str, doc: str, priority: int = 0, fmt: str = "") -> dict[str, Any]:
    """A ``TableColumnDefinition``; ``doc`` is literal text or ``@Type.field``."""
    text = _doc(doc[1:]) if doc.startswith("@") else doc
    return {"name": name, "type": kind, "format": fmt, "description": text, "priority": priority}


_S, _I = "string", "integer"
_NAME = ("Name", _S, "@ObjectMeta.name", 0, "name")
_AGE = ("Age", _S, "@ObjectMeta.creationTimestamp")
_CONTAINERS = ("Containers", _S, "Names of each container in the template.", 1)
_IMAGES = ("Images", _S, "Images referenced by each container in the template.", 1)
_READY = ("Ready", _S, "Number of the pod with ready state")
_Spec = tuple[Any, ...]
#: printers.go's column definitions, per (group, resource).
_SPECS: dict[tuple[str, str], tuple[_Spec, ...]] = {
    ("", "pods"): (
        _NAME,
        ("Ready", _S, "The aggregate readiness state of this pod for accepting traffic."),
        ("Status", _S, "The aggregate status of the containers in this pod."),
        (
            "Restarts",
            _S,
            "The number of times the containers in this pod have been restarted "
            "and when the last container in this pod has restarted.",
        ),
        _AGE,
        ("IP", _S, "@PodStatus.podIP", 1),
        ("Node", _S, "@PodSpec.nodeName", 1),
        ("Nominated Node", _S, "@PodStatus.nominatedNodeName", 1),
        ("Readiness Gates", _S, "@PodSpec.readinessGates", 1),
    ),
    ("", "nodes"): (
        _NAME,
        ("Status", _S, "The status of the node"),
        ("Roles", _S, "The roles of the node"),
        _AGE,
        ("Version", _S, "@NodeSystemInfo.kubeletVersion"),
        ("Internal-IP", _S, "@NodeStatus.addresses", 1),
        ("External-IP", _S, "@NodeStatus.addresses", 1),
        ("OS-Image", _S, "@NodeSystemInfo.osImage", 1),
        ("Kernel-Version", _S, "@NodeSystemInfo.kernelVersion", 1),
        ("Container-Runtime", _S, "@NodeSystemInfo.containerRuntimeVersion", 1),
    ),
    ("apps", "deployments"): (
        _NAME,
        _READY,
        ("Up-to-date", _S, "@DeploymentStatus.updatedReplicas"),
        ("Available", _S, "@DeploymentStatus.availableReplicas"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@DeploymentSpec.selector", 1),
    ),
    ("apps", "replicasets"): (
        _NAME,
        ("Desired", _I, "@ReplicaSetSpec.replicas"),
        ("Current", _I, "@ReplicaSetStatus.replicas"),
        ("Ready", _I, "@ReplicaSetStatus.readyReplicas"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@ReplicaSetSpec.selector", 1),
    ),
    ("apps", "statefulsets"): (_NAME, _READY, _AGE, _CONTAINERS, _IMAGES),
    ("apps", "daemonsets"): (
        _NAME,
        ("Desired", _I, "@DaemonSetStatus.desiredNumberScheduled"),
        ("Current", _I, "@DaemonSetStatus.currentNumberScheduled"),
        ("Ready", _I, "@DaemonSetStatus.numberReady"),
        ("Up-to-date", _I, "@DaemonSetStatus.updatedNumberScheduled"),
        ("Available", _I, "@DaemonSetStatus.numberAvailable"),
        ("Node Selector", _S, "@PodSpec.nodeSelector"),
        _AGE,
        _CONTAINERS,
        _IMAGES,
        ("Selector", _S, "@DaemonSetSpec.selector", 1),
    ),
    ("", "services"): (
        _NAME,
        ("Type", _S, "@ServiceSpec.type"),
        ("Cluster-IP", _S, "@ServiceSpec.clusterIP"),
        ("External-IP", _S, "@ServiceSpec.externalIPs"),
        ("Port(s)", _S, "@ServiceSpec.ports"),
        _AGE,
        ("Selector", _S, "@ServiceSpec.selector", 1),
    ),
    ("", "events"): (
        ("Last Seen", _S, "@Event.lastTimestamp"),
        ("Type", _S, "@Event.type"),
        ("Reason", _S, "@Event.reason"),
        ("Object", _S, "@Event.involvedObject"),
        ("Subobject", _S, "@ObjectReference.fieldPath", 1),
        ("Source", _S, "@Event.source", 1),
        ("Message", _S, "@Event.message"),
        ("First Seen", _S, "@Event.firstTimestamp", 1),
        ("Count", _S, "@Event.count", 1),
        ("Name", _S, "@ObjectMeta.name", 1, "name"),
    ),
    ("", "namespaces"): (_NAME, ("Status", _S, "The status of the namespace"), _AGE),
    ("", "configmaps"): (_NAME, ("Data", _S, "@ConfigMap.data"), _AGE),
    ("", "secrets"): (_NAME, ("Type", _S, "@Secret.type"), ("Data", _S, "@Secret.data"), _AGE),
    ("", "serviceaccounts"): (_NAME, ("Secrets", _S, "@ServiceAccount.secrets"), _AGE),
    ("policy", "poddisruptionbudgets"): (
        _NAME,
        ("Min Available", _S, "The minimum number of pods that must be available."),
        ("Max Unavailable", _S, "The maximum number of pods that may be unavailable."),
        (
            "Allowed Disruptions",
            _I,
            "Calculated number of pods that may be disrupted at this time.",
        ),
        _AGE,
    ),
    ("coordination.k8s.io", "leases"): (_NAME, ("Holder", _S, "@LeaseSpec.holderIdentity"), _AGE),
}
_SPECS[("events.k8s.io", "events")] = _SPECS[("", "events")]


@functools.cache
def _columns(key: tuple[str, str]) -> tuple[dict[str, Any], ...]:
    return tuple(_col(*spec) for spec in _SPECS.get(key, ()))


# ---------------------------------------------------------------- rows


def _get(obj: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _containers(workload_spec: Any) -> list[str]:
    """``layoutContainerCells`` of a workload's pod template: names, images."""
    containers = _get(workload_spec, "template", "spec", "containers") or []
    names = ",".join(str(c.get("name", "")) for c in containers)
    images = ",".join(str(c.get("image", "")) for c in containers)
    return [names, images]


def _format_labels(labels: Any) -> str:
    """``labels.FormatLabels``."""
    return str(LabelSelector.from_set(labels or {})) or "<none>"


def _format_selector(selector: Any) -> str:
    """``metav1.FormatLabelSelector``."""
    try:
        return str(LabelSelector.from_object(selector)) or "<none>"
    except errors.ApiError:
        return "<error>"


def _int_or_string(value: Any) -> str:
    return "N/A" if value is None else str(value)


def _restartable(container: Any) -> bool:
    return isinstance(container, Mapping) and container.get("restartPolicy") == "Always"


def _condition(status: Any, kind: str) -> Any:
    return next((c for c in _get(status, "conditions") or [] if c.get("type") == kind), None)


def _later(current: datetime | None, last_state: Any) -> datetime | None:
    finished = _time(_get(last_state, "terminated", "finishedAt"))
    if finished is not None and (current is None or current < finished):
        return finished
    return current


def _pod_row(pod: Obj, now: datetime) -> Row:
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    init_specs = spec.get("initContainers") or []
    by_name = {c.get("name"): c for c in init_specs}
    total = len(spec.get("containers") or []) + sum(1 for c in init_specs if _restartable(c))
    ready = restarts = sidecar_restarts = 0
    last_restart: datetime | None = None
    last_sidecar_restart: datetime | None = None
    phase = str(status.get("phase") or "")
    reason = str(status.get("reason") or phase)
    for condition in status.get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("reason") == (
            "SchedulingGated"
        ):
            reason = "SchedulingGated"
    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        restarts += _int(cs.get("restartCount"))
        last_restart = _later(last_restart, cs.get("lastState"))
        sidecar = _restartable(by_name.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += _int(cs.get("restartCount"))
            last_sidecar_restart = _later(last_sidecar_restart, cs.get("lastState"))
        terminated, waiting = _get(cs, "state", "terminated"), _get(cs, "state", "waiting")
        if terminated is not None and _int(terminated.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated is not None:
            if terminated.get("reason"):
                reason = "Init:" + str(terminated["reason"])
            elif _int(terminated.get("signal")):
                reason = f"Init:Signal:{_int(terminated.get('signal'))}"
            else:
                reason = f"Init:ExitCode:{_int(terminated.get('exitCode'))}"
        elif waiting is not None and waiting.get("reason") not in (None, "", "PodInitializing"):
            reason = "Init:" + str(waiting["reason"])
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break
    if not initializing or _get(_condition(status, "Initialized"), "status") == "True":
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += _int(cs.get("restartCount"))
            last_restart = _later(last_restart, cs.get("lastState"))
            terminated, waiting = _get(cs, "state", "terminated"), _get(cs, "state", "waiting")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif terminated is not None:
                signal = _int(terminated.get("signal"))
                code = _int(terminated.get("exitCode"))
                reason = f"Signal:{signal}" if signal else f"ExitCode:{code}"
            elif cs.get("ready") and _get(cs, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = _get(_condition(status, "Ready"), "status") == "True"
            reason = "Running" if pod_ready else "NotReady"
    deleting = _get(pod, "metadata", "deletionTimestamp") is not None
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"
    shown = str(restarts)
    if restarts and last_restart is not None:
        shown = f"{restarts} ({human_duration(now - last_restart)} ago)"
    pod_ips = status.get("podIPs") or []
    pod_ip = status.get("podIP") or (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        true = sum(
            1 for g in gates if _get(_condition(status, g.get("conditionType")), "status") == "True"
        )
        readiness = f"{true}/{len(gates)}"
    row: Row = {
        "cells": [
            _get(pod, "metadata", "name") or "",
            f"{ready}/{total}",
            reason,
            shown,
            _since(_get(pod, "metadata", "creationTimestamp"), now),
            pod_ip,
            spec.get("nodeName") or "<none>",
            status.get("nominatedNodeName") or "<none>",
            readiness,
        ]
    }
    if phase in ("Succeeded", "Failed"):
        message = (
            "The pod has completed successfully." if phase == "Succeeded" else "The pod failed."
        )
        row["conditions"] = [
            {"type": "Completed", "status": "True", "reason": phase, "message": message}
        ]
    return row


def _node_cells(node: Obj, now: datetime) -> list[Any]:
    spec, status = node.get("spec") or {}, node.get("status") or {}
    ready = _condition(status, "Ready")
    states = [] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    states = states or ["Unknown"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles: set[str] = set()
    for key, value in (_get(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key.removeprefix("node-role.kubernetes.io/"))
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a.get("address") for a in addresses if a.get("type") == kind), "<none>")

    return [
        _get(node, "metadata", "name") or "",
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        _since(_get(node, "metadata", "creationTimestamp"), now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _service_cells(svc: Obj, now: datetime) -> list[Any]:
    spec = svc.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    external = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        shown = ",".join(external) or "<none>"
    elif kind == "LoadBalancer":
        ingress = _get(svc, "status", "loadBalancer", "ingress") or []
        found = sorted({i.get("ip") or i.get("hostname") for i in ingress} - {None, ""})
        shown = ",".join([*found, *external]) or "<pending>"
    elif kind == "ExternalName":
        shown = spec.get("externalName", "")
    else:
        shown = "<unknown>"
    ports = []
    for port in spec.get("ports") or []:
        protocol = port.get("protocol") or "TCP"
        node_port = _int(port.get("nodePort"))
        middle = f":{node_port}" if node_port > 0 else ""
        ports.append(f"{_int(port.get('port'))}{middle}/{protocol}")
    return [
        _get(svc, "metadata", "name") or "",
        kind,
        cluster_ips[0] if cluster_ips else "<none>",
        shown,
        ",".join(ports) or "<none>",
        _since(_get(svc, "metadata", "creationTimestamp"), now),
        _format_labels(spec.get("selector")),
    ]


def _event_cells(event: Obj, now: datetime) -> list[Any]:
    def field(core: str, events_v1: str) -> Any:
        return event.get(core) if event.get(core) is not None else event.get(events_v1)

    first = _since(field("firstTimestamp", "deprecatedFirstTimestamp"), now)
    if _time(field("firstTimestamp", "deprecatedFirstTimestamp")) is None:
        first = _since(event.get("eventTime"), now)
    last = _since(field("lastTimestamp", "deprecatedLastTimestamp"), now)
    if _time(field("lastTimestamp", "deprecatedLastTimestamp")) is None:
        last = first
    count = _int(field("count", "deprecatedCount"))
    series = event.get("series")
    if series is not None:
        last, count = _since(series.get("lastObservedTime"), now), _int(series.get("count"))
    elif count == 0:
        count = 1
    involved = field("involvedObject", "regarding") or {}
    kind = str(involved.get("kind") or "").lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = field("source", "deprecatedSource") or {}
    component = source.get("component") or field("reportingComponent", "reportingController")
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [
        last,
        event.get("type", ""),
        event.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component or ''}, {instance}" if instance else component or "",
        str(field("message", "note") or "").strip(),
        first,
        count,
        _get(event, "metadata", "name") or "",
    ]


def _simple(fn: Callable[[Obj], list[Any]]) -> Callable[[Obj, datetime], list[Any]]:
    """Rows of ``name, <fn cells>, age``."""

    def cells(obj: Obj, now: datetime) -> list[Any]:
        name, age = _meta_cells(obj, now)
        return [name, *fn(obj), age]

    return cells


def _meta_cells(obj: Obj, now: datetime) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name", "")), _since(meta.get("creationTimestamp"), now)


def _deployment_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    try:  # printDeployment prints the selector unformatted: "" for none
        selector = str(LabelSelector.from_object(spec.get("selector")))
    except errors.ApiError:
        selector = "<invalid>"
    ready = f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas', 1))}"
    updated, available = _int(status.get("updatedReplicas")), _int(status.get("availableReplicas"))
    return [name, ready, updated, available, age, *_containers(spec), selector]


def _statefulset_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    ready = f"{_int(status.get('readyReplicas'))}/{_int(spec.get('replicas', 1))}"
    return [name, ready, age, *_containers(spec)]


def _replicaset_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    counts = [_int(spec.get("replicas", 1)), _int(status.get("replicas"))]
    counts.append(_int(status.get("readyReplicas")))
    return [name, *counts, age, *_containers(spec), _format_selector(spec.get("selector"))]


def _daemonset_cells(ds: Obj, now: datetime) -> list[Any]:
    spec, status = ds.get("spec") or {}, ds.get("status") or {}
    counts: tuple[str, ...] = ("desiredNumberScheduled", "currentNumberScheduled")
    counts += ("numberReady", "updatedNumberScheduled", "numberAvailable")
    return [
        _get(ds, "metadata", "name") or "",
        *(_int(status.get(c)) for c in counts),
        _format_labels(_get(spec, "template", "spec", "nodeSelector")),
        _since(_get(ds, "metadata", "creationTimestamp"), now),
        *_containers(spec),
        _format_selector(spec.get("selector")),
    ]


_PRINTERS: dict[tuple[str, str], Callable[[Obj, datetime], list[Any]]] = {
    ("", "nodes"): _node_cells,
    ("", "services"): _service_cells,
    ("", "events"): _event_cells,
    ("events.k8s.io", "events"): _event_cells,
    ("apps", "deployments"): _deployment_cells,
    ("apps", "statefulsets"): _statefulset_cells,
    ("apps", "replicasets"): _replicaset_cells,
    ("apps", "daemonsets"): _daemonset_cells,
    ("", "namespaces"): _simple(lambda o: [_get(o, "status", "phase") or ""]),
    ("", "configmaps"): _simple(
        lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {})]
    ),
    ("", "secrets"): _simple(lambda o: [o.get("type", ""), len(o.get("data") or {})]),
    ("", "serviceaccounts"): _simple(lambda o: [len(o.get("secrets") or [])]),
    ("policy", "poddisruptionbudgets"): _simple(
        lambda o: [
            _int_or_string(_get(o, "spec", "minAvailable")),
            _int_or_string(_get(o, "spec", "maxUnavailable")),
            _int(_get(o, "status", "disruptionsAllowed")),
        ]
    ),
    ("coordination.k8s.io", "leases"): _simple(lambda o: [_get(o, "spec", "holderIdentity") or ""]),
}

# ---------------------------------------------------------------- custom resources and metrics

_STEP = re.compile(r"""\.([^.\[]+)|\[(\d+)\]|\[\?\(@\.([\w.]+)\s*==\s*["']([^"']*)["']\)\]""")


def _jsonpath(obj: Any, path: str) -> Any:
    """The first result of a simple JSONPath (``.a.b``, ``[0]``, ``[?(@.type=="Ready")]``)."""
    for match in _STEP.finditer(path.strip().removeprefix("{").removesuffix("}")):
        name, index, key, wanted = match.groups()
        if name is not None:
            obj = obj.get(name) if isinstance(obj, Mapping) else None
        elif index is not None:
            obj = obj[int(index)] if isinstance(obj, list) and int(index) < len(obj) else None
        else:
            items = obj if isinstance(obj, list) else []
            obj = next((i for i in items if str(_jsonpath(i, "." + key)) == wanted), None)
        if obj is None:
            return None
    return obj


def _custom_cell(kind: str, value: Any, now: datetime) -> Any:
    """``cellForJSONValue`` / jsonpath printing of one CRD printer column value."""
    if value is None:
        return None
    if kind == "string":
        if isinstance(value, str):
            return value
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, dict | list):
            return json.dumps(value, sort_keys=True, separators=(",", ":"))
        return str(value)
    if kind == "integer" and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        when = _time(value)
        return "<invalid>" if when is None else human_duration(now - when)
    return None


def _custom(
    printer_columns: Sequence[Mapping[str, Any]] | None,
) -> tuple[list[dict[str, Any]], Callable[[Obj, datetime], list[Any]]]:
    columns = list(printer_columns or ())
    if not columns:
        columns = [
            {
                "name": "Age",
                "type": "date",
                "description": _doc("ObjectMeta.creationTimestamp"),
                "jsonPath": ".metadata.creationTimestamp",
            }
        ]
    definitions = [_col(*_NAME)]
    for c in columns:
        desc = c.get("description") or (
            f"Custom resource definition column (in JSONPath format): {c.get('jsonPath', '')}"
        )
        definitions.append(
            _col(
                str(c["name"]),
                str(c.get("type", "string")),
                desc,
                int(c.get("priority", 0)),
                str(c.get("format", "")),
            )
        )

    def cells(obj: Obj, now: datetime) -> list[Any]:
        values = [
            _custom_cell(str(c.get("type")), _jsonpath(obj, str(c.get("jsonPath", ""))), now)
            for c in columns
        ]
        return [_get(obj, "metadata", "name") or "", *values]

    return definitions, cells


def _metrics_table(objects: Sequence[Obj]) -> tuple[list[dict[str, Any]] | None, list[Row]]:
    """metrics-server's tables: usage per resource name (pods summed over containers)."""
    names: list[str] | None = None
    columns: list[dict[str, Any]] | None = None
    rows: list[Row] = []
    for obj in objects:
        usage: dict[str, Quantity] = {}
        if "containers" in obj:
            parts = [c.get("usage") or {} for c in obj.get("containers") or []]
        else:
            parts = [obj.get("usage") or {}]
        for part in parts:
            for key, text in part.items():
                try:
                    quantity = Quantity.parse(str(text))
                except QuantityError:
                    continue
                usage[key] = usage[key] + quantity if key in usage else quantity
        if names is None:
            names = sorted(usage)
            columns = [_col("Name", "string", "Name of the resource", fmt="name")]
            columns += [_col(n, "string", "", fmt="quantity") for n in names]
            columns.append(_col("Window", "string", "", fmt="duration"))
        cells = [_get(obj, "metadata", "name") or ""]
        cells += [usage[n].canonical() if n in usage else "0" for n in names]
        rows.append({"cells": [*cells, str(obj.get("window", "0s"))]})
    return columns, rows


# ---------------------------------------------------------------- the table


def table(
    resource_plural: str,
    group: str,
    objects: Sequence[Obj],
    *,
    now: datetime,
    include_object: str = "Metadata",
    list_meta: Mapping[str, Any],
    api_version: str = "meta.k8s.io/v1",
    no_headers: bool = False,
    printer_columns: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The ``Table`` for ``objects`` of a resource, as ``GET``/``LIST`` answer it.

    ``list_meta`` gives the list's ``resourceVersion``/``continue``/``remainingItemCount`` (the
    object's ``resourceVersion`` for a single GET); ``now`` is the server clock ages count from;
    ``api_version`` is what :func:`negotiate_table` chose; ``printer_columns`` are a CRD's
    ``additionalPrinterColumns`` (only used for kinds without a built-in printer).
    """
    key = (group, resource_plural)
    columns: Sequence[dict[str, Any]] | None
    rows: list[Row]
    if key == ("", "pods"):
        columns, rows = _columns(key), [_pod_row(o, now) for o in objects]
    elif key in _PRINTERS:
        printer = _PRINTERS[key]
        columns, rows = _columns(key), [{"cells": printer(o, now)} for o in objects]
    elif group == "metrics.k8s.io":
        columns, rows = _metrics_table(objects)
    else:
        columns, custom_cells = _custom(printer_columns)
        rows = [{"cells": custom_cells(o, now)} for o in objects]
    for obj, row in zip(objects, rows, strict=True):
        if include_object == "Object":
            row["object"] = obj
        elif include_object == "None":
            row["object"] = None
        else:
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": obj.get("metadata") or {},
            }
    meta = {
        k: list_meta[k]
        for k in ("resourceVersion", "continue", "remainingItemCount")
        if list_meta.get(k) not in (None, "")
    }
    return {
        "kind": "Table",
        "apiVersion": api_version,
        "metadata": meta,
        "columnDefinitions": None if no_headers or columns is None else list(columns),
        "rows": rows if rows or group != "metrics.k8s.io" else None,
    }
