"""The emulator's object types: a stored object, its key, a change as watches see it, a copy.

Objects are plain decoded JSON: :data:`Obj` is one the holder may change (a body being built or
written), :data:`ObjView` one it only reads. :data:`Key` names an object in its resource's store.
:class:`Change` is one write as the store's listeners and watches receive it. :func:`clone` is
the one deep copy every layer uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import orjson

__all__ = ["Change", "EventType", "Key", "Obj", "ObjView", "clone", "key_of"]

#: A decoded object its holder may change.
Obj = dict[str, Any]
#: A decoded object its holder only reads.
ObjView = Mapping[str, Any]
#: ``(namespace, name)``; the namespace is ``""`` for cluster-scoped objects.
Key = tuple[str, str]
EventType = Literal["ADDED", "MODIFIED", "DELETED"]


@dataclass(frozen=True, slots=True)
class Change:
    """One write, as watches see it."""

    rv: int
    store: str
    type: EventType
    obj: Obj
    old: Obj | None


def clone(value: Any) -> Any:
    """A deep copy of a JSON value (much faster than ``copy.deepcopy`` on plain data): an
    orjson round trip, unless that would not give the value back (tuples, NaN, integers beyond
    64 bits, keys that are not strings), then a walk."""
    if isinstance(value, dict | list):
        try:
            copied = orjson.loads(orjson.dumps(value))
        except TypeError:
            return _clone(value)
        if copied == value:
            return copied
        return _clone(value)
    return value


def _clone(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clone(v) for v in value]
    return value


def key_of(obj: ObjView) -> Key:
    """The object's :data:`Key`: its namespace (``""`` when cluster-scoped) and name."""
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])
