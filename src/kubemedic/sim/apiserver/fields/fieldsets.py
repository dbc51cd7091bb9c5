"""Structured merge over the official schema: shapes, field sets and comparisons.

This is the part of ``sigs.k8s.io/structured-merge-diff`` (v4.4, the version Kubernetes 1.32
vendors) that ownership tracking (:mod:`kubemedic.sim.apiserver.fields.fieldmanaging`) and
server-side apply (:mod:`kubemedic.sim.apiserver.fields.applying`) stand on. Everything is decided
by the *shape* of a value under its schema node (:func:`shape_of`):

* scalars, atomic lists (the default ``x-kubernetes-list-type``) and atomic maps/structs
  (``x-kubernetes-map-type: atomic``, e.g. ``LabelSelector``) are leaves: owned, compared and
  replaced as one value;
* structs and granular maps are walked key by key (``f:`` elements);
* ``set`` lists are walked by value (``v:``), ``map`` lists by their ``x-kubernetes-list-map-keys``
  (``k:``); a missing key takes the default SMD knows from the Go types (``protocol: TCP`` of
  container and service ports) and is an error otherwise (:class:`TypedError`);
* values without a schema (custom resources, unknown fields) are *deduced*: objects are walked,
  lists are atomic.

Two walks give two different sets, and the API server uses both. :func:`compare` says what a
write added, modified or removed; a container present on one side only is itself added or
removed (the ``"."`` markers of ``Update`` entries), and containers empty or null on both sides
are leaves. :func:`to_fieldset` says what an applied configuration claims: leaves, list items and
map keys, never the named struct fields leading to them (hence no ``"."`` on ``f:spec`` in
``Apply`` entries). A key repeated in a list (tolerated in live objects since 1.27) makes the
item one opaque leaf. Equal subtrees (by Python equality, which takes ``true`` for ``1``: no
typed field holds both) are skipped without a walk, and so are not checked against the schema
again: stored objects were checked when they were written.

A create is compared with the kind's Go zero value (:func:`typed_zero`), where ``spec``,
``spec.template`` and the like already exist. Paths print as SMD prints them (:func:`smd_path`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias

from kubemedic.errors import KubemedicError
from kubemedic.model.fieldpaths import ElementKind, FieldPath, PathElement
from kubemedic.sim.machinery import naming
from kubemedic.sim.machinery.definitions import KEY_DEFAULTS, SchemaNode

Path: TypeAlias = tuple[PathElement, ...]
ShapeKind = Literal["leaf", "map", "set", "keyed"]


_NODE_INFO: Final = (
    *("machineID", "systemUUID", "bootID", "kernelVersion", "osImage", "architecture"),
    *("containerRuntimeVersion", "kubeletVersion", "kubeProxyVersion", "operatingSystem"),
)
_TEMPLATE: Final = {"metadata": {"creationTimestamp": None}, "spec": {"containers": None}}
_WORKLOAD: Final = {"selector": None, "template": _TEMPLATE}
_COUNTS: Final = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
_SCHEDULED: Final = ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled")
#: The Go zero value of each kind, serialised (beyond ``metadata.creationTimestamp: null``):
#: non-pointer structs and fields without ``omitempty`` exist before anyone sets them.
_ZERO: Final[Mapping[tuple[str, str], Mapping[str, Any]]] = {
    ("", "Pod"): {"spec": {"containers": None}, "status": {}},
    ("", "Node"): {
        "spec": {},
        "status": {
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 0}},
            "nodeInfo": dict.fromkeys(_NODE_INFO, ""),
        },
    },
    ("", "Namespace"): {"spec": {}, "status": {}},
    ("", "Service"): {"spec": {}, "status": {"loadBalancer": {}}},
    ("", "Event"): {
        **{key: {} for key in ("involvedObject", "source")},
        **dict.fromkeys(("firstTimestamp", "lastTimestamp", "eventTime")),
        **dict.fromkeys(("reportingComponent", "reportingInstance"), ""),
    },
    ("events.k8s.io", "Event"): {
        **{key: {} for key in ("regarding", "deprecatedSource")},
        **dict.fromkeys(("eventTime", "deprecatedFirstTimestamp", "deprecatedLastTimestamp")),
    },
    ("apps", "Deployment"): {"spec": {**_WORKLOAD, "strategy": {}}, "status": {}},
    ("apps", "ReplicaSet"): {"spec": _WORKLOAD, "status": {"replicas": 0}},
    ("apps", "StatefulSet"): {
        "spec": {**_WORKLOAD, "serviceName": "", "updateStrategy": {}},
        "status": {"replicas": 0},
    },
    ("apps", "DaemonSet"): {
        "spec": {**_WORKLOAD, "updateStrategy": {}},
        "status": dict.fromkeys((*_SCHEDULED, "numberReady"), 0),
    },
    ("policy", "PodDisruptionBudget"): {"spec": {}, "status": dict.fromkeys(_COUNTS, 0)},
    ("coordination.k8s.io", "Lease"): {"spec": {}},
}


def typed_zero(*, group: str, kind: str, schema: SchemaNode | None) -> dict[str, Any]:
    """The Go zero value of a kind as JSON (what the API server compares a create with, and
    applies a first configuration to); ``{}`` for schemaless (unstructured) kinds."""
    if schema is None:
        return {}
    zero = copy.deepcopy(dict(_ZERO.get((group, kind), {})))
    return {"metadata": {"creationTimestamp": None}, **zero}


class _Absent:
    """A value missing from its parent, as opposed to an explicit ``null``."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
