"""The policy's records as JSON-able dicts, and back: how the archive keeps them.

The archive (``kubemedic.store``) is a lower layer than the repair package and never imports it:
it stores and returns these dicts, reading only a few keys of them for its indexed columns
(``id``, ``node``, ``trigger``, ``started``, ``finished``, ``outcome``, ``dryRun``). Shapes:

* keys are camelCase (``phaseStarted``, ``bootId``, ``dryRun``), one per field, every field
  always written (``None`` as ``null``);
* times are RFC 3339 strings in UTC with a ``Z`` (``2026-12-02T10:00:00Z``; microseconds only
  when there are some), read back as aware UTC datetimes;
* enums (``Step``, ``Kind``, ``Action``, ``Brake``) by value (``"reboot"``, ``"act"``,
  ``"restart-kubelet"``, ``"max-in-flight"``);
* ``steps`` a list of step dicts, oldest first; ``args`` an object of strings.

Reading is strict, so a row written by another version or edited by hand is named rather than
half-understood: a key the record does not have, a required key that is missing, or a value of
the wrong type raises :class:`CodecError` naming the field (``repair.steps[1].started: expected
an RFC 3339 time, found 'yesterday'``). A missing optional key takes the field's default.

Node states (what ``kubemedic nodes`` prints, ``records.NodeState``) are only written
(:func:`node_state_to_json`), without their ``brake`` (the reason says it); their states are
:data:`NODE_STATES`.

Pure: no I/O (the policy's import contract).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final, TypeVar

from kubemedic.errors import InputError
from kubemedic.model import objects
from kubemedic.repair.policy.records import (
    Action,
    Brake,
    Decision,
    Kind,
    LedgerEntry,
    NodeState,
    Repair,
    Step,
    StepRecord,
)

__all__ = [
    "NODE_STATES",
    "CodecError",
    "decision_from_json",
    "decision_to_json",
    "entry_from_json",
    "entry_to_json",
    "node_state_to_json",
    "repair_from_json",
    "repair_to_json",
    "step_from_json",
    "step_to_json",
    "time_from_json",
    "time_to_json",
]

NODE_STATES: Final = ("healthy", "unhealthy", "repairing", "held", "quarantined", "gone")
"""What a node is, as ``kubemedic nodes`` says it: nothing wrong; a condition is held (not yet
repaired); a repair is in flight; a brake holds its repair back; quarantined until released;
no longer in the cluster (deleted, or its Machine replaced)."""

Json = dict[str, Any]
E = TypeVar("E", bound=StrEnum)
_REQUIRED: Final = object()


class CodecError(InputError, ValueError):
    """A dict that is not a record of the shape this module writes; ``str()`` names the field
    (dotted, list items by index) and says what was expected."""


# -- writing ----------------------------------------------------------------------------------


def time_to_json(value: datetime) -> str:
    """RFC 3339 in UTC with ``Z``; microseconds only when there are some."""
    if value.tzinfo is None:
        raise ValueError(f"time {value.isoformat()} has no timezone")
    return objects.format_exact_time(value)


def _opt_time(value: datetime | None) -> str | None:
    return None if value is None else time_to_json(value)


def step_to_json(step: StepRecord) -> Json:
    return {
        "action": step.action,
        "started": time_to_json(step.started),
        "finished": _opt_time(step.finished),
        "outcome": step.outcome,
        "detail": step.detail,
    }


def repair_to_json(repair: Repair) -> Json:
    return {
        "id": repair.id,
        "node": repair.node,
        "pool": repair.pool,
        "trigger": repair.trigger,
        "started": time_to_json(repair.started),
        "step": repair.step.value,
        "phase": repair.phase,
        "phaseStarted": time_to_json(repair.phase_started),
        "stepStarted": time_to_json(repair.step_started),
        "cause": repair.cause,
        "bootId": repair.boot_id,
        "request": repair.request,
        "fenced": repair.fenced,
        "cordoned": repair.cordoned,
        "machine": repair.machine,
        "owner": repair.owner,
        "readySince": _opt_time(repair.ready_since),
        "detail": repair.detail,
        "dryRun": repair.dry_run,
        "steps": [step_to_json(step) for step in repair.steps],
    }


def entry_to_json(entry: LedgerEntry) -> Json:
    return {
        "id": entry.id,
        "node": entry.node,
        "trigger": entry.trigger,
        "started": time_to_json(entry.started),
        "finished": time_to_json(entry.finished),
        "outcome": entry.outcome,
        "steps": [step_to_json(step) for step in entry.steps],
        "dryRun": entry.dry_run,
    }


def decision_to_json(decision: Decision, at: datetime | None = None) -> Json:
    """``decision`` as given at ``at`` (the round's time, kept as ``at`` when given; a decision
    read back ignores it: the record has no time of its own)."""
    document: Json = {
        "kind": decision.kind.value,
        "node": decision.node,
        "reason": decision.reason,
        "message": decision.message,
        "action": None if decision.action is None else decision.action.value,
        "repair": decision.repair,
        "key": decision.key,
        "args": dict(sorted(decision.args.items())),
        "outcome": decision.outcome,
        "dryRun": decision.dry_run,
        "brake": None if decision.brake is None else decision.brake.value,
    }
    if at is not None:
        document["at"] = time_to_json(at)
    return document


def node_state_to_json(state: NodeState, *, since: datetime | None = None) -> Json:
    """A node's state as the archive keeps it: ``{"node", "state", "step", "reason", "since"}``;
    ``state.state`` one of :data:`NODE_STATES`, ``step`` the ladder step (``""`` when none)."""
    if state.state not in NODE_STATES:
        raise ValueError(
            f"node {state.name}: state {state.state!r} is not one of {', '.join(NODE_STATES)}"
        )
    return {
        "node": state.name,
        "state": state.state,
        "step": state.step,
        "reason": state.reason,
        "since": _opt_time(since),
    }


# -- reading ----------------------------------------------------------------------------------


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"


def time_from_json(value: object, *, where: str = "time") -> datetime:
    """An RFC 3339 time (a zone required) as an aware UTC datetime; ``CodecError`` otherwise."""
    parsed = objects.parse_time(value) if isinstance(value, str) else None
    if parsed is None or not _zoned(value):
        raise CodecError(
            f"{where}: expected an RFC 3339 time with a zone (2026-12-02T10:00:00Z), "
            f"found {_shown(value)}"
        )
    return parsed.astimezone(UTC)


def _zoned(text: object) -> bool:
    if not isinstance(text, str):
        return False
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except ValueError:
        return False


class _Reader:
    """The keys of one dict, taken one by one; ``done`` refuses whatever is left."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise CodecError(f"{where}: expected an object, found {_shown(data)}")
        self.data = data
        self.where = where
        self.seen: set[str] = set()

    def _get(self, key: str, default: object) -> object:
        self.seen.add(key)
        if key in self.data:
            return self.data[key]
        if default is _REQUIRED:
            raise CodecError(f"{self.where}.{key}: missing (a required field)")
        return default

    def _wrong(self, key: str, what: str, value: object) -> CodecError:
        return CodecError(f"{self.where}.{key}: expected {what}, found {_shown(value)}")

    def text(self, key: str, default: object = _REQUIRED) -> str:
        value = self._get(key, default)
        if not isinstance(value, str):
            raise self._wrong(key, "text", value)
        return value

    def opt_text(self, key: str) -> str | None:
        value = self._get(key, None)
        if value is not None and not isinstance(value, str):
            raise self._wrong(key, "text or null", value)
        return value

    def flag(self, key: str, default: bool = False) -> bool:
        value = self._get(key, default)
        if not isinstance(value, bool):
            raise self._wrong(key, "true or false", value)
        return value

    def time(self, key: str) -> datetime:
        return time_from_json(self._get(key, _REQUIRED), where=f"{self.where}.{key}")

    def opt_time(self, key: str) -> datetime | None:
        value = self._get(key, None)
        return None if value is None else time_from_json(value, where=f"{self.where}.{key}")

    def choice(self, key: str, kind: type[E]) -> E:
        value = self._get(key, _REQUIRED)
        words = [member.value for member in kind]
        if not isinstance(value, str) or value not in words:
            raise self._wrong(key, f"one of {', '.join(words)}", value)
        return kind(value)

    def opt_choice(self, key: str, kind: type[E]) -> E | None:
        if self._get(key, None) is None:
            return None
        return self.choice(key, kind)

    def steps(self, key: str) -> tuple[StepRecord, ...]:
        value = self._get(key, [])
        if not isinstance(value, list):
            raise self._wrong(key, "a list of steps", value)
        return tuple(
            step_from_json(item, where=f"{self.where}.{key}[{index}]")
            for index, item in enumerate(value)
        )

    def strings(self, key: str) -> dict[str, str]:
        value = self._get(key, {})
        if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()
        ):
            raise self._wrong(key, "an object of text values", value)
        return dict(value)

    def done(self) -> None:
        unknown = sorted(str(key) for key in self.data if key not in self.seen)
        if unknown:
            fields = ", ".join(sorted(self.seen))
            raise CodecError(
                f"{self.where}.{unknown[0]}: not a field of this record (its fields: {fields})"
            )


