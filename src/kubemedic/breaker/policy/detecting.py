"""Failed-pod churn per owner over a sliding window, with hysteresis.

The churn of an owner at ``now`` is the number of its pods rejected at admission whose
``creationTimestamp`` lies in ``(now - window_seconds, now]`` (a Failed pod's creation is when
the controller replaced the previous one, so this is the replacement rate). Pods with no creation
time are not counted.

A storm starts when the churn reaches ``start_pods``. It goes calm when the churn falls to
``end_pods`` or below, and ends when it has stayed calm for ``calm_seconds``; churn above
``end_pods`` while calm makes it rage again (the calm clock restarts). Between the thresholds a
storm in progress goes on and none starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from kubemedic.breaker.policy.records import PodObservation, StormState, owner_key
from kubemedic.breaker.policy.settings import BreakerSettings
from kubemedic.model.objects import ObjectRef

__all__ = ["Tracked", "churn", "track"]


def churn(
    pods: Iterable[PodObservation], *, now: datetime, window_seconds: float
) -> dict[str, tuple[ObjectRef, int]]:
    """``{owner key: (owner, rejected pods created within the window)}``; owners with none are
    left out."""
    since = now - timedelta(seconds=window_seconds)
    out: dict[str, tuple[ObjectRef, int]] = {}
    for pod in pods:
        if not pod.rejected or pod.created is None or not since < pod.created <= now:
            continue
        key = owner_key(pod.owner)
        owner, count = out.get(key, (pod.owner, 0))
        out[key] = (owner, count + 1)
    return out


@dataclass(frozen=True, slots=True)
class Tracked:
    """One round of tracking: the storms going on after it, those that started or ended in it,
    and the churn of every owner that has some (``{owner key: pods}``)."""

    storms: dict[str, StormState]
    started: list[StormState]
    ended: list[StormState]
    rates: dict[str, int]


def track(
    storms: Mapping[str, StormState],
    pods: Iterable[PodObservation],
    *,
    now: datetime,
    settings: BreakerSettings,
) -> Tracked:
    """Advance the storms of the previous round to ``now`` (see the module docstring)."""
    rates = churn(pods, now=now, window_seconds=settings.window_seconds)
    after: dict[str, StormState] = {}
    started: list[StormState] = []
    ended: list[StormState] = []
    calm_for = timedelta(seconds=settings.calm_seconds)
    for key, storm in storms.items():
        count = rates.get(key, (storm.owner, 0))[1]
        if count > settings.end_pods:
            after[key] = replace(storm, calm_since=None)
            continue
        calm_since = storm.calm_since or now
        if now - calm_since >= calm_for:
            ended.append(storm)
        else:
            after[key] = replace(storm, calm_since=calm_since)
    for key, (owner, count) in sorted(rates.items()):
        if key not in after and count >= settings.start_pods and key not in storms:
            storm = StormState(owner=owner, started=now)
            after[key] = storm
            started.append(storm)
    return Tracked(after, started, ended, {key: count for key, (_, count) in rates.items()})
