"""``probe-restarts``: containers the kubelet keeps restarting because their liveness probe fails.

The kubelet's prober records a Warning ``Unhealthy`` event on the pod for every failed probe
(``Liveness probe failed: <output>``, or ``Liveness probe errored: <error>`` when the probe could
not run), deduplicated into one event with a ``count``. After ``failureThreshold`` consecutive
failures it kills the container (``Killing``: ``Container hub failed liveness probe, will be
restarted``) and the restart policy starts it again, so each ``Killing`` is one restart.
Readiness and startup probe failures are not counted: a failing readiness probe only removes the
pod from Service endpoints.

A liveness probe that times out under load is often the CPU, not the application: a container
requesting 10m CPU gets ~1% of a core when the node is busy (CFS shares follow requests), and a
low CPU limit throttles it outright. ``cpuStarvationLikely`` is set when the CPU request is below
``starvation_cpu_request`` (100m) or absent, or the CPU limit is below it.

Events say which container through ``involvedObject.fieldPath`` (``spec.containers{hub}``); when
that is not available the container is taken from the ``Killing`` events, else the only container
with a liveness probe, else the one of those with the most restarts (``containerInferred``).

One finding per workload container. Evidence keys: ``pod`` (the latest, ``namespace/name``),
``pods`` (``namespace/name``, at most 20), ``owner`` (``Kind namespace/name``), ``container``,
``failures`` (sum of ``Unhealthy`` counts), ``kills`` (sum of liveness ``Killing`` counts),
``restartCount`` (highest of the pods), ``restartsInWindow``, ``lastMessage`` (the latest probe
output, at most 200 characters), ``window`` (``{first, last, seconds}`` of the failures),
``probe`` (``{type, periodSeconds, failureThreshold, timeoutSeconds, initialDelaySeconds}`` with
Kubernetes' defaults 10/3/1/0 filled in, or None), ``cpuRequest``, ``cpuLimit`` (or None),
``cpuStarvationLikely``, ``containerInferred``, ``critical`` (why the pod is critical, or None).

``restartsInWindow`` is the liveness ``Killing`` count; when no such event survived, the container's
``restartCount`` if its last termination falls inside the failure window (plus ``window_slack``).

Severity: warning; critical when ``restartsInWindow`` reaches ``critical_restarts`` (3) or the pod
is critical under ``critical`` (the shared ``CriticalPodPolicy``: hub/proxy/ingress/DNS role
labels, a ``system-*`` PriorityClass, priority >= 1e9). Reported once ``failures`` reaches
``min_failures`` (3, the default ``failureThreshold``) or any liveness kill happened.

Cause: ``probe-restarts:<ns>/<Kind>/<owner>/<container>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kubemedic.checks import criticality, settings
from kubemedic.checks.criticality import CriticalPodPolicy
from kubemedic.checks.findings import Finding, Severity, cause_part
from kubemedic.checks.registry import check, config_quantity
from kubemedic.model import containers, objects, owners, resources
from kubemedic.model.events import EventRecord, liveness_killed_container
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.quantities import Quantity
from kubemedic.model.view import ClusterView

__all__ = ["ProbeConfig", "probe_restarts"]

CHECK = "probe-restarts"

LIVENESS_PREFIXES = ("Liveness probe failed:", "Liveness probe errored:")
PROBE_DEFAULTS = {
    "periodSeconds": 10,
    "failureThreshold": 3,
    "timeoutSeconds": 1,
    "initialDelaySeconds": 0,
}
"""What the API server defaults an unset probe field to."""

_FIELD_PATH = re.compile(r"^spec\.(?:initContainers|containers)\{(?P<container>[^}]{1,253})\}")
_HANDLERS = ("httpGet", "tcpSocket", "exec", "grpc")
_MAX_MESSAGE = 200
_MAX_LISTED = 20


@dataclass(frozen=True)
class ProbeConfig:
    min_failures: int = 3
    """Liveness failures (without any kill) before a container is reported."""
    critical_restarts: int = 3
    """Liveness restarts within the failure window that make the finding critical."""
    critical: CriticalPodPolicy = field(default_factory=CriticalPodPolicy)
    """Which pods are critical (``criticality.criticality_of``)."""
    starvation_cpu_request: str = settings.quantity("100m")
    """CPU request (or limit) below which CPU starvation is a likely cause of probe timeouts (an
    invalid quantity is an ``invalid-input`` finding naming this setting)."""
    window_slack: timedelta = timedelta(minutes=2)
    """How far past the last failure a termination still counts as in the window."""


@dataclass
class _Group:
    owner: ObjectRef
    container: str
    failures: int = 0
    kills: int = 0
    first: datetime | None = None
    last: datetime | None = None
    last_message: str = ""
    last_failure: datetime | None = None
    pods: dict[str, Body] = field(default_factory=dict)
    inferred: bool = False
    critical: str | None = None

    def saw(self, event: EventRecord, when: datetime) -> None:
        start = event.first_seen or when
        self.first = start if self.first is None else min(self.first, start)
        self.last = when if self.last is None else max(self.last, when)
        if event.reason != "Unhealthy":
            return
        self.failures += event.count
        if self.last_failure is None or when >= self.last_failure:
            self.last_failure, self.last_message = when, event.message


@check(CHECK, ProbeConfig)
def probe_restarts(view: ClusterView, config: ProbeConfig) -> list[Finding]:
    """Containers failing their liveness probe, with the restarts it caused."""
    floor = config_quantity(
        config.starvation_cpu_request, check=CHECK, name="starvation_cpu_request"
    )
    groups: dict[tuple[ObjectRef, str], _Group] = {}
    for pod in view.pods:
        unhealthy, killing = _pod_events(view, pod)
        if not unhealthy and not killing:
            continue
        killed = {name: sum(e.count for e in events) for name, events in killing.items()}
        owner = owners.workload_of(view, pod)
        pod_key = owners.pod_key(pod)
        per_container: dict[str, list[EventRecord]] = {name: [] for name in killing}
        inferred_names: set[str] = set()
        for event in unhealthy:
            name, inferred = _container_of(pod, event, killed)
            if inferred:
                inferred_names.add(name)
            per_container.setdefault(name, []).append(event)
        for name, events in per_container.items():
            group = groups.setdefault((owner, name), _Group(owner=owner, container=name))
            group.pods[pod_key] = pod
            group.inferred |= name in inferred_names
            group.kills += killed.get(name, 0)
            for event in [*events, *killing.get(name, [])]:
                group.saw(event, event.last_seen or event.first_seen or view.now)
            why = criticality.criticality_of(view, pod, policy=config.critical)
            group.critical = group.critical or (why.reason if why else None)
    findings = [
        _finding(view, group, config, floor=floor)
        for group in groups.values()
        if group.failures >= config.min_failures or group.kills > 0
    ]
    findings.sort(key=lambda finding: finding.sort_key)
    return findings


def _pod_events(
    view: ClusterView, pod: Body
) -> tuple[list[EventRecord], dict[str, list[EventRecord]]]:
    """Liveness ``Unhealthy`` events and liveness ``Killing`` events by container, about this
    pod (not an earlier pod of the same name: a StatefulSet reuses names)."""
    uid = objects.get_str(pod, "metadata", "uid")
    unhealthy: list[EventRecord] = []
    killing: dict[str, list[EventRecord]] = {}
    for event in view.events_about(objects.ref_of(pod)):
        if uid and event.object_uid and event.object_uid != uid:
            continue
        if event.reason == "Unhealthy" and event.message.startswith(LIVENESS_PREFIXES):
            unhealthy.append(event)
        elif (killed := liveness_killed_container(event)) is not None:
            killing.setdefault(killed, []).append(event)
    return unhealthy, killing


def _container_of(pod: Body, event: EventRecord, killed: Mapping[str, int]) -> tuple[str, bool]:
    """The container an ``Unhealthy`` event is about, and whether that was inferred."""
    field_path = event.field_path
    if field_path is not None and (match := _FIELD_PATH.match(field_path)):
        return match.group("container"), False
    specs = objects.get_list(pod, "spec", "containers")
    probed = [c for c in specs if _liveness(c) is not None]
    if len(probed) == 1 or (not probed and len(specs) == 1):
        return objects.get_str((probed or specs)[0], "name") or "?", False
    if len(killed) == 1:
        return next(iter(killed)), True
    names = [objects.get_str(c, "name") or "?" for c in probed or specs]
    if not names:
        return "?", True
    return max(names, key=lambda name: (killed.get(name, 0), _restarts(pod, name))), True


def _liveness(container: Any) -> Mapping[str, Any] | None:
    probe = objects.get_map(container, "livenessProbe")
    return probe or None


def _restarts(pod: Body, name: str) -> int:
    return containers.restarts(containers.status(pod, name))


def _probe_json(container: Mapping[str, Any]) -> dict[str, Any] | None:
    probe = _liveness(container)
    if probe is None:
        return None
    found: dict[str, Any] = {
        "type": next((handler for handler in _HANDLERS if handler in probe), None)
    }
    for key, default in PROBE_DEFAULTS.items():
        value = probe.get(key)
        found[key] = value if isinstance(value, int) and not isinstance(value, bool) else default
    return found


def _restarts_in_window(group: _Group, config: ProbeConfig) -> int:
    if group.kills:
        return group.kills
    if group.first is None or group.last is None:
        return 0
    total = 0
    for pod in group.pods.values():
        status = containers.status(pod, group.container)
        last_state = objects.get_map(status, "lastState", "terminated")
        finished = objects.parse_time(last_state.get("finishedAt"))
        if finished is not None and group.first <= finished <= group.last + config.window_slack:
            total += containers.restarts(status)
    return total


def _finding(view: ClusterView, group: _Group, config: ProbeConfig, *, floor: Quantity) -> Finding:
    latest_key = max(
        group.pods,
        key=lambda key: objects.get_str(group.pods[key], "metadata", "creationTimestamp") or "",
    )
    pod = group.pods[latest_key]
    ref = objects.ref_of(pod)
    container = containers.spec(pod, group.container) or {}
    cpu_request, cpu_limit = _cpu(
        container, where=f"Pod {ref.key} spec.containers[name={group.container}]"
    )
    starving = (
        cpu_request is None or cpu_request < floor or (cpu_limit is not None and cpu_limit < floor)
    )
    restarts = _restarts_in_window(group, config)
    restart_count = max(_restarts(p, group.container) for p in group.pods.values())
    critical = group.critical is not None or restarts >= config.critical_restarts
    first = group.first or view.now
    last = group.last or first
    seconds = int((last - first).total_seconds())
    probe = _probe_json(container)
    message = _message(
        group, probe, restarts=restarts, seconds=seconds, cpu_request=cpu_request, starving=starving
    )
    evidence: dict[str, Any] = {
        "pod": latest_key,
        "pods": sorted(group.pods)[:_MAX_LISTED],
        "owner": owners.owner_text(group.owner),
        "container": group.container,
        "failures": group.failures,
        "kills": group.kills,
        "restartCount": restart_count,
        "restartsInWindow": restarts,
        "lastMessage": _clip(group.last_message),
        "window": {
            "first": objects.format_time(first),
            "last": objects.format_time(last),
            "seconds": seconds,
        },
        "probe": probe,
        "cpuRequest": str(cpu_request) if cpu_request is not None else None,
        "cpuLimit": str(cpu_limit) if cpu_limit is not None else None,
        "cpuStarvationLikely": starving,
        "containerInferred": group.inferred,
        "critical": group.critical,
    }
    return Finding(
        check=CHECK,
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        object=group.owner,
        message=message,
        cause=f"probe-restarts:{_cause_key(group)}",
        first_seen=first,
        last_seen=last,
        evidence=evidence,
    )


def _cause_key(group: _Group) -> str:
    return f"{cause_part(owners.cause_key(group.owner))}/{cause_part(group.container)}"


def _cpu(container: Mapping[str, Any], *, where: str) -> tuple[Quantity | None, Quantity | None]:
    """The container's CPU request and limit (QuantityError names ``where`` when invalid)."""
    request = resources.container_resources(
        container, "requests", where=f"{where}.resources.requests"
    )
    limit = resources.container_resources(container, "limits", where=f"{where}.resources.limits")
    return request.get("cpu"), limit.get("cpu")


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


def _message(
    group: _Group,
    probe: Mapping[str, Any] | None,
    *,
    restarts: int,
    seconds: int,
    cpu_request: Quantity | None,
    starving: bool,
) -> str:
    owner = owners.owner_text(group.owner)
    span = f"{seconds // 60} min" if seconds >= 60 else f"{seconds} s"
    text = (
        f"Liveness probe of container {group.container} in {owner} failed {group.failures} "
        f"time(s) over {span}, restarting it {restarts} time(s)"
    )
    if probe is not None:
        text += (
            f" (timeout {probe['timeoutSeconds']}s, period {probe['periodSeconds']}s, "
            f"failureThreshold {probe['failureThreshold']})"
        )
    request = f"{cpu_request.human()}" if cpu_request is not None else "none"
    text += f"; CPU request {request}"
    return text + (", so CPU starvation is likely." if starving else ".")
