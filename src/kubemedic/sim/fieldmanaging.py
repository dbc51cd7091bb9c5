"""Field ownership (``metadata.managedFields``) kept on every write, as the API server keeps it.

The API server runs each write through a chain of field managers
(``k8s.io/apimachinery/pkg/util/managedfields/internal``); this module is that chain over plain
JSON objects, on the structured merge of :mod:`kubemedic.sim.fieldsets`. Server-side apply
(:mod:`kubemedic.sim.applying`) runs its configuration through the same books.

A manager is its name, operation (``Update``/``Apply``), subresource and, for ``Update`` only,
the apiVersion it wrote with. The name is the ``fieldManager`` parameter or else the User-Agent
up to its first ``/`` (:func:`manager_name`).

Updates (create, PUT, non-apply patches; :func:`track_update`) compare the object before and
after. Added or modified fields move to the writer, leaving every other manager (even an
applier: updates never conflict); removed fields leave everyone; managers left with nothing
disappear. The writer's entry takes the write's time only when the write gave it fields. A
create is compared with the kind's Go zero value, where ``spec``, ``spec.template`` and the like
already exist: real entries carry ``"."`` on ``f:labels`` but never on ``f:spec``. Type and
identity metadata (:data:`STRIPPED_FIELDS`) are never owned, nor what the strategy resets:
``status`` through the main resource, ``spec`` through ``/status`` (plus Deployment labels, Pod
owner references and deletionTimestamp). At most ten ``Update`` entries are kept; the oldest
fold into ``ancient-changes``.

managedFields sent by a client are honoured when they decode (tools rewrite ownership that
way); missing or undecodable ones keep the stored ones, ``[]`` or ``[{}]`` clear them, and
subresource writes ignore them. An existing object without managedFields is not tracked by
updates (``skipNonApplied``); the first apply credits its fields to ``before-first-apply``.

Between managers, :func:`update_managers` moves changed fields to the writer, or raises
:class:`Conflicts` for an applier that may not take them.

Entries are sorted like ``sortEncodedManagedFields``: ``Apply`` before ``Update``, then by time
(whole seconds), manager, apiVersion and subresource.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeAlias

from kubemedic.model.fieldpaths import FieldPath
from kubemedic.model.managedfields import ManagedFieldsError, decode_fieldsv1, encode_fieldsv1
from kubemedic.sim import errors, fieldsets, naming
from kubemedic.sim.schema import SchemaNode

FieldSet: TypeAlias = frozenset[FieldPath]
Obj: TypeAlias = Mapping[str, Any]

FIELD_MANAGER_MAX_LENGTH: Final = 128
MAX_UPDATE_MANAGERS: Final = 10

_META: Final = ("name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName")
#: Never owned (``stripMetaManager``): exactly these paths, not their children.
STRIPPED_FIELDS: Final[FieldSet] = frozenset(
    FieldPath.of(*parts)
    for parts in (
        ("apiVersion",),
        ("kind",),
        ("metadata",),
        *(("metadata", name) for name in _META),
        *(("metadata", name) for name in ("generation", "managedFields", "resourceVersion")),
    )
)

_STATUS_EXTRA_RESETS: Final[Mapping[tuple[str, str], tuple[tuple[str, ...], ...]]] = {
    ("", "Pod"): (("metadata", "deletionTimestamp"), ("metadata", "ownerReferences")),
    ("apps", "Deployment"): (("metadata", "labels"),),
}

# --- managers --------------------------------------------------------------------------------


def manager_name(field_manager: str | None, user_agent: str | None) -> str:
    """The manager a write is recorded under: ``fieldManager`` if given, else the User-Agent
    before its first ``/`` (unprintable characters dropped, cut at 128 bytes), else
    ``unknown``. An explicit name is not shortened: :func:`validate_field_manager` rejects it."""
    if field_manager:
        return field_manager
    prefix, size = [], 0
    for char in (user_agent or "").split("/", 1)[0]:
        if not char.isprintable():
            continue
        size += len(char.encode())
        if size > FIELD_MANAGER_MAX_LENGTH:
            break
        prefix.append(char)
    return "".join(prefix) or "unknown"


def validate_field_manager(field_manager: str | None, *, options: str, apply: bool = False) -> None:
    """422 as ``ValidateFieldManager`` (and, for apply, ``ValidatePatchOptions``); ``options``
    is ``CreateOptions``, ``UpdateOptions`` or ``PatchOptions``."""
    name = field_manager or ""
    causes: list[errors.Cause] = []
    if apply and not name:
        message = "Required value: is required for apply patch"
        causes.append(errors.Cause("FieldValueRequired", message, "fieldManager"))
    if len(name.encode()) > FIELD_MANAGER_MAX_LENGTH:
        message = f"Too long: must have at most {FIELD_MANAGER_MAX_LENGTH} bytes"
        causes.append(errors.Cause("FieldValueTooLong", message, "fieldManager"))
    position = 0
    for char in name:
        if not char.isprintable():
            message = (
                f"Invalid value: {naming.go_quote(name)}: invalid character "
                f"U+{ord(char):04X} (at position {position})"
            )
            causes.append(errors.Cause("FieldValueInvalid", message, "fieldManager"))
        position += len(char.encode())
    if causes:
        raise errors.invalid(options, "", causes, group="meta.k8s.io")


@dataclass(frozen=True, slots=True)
class Identity:
    """A manager as ``BuildManagerIdentifier`` sees it (appliers without apiVersion)."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""

    @classmethod
    def of(cls, manager: str, operation: str, api_version: str, subresource: str) -> Identity:
        return cls(manager, operation, "" if operation == "Apply" else api_version, subresource)

    @property
    def key(self) -> str:
        """The identifier's JSON, which the API server sorts managers by."""
        names = ("manager", "operation", "apiVersion", "subresource")
        values = (self.manager, self.operation, self.api_version, self.subresource)
        return json.dumps(
            {k: v for k, v in zip(names, values, strict=True) if v}, separators=(",", ":")
        )

    def describe(self) -> str:
        """``printManager``: ``"kubectl-edit" using apps/v1``, ``"x" with subresource "status"``."""
        text = naming.go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {naming.go_quote(self.subresource)}"
        return text + (f" using {self.api_version}" if self.operation == "Update" else "")


