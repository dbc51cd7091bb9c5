"""``oom-killed``: containers the kernel killed for memory, and OOM kills the nodes reported.

**Containers.** The kubelet reports a container the kernel OOM-killed inside its cgroup as
``terminated`` with ``reason: OOMKilled`` (exit code 137), in ``state`` while it waits to restart
and in ``lastState`` once it runs again, so a restarted container still shows its last kill after
the events have expired. Exit code 137 means SIGKILL, nothing more: with ``reason: Error`` and a
memory limit set, an OOM kill is *likely* (the runtime did not attribute it, e.g. a child process
was killed and the main one died after), but the kubelet also SIGKILLs a container that ignores
SIGTERM after a failed liveness probe; those are labelled ``likelyOOM`` and skipped when a
``Killing`` event says the container failed its liveness probe. Exit codes 0, 1, 143 are not OOM.

One finding per workload container (all its pods listed), so a Deployment of twelve replicas that
all hit the same limit is one problem, not twelve.

**Nodes.** node-problem-detector's kernel monitor emits ``OOMKilling`` events on the Node
(``Memory cgroup out of memory: Killed process 1234 (java) total-vm:...`` for a cgroup limit,
``Out of memory: Killed process ...`` when the whole node ran out); the kubelet's OOM watcher emits
``SystemOOM`` (``System OOM encountered, victim process: java, pid: 1234``) for kills it does not
attribute to a container. One finding per node.

Evidence keys (containers): ``pod`` (``namespace/name`` of the latest kill), ``owner`` (``Kind
ns/name``), ``container``, ``node``, ``restartCount`` (latest pod) and ``maxRestartCount``,
``exitCode``, ``reason``, ``finishedAt`` (RFC 3339), ``memoryLimit``, ``memoryRequest`` (canonical
quantities or None), ``usage`` (current working set from PodMetrics, or None) and
``usagePercentOfLimit``, ``likelyOOM`` (True when no kill was confirmed as OOMKilled), ``kills``
(terminations seen) and ``pods`` (``[{pod, node, restartCount, exitCode, reason, finishedAt,
likelyOOM}]``, ``pod`` as ``namespace/name``, at most 20), ``critical`` (why a pod is critical, or
None).

Evidence keys (nodes): ``node``, ``pool``, ``events`` (sum of event counts), ``global`` (the
node itself ran out), ``victims`` (``[{process, pid, reason, cgroup, count, lastSeen}]``),
``criticalVictims`` (node components killed), ``oomKilledContainers`` (``ns/pod/container`` on
this node reported OOMKilled).

Severity (containers): warning; critical when a pod is critical under ``critical`` (the shared
``CriticalPodPolicy``: hub/proxy/ingress/DNS role labels, a ``system-*`` PriorityClass, priority
>= 1e9) or a restart count reached ``critical_restarts`` (5: the workload is in a kill loop, not a
one-off spike). Severity (nodes): info when only cgroup kills were reported (the container
findings tell that story), warning for a node-wide OOM, critical when a node component
(``critical_processes``: kubelet, container runtime, ...) was the victim.

Cause: ``oom:<ns>/<Kind>/<owner>/<container>`` for containers, ``oom:node@<pool>`` for nodes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.checks import criticality
from kubemedic.checks.criticality import CriticalPodPolicy
from kubemedic.checks.findings import Finding, Severity, cause_part
from kubemedic.checks.registry import check
from kubemedic.model import containers, objects, owners, placement, resources
from kubemedic.model.events import EventRecord, liveness_killed_container
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity, QuantityError, parse_quantity
from kubemedic.model.view import ClusterView

__all__ = ["OomConfig", "oom_killed"]

SIGKILL_EXIT = 137
_MAX_LISTED = 20
_SYSTEM_OOM = re.compile(r"victim process: (?P<process>.{0,64}?), pid: (?P<pid>\d{1,10})")
_KERNEL_OOM = re.compile(r"Kill(?:ed)? process (?P<pid>\d{1,10}) \((?P<process>[^)]{0,64})\)")


@dataclass(frozen=True)
class OomConfig:
    critical_restarts: int = 5
    """A restart count at which an OOM-killed container is in a kill loop: critical."""
    critical: CriticalPodPolicy = field(default_factory=CriticalPodPolicy)
    """Which pods are critical (``criticality.criticality_of``)."""
    include_likely: bool = True
    """Report exit code 137 with a memory limit (no OOMKilled reason) as ``likelyOOM``."""
    critical_processes: tuple[str, ...] = (
        "kubelet",
        "containerd",
        "containerd-shim",
        "dockerd",
        "crio",
        "conmon",
        "kube-proxy",
        "systemd",
        "systemd-journal",
    )
    """Node components whose OOM kill makes a node finding critical (kernel comm names)."""


@dataclass
class _Kill:
    body: Body
    pod: str
    node: str | None
    restart_count: int
    exit_code: int | None
    reason: str
    finished: datetime | None
    likely: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "node": self.node,
            "restartCount": self.restart_count,
            "exitCode": self.exit_code,
            "reason": self.reason,
            "finishedAt": objects.format_time(self.finished) if self.finished else None,
            "likelyOOM": self.likely,
        }


@dataclass
class _Group:
    owner: ObjectRef
    container: str
    kills: list[_Kill] = field(default_factory=list)
    critical: str | None = None


@check("oom-killed", OomConfig)
def oom_killed(view: ClusterView, config: OomConfig) -> list[Finding]:
    """Containers OOM-killed (or SIGKILLed under a memory limit) and node OOM events."""
    groups: dict[tuple[ObjectRef, str], _Group] = {}
    on_node: dict[str, list[str]] = {}
    for pod in view.pods:
        for name, kill in _kills(view, pod, include_likely=config.include_likely):
            owner = owners.workload_of(view, pod)
            group = groups.setdefault((owner, name), _Group(owner=owner, container=name))
            group.kills.append(kill)
            why = criticality.criticality_of(view, pod, policy=config.critical)
            group.critical = group.critical or (why.reason if why else None)
            if kill.node and not kill.likely:
                ref = objects.ref_of(pod)
                on_node.setdefault(kill.node, []).append(f"{ref.key}/{name}")
    findings = [_container_finding(view, group, config) for group in groups.values()]
    findings.extend(_node_findings(view, config, on_node))
    findings.sort(key=lambda finding: finding.sort_key)
    return findings


def _liveness_killed(view: ClusterView, pod: Body) -> set[str]:
    """Containers of ``pod`` the kubelet killed after failed liveness probes."""
    killed = (liveness_killed_container(event) for event in view.events_about(objects.ref_of(pod)))
    return {name for name in killed if name is not None}


def _kills(view: ClusterView, pod: Body, *, include_likely: bool) -> list[tuple[str, _Kill]]:
    """Every OOM (or likely OOM) termination in the pod's container statuses."""
    status = objects.get_map(pod, "status")
    statuses = [
        *objects.get_list(status, "initContainerStatuses"),
        *objects.get_list(status, "containerStatuses"),
    ]
    if not statuses:
        return []
    node = objects.get_str(pod, "spec", "nodeName")
    liveness: set[str] | None = None
    found: list[tuple[str, _Kill]] = []
    for container_status in statuses:
        name = objects.get_str(container_status, "name") or "?"
        for where in ("state", "lastState"):
            terminated = objects.get_map(container_status, where, "terminated")
            reason = objects.get_str(terminated, "reason") or ""
            exit_code = terminated.get("exitCode")
            exit_code = (
                exit_code
                if isinstance(exit_code, int) and not isinstance(exit_code, bool)
                else None
            )
            likely = False
            if reason != "OOMKilled":
                if not include_likely or exit_code != SIGKILL_EXIT or reason not in ("", "Error"):
                    continue
                if _memory(pod, name, "limits") is None:
                    continue
                if liveness is None:
                    liveness = _liveness_killed(view, pod)
                if name in liveness:
                    continue
                likely = True
            kill = _Kill(
                body=pod,
                pod=owners.pod_key(pod),
                node=node,
                restart_count=containers.restarts(container_status),
                exit_code=exit_code,
                reason=reason or "Error",
                finished=objects.parse_time(terminated.get("finishedAt")),
                likely=likely,
            )
            found.append((name, kill))
    return found


