"""The official OpenAPI definitions of the built-in types: how each field merges and is owned.

The real API server knows, for every field of every built-in type, how strategic merge patch
merges it (``x-kubernetes-patch-strategy`` / ``x-kubernetes-patch-merge-key``), how server-side
apply tracks it (``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``,
``x-kubernetes-map-type``) and whether a field exists at all (strict field validation). Those
facts ship in the ``kubernetes-validate`` package as one JSON-Schema document per Kubernetes
minor version; :func:`definitions` reads the document of the version kubemedic speaks (package
data installed with kubemedic, read once per process: a constant of the program, never a user's
file) and exposes it as a tree of :class:`SchemaNode`. The API emulator and the drift engine (which
lists are sets or maps keyed by which fields) read the same tree.

Extensions can sit on the property that references a definition rather than on the definition
itself (``DeploymentSpec.strategy`` carries ``x-kubernetes-patch-strategy: retainKeys`` next to
its ``$ref``), so a node merges the referencing property's extensions over the referenced type's.

Types outside the official document (metrics.k8s.io, Cluster API custom resources) have no
definition: callers get ``None`` and treat the object as schemaless, as the real server treats a
CRD with ``x-kubernetes-preserve-unknown-fields``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import Any, Final, Literal

#: The Kubernetes minor version whose definitions kubemedic reads (kubectl 1.32 is the client).
KUBERNETES_VERSION = "1.32"

#: List-map key defaults from the Go types (``+default="TCP"``), which structured-merge-diff fills
#: in when an item omits the key; the JSON schemas shipped with kubernetes-validate carry none.
KEY_DEFAULTS: Final[Mapping[tuple[str, str], object]] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}

NodeKind = Literal["struct", "map", "list", "scalar", "any"]

_REF_PREFIX = "#/$defs/"


class Definitions:
    """All definitions of one Kubernetes version, indexed by name and by group/version/kind."""

    def __init__(self, defs: Mapping[str, Mapping[str, Any]]) -> None:
        self.raw = defs
        self._by_gvk: dict[tuple[str, str, str], str] = {}
        for name, body in defs.items():
            for gvk in body.get("x-kubernetes-group-version-kind", ()):
                key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
                # Several names can claim a GVK (DeleteOptions, WatchEvent); the type whose
                # name ends in the kind is the object itself.
                if key not in self._by_gvk or name.endswith("." + gvk["kind"]):
                    self._by_gvk[key] = name
        self._nodes: dict[str, SchemaNode] = {}

    def type_name(self, group: str, version: str, kind: str) -> str | None:
        """The definition name of a kind (``io.k8s.api.apps.v1.Deployment``), or None."""
        return self._by_gvk.get((group, version, kind))

    def node(self, type_name: str) -> SchemaNode:
        """The schema node of a named definition (KeyError when unknown)."""
        found = self._nodes.get(type_name)
        if found is None:
            found = SchemaNode(self, self.raw[type_name], type_name=type_name)
            self._nodes[type_name] = found
        return found

    def for_kind(self, group: str, version: str, kind: str) -> SchemaNode | None:
        """The schema node of a kind, or None for types without an official definition."""
        name = self.type_name(group, version, kind)
        return None if name is None else self.node(name)

    def resolve(self, prop: Mapping[str, Any]) -> SchemaNode:
        """A node for a property: its ``$ref`` target with the property's extensions on top."""
        ref = prop.get("$ref")
        if ref is None:
            return SchemaNode(self, prop, type_name=None)
        name = str(ref).removeprefix(_REF_PREFIX)
        extensions = {k: v for k, v in prop.items() if k.startswith("x-kubernetes-")}
        if not extensions:
            return self.node(name)
        return SchemaNode(self, {**self.raw[name], **extensions}, type_name=name)


@dataclass(frozen=True, eq=False)
class SchemaNode:
    """One node of a type: a struct, a map, a list, a scalar or anything (schemaless)."""

    defs: Definitions
    body: Mapping[str, Any]
    type_name: str | None

    @cached_property
    def kind(self) -> NodeKind:
        body = self.body
        if "properties" in body:
            return "struct"
        if "items" in body:
            return "list"
        types = _types(body)
        if "object" in types:
            return "map" if isinstance(body.get("additionalProperties"), Mapping) else "any"
        if "array" in types:
            return "list"
        if types or "oneOf" in body or "format" in body:
            return "scalar"
        return "any"

    @cached_property
    def properties(self) -> Mapping[str, Mapping[str, Any]]:
        props: Mapping[str, Mapping[str, Any]] = self.body.get("properties", {})
        return props

    def field(self, name: str) -> SchemaNode | None:
        """The node of a struct field, or None when the struct has no such field."""
        cache_ = self._fields
        if name in cache_:
            return cache_[name]
        prop = self.properties.get(name)
        node = None if prop is None else self.defs.resolve(prop)
        cache_[name] = node
        return node

    @cached_property
    def _fields(self) -> dict[str, SchemaNode | None]:
        return {}

    @cached_property
    def values(self) -> SchemaNode | None:
        """The node of a map's values."""
        extra = self.body.get("additionalProperties")
        return self.defs.resolve(extra) if isinstance(extra, Mapping) else None

    @cached_property
    def items(self) -> SchemaNode | None:
        """The node of a list's items."""
        item = self.body.get("items")
        return self.defs.resolve(item) if isinstance(item, Mapping) else None

    @cached_property
    def patch_strategies(self) -> frozenset[str]:
        """Strategic-merge strategies (``merge``, ``replace``, ``retainKeys``), possibly none."""
        raw = self.body.get("x-kubernetes-patch-strategy", "")
        return frozenset(s for s in str(raw).split(",") if s)

    @cached_property
    def patch_merge_key(self) -> str | None:
        key = self.body.get("x-kubernetes-patch-merge-key")
        return None if key is None else str(key)

    @cached_property
    def list_type(self) -> str:
        """Server-side apply list type: ``atomic`` (the default), ``set`` or ``map``."""
        return str(self.body.get("x-kubernetes-list-type", "atomic"))

    @cached_property
    def list_map_keys(self) -> tuple[str, ...]:
        return tuple(self.body.get("x-kubernetes-list-map-keys", ()))

    @cached_property
    def map_type(self) -> str:
        """Server-side apply map/struct type: ``granular`` (the default) or ``atomic``."""
        return str(self.body.get("x-kubernetes-map-type", "granular"))

    @cached_property
    def is_int_or_string(self) -> bool:
        return self.type_name == "io.k8s.apimachinery.pkg.util.intstr.IntOrString"


def _types(body: Mapping[str, Any]) -> tuple[str, ...]:
    raw = body.get("type")
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    return tuple(t for t in raw if t != "null")


@cache
def definitions(version: str = KUBERNETES_VERSION) -> Definitions:
    """The official definitions of ``version`` (read once per process)."""
    folder = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    text = (folder / f"v{version}.0-local" / "_definitions.json").read_text(encoding="utf-8")
    document: Mapping[str, Any] = json.loads(text)
    return Definitions(document["$defs"])
