"""Field ownership (``metadata.managedFields``) kept on every write, as the API server keeps it.

The API server runs each write through a chain of field managers
(``k8s.io/apimachinery/pkg/util/managedfields/internal``); this module is that chain over plain
JSON objects, on the structured merge of :mod:`kubemedic.sim.apiserver.fields.fieldsets`.
Server-side apply (:mod:`kubemedic.sim.apiserver.fields.applying`) runs its configuration through
the same books.

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

Updates are recorded on the FieldsV1 documents themselves
(:mod:`kubemedic.sim.apiserver.fields.fieldtrees`): a write costs a walk of what it changed, and
entries it does not touch are written back as they were read. :func:`record_update_by_sets` states
the same chain on sets of paths; the two must agree on every write. Entries, their decoding and
their order are in
:mod:`kubemedic.sim.apiserver.fields.fieldentries`.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping
from typing import Any, Final, TypeAlias

import orjson

from kubemedic.model.fieldpaths import FieldPath
from kubemedic.sim.apiserver.fields import fieldsets, fieldtrees
from kubemedic.sim.apiserver.fields.fieldentries import (
    FIELD_MANAGER_MAX_LENGTH,
    Entry,
    Identity,
    Managed,
    ManagedFieldsDecodeError,
    decode_managed,
    decode_stored,
    encode_managed,
    manager_name,
    seconds,
    validate_field_manager,
)
from kubemedic.sim.machinery.definitions import SchemaNode

FieldSet: TypeAlias = frozenset[FieldPath]
Obj: TypeAlias = Mapping[str, Any]

__all__ = [
    "FIELD_MANAGER_MAX_LENGTH",
    "MAX_UPDATE_MANAGERS",
    "STRIPPED_FIELDS",
    "Conflicts",
    "Entry",
    "FieldSet",
    "Identity",
    "Managed",
    "ManagedFieldsDecodeError",
    "decode_managed",
    "decode_stored",
    "encode_managed",
    "manager_name",
    "record_update",
    "record_update_by_sets",
    "reset_fields",
    "track_update",
    "update_managers",
    "validate_field_manager",
    "without_managed_fields",
]

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

_STRIPPED_DIFF: Final = fieldtrees.diff_of(fieldtrees.path_keys(path) for path in STRIPPED_FIELDS)

_STATUS_EXTRA_RESETS: Final[Mapping[tuple[str, str], tuple[tuple[str, ...], ...]]] = {
    ("", "Pod"): (("metadata", "deletionTimestamp"), ("metadata", "ownerReferences")),
    ("apps", "Deployment"): (("metadata", "labels"),),
}


class Conflicts(Exception):
    """Fields an apply would change that other managers own, per manager."""

    def __init__(self, conflicts: Mapping[Identity, Collection[FieldPath]]) -> None:
        super().__init__(f"{sum(map(len, conflicts.values()))} conflicts")
        self.conflicts = dict(conflicts)


# --- what a write touches --------------------------------------------------------------------


def reset_fields(*, group: str, kind: str, schema: SchemaNode | None, subresource: str) -> FieldSet:
    """Paths the resource's strategy resets on writes through ``subresource`` (untracked)."""
    return _reset_fields(group, kind, schema, subresource)


