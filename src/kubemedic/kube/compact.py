"""Compact cached bodies, so that a reflector's cache of a 150,000-pod cluster fits in memory.

Two steps, both lossless for what kubemedic reads:

1. **Pruning** (``compact_for(kind)``): keep only the fields the checks and the model read. A
   pod as the API serves it carries ``managedFields`` from several managers (the controller
   that created it, the kubelet's status updates, a CNI plugin's annotations, hand edits),
   service-account volumes and mounts, env, ports, image and container IDs, IPs: 6-12 KB of
   JSON, of which the checks read a fraction (``POD_FIELDS``: what ``kubemedic.checks`` and
   ``kubemedic.model`` read on a Pod, found by reading them and by tracing every key they read
   over the check tests and the bundled snapshots). ``metadata.managedFields`` goes on every
   kind except the workloads, where ``out-of-band-edit`` and ``pinned-node-name`` read it to
   tell who wrote a field; ``kubectl.kubernetes.io/last-applied-configuration`` (a whole copy
   of the manifest, read by nothing) goes everywhere.
2. **Packing** (``CompactCache``): a pruned pod is still ~30 small dicts and lists (a 5-key
   dict costs 184 bytes in CPython) and its strings: ~8.6 KB as decoded, far above the 1.5 KB
   budget (``bench/cache.py``). The cache therefore stores each body as one tuple of its leaf
   values behind a shared *template*: the body's structure (keys, nesting) plus the values
   that are enumerations in the API (``kind``, condition ``type`` and ``status``, ``phase``,
   ``operator``...) and booleans, the same for many objects. Pods of one workload, and of most
   workloads, share a handful of templates. Other strings (node names, namespaces, label
   values, images, timestamps) are interned, so every pod points at one copy. Bodies are
   rebuilt as plain dicts when read (``cache[key]``, ``bodies()``) by a builder compiled once
   per template (a few microseconds per pod).

Bodies handed out are fresh dicts each time, so a caller may change them without touching the
cache; what ``compact_for`` returns shares unpruned subtrees with its input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import repeat
from typing import Any, TypeAlias

__all__ = [
    "NODE_DROPPED_STATUS",
    "POD_FIELDS",
    "WORKLOAD_KINDS",
    "CompactCache",
    "Key",
    "Record",
    "compact_for",
    "compact_node",
    "compact_object",
    "compact_pod",
    "compact_workload",
    "key_of",
    "key_text",
]

Body = Mapping[str, Any]
Key: TypeAlias = tuple[str, str] | str
"""A cached object's key: ``(namespace, name)``, or ``name`` for cluster-scoped objects."""

WORKLOAD_KINDS = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob"}
    | {"ReplicationController"}
)
"""Kinds whose ``managedFields`` are kept: the out-of-band-edit and pinned-node-name checks
read who last wrote each field of a workload."""

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
NODE_DROPPED_STATUS = ("images", "volumesInUse", "volumesAttached")
"""Node status fields no check reads: ``images`` alone is often 10-50 KB per node."""


class _Except:
    """Prune spec: keep every key of a mapping but these."""

    __slots__ = ("keys",)

    def __init__(self, *keys: str) -> None:
        self.keys = frozenset(keys)


Spec: TypeAlias = "bool | _Except | dict[str, Spec]"
"""What to keep of a value: ``True`` all of it; a dict, only those keys (applied to every item
of a list); ``_Except``, all keys but some."""

_STATE: Spec = {
    "running": True,
    "waiting": True,
    "terminated": _Except("containerID"),
}
_CONTAINER: Spec = {
    "name": True,
    "image": True,
    "resources": True,
    "livenessProbe": True,
    "restartPolicy": True,
}
_CONTAINER_STATUS: Spec = {
    "name": True,
    "ready": True,
    "restartCount": True,
    "state": _STATE,
    "lastState": _STATE,
}
POD_ANNOTATIONS = ("kubernetes.io/config.mirror", "kubernetes.io/config.source")
"""The only pod annotations a check reads: the kubelet's marks of static and mirror pods
(``criticality.kubelet_protected``)."""