_FIELDS: dict[str, PathElement] = {}


def field_element(name: str) -> PathElement:
    element = _FIELDS.get(name)
    if element is None:
        element = _FIELDS[name] = PathElement.field(name)
    return element


@dataclass(frozen=True, slots=True)
class Shape:
    """How a value is walked: as a leaf, a map (struct or granular map) or a keyed/set list."""

    kind: ShapeKind
    node: SchemaNode | None = None  # the map's node, or the list's item node
    keys: tuple[str, ...] = ()

    def child(self, name: str) -> tuple[SchemaNode | None, bool]:
        """The node of a map entry and whether it is a named struct field."""
        node = self.node
        if node is None:
            return None, False
        if node.kind == "struct":
            named = node.field(name)
            if named is not None:
                return named, True
        return node.values, False


LEAF: Final = Shape("leaf")
_LEAF: Final = LEAF
_UNTYPED_MAP: Final = Shape("map")
#: The container shape of each schema node met (the official definitions' nodes live as long as
#: the process, and there are a few thousand of them).
_SHAPES: dict[SchemaNode, Shape] = {}


def shape_of(node: SchemaNode | None, value: Any) -> Shape:
    """The shape of ``value`` under ``node``; ``null`` takes its container's shape (empty)."""
    if node is None:
        return _UNTYPED_MAP if value is None or isinstance(value, dict) else _LEAF
    shape = _SHAPES.get(node)
    if shape is None:
        shape = _SHAPES[node] = _container_shape(node)
    kind = shape.kind
    if kind == "map":
        return shape if value is None or isinstance(value, dict) else _LEAF
    if kind == "leaf":
        return _LEAF
    return shape if value is None or isinstance(value, list) else _LEAF


def _container_shape(node: SchemaNode) -> Shape:
    """What a node's values are walked as when they have the node's container type."""
    kind = node.kind
    if kind == "any":
        return _UNTYPED_MAP
    if kind in ("struct", "map"):
        return Shape("map", node) if node.map_type != "atomic" else _LEAF
    if kind == "list":
        if node.list_type == "map":
            return Shape("keyed", node.items, node.list_map_keys)
        if node.list_type == "set":
            return Shape("set", node.items)
    return _LEAF


