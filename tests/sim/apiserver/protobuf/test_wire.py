"""The protobuf decoder: kubectl's recorded bodies decode to the JSON kubectl builds, and the
wire format's corners (negative varints, packed numbers, maps, unknown and malformed fields)."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from kubemedic.sim.apiserver.protobuf import MAGIC, ProtobufError, UnsupportedKind, decode
from kubemedic.sim.apiserver.protobuf.tables import MESSAGES
from kubemedic.sim.apiserver.protobuf.wire import decode_message, table
from tests.sim.apiserver.protobuf.recording import COMMANDS, FIXTURE

RECORDED: dict[str, Any] = json.loads(FIXTURE.read_text())["commands"]


# -- encoding helpers (the test's own, minimal) ----------------------------------------------


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return MAGIC + field(1, type_meta) + field(2, raw) + field(3, "") + field(4, "")


# -- recorded bodies -------------------------------------------------------------------------


def test_the_fixture_covers_every_generator_command() -> None:
    assert set(RECORDED) == set(COMMANDS)
    assert all(e["contentType"] == "application/vnd.kubernetes.protobuf" for e in RECORDED.values())
    # kubectl takes JSON answers: it lists JSON after protobuf.
    assert all(e["accept"].endswith(",application/json") for e in RECORDED.values())


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_recorded_body_decodes_to_the_object_kubectl_built(name: str) -> None:
    entry = RECORDED[name]
    assert decode(base64.b64decode(entry["body"])) == entry["clientJson"]


def test_zero_values_follow_go_json_omitempty() -> None:
    deployment = decode(base64.b64decode(RECORDED["deployment"]["body"]))
    # Written on the wire as empty strings and zeros, left out as Go's encoder leaves them.
    assert "namespace" not in deployment["metadata"]
    assert "minReadySeconds" not in deployment["spec"]
    # Structs are never omitted; a zero Time is null.
    assert deployment["spec"]["strategy"] == {}
    assert deployment["status"] == {}
    assert deployment["metadata"]["creationTimestamp"] is None
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container == {"name": "nginx", "image": "nginx", "resources": {}}


def test_bytes_are_base64_as_in_json() -> None:
    secret = decode(base64.b64decode(RECORDED["secret"]["body"]))
    assert secret["data"] == {"a": base64.b64encode(b"b").decode()}


# -- the wire's corners ----------------------------------------------------------------------


def test_negative_and_pointer_zero_integers() -> None:
    spec = field(1, 0) + field(7, -1)  # parallelism 0 (a pointer: kept), backoffLimit -1
    job = decode_message(field(2, spec), "batch.Job")
    assert job["spec"] == {"parallelism": 0, "backoffLimit": -1}


def test_special_forms_time_quantity_int_or_string_fields_v1() -> None:
    created = field(1, 1767225600) + field(2, 5)  # nanos are dropped, as the real decoder does
    fields_v1 = field(1, b'{"f:data":{}}')
    managed = field(1, "kubectl") + field(6, "FieldsV1") + field(7, fields_v1)
    meta = field(1, "x") + field(8, created) + field(17, managed)
    got = decode_message(field(1, meta), "core.ConfigMap")
    assert got["metadata"]["creationTimestamp"] == "2026-01-01T00:00:00Z"
    assert got["metadata"]["managedFields"] == [
        {"manager": "kubectl", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}
    ]
    port = field(1, "http") + field(3, 80) + field(4, field(1, 1) + field(3, "web"))
    service = decode_message(field(2, field(1, port)), "core.Service")
    assert service["spec"]["ports"] == [{"name": "http", "port": 80, "targetPort": "web"}]
    limits = field(1, "cpu") + field(2, field(1, "500m"))
    container = field(1, "app") + field(8, field(1, limits))
    pod = decode_message(field(2, field(2, container)), "core.Pod")
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"}}


def test_packed_and_unpacked_repeated_numbers() -> None:
    name = "batch.PodFailurePolicyOnExitCodesRequirement"
    numbers = {f.json: f.number for f in table(name).values()}
    packed = field(numbers["values"], varint(1) + varint(42))
    unpacked = field(numbers["values"], 1) + field(numbers["values"], 42)
    assert decode_message(packed, name)["values"] == [1, 42]
    assert decode_message(unpacked, name)["values"] == [1, 42]


def test_unknown_fields_are_skipped() -> None:
    body = field(1, field(1, "x")) + field(99, "later field") + varint(98 << 3 | 5) + b"\0" * 4
    assert decode_message(body, "core.ConfigMap") == {"metadata": {"name": "x"}}


def test_inline_structs_join_their_parent() -> None:
    volume = field(1, "data") + field(2, field(2, b""))  # volumeSource.emptyDir
    pod = decode_message(field(2, field(1, volume)), "core.Pod")
    assert pod["spec"]["volumes"] == [{"name": "data", "emptyDir": {}}]


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b"{}", "does not appear to be a protobuf message"),
        (MAGIC + b"\x0a\x05ab", "unexpected EOF"),
        (MAGIC + b"\x0f", "illegal wireType 7"),
        (envelope("v1", "ConfigMap", field(1, 3)), "wrong wireType = 0 for field metadata"),
        (envelope("v1", "ConfigMap", field(1, field(1, b"\xff\xfe"))), "invalid UTF-8"),
        (envelope("v1", "ConfigMap", b"\x80"), "unexpected EOF"),
        (envelope("v1", "", b""), "Kind' is missing"),
    ],
)
def test_malformed_bodies_are_refused_with_the_problem(body: bytes, problem: str) -> None:
    with pytest.raises(ProtobufError, match=re.escape(problem)):
        decode(body)


def test_kinds_without_a_table_are_unsupported_not_malformed() -> None:
    with pytest.raises(UnsupportedKind):
        decode(envelope("rbac.authorization.k8s.io/v1", "Role", b""))


def test_every_message_a_table_names_has_a_table_or_a_json_form() -> None:
    special = {"meta.Time", "meta.FieldsV1", "resource.Quantity", "intstr.IntOrString"}
    for name in MESSAGES:
        for spec in table(name).values():
            for part in re.findall(r"\.(\w+\.\w+)", spec.type):
                assert part in MESSAGES or part in special, (name, spec)


def test_an_eviction_keeps_its_zero_grace_period() -> None:
    """``kubectl drain --grace-period=0`` evicts with a pointer zero: present, so kept."""
    options = field(1, 0) + field(4, "Foreground")
    body = envelope("policy/v1", "Eviction", field(1, field(1, "web-1")) + field(2, options))
    assert decode(body) == {
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": "web-1"},
        "deleteOptions": {"gracePeriodSeconds": 0, "propagationPolicy": "Foreground"},
    }
