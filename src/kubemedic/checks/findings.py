"""``Finding``: what a check reports, one schema everywhere (scan output, archive, API).

JSON shape (the contract in DESIGN.md)::

    {"check": "node-memory-overcommit", "severity": "critical|warning|info",
     "object": {"apiVersion": "v1", "kind": "Node", "namespace": null, "name": "core-2"},
     "message": "...", "evidence": {...}, "cause": "...",
     "firstSeen": "RFC3339", "lastSeen": "RFC3339"}

``cause`` is a fingerprint of the *underlying cause*, not of the finding: two findings (or two
incidents weeks apart) with the same cause carry the same string. It is built only from stable
identities (kinds, namespaces, names of controllers, node pools), never from pod hashes, counts
or times, so it is the same across runs and snapshots. ``workload_cause`` and ``pinned_cause``
build the causes rooted in one workload's spec; ``percent`` is how evidence shows a share.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kubemedic.model import objects
from kubemedic.model.objects import ObjectRef
from kubemedic.model.quantities import Quantity

__all__ = [
    "CLUSTER",
    "Finding",
    "Severity",
    "cause_part",
    "percent",
    "pinned_cause",
    "workload_cause",
]

CLUSTER = ObjectRef(kind="Cluster", name="cluster", api_version="kubemedic.io/v1")
"""The object of findings about the cluster as a whole (a mass outage, a scale-up burst)."""


class Severity(enum.IntEnum):
    INFO = 1
    WARNING = 2
    CRITICAL = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r}: expected one of critical, warning, info"
            ) from None


@dataclass(frozen=True, slots=True)
class Finding:
    check: str
    severity: Severity
    object: ObjectRef
    message: str
    cause: str
    first_seen: datetime
    last_seen: datetime
    evidence: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "severity": self.severity.label,
            "object": self.object.to_json(),
            "message": self.message,
            "evidence": dict(self.evidence),
            "cause": self.cause,
            "firstSeen": objects.format_time(self.first_seen),
            "lastSeen": objects.format_time(self.last_seen),
        }

    @property
    def sort_key(self) -> tuple[int, str, tuple[str, str, str, str], str]:
        return (-int(self.severity), self.check, self.object.order, self.cause)


_UNSAFE = re.compile(r"[^A-Za-z0-9._/@:=-]+")


def cause_part(text: str) -> str:
    """Make ``text`` safe inside a cause fingerprint (no spaces, no separators of our own)."""
    return _UNSAFE.sub("_", text) or "_"


def workload_cause(prefix: str, ref: ObjectRef) -> str:
    """``<prefix>:<namespace>/<Kind>/<name>`` for a cause rooted in one workload's own spec (the
    namespace part is empty, the slash kept, for an object without one)."""
    return f"{prefix}:" + cause_part(f"{ref.namespace or ''}/{ref.kind}/{ref.name}")


def pinned_cause(ref: ObjectRef) -> str:
    """The cause of a pod template pinned with ``spec.nodeName`` on ``ref`` (the workload that
    carries the template). ``pinned-node-name``, ``failed-pod-storm`` and ``out-of-band-edit``
    all name the pin with it, so the pin, the storm it causes and the hand edit that made it
    link into one incident."""
    return workload_cause("pinned-node-name", ref)


def percent(part: Quantity, whole: Quantity) -> float:
    """``part`` as a percentage of ``whole``, rounded to one decimal for evidence (0.0 when
    ``whole`` is zero)."""
    ratio = part.ratio(whole)
    return 0.0 if ratio is None else round(float(ratio * 100), 1)
