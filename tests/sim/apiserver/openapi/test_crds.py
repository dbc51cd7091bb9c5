"""The Cluster API CRDs the emulator serves: valid CustomResourceDefinitions with CAPI's names,
subresources and printer columns, and schemas real Machines, MachineSets and MachineDeployments
pass."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from kubemedic.sim.apiserver.openapi import crds
from kubemedic.sim.machinery import apiresources as resources
from kubemedic.sim.machinery import definitions as schema

Obj = dict[str, Any]


def crd_of(kind: str) -> Obj:
    return next(crd for crd in crds.capi_crds() if crd["spec"]["names"]["kind"] == kind)


def served(crd: Obj) -> Obj:
    (version,) = crd["spec"]["versions"]
    assert isinstance(version, dict)
    return version


def column_names(kind: str) -> list[str]:
    return [column["name"] for column in crds.printer_columns(crd_of(kind), "v1beta1")]


def object_meta_description(field: str) -> str:
    node = schema.definitions().node("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
    description = node.properties[field]["description"]
    assert isinstance(description, str)
    return description


def schema_nodes(node: Obj, path: str = "") -> Iterator[tuple[str, Obj]]:
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from schema_nodes(child, f"{path}.{name}")
    if "items" in node:
        yield from schema_nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from schema_nodes(node["additionalProperties"], f"{path}{{}}")


# Builders: objects as clusterctl and the CAPI controllers write them ------------------------


def object_ref(kind: str, name: str, *, api_version: str) -> Obj:
    return {"apiVersion": api_version, "kind": kind, "name": name, "namespace": "ake-c01"}


def machine_spec(name: str) -> Obj:
    return {
        "clusterName": "ake-c01",
        "bootstrap": {
            "configRef": object_ref(
                "KubeadmConfig", name, api_version="bootstrap.cluster.x-k8s.io/v1beta1"
            ),
            "dataSecretName": name,
        },
        "infrastructureRef": object_ref(
            "OpenStackMachine", name, api_version="infrastructure.cluster.x-k8s.io/v1beta1"
        ),
        "version": "v1.32.4",
        "nodeDrainTimeout": "10m0s",
    }


def machine(name: str = "ake-c01-md-0-7d9f8-x2k4q") -> Obj:
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": "ake-c01"},
        "spec": {**machine_spec(name), "providerID": "openstack:///3f1c"},
        "status": {
            "phase": "Running",
            "nodeRef": {"apiVersion": "v1", "kind": "Node", "name": name, "uid": "3f1c"},
            "addresses": [{"type": "InternalIP", "address": "10.0.1.21"}],
            "bootstrapReady": True,
            "infrastructureReady": True,
            "observedGeneration": 2,
            "lastUpdated": "2025-03-01T10:00:00Z",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2025-03-01T10:00:00Z"}
            ],
            "nodeInfo": {"kubeletVersion": "v1.32.4", "architecture": "amd64"},
        },
    }


def replicated(kind: str, name: str = "ake-c01-md-0") -> Obj:
    labels = {"cluster.x-k8s.io/cluster-name": "ake-c01", "cluster.x-k8s.io/deployment-name": name}
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "ake-c01"},
        "spec": {
            "clusterName": "ake-c01",
            "replicas": 3,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": machine_spec(name)},
            **(
                {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}}}
                if kind == "MachineDeployment"
                else {"deletePolicy": "Oldest"}
            ),
        },
        "status": {
            "selector": ",".join(f"{key}={value}" for key, value in labels.items()),
            "replicas": 3,
            "readyReplicas": 3,
            "availableReplicas": 3,
            **({"phase": "Running", "updatedReplicas": 3} if kind == "MachineDeployment" else {}),
        },
    }


# The CRD objects -----------------------------------------------------------------------------


@pytest.mark.parametrize("established_at", [None, "2025-03-01T09:58:11Z"])
def test_every_crd_is_a_valid_customresourcedefinition_of_1_32(established_at: str | None) -> None:
    for crd in crds.capi_crds(established_at=established_at):
        kubernetes_validate.validate(crd, "1.32.0", strict=True)


@pytest.mark.parametrize(
    ("kind", "plural", "short"),
    [
        ("Machine", "machines", "ma"),
        ("MachineSet", "machinesets", "ms"),
        ("MachineDeployment", "machinedeployments", "md"),
    ],
)
def test_names_are_cluster_api_s(kind: str, plural: str, short: str) -> None:
    crd = crd_of(kind)

    assert crd["metadata"]["name"] == f"{plural}.cluster.x-k8s.io"
    assert crd["metadata"]["labels"]["cluster.x-k8s.io/provider"] == "cluster-api"
    assert crd["spec"]["group"] == "cluster.x-k8s.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "categories": ["cluster-api"],
        "kind": kind,
        "listKind": f"{kind}List",
        "plural": plural,
        "shortNames": [short],
        "singular": kind.lower(),
    }
    assert crd["status"]["acceptedNames"] == crd["spec"]["names"]


def test_the_crds_agree_with_the_resources_discovery_lists() -> None:
    listed = {res.plural: res for res in resources.RESOURCES if res.group == crds.GROUP}

    assert set(listed) == {crd["spec"]["names"]["plural"] for crd in crds.capi_crds()}
    for crd in crds.capi_crds():
        names, res = crd["spec"]["names"], listed[crd["spec"]["names"]["plural"]]
        assert (res.version, res.kind, res.singular) == (
            crds.VERSION,
            names["kind"],
            names["singular"],
        )
        assert list(res.short_names) == names["shortNames"]
        assert list(res.categories) == names["categories"]
        assert res.namespaced
        assert {sub.name for sub in res.subresources} == set(served(crd)["subresources"])


def test_only_v1beta1_is_served_and_stored() -> None:
    for crd in crds.capi_crds():
        version = served(crd)
        assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
        assert crd["status"]["storedVersions"] == ["v1beta1"]


def test_each_crd_is_established() -> None:
    crd = crds.capi_crds(established_at="2025-03-01T09:58:11Z")[0]

    assert crd["status"]["conditions"] == [
        {
            "type": "NamesAccepted",
            "status": "True",
            "lastTransitionTime": "2025-03-01T09:58:11Z",
            "reason": "NoConflicts",
            "message": "no conflicts found",
        },
        {
            "type": "Established",
            "status": "True",
            "lastTransitionTime": "2025-03-01T09:58:11Z",
            "reason": "InitialNamesAccepted",
            "message": "the initial names have been accepted",
        },
    ]


def test_machines_have_status_and_replicated_kinds_also_scale() -> None:
    scale = {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }

    assert served(crd_of("Machine"))["subresources"] == {"status": {}}
    for kind in ("MachineSet", "MachineDeployment"):
        assert served(crd_of(kind))["subresources"] == {"status": {}, "scale": scale}


def test_every_call_returns_new_objects() -> None:
    first = crds.capi_crds()
    first[0]["spec"]["names"]["shortNames"].append("mach")
    served(first[1])["additionalPrinterColumns"][0]["name"] = "X"

    assert crds.capi_crds()[0]["spec"]["names"]["shortNames"] == ["ma"]
    assert served(crds.capi_crds()[1])["additionalPrinterColumns"][0]["name"] == "Cluster"


# Schemas ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["Machine", "MachineSet", "MachineDeployment"])
def test_schemas_are_structural(kind: str) -> None:
    """Every node names its type (the API server refuses a CRD whose schema is not structural),
    and spec and status keep the fields they do not list instead of pruning them."""
    root = served(crd_of(kind))["schema"]["openAPIV3Schema"]

    for path, node in schema_nodes(root):
        assert "type" in node or node.get("x-kubernetes-int-or-string") is True, path
    for part in ("spec", "status"):
        assert root["properties"][part]["x-kubernetes-preserve-unknown-fields"] is True


@pytest.mark.parametrize(
    ("kind", "body"),
    [
        ("Machine", machine()),
        ("MachineSet", replicated("MachineSet")),
        ("MachineDeployment", replicated("MachineDeployment")),
    ],
)
def test_real_objects_pass_their_schema(kind: str, body: Obj) -> None:
    jsonschema.validate(body, served(crd_of(kind))["schema"]["openAPIV3Schema"])


@pytest.mark.parametrize(
    ("kind", "body", "missing"),
    [
        ("Machine", machine(), "infrastructureRef"),
        ("MachineSet", replicated("MachineSet"), "selector"),
        ("MachineDeployment", replicated("MachineDeployment"), "template"),
    ],
)
def test_required_spec_fields_are_required(kind: str, body: Obj, missing: str) -> None:
    del body["spec"][missing]

    with pytest.raises(jsonschema.ValidationError, match=f"'{missing}' is a required property"):
        jsonschema.validate(body, served(crd_of(kind))["schema"]["openAPIV3Schema"])


def test_wrongly_typed_fields_fail_the_schema() -> None:
    body = replicated("MachineDeployment")
    body["spec"]["replicas"] = "three"

    with pytest.raises(jsonschema.ValidationError, match="is not of type 'integer'"):
        jsonschema.validate(body, served(crd_of("MachineDeployment"))["schema"]["openAPIV3Schema"])


# Printer columns ----------------------------------------------------------------------------


def test_machines_print_cluster_node_provider_phase_age_and_version() -> None:
    columns = crds.printer_columns(crd_of("Machine"), "v1beta1")

    assert [(c["name"], c["type"], c["jsonPath"]) for c in columns] == [
        ("Cluster", "string", ".spec.clusterName"),
        ("NodeName", "string", ".status.nodeRef.name"),
        ("ProviderID", "string", ".spec.providerID"),
        ("Phase", "string", ".status.phase"),
        ("Age", "date", ".metadata.creationTimestamp"),
        ("Version", "string", ".spec.version"),
    ]


def test_machinesets_and_machinedeployments_print_their_replicas() -> None:
    assert column_names("MachineSet") == [
        "Cluster",
        "Desired",
        "Replicas",
        "Ready",
        "Available",
        "Age",
        "Version",
    ]
    assert column_names("MachineDeployment") == [
        "Cluster",
        "Desired",
        "Replicas",
        "Ready",
        "Updated",
        "Unavailable",
        "Phase",
        "Age",
        "Version",
    ]


@pytest.mark.parametrize("kind", ["MachineSet", "MachineDeployment"])
def test_desired_replicas_show_only_with_wide_output(kind: str) -> None:
    columns = {c["name"]: c for c in crds.printer_columns(crd_of(kind), "v1beta1")}

    assert columns["Desired"]["priority"] == 10
    assert columns["Desired"]["jsonPath"] == ".spec.replicas"
    assert all("priority" not in c for name, c in columns.items() if name != "Desired")
    assert columns["Version"]["jsonPath"] == ".spec.template.spec.version"


def test_a_version_without_columns_prints_its_age() -> None:
    crd = crd_of("Machine")
    del served(crd)["additionalPrinterColumns"]

    assert crds.printer_columns(crd, "v1beta1") == [
        {
            "description": object_meta_description("creationTimestamp"),
            "jsonPath": ".metadata.creationTimestamp",
            "name": "Age",
            "type": "date",
        }
    ]


def test_an_unknown_version_has_no_columns() -> None:
    with pytest.raises(KeyError, match="version v1alpha4 not found in CustomResourceDefinition"):
        crds.printer_columns(crd_of("Machine"), "v1alpha4")


def test_table_headers_start_with_the_name() -> None:
    headers = crds.table_column_definitions(crd_of("Machine"), "v1beta1")

    assert headers[0] == {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": object_meta_description("name"),
        "priority": 0,
    }
    assert [h["name"] for h in headers[1:]] == column_names("Machine")
    assert headers[2] == {
        "name": "NodeName",
        "type": "string",
        "format": "",
        "description": "Node name associated with this machine",
        "priority": 0,
    }


def test_a_column_without_description_is_described_by_its_path() -> None:
    crd = crd_of("MachineSet")
    del served(crd)["additionalPrinterColumns"][0]["description"]

    header = crds.table_column_definitions(crd, "v1beta1")[1]

    assert header["description"] == (
        "Custom resource definition column (in JSONPath format): .spec.clusterName"
    )