@dataclass(frozen=True, slots=True)
class Entry:
    """One manager's fields; ``encoded`` is the stored entry, written back while nothing
    changes, and ``fieldsv1`` the encoded ``fields``, kept while they do not change."""

    fields: FieldSet
    api_version: str
    applied: bool
    time: str | None
    encoded: Obj | None = dataclasses.field(default=None, compare=False)
    fieldsv1: Obj | None = dataclasses.field(default=None, compare=False)

    def changed(self, **changes: Any) -> Entry:
        same = changes.get("fields", self.fields) == self.fields
        fieldsv1 = self.fieldsv1 if same else None
        return dataclasses.replace(self, encoded=None, fieldsv1=fieldsv1, **changes)


Managed: TypeAlias = dict[Identity, Entry]


class ManagedFieldsDecodeError(ValueError):
    """Stored or sent managedFields that the API server could not decode."""


class Conflicts(Exception):
    """Fields an apply would change that other managers own, per manager."""

    def __init__(self, conflicts: Mapping[Identity, Collection[FieldPath]]) -> None:
        super().__init__(f"{sum(map(len, conflicts.values()))} conflicts")
        self.conflicts = dict(conflicts)


def decode_managed(raw: object, *, keep: bool = False) -> Managed:
    """``DecodeManagedFields``: the entries of ``metadata.managedFields`` by identity;
    ``keep`` remembers each entry as given, to write it back while it does not change."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ManagedFieldsDecodeError("managedFields must be a list")
    managed: Managed = {}
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ManagedFieldsDecodeError(f"managed fields entry {i} is not an object")
        operation, version, kind = (
            item.get("operation"),
            item.get("apiVersion"),
            item.get("fieldsType"),
        )
        if operation not in ("Apply", "Update"):
            raise ManagedFieldsDecodeError("operation must be `Apply` or `Update`")
        if not isinstance(version, str) or not version:
            raise ManagedFieldsDecodeError("apiVersion must not be empty")
        if kind != "FieldsV1":
            problem = "invalid fieldsType" if kind else "missing fieldsType"
            raise ManagedFieldsDecodeError(f"{problem} in managed fields entry {i}")
        try:
            fields = decode_fieldsv1(item.get("fieldsV1") or {})
        except ManagedFieldsError as err:
            raise ManagedFieldsDecodeError(f"error decoding set: {err}") from None
        time = item.get("time")
        manager, subresource = str(item.get("manager") or ""), str(item.get("subresource") or "")
        managed[Identity.of(manager, str(operation), version, subresource)] = Entry(
            fields,
            version,
            operation == "Apply",
            time if isinstance(time, str) else None,
            item if keep else None,
            item.get("fieldsV1") if keep else None,
        )
    return managed


def encode_managed(managed: Managed) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` list, in the API server's order. The list is remembered
    with ``managed``, so the next write to the object need not decode it again."""
    entries: list[tuple[Identity, Entry, dict[str, Any]]] = []
    for identity, entry in managed.items():
        if entry.encoded is not None:
            entries.append((identity, entry, dict(entry.encoded)))
            continue
        out: dict[str, Any] = {"manager": identity.manager} if identity.manager else {}
        out["operation"] = "Apply" if entry.applied else identity.operation
        out["apiVersion"] = entry.api_version
        if entry.time is not None:
            out["time"] = entry.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = entry.fieldsv1 or encode_fieldsv1(entry.fields)
        if identity.subresource:
            out["subresource"] = identity.subresource
        entries.append((identity, entry, out))
    entries.sort(key=lambda t: _order(t[2]))
    encoded = [out for _, _, out in entries]
    remembered = {
        identity: dataclasses.replace(entry, encoded=out, fieldsv1=out["fieldsV1"])
        for identity, entry, out in entries
    }
    _remember(encoded, remembered)
    return encoded


