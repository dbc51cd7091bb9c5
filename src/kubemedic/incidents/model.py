"""The values incidents are made of: finding episodes and signals in, incidents out (pure).

A **finding episode** is one row of the archive's ``findings`` table: a check found the same
thing (same check, object and cause) from ``first_seen`` to ``last_seen``. A **signal** is one
thing the archive saw happen, read from its other tables: a pod evicted (``evictions``), a
container OOM-killed (``terminations``), a node going NotReady or reporting pressure
(``node_transitions``), a pod the scheduler could not place or the kubelet rejected, or any other
Warning event about an object a finding names (``events``). Signals carry exact times; the API
server forgets the events they came from after ``--event-ttl`` (one hour), the archive does not.

An **incident** groups the episodes that share one underlying cause within one stretch of time,
with the signals that match them (``kubemedic.incidents.grouping`` documents the rules).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.checks.findings import Severity
from kubemedic.model import objects
from kubemedic.model.objects import ObjectRef

__all__ = [
    "EvidenceItem",
    "FindingEpisode",
    "Incident",
    "IncidentKind",
    "Related",
    "Signal",
    "SignalKind",
    "SuspectedCause",
    "TimelineEntry",
]


@dataclass(frozen=True, slots=True)
class FindingEpisode:
    """A ``findings`` row: one finding from the first scan that saw it to the last."""

    cluster: str
    check: str
    severity: Severity
    object: ObjectRef
    message: str
    cause: str
    first_seen: datetime
    last_seen: datetime
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fingerprint: str = ""
    row_id: int | None = None
    scans: int = 1

    @property
    def order(self) -> tuple[Any, ...]:
        """A total order over episodes that does not depend on where they came from (the
        evidence, canonically serialised, breaks ties between otherwise equal episodes)."""
        return (
            self.cluster,
            self.first_seen,
            self.check,
            self.object.order,
            self.cause,
            self.last_seen,
            self.fingerprint,
            self.message,
            -int(self.severity),
            json.dumps(self.evidence, sort_keys=True, default=str),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "check": self.check,
            "severity": self.severity.label,
            "object": self.object.to_json(),
            "message": self.message,
            "evidence": dict(self.evidence),
            "cause": self.cause,
            "firstSeen": objects.format_time(self.first_seen),
            "lastSeen": objects.format_time(self.last_seen),
            "scans": self.scans,
            **({"id": self.row_id} if self.row_id is not None else {}),
        }


class SignalKind(enum.StrEnum):
    EVICTION = "eviction"
    OOM_KILL = "oom-kill"
    NODE_OOM = "node-oom"
    """The kernel's OOM killer on a node (``SystemOOM``, ``OOMKilling`` events): the same kills
    as ``oom-kill`` when they were containers', seen from the node."""
    POD_PENDING = "pod-pending"
    FAILED_POD = "failed-pod"
    NODE_NOT_READY = "node-not-ready"
    NODE_PRESSURE = "node-pressure"
    EVENT = "event"


@dataclass(frozen=True, slots=True)
class Signal:
    """Something the archive saw happen, at a known time.

    ``workload`` is the owning workload as a cause fingerprint names it
    (``namespace/Kind/name``; the Deployment when the pod's ReplicaSet is ``<deployment>-<hash>``),
    "" when unknown; ``object_kind``/``object_name`` is what the row is about (usually a Pod or a
    Node). ``until`` is the last time for a repeated event (its ``lastTimestamp``), else ``at``.
    ``source`` and ``source_id`` name the archive row (``evictions``/42).
    """

    kind: SignalKind
    at: datetime
    cluster: str
    namespace: str
    object_kind: str
    object_name: str
    node: str
    summary: str
    source: str
    source_id: str
    workload: str = ""
    count: int = 1
    until: datetime | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @property
    def last(self) -> datetime:
        return self.until if self.until is not None and self.until > self.at else self.at

    @property
    def pod(self) -> str:
        """``namespace/name`` when the signal is about a pod, else ""."""
        return f"{self.namespace}/{self.object_name}" if self.object_kind == "Pod" else ""

    @property
    def order(self) -> tuple[str, datetime, str, str, str, str, str]:
        return (
            self.cluster,
            self.at,
            self.kind.value,
            self.source,
            self.source_id,
            self.namespace,
            self.object_name,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "at": objects.format_time(self.at),
            "until": objects.format_time(self.last),
            "cluster": self.cluster,
            "namespace": self.namespace,
            "object": {"kind": self.object_kind, "name": self.object_name},
            "workload": self.workload,
            "node": self.node,
            "count": self.count,
            "summary": self.summary,
            "detail": dict(self.detail),
            "source": {"table": self.source, "id": self.source_id},
        }


