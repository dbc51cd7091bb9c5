"""Server-side apply: an applied configuration merged into the live object, ownership checked.

:func:`apply` merges the configuration into the live object. The applier owns exactly what the
configuration names; what it applied before and omits now is pruned unless another manager
owns it; a field that would change and belongs to another manager is a 409 conflict
(``FieldManagerConflict`` causes, :func:`conflict_error`) unless ``force`` hands it over. Equal
values are shared. The ``kubectl`` manager upgrades from client-side apply: conflicts over fields
that still match the ``last-applied-configuration`` annotation are forced, and the annotation
follows. The books are kept by :mod:`kubemedic.sim.apiserver.fields.fieldmanaging`.

The merge is structured-merge-diff's (over :mod:`kubemedic.sim.apiserver.fields.fieldsets`):
:func:`merge` lays an applied configuration over the live object (the configuration wins at leaves;
list items keep the live order, with shared items in the configuration's order and new ones where
the configuration puts them) and :func:`prune` removes what the applier stopped applying and nobody
else owns, with the three passes of ``merge.Updater.prune``. Containers emptied by pruning are
dropped, as the typed round trip drops emptied pointers, maps and lists (an emptied value struct
would come back as ``{}``). Configurations and live objects the schema cannot type
(:func:`typed_errors`: a list item without its key, a repeated key in the configuration) are a
500, as ``ObjectToTyped`` failing in the real server.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

from kubemedic.model.fieldpaths import FieldPath, PathElement
from kubemedic.sim.apiserver.fields import fieldmanaging, fieldsets
from kubemedic.sim.machinery import errors, managers
from kubemedic.sim.machinery.definitions import SchemaNode

__all__ = [
    "LAST_APPLIED",
    "apply",
    "conflict_error",
    "iterate",
    "merge",
    "prune",
    "remove_items",
    "typed_errors",
]

Obj: TypeAlias = Mapping[str, Any]
Path: TypeAlias = tuple[PathElement, ...]

LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
_EMPTIED: Final = object()

# --- server-side apply -----------------------------------------------------------------------


def apply(
    *,
    live: Obj | None,
    applied: Obj,
    manager: str,
    force: bool,
    subresource: str = "",
    time: str,
    api_version: str,
    schema: SchemaNode | None,
    kind: str | None = None,
    reset: Collection[FieldPath] | None = None,
) -> dict[str, Any]:
    """Server-side apply of ``applied`` by ``manager`` onto ``live`` (``None``: a create).

    Returns the new object with its managedFields; raises
    :class:`~kubemedic.sim.machinery.errors.StatusError` as the API server answers: 409 for
    conflicts, 400 for a configuration of another kind than ``kind`` (default: the live object's) or
    one carrying managedFields, 500 for one the schema cannot type (a list item without its key).
    """
    group = api_version.rpartition("/")[0]
    kind = kind or str((live or applied).get("kind") or "")
    if live is not None:
        live_obj = fieldmanaging.without_managed_fields(live)
    else:
        live_obj = fieldsets.typed_zero(group=group, kind=kind, schema=schema)
    try:
        managed = fieldmanaging.decode_stored(_meta(live).get("managedFields"))
    except fieldmanaging.ManagedFieldsDecodeError as err:
        raise _server_error(f"failed to decode managed fields: {err}") from None
    if applied.get("apiVersion") != api_version or applied.get("kind") != kind:
        raise errors.bad_request(f"invalid object type: {_gvk(applied)}")
    if reset is None:
        reset = fieldmanaging.reset_fields(
            group=group, kind=kind, schema=schema, subresource=subresource
        )
    writer = fieldmanaging.Identity.of(manager or "unknown", "Apply", api_version, subresource)
    context = _Applying(live_obj, applied, writer, schema, time, reset)
    try:
        result, managed = context.run(managed, force=force)
    except fieldmanaging.Conflicts as err:
        remaining = err.conflicts
        allowed = _allowed_by_last_applied(live_obj, schema, api_version)
        if manager == managers.KUBECTL and allowed is not None:
            remaining = {i: set(p) - allowed for i, p in remaining.items() if set(p) - allowed}
            if not remaining:
                result, managed = context.run(managed, force=True)
        if remaining:
            raise conflict_error(remaining) from None
    meta = result.get("metadata")
    if not isinstance(meta, dict):
        meta = result["metadata"] = {}
    annotations = meta.get("annotations")
    if (
        manager == managers.KUBECTL
        and isinstance(annotations, dict)
        and annotations.get(LAST_APPLIED)
    ):
        annotations[LAST_APPLIED] = _last_applied(applied)
    meta.pop("managedFields", None)
    if managed:
        meta["managedFields"] = fieldmanaging.encode_managed(managed)
    return result


@dataclass(frozen=True)
class _Applying:
    """One apply below ``lastAppliedManager``, which may repeat it with ``force``."""

    live: dict[str, Any]
    applied: Obj
    writer: fieldmanaging.Identity
    schema: SchemaNode | None
    time: str
    ignored: Collection[FieldPath]

    def run(
        self, managed_in: fieldmanaging.Managed, *, force: bool
    ) -> tuple[dict[str, Any], fieldmanaging.Managed]:
        managed = dict(managed_in)
        live, applied, schema, writer = self.live, self.applied, self.schema, self.writer
        version = str(applied.get("apiVersion"))
        if not managed:  # skipNonApplied: what exists was set before the first apply
            first = fieldmanaging.Identity.of(
                managers.BEFORE_FIRST_APPLY, "Update", version, writer.subresource
            )
            group, kind = version.rpartition("/")[0], str(applied.get("kind") or "")
            zero = fieldsets.typed_zero(group=group, kind=kind, schema=schema)
            try:
                fieldmanaging.record_update(
                    managed,
                    zero,
                    live,
                    writer=first,
                    schema=schema,
                    time=self.time,
                    ignored=self.ignored,
                )
            except fieldsets.TypedError as err:
                raise _server_error(
                    f"failed to create manager for existing fields: {err}"
                ) from None
        if isinstance(_meta(applied).get("managedFields"), list):
            raise errors.bad_request("metadata.managedFields must be nil")
        self._check_typed(applied, "patch", duplicates=False)
        self._check_typed(live, "live", duplicates=True)
        merged = merge(live, applied, schema)
        last = managed.get(writer)
        claimed = fieldsets.recursive_difference(
            fieldsets.to_fieldset(applied, schema), self.ignored
        )
        managed[writer] = fieldmanaging.Entry(
            frozenset(claimed), version, True, last.time if last else None
        )
        owned = set().union(*(entry.fields for entry in managed.values()))
        last_set = last.fields if last else frozenset()
        merged = prune(merged, last_applied=last_set, owned=owned, node=schema)
        comparison = fieldsets.compare(live, merged, schema)
        fieldmanaging.update_managers(
            managed, comparison, writer=writer, ignored=self.ignored, force=force
        )
        entry = managed.pop(writer, None)
        noop = fieldsets.json_equal(live, merged)
        if entry is not None and entry.fields - fieldmanaging.STRIPPED_FIELDS:
            time = entry.time if noop else self.time  # a no-op keeps the applier's time
            managed[writer] = entry.changed(
                fields=entry.fields - fieldmanaging.STRIPPED_FIELDS, time=time
            )
        return (copy.deepcopy(live) if noop else merged), managed

    def _check_typed(self, obj: Obj, which: str, *, duplicates: bool) -> None:
        problems = typed_errors(obj, self.schema, duplicates=duplicates)
        if problems:
            text = str(problems[0])
            if len(problems) > 1:
                text = "\n".join(["errors:", *(f"  {p}" for p in problems)])
            meta = _meta(obj)
            where = f"{meta.get('namespace', '')}/{meta.get('name', '')}; {_gvk(obj)}"
            raise _server_error(f"failed to create typed {which} object ({where}): {text}")


def conflict_error(
    conflicts: Mapping[fieldmanaging.Identity, Collection[FieldPath]],
) -> errors.StatusError:
    """409 as ``NewConflictError``: one cause per field, managers in identifier order."""
    lines: list[str] = []
    causes: list[errors.Cause] = []
    for identity in sorted(conflicts, key=lambda i: i.key):
        lines.append(f"conflicts with {identity.describe()}:")
        for path in iterate(conflicts[identity]):
            field = fieldsets.smd_path(path)
            lines.append(f"- {field}")
            reason = "FieldManagerConflict"
            causes.append(errors.Cause(reason, f"conflict with {identity.describe()}", field))
    if len(causes) == 1:
        message = f"Apply failed with 1 conflict: {causes[0].message}: {causes[0].field}"
    else:
        message = f"Apply failed with {len(causes)} conflicts: " + "\n".join(lines)
    return errors.StatusError(409, "Conflict", message, causes=tuple(causes))


def _allowed_by_last_applied(
    live: Obj, schema: SchemaNode | None, api_version: str
) -> set[FieldPath] | None:
    """Fields the client-side ``last-applied-configuration`` claims and the live object still
    matches (``lastAppliedManager``), or None without a usable annotation."""
    annotations = _meta(live).get("annotations")
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, Mapping) else None
    try:
        last = json.loads(text) if isinstance(text, str) else None
        if not isinstance(last, dict) or last.get("apiVersion") != api_version:
            return None
        claimed = fieldsets.to_fieldset(last, schema)
        differ = fieldsets.compare(last, live, schema)
    except (ValueError, fieldsets.TypedError):
        return None
    return claimed - differ.modified - differ.added - differ.removed


def _last_applied(applied: Obj) -> str:
    """The annotation ``lastAppliedUpdater`` writes: the configuration without the annotation,
    as Go's JSON encoder prints an unstructured object (sorted keys, HTML escaped, newline)."""
    obj = copy.deepcopy(dict(applied))
    annotations = _meta(obj).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char in "<>&\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    return text + "\n"


def _gvk(obj: Obj) -> str:
    """``GroupVersionKind.String``: ``apps/v1, Kind=Deployment``, ``/v1, Kind=Pod``."""
    group, _, version = str(obj.get("apiVersion") or "").rpartition("/")
    return f"{group}/{version}, Kind={obj.get('kind') or ''}"


def _server_error(message: str) -> errors.StatusError:
    """A plain Go error reaching the handler: 500 with no reason (``StatusReasonUnknown``)."""
    return errors.StatusError(500, "", message)


# --- what the schema cannot type -------------------------------------------------------------


def typed_errors(
    value: Any, node: SchemaNode | None, *, duplicates: bool
) -> list[fieldsets.TypedError]:
    """List items the schema cannot name (missing keys, wrong kinds) and, unless allowed,
    repeated keys: what ``ObjectToTyped`` rejects."""
    problems: list[fieldsets.TypedError] = []
    _validate(value, node, (), problems, duplicates=duplicates)
    return problems


def _validate(
    value: Any,
    node: SchemaNode | None,
    path: Path,
    out: list[fieldsets.TypedError],
    *,
    duplicates: bool,
) -> None:
    shape = fieldsets.shape_of(node, value)
    if shape.kind == "map":
        for name, item in (value or {}).items():
            child, _ = shape.child(name)
            _validate(
                item, child, (*path, fieldsets.field_element(name)), out, duplicates=duplicates
            )
    elif shape.kind != "leaf" and value:
        seen: set[PathElement] = set()
        for i, item in enumerate(value):
            try:
                pe = fieldsets.item_element(shape, item, index=i, path=path)
            except fieldsets.TypedError as err:
                out.append(err)
                return
            if pe in seen and not duplicates:
                out.append(
                    fieldsets.TypedError(
                        path, f"duplicate entries for key {fieldsets.smd_path((pe,))}"
                    )
                )
            seen.add(pe)
            _validate(item, shape.node, (*path, pe), out, duplicates=duplicates)


# --- merge and prune -------------------------------------------------------------------------


def merge(lhs: Any, rhs: Any, node: SchemaNode | None) -> Any:
    """``TypedValue.Merge``: ``rhs`` (the applied configuration) laid over ``lhs`` (live)."""
    if rhs is fieldsets.ABSENT:
        return copy.deepcopy(lhs)
    if lhs is fieldsets.ABSENT:
        return copy.deepcopy(rhs)
    left, right = fieldsets.shape_of(node, lhs), fieldsets.shape_of(node, rhs)
    if left.kind != right.kind or right.kind == "leaf" or (not lhs and not rhs):
        return copy.deepcopy(rhs)
    if right.kind == "map":
        lmap, rmap = lhs or {}, rhs or {}
        return {
            name: merge(
                lmap.get(name, fieldsets.ABSENT),
                rmap.get(name, fieldsets.ABSENT),
                right.child(name)[0],
            )
            for name in dict.fromkeys([*lmap, *rmap])
        }
    return _merge_items(right, lhs or [], rhs or [])


def _merge_items(shape: fieldsets.Shape, lhs: list[Any], rhs: list[Any]) -> list[Any]:
    """The list order of SMD's ``mergingWalker.visitListItems``."""
    rpes, lpes = fieldsets.item_elements(shape, rhs, ()), fieldsets.item_elements(shape, lhs, ())
    robserved = dict(zip(rpes, rhs, strict=True))
    lobserved: dict[PathElement, Any] = {}
    for pe, value in zip(lpes, lhs, strict=True):
        lobserved[pe] = fieldsets.ABSENT if pe in lobserved else value  # duplicates do not merge
    shared = iter([pe for pe in rpes if pe in lobserved])
    next_shared = next(shared, None)
    merged_rhs: set[PathElement] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lpes) or ri < len(rpes):
        if li < len(lpes) and ri < len(rpes):
            pe = lpes[li]
            if pe == rpes[ri]:
                merged_rhs.add(pe)
                out.append(merge(lobserved[pe], robserved[pe], shape.node))
                li, ri = li + 1, ri + 1
                next_shared = next(shared, None)
                continue
            if pe in robserved and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(lpes):
            pe = lpes[li]
            if pe not in robserved:
                out.append(merge(lhs[li], fieldsets.ABSENT, shape.node))
                li += 1
                continue
            if pe in merged_rhs:
                li += 1
                continue
        if ri < len(rpes):
            pe = rpes[ri]
            merged_rhs.add(pe)
            out.append(merge(lobserved.get(pe, fieldsets.ABSENT), robserved[pe], shape.node))
            ri += 1
            if next_shared == pe:
                next_shared = next(shared, None)
    return out


