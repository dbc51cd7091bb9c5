"""What the write path remembers or skips changes nothing it answers.

Decoding checks a body in one walk and remembers whole parts by their JSON; strategic merge
copies only what a patch may change; validation, pod defaulting and name syntax remember their
results; ownership of a create is remembered by the created object's shape; clocks format once a
second. Each must agree with the plain computation, and a sequence of writes must store the very
same objects whether everything is remembered or everything forgotten before each write.
"""

from __future__ import annotations

import copy
import math
from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic.model import names
from kubemedic.sim.apiserver.fields import fieldentries, fieldmanaging, fieldsets, fieldtrees
from kubemedic.sim.apiserver.patches import patching, strategic
from kubemedic.sim.apiserver.registry import decoding, defaulting, validating, validating_pods
from kubemedic.sim.apiserver.registry.writing import WriteOptions
from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.machinery import errors, naming
from kubemedic.sim.machinery import objects as sim_objects
from kubemedic.sim.machinery.clock import VirtualClock, http_date, rfc3339
from kubemedic.sim.machinery.definitions import SchemaNode, definitions
from tests.sim.arbitrary import (
    KINDS,
    NAMES,
    VALID_NAMES,
    mutated,
    objects,
    small_text,
    strategic_patches,
)

Obj = dict[str, Any]
TYPED = ["Deployment", "Pod"]


def forget_everything() -> None:
    """Empty every cache of the write path, as a process that just started."""
    for table in (
        fieldmanaging._CREATED,
        fieldmanaging._PREFIXES,
        fieldentries._STORED,
        fieldtrees._ITEM_KEYS,
        fieldtrees._SORT_KEYS,
        fieldtrees._ELEMENTS,
        fieldsets._SHAPES,
        decoding._CLEAN,
        decoding._PLANS,
        validating_pods._MEMO,
        defaulting._DEFAULTED,
        names._COMPILED,
    ):
        table.clear()
    for cached in (
        fieldmanaging._reset_fields,
        fieldentries._agent_name,
        fieldentries._field_manager_causes,
        fieldentries._identity,
        naming._string_labels,
        naming._label,
        names._qualified_name,
        names._dns1123_label,
        names._dns1123_subdomain,
        names._dns1035_label,
        names._label_value,
    ):
        cached.cache_clear()


# --- decoding ----------------------------------------------------------------------------------


@st.composite
def decodable_or_not(draw: st.DrawFn, kind: str) -> Obj:
    obj = draw(mutated(draw(objects(kind))))
    if draw(st.booleans()):  # a quantity that may be none
        spec = obj.get("spec")
        if kind == "Deployment" and isinstance(spec, dict):
            template = spec.get("template")
            spec = template.get("spec") if isinstance(template, dict) else None
        containers = spec.get("containers") if isinstance(spec, dict) else None
        if isinstance(containers, list) and containers and isinstance(containers[0], dict):
            quantity = draw(st.one_of(small_text, st.sampled_from(["64Mi", "1.5", "2x"])))
            containers[0]["resources"] = {"limits": {"memory": quantity}}
    return obj


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(TYPED))
def test_one_clean_walk_agrees_with_the_decoders_walks(data: st.DataObject, kind: str) -> None:
    schema = KINDS[kind][2]
    assert schema is not None
    obj = data.draw(decodable_or_not(kind))
    plain = not decoding.unknown_fields(obj, schema) and (
        decoding.decoding_error(obj, schema, kind=kind, version="v1") is None
    )
    assert decoding.is_clean(obj, schema) is plain
    assert decoding.is_clean(obj, schema) is plain  # remembered parts
    raw = orjson.dumps(obj)
    assert decoding.is_clean(obj, schema, raw=raw) is plain


def test_a_body_repeating_a_key_is_never_called_clean() -> None:
    schema = KINDS["Pod"][2]
    assert schema is not None
    raw = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","name":"b"}}'
    obj = orjson.loads(raw)
    assert decoding.unknown_fields(obj, schema, raw=raw) == ['duplicate field "metadata.name"']
    assert not decoding.is_clean(obj, schema, raw=raw)


# --- patching ----------------------------------------------------------------------------------