def step_from_json(data: object, *, where: str = "step") -> StepRecord:
    read = _Reader(data, where)
    step = StepRecord(
        action=read.text("action"),
        started=read.time("started"),
        finished=read.opt_time("finished"),
        outcome=read.text("outcome", ""),
        detail=read.text("detail", ""),
    )
    read.done()
    return step


def repair_from_json(data: object, *, where: str = "repair") -> Repair:
    read = _Reader(data, where)
    repair = Repair(
        id=read.text("id"),
        node=read.text("node"),
        pool=read.text("pool", ""),
        trigger=read.text("trigger"),
        started=read.time("started"),
        step=read.choice("step", Step),
        phase=read.text("phase"),
        phase_started=read.time("phaseStarted"),
        step_started=read.time("stepStarted"),
        cause=read.text("cause", "node"),
        boot_id=read.text("bootId", ""),
        request=read.text("request", ""),
        fenced=read.flag("fenced"),
        cordoned=read.flag("cordoned"),
        machine=read.text("machine", ""),
        owner=read.text("owner", ""),
        ready_since=read.opt_time("readySince"),
        detail=read.text("detail", ""),
        dry_run=read.flag("dryRun"),
        steps=read.steps("steps"),
    )
    read.done()
    return repair


def entry_from_json(data: object, *, where: str = "ledger entry") -> LedgerEntry:
    read = _Reader(data, where)
    entry = LedgerEntry(
        id=read.text("id"),
        node=read.text("node"),
        trigger=read.text("trigger"),
        started=read.time("started"),
        finished=read.time("finished"),
        outcome=read.text("outcome"),
        steps=read.steps("steps"),
        dry_run=read.flag("dryRun"),
    )
    read.done()
    return entry


def decision_from_json(data: object, *, where: str = "decision") -> Decision:
    read = _Reader(data, where)
    decision = Decision(
        kind=read.choice("kind", Kind),
        node=read.opt_text("node"),
        reason=read.text("reason"),
        message=read.text("message"),
        action=read.opt_choice("action", Action),
        repair=read.text("repair", ""),
        key=read.text("key", ""),
        args=read.strings("args"),
        outcome=read.text("outcome", ""),
        dry_run=read.flag("dryRun"),
        brake=read.opt_choice("brake", Brake),
    )
    read.opt_time("at")  # when it was given: checked, not part of the record
    read.done()
    return decision
