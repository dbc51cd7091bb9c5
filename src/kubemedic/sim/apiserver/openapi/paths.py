"""The paths of a group-version's OpenAPI v3 document: kube-apiserver's operations per resource.

For every resource the real server lists a collection path (``list``/``post``/
``deletecollection``), an item path (``get``/``put``/``patch``/``delete``), for namespaced kinds
the cluster-wide list, the deprecated ``/watch/`` paths, and one path per subresource. Each
operation carries ``x-kubernetes-action`` and ``x-kubernetes-group-version-kind`` (the kind the
body is: ``Scale`` of ``autoscaling/v1`` for ``deployments/scale``, ``Eviction`` of ``policy/v1``
for ``pods/eviction``, the parent kind for ``status``). kubectl reads two things here: a
``fieldValidation`` parameter on the kind's patch operations (then it sends
``fieldValidation=Strict``), and whether those accept ``application/strategic-merge-patch+json``
(custom resources do not, so apply and diff send JSON merge patches to them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubemedic.sim.machinery.apiresources import Resource
from kubemedic.sim.machinery.definitions import Definitions

JSON = dict[str, Any]

REF = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
STATUS = META + "Status"
PATCH = META + "Patch"
DELETE_OPTIONS = META + "DeleteOptions"
WATCH_EVENT = META + "WatchEvent"
#: The meta types a group-version document's operations reference.
OPERATION_TYPES = (STATUS, PATCH, DELETE_OPTIONS, WATCH_EVENT, META + "APIResourceList")

OBJECT_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_STREAM_TYPES = (
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
)
_CUSTOM_TYPES = ("application/json", "application/yaml")
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)

_PARAMETERS: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": (
        "boolean",
        'allowWatchBookmarks requests watch events with type "BOOKMARK".',
    ),
    "continue": (
        "string",
        "The continue option should be set when retrieving more results from the server.",
    ),
    "dryRun": (
        "string",
        "When present, indicates that modifications should not be persisted. Valid values "
        "are: - All: all dry run stages will be processed",
    ),
    "fieldManager": (
        "string",
        "fieldManager is a name associated with the actor or entity that is making these changes.",
    ),
    "fieldSelector": (
        "string",
        "A selector to restrict the list of returned objects by their fields. Defaults to "
        "everything.",
    ),
    "fieldValidation": (
        "string",
        "fieldValidation instructs the server on how to handle objects in the request "
        "(POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore "
        "- Warn - Strict: This will fail the request with a BadRequest error if any unknown "
        "fields would be dropped from the object, or if any duplicate fields are present.",
    ),
    "force": (
        "boolean",
        'Force is going to "force" Apply requests. It means user will re-acquire conflicting '
        "fields owned by other people. Force flag must be unset for non-apply patch requests.",
    ),
    "gracePeriodSeconds": (
        "integer",
        "The duration in seconds before the object should be deleted.",
    ),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean",
        "if set to true, it will trigger an unsafe deletion of the resource in case the normal "
        "deletion flow fails with a corrupt object error.",
    ),
    "labelSelector": (
        "string",
        "A selector to restrict the list of returned objects by their labels. Defaults to "
        "everything.",
    ),
    "limit": ("integer", "limit is a maximum number of responses to return for a list call."),
    "orphanDependents": (
        "boolean",
        "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7.",
    ),
    "pretty": ("string", "If 'true', then the output is pretty printed."),
    "propagationPolicy": (
        "string",
        "Whether and how garbage collection will be performed. Acceptable values are: "
        "'Orphan', 'Background', 'Foreground'.",
    ),
    "resourceVersion": (
        "string",
        "resourceVersion sets a constraint on what resource versions a request may be served from.",
    ),
    "resourceVersionMatch": (
        "string",
        "resourceVersionMatch determines how resourceVersion is applied to list calls.",
    ),
    "sendInitialEvents": (
        "boolean",
        "`sendInitialEvents=true` may be set together with `watch=true`.",
    ),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call."),
    "watch": (
        "boolean",
        "Watch for changes to the described resources and return them as a stream of add, "
        "update, and remove notifications. Specify resourceVersion.",
    ),
}

_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_DELETE_PARAMS = (
    "dryRun",
    "gracePeriodSeconds",
    "ignoreStoreReadErrorWithClusterBreakingPotential",
    "orphanDependents",
    "propagationPolicy",
)
_DELETECOLLECTION_PARAMS = tuple(
    sorted({*_DELETE_PARAMS, *_LIST_PARAMS} - {"allowWatchBookmarks", "watch"})
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")


class Names:
    """Component names of a resource's kind, list and subresource kinds.

    ``custom`` marks a kind without an official definition (Cluster API, metrics): it is named
    as the real server names CRD schemas (``io.x-k8s.cluster.v1beta1.Machine``).
    """

    def __init__(self, res: Resource, defs: Definitions) -> None:
        self._res = res
        self._defs = defs
        official = defs.type_name(res.group, res.version, res.kind)
        self.custom = official is None
        self.kind = official or _reverse_dns(res) + res.kind
        listed = defs.type_name(res.group, res.version, res.list_kind)
        self.list_kind = listed or _reverse_dns(res) + res.list_kind

    def sub_kind(self, name: str) -> str:
        sub = self._res.subresource(name)
        assert sub is not None
        group = self._res.group if sub.group is None else sub.group
        version = sub.version or self._res.version
        if (group, version, sub.kind) == (self._res.group, self._res.version, self._res.kind):
            return self.kind
        return self._defs.type_name(group, version, sub.kind) or self.kind

    def sub_gvk(self, name: str) -> JSON:
        sub = self._res.subresource(name)
        assert sub is not None
        group = self._res.group if sub.group is None else sub.group
        return {"group": group, "kind": sub.kind, "version": sub.version or self._res.version}


class _Paths:
    """The path items of one resource, operation by operation as kube-apiserver lists them."""

    def __init__(self, res: Resource, names: Names, *, prefix: str, gv_id: str, tag: str) -> None:
        self.res = res
        self.names = names
        self.prefix = prefix
        self.gv_id = gv_id
        self.tag = tag
        self.gvk = {"group": res.group, "kind": res.kind, "version": res.version}
        self.scope = "Namespaced" if res.namespaced else ""
        self.media = _CUSTOM_TYPES if names.custom else OBJECT_TYPES
        self.ns_params = [_path_param("namespace")] if res.namespaced else []
        ns = "/namespaces/{namespace}" if res.namespaced else ""
        self.collection = f"{prefix}{ns}/{res.plural}"
        self.item = self.collection + "/{name}"

    def build(self) -> JSON:
        res, kind, verbs = self.res, self.res.kind, set(self.res.verbs)
        body, listing = self.names.kind, self.names.list_kind
        out: JSON = {}
        collection: JSON = {"parameters": [*self.ns_params, _query("pretty")]}
        if "list" in verbs:
            collection["get"] = self._op(
                "list",
                "list",
                about=f"list or watch objects of kind {kind}",
                codes={"200": listing},
                params=_LIST_PARAMS,
                media=(*self.media, *_STREAM_TYPES),
            )
        if "create" in verbs:
            collection["post"] = self._write("post", "create", about=f"create a {kind}", body=body)
        if "deletecollection" in verbs:
            collection["delete"] = self._delete(collection=True)
        if len(collection) > 1:
            out[self.collection] = collection
        if res.namespaced and "list" in verbs:
            everywhere = {k: v for k, v in collection["get"].items() if k != "parameters"}
            everywhere["operationId"] = self._id("list", "ForAllNamespaces", scoped=False)
            params = [_query(p) for p in (*_LIST_PARAMS, "pretty")]
            out[f"{self.prefix}/{res.plural}"] = {"get": everywhere, "parameters": params}
        item: JSON = {"parameters": [_path_param("name", kind), *self.ns_params, _query("pretty")]}
        if "get" in verbs:
            item["get"] = self._op(
                "get", "read", about=f"read the specified {kind}", codes={"200": body}
            )
        if "update" in verbs:
            item["put"] = self._write(
                "put", "replace", about=f"replace the specified {kind}", body=body
            )
        if "patch" in verbs:
            item["patch"] = self._patch(
                body, self.gvk, about=f"partially update the specified {kind}"
            )
        if "delete" in verbs:
            item["delete"] = self._delete(collection=False)
        if len(item) > 1:
            out[self.item] = item
        if "watch" in verbs:
            out.update(self._watches())
        for sub in res.subresources:
            out.update(self._subresource(sub.name))
        return out

    def _id(self, verb: str, suffix: str = "", *, scoped: bool = True) -> str:
        scope = self.scope if scoped else ""
        return f"{verb}{self.gv_id}{scope}{self.res.kind}{suffix}"

    def _op(
        self,
        action: str,
        verb: str,
        *,
        about: str,
        codes: Mapping[str, str],
        params: tuple[str, ...] = (),
        media: tuple[str, ...] = (),
        suffix: str = "",
        gvk: JSON | None = None,
    ) -> JSON:
        op: JSON = {
            "description": about,
            "operationId": self._id(verb, suffix),
            "responses": responses(codes, media or self.media),
            "tags": [self.tag],
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk or self.gvk,
        }
        if params:
            op["parameters"] = [_query(p) for p in params]
        return op

    def _write(
        self,
        action: str,
        verb: str,
        *,
        about: str,
        body: str,
        suffix: str = "",
        gvk: JSON | None = None,
    ) -> JSON:
        codes = {"200": body, "201": body} | ({"202": body} if action == "post" else {})
        op = self._op(
            action, verb, about=about, codes=codes, params=_WRITE_PARAMS, suffix=suffix, gvk=gvk
        )
        op["requestBody"] = {"content": {"*/*": {"schema": {"$ref": REF + body}}}, "required": True}
        return op

    def _patch(self, body: str, gvk: JSON, *, about: str, suffix: str = "") -> JSON:
        op = self._op(
            "patch",
            "patch",
            about=about,
            codes={"200": body, "201": body},
            params=(*_WRITE_PARAMS, "force"),
            suffix=suffix,
            gvk=gvk,
        )
        # Custom resources take no strategic merge patch: kubectl then sends a JSON merge patch.
        types = [t for t in _PATCH_TYPES if not (self.names.custom and "strategic" in t)]
        content = {t: {"schema": {"$ref": REF + PATCH}} for t in types}
        op["requestBody"] = {"content": content, "required": True}
        return op

    def _delete(self, *, collection: bool) -> JSON:
        kind = self.res.kind
        if collection:
            op = self._op(
                "deletecollection",
                "delete",
                about=f"delete collection of {kind}",
                codes={"200": STATUS},
                params=_DELETECOLLECTION_PARAMS,
            )
            op["operationId"] = f"delete{self.gv_id}Collection{self.scope}{kind}"
        else:
            op = self._op(
                "delete",
                "delete",
                about=f"delete a {kind}",
                codes={"200": STATUS, "202": STATUS},
                params=_DELETE_PARAMS,
            )
        op["requestBody"] = {"content": {"*/*": {"schema": {"$ref": REF + DELETE_OPTIONS}}}}
        return op

    def _watches(self) -> JSON:
        res, kind = self.res, self.res.kind
        ns = "/namespaces/{namespace}" if res.namespaced else ""
        base = f"{self.prefix}/watch{ns}/{res.plural}"
        media, codes = (*self.media, *_STREAM_TYPES), {"200": WATCH_EVENT}
        list_params = [_query(p) for p in (*_LIST_PARAMS, "pretty")]
        deprecated = "deprecated: use the 'watch' parameter with a list operation instead"
        watch_list = self._op(
            "watchlist",
            "watch",
            about=f"watch individual changes to a list of {kind}. {deprecated}.",
            codes=codes,
            media=media,
            suffix="List",
        )
        watch_one = self._op(
            "watch",
            "watch",
            about=f"watch changes to an object of kind {kind}. {deprecated}, "
            "filtered to a single item with the 'fieldSelector' parameter.",
            codes=codes,
            media=media,
        )
        name_params = [_path_param("name", kind), *self.ns_params, *list_params]
        out: JSON = {
            base: {"get": watch_list, "parameters": [*self.ns_params, *list_params]},
            base + "/{name}": {"get": watch_one, "parameters": name_params},
        }
        if res.namespaced:
            everywhere = {
                **watch_list,
                "operationId": self._id("watch", "ListForAllNamespaces", scoped=False),
            }
            out[f"{self.prefix}/watch/{res.plural}"] = {
                "get": everywhere,
                "parameters": list_params,
            }
        return out

    def _subresource(self, name: str) -> JSON:
        sub = self.res.subresource(name)
        assert sub is not None
        body, gvk = self.names.sub_kind(name), self.names.sub_gvk(name)
        suffix, kind = name.capitalize(), self.res.kind
        item: JSON = {
            "parameters": [_path_param("name", sub.kind), *self.ns_params, _query("pretty")]
        }
        if "get" in sub.verbs:
            item["get"] = self._op(
                "get",
                "read",
                about=f"read {name} of the specified {kind}",
                codes={"200": body},
                suffix=suffix,
                gvk=gvk,
            )
        if "update" in sub.verbs:
            item["put"] = self._write(
                "put",
                "replace",
                about=f"replace {name} of the specified {kind}",
                body=body,
                suffix=suffix,
                gvk=gvk,
            )
        if "patch" in sub.verbs:
            item["patch"] = self._patch(
                body, gvk, suffix=suffix, about=f"partially update {name} of the specified {kind}"
            )
        if "create" in sub.verbs:
            item["post"] = self._write(
                "post",
                "create",
                about=f"create {name} of a {kind}",
                body=body,
                suffix=suffix,
                gvk=gvk,
            )
        return {f"{self.item}/{name}": item}


def group_version_paths(
    group: str, version: str, *, resources: Iterable[tuple[Resource, Names]]
) -> JSON:
    """Every path of a group-version document: its resource list, then each resource's."""
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    gv_id = group_id(group) + version.capitalize()
    tag = f"{tag_group(group)}_{version}"
    get = {
        "description": "get available resources",
        "operationId": f"get{gv_id}APIResources",
        "responses": responses({"200": META + "APIResourceList"}, OBJECT_TYPES),
        "tags": [tag],
    }
    out: JSON = {f"{prefix}/": {"get": get}}
    for res, names in resources:
        out.update(_Paths(res, names, prefix=prefix, gv_id=gv_id, tag=tag).build())
    return out


