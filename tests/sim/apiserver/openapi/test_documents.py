"""The OpenAPI v3 documents' shape: what kubectl looks for in them, as the real server has it.

``test_openapi_kubectl`` proves the real kubectl accepts them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubemedic.sim.apiserver.openapi.documents import OpenAPI
from kubemedic.sim.machinery.apiresources import Registry
from kubemedic.sim.machinery.definitions import definitions

Obj = dict[str, Any]


@pytest.fixture(scope="module")
def openapi() -> OpenAPI:
    return OpenAPI(Registry(), definitions())


def load(openapi: OpenAPI, path: str) -> Obj:
    body = openapi.document(path)
    assert body is not None, path
    document: Obj = json.loads(body)
    return document


def walk(node: Any) -> Iterator[Obj]:
    """Every mapping under ``node`` (schemas, operations, parameters...)."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from walk(item)


def schema_nodes(schema: Obj) -> Iterator[Obj]:
    """Every schema node of a component, not mistaking property names for keywords."""
    yield schema
    for field in schema.get("properties", {}).values():
        yield from schema_nodes(field)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from schema_nodes(schema[key])
    for key in ("allOf", "oneOf", "anyOf"):
        for sub in schema.get(key, ()):
            yield from schema_nodes(sub)


# -- the documents -----------------------------------------------------------------------------


def test_index_pins_every_document_to_the_hash_of_its_bytes(openapi: OpenAPI) -> None:
    index = openapi.index()["paths"]
    assert {"api", "api/v1", "apis", "apis/apps", "apis/apps/v1", "version"} <= set(index)
    assert "apis/cluster.x-k8s.io/v1beta1" in index
    for path, entry in index.items():
        body = openapi.document(path)
        assert body is not None
        digest = hashlib.sha512(body).hexdigest().upper()
        assert entry["serverRelativeURL"] == f"/openapi/v3/{path}?hash={digest}"
        assert openapi.content_hash(path) == digest


def test_documents_are_built_once_and_served_from_cache(openapi: OpenAPI) -> None:
    assert openapi.document("apis/apps/v1") is openapi.document("/apis/apps/v1")
    assert openapi.document("apis/nothing.example/v1") is None
    assert openapi.document("apis/apps/v2") is None
    assert openapi.content_hash("apis/apps/v2") is None


def test_every_ref_resolves_inside_its_own_document(openapi: OpenAPI) -> None:
    for path in openapi.paths():
        document = load(openapi, path)
        assert document["openapi"] == "3.0.0"
        schemas = document["components"]["schemas"]
        for node in walk(document):
            ref = node.get("$ref")
            if isinstance(ref, str):
                assert ref.startswith("#/components/schemas/"), (path, ref)
                assert ref.removeprefix("#/components/schemas/") in schemas, (path, ref)


def test_schema_types_are_single_openapi_types(openapi: OpenAPI) -> None:
    allowed = {"string", "integer", "number", "boolean", "object", "array"}
    for path in ("api/v1", "apis/apps/v1", "apis/apiextensions.k8s.io/v1"):
        for name, schema in load(openapi, path)["components"]["schemas"].items():
            for node in schema_nodes(schema):
                assert node.get("type", "object") in allowed, (path, name, node.get("type"))
                if "$ref" in node:
                    assert set(node) == {"$ref"}, (name, node)


def test_only_real_enums_survive(openapi: OpenAPI) -> None:
    deployment_schema = load(openapi, "apis/apps/v1")["components"]["schemas"][
        "io.k8s.api.apps.v1.Deployment"
    ]
    assert deployment_schema["properties"]["apiVersion"] == {
        "description": deployment_schema["properties"]["apiVersion"]["description"],
        "type": "string",
    }
    assert "enum" not in deployment_schema["properties"]["kind"]


def test_podspec_containers_keep_their_strategic_merge_metadata(openapi: OpenAPI) -> None:
    for path in ("api/v1", "apis/apps/v1"):
        schemas = load(openapi, path)["components"]["schemas"]
        containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
        assert containers["x-kubernetes-patch-merge-key"] == "name"
        assert containers["x-kubernetes-patch-strategy"] == "merge"
        assert containers["x-kubernetes-list-type"] == "map"
        assert containers["x-kubernetes-list-map-keys"] == ["name"]
        assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}


def test_extensions_on_a_referencing_property_sit_beside_an_allof(openapi: OpenAPI) -> None:
    schemas = load(openapi, "apis/apps/v1")["components"]["schemas"]
    strategy = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    assert strategy["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}
    ]
    assert strategy["x-kubernetes-patch-strategy"] == "retainKeys"
    assert strategy["description"].startswith("The deployment strategy to use")


def test_int_or_string_and_quantity_take_the_real_servers_form(openapi: OpenAPI) -> None:
    schemas = load(openapi, "api/v1")["components"]["schemas"]
    int_or_string = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert int_or_string["format"] == "int-or-string"
    assert int_or_string["oneOf"] == [{"type": "integer"}, {"type": "string"}]
    quantity = schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["oneOf"] == [{"type": "string"}, {"type": "number"}]


def test_meta_types_ride_along_with_every_group_version(openapi: OpenAPI) -> None:
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1."
    for path in ("api/v1", "apis/apps/v1", "apis/cluster.x-k8s.io/v1beta1"):
        schemas = load(openapi, path)["components"]["schemas"]
        for name in ("Status", "DeleteOptions", "ObjectMeta", "ListMeta", "WatchEvent", "Patch"):
            assert meta + name in schemas, (path, name)
    apps = load(openapi, "apis/apps/v1")["components"]["schemas"]
    assert "io.k8s.api.autoscaling.v1.Scale" in apps
    core = load(openapi, "api/v1")["components"]["schemas"]
    assert {"io.k8s.api.policy.v1.Eviction", "io.k8s.api.core.v1.Binding"} <= set(core)


