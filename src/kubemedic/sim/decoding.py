"""What the real API server refuses while decoding a request body: unknown fields, bad values.

Typed objects are decoded into Go structs, so a field the type does not have is *unknown* and a
key written twice is a *duplicate*; the strict decoder reports both with the field's full path,
in document order (``unknown field "spec.template.spec.containers[0].bad"``,
:func:`unknown_fields`). With ``fieldValidation=Strict`` (what kubectl sends) they make a 400
(:func:`strict_error`); with ``Warn`` they become warnings and the fields are dropped
(:func:`prune_unknown`), as with ``Ignore``. Inside free-form values (``RawExtension``,
``fieldsV1``) and schemaless custom resources everything is accepted; ``metadata`` is always an
``ObjectMeta`` and is checked. A custom resource's duplicates come first, then its unknown
fields, as the unstructured decoder and the pruner report them.

Values the decoder cannot convert (a quantity that is not one, a string where a number belongs)
also fail here, with a 400 (:func:`decoding_error`). All of this happens before defaulting and
validation (:mod:`kubemedic.sim.validating`), which only ever see decodable objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim import errors
from kubemedic.sim.schema import SchemaNode, definitions

__all__ = [
    "decoding_error",
    "prune_unknown",
    "strict_error",
    "unknown_fields",
]

_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as written: its keys in order, repeated keys kept."""


def unknown_fields(obj: Any, schema: SchemaNode | None, *, raw: bytes | None = None) -> list[str]:
    """The strict decoder's complaints about ``obj``: unknown fields, and duplicate keys of
    ``raw`` (the request body) when it is given and is JSON."""
    body: Any = obj
    if raw is not None:
        try:
            body = json.loads(raw, object_pairs_hook=_Pairs)
        except (ValueError, UnicodeDecodeError):
            body = obj
    found: dict[str, None] = {}
    if schema is None:
        _duplicates_anywhere(body, "", found)
        meta = dict(_items(body)).get("metadata")
        _walk(meta, definitions().node(_OBJECT_META), "metadata", found, duplicates=False)
    else:
        _walk(body, schema, "", found, duplicates=True)
    return list(found)


def _items(value: Any) -> list[tuple[str, Any]]:
    if isinstance(value, _Pairs):
        return list(value)
    if isinstance(value, dict):
        return list(value.items())
    return []


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _walk(
    value: Any, node: SchemaNode, path: str, found: dict[str, None], *, duplicates: bool
) -> None:
    if node.kind == "struct" and isinstance(value, dict | _Pairs):
        seen: set[str] = set()
        for key, item in _items(value):
            child = node.field(key)
            where = _join(path, key)
            if child is None:
                found.setdefault(f'unknown field "{where}"')
                continue
            if key in seen and duplicates:
                found.setdefault(f'duplicate field "{where}"')
            seen.add(key)
            _walk(item, child, where, found, duplicates=duplicates)
    elif node.kind == "map" and isinstance(value, dict | _Pairs) and node.values is not None:
        seen = set()
        for key, item in _items(value):
            if key in seen and duplicates:
                found.setdefault(f'duplicate field "{_join(path, key)}"')
            seen.add(key)
            _walk(item, node.values, _join(path, key), found, duplicates=duplicates)
    elif node.kind == "list" and isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            _walk(item, node.items, f"{path}[{index}]", found, duplicates=duplicates)


def _duplicates_anywhere(value: Any, path: str, found: dict[str, None]) -> None:
    if isinstance(value, _Pairs):
        seen: set[str] = set()
        for key, item in value:
            if key in seen:
                found.setdefault(f'duplicate field "{_join(path, key)}"')
            seen.add(key)
            _duplicates_anywhere(item, _join(path, key), found)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _duplicates_anywhere(item, f"{path}[{index}]", found)


def prune_unknown(obj: Any, schema: SchemaNode | None) -> None:
    """Drop, in place, the fields :func:`unknown_fields` reports (``Warn`` and ``Ignore``)."""
    if schema is None:
        if isinstance(obj, dict) and "metadata" in obj:
            _prune(obj["metadata"], definitions().node(_OBJECT_META))
        return
    _prune(obj, schema)


