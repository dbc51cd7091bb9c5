"""The two-way walk: where a normalised desired object and a live object differ, field by field.

Both sides are walked together under the official schema of the kind
(:mod:`kubemedic.model.schemas`), the way server-side apply sees an object: struct fields and map
keys by name; lists of ``x-kubernetes-list-type: map`` by their ``x-kubernetes-list-map-keys`` (so
the order of containers, ports or env entries is not a difference), ``set`` lists by value; every
other list (atomic) as one value. Without a schema (custom resources) maps are walked and lists
are atomic. Empty is absent: a field that is missing, ``null``, ``{}`` or ``[]`` on one side
equals one that is any of those on the other (Argo CD's null normalisation: ``rules: null``
against ``rules: []``). Quantities compare by value (``0.5`` equals ``500m``).

Each difference is reported once, at the top-most node where it starts (a container that exists
only live is one ``live-only`` difference, not one per field), with its location in the live
object (map keys and list positions, for the revert patch).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeAlias

from kubemedic.model.fieldpaths import FieldPath, PathElement
from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.model.schemas import KEY_DEFAULTS, SchemaNode

__all__ = ["Difference", "Location", "element_of", "field_path_of", "walk"]

Location: TypeAlias = tuple[str | int, ...]

_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
APPEND = "-"


@dataclass(frozen=True, slots=True)
class Difference:
    """One difference. ``location`` is where the live value is (``removed``: where to add it;
    a list item to add ends in ``"-"``)."""

    kind: str  # "changed" | "removed" | "live-only"
    path: FieldPath
    desired: Any
    live: Any
    location: Location


def is_empty(value: Any) -> bool:
    return value is None or value in ({}, [])


def _list_keys(node: SchemaNode | None) -> tuple[str, ...] | None:
    if node is None or node.kind != "list":
        return None
    if node.list_type == "map" and node.list_map_keys:
        return node.list_map_keys
    return None


def element_of(node: SchemaNode | None, item: Any, position: int) -> PathElement:
    """The path element of a list item: by merge key, by value (sets), else by position.

    A key field the item omits takes the default structured-merge-diff gives it (``protocol:
    TCP`` of ports), so a manifest's port and the stored port are one item.
    """
    keys = _list_keys(node)
    if keys is not None and isinstance(item, dict):
        type_name = node.items.type_name if node is not None and node.items is not None else None
        pairs: dict[str, Any] = {}
        for key in keys:
            if key in item:
                pairs[key] = item[key]
            elif (str(type_name), key) in KEY_DEFAULTS:
                pairs[key] = KEY_DEFAULTS[(str(type_name), key)]
            else:
                break
        else:
            return PathElement.key(pairs)
    is_set = node is not None and node.kind == "list" and node.list_type == "set"
    if is_set and not isinstance(item, dict | list):
        return PathElement.value(item)
    return PathElement.index(position)


def _child(node: SchemaNode | None, name: str) -> SchemaNode | None:
    if node is None:
        return None
    if node.kind == "struct":
        return node.field(name)
    if node.kind == "map":
        return node.values
    return None


def _walked_list(node: SchemaNode | None) -> bool:
    return node is not None and node.kind == "list" and node.list_type in ("map", "set")


def same(desired: Any, live: Any, node: SchemaNode | None) -> bool:
    """Deep equality with empty-is-absent, quantity values and ``true`` never equal to ``1``."""
    if is_empty(desired) and is_empty(live):
        return True
    if isinstance(desired, dict) and isinstance(live, dict):
        return all(
            same(desired.get(k), live.get(k), _child(node, k)) for k in desired.keys() | live.keys()
        )
    if isinstance(desired, list) and isinstance(live, list):
        item = node.items if node is not None and node.kind == "list" else None
        if _walked_list(node):
            left = _index(node, desired)
            right = _index(node, live)
            if left is not None and right is not None:
                return left.keys() == right.keys() and all(
                    same(left[k], right[k], item) for k in left
                )
        return len(desired) == len(live) and all(
            same(d, v, item) for d, v in zip(desired, live, strict=True)
        )
    if type(desired) is not type(live) and not (_number(desired) and _number(live)):
        return _same_quantity(desired, live, node)
    return bool(desired == live) or _same_quantity(desired, live, node)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same_quantity(desired: Any, live: Any, node: SchemaNode | None) -> bool:
    if node is None or node.type_name != _QUANTITY:
        return False
    try:
        return parse_quantity(desired).value == parse_quantity(live).value
    except QuantityError:
        return False


def _index(node: SchemaNode | None, items: list[Any]) -> dict[PathElement, Any] | None:
    """Items by element; None when an element repeats or an item has no key (compared by order)."""
    out: dict[PathElement, Any] = {}
    for position, item in enumerate(items):
        element = element_of(node, item, position)
        if element.kind.name == "INDEX" or element in out:
            return None
        out[element] = item
    return out


def walk(
    desired: Any, live: Any, node: SchemaNode | None, path: FieldPath, location: Location
) -> Iterator[Difference]:
    """The differences below one node present on both sides (``live`` at ``location``)."""
    if same(desired, live, node):
        return
    if isinstance(desired, dict) and isinstance(live, dict) and _walked_map(node):
        for key in sorted(desired.keys() | live.keys()):
            yield from _member(
                desired.get(key), live.get(key), node=node, path=path, location=location, key=key
            )
        return
    if isinstance(desired, list) and isinstance(live, list) and _walked_list(node):
        left, right = _index(node, desired), _index(node, live)
        if left is not None and right is not None:
            yield from _items(left, right, node, path, location)
            return
    if isinstance(desired, list) and isinstance(live, list) and len(desired) == len(live):
        # An atomic list of the same length: item by item, so that a field the server added
        # to an item (a default, an allocated value) is told apart from a changed value.
        item_node = node.items if node is not None and node.kind == "list" else None
        for position, (left_item, right_item) in enumerate(zip(desired, live, strict=True)):
            child = path.child(PathElement.index(position))
            yield from walk(left_item, right_item, item_node, child, (*location, position))
        return
    yield Difference("changed", path, desired, live, location)


def _walked_map(node: SchemaNode | None) -> bool:
    """Maps are walked key by key, atomic ones too (their owner is found above them)."""
    return node is None or node.kind in ("struct", "map", "any")


def _member(
    desired: Any,
    live: Any,
    *,
    node: SchemaNode | None,
    path: FieldPath,
    location: Location,
    key: str,
) -> Iterator[Difference]:
    child_path = path.child(PathElement.field(key))
    child_node = _child(node, key)
    if is_empty(desired) and is_empty(live):
        return
    if is_empty(desired):
        if isinstance(live, dict) and _walked_map(child_node):
            # Each key on its own: the map may hold fields of several managers.
            yield from walk({}, live, child_node, child_path, (*location, key))
        elif isinstance(live, list) and _walked_list(child_node):
            yield from walk([], live, child_node, child_path, (*location, key))
        else:
            yield Difference("live-only", child_path, None, live, (*location, key))
    elif is_empty(live):
        yield Difference("removed", child_path, desired, None, (*location, key))
    else:
        yield from walk(desired, live, child_node, child_path, (*location, key))


def _items(
    left: dict[PathElement, Any],
    right: dict[PathElement, Any],
    node: SchemaNode | None,
    path: FieldPath,
    location: Location,
) -> Iterator[Difference]:
    item_node = node.items if node is not None else None
    positions = {element: i for i, element in enumerate(right)}
    for element in sorted(left.keys() | right.keys()):
        child = path.child(element)
        if element not in right:
            yield Difference("removed", child, left[element], None, (*location, APPEND))
        elif element not in left:
            where = (*location, positions[element])
            yield Difference("live-only", child, None, right[element], where)
        else:
            where = (*location, positions[element])
            yield from walk(left[element], right[element], item_node, child, where)


def field_path_of(obj: Any, node: SchemaNode | None, location: Location) -> FieldPath | None:
    """The field path of a concrete location in ``obj`` (None when the location is not there)."""
    path = FieldPath()
    value = obj
    for step in location:
        if isinstance(value, dict) and isinstance(step, str) and step in value:
            path = path.child(PathElement.field(step))
            node = _child(node, step)
            value = value[step]
        elif isinstance(value, list) and isinstance(step, int) and 0 <= step < len(value):
            path = path.child(element_of(node, value[step], step))
            node = node.items if node is not None and node.kind == "list" else None
            value = value[step]
        else:
            return None
    return path