def _outcome(run: Any) -> Any:
    """What ``run`` returns, or the error it raises (values of the wrong shape reach a few
    ``TypeError``\\ s in validation: they must be the same ones)."""
    try:
        return run()
    except patching.PatchError as err:
        return (err.code, err.message)
    except TypeError as err:
        return ("TypeError", str(err))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(TYPED))
def test_strategic_merge_copies_only_what_it_may_change(data: st.DataObject, kind: str) -> None:
    schema = KINDS[kind][2]
    original = data.draw(mutated(data.draw(objects(kind))))
    patch = data.draw(strategic_patches(original))
    before = copy.deepcopy(original)
    expected = _outcome(
        lambda: strategic._merge_map(
            sim_objects._clone(original), sim_objects._clone(patch), schema
        )
    )
    got = _outcome(lambda: patching.strategic_merge_patch(original, patch, schema))
    assert orjson.dumps(got) == orjson.dumps(expected)
    assert original == before


@pytest.mark.parametrize(
    "value",
    [{"a": [1, 2.5, None, True, "x"]}, {"t": (1, 2)}, {"n": math.nan}, [2**70], {"d": {1: 2}}],
    ids=["json", "tuple", "nan", "huge", "int-key"],
)
def test_a_clone_is_the_plain_deep_copy(value: Any) -> None:
    copied = sim_objects.clone(value)
    reference = sim_objects._clone(value)
    assert copied is not value
    assert repr(copied) == repr(reference)


# --- validation, defaulting, names -------------------------------------------------------------


def _spec(obj: Obj) -> Obj:
    spec = obj.get("spec")
    return spec if isinstance(spec, dict) else {}


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_remembered_validation_is_the_validation(data: st.DataObject) -> None:
    old = data.draw(objects("Pod"))
    defaulting.default_object(old, group="", version="v1", kind="Pod")
    new = data.draw(mutated(old))
    fresh = _outcome(lambda: validating_pods._pod_spec(copy.deepcopy(_spec(new)), "spec"))
    assert _outcome(lambda: validating_pods.pod_spec(_spec(new), "spec")) == fresh
    assert _outcome(lambda: validating_pods.pod_spec(_spec(new), "spec")) == fresh

    def causes() -> list[errors.Cause]:
        return validating.validate(
            new, old=old, group="", version="v1", kind="Pod", namespaced=True
        )

    validating_pods._MEMO.clear()
    first = _outcome(causes)
    assert _outcome(causes) == first


@settings(max_examples=200)
@given(data=st.data())
def test_remembered_pod_defaults_are_the_defaults(data: st.DataObject) -> None:
    pod = data.draw(mutated(data.draw(objects("Pod"))))
    expected = copy.deepcopy(pod)
    defaulting._default_pod(expected)
    for _ in range(2):  # computed, then remembered
        got = copy.deepcopy(pod)
        defaulting.default_object(got, group="", version="v1", kind="Pod")
        assert orjson.dumps(got) == orjson.dumps(expected)


@given(labels=st.dictionaries(st.sampled_from([*NAMES, "a/b/c", "-x", "A" * 64]), small_text))
def test_remembered_label_checks_are_the_checks(labels: dict[str, str]) -> None:
    expected = naming._labels(labels, "metadata.labels")
    assert naming.labels(labels, "metadata.labels") == expected
    assert naming.labels(labels, "metadata.labels") == expected


def _reference_shape(node: SchemaNode | None, value: Any) -> fieldsets.Shape:
    """``shape_of`` as it read before shapes were remembered per node."""
    is_map = value is None or isinstance(value, dict)
    if node is None or node.kind == "any":
        return fieldsets.Shape("map") if is_map else fieldsets.LEAF
    if node.kind in ("struct", "map"):
        return (
            fieldsets.Shape("map", node) if is_map and node.map_type != "atomic" else fieldsets.LEAF
        )
    if node.kind == "list" and (value is None or isinstance(value, list)):
        if node.list_type == "map":
            return fieldsets.Shape("keyed", node.items, node.list_map_keys)
        if node.list_type == "set":
            return fieldsets.Shape("set", node.items)
    return fieldsets.LEAF


