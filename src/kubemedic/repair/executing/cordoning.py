"""Cordon, uncordon, quarantine and release a Node.

A cordon is ``spec.unschedulable: true`` (the scheduler places no new pod on the node; the
pods already there stay), as ``kubectl cordon`` writes it. The repair writes it with the field
manager ``kubemedic-repair`` together with the annotation ``kubemedic.io/repair``
(``{"id", "step", "phase", "since"}``), so ``managedFields`` and the annotation both say who
cordoned the node and for which repair. Uncordoning removes both (``spec.unschedulable`` is
removed, as ``kubectl uncordon`` does: its zero value is not serialised).

A **quarantine** is a cordon that only a person lifts: the label
``kubemedic.io/quarantined=true`` and the annotation ``kubemedic.io/quarantine-reason`` (a
sentence) with it. :func:`uncordon` refuses a quarantined node; :func:`release` (``kubemedic
nodes release NODE``) is the only way back, and it removes all of it.

Each function is one merge patch (plus one read where the answer depends on the node), safe to
repeat: writing what is already there changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from kubemedic.errors import KubemedicError
from kubemedic.kube.api import Api
from kubemedic.model.objects import format_time
from kubemedic.repair.providers import contract

__all__ = [
    "Cordoned",
    "ExecutingError",
    "RepairMark",
    "cordon",
    "is_quarantined",
    "quarantine",
    "release",
    "uncordon",
]


class ExecutingError(KubemedicError):
    """The executor refused or could not do what a decision asked; ``str()`` says why."""


@dataclass(frozen=True, slots=True)
class RepairMark:
    """The ``kubemedic.io/repair`` annotation: the repair in flight on the node."""

    id: str
    step: str
    phase: str
    since: datetime

    def to_json(self) -> str:
        since = format_time(self.since)
        body = {"id": self.id, "step": self.step, "phase": self.phase, "since": since}
        return orjson.dumps(body).decode()


@dataclass(frozen=True, slots=True)
class Cordoned:
    """What :func:`cordon` found and did: ``changed`` is False when the node was cordoned
    already (by a person, or by an earlier pass), so the repair must not uncordon it later
    unless it was its own cordon."""

    changed: bool
    node: dict[str, Any]


def is_quarantined(node: dict[str, Any]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return labels.get(contract.QUARANTINED_LABEL) == "true"


def _unschedulable(node: dict[str, Any]) -> bool:
    return bool((node.get("spec") or {}).get("unschedulable"))


async def cordon(api: Api, node: str, *, mark: RepairMark | None = None) -> Cordoned:
    """Cordon ``node`` and, with ``mark``, record the repair in ``kubemedic.io/repair``."""
    before = await contract.get_node(api, node)
    patch: dict[str, Any] = {"spec": {"unschedulable": True}}
    if mark is not None:
        patch["metadata"] = {"annotations": {contract.REPAIR_ANNOTATION: mark.to_json()}}
    after = await contract.patch_node(api, node, patch)
    return Cordoned(changed=not _unschedulable(before), node=after)


async def uncordon(api: Api, node: str) -> dict[str, Any]:
    """Make ``node`` schedulable again and drop ``kubemedic.io/repair``. ``ExecutingError``
    when the node is quarantined: only :func:`release` lifts a quarantine."""
    current = await contract.get_node(api, node)
    if is_quarantined(current):
        raise ExecutingError(
            f"node {node} is quarantined; it stays cordoned until a person runs "
            f"'kubemedic nodes release {node}'"
        )
    patch = {
        "spec": {"unschedulable": None},
        "metadata": {"annotations": {contract.REPAIR_ANNOTATION: None}},
    }
    return await contract.patch_node(api, node, patch)


async def quarantine(api: Api, node: str, *, reason: str) -> dict[str, Any]:
    """Cordon ``node``, label it ``kubemedic.io/quarantined=true`` and say why in
    ``kubemedic.io/quarantine-reason``; the repair in flight (``kubemedic.io/repair``) ends."""
    patch = {
        "spec": {"unschedulable": True},
        "metadata": {
            "labels": {contract.QUARANTINED_LABEL: "true"},
            "annotations": {
                contract.QUARANTINE_REASON_ANNOTATION: " ".join(reason.split())[:1000],
                contract.REPAIR_ANNOTATION: None,
            },
        },
    }
    return await contract.patch_node(api, node, patch)


async def release(api: Api, node: str) -> dict[str, Any]:
    """Lift a quarantine (``kubemedic nodes release NODE``): remove the label and the
    annotations the repair wrote and uncordon the node. Safe on a node that is not
    quarantined (it is uncordoned all the same: a person asked for it)."""
    patch = {
        "spec": {"unschedulable": None},
        "metadata": {
            "labels": {contract.QUARANTINED_LABEL: None},
            "annotations": {
                contract.QUARANTINE_REASON_ANNOTATION: None,
                contract.REPAIR_ANNOTATION: None,
            },
        },
    }
    return await contract.patch_node(api, node, patch)
