"""Field paths: the project's notation for a location inside a Kubernetes object.

Kubernetes server-side apply tracks ownership per *path element*, and so does this
module. There are four kinds of element, mirroring structured-merge-diff's
``PathElement``:

* **field** -- a map key or struct field, e.g. ``spec``;
* **key** -- an item of an *associative list* selected by its merge key, e.g. the
  container whose ``name`` is ``api``. A key may have several fields (``ports`` are
  keyed by ``containerPort`` and ``protocol``); the fields are kept sorted by name, as
  Kubernetes does, so ``[protocol=TCP,containerPort=80]`` and
  ``[containerPort=80,protocol=TCP]`` are the same element;
* **value** -- an item of a *set* (an associative list of scalars, such as
  ``finalizers``), selected by the item itself;
* **index** -- a position in a list that has no merge key. Kubernetes only uses these
  for list items it cannot identify otherwise; positions shift when the list changes.

Text form (``str(path)`` / ``FieldPath.parse``)::

    spec.template.spec.nodeName
    spec.template.spec.containers[name=api].env[name=DEBUG].value
    spec.containers[name=api].ports[containerPort=80,protocol=TCP]
    metadata.finalizers[=kubernetes.io/pvc-protection]
    spec.containers[name=api].args[3]
    metadata.labels["app.kubernetes.io/name"]

Rules (``parse(format(p)) == p`` holds for every path):

* Field names are written bare after a ``.`` (no ``.`` before the first element). A
  name that is empty or contains any of ``.[]=,"``, whitespace or a non-printable
  character is written as ``["json-string"]`` instead (no leading dot).
* A key is ``[name=value,...]`` with names in sorted order; key names follow the
  field-name rule (bare or JSON string). The parser accepts any name order.
* A set item is ``[=value]``; an index is ``[digits]``.
* A key or set *value* that is a string is written bare when it is non-empty,
  contains none of ``[]=,"``, whitespace or non-printable characters, does not start
  with ``{`` and would not itself read as a JSON number, ``true``, ``false`` or
  ``null``. Otherwise it is JSON-encoded: ``[containerPort=80]`` holds the integer 80,
  ``[name="80"]`` the string "80". Non-string values (numbers, booleans, null,
  arrays, objects) are always compact JSON with sorted object keys.
* The empty string is the root path (the whole object).

Elements sort the way structured-merge-diff orders them (and therefore the order the
API server writes FieldsV1): fields, then keys, then values, then indexes; values
order numbers < strings < booleans < arrays < objects < null. Paths sort
lexicographically element by element, a prefix before its descendants.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from kubemedic.errors import InputError

JSONValue: TypeAlias = bool | int | float | str | list["JSONValue"] | dict[str, "JSONValue"] | None
PathPart: TypeAlias = "PathElement | str | int"

_NAME_SPECIALS = frozenset('.[]=,"')
_VALUE_SPECIALS = frozenset('[]=,"')
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_JSON_WORDS = frozenset({"true", "false", "null"})
_DIGITS = re.compile(r"[0-9]+")


class FieldPathError(InputError, ValueError):
    """A field path could not be parsed; the message names the position."""

    def __init__(self, reason: str, *, text: str, position: int) -> None:
        super().__init__(f"{reason} at position {position} in field path {text!r}")
        self.reason = reason
        self.text = text
        self.position = position


class ElementKind(enum.IntEnum):
    """Kinds of path element, in structured-merge-diff's sort order."""

    FIELD = 0
    KEY = 1
    VALUE = 2
    INDEX = 3


def _reject_constant(name: str) -> JSONValue:
    raise ValueError(f"{name} is not valid JSON")


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range")
    return number


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float)