def test_remembered_shapes_are_the_shapes() -> None:
    defs = definitions()
    nodes: list[SchemaNode | None] = [None]
    for name in list(defs.raw)[:400]:
        named = defs.node(name)
        nodes.append(named)
        nodes.extend(named.field(field) for field in named.properties)
    for node in nodes:
        for value in (None, {}, {"a": 1}, [], [1], "x", 1, True):
            assert fieldsets.shape_of(node, value) == _reference_shape(node, value)


# --- clocks ------------------------------------------------------------------------------------


def test_timestamps_formatted_once_a_second_are_the_timestamps() -> None:
    clock = VirtualClock(datetime(2024, 5, 1, 10, 0, 0, 900_000, tzinfo=UTC), paused=True)
    writer = ApiServer(clock=clock).writer
    for _ in range(8):
        assert writer.now() == rfc3339(clock.now())
        assert http_date(clock.now()) == format_datetime(clock.now(), usegmt=True)
        clock.advance(0.35)


# --- whole writes ------------------------------------------------------------------------------


def _server() -> ApiServer:
    clock = VirtualClock(datetime(2024, 5, 1, 10, 0, tzinfo=UTC), paused=True)
    return ApiServer(clock=clock)


def _write(server: ApiServer, step: tuple[str, Any], kind: str) -> bytes:
    res = server.registry.for_kind(KINDS[kind][1], kind)
    assert res is not None
    key = ("default", "x")
    action, body = step
    try:
        if action == "create":
            obj = server.writer.create(res, "default", copy.deepcopy(body), WriteOptions("a"))
        elif action == "update":
            obj = server.writer.update(res, key, copy.deepcopy(body), WriteOptions("b"))
        elif action == "status":
            opts = WriteOptions("c")
            obj = server.writer.update(res, key, copy.deepcopy(body), opts, subresource="status")
        else:
            obj = server.writer.patch(
                res, key, orjson.dumps(body), WriteOptions("d"), content_type=action
            )
    except errors.StatusError as err:
        return orjson.dumps([err.code, err.message])
    except (AttributeError, TypeError) as err:  # bodies of the wrong shape reach a few bugs
        return orjson.dumps([type(err).__name__, str(err)])
    server.clock.advance(1.5)
    shown = {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
    return orjson.dumps(shown)


@st.composite
def writes(draw: st.DrawFn, kind: str) -> list[tuple[str, Any]]:
    first = draw(objects(kind, valid=True))
    first["metadata"]["name"] = "x"
    steps: list[tuple[str, Any]] = [("create", first)]
    current = first
    for _ in range(draw(st.integers(1, 4))):
        action = draw(
            st.sampled_from(
                [
                    "update",
                    "status",
                    "application/strategic-merge-patch+json",
                    "application/merge-patch+json",
                ]
            )
        )
        if action in ("update", "status"):
            current = draw(mutated(current))
            steps.append((action, current))
        elif action.startswith("application/strategic"):
            steps.append((action, draw(strategic_patches(current))))
        else:
            label = {draw(st.sampled_from(VALID_NAMES)): draw(st.sampled_from(["x", None]))}
            steps.append((action, {"metadata": {"labels": label}}))
    return steps


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(TYPED))
def test_writes_store_the_same_objects_remembered_or_forgotten(
    data: st.DataObject, kind: str
) -> None:
    steps = data.draw(writes(kind))
    remembering, forgetting = _server(), _server()
    for step in steps:
        remembered = _write(remembering, step, kind)
        forget_everything()
        forgetting.writer._now = (math.nan, "")
        assert _write(forgetting, step, kind) == remembered


def test_pods_of_one_template_own_the_same_fields_each_at_its_time() -> None:
    server = _server()
    res = server.registry.for_kind("v1", "Pod")
    assert res is not None
    body: Obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a", "labels": {"x": "1"}}}
    body["spec"] = {"containers": [{"name": "c", "image": "nginx"}]}
    first = server.writer.create(res, "default", copy.deepcopy(body), WriteOptions("m"))
    body["metadata"]["name"] = "b"
    server.clock.advance(3)
    second = server.writer.create(res, "default", copy.deepcopy(body), WriteOptions("m"))
    one, two = first["metadata"]["managedFields"][0], second["metadata"]["managedFields"][0]
    assert one["fieldsV1"] == two["fieldsV1"]
    assert one["time"] != two["time"]