def root_paths(path: str) -> tuple[JSON, str]:
    """The one GET of ``api``, ``apis``, ``apis/<group>`` or ``version``, and its type."""
    if path == "version":
        url, op_id, tag = "/version/", "getCodeVersion", "version"
        type_name = "io.k8s.apimachinery.pkg.version.Info"
    elif path in ("api", "apis"):
        url, tag = f"/{path}/", "core" if path == "api" else "apis"
        op_id = "getCoreAPIVersions" if path == "api" else "getAPIVersions"
        type_name = META + ("APIVersions" if path == "api" else "APIGroupList")
    else:
        group = path.removeprefix("apis/")
        url, op_id, tag = f"/apis/{group}/", f"get{group_id(group)}APIGroup", tag_group(group)
        type_name = META + "APIGroup"
    about = "the code version" if path == "version" else "available API versions"
    get = {
        "description": f"get {about}",
        "operationId": op_id,
        "responses": responses({"200": type_name}, OBJECT_TYPES),
        "tags": [tag],
    }
    return {url: {"get": get}}, type_name


def responses(codes: Mapping[str, str], media: tuple[str, ...]) -> JSON:
    text = {"200": "OK", "201": "Created", "202": "Accepted"}
    out: JSON = {
        code: {
            "content": {m: {"schema": {"$ref": REF + name}} for m in media},
            "description": text[code],
        }
        for code, name in codes.items()
    }
    out["401"] = {"description": "Unauthorized"}
    return out


def _query(name: str) -> JSON:
    kind, description = _PARAMETERS[name]
    return {
        "description": description,
        "in": "query",
        "name": name,
        "schema": {"type": kind, "uniqueItems": True},
    }


def _path_param(name: str, kind: str = "") -> JSON:
    description = (
        f"name of the {kind}"
        if name == "name"
        else "object name and auth scope, such as for teams and projects"
    )
    return {
        "description": description,
        "in": "path",
        "name": name,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


def group_id(group: str) -> str:
    """The group as operation ids spell it: ``Apps``, ``Coordination``, ``ClusterXK8sIo``."""
    if not group:
        return "Core"
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[.-]", group.removesuffix(".k8s.io")))


def tag_group(group: str) -> str:
    name = group_id(group)
    return name[:1].lower() + name[1:]


def _reverse_dns(res: Resource) -> str:
    """CRD schema names: ``cluster.x-k8s.io`` v1beta1 -> ``io.x-k8s.cluster.v1beta1.``."""
    return ".".join(reversed(res.group.split("."))) + f".{res.version}."
