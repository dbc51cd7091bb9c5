"""Entries of ``metadata.managedFields``: who manages what, read from and written to objects.

A manager is named by the ``fieldManager`` parameter or else by the User-Agent up to its first
``/`` (:func:`manager_name`). An entry is a manager's identity (:class:`Identity`: name,
operation, apiVersion for ``Update``, subresource) and its fields (:class:`Entry`), kept both as
a set of paths and as the FieldsV1 document stored in the object
(:mod:`kubemedic.sim.apiserver.fields.fieldtrees`), each made from the other only when asked for.
Decoding is ``DecodeManagedFields`` (its errors are the API server's), and an entry written back
unchanged is the very entry that was read. Entries are sorted like ``sortEncodedManagedFields``:
``Apply`` before ``Update``, then by time (whole seconds), manager, apiVersion and subresource.

The stored object's list is decoded once: :func:`encode_managed` remembers what it wrote, and
:func:`decode_stored` finds it again while the store keeps that very list.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, TypeAlias

from kubemedic.errors import KubemedicError
from kubemedic.model.fieldpaths import FieldPath
from kubemedic.model.managedfields import ManagedFieldsError
from kubemedic.sim.apiserver.fields import fieldtrees
from kubemedic.sim.machinery import errors, naming

FieldSet: TypeAlias = frozenset[FieldPath]
Obj: TypeAlias = Mapping[str, Any]

FIELD_MANAGER_MAX_LENGTH: Final = 128


# --- managers --------------------------------------------------------------------------------


def manager_name(field_manager: str | None, user_agent: str | None) -> str:
    """The manager a write is recorded under: ``fieldManager`` if given, else the User-Agent
    before its first ``/`` (unprintable characters dropped, cut at 128 bytes), else
    ``unknown``. An explicit name is not shortened: :func:`validate_field_manager` rejects it."""
    if field_manager:
        return field_manager
    return _agent_name(user_agent)


@functools.lru_cache(maxsize=256)
def _agent_name(user_agent: str | None) -> str:
    prefix, size = [], 0
    for char in (user_agent or "").split("/", 1)[0]:
        if not char.isprintable():
            continue
        size += len(char.encode())
        if size > FIELD_MANAGER_MAX_LENGTH:
            break
        prefix.append(char)
    return "".join(prefix) or "unknown"


def validate_field_manager(field_manager: str | None, *, options: str, apply: bool = False) -> None:
    """422 as ``ValidateFieldManager`` (and, for apply, ``ValidatePatchOptions``); ``options``
    is ``CreateOptions``, ``UpdateOptions`` or ``PatchOptions``."""
    causes = _field_manager_causes(field_manager or "", apply=apply)
    if causes:
        raise errors.invalid(options, "", causes, group="meta.k8s.io")


@functools.lru_cache(maxsize=256)
def _field_manager_causes(name: str, *, apply: bool) -> tuple[errors.Cause, ...]:
    causes: list[errors.Cause] = []
    if apply and not name:
        message = "Required value: is required for apply patch"
        causes.append(errors.Cause("FieldValueRequired", message, "fieldManager"))
    if len(name.encode()) > FIELD_MANAGER_MAX_LENGTH:
        message = f"Too long: must have at most {FIELD_MANAGER_MAX_LENGTH} bytes"
        causes.append(errors.Cause("FieldValueTooLong", message, "fieldManager"))
    position = 0
    for char in name:
        if not char.isprintable():
            message = (
                f"Invalid value: {naming.go_quote(name)}: invalid character "
                f"U+{ord(char):04X} (at position {position})"
            )
            causes.append(errors.Cause("FieldValueInvalid", message, "fieldManager"))
        position += len(char.encode())
    return tuple(causes)


@dataclass(frozen=True, slots=True)
class Identity:
    """A manager as ``BuildManagerIdentifier`` sees it (appliers without apiVersion)."""

    manager: str
    operation: str
    api_version: str
    subresource: str = ""

    @classmethod
    def of(cls, manager: str, operation: str, api_version: str, subresource: str) -> Identity:
        return _identity(manager, operation, api_version, subresource)

    @property
    def key(self) -> str:
        """The identifier's JSON, which the API server sorts managers by."""
        names = ("manager", "operation", "apiVersion", "subresource")
        values = (self.manager, self.operation, self.api_version, self.subresource)
        return json.dumps(
            {k: v for k, v in zip(names, values, strict=True) if v}, separators=(",", ":")
        )

    def describe(self) -> str:
        """``printManager``: ``"kubectl-edit" using apps/v1``, ``"x" with subresource "status"``."""
        text = naming.go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {naming.go_quote(self.subresource)}"
        return text + (f" using {self.api_version}" if self.operation == "Update" else "")


