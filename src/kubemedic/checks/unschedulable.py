"""``unschedulable-pods``: pods the scheduler cannot place, per owner, with its reasons counted.

Sources, for each pod still ``Pending`` with no ``spec.nodeName``:

* its ``FailedScheduling`` events (the scheduler's FitError text, read by
  ``kubemedic.model.scheduling``); events whose ``involvedObject.uid`` names an earlier pod of the
  same name (a recreated StatefulSet pod) are ignored;
* its ``PodScheduled=False`` condition with reason ``Unschedulable``, whose message is the same
  text and which outlives the events (the API server drops events after ``--event-ttl``, 1h).

Pods that are scheduled, running or gone stop counting, except that ``FailedScheduling`` events
about pods *absent from the snapshot* count when they last happened within
``recent_event_seconds`` of now (a snapshot of events without their pods, or pods deleted by
their controller while still pending). Such a pod's owner is guessed from its name and the
workloads in the view (``<replicaset>-<5 chars>``, ``<deployment>-<hash>-<5 chars>``,
``<statefulset>-<ordinal>``: ``owners.guess_owner``); failing that, the finding is about the pod
itself.

Findings are aggregated per top owner (``ClusterView.top_owner``: Deployment, StatefulSet, Job
...). Severity ``warning``; ``critical`` once the longest-pending pod of the owner has waited
``critical_after_seconds`` (10 minutes; measured from the pod's creation, or from the first event
when no pod is in the snapshot).

Evidence: ``owner`` (``namespace/Kind/name``), ``pods`` (distinct pods), ``events`` (sum of event
counts), ``nodesTotal`` and ``reasons`` (``{reason: count}``) from the newest message,
``reasonClass`` (its dominant class, see ``scheduling.dominant_class``), ``prefilter`` (or null),
``preemption`` (``{"message", "nodesTotal", "reasons"}`` from the preemption postfix, or null),
``partial`` (the message was cut or had unreadable items), ``lastMessage``, ``pendingForSeconds``,
``firstSeen``, ``lastSeen``. Cause: ``unschedulable:<reasonClass>@<owner>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.checks.findings import Finding, Severity, cause_part
from kubemedic.checks.registry import check
from kubemedic.model import objects, owners, scheduling, timing
from kubemedic.model.events import EventRecord
from kubemedic.model.objects import Body, ObjectRef
from kubemedic.model.view import ClusterView

__all__ = ["UnschedulableConfig", "unschedulable_pods"]

FAILED_SCHEDULING = "FailedScheduling"


@dataclass(frozen=True, slots=True)
class UnschedulableConfig:
    critical_after_seconds: int = 600
    """An owner whose oldest unschedulable pod waited this long is critical."""
    recent_event_seconds: int = 3600
    """Events about pods absent from the snapshot count when this recent (the default
    ``--event-ttl``)."""


@dataclass(slots=True)
class _Group:
    owner: ObjectRef
    pods: set[str] = field(default_factory=set)
    events: list[EventRecord] = field(default_factory=list)
    conditions: list[tuple[datetime | None, str]] = field(default_factory=list)
    created: list[datetime] = field(default_factory=list)


@check("unschedulable-pods", UnschedulableConfig)
def unschedulable_pods(view: ClusterView, config: UnschedulableConfig) -> list[Finding]:
    """FailedScheduling reasons counted per owner of pods still Pending."""
    groups: dict[ObjectRef, _Group] = {}
    present: dict[tuple[str | None, str], Body] = {}
    for pod in view.pods:
        meta = objects.get_map(pod, "metadata")
        namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else None
        present[(namespace or None, str(meta.get("name") or ""))] = pod

    for (namespace, name), pod in present.items():
        if not _waiting_for_scheduler(pod):
            continue
        events = [
            event
            for event in view.events_by_object.get(("Pod", namespace, name), [])
            if event.reason == FAILED_SCHEDULING and _same_pod(event, pod)
        ]
        condition = _unschedulable_condition(pod)
        if not events and condition is None:
            continue
        group = _group_for(groups, view.top_owner(pod))
        group.pods.add(f"{namespace}/{name}")
        group.events.extend(events)
        if condition is not None:
            group.conditions.append(condition)
        created = timing.created_at(pod)
        if created is not None:
            group.created.append(created)

    for event in view.events:
        key = (event.object_namespace, event.object_name)
        if event.reason != FAILED_SCHEDULING or event.object_kind != "Pod" or key in present:
            continue
        when = event.last_seen or event.first_seen
        if when is None or (view.now - when).total_seconds() > config.recent_event_seconds:
            continue
        owner = owners.guess_owner(
            view, namespace=event.object_namespace, pod_name=event.object_name
        )
        group = _group_for(
            groups, owner or ObjectRef("Pod", event.object_name, event.object_namespace)
        )
        group.pods.add(f"{event.object_namespace}/{event.object_name}")
        group.events.append(event)

    ordered = sorted(groups.values(), key=lambda group: owners.cause_key(group.owner))
    return [_finding(view, group, config) for group in ordered]


def _group_for(groups: dict[ObjectRef, _Group], owner: ObjectRef) -> _Group:
    if owner not in groups:
        groups[owner] = _Group(owner=owner)
    return groups[owner]


def _waiting_for_scheduler(pod: Body) -> bool:
    return objects.get_str(pod, "status", "phase") in (
        "Pending",
        None,
    ) and not objects.get_str(pod, "spec", "nodeName")


def _same_pod(event: EventRecord, pod: Body) -> bool:
    uid = objects.get_str(pod, "metadata", "uid")
    return not (event.object_uid and uid) or event.object_uid == uid


def _unschedulable_condition(pod: Body) -> tuple[datetime | None, str] | None:
    for condition in objects.get_list(pod, "status", "conditions"):
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            when = objects.parse_time(condition.get("lastTransitionTime"))
            return when, str(condition.get("message") or "")
    return None


def _newest_message(group: _Group) -> str:
    events = [event for event in group.events if event.message]
    if events:
        return max(
            events, key=lambda event: _sort_time(event.last_seen or event.first_seen)
        ).message
    conditions = [item for item in group.conditions if item[1]]
    if conditions:
        return max(conditions, key=lambda item: _sort_time(item[0]))[1]
    return ""


def _sort_time(value: datetime | None) -> float:
    return value.timestamp() if value is not None else float("-inf")


def _times(group: _Group) -> list[datetime]:
    times: list[datetime] = list(group.created)
    for event in group.events:
        times.extend(t for t in (event.first_seen, event.last_seen) if t is not None)
    times.extend(when for when, _ in group.conditions if when is not None)
    return times


def _finding(view: ClusterView, group: _Group, config: UnschedulableConfig) -> Finding:
    message = _newest_message(group)
    failure = scheduling.parse_failed_scheduling(message)
    klass = scheduling.dominant_class(failure) if failure is not None else "unknown"
    owner = owners.cause_key(group.owner)
    started = _earliest(group.created) or _earliest(
        event.first_seen or event.last_seen for event in group.events
    )
    pending_for = timing.seconds_since(view.now, started)
    critical = pending_for is not None and pending_for >= config.critical_after_seconds
    times = _times(group)
    first_seen = min(times) if times else view.now
    last_seen = max(times) if times else view.now
    evidence: dict[str, Any] = {
        "owner": owner,
        "pods": len(group.pods),
        "events": sum(event.count for event in group.events),
        "nodesTotal": failure.nodes_total if failure is not None else None,
        "reasons": dict(failure.reasons) if failure is not None else {},
        "reasonClass": klass,
        "prefilter": failure.prefilter if failure is not None else None,
        "preemption": _preemption(failure),
        "partial": failure.partial if failure is not None else False,
        "lastMessage": message,
        "pendingForSeconds": pending_for,
        "firstSeen": objects.format_time(first_seen),
        "lastSeen": objects.format_time(last_seen),
    }
    return Finding(
        check="unschedulable-pods",
        severity=Severity.CRITICAL if critical else Severity.WARNING,
        object=group.owner,
        message=_sentence(owner, evidence, failure),
        cause=f"unschedulable:{cause_part(klass)}@{cause_part(owner)}",
        first_seen=first_seen,
        last_seen=last_seen,
        evidence=evidence,
    )


def _preemption(failure: scheduling.SchedulingFailure | None) -> dict[str, Any] | None:
    if failure is None or failure.postfilter is None:
        return None
    body: dict[str, Any] = {"message": failure.postfilter}
    if failure.preemption is not None:
        body.update(failure.preemption.to_json())
    return body


def _sentence(
    owner: str, evidence: Mapping[str, Any], failure: scheduling.SchedulingFailure | None
) -> str:
    pods = evidence["pods"]
    waited = evidence["pendingForSeconds"]
    how_long = f" for {timing.human_duration(waited)}" if waited is not None else ""
    head = f"{pods} pod{'s' if pods != 1 else ''} of {owner} cannot be scheduled{how_long}"
    if failure is None:
        return f"{head} ({evidence['events']} FailedScheduling events, message not understood)."
    if failure.reasons:
        reason, count = min(failure.reasons.items(), key=lambda item: (-item[1], item[0]))
        detail = f"most often: {count} {reason}"
    else:
        detail = failure.prefilter or "no reasons given"
    return f"{head}: 0/{failure.nodes_total} nodes are available, {detail}."


def _earliest(values: Iterable[datetime | None]) -> datetime | None:
    present = [value for value in values if value is not None]
    return min(present) if present else None