@dataclass
class _Trie:
    members: set[PathElement] = field(default_factory=set)
    children: dict[PathElement, _Trie] = field(default_factory=dict)

    @classmethod
    def of(cls, paths: Iterable[FieldPath]) -> _Trie:
        root = cls()
        for path in paths:
            node = root
            for element in path.elements[:-1]:
                node = node.children.setdefault(element, cls())
            if path:
                node.members.add(path.elements[-1])
        return root

    def iterate(self, prefix: Path = ()) -> Iterator[FieldPath]:
        """``Set.Iterate`` order: this level's members, then each child's subtree, sorted."""
        for element in sorted(self.members):
            yield fieldsets.field_path((*prefix, element))
        for element in sorted(self.children):
            yield from self.children[element].iterate((*prefix, element))


def iterate(paths: Iterable[FieldPath]) -> list[FieldPath]:
    """Paths in the order structured-merge-diff iterates a set (conflicts are listed so)."""
    return list(_Trie.of(paths).iterate())


def remove_items(value: Any, paths: Iterable[FieldPath], node: SchemaNode | None) -> Any:
    """``TypedValue.RemoveItems``: ``value`` without the subtrees rooted at ``paths``."""
    result = _remove(value, node, _Trie.of(paths))
    return {} if result is _EMPTIED else result


