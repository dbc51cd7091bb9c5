"""Zero values the real server always prints.

Go encodes a struct field without ``omitempty`` even when it holds its zero value, so an object
read back from a real API server always carries, for example, ``imageID: ""`` and
``restartCount: 0`` in every container status, whatever the writer sent. Clients rely on it:
lightkube's models, like client-go's typed structs, treat those fields as required. The official
schema lists such fields as ``required``; this module fills the scalar ones (strings, integers,
booleans) that an object loaded from a snapshot or written by a terse client lacks.
"""

from __future__ import annotations

from typing import Any

from kubemedic.sim.machinery.definitions import SchemaNode

_ZERO: dict[str, Any] = {"string": "", "integer": 0, "boolean": False}


def fill_required_scalars(value: Any, node: SchemaNode | None) -> None:
    """Add missing required scalar fields, in place, everywhere in ``value``."""
    if node is None:
        return
    kind = node.kind
    if kind == "struct" and isinstance(value, dict):
        for name in node.body.get("required", ()):
            if name not in value:
                zero = _zero_of(node, name)
                if zero is not None:
                    value[name] = zero
        for name, child in value.items():
            if isinstance(child, dict | list):
                fill_required_scalars(child, node.field(name))
    elif kind == "list" and isinstance(value, list):
        items = node.items
        if items is not None and items.kind in ("struct", "list", "map"):
            for item in value:
                fill_required_scalars(item, items)
    elif kind == "map" and isinstance(value, dict):
        values = node.values
        if values is not None and values.kind in ("struct", "list", "map"):
            for item in value.values():
                fill_required_scalars(item, values)


def _zero_of(node: SchemaNode, name: str) -> Any:
    prop = node.properties.get(name) or {}
    kind = prop.get("type")
    if isinstance(kind, str):
        return _ZERO.get(kind)
    return None
