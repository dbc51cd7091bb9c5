"""Strategic merge patch, applied exactly as kube-apiserver applies it to built-in types.

The server runs ``strategicpatch.StrategicMergeMapPatch`` (k8s.io/apimachinery) on the stored
object with the kind's Go struct as schema. Each field's ``patchStrategy``/``patchMergeKey`` tag,
which the OpenAPI definitions carry as ``x-kubernetes-patch-strategy``/``-merge-key``, decides:

* maps merge recursively and ``null`` deletes a key; a struct tagged ``replace``
  (PodDisruptionBudget ``spec.selector``) is replaced whole;
* lists tagged ``merge`` merge: items with a merge key (containers by ``name``, ports by
  ``containerPort``, conditions by ``type``) are matched and merged, new ones appended; lists of
  primitives (``metadata.finalizers``) are unioned; every other list is replaced;
* directives: ``$patch: replace|delete`` in a map or as a list item (``$patch: merge`` is
  refused, as by the real server); ``$retainKeys`` clears the keys it does not name (Deployment
  ``spec.strategy`` switching to Recreate drops ``rollingUpdate``);
  ``$deleteFromPrimitiveList/<f>`` removes primitives; ``$setElementOrder/<f>`` orders a merged
  list: the items it names in its order, the server's other items interleaved by old position.

Merged lists are ordered by Go's algorithm step by step (Kubernetes 1.32), including its habit
of working in the backing array of the stored list: ``$patch: delete`` items shift it in place,
appended items may land in the room that leaves, and ``$setElementOrder`` then ranks the server's
items by what that array holds. Directive keys inside a value the object did not have are kept
as sent (only ``$patch`` maps are dropped): the real server then discards them as unknown fields.

Custom resources have no Go struct: the server answers 415 to a strategic merge patch on them
(:func:`~kubemedic.sim.apiserver.patches.gojson.strategic_supported` tells). Without a schema, or
in a schemaless subtree, maps merge as in a merge patch and lists are replaced. Errors are
:class:`~kubemedic.sim.apiserver.patches.gojson.PatchError` with the server's wording and code
(400 for malformed directives, 422 for lists of lists, 500 for errors the handler does not
classify). Inputs are never mutated; the result shares what the patch leaves alone with the original
object, so copy it before changing it in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubemedic.sim.apiserver.patches.gojson import GO_MAP, GO_SLICE, PatchError, gofmt, gotype, same
from kubemedic.sim.machinery.definitions import SchemaNode
from kubemedic.sim.machinery.objects import clone

__all__ = ["strategic_merge_patch"]

Obj = dict[str, Any]
Node = SchemaNode | None

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_PREFIX = "$deleteFromPrimitiveList"
_ORDER_PREFIX = "$setElementOrder"
_PANIC = "This request caused apiserver to panic. Look in the logs for details."


def strategic_merge_patch(
    original: Mapping[str, Any], patch: Mapping[str, Any], schema: SchemaNode | None
) -> dict[str, Any]:
    """``original`` with the strategic merge ``patch`` applied; ``schema`` is the kind's node."""
    if patch is None:
        patch = {}  # a JSON null body decodes to an empty patch
    if not isinstance(patch, dict):
        kinds = {GO_SLICE: "array", "bool": "bool", "int64": "number", "float64": "number"}
        kind = kinds.get(gotype(patch), "string")
        raise PatchError(f"json: cannot unmarshal {kind} into Go value of type {GO_MAP}", code=400)
    copied: Obj = clone(patch)
    return _merge_map(_copy_along(original, copied), copied, schema)


def _copy_along(original: Mapping[str, Any], patch: Obj) -> Obj:
    """``original`` copied as deep as the merge of ``patch`` may change it: along the keys the
    patch names, and whole below a directive (which may touch any key); the rest is shared."""
    for key in patch:
        if key.startswith("$"):
            copied: Obj = clone(dict(original))
            return copied
    out = dict(original)
    for key, value in patch.items():
        current = out.get(key)
        if isinstance(current, dict) and isinstance(value, dict):
            out[key] = _copy_along(current, value)
        elif isinstance(current, dict | list):
            out[key] = clone(current)
    return out


