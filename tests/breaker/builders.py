"""Builders for the breaker policy's inputs: pod observations, predictions, drift results."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kubemedic.breaker.policy import PodObservation, Prediction
from kubemedic.drift import ObjectDrift, diff
from kubemedic.model.objects import ObjectRef
from tests.drift.builders import APPLIED, deployment, entry, live_of

T0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
OWNER = ObjectRef("Deployment", "web", "default", "apps/v1")
NODE_NAME = "spec.template.spec.nodeName"


def failed(
    index: int, *, at: datetime, owner: ObjectRef = OWNER, reason: str = "OutOfmemory"
) -> PodObservation:
    return PodObservation(
        namespace=owner.namespace or "default",
        name=f"{owner.name}-5d8f7c9b4-{index:05d}",
        owner=owner,
        phase="Failed",
        reason=reason,
        created=at,
        rejected=True,
        node="core-2",
    )


def burst(count: int, *, start: datetime, every: timedelta, first: int = 0) -> list[PodObservation]:
    """``count`` rejected pods created ``every`` apart from ``start``."""
    return [failed(first + i, at=start + i * every) for i in range(count)]


def pinned_drift(*, in_git: bool = False, manager: str = "kubectl-edit") -> ObjectDrift:
    """The drift engine's result for incident 1's edit: the template pinned live."""
    manifest = deployment()
    if in_git:
        manifest["spec"]["template"]["spec"]["nodeName"] = "core-2"
    live = live_of(manifest, APPLIED, entry(manager, NODE_NAME, time="2026-03-01T09:55:00Z"))
    live["spec"]["template"]["spec"]["nodeName"] = "core-2"
    if in_git:
        live["spec"]["template"]["spec"]["nodeName"] = "core-3"
    return diff(manifest, live)


def prediction(*, replicas: int = 12, fits: int = 8) -> Prediction:
    return Prediction(
        owner=OWNER,
        node="core-2",
        replicas=replicas,
        fits=fits,
        limiting="memory",
        resource_version="100",
    )
