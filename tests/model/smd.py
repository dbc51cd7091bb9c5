"""Structured-merge-diff's field set of an object, for the managed-fields tests.

Not product code: kubemedic reads managed fields (:mod:`kubemedic.model.managedfields`) but
never computes them from a schema (the simulator has its own field sets). This reference
computation checks the FieldsV1 encoder against structured-merge-diff's golden files.

:func:`fieldset_from_object` computes the set a manager gets when it creates an
object: structured-merge-diff's ``Compare(empty, object).Added``, the same set
``TypedValue.ToFieldSet`` gives plus every map and list item it passes through. The
schema (the ``types:`` format that ``openapi2smd`` produces) decides how lists are
identified: ``associative`` lists use ``k:`` (or ``v:`` when they have no keys),
``atomic`` lists, atomic maps and scalars are owned as one leaf, and maps are walked
field by field. Null and empty values are leaves. Values the schema does not
describe (``__untyped_deduced_``, and -- unlike the API server, which would reject
them -- fields missing from the schema) are walked structurally: maps by field, lists
as atomic leaves.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from kubemedic.model.fieldpaths import FieldPath, PathElement
from kubemedic.model.managedfields import FieldSet, encode_fieldsv1

Relationship: TypeAlias = Literal["atomic", "associative", "separable"]

UNTYPED_ATOMIC = "__untyped_atomic_"
UNTYPED_DEDUCED = "__untyped_deduced_"
_RELATIONSHIPS: frozenset[str] = frozenset({"atomic", "associative", "separable"})


class SchemaError(ValueError):
    """A schema is malformed, or an object cannot be laid over it."""


def encode_fieldsv1_json(paths: Iterable[FieldPath]) -> str:
    """``encode_fieldsv1`` as the compact JSON text the API server stores."""
    return json.dumps(encode_fieldsv1(paths), separators=(",", ":"), ensure_ascii=False)


# --- Schema --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypeRef:
    """A named type, or an inline atom; ``relationship`` overrides the target's."""

    named: str | None = None
    inline: Atom | None = None
    relationship: Relationship | None = None


@dataclass(frozen=True, slots=True)
class StructField:
    name: str
    type: TypeRef
    default: Any = None


@dataclass(frozen=True, slots=True)
class MapType:
    """A struct (``fields``) and/or string map (``element_type``); atomic or separable."""

    fields: Mapping[str, StructField] = dataclasses.field(default_factory=dict)
    element_type: TypeRef | None = None
    relationship: Relationship = "separable"


@dataclass(frozen=True, slots=True)
class ListType:
    """``keys`` identify items of an associative list; without keys it is a set."""

    element_type: TypeRef
    relationship: Relationship = "separable"
    keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Atom:
    """The shapes a value may take; untyped atoms allow several at once."""

    scalar: str | None = None
    list_type: ListType | None = None
    map_type: MapType | None = None


_ATOMIC_REF = TypeRef(named=UNTYPED_ATOMIC)
_DEDUCED_REF = TypeRef(named=UNTYPED_DEDUCED)
_BUILTIN_TYPES = {
    UNTYPED_ATOMIC: Atom(
        scalar="untyped",
        list_type=ListType(_ATOMIC_REF, relationship="atomic"),
        map_type=MapType(element_type=_ATOMIC_REF, relationship="atomic"),
    ),
    UNTYPED_DEDUCED: Atom(
        scalar="untyped",
        list_type=ListType(_ATOMIC_REF, relationship="atomic"),
        map_type=MapType(element_type=_DEDUCED_REF),
    ),
}


@dataclass(frozen=True)
class Schema:
    """Named types of a structured-merge-diff schema (plus the two untyped built-ins)."""

    types: Mapping[str, Atom]

    @classmethod
    def from_smd_yaml(cls, obj: Mapping[str, Any]) -> Schema:
        """Read the loaded ``types:`` document (e.g. ``k8s-schema.yaml``)."""
        entries = _mapping(obj, "schema").get("types")
        if not isinstance(entries, list):
            raise SchemaError("schema: 'types' must be a list")
        types = dict(_BUILTIN_TYPES)
        for entry in entries:
            name = _mapping(entry, "type definition").get("name")
            if not isinstance(name, str):
                raise SchemaError(f"type definition without a name: {entry!r}")
            types[name] = _read_atom(entry, name)
        return cls(types)

    def resolve(self, ref: TypeRef) -> Atom:
        atom = ref.inline or Atom()
        if ref.named is not None:
            if ref.named not in self.types:
                raise SchemaError(f"unknown type {ref.named!r}")
            atom = self.types[ref.named]
        if ref.relationship is None:
            return atom
        if atom.map_type is not None:
            return Atom(map_type=dataclasses.replace(atom.map_type, relationship=ref.relationship))
        if atom.list_type is not None:
            list_type = dataclasses.replace(atom.list_type, relationship=ref.relationship)
            return Atom(list_type=list_type)
        raise SchemaError(f"elementRelationship override on a scalar type {ref.named!r}")


def _mapping(node: object, where: str) -> Mapping[str, Any]:
    if not isinstance(node, Mapping):
        raise SchemaError(f"{where}: expected a mapping, got {node!r}")
    return node