# --- schema lookups (LookupPatchMetadataForStruct / ForSlice) ---------------------------------


def _strategy(node: SchemaNode) -> str:
    strategy = _STRATEGIES.get(node)
    if strategy is None:
        strategy = _STRATEGIES[node] = min(node.patch_strategies - {"retainKeys"}, default="")
    return strategy


#: The merge strategy of each schema node met (the official nodes live as long as the process).
_STRATEGIES: dict[SchemaNode, str] = {}


def _lookup(schema: Node, key: str) -> tuple[Node, str]:
    """Node and strategy of a map-valued field; unknown fields merge schemaless."""
    if schema is None or schema.kind not in ("struct", "map"):
        return None, ""
    if schema.kind == "map":
        return schema.values, ""
    node = schema.field(key)
    return (None, "") if node is None else (node, _strategy(node))


def _lookup_slice(schema: Node, key: str, *, strict: bool) -> tuple[Node, str, str]:
    """Item node, strategy and merge key of a list field. ``strict``: the lookup errors the
    server reports for a ``$setElementOrder`` that names no list field."""
    if schema is None or schema.kind not in ("struct", "map"):
        return None, "", ""
    node = schema.values if schema.kind == "map" else schema.field(key)
    if node is None and strict:
        name = (schema.type_name or "").rsplit(".", 1)[-1]
        raise PatchError(f'unable to find api field in struct {name} for the json field "{key}"')
    if node is None or node.kind != "list":
        if strict and node is not None and node.kind != "any":
            raise PatchError(f"expected slice or array type, but got: {schema.kind}")
        return None, "", ""
    if schema.kind == "map":
        return node.items, "", ""
    return node.items, _strategy(node), node.patch_merge_key or ""


# --- maps (mergeMap) ---------------------------------------------------------------------------


def _merge_map(original: Obj, patch: Obj, schema: Node) -> Obj:
    if _DIRECTIVE in patch:
        directive = patch[_DIRECTIVE]
        if same(directive, "replace"):
            del patch[_DIRECTIVE]
            return patch
        if same(directive, "delete"):
            return {}
        raise _bad_patch_type(directive, patch)
    _apply_retain_keys(original, patch)
    _apply_element_orders(original, patch, schema)
    for name, value in list(patch.items()):
        delete_list = name.startswith(_DELETE_PREFIX)
        key = _extract_key(name, _DELETE_PREFIX) if delete_list else name
        if value is None:
            original.pop(key, None)
        elif key not in original or gotype(original[key]) != gotype(value):
            if not delete_list:
                _discard_nulls(value)
                kept, keep = _remove_directives(value)
                if keep:
                    original[key] = kept
                else:
                    original.pop(key, None)
        elif isinstance(value, dict):
            node, strategy = _lookup(schema, key)
            original[key] = (
                value if strategy == "replace" else _merge_map(original[key], value, node)
            )
        elif isinstance(value, list):
            items, strategy, merge_key = _lookup_slice(schema, key, strict=False)
            merge = strategy == "merge" or delete_list
            current = original[key]
            original[key] = (
                _merge_slice(current, value, items, merge_key, delete=delete_list)
                if merge
                else value
            )
        else:
            original[key] = value
    return original


def _apply_retain_keys(original: Obj, patch: Obj) -> None:
    if _RETAIN_KEYS not in patch:
        return
    retain = patch.pop(_RETAIN_KEYS)
    if not isinstance(retain, list):
        raise PatchError("invalid patch format of retainKeys", code=400)
    kept = {_hashable(k) for k in retain}
    for key, value in patch.items():
        directive = key.startswith((_DELETE_PREFIX, _ORDER_PREFIX))
        if value is not None and not directive and (str, key) not in kept:
            raise PatchError("invalid patch format of retainKeys", code=400)
    for key in [k for k in original if (str, k) not in kept]:
        del original[key]


