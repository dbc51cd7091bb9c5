"""Decoding the Kubernetes protobuf encoding into the JSON object the same request would carry.

client-go's typed clients (kubectl's generator commands: ``kubectl create namespace``,
``create deployment``, ``create job``, ``create secret generic``, ``run``...) send their bodies as
``application/vnd.kubernetes.protobuf``: the four bytes ``k8s\\x00`` then a ``runtime.Unknown``
envelope (``k8s.io/apimachinery/pkg/runtime/generated.proto``)::

    message Unknown  { optional TypeMeta typeMeta = 1; optional bytes raw = 2;
                       optional string contentEncoding = 3; optional string contentType = 4; }
    message TypeMeta { optional string apiVersion = 1; optional string kind = 2; }

whose ``raw`` is the object's own message (``ConfigMap``, ``Deployment``...) encoded by the
field numbers of the upstream ``generated.proto`` (:mod:`kubemedic.sim.apiserver.protobuf.tables`).

The protobuf wire format is a sequence of ``(field number << 3 | wire type)`` varint keys, each
followed by a varint (wire type 0), 8 bytes (1), a varint length and that many bytes (2: strings,
bytes, nested messages, map entries, packed numbers) or 4 bytes (5). Go's generated marshallers
write every non-pointer field, zero values included; the JSON encoder would omit those of them
tagged ``omitempty``, so this decoder drops them too (:data:`tables` marks pointers and fields
without ``omitempty``), and the result equals ``json.Marshal`` of the decoded Go struct. Fields
the tables do not know are skipped, as Go's unmarshallers skip them. A malformed body raises
:class:`ProtobufError` (a 400, worded like the real decoder's errors); a kind without a table
raises :class:`UnsupportedKind` (the server then answers 415, as for any body it cannot read).

Special JSON forms: ``meta.Time`` (seconds, nanos) is an RFC 3339 string of whole seconds (the
real decoder drops the nanoseconds) or ``null`` when empty; ``resource.Quantity`` is its string;
``intstr.IntOrString`` (type, intVal, strVal) an integer or a string; ``meta.FieldsV1`` the JSON
document its raw bytes hold; bytes are base64.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from kubemedic.errors import KubemedicError
from kubemedic.sim.apiserver.protobuf.tables import MESSAGES

__all__ = ["MAGIC", "MEDIA_TYPE", "ProtobufError", "UnsupportedKind", "decode", "decode_message"]

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"

#: The table prefix of each group-version whose kinds the tables cover.
PACKAGES = {
    "v1": "core",
    "apps/v1": "apps",
    "batch/v1": "batch",
    "scheduling.k8s.io/v1": "scheduling",
    "policy/v1": "policy",
}

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5
_SPECIAL = frozenset({"meta.Time", "resource.Quantity", "intstr.IntOrString", "meta.FieldsV1"})


class ProtobufError(KubemedicError, ValueError):
    """A body that is not a well-formed protobuf object. ``kind`` and ``version`` are the
    envelope's when it could be read (the real server then words its 400 with them)."""

    def __init__(self, problem: str, *, kind: str = "", version: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.kind = kind
        self.version = version


class UnsupportedKind(KubemedicError, ValueError):
    """A well-formed envelope around a kind the tables do not describe."""


@dataclass(frozen=True)
class Field:
    """One field of a message table: ``NUMBER FLAG TYPE = JSON_NAME``."""

    number: int
    json: str
    flag: str  # "?" pointer, "!" no omitempty, "^" inline, "" omitempty
    repeated: bool
    type: str  # "s", "i", "b", "y", "{KV}" (a map) or ".package.Message"

    @property
    def is_map(self) -> bool:
        return self.type.startswith("{")

    def map_types(self) -> tuple[str, str]:
        inner = self.type[1:-1]
        key = inner[0]
        return key, inner[1:]


def _parse_field(spec: str) -> Field:
    head, _, json_name = spec.partition("=")
    digits = len(head) - len(head.lstrip("0123456789"))
    number, rest = int(head[:digits]), head[digits:]
    flag = rest[0] if rest[:1] in ("?", "!", "^") else ""
    rest = rest[len(flag) :]
    repeated = rest.startswith("*")
    return Field(number, json_name, flag, repeated, rest[1:] if repeated else rest)


@functools.cache
def table(name: str) -> dict[int, Field]:
    """The fields of message ``name`` (``core.ConfigMap``) by number; KeyError when unknown."""
    fields = (_parse_field(spec) for spec in MESSAGES[name].split())
    return {f.number: f for f in fields}


# -- the wire ------------------------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("unexpected EOF")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ProtobufError("proto: integer overflow")


def _scan(data: bytes, message: str) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` of each field of ``data``, in order."""
    pos, end = 0, len(data)
    while pos < end:
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if number <= 0:
            raise ProtobufError(f"proto: {message}: illegal tag {number} (wire type {wire})")
        value: int | bytes
        if wire == _VARINT:
            value, pos = _varint(data, pos)
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            if pos + size > end:
                raise ProtobufError("unexpected EOF")
            value, pos = int.from_bytes(data[pos : pos + size], "little"), pos + size
        elif wire == _BYTES:
            length, pos = _varint(data, pos)
            if length > end - pos:
                raise ProtobufError("unexpected EOF")
            value, pos = data[pos : pos + length], pos + length
        else:
            raise ProtobufError(f"proto: {message}: illegal wireType {wire} for field {number}")
        yield number, wire, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: bytes) -> str:
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProtobufError(f"proto: invalid UTF-8 in a string field: {exc}") from None


def _expect(wire: int, wanted: int, field: Field, message: str) -> None:
    if wire != wanted:
        owner = message.rsplit(".", maxsplit=1)[-1]
        raise ProtobufError(f"proto: wrong wireType = {wire} for field {field.json} of {owner}")


def _scalar(kind: str, wire: int, value: int | bytes, field: Field, message: str) -> Any:
    if kind in ("s", "y"):
        _expect(wire, _BYTES, field, message)
        assert isinstance(value, bytes)
        return _text(value) if kind == "s" else base64.b64encode(value).decode("ascii")
    _expect(wire, _VARINT, field, message)
    assert isinstance(value, int)
    return bool(value) if kind == "b" else _signed(value)


def _packed(kind: str, value: bytes) -> list[Any]:
    out: list[Any] = []
    pos = 0
    while pos < len(value):
        number, pos = _varint(value, pos)
        out.append(bool(number) if kind == "b" else _signed(number))
    return out


def _nested(type_name: str, data: bytes) -> Any:
    """A nested message's JSON value: special forms first, then its table."""
    if type_name == "meta.Time":
        if not data:
            return None
        seconds = 0
        for number, wire, value in _scan(data, "Time"):
            if number == 1 and wire == _VARINT and isinstance(value, int):
                seconds = _signed(value)
        try:
            return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, OSError, ValueError):
            raise ProtobufError(f"proto: Time: seconds out of range: {seconds}") from None
    if type_name == "resource.Quantity":
        quantity = "0"
        for number, _, value in _scan(data, "Quantity"):
            if number == 1 and isinstance(value, bytes):
                quantity = _text(value)
        return quantity
    if type_name == "intstr.IntOrString":
        parts: dict[int, int | bytes] = {n: v for n, _, v in _scan(data, "IntOrString")}
        if parts.get(1, 0) == 1:
            raw = parts.get(3, b"")
            return _text(raw) if isinstance(raw, bytes) else ""
        int_val = parts.get(2, 0)
        return _signed(int_val) if isinstance(int_val, int) else 0
    if type_name == "meta.FieldsV1":
        document = b"".join(
            v for n, _, v in _scan(data, "FieldsV1") if n == 1 and isinstance(v, bytes)
        )
        try:
            return orjson.loads(document) if document else None
        except orjson.JSONDecodeError as exc:
            raise ProtobufError(f"fieldsV1 does not hold JSON: {exc}") from None
    return decode_message(data, type_name)


def _value(kind: str, wire: int, value: int | bytes, field: Field, message: str) -> Any:
    if kind.startswith("."):
        _expect(wire, _BYTES, field, message)
        assert isinstance(value, bytes)
        return _nested(kind[1:], value)
    return _scalar(kind, wire, value, field, message)


def _map_entry(field: Field, data: bytes, message: str) -> tuple[str, Any]:
    key_kind, value_kind = field.map_types()
    key: Any = ""
    value: Any = None
    for number, wire, raw in _scan(data, message):
        if number == 1:
            key = _scalar(key_kind, wire, raw, field, message)
        elif number == 2:
            value = _value(value_kind, wire, raw, field, message)
    if value is None:  # an entry without a value holds the zero value
        value = {"s": "", "y": "", "i": 0, "b": False}.get(value_kind)
        if value_kind == ".resource.Quantity":
            value = "0"
    return str(key), value


def decode_message(data: bytes, name: str) -> dict[str, Any]:
    """The JSON object of message ``name`` (``apps.Deployment``) encoded in ``data``."""
    fields = table(name)
    out: dict[str, Any] = {}
    for number, wire, value in _scan(data, name):
        field = fields.get(number)
        if field is None:
            continue  # unknown fields are skipped
        if field.is_map:
            _expect(wire, _BYTES, field, name)
            assert isinstance(value, bytes)
            key, item = _map_entry(field, value, name)
            out.setdefault(field.json, {})[key] = item
        elif field.repeated:
            items = out.setdefault(field.json, [])
            if wire == _BYTES and field.type in ("i", "b"):
                assert isinstance(value, bytes)
                items.extend(_packed(field.type, value))
            else:
                items.append(_value(field.type, wire, value, field, name))
        elif field.flag == "^":
            _expect(wire, _BYTES, field, name)
            assert isinstance(value, bytes)
            out.update(decode_message(value, field.type[1:]))
        else:
            out[field.json] = _value(field.type, wire, value, field, name)
    for field in fields.values():
        scalar = field.flag == "" and not field.repeated and field.type in ("s", "i", "b", "y")
        if scalar and field.json in out and out[field.json] in ("", 0, False):
            del out[field.json]  # omitempty: Go's encoder leaves zero values out
    return out


def _envelope(body: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, raw)`` of a ``runtime.Unknown``; raises on anything else."""
    if not body.startswith(MAGIC):
        raise ProtobufError(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
        )
    api_version = kind = encoding = ""
    raw = b""
    for number, wire, value in _scan(body[len(MAGIC) :], "Unknown"):
        if wire != _BYTES or not isinstance(value, bytes):
            continue
        if number == 1:
            for sub, sub_wire, text in _scan(value, "TypeMeta"):
                if sub_wire == _BYTES and isinstance(text, bytes):
                    if sub == 1:
                        api_version = _text(text)
                    elif sub == 2:
                        kind = _text(text)
        elif number == 2:
            raw = value
        elif number == 3:
            encoding = _text(value)
    if encoding:
        raise ProtobufError(f"unsupported content encoding {encoding!r}")
    return api_version, kind, raw


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object of a ``k8s\\x00``-prefixed protobuf request body, ``apiVersion`` and
    ``kind`` first as the envelope names them.

    Raises :class:`ProtobufError` for a malformed body and :class:`UnsupportedKind` for a kind
    the tables do not cover.
    """
    api_version, kind, raw = _envelope(body)
    if not kind or not api_version:
        raise ProtobufError("Object 'Kind' is missing in the protobuf envelope")
    package = PACKAGES.get(api_version)
    name = f"{package}.{kind}"
    if package is None or name not in MESSAGES:
        raise UnsupportedKind(f"no protobuf table for {kind} of {api_version}")
    version = api_version.rsplit("/", 1)[-1]
    try:
        obj = decode_message(raw, name)
    except ProtobufError as exc:
        raise ProtobufError(exc.problem, kind=kind, version=version) from None
    return {"apiVersion": api_version, "kind": kind, **obj}
