"""A Deployment's status conditions as the deployment controller keeps them
(``pkg/controller/deployment/util``: ``NewDeploymentCondition``, ``SetDeploymentCondition``...).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from kubemedic.sim.machinery.clock import rfc3339
from kubemedic.sim.machinery.objects import Obj

__all__ = ["condition", "get_condition", "of", "remove_condition", "set_condition"]


def condition(type_: str, status: str, reason: str, message: str, now: datetime) -> Obj:
    stamp = rfc3339(now)
    return {
        "type": type_,
        "status": status,
        "lastUpdateTime": stamp,
        "lastTransitionTime": stamp,
        "reason": reason,
        "message": message,
    }


def get_condition(status: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == type_:
            return dict(cond)
    return None


def set_condition(status: Obj, cond: Obj) -> None:
    """``SetDeploymentCondition``: same status and reason is a no-op; same status keeps the
    transition time; the condition moves to the end."""
    current = get_condition(status, cond["type"])
    if current is not None and (current["status"], current.get("reason")) == (
        cond["status"],
        cond.get("reason"),
    ):
        return
    if current is not None and current["status"] == cond["status"]:
        cond = {**cond, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, cond["type"])
    status.setdefault("conditions", []).append(cond)


def remove_condition(status: Obj, type_: str) -> None:
    kept = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def of(obj: Mapping[str, Any], type_: str) -> dict[str, Any] | None:
    """The object's condition of this type, if its status has one."""
    return get_condition(obj.get("status") or {}, type_)
