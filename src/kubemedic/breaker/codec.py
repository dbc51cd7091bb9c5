"""The breaker's state and decisions as plain JSON values, for the archive.

``state_to_json``/``state_from_json`` round-trip a :class:`BreakerState` (times as RFC 3339 UTC
with microseconds, owners as ``{apiVersion, kind, namespace, name}``); ``decision_to_json`` is
a decision's audit record (with what carrying it out gave). A state that cannot be read back (a
row from a version that wrote something else) is an empty state, never an error: the breaker
then re-announces once rather than stopping.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubemedic.breaker.policy import BreakerState, Decision, owner_key
from kubemedic.breaker.policy.records import StormState
from kubemedic.model.objects import ObjectRef, format_exact_time, parse_time

__all__ = ["decision_to_json", "state_from_json", "state_to_json"]


def _ref(value: Any) -> ObjectRef:
    if not isinstance(value, Mapping):
        raise ValueError(f"not an owner: {value!r:.100}")
    return ObjectRef(
        kind=str(value["kind"]),
        name=str(value["name"]),
        namespace=value.get("namespace"),
        api_version=str(value.get("apiVersion") or "v1"),
    )


def _time(value: Any) -> datetime:
    parsed = parse_time(value)
    if parsed is None:
        raise ValueError(f"not a time: {value!r:.100}")
    return parsed


def state_to_json(state: BreakerState) -> dict[str, Any]:
    return {
        "storms": {
            key: {
                "owner": storm.owner.to_json(),
                "started": format_exact_time(storm.started),
                "alerted": storm.alerted,
                "calmSince": None
                if storm.calm_since is None
                else format_exact_time(storm.calm_since),
            }
            for key, storm in sorted(state.storms.items())
        },
        "reverted": {key: format_exact_time(at) for key, at in sorted(state.reverted.items())},
        "announced": sorted(state.announced),
    }


def state_from_json(body: Mapping[str, Any] | None) -> BreakerState:
    if not body:
        return BreakerState()
    try:
        storms = {
            str(key): StormState(
                owner=_ref(item["owner"]),
                started=_time(item["started"]),
                alerted=bool(item.get("alerted")),
                calm_since=None if item.get("calmSince") is None else _time(item["calmSince"]),
            )
            for key, item in dict(body.get("storms") or {}).items()
        }
        reverted = {str(k): _time(v) for k, v in dict(body.get("reverted") or {}).items()}
        announced = frozenset(str(k) for k in list(body.get("announced") or []))
    except (KeyError, TypeError, ValueError):
        return BreakerState()
    return BreakerState(storms=storms, reverted=reverted, announced=announced)


def decision_to_json(decision: Decision, *, outcome: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {
        "owner": owner_key(decision.owner),
        "object": decision.owner.to_json(),
        "kind": decision.kind.value,
        "reason": decision.reason,
        "message": decision.message,
        "key": decision.key,
        "action": decision.action.value if decision.action else "",
        "dryRun": decision.dry_run,
        "outcome": outcome,
    }
    if decision.patch:
        out["patch"] = [dict(op) for op in decision.patch]
    if decision.replicas is not None:
        out["replicas"] = decision.replicas
    if decision.resource_version:
        out["resourceVersion"] = decision.resource_version
    if decision.pods:
        out["pods"] = list(decision.pods)
    return out
