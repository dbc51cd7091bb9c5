"""The breaker's hands: carry out a plan's ``act`` decisions and write every decision's Event.

What each action sends (field manager ``kubemedic``, the Events' component
``kubemedic-breaker``):

- ``revert-out-of-band``: ``PATCH`` of the owner as ``application/json-patch+json``, the
  decision's patch, whose first operation tests ``/metadata/resourceVersion``. A ``409`` or
  ``422`` (the test failed: the object changed since the drift was read) is ``conflict``, not a
  failure: the controller forgets the revert (it does not count for the loop guard) and the next
  round decides again on the new object.
- ``scale-to-fit``: ``PUT`` of the owner's ``scale`` subresource (``autoscaling/v1`` Scale)
  carrying the decision's ``resourceVersion``, so a concurrent change makes it ``conflict``.
- ``prune-failed``: ``DELETE`` of each pod with ``preconditions.uid`` (the pod observed, never
  a namesake created since); a pod already gone counts as pruned.

Every decision (actions, alerts, holds, dry-run ones) is an Event on the owner, aggregated as
the kubelet's recorder does (:class:`kubemedic.kube.events.ObjectEvents`): ``Warning`` for
alerts, holds and failed actions, ``Normal`` otherwise. In dry run nothing but Events is written.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kubemedic.breaker.policy import BreakerAction, Decision, DecisionKind
from kubemedic.kube import kinds
from kubemedic.kube.api import Api, ApiError, Conflict, ConnectionLost, Kind, NotFound
from kubemedic.kube.events import ObjectEvents
from kubemedic.model.objects import ObjectRef

__all__ = ["COMPONENT", "FIELD_MANAGER", "JSON_PATCH", "Executor", "Outcome", "kind_of"]

log = logging.getLogger("kubemedic.breaker")

COMPONENT = "kubemedic-breaker"
FIELD_MANAGER = "kubemedic"
JSON_PATCH = "application/json-patch+json"

_WORKLOADS = {
    k.kind: k
    for k in (
        kinds.DEPLOYMENTS,
        kinds.REPLICASETS,
        kinds.STATEFULSETS,
        kinds.DAEMONSETS,
        kinds.JOBS,
        kinds.REPLICATION_CONTROLLERS,
    )
}


def kind_of(owner: ObjectRef) -> Kind:
    """The API collection of an owner (its group and version from ``api_version``)."""
    known = _WORKLOADS.get(owner.kind)
    if known is None:
        raise ValueError(f"{owner}: the breaker does not act on {owner.kind} objects")
    group, _, version = owner.api_version.rpartition("/")
    if version and group == known.group:
        return Kind(group, version, known.plural, known.kind, known.namespaced)
    return known


@dataclass(frozen=True, slots=True)
class Outcome:
    """What carrying out one decision gave: ``word`` is ``done``, ``dry-run``, ``conflict``
    (the object changed meanwhile: decide again) or ``failed``; ``detail`` a sentence."""

    word: str
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.word in ("done", "dry-run")

    def __str__(self) -> str:
        return f"{self.word}: {self.detail}" if self.detail else self.word


class Executor:
    """Carries out decisions through ``api`` and announces them (see the module docstring)."""

    def __init__(self, *, api: Api, identity: str, now: Callable[[], datetime]) -> None:
        self.api = api
        self.events = ObjectEvents(api=api, component=COMPONENT, identity=identity, now=now)

    async def execute(
        self, decision: Decision, *, pod_uids: Mapping[str, str] | None = None
    ) -> Outcome:
        """Carry out one ``act`` decision (``dry-run`` ones answer ``dry-run``); never raises
        for what the API answered. ``pod_uids`` maps the pods to prune to their observed uids."""
        if decision.kind is DecisionKind.DRY_RUN:
            return Outcome("dry-run")
        if decision.kind is not DecisionKind.ACT or decision.action is None:
            raise ValueError(f"not an act decision: {decision.kind} {decision.reason}")
        try:
            if decision.action is BreakerAction.REVERT_OUT_OF_BAND:
                return await self.revert(decision)
            if decision.action is BreakerAction.SCALE_TO_FIT:
                return await self.scale(decision)
            if decision.action is BreakerAction.PRUNE_FAILED:
                return await self.prune(decision, pod_uids or {})
        except Conflict as error:
            return Outcome("conflict", error.message or str(error))
        except (ApiError, ConnectionLost, ValueError) as error:
            return Outcome("failed", str(error))
        return Outcome("done", "alert")

    async def revert(self, decision: Decision) -> Outcome:
        owner = decision.owner
        if not decision.patch or decision.patch[0].get("op") != "test":
            raise ValueError(f"{owner}: a revert must test resourceVersion first")
        path = kind_of(owner).path(owner.namespace, owner.name)
        try:
            await self.api.request(
                "PATCH",
                path,
                params={"fieldManager": FIELD_MANAGER},
                body=[dict(op) for op in decision.patch],
                content_type=JSON_PATCH,
            )
        except ApiError as error:
            if error.code == 422:  # the test operation failed: the object changed
                return Outcome("conflict", error.message or str(error))
            raise
        removed = ", ".join(str(op["path"]) for op in decision.patch if op.get("op") == "remove")
        return Outcome("done", f"removed {removed}" if removed else "reverted")

    async def scale(self, decision: Decision) -> Outcome:
        owner = decision.owner
        if decision.replicas is None:
            raise ValueError(f"{owner}: scale-to-fit without replicas")
        path = kind_of(owner).path(owner.namespace, owner.name) + "/scale"
        meta: dict[str, Any] = {"name": owner.name, "namespace": owner.namespace}
        if decision.resource_version:
            meta["resourceVersion"] = decision.resource_version
        body = {
            "apiVersion": "autoscaling/v1",
            "kind": "Scale",
            "metadata": meta,
            "spec": {"replicas": decision.replicas},
        }
        await self.api.request("PUT", path, params={"fieldManager": FIELD_MANAGER}, body=body)
        return Outcome("done", f"scaled to {decision.replicas}")

    async def prune(self, decision: Decision, uids: Mapping[str, str]) -> Outcome:
        namespace = decision.owner.namespace or "default"
        deleted, gone, changed = 0, 0, 0
        for name in decision.pods:
            options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
            if uids.get(name):
                options["preconditions"] = {"uid": uids[name]}
            try:
                await self.api.request("DELETE", kinds.PODS.path(namespace, name), body=options)
            except NotFound:
                gone += 1
                continue
            except Conflict:
                changed += 1  # another pod of that name now: not the one observed
                continue
            deleted += 1
        detail = f"deleted {deleted} pods"
        if gone:
            detail += f", {gone} already gone"
        if changed:
            detail += f", {changed} replaced meanwhile (kept)"
        return Outcome("done", detail)

    async def announce(
        self, decision: Decision, involved: Mapping[str, Any], outcome: Outcome | None = None
    ) -> None:
        """The decision's Event on its owner (``involved``: its ``involvedObject``). An Event the
        API refuses is logged: it is never worth failing a round for."""
        message = decision.message
        if outcome is not None and outcome.word in ("failed", "conflict"):
            message = f"{message}: {outcome}"
        warning = decision.kind in (DecisionKind.ALERT, DecisionKind.HOLD) or (
            outcome is not None and not outcome.ok
        )
        try:
            await self.events.record_on(
                involved,
                decision.reason,
                message,
                type_="Warning" if warning else "Normal",
                action=(decision.action.value if decision.action else decision.kind.value),
                key=decision.key,
            )
        except (ApiError, ConnectionLost) as error:
            log.warning("no Event for %s on %s: %s", decision.reason, decision.owner, error)