POD_FIELDS: dict[str, Spec] = {
    "apiVersion": True,
    "kind": True,
    "metadata": {
        "name": True,
        "namespace": True,
        "uid": True,
        "resourceVersion": True,
        "creationTimestamp": True,
        "deletionTimestamp": True,
        "labels": True,
        "annotations": dict.fromkeys(POD_ANNOTATIONS, True),
        "ownerReferences": {
            "apiVersion": True,
            "kind": True,
            "name": True,
            "uid": True,
            "controller": True,
        },
    },
    "spec": {
        "nodeName": True,
        "priority": True,
        "priorityClassName": True,
        "restartPolicy": True,
        "nodeSelector": True,
        "affinity": True,
        "tolerations": True,
        "resources": True,
        "overhead": True,
        "initContainers": _CONTAINER,
        "containers": _CONTAINER,
    },
    "status": {
        "phase": True,
        "reason": True,
        "message": True,
        "nominatedNodeName": True,
        "qosClass": True,
        "startTime": True,
        "conditions": {
            "type": True,
            "status": True,
            "reason": True,
            "message": True,
            "lastTransitionTime": True,
        },
        "initContainerStatuses": _CONTAINER_STATUS,
        "containerStatuses": _CONTAINER_STATUS,
    },
}
"""What is kept of a Pod. Read by the checks: labels (roles), ownerReferences (workloads),
the two kubelet annotations, containers' names, images (scrapers), resources, liveness probes
and init containers' restartPolicy (sidecars), nodeName, priority and its class, pod-level
resources and overhead; status phase/reason/message (evictions, storms), conditions
(``DisruptionTarget``, ``PodScheduled``; every ``lastTransitionTime`` dates the view) and
container statuses (restarts, OOM kills, their times). Kept because scheduling checks and the
recorder's deletions read them and they are small: tolerations, nodeSelector, affinity,
restartPolicy, qosClass, nominatedNodeName, ready. Dropped: managedFields, other annotations,
env, ports, mounts, volumes, readiness/startup probes, IPs, image and container IDs."""


def _prune(node: Any, spec: Spec) -> Any:
    if spec is True:
        return node
    if isinstance(node, list):
        return [_prune(item, spec) for item in node]
    if not isinstance(node, dict):
        return node  # a wrongly-typed value is kept, so checks judge it as they would in full
    if isinstance(spec, _Except):
        return {k: v for k, v in node.items() if k not in spec.keys}
    if not isinstance(spec, dict):
        return node
    out: dict[str, Any] = {}
    for key, sub in spec.items():  # the spec's order: pods share key orders, hence templates
        if key not in node:
            continue
        if sub is True:
            out[key] = node[key]
            continue
        value = _prune(node[key], sub)
        if not (isinstance(sub, dict) and isinstance(value, dict) and not value):
            out[key] = value  # a map filtered down to nothing is left out
    return out


def compact_pod(body: Body) -> dict[str, Any]:
    """A Pod with only ``POD_FIELDS``."""
    pruned: dict[str, Any] = _prune(body if isinstance(body, dict) else dict(body), POD_FIELDS)
    return pruned


def _without_bookkeeping(meta: Any, *, managed_fields: bool) -> Any:
    if not isinstance(meta, dict):
        return meta
    out = {k: v for k, v in meta.items() if managed_fields or k != "managedFields"}
    annotations = out.get("annotations")
    if isinstance(annotations, dict) and LAST_APPLIED in annotations:
        out["annotations"] = {k: v for k, v in annotations.items() if k != LAST_APPLIED}
    return out


def compact_object(body: Body) -> dict[str, Any]:
    """Any kind: without ``metadata.managedFields`` and the last-applied annotation."""
    out = dict(body)
    if "metadata" in out:
        out["metadata"] = _without_bookkeeping(out["metadata"], managed_fields=False)
    return out


def compact_workload(body: Body) -> dict[str, Any]:
    """Workloads keep their ``managedFields`` (who wrote which field); only the last-applied
    annotation goes."""
    out = dict(body)
    if "metadata" in out:
        out["metadata"] = _without_bookkeeping(out["metadata"], managed_fields=True)
    return out


def compact_node(body: Body) -> dict[str, Any]:
    """A Node without managedFields and the status lists no check reads
    (``NODE_DROPPED_STATUS``); nodes are few, the rest stays."""
    out = compact_object(body)
    status = out.get("status")
    if isinstance(status, dict):
        out["status"] = {k: v for k, v in status.items() if k not in NODE_DROPPED_STATUS}
    return out


def compact_for(kind: str) -> Callable[[Body], dict[str, Any]]:
    """The compactor for objects of ``kind`` (the ``kind`` field, e.g. ``Pod``)."""
    if kind == "Pod":
        return compact_pod
    if kind == "Node":
        return compact_node
    if kind in WORKLOAD_KINDS:
        return compact_workload
    return compact_object


# -- packing ------------------------------------------------------------------------------------

