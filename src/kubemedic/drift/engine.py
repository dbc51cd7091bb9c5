"""``diff``: one desired object against its live counterpart, both ways, attributed.

The desired object (from Git) and the live object are normalised (:mod:`.normalising`) and
walked together (:mod:`.comparing`). Three kinds of drift, each at a field path in the project's
notation (``spec.template.spec.containers[name=app].image``):

* ``changed``: both sides have the field and the values differ;
* ``removed``: Git has the field, the live object does not;
* ``live-only``: the live object has the field, Git does not.

Every drift is attributed through ``metadata.managedFields``: the managers that own the path (or
a field below it, or an atomic field above it), with operation, time and subresource. A
``live-only`` field is drift only when a person wrote it or the GitOps tool applied it and Git
no longer has it (:class:`~kubemedic.drift.rules.ManagerClasses`); a ``changed`` field whose
desired value is only a server default (Git does not set it) follows the same rule. Fields that
controllers, webhooks or nobody wrote are the cluster's business, not drift. Ignore rules
(:class:`~kubemedic.drift.rules.IgnoreRule`) then drop what the operator said to ignore.

The revert patch (:attr:`ObjectDrift.patch`) is an RFC 6902 JSON patch against the live object:
a ``test`` of ``metadata.resourceVersion`` first (so it fails instead of reverting a newer
object), then ``replace`` for changed fields, ``add`` for removed ones (list items appended with
``-``), and ``remove`` for live-only ones, last and in descending order of position, so that
earlier operations never shift the positions of later ones.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kubemedic.drift.comparing import Location, element_of, field_path_of, is_empty, walk
from kubemedic.drift.jqpaths import locations as jq_locations
from kubemedic.drift.normalising import LAST_APPLIED, group_version, normalise
from kubemedic.drift.rules import DriftRules, IgnoreRule, ManagerClass, ManagerClasses
from kubemedic.errors import InputError
from kubemedic.model import schemas
from kubemedic.model.fieldpaths import FieldPath, PathElement
from kubemedic.model.managedfields import ManagedFieldsError, decode_fieldsv1, leaf_paths

__all__ = ["DriftError", "FieldDrift", "LiveLookup", "ObjectDrift", "Owner", "diff", "diff_objects"]

_RULES = PathElement.field("rules")


class DriftError(InputError, ValueError):
    """A desired object that cannot be compared (no apiVersion, kind or name), or a bad rule."""


@dataclass(frozen=True, slots=True)
class Owner:
    """One ``managedFields`` entry that owns a drifted field."""

    manager: str
    operation: str
    time: str | None
    subresource: str | None
    manager_class: ManagerClass

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "time": self.time,
            "class": self.manager_class.value,
        }
        if self.subresource:
            out["subresource"] = self.subresource
        return out


@dataclass(frozen=True, slots=True)
class FieldDrift:
    """One drifted field; ``owners`` latest first (empty when nobody owns it)."""

    path: FieldPath
    kind: str
    desired: Any
    live: Any
    owners: tuple[Owner, ...]
    in_git: bool
    location: Location

    @property
    def owner(self) -> Owner | None:
        """Who to name: the latest person, else the latest owner."""
        people = [o for o in self.owners if o.manager_class is ManagerClass.IMPERATIVE]
        ranked = people or list(self.owners)
        return ranked[0] if ranked else None

    @property
    def pointer(self) -> str:
        return pointer(self.location)


@dataclass(frozen=True, slots=True)
class ObjectDrift:
    """The drift of one object; ``missing`` when Git has it and the cluster does not."""

    api_version: str
    kind: str
    namespace: str | None
    name: str
    resource_version: str | None
    drifts: tuple[FieldDrift, ...]
    missing: bool = False

    @property
    def drifted(self) -> bool:
        return self.missing or bool(self.drifts)

    @property
    def patch(self) -> list[dict[str, Any]]:
        """The RFC 6902 patch that reverts the live object to Git (empty when nothing to do)."""
        if self.missing or not self.drifts:
            return []
        ops: list[dict[str, Any]] = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": self.resource_version}
        ]
        for drift in self.drifts:
            if drift.kind == "changed":
                ops.append({"op": "replace", "path": drift.pointer, "value": drift.desired})
        for drift in self.drifts:
            if drift.kind == "removed":
                ops.append({"op": "add", "path": drift.pointer, "value": drift.desired})
        removals = [d for d in self.drifts if d.kind == "live-only"]
        for drift in sorted(removals, key=lambda d: _position_order(d.location), reverse=True):
            ops.append({"op": "remove", "path": drift.pointer})
        return ops


def pointer(location: Location) -> str:
    """RFC 6901 spelling of a location (``~`` and ``/`` escaped)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in location)