@functools.lru_cache(maxsize=256)
def _reset_fields(group: str, kind: str, schema: SchemaNode | None, subresource: str) -> FieldSet:
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

    Raises :class:`~kubemedic.sim.apiserver.fields.fieldsets.TypedError` when an object does not fit
    its schema. Works on FieldsV1 trees, and on field sets (:func:`record_update_by_sets`, which it
    must equal) only for lists that repeat a key.
    """
    if not _record_by_trees(
        managed, live, new, writer=writer, schema=schema, time=time, ignored=ignored
    ):
        record_update_by_sets(
            managed, live, new, writer=writer, schema=schema, time=time, ignored=ignored
        )


def record_update_by_sets(
    managed: Managed,
    live: Obj,
    new: Obj,
    *,
    writer: Identity,
    schema: SchemaNode | None,
    time: str,
    ignored: Collection[FieldPath],
) -> None:
    """:func:`record_update` as ``Updater.update`` states it, on sets of field paths."""
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


def _record_by_trees(
    managed: Managed,
    live: Obj,
    new: Obj,
    *,
    writer: Identity,
    schema: SchemaNode | None,
    time: str,
    ignored: Collection[FieldPath],
) -> bool:
    """:func:`record_update` on FieldsV1 trees (:mod:`kubemedic.sim.apiserver.fields.fieldtrees`):
    the same entries, without a field set built or a document encoded again. False, with ``managed``
    untouched, for a list repeating a key, which only the set-based walk handles."""
    try:
        changed, removed = fieldtrees.compare(live, new, schema)
    except fieldtrees.Duplicates:
        return False
    prefixes = _prefix_keys(ignored)
    fieldtrees.cut(changed, prefixes)
    fieldtrees.cut(removed, prefixes)
    for identity, entry in list(managed.items()):
        tree = entry.tree
        kept = tree
        if changed:
            kept = fieldtrees.minus(kept, changed)
        if removed:
            kept = fieldtrees.minus(kept, removed)
        if not kept:
            del managed[identity]
        elif kept is not tree:
            managed[identity] = entry.changed(tree=kept)
    fieldtrees.strip(changed, _STRIPPED_DIFF)
    if changed:
        previous = managed.get(writer)
        if previous is None:
            document = fieldtrees.document(changed)
            managed[writer] = Entry(None, writer.api_version, False, time, tree=document)
        else:
            merged = fieldtrees.union(previous.tree, changed)
            managed[writer] = previous.changed(tree=merged, time=time)
    _cap_update_managers(managed)
    return True


def _prefix_keys(ignored: Collection[FieldPath]) -> list[fieldtrees.Keys]:
    if isinstance(ignored, frozenset):
        known = _PREFIXES.get(ignored)
        if known is None:
            if len(_PREFIXES) >= 256:
                _PREFIXES.clear()
            known = _PREFIXES[ignored] = [fieldtrees.path_keys(path) for path in ignored]
        return known
    return [fieldtrees.path_keys(path) for path in ignored]


_PREFIXES: dict[frozenset[FieldPath], list[fieldtrees.Keys]] = {}


def _cap_update_managers(managed: Managed) -> None:
    """``capManagersManager``: fold the oldest ``Update`` entries into ``ancient-changes``."""
    if len(managed) <= MAX_UPDATE_MANAGERS:
        return
    updaters = [identity for identity, entry in managed.items() if not entry.applied]
    if len(updaters) <= MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda i: (seconds(managed[i].time), i.key))
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
    stored, sent = _meta(old).get("managedFields"), meta.pop("managedFields", None)
    managed = _decode_live_or_new(stored, sent, subresource=subresource)
    if not managed and _meta(old).get("uid"):
        return  # skipNonApplied: an existing untracked object stays untracked until applied
    if reset is None:
        reset = reset_fields(group=group, kind=kind, schema=schema, subresource=subresource)
    writer = Identity.of(manager or "unknown", "Update", api_version, subresource)
    try:
        if old is None and not managed:
            created = _record_create(new, writer=writer, schema=schema, time=time, ignored=reset)
            if created is None:
                return
            managed = created
        else:
            live = (
                old
                if old is not None
                else fieldsets.typed_zero(group=group, kind=kind, schema=schema)
            )
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


#: What creates from nothing gave their writer, by the created object's JSON without the values
#: of :data:`STRIPPED_FIELDS` (which never reach an entry): the pods of one template, the events
#: of one kind differ in little else. ``False``: the object does not fit its schema.
_CREATED: dict[tuple[object, ...], fieldtrees.Tree | bool] = {}
_CREATED_LIMIT: Final = 4096
_STRIPPED_META: Final = frozenset(
    path.elements[1].field_name for path in STRIPPED_FIELDS if len(path) == 2
)


def _record_create(
    new: Obj,
    *,
    writer: Identity,
    schema: SchemaNode | None,
    time: str,
    ignored: Collection[FieldPath],
) -> Managed | None:
    """:func:`record_update` of ``new`` over the kind's zero value into no entries (None when
    ``new`` does not fit its schema)."""
    key = _create_key(new, schema=schema, ignored=ignored)
    known = _CREATED.get(key, True) if key is not None else True
    if known is True:
        group = writer.api_version.rpartition("/")[0]
        zero = fieldsets.typed_zero(group=group, kind=str(new.get("kind") or ""), schema=schema)
        managed: Managed = {}
        try:
            record_update(
                managed, zero, new, writer=writer, schema=schema, time=time, ignored=ignored
            )
        except fieldsets.TypedError:
            known = False
        else:
            known = managed[writer].tree if managed else {}
        if key is not None:
            if len(_CREATED) >= _CREATED_LIMIT:
                _CREATED.clear()
            _CREATED[key] = known
    if known is False:
        return None
    if not known:
        return {}
    assert isinstance(known, dict)
    return {writer: Entry(None, writer.api_version, False, time, tree=known)}


def _create_key(
    new: Obj, *, schema: SchemaNode | None, ignored: Collection[FieldPath]
) -> tuple[object, ...] | None:
    shown = {k: None if k in ("apiVersion", "kind") and _scalar(v) else v for k, v in new.items()}
    meta = new.get("metadata")
    if isinstance(meta, Mapping):
        shown["metadata"] = {
            k: None if k in _STRIPPED_META and _scalar(v) else v for k, v in meta.items()
        }
    try:
        text = orjson.dumps(shown)
    except TypeError:
        return None
    cut = tuple(sorted(_prefix_keys(ignored)))
    return (schema, str(new.get("kind") or ""), cut, text)


def _scalar(value: object) -> bool:
    return not isinstance(value, dict | list)
