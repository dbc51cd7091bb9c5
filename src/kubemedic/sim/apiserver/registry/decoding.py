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
validation (:mod:`kubemedic.sim.apiserver.registry.validating`), which only ever see decodable
objects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

from kubemedic.model.quantities import QuantityError, parse_quantity
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.definitions import SchemaNode, definitions

__all__ = [
    "copy_keeping",
    "decoding_error",
    "is_clean",
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


def is_clean(obj: Any, schema: SchemaNode, *, raw: bytes | None = None) -> bool:
    """Whether :func:`unknown_fields` (with ``raw``), :func:`prune_unknown` and
    :func:`decoding_error` would all find nothing in ``obj``: one walk that builds no paths,
    for the common case. False means "ask them" (it may be a false alarm: duplicate keys are
    ruled out only when ``raw`` is ``obj`` as orjson writes it)."""
    if raw is not None and orjson.dumps(obj) != raw.strip():
        return False
    if not isinstance(obj, dict) or (_PLANS.get(schema) or _plan(schema))[0] != _STRUCT:
        return _clean(obj, schema)
    for key, value in obj.items():
        child = schema.field(key)
        if child is None:
            return False
        if isinstance(value, dict | list) and value and child.type_name != _OBJECT_META:
            if not _clean_part(value, child):
                return False
        elif value is not None and not _clean(value, child):
            return False
    return True


def _clean_part(value: Any, node: SchemaNode) -> bool:
    """:func:`_clean` of a whole part (a spec, a status), remembered by its JSON: parts recur
    across writes (a label patch leaves the spec as it was; pods of one template share one).
    Metadata never recurs (each write moves its resourceVersion) and is walked instead."""
    try:
        key = (node, orjson.dumps(value))
    except TypeError:
        return _clean(value, node)
    known = _CLEAN.get(key)
    if known is None:
        known = _clean(value, node)
        if len(_CLEAN) >= _CLEAN_LIMIT:
            _CLEAN.clear()
        _CLEAN[key] = known
    return known


_CLEAN: dict[tuple[SchemaNode, bytes], bool] = {}
_CLEAN_LIMIT = 4096


_STRUCT, _MAP, _LIST, _SCALAR, _QUANTITY, _FREE = range(6)
_QUANTITY_TYPE = "io.k8s.apimachinery.pkg.api.resource.Quantity"
#: How each schema node's values are checked (the official nodes live as long as the process).
_PLANS: dict[SchemaNode, tuple[int, Any]] = {}


def _plan(node: SchemaNode) -> tuple[int, Any]:
    """The check of :func:`_walk` and :func:`_first_undecodable` together, for one node."""
    kind = node.kind
    if node.type_name == _QUANTITY_TYPE:
        plan: tuple[int, Any] = (_QUANTITY, None) if kind in ("scalar", "any") else (-1, None)
    elif kind == "struct":
        plan = (_STRUCT, {})  # the plans of its fields, as they are met
    elif kind == "map":
        plan = (_MAP, node.values) if node.values is not None else (_FREE, None)
    elif kind == "list":
        plan = (_LIST, node.items) if node.items is not None else (_FREE, None)
    elif kind == "scalar" and "oneOf" not in node.body:
        types = node.body.get("type")
        wanted = types if isinstance(types, str) else next(iter(types or ["string"]), "string")
        plan = (_SCALAR, wanted)
    else:
        plan = (_FREE, None)
    _PLANS[node] = plan
    return plan


def _clean(value: Any, node: SchemaNode) -> bool:
    if value is None:
        return True
    code, detail = _PLANS.get(node) or _plan(node)
    if code == _STRUCT:
        if isinstance(value, dict):
            fields: dict[str, tuple[SchemaNode, int, Any]] = detail
            for key, item in value.items():
                known = fields.get(key)
                if known is None:
                    child = node.field(key)
                    if child is None:
                        return False
                    known = fields[key] = (child, *(_PLANS.get(child) or _plan(child)))
                if item is None:
                    continue
                child_code = known[1]
                if child_code == _SCALAR:
                    if not _scalar_fits(item, known[2]):
                        return False
                elif child_code != _FREE and not _clean(item, known[0]):
                    return False
            return True
        return False  # an object expected: decoding_error names it
    if code == _SCALAR:
        return _scalar_fits(value, detail)
    if code == _LIST:
        return isinstance(value, list) and all(_clean(item, detail) for item in value)
    if code == _MAP:
        return isinstance(value, dict) and all(_clean(item, detail) for item in value.values())
    if code == _QUANTITY:
        return _quantity_problem(value) is None
    return code == _FREE


def _scalar_fits(value: Any, wanted: str) -> bool:
    """What :func:`_scalar_problem` accepts."""
    if wanted == "string":
        return isinstance(value, str)
    if wanted == "boolean":
        return isinstance(value, bool)
    if wanted == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, int | float) and not isinstance(value, bool)