def _position_order(location: Location) -> tuple[tuple[int, int | str], ...]:
    return tuple((0, s) if isinstance(s, int) else (1, s) for s in location)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


@dataclass(frozen=True, slots=True)
class _Entry:
    owner: Owner
    members: frozenset[FieldPath]
    leaves: frozenset[FieldPath]


def _entries(live: dict[str, Any], rules: DriftRules) -> list[_Entry]:
    out: list[_Entry] = []
    for raw in _meta(live).get("managedFields") or ():
        if not isinstance(raw, dict):
            continue
        try:
            members = decode_fieldsv1(raw.get("fieldsV1") or {})
        except ManagedFieldsError:
            continue
        manager = str(raw.get("manager") or "")
        owner = Owner(
            manager=manager,
            operation=str(raw.get("operation") or ""),
            time=raw.get("time") if isinstance(raw.get("time"), str) else None,
            subresource=raw.get("subresource") or None,
            manager_class=rules.managers.classify(manager),
        )
        out.append(_Entry(owner, members, frozenset(leaf_paths(members))))
    out.sort(key=lambda e: e.owner.time or "", reverse=True)
    return out


def _owners(entries: list[_Entry], path: FieldPath) -> tuple[Owner, ...]:
    """Entries owning ``path`` or a field below it; else an atomic (leaf) field above it."""
    direct = tuple(e.owner for e in entries if any(m.has_prefix(path) for m in e.members))
    if direct:
        return direct
    return tuple(e.owner for e in entries if any(path.has_prefix(m) for m in e.leaves))


#: The owner of a field that only the last-applied annotation vouches for (no managedFields).
_LAST_APPLIED_OWNER = Owner(
    manager="last-applied-configuration",
    operation="Apply",
    time=None,
    subresource=None,
    manager_class=ManagerClass.GITOPS,
)


def _last_applied_paths(
    live: dict[str, Any], gvk: tuple[str, str, str], node: schemas.SchemaNode | None, keep: bool
) -> set[FieldPath]:
    """Leaf paths of ``kubectl.kubernetes.io/last-applied-configuration``, for live objects
    without managedFields: a field applied before and absent from Git now was dropped from Git
    (the three-way diff of ``kubectl apply`` and Argo CD reads it the same way)."""
    meta = live.get("metadata")
    if not isinstance(meta, dict) or meta.get("managedFields"):
        return set()
    annotations = meta.get("annotations")
    text = annotations.get(LAST_APPLIED) if isinstance(annotations, dict) else None
    if not isinstance(text, str):
        return set()
    try:
        applied = json.loads(text)
    except ValueError:
        return set()
    if not isinstance(applied, dict):
        return set()
    paths: set[FieldPath] = set()
    cleaned = normalise(applied, gvk=gvk, desired=False, ignore_aggregated_roles=keep)
    _paths(cleaned, node, FieldPath(), paths, skip_empty=True)
    return set(leaf_paths(paths))


def _counts(owners: tuple[Owner, ...]) -> bool:
    return any(
        o.manager_class is ManagerClass.IMPERATIVE
        or (o.manager_class is ManagerClass.GITOPS and o.operation == "Apply")
        for o in owners
    )