def _prune(value: Any, node: SchemaNode) -> None:
    if node.kind == "struct" and isinstance(value, dict):
        for key in list(value):
            child = node.field(key)
            if child is None:
                del value[key]
            else:
                _prune(value[key], child)
    elif node.kind == "map" and isinstance(value, dict) and node.values is not None:
        for item in value.values():
            _prune(item, node.values)
    elif node.kind == "list" and isinstance(value, list) and node.items is not None:
        for item in value:
            _prune(item, node.items)


def strict_error(problems: Sequence[str], *, kind: str, version: str) -> errors.ApiError:
    """The 400 of ``fieldValidation=Strict``: ``Deployment in version "v1" cannot be handled as
    a Deployment: strict decoding error: unknown field "spec.foo"``."""
    return _undecodable("strict decoding error: " + ", ".join(problems), kind=kind, version=version)


def _undecodable(detail: str, *, kind: str, version: str) -> errors.ApiError:
    return errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}'
    )


_QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NUMBER_PREFIX = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_GO_SCALARS = {"integer": "int64", "number": "float64", "boolean": "bool", "string": "string"}


def decoding_error(
    obj: Any, schema: SchemaNode | None, *, kind: str, version: str
) -> errors.ApiError | None:
    """The 400 the decoder answers for the first value it cannot convert, or None.

    A quantity that is not one fails with apimachinery's parser message; a JSON type that does
    not fit a scalar field with Go's (``json: cannot unmarshal string into Go struct field
    DeploymentSpec.spec.replicas of type int32``).
    """
    if schema is None:
        return None
    problem = _first_undecodable(obj, schema, struct="", path="")
    return None if problem is None else _undecodable(problem, kind=kind, version=version)


def _first_undecodable(value: Any, node: SchemaNode, *, struct: str, path: str) -> str | None:
    if value is None:
        return None
    if node.type_name == "io.k8s.apimachinery.pkg.api.resource.Quantity":
        return _quantity_problem(value)
    if node.kind == "struct" and isinstance(value, dict):
        name = (node.type_name or "").rsplit(".", 1)[-1]
        for key, item in value.items():
            child = node.field(key)
            if child is not None:
                problem = _first_undecodable(item, child, struct=name, path=_join(path, key))
                if problem:
                    return problem
    elif node.kind == "map" and isinstance(value, dict) and node.values is not None:
        for item in value.values():
            problem = _first_undecodable(item, node.values, struct=struct, path=path)
            if problem:
                return problem
    elif node.kind == "list" and isinstance(value, list) and node.items is not None:
        for item in value:
            problem = _first_undecodable(item, node.items, struct=struct, path=path)
            if problem:
                return problem
    elif node.kind == "scalar" and "oneOf" not in node.body:
        return _scalar_problem(value, node, struct=struct, path=path)
    return None


def _quantity_problem(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return f"quantities must match the regular expression '{_QUANTITY_REGEX}'"
    try:
        parse_quantity(value)
    except QuantityError:
        if _NUMBER_PREFIX.match(str(value).strip()) is None:
            return f"quantities must match the regular expression '{_QUANTITY_REGEX}'"
        return "unable to parse quantity's suffix"
    return None


def _scalar_problem(value: Any, node: SchemaNode, *, struct: str, path: str) -> str | None:
    types = node.body.get("type")
    wanted = types if isinstance(types, str) else next(iter(types or ["string"]), "string")
    if wanted == "string":
        ok = isinstance(value, str)
    elif wanted == "boolean":
        ok = isinstance(value, bool)
    elif wanted == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok:
        return None
    given = {str: "string", bool: "bool", list: "array", dict: "object"}.get(type(value), "number")
    if isinstance(value, float) and wanted == "integer":
        given = f"number {value}"
    go_type = str(node.body.get("format") or _GO_SCALARS.get(wanted, "string"))
    if node.body.get("format") == "date-time":
        go_type = "string"
    return f"json: cannot unmarshal {given} into Go struct field {struct}.{path} of type {go_type}"
