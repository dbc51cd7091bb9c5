"""The OpenAPI v3 documents the emulator publishes, shaped like kube-apiserver's.

kubectl reads these documents for more than ``explain``:

- **Server-side field validation.** Before a write kubectl looks, in the group-version document,
  for a ``patch`` operation carrying the resource's ``x-kubernetes-group-version-kind`` and a
  ``fieldValidation`` query parameter. Finding one, it trusts the server to validate and sends
  ``?fieldValidation=Strict``; otherwise it downloads ``/openapi/v2`` (protobuf) to validate on
  the client. Every patch operation of a kind must therefore carry the parameter: kubectl stops at
  the first one it meets, and Go walks the paths in random order.
- **Client-side apply.** ``kubectl apply`` computes a three-way strategic merge patch from the
  component schemas (``x-kubernetes-patch-merge-key`` / ``-patch-strategy`` on the property,
  next to an ``allOf`` holding the ``$ref``, as kube-openapi writes it). It does so only when the
  kind's patch operation accepts ``application/strategic-merge-patch+json``; custom resources
  (and types the emulator has no definition for) omit it, so kubectl sends a JSON merge patch,
  exactly as it does against a real CRD.

Component schemas are the official 1.32 definitions
(:func:`kubemedic.sim.machinery.definitions.definitions`) rewritten for OpenAPI 3.0:
``#/components/schemas/NAME`` refs, one ``type`` string per schema (the JSON-Schema ``null``
alternative dropped, as the real documents never mark built-in fields nullable), ``Quantity`` and
``IntOrString`` in their real ``oneOf`` form, and the ``enum`` that the definitions package adds to
``apiVersion``/``kind`` removed (the server publishes none, and ``kubectl explain`` would print it).
Each document holds the definitions reachable from its kinds, their lists and subresource kinds,
plus the meta types its operations reference.

Serving contract (kube-openapi's handler): ``GET /openapi/v3`` returns :meth:`OpenAPI.index`;
``GET /openapi/v3/<path>`` returns :meth:`OpenAPI.document` as ``application/json`` with
``ETag: "<hash>"``. A ``hash`` query equal to the current hash earns
``Cache-Control: public, immutable``; a different one is answered ``301`` to the current
``serverRelativeURL``. The hash is the upper-case hex SHA-512 of the document bytes, like the
real server's, so it changes only when the content does.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

from kubemedic.sim.apiserver.openapi import paths as openapi_paths
from kubemedic.sim.apiserver.openapi.paths import JSON, META, REF
from kubemedic.sim.machinery.apiresources import Registry, Resource
from kubemedic.sim.machinery.definitions import Definitions

_DEFS_REF = "#/$defs/"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"

#: kube-openapi's real bodies; the definitions package strips their descriptions.
_SCALARS: dict[str, JSON] = {
    _INT_OR_STRING: {
        "description": "IntOrString is a type that can hold an int32 or a string.  When used in "
        "JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  "
        "This allows you to have, for example, a JSON field that can accept a name or number.",
        "format": "int-or-string",
        "oneOf": [{"type": "integer"}, {"type": "string"}],
    },
    _QUANTITY: {
        "description": "Quantity is a fixed-point representation of a number. It provides "
        "convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and "
        "Int64() accessors.",
        "oneOf": [{"type": "string"}, {"type": "number"}],
    },
}

_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers "
    "should convert recognized schemas to the latest internal value, and may reject "
    "unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents. Servers may "
    "infer this from the endpoint the client submits requests to. Cannot be updated. In "
    "CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


class OpenAPI:
    """The ``/openapi/v3`` index and documents of one registry, built lazily and cached."""

    def __init__(self, registry: Registry, defs: Definitions) -> None:
        self._registry = registry
        self._defs = defs
        self._lock = threading.Lock()
        self._bytes: dict[str, bytes] = {}
        self._hashes: dict[str, str] = {}

    def paths(self) -> list[str]:
        """Every document path, as listed in the index (``api/v1``, ``apis/apps/v1``, ...)."""
        out = ["api", "api/v1", "apis"]
        for group, versions in self._registry.group_versions().items():
            out.append(f"apis/{group}")
            out.extend(f"apis/{group}/{version}" for version in versions)
        out.append("version")
        return out

    def index(self) -> JSON:
        """``GET /openapi/v3``: each document path and its URL pinned to the content hash."""
        return {
            "paths": {
                path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={self.content_hash(path)}"}
                for path in self.paths()
            }
        }

    def document(self, path: str) -> bytes | None:
        """The JSON bytes of a document (``api/v1``, ``apis/apps/v1``), or None if unknown."""
        path = path.strip("/")
        with self._lock:
            found = self._bytes.get(path)
            if found is None and path in self.paths():
                found = orjson.dumps(self._build(path), option=orjson.OPT_SORT_KEYS)
                self._bytes[path] = found
                self._hashes[path] = hashlib.sha512(found).hexdigest().upper()
            return found

    def content_hash(self, path: str) -> str | None:
        """The document's hash (its ETag and the ``hash`` of its URL), or None if unknown."""
        if self.document(path) is None:
            return None
        return self._hashes[path.strip("/")]

    # -- documents -----------------------------------------------------------------------

    def _build(self, path: str) -> JSON:
        parts = path.split("/")
        if path == "api/v1" or (parts[0] == "apis" and len(parts) == 3):
            group, version = ("", "v1") if path == "api/v1" else (parts[1], parts[2])
            return self._group_version(group, version)
        paths, type_name = openapi_paths.root_paths(path)
        return _document(paths, self._schemas([type_name]))

    def _group_version(self, group: str, version: str) -> JSON:
        members = [
            (res, openapi_paths.Names(res, self._defs))
            for res in self._registry.resources
            if (res.group, res.version) == (group, version)
        ]
        roots = list(openapi_paths.OPERATION_TYPES)
        custom: JSON = {}
        for res, names in members:
            if names.custom:
                custom.update(_custom_schemas(res, names))
                roots += [META + "ObjectMeta", META + "ListMeta"]
            else:
                roots += [names.kind, names.list_kind]
            roots.extend(names.sub_kind(sub.name) for sub in res.subresources)
        schemas = self._schemas([name for name in roots if name in self._defs.raw])
        schemas.update(custom)
        return _document(
            openapi_paths.group_version_paths(group, version, resources=members), schemas
        )

    def _schemas(self, roots: list[str]) -> JSON:
        """The converted definitions of ``roots`` and of everything they reference."""
        raw = self._defs.raw
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo.extend(ref for ref in _refs(raw[name]) if ref not in seen)
        return {name: _definition(name, raw[name]) for name in sorted(seen)}