def _apply_element_orders(original: Obj, patch: Obj, schema: Node) -> None:
    """``mergePatchIntoOriginal``: merge each list named by a ``$setElementOrder``, order it."""
    for directive in [k for k in patch if k.startswith(_ORDER_PREFIX)]:
        order = patch.pop(directive)
        if not isinstance(order, list):
            raise _bad_arg_type(GO_SLICE, order)
        key = _extract_key(directive, _ORDER_PREFIX)
        in_original, in_patch = key in original, key in patch
        for found, value in ((in_original, original.get(key)), (in_patch, patch.get(key))):
            if found and not isinstance(value, list):
                raise _bad_arg_type(GO_SLICE, value)
        server: list[Any] = original[key] if in_original else []
        sent: list[Any] = patch.pop(key) if in_patch else []
        items, strategy, merge_key = _lookup_slice(schema, key, strict=True)
        _validate_order(sent, order, merge_key)
        if in_original and in_patch:
            # Merging works in ``server`` as Go works in the stored list's array.
            merge = strategy == "merge"
            merged = _merge_slice(server, sent, items, merge_key, delete=False) if merge else sent
        elif in_patch:
            merged = _remove_directives(sent)[0]
        elif in_original:
            merged = list(server)
        else:
            continue
        ordered, server_only = _partition(merged, order, merge_key)
        is_map = _element_type(server, sent) == GO_MAP
        original[key] = _normalize_order(
            ordered, server_only, order, list(server), merge_key, is_map=is_map
        )


def _validate_order(sent: list[Any], order: list[Any], merge_key: str) -> None:
    """The patch list's items must appear in ``$setElementOrder``, in the same relative order."""
    if not order or not sent:
        return
    rest = _split_deletes(sent)[0] if merge_key else sent
    i = j = 0
    while i < len(rest) and j < len(order):
        if isinstance(rest[i], dict) and _DIRECTIVE in rest[i]:
            i += 1
            continue
        if not merge_key:
            i += same(rest[i], order[j])
        else:
            for side in (rest[i], order[j]):
                _check_merge_key(side, merge_key)
            i += same(rest[i][merge_key], order[j][merge_key])
        j += 1
    if i < len(rest) and j >= len(order):
        raise PatchError(
            f"The order in patch list:\n{gofmt(sent)}\n doesn't match {_ORDER_PREFIX} list:\n"
            f"{gofmt(order)}\n"
        )


# --- lists (mergeSlice) ------------------------------------------------------------------------


def _merge_slice(
    original: list[Any], patch: list[Any], items: Node, merge_key: str, *, delete: bool
) -> list[Any]:
    """Merge ``patch`` into ``original``, treated as the Go backing array of the stored list
    (capacity = length, as the server's converter allocates it) and changed as Go changes it."""
    if not original and not patch:
        return original
    element = _element_type(original, patch)
    if element != GO_MAP:
        if delete:
            doomed = {_hashable(v) for v in patch}
            return [v for v in original if _hashable(v) not in doomed]
        merged = _dedupe(original + patch if patch else original)
        length, rest = len(original), patch
    else:
        if not merge_key:
            raise PatchError(f"cannot merge lists without merge key for {_go_kind(items)}")
        original, length, rest = _apply_list_directives(original, patch, merge_key)
        merged = _merge_items(original, length, rest, merge_key, items)
    ordered, server_only = _partition(merged, rest, merge_key)
    is_map = element == GO_MAP
    return _normalize_order(ordered, server_only, rest, original[:length], merge_key, is_map=is_map)