def _memory(pod: Body, name: str, field_name: str) -> Quantity | None:
    """The container's memory request/limit, else the pod-level one (Kubernetes 1.32+)."""
    ref = objects.ref_of(pod)
    spec = containers.spec(pod, name)
    where = f"Pod {ref.key} spec.containers[name={name}].resources.{field_name}"
    own = resources.container_resources(spec, field_name, where=where).get("memory")
    if own is not None:
        return own
    pod_level = objects.get_map(pod, "spec", "resources", field_name).get("memory")
    if pod_level is None:
        return None
    return parse_quantity(pod_level, where=f"Pod {ref.key} spec.resources.{field_name}.memory")


def _usage(view: ClusterView, pod: Body, name: str) -> Quantity | None:
    ref = objects.ref_of(pod)
    metrics = view.pod_metrics.get((ref.namespace or "", ref.name))
    for entry in objects.get_list(metrics, "containers"):
        if objects.get_str(entry, "name") == name:
            raw = objects.get_map(entry, "usage").get("memory")
            try:
                return None if raw is None else parse_quantity(raw)
            except QuantityError:
                return None  # metrics are context; a bad sample must not hide the kill
    return None


def _container_finding(view: ClusterView, group: _Group, config: OomConfig) -> Finding:
    latest = max(group.kills, key=lambda k: (k.finished is not None, k.finished or view.now))
    pod = latest.body
    times = [kill.finished for kill in group.kills if kill.finished is not None]
    likely = all(kill.likely for kill in group.kills)
    max_restarts = max(kill.restart_count for kill in group.kills)
    limit = _memory(pod, group.container, "limits")
    request = _memory(pod, group.container, "requests")
    usage = _usage(view, pod, group.container)
    percent = None
    if usage is not None and limit is not None and limit.value > 0:
        percent = round(float(usage.value / limit.value) * 100, 1)
    pods = {kill.pod for kill in group.kills}
    critical = group.critical is not None or max_restarts >= config.critical_restarts
    owner = owners.owner_text(group.owner)
    limit_text = f"memory limit {limit.human()}" if limit else "no memory limit"
    if likely:
        what = f"was killed by SIGKILL (exit code 137) {len(group.kills)} time(s) with a"
        message = (
            f"Container {group.container} of {owner} {what} {limit_text}, likely OOM-killed, "
            f"across {len(pods)} pod(s); {latest.pod} has restarted {_times(latest.restart_count)}."
        )
    else:
        message = (
            f"Container {group.container} of {owner} was OOM-killed {len(group.kills)} time(s) "
            f"across {len(pods)} pod(s) ({limit_text}, request "
            f"{request.human() if request else 'none'}); {latest.pod} has restarted "
            f"{_times(latest.restart_count)}."
        )
    ordered = sorted(group.kills, key=lambda k: k.finished or view.now, reverse=True)
    evidence = {
        "pod": latest.pod,
        "owner": owners.owner_text(group.owner),
        "container": group.container,
        "node": latest.node,
        "restartCount": latest.restart_count,
        "maxRestartCount": max_restarts,
        "exitCode": latest.exit_code,
        "reason": latest.reason,
        "finishedAt": objects.format_time(latest.finished) if latest.finished else None,
        "memoryLimit": str(limit) if limit else None,
        "memoryRequest": str(request) if request else None,
        "usage": str(usage) if usage else None,
        "usagePercentOfLimit": percent,
        "likelyOOM": likely,
        "kills": len(group.kills),
        "pods": [kill.to_json() for kill in ordered[:_MAX_LISTED]],
        "critical": group.critical,
    }
    return Finding(
        check="oom-killed",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        object=group.owner,
        message=message,
        cause=f"oom:{cause_part(owners.cause_key(group.owner))}/{cause_part(group.container)}",
        first_seen=min(times, default=view.now),
        last_seen=max(times, default=view.now),
        evidence=evidence,
    )