def _document(paths: JSON, schemas: JSON) -> JSON:
    return {
        "components": {
            "schemas": schemas,
            "securitySchemes": {
                "BearerToken": {
                    "description": "Bearer Token authentication",
                    "in": "header",
                    "name": "authorization",
                    "type": "apiKey",
                }
            },
        },
        "info": {"title": "Kubernetes", "version": "unversioned"},
        "openapi": "3.0.0",
        "paths": paths,
    }


# -- schemas ---------------------------------------------------------------------------------


def _refs(node: Any) -> Iterator[str]:
    """Names referenced anywhere under a raw definition."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value.removeprefix(_DEFS_REF)
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def _definition(name: str, body: Mapping[str, Any]) -> JSON:
    if name in _SCALARS:
        return dict(_SCALARS[name])
    out = _convert(body)
    if "x-kubernetes-group-version-kind" in body:
        for field in ("apiVersion", "kind"):
            out.get("properties", {}).get(field, {}).pop("enum", None)
    return out


def _convert(node: Mapping[str, Any]) -> JSON:
    """One JSON-Schema node as OpenAPI 3.0 (refs rewritten, ``type`` a single string)."""
    out: JSON = {}
    for key, value in node.items():
        if key == "$ref":
            continue
        if key == "type":
            types = [value] if isinstance(value, str) else [t for t in value if t != "null"]
            if len(types) == 1:
                out["type"] = types[0]
        elif key == "properties":
            out[key] = {field: _convert(prop) for field, prop in value.items()}
        elif key in ("items", "additionalProperties") and isinstance(value, Mapping):
            out[key] = _convert(value)
        elif key in ("oneOf", "anyOf", "allOf"):
            out[key] = [_convert(item) for item in value]
        else:
            out[key] = value
    ref = node.get("$ref")
    if not isinstance(ref, str):
        return out
    target = {"$ref": REF + ref.removeprefix(_DEFS_REF)}
    # OpenAPI 3.0 ignores siblings of a $ref: kube-openapi wraps the ref in allOf to keep them.
    return {"allOf": [target], **out} if out else target


def _custom_schemas(res: Resource, names: openapi_paths.Names) -> JSON:
    """A CRD-style permissive schema and list for a type without an official definition."""
    gvk = {"group": res.group, "kind": res.kind, "version": res.version}
    preserve = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    kind: JSON = {
        "description": f"{res.kind} of {res.api_version}; every field is kept as sent.",
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": REF + META + "ObjectMeta"}],
                "description": "Standard object's metadata.",
            },
            "spec": {**preserve, "description": f"Desired state of the {res.kind}."},
            "status": {**preserve, "description": f"Observed state of the {res.kind}."},
        },
        **preserve,
        "x-kubernetes-group-version-kind": [gvk],
    }
    listing: JSON = {
        "description": f"{res.list_kind} is a list of {res.kind}",
        "properties": {
            "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
            "items": {
                "description": f"List of {res.plural}.",
                "items": {"$ref": REF + names.kind},
                "type": "array",
            },
            "kind": {"description": _KIND_DOC, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": REF + META + "ListMeta"}],
                "description": "Standard list metadata.",
            },
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{**gvk, "kind": res.list_kind}],
    }
    return {names.kind: kind, names.list_kind: listing}
