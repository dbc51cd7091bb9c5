"""The patch engines of the API emulator: JSON merge patch, JSON patch, strategic merge patch.

This module is their public face; the strategic engine lives in
:mod:`kubemedic.sim.apiserver.patches.strategic`. The API server does not implement RFC 7386 and RFC
6902 itself: it runs ``gopkg.in/evanphx/json-patch.v4`` on the JSON of the stored object. Clients
see that library's quirks and wording, so these functions reproduce them rather than the RFCs where
they differ:

* merge patch: ``null`` deletes and objects merge recursively, but nulls inside a value that is
  *added* are pruned (also inside objects nested in arrays; nulls that are array items stay), a
  key holding ``null`` counts as absent, and a top-level patch that is neither an object nor an
  array is rejected (400 ``Invalid JSON Patch``); an array replaces the whole document.
* JSON patch: ``add``/``remove``/``replace``/``move``/``copy``/``test``, ``-`` appends, negative
  array indices count from the end, ``~1``/``~0`` unescape; ``replace`` of a missing *object*
  key adds it, ``copy`` of a missing key copies ``null``, an empty path only works for
  ``replace`` and ``test``. Any failure aborts the whole patch.

Errors are :class:`PatchError` carrying the status code the real handler answers with
(``k8s.io/apiserver/pkg/endpoints/handlers/patch.go``): 400 when the patch cannot be decoded,
422 when it does not apply (the Status then says "the server rejected our request due to an
error in our request" with the library's message as an ``UnexpectedServerResponse`` cause),
413 beyond 10,000 operations and 500 for errors the handler does not classify.
:meth:`PatchError.to_api_error` builds that exact Status. Inputs are never mutated (a strategic
merge's result shares the parts the patch leaves alone with the original).
"""

from __future__ import annotations

import re
from typing import Any

from kubemedic.sim.apiserver.patches.gojson import (
    PatchError,
    same,
    strategic_supported,
)
from kubemedic.sim.apiserver.patches.strategic import strategic_merge_patch
from kubemedic.sim.machinery.objects import clone

__all__ = [
    "MAX_JSON_PATCH_OPERATIONS",
    "PatchError",
    "json_patch",
    "merge_patch",
    "strategic_merge_patch",
    "strategic_supported",
]

#: kube-apiserver refuses JSON patches with more operations than this (413).
MAX_JSON_PATCH_OPERATIONS = 10_000


# --- JSON merge patch (application/merge-patch+json) ------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """``target`` with the JSON merge ``patch`` applied, as ``jsonpatch.MergePatch`` does."""
    if isinstance(patch, dict):
        if not isinstance(target, dict):
            return _prune(clone(patch))
        return _merge_docs(clone(target), patch)
    if isinstance(patch, list):
        return _prune(clone(patch))
    raise PatchError("Invalid JSON Patch", code=400)


def _merge_docs(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    for key, value in patch.items():
        if value is None:
            doc.pop(key, None)
        elif not isinstance(doc.get(key), dict):
            doc[key] = _prune(clone(value))  # absent, null or not an object: replaced
        elif isinstance(value, dict):
            doc[key] = _merge_docs(doc[key], value)
        else:
            doc[key] = clone(value)  # an object replaced by a non-object keeps its nulls
    return doc


def _prune(value: Any) -> Any:
    if isinstance(value, dict):
        for key in [k for k, v in value.items() if v is None]:
            del value[key]
        for item in value.values():
            _prune(item)
    elif isinstance(value, list):
        for item in value:
            _prune(item)
    return value


# --- JSON patch (application/json-patch+json) --------------------------------------------------


class _OpFailed(Exception):
    """One operation failed; the message is the library's, wrapped by the caller."""


def json_patch(target: Any, operations: Any) -> Any:
    """``target`` with the RFC 6902 ``operations`` applied, as ``jsonpatch.Patch.Apply`` does."""
    if operations is None:
        return clone(target)
    if not isinstance(operations, list):
        raise PatchError(_unmarshal_error(operations, "jsonpatch.Patch"), code=400)
    for op in operations:
        if op is not None and not isinstance(op, dict):
            raise PatchError(_unmarshal_error(op, "jsonpatch.Operation"), code=400)
    if len(operations) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(operations)}",
            code=413,
        )
    box = [clone(target)]  # a cell, so a whole-document replace can swap the root
    for op in operations:
        try:
            _apply_operation(box, op or {})
        except _OpFailed as failed:
            raise PatchError(str(failed), code=422) from None
    return box[0]