def _times(count: int) -> str:
    return "1 time" if count == 1 else f"{count} times"


def _victim(event: EventRecord) -> dict[str, Any]:
    if event.reason == "SystemOOM":
        match = _SYSTEM_OOM.search(event.message)
        cgroup = False
    else:
        match = _KERNEL_OOM.search(event.message)
        cgroup = "memory cgroup" in event.message.lower()
    return {
        "process": match.group("process") if match else None,
        "pid": int(match.group("pid")) if match else None,
        "reason": event.reason,
        "cgroup": cgroup,
        "count": event.count,
        "lastSeen": objects.format_time(event.last_seen) if event.last_seen else None,
    }


def _node_findings(
    view: ClusterView, config: OomConfig, on_node: Mapping[str, list[str]]
) -> list[Finding]:
    by_node: dict[str, list[EventRecord]] = {}
    for event in view.events:
        if event.object_kind == "Node" and event.reason in ("OOMKilling", "SystemOOM"):
            by_node.setdefault(event.object_name, []).append(event)
    findings: list[Finding] = []
    for node, events in sorted(by_node.items()):
        victims = [_victim(event) for event in events]
        critical = sorted(
            {v["process"] for v in victims if v["process"] in config.critical_processes}
        )
        node_wide = any(not victim["cgroup"] for victim in victims)
        severity = Severity.INFO
        if critical:
            severity = Severity.CRITICAL
        elif node_wide:
            severity = Severity.WARNING
        pool = placement.pool_of(view, node)
        total = sum(event.count for event in events)
        named = sorted({str(v["process"]) for v in victims if v["process"]})
        where = f"Node {node}" + (f" (pool {pool})" if pool != node else "")
        scope = "node-wide" if node_wide else "memory-cgroup"
        message = f"{where} reported {total} {scope} OOM kill(s)" + (
            f" of {', '.join(named[:5])}." if named else "."
        )
        times = [t for e in events for t in (e.first_seen, e.last_seen) if t is not None]
        findings.append(
            Finding(
                check="oom-killed",
                severity=severity,
                object=ObjectRef(kind="Node", name=node),
                message=message,
                cause=f"oom:node@{cause_part(pool)}",
                first_seen=min(times, default=view.now),
                last_seen=max(times, default=view.now),
                evidence={
                    "node": node,
                    "pool": pool,
                    "events": total,
                    "global": node_wide,
                    "victims": victims[:_MAX_LISTED],
                    "criticalVictims": critical,
                    "oomKilledContainers": sorted(on_node.get(node, []))[:_MAX_LISTED],
                },
            )
        )
    return findings
