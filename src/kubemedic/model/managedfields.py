"""Server-side apply ownership: the FieldsV1 encoding.

Every entry of ``metadata.managedFields`` names a manager (``kubectl``, a controller,
``kubectl-edit``...) and, in ``fieldsV1``, the set of field paths it owns. The set is
written as a trie: each key is one serialised path element and maps to the sub-trie
below it.

* ``f:<name>`` -- a map key or struct field;
* ``k:<json object>`` -- an associative-list item by its merge key, e.g.
  ``k:{"containerPort":80,"protocol":"TCP"}``; the object is compact JSON with its
  fields sorted by name, so one item always has one spelling;
* ``v:<json value>`` -- a set item (associative list of scalars) by value;
* ``i:<int>`` -- a list item by position (lists with no merge key);
* ``.`` -- "this node itself is owned too".

A path is *owned* (a member of the set) when its node is a leaf ``{}`` or carries a
``"."`` child. ``"."`` exists because a node can be both: a manager that created
``metadata.labels`` owns the map itself -- it asked for the map to exist and will
remove it when it stops applying it -- *and* each label inside it. A node with children
but no ``"."`` is only a route to owned descendants. For reporting, the interesting
paths are the leaves (:func:`leaf_paths`); the intermediate ``"."`` members only say
"and the containers around them".

The API server writes ``"."`` first and then the children in structured-merge-diff's
path-element order: field names (by byte order), then keys (field by field), then
values (numbers < strings < booleans < arrays < objects < null), then indexes.
:func:`encode_fieldsv1` reproduces that order (as compact JSON with non-ASCII text as
is, the API server's bytes; escaped input such as ``\\u003c`` decodes to the same paths).
The API server silently drops keys with a prefix it does not know, for forward
compatibility; :func:`decode_fieldsv1` rejects them, so nothing is under-reported.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from kubemedic.errors import InputError
from kubemedic.model.fieldpaths import ElementKind, FieldPath, PathElement, decode_json

FieldSet: TypeAlias = frozenset[FieldPath]
FieldsV1: TypeAlias = dict[str, "FieldsV1"]

_INDEX = re.compile(r"[0-9]+")


class ManagedFieldsError(InputError, ValueError):
    """A FieldsV1 document is malformed; names the offending key and where it sits."""

    def __init__(self, reason: str, *, key: str, path: FieldPath) -> None:
        where = str(path) or "<root>"
        super().__init__(f"invalid FieldsV1 key {key!r} under {where}: {reason}")
        self.reason = reason
        self.key = key
        self.path = path


# --- FieldsV1 ------------------------------------------------------------------------


def decode_fieldsv1(fields: Mapping[str, Any]) -> FieldSet:
    """The owned paths of a ``fieldsV1`` document (only members, see module docs)."""
    if not isinstance(fields, Mapping):
        raise ManagedFieldsError("fieldsV1 must be a JSON object", key="", path=FieldPath())
    members: set[FieldPath] = set()
    _decode_node(fields, FieldPath(), members=members)
    return frozenset(members)


def _decode_node(node: Mapping[str, Any], path: FieldPath, *, members: set[FieldPath]) -> None:
    for key, child in node.items():
        if not isinstance(child, Mapping):
            reason = f"expected an object as value, got {type(child).__name__}"
            raise ManagedFieldsError(reason, key=str(key), path=path)
        if key == ".":
            _check_self_marker(child, path)
            continue
        child_path = path.child(_decode_key(key, path))
        if not child or "." in child:
            members.add(child_path)
        _decode_node(child, child_path, members=members)


def _check_self_marker(value: Mapping[str, Any], path: FieldPath) -> None:
    if not path:
        raise ManagedFieldsError("the object root cannot be a member", key=".", path=path)
    if value:
        raise ManagedFieldsError("'.' must map to {}", key=".", path=path)


def _decode_key(key: object, path: FieldPath) -> PathElement:
    if not isinstance(key, str):
        raise ManagedFieldsError("keys must be strings", key=repr(key), path=path)
    prefix, colon, body = key.partition(":")
    if not colon or prefix not in ("f", "k", "v", "i"):
        reason = "expected a prefix 'f:', 'k:', 'v:', 'i:' or the '.' marker"
        raise ManagedFieldsError(reason, key=key, path=path)
    if prefix == "f":
        return PathElement.field(body)
    if prefix == "i":
        if not _INDEX.fullmatch(body):
            raise ManagedFieldsError("index must be a non-negative integer", key=key, path=path)
        return PathElement.index(int(body))
    try:
        value = decode_json(body)
    except ValueError as err:
        raise ManagedFieldsError(f"invalid JSON: {err}", key=key, path=path) from None
    if prefix == "v":
        return PathElement.value(value)
    if not isinstance(value, dict) or not value:
        raise ManagedFieldsError("a key must be a non-empty JSON object", key=key, path=path)
    return PathElement.key(value)


def fieldsv1_key(element: PathElement) -> str:
    """The FieldsV1 spelling of one path element, e.g. ``k:{"name":"api"}``."""
    if element.kind is ElementKind.FIELD:
        return f"f:{element.field_name}"
    if element.kind is ElementKind.INDEX:
        return f"i:{element.list_index}"
    prefix = "k" if element.kind is ElementKind.KEY else "v"
    return f"{prefix}:{element.data}"


@dataclass
class _Node:
    member: bool = False
    children: dict[PathElement, _Node] = dataclasses.field(default_factory=dict)


def encode_fieldsv1(paths: Iterable[FieldPath]) -> FieldsV1:
    """The ``fieldsV1`` document owning exactly ``paths``, in the API server's order."""
    root = _Node()
    for path in paths:
        if not path:
            raise ValueError("the root path cannot be written in FieldsV1")
        node = root
        for element in path:
            node = node.children.setdefault(element, _Node())
        node.member = True
    return _encode_node(root)


def _encode_node(node: _Node) -> FieldsV1:
    out: FieldsV1 = {".": {}} if node.member and node.children else {}
    for element in sorted(node.children):
        out[fieldsv1_key(element)] = _encode_node(node.children[element])
    return out


def leaf_paths(fieldset: Iterable[FieldPath]) -> list[FieldPath]:
    """Owned paths with no owned descendant, sorted: what a manager actually set."""
    paths = set(fieldset)
    ancestors = {FieldPath(p.elements[:depth]) for p in paths for depth in range(len(p))}
    return sorted(paths - ancestors)