def _unmarshal_error(value: Any, go_type: str) -> str:
    kind = {dict: "object", list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    return f"json: cannot unmarshal {kind} into Go value of type {go_type}"


def _apply_operation(box: list[Any], op: dict[str, Any]) -> None:
    kind = op.get("op")
    kind = kind if isinstance(kind, str) else "unknown"
    if kind == "add":
        con, key = _find(
            box[0], _path(op, "add operation failed to decode path", plain=True), "add"
        )
        _wrap(f"error in add for path: '{op['path']}'", _add, con, key, clone(op.get("value")))
    elif kind == "remove":
        con, key = _find(
            box[0], _path(op, "remove operation failed to decode path", plain=True), "remove"
        )
        _wrap(f"error in remove for path: '{op['path']}'", _remove, con, key)
    elif kind == "replace":
        _replace(box, op)
    elif kind == "move":
        _move(box[0], op)
    elif kind == "test":
        _test(box[0], op)
    elif kind == "copy":
        _copy(box[0], op)
    else:
        raise _OpFailed(f"Unexpected kind: {kind}")


def _path(op: dict[str, Any], failure: str, field: str = "path", *, plain: bool = False) -> str:
    """The operation's ``path``/``from``; ``failure`` prefixes the error when it is unusable
    (``plain``: the library reports only "missing value", whatever went wrong)."""
    value = op.get(field)
    if isinstance(value, str):
        return value
    if plain:
        raise _OpFailed(f"{failure}: missing value")
    if value is None:
        what = (
            "operation missing path field" if field == "path" else "operation, missing from field"
        )
        raise _OpFailed(f"{failure}: {what}: missing value")
    raise _OpFailed(f"{failure}: {_unmarshal_error(value, 'string')}")


def _find(doc: Any, path: str, verb: str, what: str = "path") -> tuple[Any, str]:
    """The container holding the last token of ``path`` and that token (``findObject``)."""
    split = path.split("/")
    container = doc if len(split) >= 2 and isinstance(doc, (dict, list)) else None
    for part in split[1:-1]:
        try:
            container = _get(container, _unescape(part))
        except _OpFailed:
            container = None
        if not isinstance(container, (dict, list)):
            container = None
            break
    if container is None:
        article = "is missing" if verb == "test" else "doc is missing"
        shown = f'"{path}"' if verb in ("add", "remove") else path
        raise _OpFailed(
            f"{verb} operation does not apply: {article} {what}: {shown}: missing value"
        )
    return container, _unescape(split[-1])


def _unescape(token: str) -> str:
    return re.sub("~[01]", lambda m: "/" if m.group() == "~1" else "~", token)


def _wrap(prefix: str, action: Any, *args: Any) -> Any:
    try:
        return action(*args)
    except _OpFailed as failed:
        raise _OpFailed(f"{prefix}: {failed}") from None


def _atoi(token: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", token):
        raise _OpFailed(f'strconv.Atoi: parsing "{token}": invalid syntax')
    value = int(token)
    if not -(2**63) <= value < 2**63:
        raise _OpFailed(f'strconv.Atoi: parsing "{token}": value out of range')
    return value


def _invalid_index(index: int) -> _OpFailed:
    return _OpFailed(f"Unable to access invalid index: {index}: invalid index referenced")


def _array_index(array: list[Any], token: str, *, size: int) -> int:
    """A token as an index into ``array`` of ``size`` slots; negative counts from the end."""
    index = _atoi(token)
    if index < 0:
        if index < -size:
            raise _invalid_index(index)
        index += size
    return index


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key)
    index = _array_index(container, key, size=len(container))
    if index >= len(container):
        raise _invalid_index(_atoi(key))
    return container[index]


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    try:
        index = _atoi(key)
    except _OpFailed as failed:
        raise _OpFailed(f"value was not a proper array index: '{key}': {failed}") from None
    if index >= len(container) + 1:
        raise _invalid_index(index)
    container.insert(_array_index(container, key, size=len(container) + 1), value)


def _remove(container: Any, key: str) -> None:
    if isinstance(container, dict):
        if key not in container:
            raise _OpFailed(f"Unable to remove nonexistent key: {key}: missing value")
        del container[key]
        return
    index = _atoi(key)
    if index >= len(container):
        raise _invalid_index(index)
    del container[_array_index(container, key, size=len(container))]


def _replace(box: list[Any], op: dict[str, Any]) -> None:
    path = _path(op, "replace operation failed to decode path")
    value = clone(op.get("value"))
    if path == "":
        if not isinstance(value, (dict, list)):
            raise _OpFailed("replace operation value must be object or array: %!w(<nil>)")
        box[0] = value
        return
    container, key = _find(box[0], path, "replace")
    if isinstance(container, list):
        try:
            _get(container, key)
        except _OpFailed:
            raise _OpFailed(
                f"replace operation does not apply: doc is missing key: {path}: missing value"
            ) from None
        container[_array_index(container, key, size=len(container))] = value
    else:
        container[key] = value  # a missing object key is simply set


def _move(doc: Any, op: dict[str, Any]) -> None:
    source = _path(op, "move operation failed to decode from", "from")
    container, key = _find(doc, source, "move", "from path")
    value = _wrap(f"error in move for path: '{key}'", _get, container, key)
    _wrap(f"error in move for path: '{key}'", _remove, container, key)
    path = _path(op, "move operation failed to decode path")
    container, key = _find(doc, path, "move", "destination path")
    _wrap(f"error in move for path: '{path}'", _add, container, key, value)


def _copy(doc: Any, op: dict[str, Any]) -> None:
    source = _path(op, "copy operation failed to decode from", "from")
    container, key = _find(doc, source, "copy", "from path")
    value = _wrap(f"error in copy for from: '{source}'", _get, container, key)
    path = _path(op, "copy operation failed to decode path", plain=True)
    container, key = _find(doc, path, "copy", "destination path")
    _wrap("error while adding value during copy", _add, container, key, clone(value))


def _test(doc: Any, op: dict[str, Any]) -> None:
    path = _path(op, "test operation failed to decode path")
    expected = op.get("value")
    if path == "":
        actual = doc
    else:
        container, key = _find(doc, path, "test")
        actual = _wrap(f"error in test for path: '{path}'", _get, container, key)
    if not _json_equal(actual, expected):
        raise _OpFailed(f"testing value {path} failed: test failed")


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(_json_equal(v, b[k]) for k, v in a.items())
        )
    if isinstance(a, list):
        return (
            isinstance(b, list)
            and len(a) == len(b)
            and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    return same(a, b)