def canonical_json(value: object) -> str:
    """Compact JSON with sorted object keys: how Kubernetes spells values in FieldsV1."""
    try:
        return json.dumps(
            value, separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as err:
        raise ValueError(f"not a JSON value: {value!r} ({err})") from None


def decode_json(text: str) -> JSONValue:
    """Strict JSON decoding: rejects NaN, Infinity and numbers that overflow."""
    value: JSONValue = _DECODER.decode(text)
    return value


def _json_order(value: JSONValue) -> tuple[object, ...]:
    """Sort key matching structured-merge-diff's ``value.Compare``."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, int | float):
        return (0, value, isinstance(value, float), canonical_json(value))
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(_json_order(item) for item in value))
    if isinstance(value, dict):
        return (4, tuple((name, _json_order(value[name])) for name in sorted(value)))
    return (5,)


@functools.total_ordering
@dataclass(frozen=True, slots=True, repr=False)
class PathElement:
    """One step of a :class:`FieldPath`; immutable, hashable and ordered.

    Build elements with :meth:`field`, :meth:`key`, :meth:`value` or :meth:`index`.
    ``data`` is the field name, the index, or the canonical JSON of a key (as an
    object) or set value -- so ``1``, ``1.0`` and ``true`` stay distinct elements
    even though Python considers them equal.
    """

    kind: ElementKind
    data: str | int
    sort_key: tuple[object, ...] = dataclasses.field(compare=False)

    @classmethod
    def field(cls, name: str) -> PathElement:
        if not isinstance(name, str):
            raise TypeError(f"field name must be a string, not {name!r}")
        return cls(ElementKind.FIELD, name, (0, name))

    @classmethod
    def key(cls, fields: Mapping[str, object] | Iterable[tuple[str, object]]) -> PathElement:
        """An associative-list item selected by its merge-key fields (any order)."""
        pairs = list(fields.items() if isinstance(fields, Mapping) else fields)
        names = [name for name, _ in pairs]
        if not pairs:
            raise ValueError("a key needs at least one field")
        if len(set(names)) != len(names) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"key field names must be distinct strings: {names!r}")
        text = canonical_json(dict(pairs))
        items = _as_object(decode_json(text)).items()
        return cls(ElementKind.KEY, text, (1, tuple((n, _json_order(v)) for n, v in items)))

    @classmethod
    def value(cls, value: object) -> PathElement:
        """A set item, selected by the (JSON) value itself."""
        text = canonical_json(value)
        return cls(ElementKind.VALUE, text, (2, _json_order(decode_json(text))))

    @classmethod
    def index(cls, position: int) -> PathElement:
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ValueError(f"list index must be a non-negative integer, not {position!r}")
        return cls(ElementKind.INDEX, position, (3, position))

    @property
    def field_name(self) -> str:
        return str(self._expect(ElementKind.FIELD))

    @property
    def key_fields(self) -> tuple[tuple[str, JSONValue], ...]:
        """The key's (name, value) pairs, sorted by name."""
        return tuple(_as_object(decode_json(str(self._expect(ElementKind.KEY)))).items())

    @property
    def set_value(self) -> JSONValue:
        return decode_json(str(self._expect(ElementKind.VALUE)))

    @property
    def list_index(self) -> int:
        return int(self._expect(ElementKind.INDEX))

    def _expect(self, kind: ElementKind) -> str | int:
        if self.kind is not kind:
            raise TypeError(f"{self!r} is not a {kind.name.lower()} element")
        return self.data

    def __lt__(self, other: PathElement) -> bool:
        if not isinstance(other, PathElement):
            return NotImplemented
        return self.sort_key < other.sort_key

    def __repr__(self) -> str:
        return f"PathElement<{self}>"

    def __str__(self) -> str:
        return _format_element(self, first=True)


def _as_object(value: JSONValue) -> dict[str, JSONValue]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, got {value!r}")
    return value


@dataclass(frozen=True, order=True, slots=True)
class FieldPath:
    """An immutable, hashable, sortable sequence of :class:`PathElement`."""

    elements: tuple[PathElement, ...] = ()

    def __post_init__(self) -> None:
        elements = tuple(self.elements)
        if not all(isinstance(element, PathElement) for element in elements):
            raise TypeError(f"FieldPath elements must be PathElements: {elements!r}")
        object.__setattr__(self, "elements", elements)

    @classmethod
    def parse(cls, text: str) -> FieldPath:
        return cls(_Parser(text).parse())

    @classmethod
    def of(cls, *parts: PathPart) -> FieldPath:
        """Build a path from elements; a ``str`` is a field name, an ``int`` an index."""
        return cls(tuple(_to_element(part) for part in parts))

    def format(self) -> str:
        return "".join(
            _format_element(element, first=i == 0) for i, element in enumerate(self.elements)
        )

    def child(self, *parts: PathPart) -> FieldPath:
        """Extend the path: ``path.child("env", PathElement.key({"name": "DEBUG"}))``."""
        return FieldPath(self.elements + tuple(_to_element(part) for part in parts))

    @property
    def parent(self) -> FieldPath:
        if not self.elements:
            raise ValueError("the root path has no parent")
        return FieldPath(self.elements[:-1])

    def has_prefix(self, prefix: FieldPath) -> bool:
        """True if ``prefix`` equals this path or is one of its ancestors."""
        return self.elements[: len(prefix.elements)] == prefix.elements

    def __len__(self) -> int:
        return len(self.elements)

    def __iter__(self) -> Iterator[PathElement]:
        return iter(self.elements)

    def __getitem__(self, position: int) -> PathElement:
        return self.elements[position]

    def __str__(self) -> str:
        return self.format()

    def __repr__(self) -> str:
        return f"FieldPath.parse({self.format()!r})"


def _to_element(part: PathPart) -> PathElement:
    if isinstance(part, PathElement):
        return part
    if isinstance(part, str):
        return PathElement.field(part)
    return PathElement.index(part)


def _is_plain(text: str, specials: frozenset[str]) -> bool:
    return bool(text) and all(
        ch not in specials and ch.isprintable() and not ch.isspace() for ch in text
    )


def _is_json_literal(token: str) -> bool:
    return token in _JSON_WORDS or _JSON_NUMBER.fullmatch(token) is not None


def _is_bare_name(name: str) -> bool:
    return _is_plain(name, _NAME_SPECIALS)


def _is_bare_value(text: str) -> bool:
    plain = _is_plain(text, _VALUE_SPECIALS)
    return plain and not text.startswith("{") and not _is_json_literal(text)


def _format_name(name: str) -> str:
    return name if _is_bare_name(name) else canonical_json(name)


def _format_value(value: JSONValue) -> str:
    if isinstance(value, str) and _is_bare_value(value):
        return value
    return canonical_json(value)


def _format_element(element: PathElement, *, first: bool) -> str:
    kind = element.kind
    if kind is ElementKind.FIELD:
        name = element.field_name
        if _is_bare_name(name):
            return name if first else f".{name}"
        return f"[{canonical_json(name)}]"
    if kind is ElementKind.KEY:
        pairs = (f"{_format_name(n)}={_format_value(v)}" for n, v in element.key_fields)
        return f"[{','.join(pairs)}]"
    if kind is ElementKind.VALUE:
        return f"[={_format_value(element.set_value)}]"
    return f"[{element.list_index}]"


class _Parser:
    """Recursive-descent reader for the notation described in the module docstring."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, reason: str, position: int | None = None) -> FieldPathError:
        where = self.pos if position is None else position
        return FieldPathError(reason, text=self.text, position=where)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            found = repr(self.peek()) if self.peek() else "end of input"
            raise self.fail(f"expected {char!r}, found {found}")
        self.pos += 1

    def parse(self) -> tuple[PathElement, ...]:
        elements: list[PathElement] = []
        while self.pos < len(self.text):
            if self.peek() == "[":
                elements.append(self.bracket())
                continue
            if elements:
                self.expect(".")
            elements.append(PathElement.field(self.bare(_NAME_SPECIALS, "a field name")))
        return tuple(elements)

    def bare(self, specials: frozenset[str], what: str) -> str:
        start = self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in specials or char.isspace():
                break
            self.pos += 1
        if self.pos == start:
            found = repr(self.peek()) if self.peek() else "end of input"
            raise self.fail(f"expected {what}, found {found}")
        return self.text[start : self.pos]

    def json_token(self) -> JSONValue:
        start = self.pos
        try:
            value, self.pos = _DECODER.raw_decode(self.text, self.pos)
        except ValueError as err:
            raise self.fail(f"invalid JSON ({err})", start) from None
        return value  # type: ignore[no-any-return]

    def name(self) -> str:
        if self.peek() == '"':
            return str(self.json_token())  # a '"' always opens a JSON string
        return self.bare(_NAME_SPECIALS, "a key field name")

    def scalar(self) -> JSONValue:
        if self.peek() in ('"', "{", "["):
            return self.json_token()
        start = self.pos
        token = self.bare(_VALUE_SPECIALS, "a value")
        if not _is_json_literal(token):
            return token
        try:
            return decode_json(token)
        except ValueError as err:
            raise self.fail(str(err), start) from None

    def bracket(self) -> PathElement:
        self.expect("[")
        if self.peek() == "=":
            self.pos += 1
            element = PathElement.value(self.scalar())
        elif self.peek() == '"':
            name = self.name()
            element = PathElement.field(name) if self.peek() == "]" else self.key(name)
        else:
            start = self.pos
            name = self.bare(_NAME_SPECIALS, "an index, key or quoted field name")
            if self.peek() == "]" and _DIGITS.fullmatch(name):
                element = PathElement.index(int(name))
            elif self.peek() == "]":
                raise self.fail(f"field names in brackets must be JSON strings: {name!r}", start)
            else:
                element = self.key(name)
        self.expect("]")
        return element

    def key(self, first_name: str) -> PathElement:
        pairs: list[tuple[str, JSONValue]] = []
        name = first_name
        while True:
            if name in (seen for seen, _ in pairs):
                raise self.fail(f"duplicate key field {name!r}")
            self.expect("=")
            pairs.append((name, self.scalar()))
            if self.peek() != ",":
                return PathElement.key(pairs)
            self.pos += 1
            name = self.name()
