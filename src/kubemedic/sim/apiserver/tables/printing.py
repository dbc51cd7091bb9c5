"""Server-side printing of built-in kinds: the cells of each row, as ``printers.go`` fills them.

``kubectl get`` does not format objects itself: the server decides a pod's STATUS
(``CrashLoopBackOff``, ``Init:0/1``, ``Terminating``, ``Completed``), its READY count (sidecars
included), its RESTARTS (``5 (3m ago)``), a node's roles, a Service's EXTERNAL-IP
(``<pending>`` for a LoadBalancer without ingress) and PORT(S), and a workload's containers,
images and selector (:func:`rows`). Rows follow the column definitions of
:mod:`kubemedic.sim.apiserver.tables.columns`, wide variant included. A finished pod's row carries
the ``Completed`` row condition, as the real printer marks it.

Objects are the stored ``v1`` JSON. Where the server's storage would have defaulted a field the
emulator may lack (``spec.replicas``, a Service's ``clusterIPs``/``type``/port ``protocol``), the
default is assumed. Events may be core-shaped or ``events.k8s.io``-shaped; both print alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from kubemedic.sim.apiserver.tables import aging
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.selecting import LabelSelector

__all__ = ["dig", "rows"]

Obj = Mapping[str, Any]
Row = dict[str, Any]


def dig(obj: Any, *path: str) -> Any:
    """``obj[path[0]][path[1]]...``, None where a step is missing or not a mapping."""
    for part in path:
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _containers(workload_spec: Any) -> list[str]:
    """``layoutContainerCells`` of a workload's pod template: names, images."""
    containers = dig(workload_spec, "template", "spec", "containers") or []
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
    except errors.StatusError:
        return "<error>"


def _int_or_string(value: Any) -> str:
    return "N/A" if value is None else str(value)


def _restartable(container: Any) -> bool:
    return isinstance(container, Mapping) and container.get("restartPolicy") == "Always"


def _condition(status: Any, kind: str) -> Any:
    return next((c for c in dig(status, "conditions") or [] if c.get("type") == kind), None)


def _later(current: datetime | None, last_state: Any) -> datetime | None:
    finished = aging.parse_time(dig(last_state, "terminated", "finishedAt"))
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
        terminated, waiting = dig(cs, "state", "terminated"), dig(cs, "state", "waiting")
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
    if not initializing or dig(_condition(status, "Initialized"), "status") == "True":
        restarts, last_restart = sidecar_restarts, last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            restarts += _int(cs.get("restartCount"))
            last_restart = _later(last_restart, cs.get("lastState"))
            terminated, waiting = dig(cs, "state", "terminated"), dig(cs, "state", "waiting")
            if waiting is not None and waiting.get("reason"):
                reason = str(waiting["reason"])
            elif terminated is not None and terminated.get("reason"):
                reason = str(terminated["reason"])
            elif terminated is not None:
                signal = _int(terminated.get("signal"))
                code = _int(terminated.get("exitCode"))
                reason = f"Signal:{signal}" if signal else f"ExitCode:{code}"
            elif cs.get("ready") and dig(cs, "state", "running") is not None:
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            pod_ready = dig(_condition(status, "Ready"), "status") == "True"
            reason = "Running" if pod_ready else "NotReady"
    deleting = dig(pod, "metadata", "deletionTimestamp") is not None
    if deleting and status.get("reason") == "NodeLost":
        reason = "Unknown"
    elif deleting and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"
    shown = str(restarts)
    if restarts and last_restart is not None:
        shown = f"{restarts} ({aging.human_duration(now - last_restart)} ago)"
    pod_ips = status.get("podIPs") or []
    pod_ip = status.get("podIP") or (pod_ips[0].get("ip") if pod_ips else "") or "<none>"
    gates = spec.get("readinessGates") or []
    readiness = "<none>"
    if gates:
        true = sum(
            1 for g in gates if dig(_condition(status, g.get("conditionType")), "status") == "True"
        )
        readiness = f"{true}/{len(gates)}"
    row: Row = {
        "cells": [
            dig(pod, "metadata", "name") or "",
            f"{ready}/{total}",
            reason,
            shown,
            aging.since(dig(pod, "metadata", "creationTimestamp"), now),
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
    for key, value in (dig(node, "metadata", "labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key != "node-role.kubernetes.io/":
            roles.add(key.removeprefix("node-role.kubernetes.io/"))
        elif key == "kubernetes.io/role" and value:
            roles.add(str(value))
    info = status.get("nodeInfo") or {}
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a.get("address") for a in addresses if a.get("type") == kind), "<none>")

    return [
        dig(node, "metadata", "name") or "",
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        aging.since(dig(node, "metadata", "creationTimestamp"), now),
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
        ingress = dig(svc, "status", "loadBalancer", "ingress") or []
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
        dig(svc, "metadata", "name") or "",
        kind,
        cluster_ips[0] if cluster_ips else "<none>",
        shown,
        ",".join(ports) or "<none>",
        aging.since(dig(svc, "metadata", "creationTimestamp"), now),
        _format_labels(spec.get("selector")),
    ]


def _event_cells(event: Obj, now: datetime) -> list[Any]:
    def field(core: str, events_v1: str) -> Any:
        return event.get(core) if event.get(core) is not None else event.get(events_v1)

    first = aging.since(field("firstTimestamp", "deprecatedFirstTimestamp"), now)
    if aging.parse_time(field("firstTimestamp", "deprecatedFirstTimestamp")) is None:
        first = aging.since(event.get("eventTime"), now)
    last = aging.since(field("lastTimestamp", "deprecatedLastTimestamp"), now)
    if aging.parse_time(field("lastTimestamp", "deprecatedLastTimestamp")) is None:
        last = first
    count = _int(field("count", "deprecatedCount"))
    series = event.get("series")
    if series is not None:
        last, count = aging.since(series.get("lastObservedTime"), now), _int(series.get("count"))
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
        dig(event, "metadata", "name") or "",
    ]


def _simple(fn: Callable[[Obj], list[Any]]) -> Callable[[Obj, datetime], list[Any]]:
    """Rows of ``name, <fn cells>, age``."""

    def cells(obj: Obj, now: datetime) -> list[Any]:
        name, age = _meta_cells(obj, now)
        return [name, *fn(obj), age]

    return cells


def _meta_cells(obj: Obj, now: datetime) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name", "")), aging.since(meta.get("creationTimestamp"), now)


def _deployment_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    try:  # printDeployment prints the selector unformatted: "" for none
        selector = str(LabelSelector.from_object(spec.get("selector")))
    except errors.StatusError:
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
        dig(ds, "metadata", "name") or "",
        *(_int(status.get(c)) for c in counts),
        _format_labels(dig(spec, "template", "spec", "nodeSelector")),
        aging.since(dig(ds, "metadata", "creationTimestamp"), now),
        *_containers(spec),
        _format_selector(spec.get("selector")),
    ]


