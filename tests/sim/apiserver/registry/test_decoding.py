"""Field validation while decoding, worded as kube-apiserver 1.32 words it.

The strict-decoding expectations are those of kube-apiserver's own integration test
(``test/integration/apiserver/field_validation_test.go``).
"""

from __future__ import annotations

import json

import pytest

from kubemedic.sim.apiserver.registry import decoding
from kubemedic.sim.machinery.definitions import definitions
from tests.factories import container, deployment, pod
from tests.sim.manifests import manifest

DEPLOYMENT = definitions().for_kind("apps", "v1", "Deployment")

#: ``invalidBodyJSON`` of kube-apiserver's field validation integration test.
INVALID_BODY = b"""{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": "dupename", "name": "web", "unknownMeta": "metaVal",
               "labels": {"app": "nginx"}},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {
      "metadata": {"labels": {"app": "nginx"}},
      "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
                               "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}
    }
  }
}"""


def test_strict_decoding_reports_unknown_and_duplicate_fields_in_document_order() -> None:
    problems = decoding.unknown_fields(json.loads(INVALID_BODY), DEPLOYMENT, raw=INVALID_BODY)
    assert problems == [
        'duplicate field "metadata.name"',
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'duplicate field "spec.paused"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
        'duplicate field "spec.template.spec.containers[0].imagePullPolicy"',
    ]


def test_strict_error_is_the_decoders_bad_request() -> None:
    problems = decoding.unknown_fields(json.loads(INVALID_BODY), DEPLOYMENT, raw=INVALID_BODY)
    error = decoding.strict_error(problems[:2], kind="Deployment", version="v1")
    assert (error.code, error.reason) == (400, "BadRequest")
    assert error.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
        'duplicate field "metadata.name", unknown field "metadata.unknownMeta"'
    )


def test_a_valid_body_has_no_field_problems() -> None:
    body = manifest(deployment("web"))
    raw = json.dumps(body).encode()
    assert decoding.unknown_fields(body, DEPLOYMENT, raw=raw) == []


def test_without_the_body_bytes_only_unknown_fields_are_found() -> None:
    problems = decoding.unknown_fields(json.loads(INVALID_BODY), DEPLOYMENT)
    assert problems == [
        'unknown field "metadata.unknownMeta"',
        'unknown field "spec.unknown1"',
        'unknown field "spec.unknownDupe"',
        'unknown field "spec.template.spec.containers[0].unknownNested"',
    ]


def test_a_yaml_body_falls_back_to_the_decoded_object() -> None:
    body = manifest(deployment("web"))
    body["spec"]["bogus"] = 1
    raw = b"apiVersion: apps/v1\nkind: Deployment\n"
    assert decoding.unknown_fields(body, DEPLOYMENT, raw=raw) == ['unknown field "spec.bogus"']


def test_duplicate_map_keys_are_reported_with_their_path() -> None:
    raw = b'{"metadata": {"name": "web", "labels": {"app": "a", "app": "b"}}}'
    assert decoding.unknown_fields(json.loads(raw), DEPLOYMENT, raw=raw) == [
        'duplicate field "metadata.labels.app"'
    ]


def test_free_form_values_accept_anything() -> None:
    body = manifest(deployment("web"))
    body["metadata"]["managedFields"] = [
        {"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:anything": {}}}}
    ]
    assert decoding.unknown_fields(body, DEPLOYMENT) == []


def test_schemaless_custom_resources_check_only_metadata_after_duplicates() -> None:
    raw = (
        b'{"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",'
        b' "metadata": {"name": "m1", "name": "m1", "unknownMeta": 1},'
        b' "spec": {"anything": {"goes": true, "goes": false}, "clusterName": "c"}}'
    )
    assert decoding.unknown_fields(json.loads(raw), None, raw=raw) == [
        'duplicate field "metadata.name"',
        'duplicate field "spec.anything.goes"',
        'unknown field "metadata.unknownMeta"',
    ]


def test_prune_unknown_drops_exactly_what_is_reported() -> None:
    body = json.loads(INVALID_BODY)
    decoding.prune_unknown(body, DEPLOYMENT)
    assert decoding.unknown_fields(body, DEPLOYMENT) == []
    assert "unknown1" not in body["spec"]
    assert body["spec"]["paused"] is False
    assert "unknownNested" not in body["spec"]["template"]["spec"]["containers"][0]

    machine = {"metadata": {"name": "m1", "bogus": 1}, "spec": {"free": {"form": 1}}}
    decoding.prune_unknown(machine, None)
    assert machine == {"metadata": {"name": "m1"}, "spec": {"free": {"form": 1}}}


@pytest.mark.parametrize(
    ("quantity", "problem"),
    [
        ("1Gb", "unable to parse quantity's suffix"),
        ("lots", "quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ],
)  # fmt: skip
def test_a_value_that_is_no_quantity_is_a_bad_request(quantity: str, problem: str) -> None:
    body = manifest(pod("p", containers=[container("main", limits={"memory": quantity})]))
    error = decoding.decoding_error(
        body, definitions().for_kind("", "v1", "Pod"), kind="Pod", version="v1"
    )
    assert error is not None
    assert error.code == 400
    assert error.message == f'Pod in version "v1" cannot be handled as a Pod: {problem}'


def test_a_value_of_the_wrong_json_type_is_a_bad_request() -> None:
    body = manifest(deployment("web"))
    body["spec"]["replicas"] = "three"
    error = decoding.decoding_error(body, DEPLOYMENT, kind="Deployment", version="v1")
    assert error is not None
    assert error.message == (
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        "string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )


def test_decodable_bodies_pass() -> None:
    body = manifest(deployment("web", containers=[container("web", limits={"cpu": 2})]))
    body["spec"]["template"]["metadata"]["creationTimestamp"] = None
    assert decoding.decoding_error(body, DEPLOYMENT, kind="Deployment", version="v1") is None
    assert decoding.decoding_error({"x": 1}, None, kind="Machine", version="v1beta1") is None


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (
            ("spec", "selector", "matchLabels"),
            -1,
            "number into Go struct field "
            "LabelSelector.spec.selector.matchLabels of type map[string]string",
        ),
        (
            ("spec", "selector"),
            "app=web",
            "string into Go struct field DeploymentSpec.spec.selector of type v1.LabelSelector",
        ),
        (
            ("spec", "selector", "matchExpressions"),
            {"key": "a"},
            "object into Go struct field "
            "LabelSelector.spec.selector.matchExpressions of type []v1.LabelSelectorRequirement",
        ),
    ],
)
def test_an_object_map_or_list_of_the_wrong_json_type_is_a_bad_request(
    path: tuple[str, ...], value: object, words: str
) -> None:
    body = manifest(deployment("web"))
    parent = body
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    assert not decoding.is_clean(body, DEPLOYMENT)
    error = decoding.decoding_error(body, DEPLOYMENT, kind="Deployment", version="v1")
    assert error is not None and error.code == 400
    assert error.message == (
        f'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal '
        f"{words}"
    )