class IncidentKind(enum.StrEnum):
    INCIDENT = "incident"
    """Something happened: a symptom finding or an archived signal is part of it."""
    RISK = "risk"
    """Only standing conditions (an overcommitted node, an under-requested hub): nothing has
    happened yet that the archive saw."""


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """One line of an incident's timeline: a finding first seen, or signals of one kind about one
    subject close together (``count`` of them from ``at`` to ``until``)."""

    at: datetime
    until: datetime
    kind: str
    text: str
    source: str
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return {
            "at": objects.format_time(self.at),
            "until": objects.format_time(self.until),
            "kind": self.kind,
            "text": self.text,
            "source": self.source,
            "count": self.count,
        }


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """A fact supporting the suspected cause, with where it came from (a check or a table)."""

    text: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "source": self.source}


@dataclass(frozen=True, slots=True)
class SuspectedCause:
    """What kubemedic thinks caused the incident, and how sure it is.

    ``confidence`` is in [0, 1]; ``basis`` lists each independent line of evidence with the
    weight it added (``kubemedic.incidents.advising`` documents the rule).
    """

    text: str
    confidence: float
    evidence: tuple[EvidenceItem, ...] = ()
    basis: tuple[tuple[float, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "confidence": self.confidence,
            "evidence": [item.to_json() for item in self.evidence],
            "basis": [{"weight": weight, "reason": reason} for weight, reason in self.basis],
        }


@dataclass(frozen=True, slots=True)
class Related:
    """Another incident sharing part of this one's cause, and what they share."""

    id: str
    reason: str
    title: str
    start: datetime
    cluster: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "reason": self.reason,
            "title": self.title,
            "start": objects.format_time(self.start),
            "cluster": self.cluster,
        }


@dataclass(frozen=True, slots=True)
class Incident:
    """Findings and signals with one underlying cause in one stretch of time."""

    id: str
    cluster: str
    cause: str
    """The incident cause (``kubemedic.incidents.causes.incident_cause``), e.g.
    ``memory-pressure:support/Deployment/support-prometheus-server@core-pool``."""
    kind: IncidentKind
    title: str
    summary: str
    start: datetime
    end: datetime
    severity: Severity
    tags: tuple[str, ...]
    symptoms: tuple[str, ...]
    timeline: tuple[TimelineEntry, ...]
    suspected_cause: SuspectedCause
    follow_ups: tuple[str, ...]
    pools: tuple[str, ...]
    nodes: tuple[str, ...]
    workloads: tuple[str, ...]
    """Workloads involved, culprits first (``namespace/Kind/name``)."""
    culprits: tuple[str, ...]
    harmed: tuple[str, ...]
    """Workloads a symptom harmed (evicted, OOM-killed, pending...)."""
    findings: tuple[FindingEpisode, ...]
    signals: tuple[Signal, ...]
    related: tuple[Related, ...] = ()

    @property
    def duration_seconds(self) -> float:
        return max((self.end - self.start).total_seconds(), 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "cluster": self.cluster,
            "cause": self.cause,
            "kind": self.kind.value,
            "title": self.title,
            "summary": self.summary,
            "start": objects.format_time(self.start),
            "end": objects.format_time(self.end),
            "durationSeconds": int(self.duration_seconds),
            "severity": self.severity.label,
            "tags": list(self.tags),
            "symptoms": list(self.symptoms),
            "pools": list(self.pools),
            "nodes": list(self.nodes),
            "workloads": list(self.workloads),
            "culprits": list(self.culprits),
            "harmed": list(self.harmed),
            "suspectedCause": self.suspected_cause.to_json(),
            "followUps": list(self.follow_ups),
            "timeline": [entry.to_json() for entry in self.timeline],
            "related": [related.to_json() for related in self.related],
            "findings": [episode.to_json() for episode in self.findings],
            "signals": [signal.to_json() for signal in self.signals],
        }