def _order(entry: Obj) -> tuple[str, int, str, str, str]:
    """``sortEncodedManagedFields``."""
    return (
        entry["operation"],
        _seconds(entry.get("time")),
        entry.get("manager", ""),
        entry["apiVersion"],
        entry.get("subresource", ""),
    )


@functools.lru_cache(maxsize=4096)
def _seconds(time: str | None) -> int:
    try:
        return math.floor(datetime.fromisoformat(time).timestamp()) if time else 0
    except ValueError:
        return 0


_STORED: dict[int, tuple[list[Any], Managed]] = {}
_STORED_LIMIT: Final = 4096


def decode_stored(raw: object) -> Managed:
    """:func:`decode_managed` of a stored object's managedFields, remembered while the store
    keeps that list (it is replaced, never changed in place, on every write)."""
    if not isinstance(raw, list):
        return decode_managed(raw)
    hit = _STORED.get(id(raw))
    if hit is not None and hit[0] is raw:
        return dict(hit[1])
    managed = decode_managed(raw, keep=True)
    _remember(raw, managed)
    return dict(managed)


def _remember(raw: list[Any], managed: Managed) -> None:
    if len(_STORED) >= _STORED_LIMIT:
        del _STORED[next(iter(_STORED))]
    _STORED[id(raw)] = (raw, managed)


# --- what a write touches --------------------------------------------------------------------


def object_fieldset(obj: Obj, schema: SchemaNode | None, *, strip: bool = True) -> set[FieldPath]:
    """The fields of ``obj`` (``Compare(nothing, obj).Added``): what it would give a manager
    creating it from nothing, without :data:`STRIPPED_FIELDS` unless ``strip`` is off."""
    added = fieldsets.compare(fieldsets.ABSENT, obj, schema).added
    return added - STRIPPED_FIELDS if strip else added


def reset_fields(*, group: str, kind: str, schema: SchemaNode | None, subresource: str) -> FieldSet:
    """Paths the resource's strategy resets on writes through ``subresource`` (untracked)."""

    def has(name: str) -> bool:
        return schema is None or schema.field(name) is not None

    if not subresource:
        return frozenset({FieldPath.of("status")}) if has("status") else frozenset()
    if subresource != "status":
        return frozenset()
    extra = _STATUS_EXTRA_RESETS.get((group, kind), ())
    spec = (FieldPath.of("spec"),) if has("spec") else ()
    return frozenset((*spec, *(FieldPath.of(*p) for p in extra)))


def _meta(obj: Obj | None) -> Obj:
    meta = obj.get("metadata") if obj is not None else None
    return meta if isinstance(meta, Mapping) else {}


def without_managed_fields(obj: Obj) -> dict[str, Any]:
    """A shallow copy of ``obj`` whose metadata has no managedFields (what writes compare)."""
    out = dict(obj)
    meta = out.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
    return out


# --- the update chain ------------------------------------------------------------------------


def update_managers(
    managed: Managed,
    comparison: fieldsets.Comparison,
    *,
    writer: Identity | None,
    ignored: Collection[FieldPath],
    force: bool,
) -> None:
    """``Updater.update``: take changed fields from every manager but ``writer`` (or raise
    :class:`Conflicts` unless ``force``), drop removed fields, forget managers left empty."""
    comparison = comparison.excluding(ignored)
    changed = comparison.modified | comparison.added
    conflicts = {
        identity: entry.fields & changed
        for identity, entry in managed.items()
        if identity != writer and not entry.fields.isdisjoint(changed)
    }
    if conflicts and not force:
        raise Conflicts(conflicts)
    for identity, entry in list(managed.items()):
        kept = entry
        lost = conflicts.get(identity, frozenset()) | (entry.fields & comparison.removed)
        if identity != writer and lost:
            kept = managed[identity] = entry.changed(fields=entry.fields - lost)
        if not kept.fields:
            del managed[identity]