def _document_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


def _operations(document: Obj, method: str, gvk: Obj) -> list[Obj]:
    return [
        item[method]
        for item in document["paths"].values()
        if method in item and item[method].get("x-kubernetes-group-version-kind") == gvk
    ]


def _param_names(operation: Obj) -> set[str]:
    return {p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}


def test_every_writable_kind_advertises_server_side_field_validation(openapi: OpenAPI) -> None:
    for res in Registry().resources:
        document = load(openapi, _document_path(res.group, res.version))
        gvk = {"group": res.group, "kind": res.kind, "version": res.version}
        posts, patches = _operations(document, "post", gvk), _operations(document, "patch", gvk)
        if "create" in res.verbs:
            assert posts, res
        if "patch" in res.verbs:
            assert patches, res
        else:
            assert not patches, res
        # kubectl stops at the first patch operation of the kind it meets: all must qualify.
        for op in [*posts, *patches]:
            assert {"dryRun", "fieldManager", "fieldValidation"} <= _param_names(op), op
        for op in patches:
            assert "force" in _param_names(op)
            assert op["x-kubernetes-action"] == "patch"
            content = op["requestBody"]["content"]
            assert {
                "application/json-patch+json",
                "application/merge-patch+json",
                "application/apply-patch+yaml",
            } <= set(content)
            strategic = "application/strategic-merge-patch+json" in content
            assert strategic == (not res.custom), res


def test_collections_items_and_cluster_wide_lists_of_a_namespaced_kind(openapi: OpenAPI) -> None:
    paths = load(openapi, "api/v1")["paths"]
    pods = paths["/api/v1/namespaces/{namespace}/pods"]
    assert pods["get"]["x-kubernetes-action"] == "list"
    assert pods["get"]["operationId"] == "listCoreV1NamespacedPod"
    assert pods["post"]["x-kubernetes-action"] == "post"
    assert pods["delete"]["x-kubernetes-action"] == "deletecollection"
    assert "labelSelector" in _param_names(pods["get"])
    created = pods["post"]["responses"]["201"]["content"]["application/json"]["schema"]
    assert created == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Pod"}
    pod = paths["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert {"get", "put", "patch", "delete"} <= set(pod)
    assert [p["name"] for p in pod["parameters"]] == ["name", "namespace", "pretty"]
    assert paths["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert paths["/api/v1/watch/namespaces/{namespace}/pods"]["get"]["x-kubernetes-action"] == (
        "watchlist"
    )
    nodes = paths["/api/v1/nodes/{name}"]
    assert [p["name"] for p in nodes["parameters"]] == ["name", "pretty"]
    assert "/api/v1/namespaces/{namespace}/nodes" not in paths


def test_subresources_carry_the_kind_they_accept(openapi: OpenAPI) -> None:
    core = load(openapi, "api/v1")["paths"]
    eviction = core["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]
    assert set(eviction) == {"parameters", "post"}
    assert eviction["post"]["x-kubernetes-group-version-kind"] == {
        "group": "policy",
        "kind": "Eviction",
        "version": "v1",
    }
    assert eviction["post"]["operationId"] == "createCoreV1NamespacedPodEviction"
    binding = core["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert binding["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    status = core["/api/v1/namespaces/{namespace}/pods/{name}/status"]
    assert status["patch"]["x-kubernetes-group-version-kind"]["kind"] == "Pod"
    assert status["get"]["operationId"] == "readCoreV1NamespacedPodStatus"
    finalize = core["/api/v1/namespaces/{name}/finalize"]
    assert set(finalize) == {"parameters", "put"}
    apps = load(openapi, "apis/apps/v1")["paths"]
    scale = apps["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["patch"]["x-kubernetes-group-version-kind"] == {
        "group": "autoscaling",
        "kind": "Scale",
        "version": "v1",
    }
    schema = scale["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert schema == {"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}


def test_read_only_kinds_publish_reads_only(openapi: OpenAPI) -> None:
    paths = load(openapi, "apis/metrics.k8s.io/v1beta1")["paths"]
    item = paths["/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods/{name}"]
    assert set(item) == {"get", "parameters"}
    assert set(paths["/apis/metrics.k8s.io/v1beta1/nodes"]) == {"get", "parameters"}


def test_custom_resources_get_a_permissive_crd_schema(openapi: OpenAPI) -> None:
    document = load(openapi, "apis/cluster.x-k8s.io/v1beta1")
    machine = document["components"]["schemas"]["io.x-k8s.cluster.v1beta1.Machine"]
    assert machine["x-kubernetes-preserve-unknown-fields"] is True
    assert machine["x-kubernetes-group-version-kind"] == [
        {"group": "cluster.x-k8s.io", "kind": "Machine", "version": "v1beta1"}
    ]
    assert machine["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"] is True
    listing = document["components"]["schemas"]["io.x-k8s.cluster.v1beta1.MachineList"]
    assert listing["properties"]["items"]["items"] == {
        "$ref": "#/components/schemas/io.x-k8s.cluster.v1beta1.Machine"
    }
    create = document["paths"]["/apis/cluster.x-k8s.io/v1beta1/namespaces/{namespace}/machines"]
    assert create["post"]["operationId"] == "createClusterXK8sIoV1beta1NamespacedMachine"
    assert create["post"]["tags"] == ["clusterXK8sIo_v1beta1"]
