"""Recommendations as people and programs read them: quantities, changes, JSON (pure: no I/O).

Amounts print as Kubernetes quantities a manifest takes: CPU in millicores (``250m``, ``2``),
memory in the binary format (``2530Mi``). The JSON keeps the exact numbers beside them
(``millicores``, ``bytes``) so a program need not parse quantities back.
"""

from __future__ import annotations

from datetime import UTC, datetime
from fractions import Fraction
from typing import Any

from kubemedic.model.quantities import Format, Quantity
from kubemedic.recommend.policy import Change, Recommendation, Resources, Settings

__all__ = ["amount", "change_text", "recommendation_json", "settings_json"]


def amount(value: int | None, resource: str) -> str:
    """``value`` (millicores or bytes) as a quantity; ``-`` for None."""
    if value is None:
        return "-"
    if resource == "cpu":
        return Quantity(Fraction(value, 1000)).canonical()
    return Quantity(Fraction(value), Format.BINARY_SI).canonical()


def change_text(change: Change) -> str:
    """``128Mi -> 2530Mi``, ``? -> 250m`` (current unknown), ``1 -> none`` (remove the limit),
    ``none`` (leave unset), ``no data``."""
    if not change.decided:
        return "no data"
    new = amount(change.recommended, change.resource) if change.recommended is not None else "none"
    if change.recommended is None and change.current is None:
        return "none"
    old = amount(change.current, change.resource) if change.current is not None else "?"
    return f"{old} -> {new}"


def _resources_json(spec: Resources) -> dict[str, Any]:
    return {
        "requests": {
            "cpu": None if spec.cpu_request is None else amount(spec.cpu_request, "cpu"),
            "memory": None
            if spec.memory_request is None
            else amount(spec.memory_request, "memory"),
        },
        "limits": {
            "cpu": None if spec.cpu_limit is None else amount(spec.cpu_limit, "cpu"),
            "memory": None if spec.memory_limit is None else amount(spec.memory_limit, "memory"),
        },
        "source": spec.source,
    }


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recommendation_json(found: Recommendation) -> dict[str, Any]:
    """One recommendation as ``kubemedic recommend -o json`` prints it."""
    workload = found.workload
    recommended = Resources(
        cpu_request=found.cpu_request,
        cpu_limit=found.cpu_limit,
        memory_request=found.memory_request,
        memory_limit=found.memory_limit,
    )
    shown = _resources_json(recommended)
    del shown["source"]
    return {
        "cluster": workload.cluster,
        "namespace": workload.namespace or None,
        "kind": workload.kind,
        "name": workload.name,
        "workload": workload.key,
        "container": workload.container,
        "enoughData": {"cpu": found.cpu_enough, "memory": found.memory_enough},
        "recommended": shown,
        "current": None if found.current is None else _resources_json(found.current),
        "changes": [
            {
                "resource": change.resource,
                "field": change.field,
                "current": change.current,
                "recommended": change.recommended,
                "delta": change.delta,
                "action": change.action,
                "unit": "millicores" if change.resource == "cpu" else "bytes",
            }
            for change in found.changes
        ],
        "history": {
            "samples": found.samples,
            "pods": found.pods,
            "first": _time(found.first),
            "last": _time(found.last),
            "spanSeconds": found.span.total_seconds(),
        },
        "reasons": [
            {"rule": reason.rule, "resource": reason.resource, "text": reason.text}
            for reason in found.reasons
        ],
    }


def settings_json(settings: Settings) -> dict[str, Any]:
    """The policy's settings, as the JSON output states them."""
    return {
        "cpuPercentile": settings.cpu_percentile,
        "memoryBuffer": settings.memory_buffer,
        "minSamples": settings.min_samples,
        "minSpanSeconds": settings.min_span.total_seconds(),
        "floorSampleAgeSeconds": settings.floor_sample_age.total_seconds(),
    }