def _paths(
    value: Any,
    node: schemas.SchemaNode | None,
    path: FieldPath,
    out: set[FieldPath],
    *,
    skip_empty: bool = False,
) -> None:
    """Every path of ``value`` (``skip_empty``: not the empty maps and lists, nor null)."""
    if skip_empty and is_empty(value):
        return
    out.add(path)
    if isinstance(value, dict):
        for key, child in value.items():
            child_path = path.child(PathElement.field(key))
            _paths(child, _field_node(node, key), child_path, out, skip_empty=skip_empty)
    elif isinstance(value, list):
        item_node = node.items if node is not None and node.kind == "list" else None
        for position, item in enumerate(value):
            child_path = path.child(element_of(node, item, position))
            _paths(item, item_node, child_path, out, skip_empty=skip_empty)


def _ignored(
    rule_set: list[IgnoreRule], sides: tuple[dict[str, Any], ...], node: schemas.SchemaNode | None
) -> set[FieldPath]:
    out: set[FieldPath] = set()
    for rule in rule_set:
        locations: list[Location] = []
        for side in sides:
            for text in rule.json_pointers:
                locations.append(_parse_pointer(text, side))
            for expression in rule.jq_path_expressions:
                locations.extend(jq_locations(expression, side))
            for location in locations:
                found = field_path_of(side, node, location)
                if found is not None:
                    out.add(found)
            locations.clear()
    return out


def _parse_pointer(text: str, obj: Any) -> Location:
    if text and not text.startswith("/"):
        raise DriftError(f"JSON pointer {text!r} must start with '/'")
    steps: list[str | int] = []
    value = obj
    for raw in text.split("/")[1:] if text else ():
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and token.isdigit():
            steps.append(int(token))
            value = value[int(token)] if int(token) < len(value) else None
        else:
            steps.append(token)
            value = value.get(token) if isinstance(value, dict) else None
    return tuple(steps)


#: Groups whose kinds moved: a retired ``extensions/v1beta1`` Deployment is an ``apps/v1`` one.
_MOVED = {"extensions": "apps"}


def _schema(
    defs: schemas.Definitions, group: str, version: str, kind: str
) -> tuple[str, str, schemas.SchemaNode | None]:
    """The group, version and schema to read a kind as: as written, else its ``v1``."""
    node = defs.for_kind(group, version, kind)
    if node is not None:
        return group, version, node
    for candidate in (group, _MOVED.get(group, group)):
        node = defs.for_kind(candidate, "v1", kind)
        if node is not None:
            return candidate, "v1", node
    return group, version, None


def _restrict(
    value: Any,
    node: schemas.SchemaNode | None,
    path: FieldPath,
    members: frozenset[FieldPath],
    routes: frozenset[FieldPath],
) -> Any:
    """``value`` cut down to the fields of a field set (a member's whole subtree is kept)."""
    if path in members and not any(p != path and p.has_prefix(path) for p in routes):
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, child in value.items():
            child_path = path.child(PathElement.field(key))
            if child_path in routes:
                out[key] = _restrict(child, _field_node(node, key), child_path, members, routes)
        return out
    if isinstance(value, list):
        item_node = node.items if node is not None and node.kind == "list" else None
        kept = []
        for position, item in enumerate(value):
            child_path = path.child(element_of(node, item, position))
            if child_path in routes:
                cut = _restrict(item, item_node, child_path, members, routes)
                if isinstance(cut, dict) and isinstance(item, dict) and node is not None:
                    # The key fields name the item: owning it owns them.
                    cut.update({k: item[k] for k in node.list_map_keys if k in item})
                kept.append(cut)
        return kept
    return value


def _has_apply(dry_run: dict[str, Any]) -> bool:
    meta = dry_run.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    return any(isinstance(e, dict) and e.get("operation") == "Apply" for e in entries or ())


def _field_node(node: schemas.SchemaNode | None, key: str) -> schemas.SchemaNode | None:
    if node is not None and node.kind == "struct":
        return node.field(key)
    if node is not None and node.kind == "map":
        return node.values
    return None


