"""Events on the Node for the repair's decisions, through the one Event writer.

Every decision (taken or held back) becomes a ``core/v1`` Event on its Node, written by
:class:`kubemedic.kube.events.NodeEvents` as component ``kubemedic-repair`` (aggregated as the
kubelet's recorder does: the same decision repeating every round while it stands, a hold or a
drain blocked by a budget, bumps one Event's ``count``). ``reason`` is the decision's
(``KubemedicRepair...``), ``type`` ``Warning`` for what a person should look at (holds,
escalations, quarantines, alerts, failed actions) and ``Normal`` otherwise; the aggregation key
is the decision's ``key`` (stable while the decision repeats).

A decision without a node (a global pause) has no object to hang an Event on; it is logged and
recorded by the controller only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubemedic.kube.api import Api
from kubemedic.kube.events import NodeEvents
from kubemedic.repair.policy.records import Action, Decision, Kind, Outcome
from kubemedic.repair.providers import contract

__all__ = ["Announcer", "event_type"]

LOG = logging.getLogger("kubemedic.repair")


_WARNING_KINDS = frozenset({Kind.HOLD, Kind.ESCALATE})
_WARNING_ACTIONS = frozenset({Action.QUARANTINE, Action.ALERT})
_WARNING_OUTCOMES = frozenset({"quarantined", "abandoned", "failed"})


def event_type(decision: Decision, outcome: Outcome | None = None) -> str:
    """``Warning`` for holds, escalations, quarantines, alerts and failed actions."""
    if (
        decision.kind in _WARNING_KINDS
        or decision.action in _WARNING_ACTIONS
        or decision.outcome in _WARNING_OUTCOMES
        or (outcome is not None and not outcome.ok)
    ):
        return "Warning"
    return "Normal"


class Announcer:
    """Writes the Events of decisions on their Nodes (:meth:`announce`)."""

    def __init__(self, *, api: Api, identity: str, now: Callable[[], datetime]) -> None:
        self.events = NodeEvents(
            api=api, component=contract.FIELD_MANAGER, identity=identity, now=now
        )

    async def announce(
        self, decision: Decision, *, message: str = "", outcome: Outcome | None = None
    ) -> dict[str, Any] | None:
        """Write (or bump) the Event of ``decision``; ``message`` replaces the decision's
        own. Returns the Event as stored, or None for a decision without a node."""
        if not decision.node:
            LOG.info("%s: %s", decision.reason, message or decision.message)
            return None
        return await self.events.record(
            decision.node,
            decision.reason,
            message or decision.message,
            type_=event_type(decision, outcome),
            action=(decision.action or decision.kind).value,
            key=decision.key,
        )
