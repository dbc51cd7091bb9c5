"""Field sets as FieldsV1 trees: the form ownership is stored in, and the one writes work on.

A ``fieldsV1`` document *is* a set of field paths (:mod:`kubemedic.model.managedfields` has the
format), and every non-apply write only compares two objects, takes the changed paths away from
each manager and gives them to the writer. Done on sets of :class:`FieldPath` that costs a hash
of every path at every step and an encoding of the result; done here, on the trees themselves,
it costs a walk of what changed, and an entry whose fields did not change keeps its document.

Two forms of tree, both nested ``dict`` keyed by the FieldsV1 spelling of path elements
(``f:spec``, ``k:{"name":"app"}``, ``v:"x"``, ``i:0``):

* a **document** (:data:`Tree`): exactly what the API server writes, *canonical*: ``"."`` first
  when a node with children is itself a member, ``{}`` for a member without children, children
  in structured-merge-diff's element order, keys spelt as :func:`fieldsv1_key` spells them.
  Documents are never changed in place (stored objects share them); the operations here return
  the very same document when they change nothing.
* a **diff** (:data:`Diff`): what :func:`compare` builds and the operations consume, where
  membership is always an explicit ``"."`` key (so a node can lose its children and stay a
  member) and children are in no particular order.

:func:`compare` is :func:`kubemedic.sim.apiserver.fields.fieldsets.compare` walking the same values
in the same way (equal subtrees skipped, shapes, leaves, empty containers), so its diffs hold
exactly that comparison's paths; lists that repeat a key on both sides of a change raise
:class:`Duplicates` (the set-based walk handles that rare case). :func:`canonical` validates a
document as ``decode_fieldsv1`` does (its errors are that function's) and returns it as is when it
is already canonical, which documents the API server wrote are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, TypeAlias

from kubemedic.model.fieldpaths import FieldPath, PathElement
from kubemedic.model.managedfields import decode_fieldsv1, fieldsv1_key
from kubemedic.sim.apiserver.fields import fieldsets
from kubemedic.sim.apiserver.fields.fieldsets import ABSENT, Shape, shape_of
from kubemedic.sim.machinery.definitions import SchemaNode

Tree: TypeAlias = dict[str, Any]
Diff: TypeAlias = dict[str, Any]
Keys: TypeAlias = tuple[str, ...]

_MEMBER: Final = "."
_PREFIXES: Final = ("f:", "k:", "v:", "i:")
_CACHE_LIMIT: Final = 65536


class Duplicates(Exception):
    """A keyed or set list repeats an item on a side of a change (left to the set-based walk)."""


class _SortKeys(dict[str, tuple[object, ...]]):
    """Structured-merge-diff's order of each key spelling met so far (fields by name)."""

    def __missing__(self, key: str) -> tuple[object, ...]:
        if key.startswith("f:"):
            order: tuple[object, ...] = (0, key[2:])
        else:
            order = _element(key).sort_key
        if len(self) >= _CACHE_LIMIT:
            self.clear()
        self[key] = order
        return order


_SORT_KEYS: Final = _SortKeys()
_ELEMENTS: dict[str, PathElement] = {}
_ITEM_KEYS: dict[object, str] = {}


def _element(key: str) -> PathElement:
    """The path element of a key spelling known to be valid."""
    element = _ELEMENTS.get(key)
    if element is None:
        (path,) = decode_fieldsv1({key: {}})
        element = path.elements[0]
        if len(_ELEMENTS) >= _CACHE_LIMIT:
            _ELEMENTS.clear()
        _ELEMENTS[key] = element
    return element


def key_of(element: PathElement) -> str:
    """:func:`fieldsv1_key` without its property lookups (``data`` is the spelling)."""
    data = element.data
    return _PREFIXES[element.kind] + (data if isinstance(data, str) else str(data))


def path_keys(path: FieldPath) -> Keys:
    return tuple(key_of(element) for element in path.elements)


# --- documents and field sets ----------------------------------------------------------------


def encode(paths: Iterable[FieldPath]) -> Tree:
    """``encode_fieldsv1``: the canonical document owning exactly ``paths``."""
    root: dict[str, list[Any]] = {}
    sort_keys = _SORT_KEYS
    for path in paths:
        elements = path.elements
        if not elements:
            raise ValueError("the root path cannot be written in FieldsV1")
        level, slot = root, None
        for element in elements:
            data = element.data
            key = _PREFIXES[element.kind] + (data if isinstance(data, str) else str(data))
            slot = level.get(key)
            if slot is None:
                order = element.sort_key
                slot = level[key] = [order, False, {}]
                if key not in sort_keys:
                    sort_keys[key] = order
            level = slot[2]
        assert slot is not None
        slot[1] = True
    return _emit(root)