def applied_fields(
    dry_run: dict[str, Any],
    *,
    applier: str | None,
    node: schemas.SchemaNode | None,
    managers: ManagerClasses,
) -> dict[str, Any]:
    """A server-side apply dry run cut down to what the applier owns in it.

    The dry run is what the API server would store; a mutating webhook's additions and the
    server's defaults are in it but not in the applier's field set, so they are not Git's.
    ``applier`` defaults to the GitOps tool's ``Apply`` entry (a webhook may apply too), else
    the newest ``Apply`` entry.
    """
    meta = _meta(dry_run)
    entries = [e for e in meta.get("managedFields") or () if isinstance(e, dict)]
    applies = [e for e in entries if e.get("operation") == "Apply"]
    applies.sort(key=lambda e: str(e.get("time") or ""), reverse=True)
    tools = [e for e in applies if managers.classify(str(e.get("manager"))) is ManagerClass.GITOPS]
    chosen = tools or applies
    name = applier or (str(chosen[0].get("manager")) if chosen else None)
    members: set[FieldPath] = set()
    for entry in entries:
        if entry.get("manager") == name and entry.get("operation") == "Apply":
            members |= decode_fieldsv1(entry.get("fieldsV1") or {})
    routes = frozenset(
        FieldPath(m.elements[:depth]) for m in members for depth in range(len(m) + 1)
    )
    cut = _restrict(dry_run, node, FieldPath(), frozenset(members), routes)
    out: dict[str, Any] = cut if isinstance(cut, dict) else {}
    for key in ("apiVersion", "kind"):
        out[key] = dry_run.get(key)
    out.setdefault("metadata", {})["name"] = meta.get("name")
    return out


def diff(
    desired: dict[str, Any],
    live: dict[str, Any],
    *,
    rules: DriftRules | None = None,
    definitions: schemas.Definitions | None = None,
    dry_run: dict[str, Any] | None = None,
    applier: str | None = None,
) -> ObjectDrift:
    """Compare ``desired`` (from Git) with ``live`` (from the cluster) both ways.

    ``definitions`` defaults to the official 1.32 definitions (:func:`schemas.definitions`).
    ``dry_run``, when given, is the API server's answer to a server-side apply dry run of
    ``desired`` (``kubectl apply --server-side --dry-run=server``, Argo CD's server-side diff):
    the desired side is then what ``applier`` (default: the GitOps tool's ``Apply`` entry) owns
    in that answer (:func:`applied_fields`) instead of the manifest with emulated defaults. A
    dry run without an ``Apply`` entry says nothing about who would own what: the manifest is
    compared then.
    """
    rules = rules or DriftRules()
    api_version = str(desired.get("apiVersion") or live.get("apiVersion") or "")
    kind = str(desired.get("kind") or "")
    meta, live_meta = _meta(desired), _meta(live)
    name = str(meta.get("name") or "")
    if not api_version or not kind or not name:
        raise DriftError("a desired object needs apiVersion, kind and metadata.name")
    namespace = live_meta.get("namespace") or meta.get("namespace") or None
    defs = definitions if definitions is not None else schemas.definitions()
    group, version = group_version(api_version)
    group, version, node = _schema(defs, group, version, kind)
    keep_rules = rules.ignore_aggregated_roles
    gvk = (group, version, kind)
    if dry_run is not None and _has_apply(dry_run):
        applied = applied_fields(dry_run, applier=applier, node=node, managers=rules.managers)
        want = normalise(applied, gvk=gvk, desired=False, ignore_aggregated_roles=keep_rules)
        raw: dict[str, Any] | None = want
    else:
        want = normalise(desired, gvk=gvk, desired=True, ignore_aggregated_roles=keep_rules)
        raw = None  # the manifest without defaults: read only when something differs
    have = normalise(live, gvk=gvk, desired=False, ignore_aggregated_roles=keep_rules)
    differences = list(walk(want, have, node, FieldPath(), ()))
    if not differences:  # most objects: no ownership to decode, nothing to attribute
        return ObjectDrift(
            api_version=api_version,
            kind=kind,
            namespace=namespace,
            name=name,
            resource_version=live_meta.get("resourceVersion"),
            drifts=(),
        )
    if raw is None:
        raw = normalise(desired, gvk=gvk, desired=False, ignore_aggregated_roles=keep_rules)
    in_git: set[FieldPath] = set()
    _paths(raw, node, FieldPath(), in_git)
    entries = _entries(live, rules)
    applied_before = _last_applied_paths(live, gvk, node, keep_rules)
    aggregated = kind == "ClusterRole" and bool(live.get("aggregationRule"))
    applicable = list(rules.for_object(group=group, kind=kind, name=name, namespace=namespace))
    ignored = _ignored(applicable, (want, have), node)
    quiet = {m for rule in applicable for m in rule.managed_fields_managers}
    drifts: list[FieldDrift] = []
    for found in differences:
        owners = _owners(entries, found.path)
        if not owners and any(found.path.has_prefix(p) for p in applied_before):
            owners = (_LAST_APPLIED_OWNER,)
        from_git = found.path in in_git
        if found.kind == "removed" and not from_git:
            continue  # a default this server version did not store
        if found.kind == "live-only" or (found.kind == "changed" and not from_git):
            forced = aggregated and not keep_rules and found.path.elements[:1] == (_RULES,)
            if not forced and not _counts(owners):
                continue
        if any(found.path.has_prefix(p) for p in ignored):
            continue
        if owners and all(o.manager in quiet for o in owners):
            continue
        drifts.append(
            FieldDrift(
                found.path, found.kind, found.desired, found.live, owners, from_git, found.location
            )
        )
    if group == "" and kind == "Endpoints":
        drifts = _whole_subsets(drifts, want, have)
    return ObjectDrift(
        api_version=api_version,
        kind=kind,
        namespace=namespace,
        name=name,
        resource_version=live_meta.get("resourceVersion"),
        drifts=tuple(drifts),
    )


