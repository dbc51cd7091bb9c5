"""FieldsV1 decoding/encoding and field sets computed from a schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.model.fieldpaths import FieldPath, PathElement
from kubemedic.model.managedfields import (
    FieldsV1,
    ManagedFieldsError,
    decode_fieldsv1,
    encode_fieldsv1,
    fieldsv1_key,
    leaf_paths,
)
from tests import paths
from tests.model.smd import Schema, SchemaError, encode_fieldsv1_json, fieldset_from_object

from .test_fieldpaths import paths as any_paths

PEER = paths.PEER / "structured-merge-diff"
needs_peer = pytest.mark.skipif(
    not (PEER / "k8s-schema.yaml").is_file(),
    reason=f"structured-merge-diff golden files not found at {PEER}",
)
parse = FieldPath.parse


def paths_of(*texts: str) -> frozenset[FieldPath]:
    return frozenset(parse(text) for text in texts)


# --- golden files from structured-merge-diff -----------------------------------------


@pytest.fixture(scope="module")
def k8s_schema() -> Schema:
    return Schema.from_smd_yaml(yaml.safe_load((PEER / "k8s-schema.yaml").read_text()))


GOLDEN = [
    ("pod.yaml", "podset.json", "io.k8s.api.core.v1.Pod"),
    ("node.yaml", "nodeset.json", "io.k8s.api.core.v1.Node"),
    ("endpoints.yaml", "endpointsset.json", "io.k8s.api.core.v1.Endpoints"),
]


@needs_peer
@pytest.mark.parametrize(("object_file", "set_file", "type_name"), GOLDEN)
def test_object_field_set_matches_the_upstream_golden_set(
    k8s_schema: Schema, object_file: str, set_file: str, type_name: str
) -> None:
    obj = yaml.safe_load((PEER / object_file).read_text())
    golden_text = (PEER / set_file).read_text().strip()
    golden = json.loads(golden_text)

    fieldset = fieldset_from_object(obj, k8s_schema, type_name=type_name)

    assert fieldset == decode_fieldsv1(golden)
    assert encode_fieldsv1(fieldset) == golden
    assert encode_fieldsv1_json(fieldset) == golden_text


@needs_peer
@pytest.mark.parametrize("set_file", [set_file for _, set_file, _ in GOLDEN])
def test_encoding_a_decoded_golden_set_reproduces_its_bytes(set_file: str) -> None:
    golden_text = (PEER / set_file).read_text().strip()
    assert encode_fieldsv1_json(decode_fieldsv1(json.loads(golden_text))) == golden_text


@needs_peer
def test_pod_golden_set_owns_the_expected_leaves() -> None:
    fieldset = decode_fieldsv1(json.loads((PEER / "podset.json").read_text()))
    leaves = leaf_paths(fieldset)
    env = "spec.containers[name=some-name].env[name=VAR_1]"
    assert parse(f"{env}.valueFrom.secretKeyRef.key") in leaves
    assert parse(env) in fieldset and parse(env) not in leaves
    assert parse("spec.tolerations") in leaves  # an atomic list is one leaf
    assert parse("metadata.labels.app") in leaves


# --- FieldsV1 as managers write it ---------------------------------------------------


def test_kubectl_edit_entry_decodes_to_the_node_name_path() -> None:
    fields: FieldsV1 = {"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}}
    assert decode_fieldsv1(fields) == paths_of("spec.template.spec.nodeName")
    assert encode_fieldsv1(decode_fieldsv1(fields)) == fields


def test_container_env_entry_decodes_to_keyed_paths() -> None:
    fields: FieldsV1 = {
        "f:spec": {
            "f:template": {
                "f:spec": {
                    "f:containers": {
                        'k:{"name":"api"}': {
                            "f:env": {
                                ".": {},
                                'k:{"name":"DEBUG"}': {".": {}, "f:name": {}, "f:value": {}},
                            }
                        }
                    }
                }
            }
        }
    }
    env = "spec.template.spec.containers[name=api].env"
    owned = decode_fieldsv1(fields)
    assert owned == paths_of(
        env, f"{env}[name=DEBUG]", f"{env}[name=DEBUG].name", f"{env}[name=DEBUG].value"
    )
    assert leaf_paths(owned) == [
        parse(f"{env}[name=DEBUG].name"),
        parse(f"{env}[name=DEBUG].value"),
    ]
    assert encode_fieldsv1(owned) == fields


def test_multi_field_key_keeps_json_types_and_sorted_names() -> None:
    fields: FieldsV1 = {
        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:name": {}}}
    }
    port = parse("ports[containerPort=80,protocol=TCP]")
    assert decode_fieldsv1(fields) == {port, port.child("name")}
    assert port[1].key_fields == (("containerPort", 80), ("protocol", "TCP"))
    reordered: FieldsV1 = {
        "f:ports": {'k:{"protocol":"TCP","containerPort":80}': {".": {}, "f:name": {}}}
    }
    assert encode_fieldsv1(decode_fieldsv1(reordered)) == fields


def test_set_items_and_positions_decode_to_value_and_index_elements() -> None:
    fields: FieldsV1 = {
        "f:metadata": {"f:finalizers": {".": {}, 'v:"foregroundDeletion"': {}}},
        "f:args": {"i:0": {}},
    }
    assert decode_fieldsv1(fields) == paths_of(
        "metadata.finalizers", "metadata.finalizers[=foregroundDeletion]", "args[0]"
    )


def test_dot_marks_a_member_only_when_it_also_has_children() -> None:
    assert encode_fieldsv1(paths_of("a")) == {"f:a": {}}
    assert encode_fieldsv1(paths_of("a.b")) == {"f:a": {"f:b": {}}}
    assert encode_fieldsv1(paths_of("a", "a.b")) == {"f:a": {".": {}, "f:b": {}}}
    assert decode_fieldsv1({"f:a": {"f:b": {}}}) == paths_of("a.b")


def test_children_are_written_in_the_api_servers_order() -> None:
    ports = parse("ports")
    owned = {
        ports,
        ports.child(PathElement.index(2)),
        ports.child(PathElement.value("x")),
        ports.child(PathElement.key({"port": 80})),
        ports.child(PathElement.key({"port": 9})),
        ports.child(PathElement.key({"port": 10})),
        ports.child("z"),
        ports.child("a"),
    }
    assert encode_fieldsv1_json(owned) == (
        '{"f:ports":{".":{},"f:a":{},"f:z":{},'
        '"k:{\\"port\\":9}":{},"k:{\\"port\\":10}":{},"k:{\\"port\\":80}":{},'
        '"v:\\"x\\"":{},"i:2":{}}}'
    )


def test_path_elements_have_their_fieldsv1_spelling() -> None:
    assert fieldsv1_key(PathElement.field("a.b")) == "f:a.b"
    assert fieldsv1_key(PathElement.key({"protocol": "TCP", "containerPort": 80})) == (
        'k:{"containerPort":80,"protocol":"TCP"}'
    )
    assert fieldsv1_key(PathElement.value(True)) == "v:true"
    assert fieldsv1_key(PathElement.index(3)) == "i:3"


def test_the_root_path_cannot_be_encoded() -> None:
    with pytest.raises(ValueError, match="root path"):
        encode_fieldsv1([FieldPath()])


def test_leaf_paths_skip_intermediate_members() -> None:
    owned = paths_of("metadata", "metadata.labels", 'metadata.labels["a.b"]', "spec.replicas")
    assert leaf_paths(owned) == [parse('metadata.labels["a.b"]'), parse("spec.replicas")]


@pytest.mark.parametrize(
    ("fields", "key", "where", "reason"),
    [
        ({"f:spec": {"x:foo": {}}}, "x:foo", "spec", "expected a prefix"),
        ({"spec": {}}, "spec", "<root>", "expected a prefix"),
        (
            {"f:spec": {"f:containers": {"k:{name:api}": {}}}},
            "k:{name:api}",
            "spec.containers",
            "invalid JSON",
        ),
        ({"f:c": {"k:[1]": {}}}, "k:[1]", "c", "non-empty JSON object"),
        ({"f:c": {"k:{}": {}}}, "k:{}", "c", "non-empty JSON object"),
        ({"f:c": {"v:{": {}}}, "v:{", "c", "invalid JSON"),
        ({"f:c": {"i:x": {}}}, "i:x", "c", "non-negative integer"),
        ({"f:c": {"i:-1": {}}}, "i:-1", "c", "non-negative integer"),
        ({"f:spec": []}, "f:spec", "<root>", "expected an object as value, got list"),
        ({"f:spec": {"f:a": None}}, "f:a", "spec", "expected an object as value, got NoneType"),
        ({"f:spec": {".": {"x": 1}, "f:a": {}}}, ".", "spec", "'.' must map to {}"),
        ({".": {}}, ".", "<root>", "root cannot be a member"),
    ],
)
def test_malformed_fieldsv1_raises_naming_the_key_and_path(
    fields: dict[str, Any], key: str, where: str, reason: str
) -> None:
    with pytest.raises(ManagedFieldsError) as caught:
        decode_fieldsv1(fields)
    message = str(caught.value)
    assert f"invalid FieldsV1 key {key!r} under {where}" in message
    assert reason in message
    assert caught.value.key == key


@given(st.frozensets(any_paths.filter(len), max_size=12))
def test_decode_inverts_encode(owned: frozenset[FieldPath]) -> None:
    encoded = encode_fieldsv1(owned)
    assert decode_fieldsv1(encoded) == owned
    assert json.loads(encode_fieldsv1_json(owned)) == encoded


@given(st.frozensets(any_paths.filter(len), max_size=12))
def test_encode_inverts_decode_on_server_written_documents(owned: frozenset[FieldPath]) -> None:
    text = encode_fieldsv1_json(owned)
    assert encode_fieldsv1_json(decode_fieldsv1(json.loads(text))) == text


# --- schema-driven field sets --------------------------------------------------------

SCHEMA = Schema.from_smd_yaml(
    {
        "types": [
            {
                "name": "Thing",
                "map": {
                    "fields": [
                        {
                            "name": "items",
                            "type": {
                                "list": {
                                    "elementType": {"namedType": "Item"},
                                    "elementRelationship": "associative",
                                    "keys": ["name", "proto"],
                                }
                            },
                        },
                        {
                            "name": "tags",
                            "type": {
                                "list": {
                                    "elementType": {"scalar": "string"},
                                    "elementRelationship": "associative",
                                }
                            },
                        },
                        {
                            "name": "args",
                            "type": {
                                "list": {
                                    "elementType": {"scalar": "string"},
                                    "elementRelationship": "atomic",
                                }
                            },
                        },
                        {
                            "name": "steps",
                            "type": {
                                "list": {
                                    "elementType": {"namedType": "Item"},
                                    "elementRelationship": "separable",
                                }
                            },
                        },
                        {"name": "labels", "type": {"map": {"elementType": {"scalar": "string"}}}},
                        {
                            "name": "selector",
                            "type": {"namedType": "Item", "elementRelationship": "atomic"},
                        },
                        {"name": "raw", "type": {"namedType": "__untyped_atomic_"}},
                        {"name": "loose", "type": {"namedType": "__untyped_deduced_"}},
                        {"name": "count", "type": {"scalar": "numeric"}},
                    ]
                },
            },
            {
                "name": "Item",
                "map": {
                    "fields": [
                        {"name": "name", "type": {"scalar": "string"}},
                        {"name": "proto", "type": {"scalar": "string"}, "default": "TCP"},
                        {"name": "value", "type": {"scalar": "string"}},
                    ]
                },
            },
        ]
    }
)


def owned_by(obj: dict[str, Any]) -> set[str]:
    return {str(path) for path in fieldset_from_object(obj, SCHEMA, type_name="Thing")}


def test_associative_lists_use_merge_keys_and_key_defaults() -> None:
    obj = {"items": [{"name": "a", "proto": "UDP", "value": "1"}, {"name": "b"}]}
    assert owned_by(obj) == {
        "items",
        "items[name=a,proto=UDP]",
        "items[name=a,proto=UDP].name",
        "items[name=a,proto=UDP].proto",
        "items[name=a,proto=UDP].value",
        "items[name=b,proto=TCP]",
        "items[name=b,proto=TCP].name",
    }


def test_keyless_associative_lists_are_sets() -> None:
    assert owned_by({"tags": ["x", "y"]}) == {"tags", "tags[=x]", "tags[=y]"}


def test_atomic_lists_maps_and_untyped_atomic_values_are_single_leaves() -> None:
    obj = {"args": ["a"], "selector": {"name": "x"}, "raw": {"a": [1]}, "count": 3}
    assert owned_by(obj) == {"args", "selector", "raw", "count"}


def test_separable_lists_use_positions() -> None:
    assert owned_by({"steps": [{"value": "1"}]}) == {"steps", "steps[0]", "steps[0].value"}


def test_string_maps_own_each_key() -> None:
    assert owned_by({"labels": {"app": "x", "a.b/c": "y"}}) == {
        "labels",
        "labels.app",
        'labels["a.b/c"]',
    }


def test_deduced_and_unknown_fields_walk_maps_but_keep_lists_atomic() -> None:
    obj = {"loose": {"a": {"b": 1}, "l": [1, 2]}, "extra": {"c": [{"d": 1}]}}
    assert owned_by(obj) == {"loose", "loose.a", "loose.a.b", "loose.l", "extra", "extra.c"}


def test_null_and_empty_values_are_leaves() -> None:
    assert owned_by({"items": [], "labels": {}, "selector": None, "count": None}) == {
        "items",
        "labels",
        "selector",
        "count",
    }


def test_repeated_list_items_are_owned_once() -> None:
    assert owned_by({"tags": ["x", "x"]}) == {"tags", "tags[=x]"}


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ({"items": [{"value": "1"}]}, "items[0]: list item has no key field 'name'"),
        ({"items": ["a"]}, "items[0]: keyed list items must be maps"),
        ({"tags": [{"a": 1}]}, "tags[0]: set items must be scalars"),
    ],
)
def test_objects_that_do_not_fit_the_schema_raise_schema_error(
    obj: dict[str, Any], reason: str
) -> None:
    with pytest.raises(SchemaError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        owned_by(obj)


def test_unknown_type_names_raise_schema_error() -> None:
    with pytest.raises(SchemaError, match="unknown type 'Nope'"):
        fieldset_from_object({}, SCHEMA, type_name="Nope")


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({}, "'types' must be a list"),
        ({"types": [{"map": {}}]}, "without a name"),
        (
            {"types": [{"name": "T", "list": {"elementRelationship": "sideways"}}]},
            "unknown elementRelationship",
        ),
        ({"types": [{"name": "T", "list": {"keys": "name"}}]}, "keys must be a list"),
    ],
)
def test_malformed_schemas_raise_schema_error(document: dict[str, Any], reason: str) -> None:
    with pytest.raises(SchemaError, match=reason):
        Schema.from_smd_yaml(document)