def _emit(level: dict[str, list[Any]]) -> Tree:
    out: Tree = {}
    for key, (_, member, children) in sorted(level.items(), key=lambda item: item[1][0]):
        if not children:
            out[key] = {}
        elif member:
            out[key] = {_MEMBER: {}, **_emit(children)}
        else:
            out[key] = _emit(children)
    return out


def paths(tree: Mapping[str, Any]) -> frozenset[FieldPath]:
    """``decode_fieldsv1`` of a canonical document (its keys are known to be valid)."""
    out: list[FieldPath] = []
    _paths(tree, (), out)
    return frozenset(out)


def _paths(node: Mapping[str, Any], prefix: tuple[PathElement, ...], out: list[FieldPath]) -> None:
    for key, child in node.items():
        if key == _MEMBER:
            continue
        path = (*prefix, _element(key))
        if not child or _MEMBER in child:
            out.append(fieldsets.field_path(path))
        if child:
            _paths(child, path, out)


def canonical(doc: object) -> Tree:
    """``doc`` itself when it is a canonical document, else the canonical document of its
    paths; raises :class:`~kubemedic.model.managedfields.ManagedFieldsError` as
    ``decode_fieldsv1`` does for a document that does not decode."""
    if isinstance(doc, dict) and _is_canonical(doc, root=True):
        return doc
    return encode(decode_fieldsv1(doc))  # type: ignore[arg-type]


def _is_canonical(node: Mapping[str, Any], *, root: bool) -> bool:
    previous: tuple[object, ...] | None = None
    first = True
    for key, child in node.items():
        if type(child) is not dict:
            return False
        if key == _MEMBER:
            if root or not first or child:
                return False
            first = False
            continue
        first = False
        order = _SORT_KEYS.get(key)
        if order is None:
            order = _register(key)
            if order is None:
                return False
        if previous is not None and not previous < order:
            return False
        previous = order
        if child and not _is_canonical(child, root=False):
            return False
    return not (_MEMBER in node and previous is None)


def _register(key: str) -> tuple[object, ...] | None:
    """The order of a key met in a document, if it is valid and spelt canonically."""
    try:
        decoded = decode_fieldsv1({key: {}})
    except ValueError:
        return None
    element = next(iter(decoded)).elements[0]
    if fieldsv1_key(element) != key:
        return None
    return _SORT_KEYS[key]


# --- comparing -------------------------------------------------------------------------------


def compare(lhs: Any, rhs: Any, node: SchemaNode | None) -> tuple[Diff, Diff]:
    """``fieldsets.compare`` as two diffs: the paths added or modified, and the paths removed.
    Raises :class:`~kubemedic.sim.apiserver.fields.fieldsets.TypedError` (without a path) as that
    walk does, and :class:`Duplicates`."""
    changed, removed = _compare(lhs, rhs, node)
    changed = changed or {}
    removed = removed or {}
    changed.pop(_MEMBER, None)
    removed.pop(_MEMBER, None)
    return changed, removed


def _compare(lhs: Any, rhs: Any, node: SchemaNode | None) -> tuple[Diff | None, Diff | None]:
    if lhs is ABSENT:
        return (None, None) if rhs is ABSENT else (_whole(rhs, node), None)
    if rhs is ABSENT:
        return None, _whole(lhs, node)
    if lhs is rhs or lhs == rhs:
        return None, None
    return _differing(lhs, rhs, node)