def record_update(
    managed: Managed,
    live: Obj,
    new: Obj,
    *,
    writer: Identity,
    schema: SchemaNode | None,
    time: str,
    ignored: Collection[FieldPath],
) -> None:
    """One ``Update`` through the chain below ``skipNonApplied``: the writer gains what changed.

    Raises :class:`~kubemedic.sim.fieldsets.TypedError` when an object does not fit its schema.
    """
    comparison = fieldsets.compare(live, new, schema)
    update_managers(managed, comparison, writer=None, ignored=ignored, force=True)
    changed = (comparison.modified | comparison.added) - comparison.removed
    current = fieldsets.recursive_difference(changed, ignored) - STRIPPED_FIELDS
    if current:
        previous = managed.get(writer)
        if previous is None:
            managed[writer] = Entry(frozenset(current), writer.api_version, False, time)
        else:
            managed[writer] = previous.changed(fields=previous.fields | current, time=time)
    _cap_update_managers(managed)


def _cap_update_managers(managed: Managed) -> None:
    """``capManagersManager``: fold the oldest ``Update`` entries into ``ancient-changes``."""
    updaters = [identity for identity, entry in managed.items() if not entry.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda i: (_seconds(managed[i].time), i.key))
    first_of_version: dict[str, Identity] = {}
    length = len(updaters)
    for identity in updaters:
        if length <= MAX_UPDATE_MANAGERS:
            break
        entry = managed[identity]
        if entry.api_version not in first_of_version:
            first_of_version[entry.api_version] = identity
            continue
        bucket = Identity("ancient-changes", "Update", entry.api_version)
        if bucket not in managed:
            managed[bucket] = managed.pop(first_of_version[entry.api_version])
        fields = entry.fields | managed[bucket].fields
        managed[bucket] = Entry(fields, entry.api_version, entry.applied, entry.time)
        del managed[identity]
        length -= 1


def _is_reset(raw: object) -> bool:
    """``isResetManagedFields``: ``[]`` or one entry with every field empty."""
    if not isinstance(raw, list) or len(raw) > 1:
        return False
    entry = raw[0] if raw else {}
    return isinstance(entry, Mapping) and entry.get("fieldsV1") is None and not any(entry.values())


def _decode_live_or_new(live: object, new: object, *, subresource: str) -> Managed:
    if not subresource and new is not live and new != live:
        if _is_reset(new):
            return {}
        try:
            managed = decode_managed(new)
        except ManagedFieldsDecodeError:
            managed = {}
        if managed:
            return managed
    try:
        return decode_stored(live)
    except ManagedFieldsDecodeError:
        return {}


def track_update(
    *,
    old: Obj | None,
    new: dict[str, Any],
    manager: str,
    subresource: str = "",
    time: str,
    api_version: str,
    schema: SchemaNode | None,
    reset: Collection[FieldPath] | None = None,
) -> None:
    """Set ``new["metadata"]["managedFields"]`` for a non-apply write of ``new`` over ``old``
    (``None`` for a create) through ``subresource`` at ``time`` (RFC 3339).

    ``new`` must be the object as it will be stored (defaulted, strategy applied). ``reset``
    overrides the strategy's reset fields (:func:`reset_fields`). Objects that do not fit their
    schema are stored without managedFields, as the API server's ``UpdateNoErrors`` does.
    """
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    group, kind = api_version.rpartition("/")[0], str(new.get("kind") or "")
    live = old if old is not None else fieldsets.typed_zero(group=group, kind=kind, schema=schema)
    stored, sent = _meta(live).get("managedFields"), meta.pop("managedFields", None)
    managed = _decode_live_or_new(stored, sent, subresource=subresource)
    if not managed and _meta(old).get("uid"):
        return  # skipNonApplied: an existing untracked object stays untracked until applied
    if reset is None:
        reset = reset_fields(group=group, kind=kind, schema=schema, subresource=subresource)
    writer = Identity.of(manager or "unknown", "Update", api_version, subresource)
    try:
        record_update(
            managed,
            without_managed_fields(live),
            new,
            writer=writer,
            schema=schema,
            time=time,
            ignored=reset,
        )
    except fieldsets.TypedError:
        return
    if managed:
        meta["managedFields"] = encode_managed(managed)