def _relationship(value: object, where: str) -> Relationship | None:
    if value is not None and value not in _RELATIONSHIPS:
        raise SchemaError(f"{where}: unknown elementRelationship {value!r}")
    return cast(Relationship | None, value)


def _read_atom(node: Mapping[str, Any], where: str) -> Atom:
    scalar = node.get("scalar")
    if scalar is not None and not isinstance(scalar, str):
        raise SchemaError(f"{where}: scalar must be a string, got {scalar!r}")
    list_node, map_node = node.get("list"), node.get("map")
    return Atom(
        scalar=scalar,
        list_type=None if list_node is None else _read_list(_mapping(list_node, where), where),
        map_type=None if map_node is None else _read_map(_mapping(map_node, where), where),
    )


def _read_ref(node: object, where: str) -> TypeRef:
    """An empty or missing type reference means "whatever the value is" (deduced)."""
    ref = _mapping({} if node is None else node, where)
    named = ref.get("namedType")
    has_atom = any(part in ref for part in ("scalar", "list", "map"))
    if named is None and not has_atom:
        return _DEDUCED_REF
    return TypeRef(
        named=None if named is None else str(named),
        inline=_read_atom(ref, where) if has_atom else None,
        relationship=_relationship(ref.get("elementRelationship"), where),
    )


def _read_list(node: Mapping[str, Any], where: str) -> ListType:
    keys = node.get("keys") or []
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise SchemaError(f"{where}: list keys must be a list of strings, got {keys!r}")
    return ListType(
        element_type=_read_ref(node.get("elementType"), where),
        relationship=_relationship(node.get("elementRelationship"), where) or "separable",
        keys=tuple(keys),
    )


def _read_map(node: Mapping[str, Any], where: str) -> MapType:
    fields: dict[str, StructField] = {}
    for entry in node.get("fields") or []:
        name = _mapping(entry, where).get("name")
        if not isinstance(name, str):
            raise SchemaError(f"{where}: map field without a name: {entry!r}")
        field_where = f"{where}.{name}"
        fields[name] = StructField(
            name, _read_ref(entry.get("type"), field_where), entry.get("default")
        )
    element = node.get("elementType")
    return MapType(
        fields=fields,
        element_type=None if element is None else _read_ref(element, f"{where}.*"),
        relationship=_relationship(node.get("elementRelationship"), where) or "separable",
    )


# --- Field set of an object ----------------------------------------------------------


def fieldset_from_object(obj: Mapping[str, Any], schema: Schema, *, type_name: str) -> FieldSet:
    """The paths a manager owns after creating ``obj`` (see the module docstring)."""
    walker = _FieldSetWalker(schema)
    walker.walk_children(obj, ref=TypeRef(named=type_name), path=FieldPath())
    return frozenset(walker.paths)


class _FieldSetWalker:
    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.paths: set[FieldPath] = set()

    def visit(self, value: Any, *, ref: TypeRef, path: FieldPath) -> None:
        self.paths.add(path)
        self.walk_children(value, ref=ref, path=path)

    def walk_children(self, value: Any, *, ref: TypeRef, path: FieldPath) -> None:
        try:
            atom = self.schema.resolve(ref)
        except SchemaError as err:
            raise SchemaError(f"{path or '<root>'}: {err}") from None
        map_type, list_type = atom.map_type, atom.list_type
        if isinstance(value, Mapping) and map_type and map_type.relationship != "atomic":
            for name, item in value.items():
                child = path.child(PathElement.field(str(name)))
                self.visit(item, ref=_field_ref(map_type, str(name)), path=child)
        elif isinstance(value, list) and list_type and list_type.relationship != "atomic":
            seen: set[PathElement] = set()
            for position, item in enumerate(value):
                element = self.list_element(list_type, item, position=position, path=path)
                if element not in seen:  # like the API server, later duplicates are ignored
                    seen.add(element)
                    self.visit(item, ref=list_type.element_type, path=path.child(element))

    def list_element(
        self, list_type: ListType, item: Any, *, position: int, path: FieldPath
    ) -> PathElement:
        if list_type.relationship != "associative":
            return PathElement.index(position)
        where = f"{path}[{position}]"
        if not list_type.keys and (item is None or isinstance(item, Mapping | list)):
            raise SchemaError(f"{where}: set items must be scalars, got {item!r}")
        if list_type.keys and not isinstance(item, Mapping):
            raise SchemaError(f"{where}: keyed list items must be maps, got {item!r}")
        try:
            if not list_type.keys:
                return PathElement.value(item)
            return PathElement.key(
                [(key, self.key_value(list_type, item, key=key)) for key in list_type.keys]
            )
        except ValueError as err:
            raise SchemaError(f"{where}: {err}") from None

    def key_value(self, list_type: ListType, item: Mapping[str, Any], *, key: str) -> Any:
        """The item's merge-key field, or the schema's default for it (as upstream)."""
        if key in item:
            return item[key]
        map_type = self.schema.resolve(list_type.element_type).map_type
        field = map_type.fields.get(key) if map_type else None
        if field is None or field.default is None:
            raise SchemaError(f"list item has no key field {key!r} and no default for it")
        return field.default


def _field_ref(map_type: MapType, name: str) -> TypeRef:
    if name in map_type.fields:
        return map_type.fields[name].type
    return map_type.element_type or _DEDUCED_REF