class TypedError(KubemedicError, ValueError):
    """A value does not fit its schema (SMD's ``ValidationError``), e.g. an item without its key."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = FieldPath(path)
        self.message = message
        super().__init__(f"{smd_path(path)}: {message}" if path else message)


def item_element(shape: Shape, item: Any, *, index: int, path: Path) -> PathElement:
    """The ``k:``/``v:`` element naming a list item (``listItemToPathElement``)."""
    if shape.kind == "set":
        if isinstance(item, dict):
            reason = "associative list without keys has an element that's a map type"
        elif isinstance(item, list):
            reason = "not supported: associative list with lists as elements"
        elif item is None:
            reason = "associative list without keys has an element that's an explicit null"
        else:
            return PathElement.value(item)
    elif item is None:
        reason = "associative list with keys may not have a null element"
    elif not isinstance(item, dict):
        reason = "associative list with keys may not have non-map elements"
    else:
        pairs: list[tuple[str, object]] = []
        type_name = str(shape.node.type_name if shape.node is not None else None)
        for key in shape.keys:
            if key in item:
                pairs.append((key, item[key]))
            elif (type_name, key) in KEY_DEFAULTS:
                pairs.append((key, KEY_DEFAULTS[(type_name, key)]))
            else:
                reason = (
                    f"associative list with keys has an element that omits key field "
                    f"{naming.go_quote(key)} (and doesn't have default value)"
                )
                break
        else:
            return PathElement.key(pairs)
    raise TypedError(path, f"element {index}: {reason}")


def field_path(elements: Path) -> FieldPath:
    """A :class:`FieldPath` of elements known to be valid, without checking them again (the
    walks here produce thousands per write)."""
    path = object.__new__(FieldPath)
    object.__setattr__(path, "elements", elements)
    return path


def item_elements(shape: Shape, items: list[Any], path: Path) -> list[PathElement]:
    return [item_element(shape, item, index=i, path=path) for i, item in enumerate(items)]


# --- field sets ------------------------------------------------------------------------------


def to_fieldset(value: Any, node: SchemaNode | None) -> set[FieldPath]:
    """``TypedValue.ToFieldSet``: what an applied configuration claims (see module docs)."""
    out: set[Path] = set()
    _collect(value, node, (), out)
    out.discard(())
    return {field_path(path) for path in out}


def _collect(value: Any, node: SchemaNode | None, path: Path, out: set[Path]) -> None:
    shape = shape_of(node, value)
    if shape.kind == "leaf":
        out.add(path)
    elif shape.kind == "map":
        for name, item in (value or {}).items():
            child, named = shape.child(name)
            child_path = (*path, field_element(name))
            _collect(item, child, child_path, out)
            if not named:
                out.add(child_path)
    elif value:
        elements = item_elements(shape, value, path)
        seen: set[PathElement] = set()
        duplicates: set[PathElement] = set()
        for pe in elements:
            (duplicates if pe in seen else seen).add(pe)
        for pe, item in zip(elements, value, strict=True):
            if pe not in duplicates:
                _collect(item, shape.node, (*path, pe), out)
            out.add((*path, pe))


def ensure_named(paths: Iterable[FieldPath], node: SchemaNode | None) -> set[FieldPath]:
    """``Set.EnsureNamedFieldsAreMembers``: add every named struct field leading to a member."""
    out = set(paths)
    steps: dict[Path, tuple[SchemaNode | None, bool]] = {}
    for path in list(out):
        current = node
        for depth in range(1, len(path)):
            prefix = path.elements[:depth]
            step = steps.get(prefix)
            if step is None:
                step = steps[prefix] = _step(current, prefix[-1])
            current, named = step
            if named:
                out.add(field_path(prefix))
    return out


def _step(node: SchemaNode | None, element: PathElement) -> tuple[SchemaNode | None, bool]:
    if node is None:
        return None, False
    if element.kind is ElementKind.FIELD and node.kind in ("struct", "map"):
        return Shape("map", node).child(element.field_name)
    if element.kind is ElementKind.KEY and node.kind == "list":
        return node.items, False
    return None, False


def recursive_difference(
    paths: Iterable[FieldPath], prefixes: Iterable[FieldPath]
) -> set[FieldPath]:
    """The paths that neither are nor descend from one of ``prefixes``."""
    cut = {prefix.elements for prefix in prefixes if prefix}
    if not cut:
        return set(paths)
    heads, depth = {c[0].data for c in cut}, max(map(len, cut))  # .data: a cheap pre-filter
    return {
        p
        for p in paths
        if not (
            p.elements
            and p.elements[0].data in heads
            and any(p.elements[:i] in cut for i in range(1, min(len(p), depth) + 1))
        )
    }


# --- comparison ------------------------------------------------------------------------------


@dataclass
class Comparison:
    """``typed.Comparison``: paths added, modified and removed between two objects."""

    added: set[FieldPath] = field(default_factory=set)
    modified: set[FieldPath] = field(default_factory=set)
    removed: set[FieldPath] = field(default_factory=set)

    def excluding(self, prefixes: Iterable[FieldPath]) -> Comparison:
        cut = list(prefixes)
        if not cut:
            return self
        return Comparison(*(recursive_difference(s, cut) for s in self.sets()))

    def sets(self) -> tuple[set[FieldPath], set[FieldPath], set[FieldPath]]:
        return self.added, self.modified, self.removed


def compare(lhs: Any, rhs: Any, node: SchemaNode | None) -> Comparison:
    """``TypedValue.Compare``; either side may be :data:`ABSENT` (a creation or a deletion)."""
    raw: tuple[set[Path], set[Path], set[Path]] = (set(), set(), set())
    _compare(lhs, rhs, node, (), raw)
    return Comparison(*({field_path(p) for p in paths if p} for paths in raw))


def _compare(
    lhs: Any, rhs: Any, node: SchemaNode | None, path: Path, c: tuple[set[Path], ...]
) -> None:
    if lhs is not ABSENT and rhs is not ABSENT and (lhs is rhs or lhs == rhs):
        return
    left = None if lhs is ABSENT else shape_of(node, lhs)
    right = None if rhs is ABSENT else shape_of(node, rhs)
    shape = right or left
    if shape is None:
        return
    if left is not None and right is not None and left.kind != right.kind:
        shape = _LEAF  # a deduced value changed its kind: one modified leaf
    added, modified, removed = c
    if shape.kind == "leaf" or (_empty(lhs) and _empty(rhs)):  # empty/null both: a leaf
        if lhs is ABSENT:
            added.add(path)
        elif rhs is ABSENT:
            removed.add(path)
        elif not json_equal(lhs, rhs):
            modified.add(path)
        return
    if shape.kind == "map":
        lmap = lhs if isinstance(lhs, dict) else {}
        rmap = rhs if isinstance(rhs, dict) else {}
        for name in dict.fromkeys([*lmap, *rmap]):
            child, _ = shape.child(name)
            lchild, rchild = lmap.get(name, ABSENT), rmap.get(name, ABSENT)
            _compare(lchild, rchild, child, (*path, field_element(name)), c)
    else:
        _compare_items(shape, lhs, rhs, path, c)
    if lhs is ABSENT:
        added.add(path)
    elif rhs is ABSENT:
        removed.add(path)


def _empty(value: Any) -> bool:
    return value is ABSENT or not value


def _index(shape: Shape, items: Any, path: Path) -> dict[PathElement, list[Any]]:
    index: dict[PathElement, list[Any]] = {}
    if isinstance(items, list):
        for pe, item in zip(item_elements(shape, items, path), items, strict=True):
            index.setdefault(pe, []).append(item)
    return index


def _compare_items(shape: Shape, lhs: Any, rhs: Any, path: Path, c: tuple[set[Path], ...]) -> None:
    left, right = _index(shape, lhs, path), _index(shape, rhs, path)
    for pe in dict.fromkeys([*left, *right]):
        litems, ritems = left.get(pe, []), right.get(pe, [])
        item_path = (*path, pe)
        if len(litems) <= 1 and len(ritems) <= 1:
            lchild = litems[0] if litems else ABSENT
            _compare(lchild, ritems[0] if ritems else ABSENT, shape.node, item_path, c)
        elif len(litems) >= 2 and len(ritems) >= 2:
            if not json_equal(litems, ritems):
                c[1].add(item_path)
        elif len(litems) >= 2:  # duplicates resolved: the items are new, the marker goes
            if ritems:
                _compare(ABSENT, ritems[0], shape.node, item_path, c)
            c[2].add(item_path)
        else:  # new duplicates: the old item goes, the opaque marker comes
            if litems:
                _compare(litems[0], ABSENT, shape.node, item_path, c)
            c[0].add(item_path)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality as SMD's ``value.Equals``: ``1 == 1.0`` but ``true != 1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


# --- text as the API server writes it --------------------------------------------------------


def _go_value(value: object) -> str:
    """SMD's ``value.ToString``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return naming.go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={_go_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def smd_path(path: Iterable[PathElement]) -> str:
    """``fieldpath.Path.String``: ``.spec.containers[name="app"].ports[containerPort=80,...]``."""
    parts: list[str] = []
    for element in path:
        if element.kind is ElementKind.FIELD:
            parts.append("." + element.field_name)
        elif element.kind is ElementKind.KEY:
            keys = ",".join(f"{n}={_go_value(v)}" for n, v in element.key_fields)
            parts.append(f"[{keys}]")
        elif element.kind is ElementKind.VALUE:
            parts.append(f"[={_go_value(element.set_value)}]")
        else:
            parts.append(f"[{element.list_index}]")
    return "".join(parts)