def strict_error(problems: Sequence[str], *, kind: str, version: str) -> errors.StatusError:
    """The 400 of ``fieldValidation=Strict``: ``Deployment in version "v1" cannot be handled as
    a Deployment: strict decoding error: unknown field "spec.foo"``."""
    return _undecodable("strict decoding error: " + ", ".join(problems), kind=kind, version=version)


def _undecodable(detail: str, *, kind: str, version: str) -> errors.StatusError:
    return errors.bad_request(
        f'{kind} in version "{version}" cannot be handled as a {kind}: {detail}'
    )


_QUANTITY_REGEX = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
_NUMBER_PREFIX = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")
_GO_SCALARS = {"integer": "int64", "number": "float64", "boolean": "bool", "string": "string"}


def decoding_error(
    obj: Any, schema: SchemaNode | None, *, kind: str, version: str
) -> errors.StatusError | None:
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
    elif node.kind in ("struct", "map", "list") and not _fits(value, node.kind):
        return (
            f"json: cannot unmarshal {_json_given(value)} into Go struct field "
            f"{struct}.{path} of type {_go_type(node)}"
        )
    return None


def _fits(value: Any, kind: str) -> bool:
    return isinstance(value, list) if kind == "list" else isinstance(value, dict)


def _json_given(value: Any) -> str:
    return {str: "string", bool: "bool", list: "array", dict: "object"}.get(type(value), "number")


def _go_type(node: SchemaNode) -> str:
    """Go's spelling of a composite field's type, as encoding/json names it in its errors."""
    if node.kind == "struct":
        name = (node.type_name or "").rsplit(".", 2)
        return ".".join(name[-2:]) if len(name) >= 2 else (node.type_name or "struct")
    inner = node.values if node.kind == "map" else node.items
    element = "interface {}"
    if inner is not None:
        if inner.kind == "scalar":
            types = inner.body.get("type")
            wanted = types if isinstance(types, str) else "string"
            element = str(inner.body.get("format") or _GO_SCALARS.get(wanted, "string"))
        else:
            element = _go_type(inner)
    return f"map[string]{element}" if node.kind == "map" else f"[]{element}"


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


def json_type(value: Any) -> str:
    """The JSON type name Go's decoder reports (``string``, ``number``, ``array``, ...)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def load_json(body: bytes) -> Any:
    """A patch body: JSON, or 400 as the server words it."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from exc


def load_yaml_or_json(body: bytes) -> Any:
    """An apply body: JSON, else YAML (``safe_load``), or 400."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        pass
    import yaml  # noqa: PLC0415 - apply bodies are rarely YAML; import on demand

    try:
        return yaml.safe_load(body.decode("utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"error decoding YAML: {exc}") from exc


def decoded(body: Any) -> Any:
    """``body`` as decoding its JSON would give it: a deep copy in which tuples are lists (a
    JSON round trip; bodies components build in Python reach the registry as the server would
    read them off the wire)."""
    return orjson.loads(orjson.dumps(body))


def copy_keeping(body: dict[str, Any], managed: object) -> dict[str, Any]:
    """``body`` decoded (:func:`decoded`), but for its ``metadata.managedFields`` if
    that is ``managed`` (a patch that leaves them as stored: they are compared, never changed,
    on the way)."""
    meta = body.get("metadata")
    if managed is None or not isinstance(meta, dict) or meta.get("managedFields") is not managed:
        copied: dict[str, Any] = decoded(body)
        return copied
    rest = {k: v for k, v in meta.items() if k != "managedFields"}
    copied = decoded({**body, "metadata": rest})
    copied_meta = copied["metadata"]
    copied["metadata"] = {k: managed if k == "managedFields" else copied_meta[k] for k in meta}
    return copied