@functools.lru_cache(maxsize=1024)
def _identity(manager: str, operation: str, api_version: str, subresource: str) -> Identity:
    return Identity(manager, operation, "" if operation == "Apply" else api_version, subresource)


class Entry:
    """One manager's fields, as a set (``fields``) and as a canonical FieldsV1 document
    (``tree``), each computed from the other when first asked for; ``encoded`` is the stored
    entry, written back while nothing changes, and ``fieldsv1`` the encoded ``fields`` (as they
    were given), kept while they do not change. Equality is by fields, apiVersion, operation
    and time."""

    __slots__ = ("_fields", "_tree", "api_version", "applied", "encoded", "fieldsv1", "time")

    def __init__(
        self,
        fields: FieldSet | None,
        api_version: str,
        applied: bool,
        time: str | None,
        *,
        encoded: Obj | None = None,
        fieldsv1: Obj | None = None,
        tree: fieldtrees.Tree | None = None,
    ) -> None:
        if fields is None and tree is None:
            raise ValueError("an entry needs its fields or their tree")
        self._fields = fields
        self._tree = tree
        self.api_version = api_version
        self.applied = applied
        self.time = time
        self.encoded = encoded
        self.fieldsv1 = fieldsv1

    @property
    def fields(self) -> FieldSet:
        if self._fields is None:
            assert self._tree is not None
            self._fields = fieldtrees.paths(self._tree)
        return self._fields

    @property
    def tree(self) -> fieldtrees.Tree:
        if self._tree is None:
            if self.fieldsv1 is not None:
                self._tree = fieldtrees.canonical(self.fieldsv1)
            else:
                self._tree = fieldtrees.encode(self.fields)
        return self._tree

    def changed(self, **changes: Any) -> Entry:
        """A copy with ``fields`` (or ``tree``), ``time`` or ``api_version`` changed; the
        stored entry is forgotten, the given fieldsV1 kept while the fields stay the same."""
        fields: FieldSet | None = changes.pop("fields", None)
        tree: fieldtrees.Tree | None = changes.pop("tree", None)
        entry = Entry(
            self._fields,
            changes.pop("api_version", self.api_version),
            changes.pop("applied", self.applied),
            changes.pop("time", self.time),
            fieldsv1=self.fieldsv1,
            tree=self._tree,
        )
        if changes:
            raise TypeError(f"unexpected changes: {sorted(changes)}")
        if fields is not None and fields != self.fields:
            entry._fields, entry._tree, entry.fieldsv1 = fields, None, None
        elif tree is not None and tree is not self._tree:  # a new tree: new fields
            entry._fields, entry._tree, entry.fieldsv1 = None, tree, None
        return entry

    def stored_as(self, encoded: Obj) -> Entry:
        """This entry remembered as ``encoded`` (its fieldsV1 written from this entry)."""
        fieldsv1 = encoded["fieldsV1"]
        tree = self._tree
        if tree is None and fieldsv1 is not self.fieldsv1:
            tree = fieldsv1  # written from the fields: canonical
        return Entry(
            self._fields,
            self.api_version,
            self.applied,
            self.time,
            encoded=encoded,
            fieldsv1=fieldsv1,
            tree=tree,
        )

    def _key(self) -> tuple[object, ...]:
        return (self.fields, self.api_version, self.applied, self.time)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"Entry(fields={set(self.fields)!r}, api_version={self.api_version!r}, "
            f"applied={self.applied!r}, time={self.time!r})"
        )


Managed: TypeAlias = dict[Identity, Entry]


class ManagedFieldsDecodeError(KubemedicError, ValueError):
    """Stored or sent managedFields that the API server could not decode."""