_LEAF = 0
_DICT = 1
_LIST = 2
_CONST = 3
Shape: TypeAlias = Any
"""``_LEAF`` (a value from the record), ``(_CONST, value)`` (the same value in every object of
the template), ``(_DICT, keys, child shapes)`` or ``(_LIST, child shapes)``: nested tuples."""
Record: TypeAlias = tuple[Any, ...]
"""``(template, resourceVersion, *leaf values)``: one cached object."""
_FIRST_VALUE = 2
_NOT_INTERNED = frozenset({"uid", "resourceVersion"})  # unique per object: interning only costs
_ENUMS = frozenset(
    {
        "apiVersion",
        "kind",
        "type",
        "status",
        "reason",
        "phase",
        "qosClass",
        "operator",
        "effect",
        "restartPolicy",
        "scheme",
        "protocol",
        "manager",
        "operation",
        "subresource",
        "fieldsType",
    }
)
"""Keys whose string values are enumerations in the API (a condition's ``type`` and
``status``, a pod's ``phase``, a toleration's ``operator``...): such values, and booleans and
nulls anywhere, are kept in the template rather than in each record (a few templates more,
eight bytes less per value per object)."""
_NONE, _TRUE, _FALSE = (_CONST, None), (_CONST, True), (_CONST, False)
_MAX_INTS = 65536
_MAX_CONSTS = 65536
_COMPILE_AT = 2
"""Templates shared by this many objects get a compiled builder (a few KB, ~5x faster than
walking the template); a one-of-a-kind body (a workload with its own managedFields) is
rebuilt by walking its template."""
_MAX_COMPILED_DEPTH = 64  # deeper (never seen in Kubernetes objects): rebuilt by a plain walk


class _Template:
    """A body structure shared by cached objects, with its compiled builder."""

    __slots__ = ("build", "shape", "uses")

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.uses = 0
        self.build: Callable[[Record], dict[str, Any]] | None = None


def key_of(body: Body) -> Key | None:
    """``(namespace, name)``, ``name`` for a cluster-scoped object, None without a name."""
    meta = body.get("metadata")
    if not isinstance(meta, Mapping):
        return None
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        return None
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        return (sys.intern(namespace), sys.intern(name))
    return sys.intern(name)


def key_text(key: Key) -> str:
    """``namespace/name`` or ``name``."""
    return key if isinstance(key, str) else f"{key[0]}/{key[1]}"


def _parse_key(text: str) -> Key:
    namespace, slash, name = text.partition("/")
    return (namespace, name) if slash else text


def _depth(shape: Shape) -> int:
    if shape == _LEAF or shape[0] == _CONST:
        return 0
    children = shape[2] if shape[0] == _DICT else shape[1]
    return 1 + max((_depth(child) for child in children), default=0)


def _source(shape: Shape, names: list[Any], position: list[int]) -> str:
    """Python expression source building ``shape`` from record ``r`` and a tuple ``N`` of the
    template's keys and constants.

    Only generated integers go into it (``r[12]``, ``N[3]``): keys and values, which come
    from the cluster, stay data."""
    if shape == _LEAF:
        index = position[0]
        position[0] += 1
        return f"r[{index}]"
    if shape[0] == _CONST:
        names.append(shape[1])
        return f"N[{len(names) - 1}]"
    if shape[0] == _LIST:
        return "[" + ",".join(_source(child, names, position) for child in shape[1]) + "]"
    parts = []
    for key, child in zip(shape[1], shape[2], strict=True):
        names.append(key)
        parts.append(f"N[{len(names) - 1}]:{_source(child, names, position)}")
    return "{" + ",".join(parts) + "}"


def _compile(shape: Shape) -> Callable[[Record], dict[str, Any]]:
    if _depth(shape) > _MAX_COMPILED_DEPTH:
        return lambda record: _walk_build(shape, iter(record[_FIRST_VALUE:]))
    names: list[Any] = []
    source = _source(shape, names, [_FIRST_VALUE])
    code = compile(f"lambda r, N=N: {source}", "<kubemedic compact template>", "eval")
    # The source is built from integers only (see _source), never from cluster data.
    scope = {"__builtins__": {}, "N": tuple(names)}
    build: Callable[[Record], dict[str, Any]] = eval(code, scope)  # noqa: S307
    return build


def _walk_build(shape: Shape, values: Iterator[Any]) -> Any:
    if shape == _LEAF:
        return next(values)
    if shape[0] == _CONST:
        return shape[1]
    if shape[0] == _LIST:
        return [_walk_build(child, values) for child in shape[1]]
    return {key: _walk_build(child, values) for key, child in zip(shape[1], shape[2], strict=True)}