_SUBSETS = FieldPath.of("subsets")


def _whole_subsets(
    drifts: list[FieldDrift], want: dict[str, Any], have: dict[str, Any]
) -> list[FieldDrift]:
    """Endpoints' subsets were compared sorted, so positions inside them are not the live
    object's: a drift there becomes one ``changed`` of the whole ``subsets``."""
    inside = [d for d in drifts if d.path.has_prefix(_SUBSETS)]
    if not inside:
        return drifts
    owners = tuple(dict.fromkeys(o for d in inside for o in d.owners))
    whole = FieldDrift(
        _SUBSETS, "changed", want.get("subsets"), have.get("subsets"), owners, True, ("subsets",)
    )
    return [d for d in drifts if d not in inside] + [whole]


LiveLookup = Callable[[str, str, str | None, str], dict[str, Any] | None]
"""``(apiVersion, kind, namespace, name) -> live object or None``; namespace None when the
manifest names none (the lookup applies the default namespace of its context, or none for a
cluster-scoped kind)."""


def diff_objects(
    desired: Iterable[dict[str, Any]],
    live_lookup: LiveLookup,
    rules: DriftRules | None = None,
    *,
    definitions: schemas.Definitions | None = None,
) -> list[ObjectDrift]:
    """:func:`diff` for every desired object; a missing live object is ``missing=True``."""
    return list(_diff_all(desired, live_lookup, rules, definitions))


def _diff_all(
    desired: Iterable[dict[str, Any]],
    live_lookup: LiveLookup,
    rules: DriftRules | None,
    definitions: schemas.Definitions | None,
) -> Iterator[ObjectDrift]:
    for obj in desired:
        meta = _meta(obj)
        api_version = str(obj.get("apiVersion") or "")
        kind = str(obj.get("kind") or "")
        name = str(meta.get("name") or "")
        if not api_version or not kind or not name:
            raise DriftError("a desired object needs apiVersion, kind and metadata.name")
        namespace = meta.get("namespace") or None
        live = live_lookup(api_version, kind, namespace, name)
        if live is None:
            yield ObjectDrift(api_version, kind, namespace, name, None, (), missing=True)
        else:
            yield diff(obj, live, rules=rules, definitions=definitions)