def _apply_list_directives(
    original: list[Any], patch: list[Any], merge_key: str
) -> tuple[list[Any], int, list[Any]]:
    """``$patch`` items: deletions shift ``original`` in place; a replace makes the patch's
    other items the whole list. Returns the array, its length in use and the plain items."""
    plain = [item for item in patch if _DIRECTIVE not in item]
    length, replace = len(original), False
    for item in (item for item in patch if _DIRECTIVE in item):
        directive = item[_DIRECTIVE]
        if same(directive, "delete"):
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            while (index := _find_item(original[:length], merge_key, item[merge_key])) >= 0:
                original[index : length - 1] = original[index + 1 : length]
                length -= 1
        elif same(directive, "replace"):
            replace = True
        elif same(directive, "merge"):
            raise PatchError("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, item)
    return (plain, len(plain), []) if replace else (original, length, plain)


def _merge_items(
    array: list[Any], length: int, patch: list[Any], merge_key: str, items: Node
) -> list[Any]:
    """Merge each patch item into the item with its key, or append it: like Go's ``append``,
    into the room deletions left in ``array``, else into a fresh array."""
    backing = array
    for item in patch:
        if merge_key not in item:
            raise _no_merge_key(item, merge_key)
        index = _find_item(array[:length], merge_key, item[merge_key])
        if index >= 0:
            array[index] = _merge_map(array[index], item, items)
            continue
        if length < len(array):
            array[length] = item
        else:
            array = array[:length] if array is backing else array
            array.append(item)
        length += 1
    return array[:length]


def _find_item(items: list[Any], key: str, value: Any) -> int:
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise PatchError(f"value for key {index} is not a map")
        if key in item and same(item[key], value):
            return index
    return -1


def _dedupe(values: list[Any]) -> list[Any]:
    """Go's in-place ``deduplicateScalars``: a duplicate is overwritten by the last item."""
    last, i = len(values) - 1, 0
    while i < last:
        j = i + 1
        while j <= last:
            if same(values[i], values[j]):
                values[j] = values[last]
                last -= 1
                j -= 1
            j += 1
        i += 1
    return values[: last + 1]


def _partition(merged: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    """Items of ``merged`` that ``by`` names (by merge key, or by value), and the others."""
    inside: list[Any] = []
    outside: list[Any] = []
    wanted = set() if merge_key else {_hashable(v) for v in by}
    for item in merged:
        if merge_key:
            _check_merge_key(item, merge_key)
            found = _find_item(by, merge_key, item[merge_key]) >= 0
        else:
            found = _hashable(item) in wanted
        (inside if found else outside).append(item)
    return inside, outside


# --- ordering (normalizeElementOrder) ----------------------------------------------------------


def _normalize_order(
    ordered: list[Any],
    server_only: list[Any],
    order: list[Any],
    server_order: list[Any],
    merge_key: str,
    *,
    is_map: bool,
) -> list[Any]:
    """Patch items sorted by ``order`` and server-only items by ``server_order``, interleaved:
    a server item goes first only when both are found in ``server_order`` and it comes earlier
    there, so a patch item new to the server goes before any server item it meets."""
    ordered = _sort_by(ordered, order, merge_key, is_map=is_map)
    server_only = _sort_by(server_only, server_order, merge_key, is_map=is_map)
    result: list[Any] = []
    i = j = 0
    while i < len(server_only) or j < len(ordered):
        take_left = j >= len(ordered)
        if i < len(server_only) and not take_left:
            left = _index(server_order, server_only[i], merge_key, is_map=is_map)
            take_left = 0 <= left < _index(server_order, ordered[j], merge_key, is_map=is_map)
        if take_left:
            result.append(server_only[i])
            i += 1
        else:
            result.append(ordered[j])
            j += 1
    return result


def _sort_by(items: list[Any], order: list[Any], merge_key: str, *, is_map: bool) -> list[Any]:
    """``normalizeSliceOrder``: stable sort by position in ``order``, ``$patch: delete`` items
    last. Every item is found in ``order`` by construction (patch items were validated against
    it, server-only items come from it), so Go's ``sort.SliceStable`` and ``sorted`` agree."""
    deletions: list[Any] = []
    if is_map:
        for item in (*items, *order):
            _check_merge_key(item, merge_key)
        items, deletions = _split_deletes(items)
    ranked = sorted(items, key=lambda item: _index(order, item, merge_key, is_map=is_map))
    return ranked + deletions


def _index(values: list[Any], value: Any, merge_key: str, *, is_map: bool) -> int:
    if is_map:
        value = value.get(merge_key) if isinstance(value, dict) else None
        values = [v.get(merge_key) if isinstance(v, dict) else None for v in values]
    return next((i for i, v in enumerate(values) if same(v, value)), -1)


# --- values ------------------------------------------------------------------------------------


def _remove_directives(value: Any) -> tuple[Any, bool]:
    """``removeDirectives``: drop maps carrying ``$patch``, with the keys/items holding them."""
    if isinstance(value, dict):
        if _DIRECTIVE in value:
            return None, False
        for key in list(value):
            kept, keep = _remove_directives(value[key])
            if keep:
                value[key] = kept
            else:
                del value[key]
    elif isinstance(value, list):
        value = [kept for kept, keep in map(_remove_directives, value) if keep]
    return value, True


def _discard_nulls(value: Any) -> None:
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
    for item in (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    ):
        _discard_nulls(item)


def _split_deletes(items: list[Any]) -> tuple[list[Any], list[Any]]:
    for item in items:
        if not isinstance(item, dict):
            raise _bad_arg_type(GO_MAP, item)
    doomed = [item for item in items if same(item.get(_DIRECTIVE), "delete")]
    return [item for item in items if not same(item.get(_DIRECTIVE), "delete")], doomed


def _element_type(*lists: list[Any]) -> str:
    """``sliceElementType``: the Go type of all items of the lists, or the server's error."""
    types = [gotype(v) for values in lists for v in values]
    if not types:
        raise PatchError("no elements in any of the given slices")
    if types[0] == "nil":
        raise PatchError(_PANIC)
    if types[0] == GO_SLICE:
        raise PatchError("lists of lists are not supported", code=422)
    if any(t != types[0] for t in types):
        shown = "[" + " ".join(gofmt(values) for values in lists) + "]"
        raise PatchError(f"list element types are not identical: {shown}")
    return types[0]


def _extract_key(key: str, prefix: str) -> str:
    head, sep, rest = key.partition("/")
    if not sep or head != prefix:
        kind = "primitive list" if prefix == _DELETE_PREFIX else "setElementOrder list"
        raise PatchError(f"invalid patch format of {kind}", code=400)
    return rest


def _go_kind(node: Node) -> str:
    """``reflect.Kind`` of the Go type behind a node, as ``PatchMeta.Name`` reports it."""
    if node is None or node.kind == "any":
        return "interface"
    if node.kind != "scalar":
        return {"list": "slice"}.get(node.kind, node.kind)
    if node.type_name:  # Quantity, IntOrString, Time... are Go structs
        return "struct"
    declared = node.body.get("type", "string")
    kind = (
        next((t for t in declared if t != "null"), "") if isinstance(declared, list) else declared
    )
    if kind == "integer":
        return str(node.body.get("format", "int64"))
    return {"boolean": "bool", "number": "float64"}.get(str(kind), "string")


def _hashable(value: Any) -> tuple[type, Any]:
    if isinstance(value, (dict, list)):
        raise PatchError(_PANIC)  # Go: hash of unhashable type
    return type(value), value


def _check_merge_key(item: Any, merge_key: str) -> None:
    if not isinstance(item, dict):
        raise _bad_arg_type(GO_MAP, item)
    if merge_key not in item:
        raise _no_merge_key(item, merge_key)


def _no_merge_key(item: Obj, merge_key: str) -> PatchError:
    return PatchError(f"map: {gofmt(item)} does not contain declared merge key: {merge_key}")


def _bad_arg_type(expected: str, value: Any) -> PatchError:
    actual = "%!s(<nil>)" if value is None else gotype(value)
    return PatchError(f"expected a {expected}, but received a {actual}")


def _bad_patch_type(directive: Any, item: Obj) -> PatchError:
    return PatchError(f"unknown patch type: {gofmt(directive, 's')} in map: {gofmt(item)}")