def decode_managed(raw: object, *, keep: bool = False) -> Managed:
    """``DecodeManagedFields``: the entries of ``metadata.managedFields`` by identity;
    ``keep`` remembers each entry as given, to write it back while it does not change."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ManagedFieldsDecodeError("managedFields must be a list")
    managed: Managed = {}
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ManagedFieldsDecodeError(f"managed fields entry {i} is not an object")
        operation, version, kind = (
            item.get("operation"),
            item.get("apiVersion"),
            item.get("fieldsType"),
        )
        if operation not in ("Apply", "Update"):
            raise ManagedFieldsDecodeError("operation must be `Apply` or `Update`")
        if not isinstance(version, str) or not version:
            raise ManagedFieldsDecodeError("apiVersion must not be empty")
        if kind != "FieldsV1":
            problem = "invalid fieldsType" if kind else "missing fieldsType"
            raise ManagedFieldsDecodeError(f"{problem} in managed fields entry {i}")
        try:
            tree = fieldtrees.canonical(item.get("fieldsV1") or {})
        except ManagedFieldsError as err:
            raise ManagedFieldsDecodeError(f"error decoding set: {err}") from None
        time = item.get("time")
        manager, subresource = str(item.get("manager") or ""), str(item.get("subresource") or "")
        managed[Identity.of(manager, str(operation), version, subresource)] = Entry(
            None,
            version,
            operation == "Apply",
            time if isinstance(time, str) else None,
            encoded=item if keep else None,
            fieldsv1=item.get("fieldsV1") if keep else None,
            tree=tree,
        )
    return managed


def encode_managed(managed: Managed) -> list[dict[str, Any]]:
    """The ``metadata.managedFields`` list, in the API server's order. The list is remembered
    with ``managed``, so the next write to the object need not decode it again."""
    entries: list[tuple[Identity, Entry, dict[str, Any]]] = []
    for identity, entry in managed.items():
        if entry.encoded is not None:
            entries.append((identity, entry, dict(entry.encoded)))
            continue
        out: dict[str, Any] = {"manager": identity.manager} if identity.manager else {}
        out["operation"] = "Apply" if entry.applied else identity.operation
        out["apiVersion"] = entry.api_version
        if entry.time is not None:
            out["time"] = entry.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = entry.fieldsv1 or entry.tree
        if identity.subresource:
            out["subresource"] = identity.subresource
        entries.append((identity, entry, out))
    if len(entries) > 1:
        entries.sort(key=lambda t: _order(t[2]))
    encoded = [out for _, _, out in entries]
    remembered = {
        identity: entry if entry.encoded is not None else entry.stored_as(out)
        for identity, entry, out in entries
    }
    _remember(encoded, remembered)
    return encoded


def _order(entry: Obj) -> tuple[str, int, str, str, str]:
    """``sortEncodedManagedFields``."""
    return (
        entry["operation"],
        seconds(entry.get("time")),
        entry.get("manager", ""),
        entry["apiVersion"],
        entry.get("subresource", ""),
    )


@functools.lru_cache(maxsize=4096)
def seconds(time: str | None) -> int:
    """Whole seconds of an RFC 3339 time (0 when missing or unreadable)."""
    try:
        return math.floor(datetime.fromisoformat(time).timestamp()) if time else 0
    except ValueError:
        return 0


_STORED: dict[int, tuple[list[Any], Managed]] = {}
_STORED_LIMIT: Final = 4096


def decode_stored(raw: object) -> Managed:
    """:func:`decode_managed` of a stored object's managedFields, remembered while the store
    keeps that list (it is replaced, never changed in place, on every write)."""
    if not isinstance(raw, list):
        return decode_managed(raw)
    hit = _STORED.get(id(raw))
    if hit is not None and hit[0] is raw:
        return dict(hit[1])
    managed = decode_managed(raw, keep=True)
    _remember(raw, managed)
    return dict(managed)


def _remember(raw: list[Any], managed: Managed) -> None:
    if len(_STORED) >= _STORED_LIMIT:
        del _STORED[next(iter(_STORED))]
    _STORED[id(raw)] = (raw, managed)