def _differing(lhs: Any, rhs: Any, node: SchemaNode | None) -> tuple[Diff | None, Diff | None]:
    """:func:`_compare` of two values present and known to differ."""
    if type(lhs) is dict and type(rhs) is dict:
        shape = shape_of(node, rhs)  # the same shape for both sides
    elif isinstance(lhs, _LEAVES) and isinstance(rhs, _LEAVES):
        shape = fieldsets.LEAF  # scalars are leaves under any node
    else:
        left, right = shape_of(node, lhs), shape_of(node, rhs)
        shape = right if left.kind == right.kind else fieldsets.LEAF
    if shape.kind == "leaf" or (not lhs and not rhs):
        return ({_MEMBER: True} if not fieldsets.json_equal(lhs, rhs) else None), None
    changed: Diff | None = None
    removed: Diff | None = None
    if shape.kind == "map":
        lmap = lhs if isinstance(lhs, dict) else {}
        rmap = rhs if isinstance(rhs, dict) else {}
        child = shape.child
        for name, rvalue in rmap.items():
            lvalue = lmap.get(name, ABSENT)
            if lvalue is ABSENT:
                changed = changed or {}
                changed["f:" + name] = _whole(rvalue, child(name)[0])
                continue
            if lvalue is rvalue or lvalue == rvalue:
                continue
            sub_changed, sub_removed = _differing(lvalue, rvalue, child(name)[0])
            if sub_changed is not None:
                changed = changed or {}
                changed["f:" + name] = sub_changed
            if sub_removed is not None:
                removed = removed or {}
                removed["f:" + name] = sub_removed
        if lmap.keys() - rmap.keys():
            for name, lvalue in lmap.items():
                if name not in rmap:
                    removed = removed or {}
                    removed["f:" + name] = _whole(lvalue, child(name)[0])
        return changed, removed
    litems = lhs if isinstance(lhs, list) else []
    ritems = rhs if isinstance(rhs, list) else []
    lkeys, rkeys = item_keys(shape, litems), item_keys(shape, ritems)
    lindex, rindex = dict(zip(lkeys, litems, strict=True)), dict(zip(rkeys, ritems, strict=True))
    if len(lindex) != len(lkeys) or len(rindex) != len(rkeys):
        raise Duplicates
    for key, ritem in rindex.items():
        litem = lindex.get(key, ABSENT)
        if litem is ABSENT:
            changed = changed or {}
            changed[key] = _whole(ritem, shape.node)
            continue
        if litem is ritem or litem == ritem:
            continue
        sub_changed, sub_removed = _differing(litem, ritem, shape.node)
        if sub_changed is not None:
            changed = changed or {}
            changed[key] = sub_changed
        if sub_removed is not None:
            removed = removed or {}
            removed[key] = sub_removed
    for key, litem in lindex.items():
        if key not in rindex:
            removed = removed or {}
            removed[key] = _whole(litem, shape.node)
    return changed, removed


_LEAVES: Final = (str, int, float)


def _whole(value: Any, node: SchemaNode | None) -> Diff:
    """The diff of a value compared with nothing (all of it added, or all of it removed): a
    repeated list item is one opaque member, as in ``fieldsets.compare``."""
    shape = shape_of(node, value)
    kind = shape.kind
    if kind == "leaf" or not value:
        return {_MEMBER: True}
    out: Diff = {_MEMBER: True}
    if kind == "map":
        child = shape.child
        for name, item in value.items():
            out["f:" + name] = _whole(item, child(name)[0])
        return out
    keys = item_keys(shape, value)
    seen: dict[str, int] = {}
    for key in keys:
        seen[key] = seen.get(key, 0) + 1
    for key, item in zip(keys, value, strict=True):
        out[key] = _whole(item, shape.node) if seen[key] == 1 else {_MEMBER: True}
    return out


#: Values an item's identity may be cached by (not floats: ``0.0`` and ``-0.0`` are equal but
#: spelt apart).
_SCALARS: Final = (str, int, bool, type(None))


def item_keys(shape: Shape, items: list[Any]) -> list[str]:
    """The FieldsV1 keys of a keyed or set list's items (``fieldsets.item_element``)."""
    out: list[str] = []
    if shape.kind == "set":
        for index, item in enumerate(items):
            ident: object = (type(item), item) if isinstance(item, _SCALARS) else None
            out.append(_item_key(shape, item, index, ident))
        return out
    names = shape.keys
    type_name = str(shape.node.type_name if shape.node is not None else None)
    for index, item in enumerate(items):
        ident = None
        if isinstance(item, dict):
            parts: list[object] = [type_name]
            for name in names:
                value = item.get(name, ABSENT)
                if value is ABSENT or not isinstance(value, _SCALARS):
                    break
                parts.append((name, type(value), value))
            else:
                ident = tuple(parts)
        out.append(_item_key(shape, item, index, ident))
    return out