def _replication_controller_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    counts = [_int(spec.get("replicas", 1)), _int(status.get("replicas"))]
    counts.append(_int(status.get("readyReplicas")))
    return [name, *counts, age, *_containers(spec), _format_labels(spec.get("selector"))]


def _job_status(job: Obj) -> str:
    """printJob's STATUS: the first of its conditions that holds, else Running."""
    held = {
        c.get("type")
        for c in dig(job, "status", "conditions") or []
        if isinstance(c, Mapping) and c.get("status") == "True"
    }
    if "Complete" in held:
        return "Complete"
    if "Failed" in held:
        return "Failed"
    if dig(job, "metadata", "deletionTimestamp"):
        return "Terminating"
    for condition in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if condition in held:
            return condition
    return "Running"


def _job_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    succeeded = _int(status.get("succeeded"))
    if spec.get("completions") is not None:
        completions = f"{succeeded}/{_int(spec['completions'])}"
    elif _int(spec.get("parallelism")) > 1:
        completions = f"{succeeded}/1 of {_int(spec['parallelism'])}"
    else:
        completions = f"{succeeded}/1"
    started = aging.parse_time(status.get("startTime"))
    finished = aging.parse_time(status.get("completionTime"))
    duration = "" if started is None else aging.human_duration((finished or now) - started)
    selector = _format_selector(spec.get("selector"))
    return [name, _job_status(obj), completions, duration, age, *_containers(spec), selector]


def _cronjob_cells(obj: Obj, now: datetime) -> list[Any]:
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    name, age = _meta_cells(obj, now)
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    job_spec = dig(spec, "jobTemplate", "spec") or {}
    return [
        name,
        spec.get("schedule", ""),
        spec.get("timeZone") or "<none>",
        "<unset>" if suspend is None else str(bool(suspend)),
        len(status.get("active") or []),
        aging.since(last, now) if last else "<none>",
        age,
        *_containers(job_spec),
        _format_selector(job_spec.get("selector")),
    ]


def _priority_class_cells(obj: Obj, now: datetime) -> list[Any]:
    name, age = _meta_cells(obj, now)
    value, default = _int(obj.get("value")), bool(obj.get("globalDefault"))
    return [name, value, default, age, obj.get("preemptionPolicy") or ""]


_PRINTERS: dict[tuple[str, str], Callable[[Obj, datetime], list[Any]]] = {
    ("", "nodes"): _node_cells,
    ("", "services"): _service_cells,
    ("", "events"): _event_cells,
    ("events.k8s.io", "events"): _event_cells,
    ("apps", "deployments"): _deployment_cells,
    ("apps", "statefulsets"): _statefulset_cells,
    ("apps", "replicasets"): _replicaset_cells,
    ("apps", "daemonsets"): _daemonset_cells,
    ("", "replicationcontrollers"): _replication_controller_cells,
    ("batch", "jobs"): _job_cells,
    ("batch", "cronjobs"): _cronjob_cells,
    ("scheduling.k8s.io", "priorityclasses"): _priority_class_cells,
    ("", "namespaces"): _simple(lambda o: [dig(o, "status", "phase") or ""]),
    ("", "configmaps"): _simple(
        lambda o: [len(o.get("data") or {}) + len(o.get("binaryData") or {})]
    ),
    ("", "secrets"): _simple(lambda o: [o.get("type", ""), len(o.get("data") or {})]),
    ("", "serviceaccounts"): _simple(lambda o: [len(o.get("secrets") or [])]),
    ("policy", "poddisruptionbudgets"): _simple(
        lambda o: [
            _int_or_string(dig(o, "spec", "minAvailable")),
            _int_or_string(dig(o, "spec", "maxUnavailable")),
            _int(dig(o, "status", "disruptionsAllowed")),
        ]
    ),
    ("coordination.k8s.io", "leases"): _simple(lambda o: [dig(o, "spec", "holderIdentity") or ""]),
}


def rows(
    group: str, resource_plural: str, objects: Sequence[Obj], *, now: datetime
) -> list[Row] | None:
    """The rows of ``objects`` by the resource's built-in printer, None when it has none."""
    if (group, resource_plural) == ("", "pods"):
        return [_pod_row(o, now) for o in objects]
    printer = _PRINTERS.get((group, resource_plural))
    if printer is None:
        return None
    return [{"cells": printer(o, now)} for o in objects]