def _remove(value: Any, node: SchemaNode | None, trie: _Trie) -> Any:
    shape = fieldsets.shape_of(node, value)
    if shape.kind == "leaf":
        return _EMPTIED if isinstance(value, dict | list) else value
    if not value:
        return value
    if shape.kind == "map":
        out_map: dict[str, Any] = {}
        for name, item in value.items():
            kept = _remove_child(item, fieldsets.field_element(name), shape.child(name)[0], trie)
            if kept is not _EMPTIED:
                out_map[name] = kept
        return out_map or _EMPTIED
    elements = fieldsets.item_elements(shape, value, ())
    pairs = zip(elements, value, strict=True)
    out_list = [_remove_child(item, pe, shape.node, trie) for pe, item in pairs]
    return [item for item in out_list if item is not _EMPTIED] or _EMPTIED


def _remove_child(item: Any, element: PathElement, node: SchemaNode | None, trie: _Trie) -> Any:
    if element in trie.members:
        return _EMPTIED
    sub = trie.children.get(element)
    return item if sub is None else _remove(item, node, sub)


def prune(
    merged: Any,
    *,
    last_applied: Iterable[FieldPath],
    owned: Iterable[FieldPath],
    node: SchemaNode | None,
) -> Any:
    """``Updater.prune``: drop what the applier applied last time and no longer applies, unless
    some manager (the applier's new configuration included, in ``owned``) still owns it."""
    last = fieldsets.ensure_named(last_applied, node)
    if not last:
        return merged
    pruned = remove_items(merged, last, node)
    merged_set = fieldsets.ensure_named(fieldsets.to_fieldset(merged, node), node)
    pruned_set = fieldsets.ensure_named(fieldsets.to_fieldset(pruned, node), node)
    pruned = remove_items(
        merged, merged_set - pruned_set - fieldsets.ensure_named(owned, node), node
    )
    pruned_set = fieldsets.ensure_named(fieldsets.to_fieldset(pruned, node), node)
    return remove_items(merged, (merged_set - pruned_set) & last, node)


def _meta(obj: Obj | None) -> Obj:
    meta = obj.get("metadata") if obj is not None else None
    return meta if isinstance(meta, Mapping) else {}