def _item_key(shape: Shape, item: Any, index: int, ident: object) -> str:
    if ident is not None:
        known = _ITEM_KEYS.get(ident)
        if known is not None:
            return known
    element = fieldsets.item_element(shape, item, index=index, path=())
    key = key_of(element)
    if key not in _SORT_KEYS:
        _SORT_KEYS[key] = element.sort_key
    if ident is not None:
        if len(_ITEM_KEYS) >= _CACHE_LIMIT:
            _ITEM_KEYS.clear()
        _ITEM_KEYS[ident] = key
    return key


# --- editing diffs ---------------------------------------------------------------------------


def cut(diff: Diff, prefixes: Iterable[Keys]) -> None:
    """Drop, in place, every path that is or descends from one of ``prefixes``."""
    for prefix in prefixes:
        if prefix:
            _cut(diff, prefix, 0)


def _cut(node: Diff, prefix: Keys, depth: int) -> None:
    key = prefix[depth]
    child = node.get(key)
    if child is None:
        return
    if depth + 1 == len(prefix):
        del node[key]
        return
    _cut(child, prefix, depth + 1)
    if not child:
        del node[key]


def diff_of(paths: Iterable[Keys]) -> Diff:
    """A diff whose members are ``paths`` (to :func:`strip` them, say)."""
    out: Diff = {}
    for path in paths:
        node = out
        for key in path:
            node = node.setdefault(key, {})
        if path:
            node[_MEMBER] = True
    return out


def strip(diff: Diff, members: Diff) -> None:
    """Drop, in place, exactly the members of ``members`` (not their descendants)."""
    for key in diff.keys() & members.keys():
        if key == _MEMBER:
            continue
        child, sub = diff[key], members[key]
        if _MEMBER in sub:
            child.pop(_MEMBER, None)
        strip(child, sub)
        if not child:
            del diff[key]


def document(diff: Diff) -> Tree:
    """The canonical document of a diff's members."""
    keys = [key for key in diff if key != _MEMBER]
    if not keys:
        return {}
    keys.sort(key=_SORT_KEYS.__getitem__)
    out: Tree = {_MEMBER: {}} if _MEMBER in diff else {}
    for key in keys:
        out[key] = document(diff[key])
    return out


# --- set operations on documents -------------------------------------------------------------


def minus(doc: Tree, diff: Diff) -> Tree:
    """``doc`` without the members of ``diff`` (``doc`` itself when it loses nothing)."""
    out = _without_children(doc, diff)
    return doc if out is None else out


def _without_children(node: Tree, diff: Diff) -> Tree | None:
    """A copy of ``node`` with ``diff`` taken out of its children, or None if none changed."""
    out: Tree | None = None
    for key, sub in diff.items():
        if key == _MEMBER:
            continue
        child = node.get(key)
        if child is None:
            continue
        kept = _minus(child, sub)
        if kept is child:
            continue
        if out is None:
            out = dict(node)
        if kept is None:
            del out[key]
        else:
            out[key] = kept
    return out


def _minus(node: Tree, diff: Diff) -> Tree | None:
    out = _without_children(node, diff)
    member = not node or _MEMBER in node
    drop = member and _MEMBER in diff
    if out is None and not drop:
        return node
    current = node if out is None else out
    children = [key for key in current if key != _MEMBER]
    if not children:
        return {} if member and not drop else None
    if drop:
        return {key: current[key] for key in children}
    return current


def union(doc: Tree, diff: Diff) -> Tree:
    """``doc`` with the members of ``diff`` added (``doc`` itself when it gains nothing)."""
    return _union(doc, diff, member=False, root=True)


def _union(node: Tree, diff: Diff, *, member: bool, root: bool) -> Tree:
    updates: dict[str, Tree] = {}
    added = False
    for key, sub in diff.items():
        if key == _MEMBER:
            continue
        child = node.get(key)
        if child is None:
            updates[key] = document(sub)
            added = True
        else:
            merged = _union(child, sub, member=not child or _MEMBER in child, root=False)
            if merged is not child:
                updates[key] = merged
    becomes_member = not root and (member or _MEMBER in diff)
    if not updates and becomes_member == member:
        return node
    children = {key: child for key, child in node.items() if key != _MEMBER}
    children.update(updates)
    order = list(children)
    if added:
        order.sort(key=_SORT_KEYS.__getitem__)
    if not order:
        return {}
    out: Tree = {_MEMBER: {}} if becomes_member else {}
    for key in order:
        out[key] = children[key]
    return out