class CompactCache(Mapping[str, dict[str, Any]]):
    """Bodies by ``namespace/name`` (or ``name``), stored packed (see the module docstring).

    Reading a key or iterating ``bodies()`` builds fresh dicts; ``put`` and ``remove`` keep the
    templates' use counts, so a template no object uses any more is dropped."""

    def __init__(self) -> None:
        self._records: dict[Key, Record] = {}
        self._templates: dict[Shape, _Template] = {}
        self._ints: dict[int, int] = {}
        self._consts: dict[str, Shape] = {}

    # -- Mapping ---------------------------------------------------------------------------

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._build(self._records[_parse_key(key)])

    def __iter__(self) -> Iterator[str]:
        return (key_text(key) for key in list(self._records))

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and _parse_key(key) in self._records

    # -- reading ---------------------------------------------------------------------------

    def bodies(self) -> Iterator[dict[str, Any]]:
        """Every cached body, built afresh (a snapshot of the keys at the first ``next``)."""
        build = self._build
        for record in list(self._records.values()):
            yield build(record)

    def resource_version(self, key: Key) -> str | None:
        """The cached object's ``metadata.resourceVersion``, or None."""
        record = self._records.get(key)
        return None if record is None else record[1]

    @property
    def template_count(self) -> int:
        return len(self._templates)

    # -- writing ---------------------------------------------------------------------------

    def pack(self, body: Body) -> tuple[Key, Record] | None:
        """``(key, record)`` of ``body`` (already compacted), counted as a use of its
        template; None for an object without a name. Hand the record to ``put`` or ``swap``,
        or give it back with ``release``."""
        key = key_of(body)
        if key is None:
            return None
        values: list[Any] = []
        shape = self._shape(body if type(body) is dict else dict(body), values, "")
        template = self._templates.get(shape)
        if template is None:
            template = self._templates[shape] = _Template(shape)
        template.uses += 1
        meta = body.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        return key, (template, rv if isinstance(rv, str) else None, *values)

    def release(self, record: Record) -> None:
        template: _Template = record[0]
        template.uses -= 1
        if template.uses <= 0:
            self._templates.pop(template.shape, None)

    def put(self, body: Body) -> Key | None:
        """Store ``body`` (already compacted) under its key, replacing what was there."""
        packed = self.pack(body)
        if packed is None:
            return None
        key, record = packed
        old = self._records.get(key)
        self._records[key] = record
        if old is not None:
            self.release(old)
        return key

    def remove(self, key: Key) -> dict[str, Any] | None:
        """Drop ``key``; returns the body that was cached, or None."""
        record = self._records.pop(key, None)
        if record is None:
            return None
        body = self._build(record)
        self.release(record)
        return body

    def missing_from(self, keys: Iterable[Key]) -> list[dict[str, Any]]:
        """Cached bodies whose keys are not in ``keys`` (a relist's diff: deleted meanwhile)."""
        present = keys if isinstance(keys, set | frozenset | dict) else set(keys)
        return [self._build(rec) for key, rec in self._records.items() if key not in present]

    def swap(self, records: dict[Key, Record]) -> None:
        """Replace everything by ``records`` (made by ``pack``)."""
        old, self._records = self._records, records
        for record in old.values():
            self.release(record)

    def clear(self) -> None:
        self.swap({})

    # -- internals -------------------------------------------------------------------------

    def _build(self, record: Record) -> dict[str, Any]:
        template: _Template = record[0]
        build = template.build
        if build is None:
            if template.uses < _COMPILE_AT:  # one of a kind: a compiled builder costs more
                built: dict[str, Any] = _walk_build(template.shape, iter(record[_FIRST_VALUE:]))
                return built
            build = template.build = _compile(template.shape)
        return build(record)

    def _shape(self, node: Any, values: list[Any], key: str) -> Shape:
        """The shape of ``node`` (a dict or list), its leaves appended to ``values``.

        The hot path of every cached change: leaves (most nodes) are handled in the loop, not
        by a call each."""
        append = values.append
        intern = sys.intern
        shapes: list[Shape] = []
        add = shapes.append
        is_dict = type(node) is dict
        for name, value in node.items() if is_dict else zip(repeat(key), node):
            kind = type(value)
            if kind is str:
                if name in _ENUMS:
                    add(self._const(value))
                else:
                    append(value if name in _NOT_INTERNED else intern(value))
                    add(_LEAF)
            elif kind is dict or kind is list:
                add(self._shape(value, values, name))
            elif kind is int:
                append(self._int(value))
                add(_LEAF)
            elif kind is bool:
                add(_TRUE if value else _FALSE)
            elif value is None:
                add(_NONE)
            elif isinstance(value, Mapping):  # not a plain dict: stored as one
                add(self._shape(dict(value), values, name))
            elif isinstance(value, list):
                add(self._shape(list(value), values, name))
            else:
                append(value)
                add(_LEAF)
        if is_dict:
            return (_DICT, tuple(node), tuple(shapes))
        return (_LIST, tuple(shapes))

    def _const(self, value: str) -> Shape:
        consts = self._consts
        shape = consts.get(value)
        if shape is None:
            shape = (_CONST, sys.intern(value))
            if len(consts) < _MAX_CONSTS:
                consts[value] = shape
        return shape

    def _int(self, value: int) -> int:
        ints = self._ints
        shared = ints.get(value)
        if shared is None:
            if len(ints) < _MAX_INTS:
                ints[value] = value
            shared = value
        return shared
