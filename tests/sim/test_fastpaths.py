"""The write path's fast ways agree with the plain statements of what they compute.

Ownership is recorded on FieldsV1 trees (``record_update``) and must give exactly the entries,
in exactly the bytes, that the set-based chain (``record_update_by_sets``) gives, for creates
and for updates by any mix of managers, through the main resource and ``/status``, with
repeated list keys, items without their key, deduced (schemaless) values and values of the
wrong shape. Encoding and canonicalising trees must equal the model's ``encode_fieldsv1``.
"""

from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubemedic.model.fieldpaths import FieldPath
from kubemedic.model.managedfields import ManagedFieldsError, decode_fieldsv1, encode_fieldsv1
from kubemedic.sim.apiserver.fields import fieldentries, fieldmanaging, fieldsets, fieldtrees
from tests.factories import container, pod
from tests.sim.arbitrary import KINDS, MANAGERS, TIMES, mutated, objects
from tests.sim.manifests import manifest

Obj = dict[str, Any]


def _both(
    managed: fieldmanaging.Managed, live: Obj, new: Obj, **how: Any
) -> tuple[bytes, bytes, fieldmanaging.Managed]:
    """Record one update both ways; the encoded entries of each (or the error each raised)."""
    outcomes = []
    results = []
    for record in (fieldmanaging.record_update, fieldmanaging.record_update_by_sets):
        books = dict(managed)
        try:
            record(books, copy.deepcopy(live), copy.deepcopy(new), **how)
        except fieldsets.TypedError:
            outcomes.append(b"TypedError")
            results.append(managed)
            continue
        outcomes.append(orjson.dumps(fieldmanaging.encode_managed(books)))
        results.append(books)
    return outcomes[0], outcomes[1], results[1]


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(sorted(KINDS)))
def test_recording_on_trees_equals_recording_on_sets(data: st.DataObject, kind: str) -> None:
    group, api_version, schema = KINDS[kind]
    obj = data.draw(objects(kind))
    managed: fieldmanaging.Managed = {}
    live = fieldsets.typed_zero(group=group, kind=kind, schema=schema)
    for step in range(data.draw(st.integers(1, 5))):
        new = obj if step == 0 else data.draw(mutated(live))
        subresource = data.draw(st.sampled_from(["", "", "status"])) if step else ""
        manager = data.draw(st.sampled_from(MANAGERS))
        how = {
            "writer": fieldmanaging.Identity.of(manager, "Update", api_version, subresource),
            "schema": schema,
            "time": TIMES[step % len(TIMES)],
            "ignored": fieldmanaging.reset_fields(
                group=group, kind=kind, schema=schema, subresource=subresource
            ),
        }
        by_trees, by_sets, managed = _both(managed, live, new, **how)
        assert by_trees == by_sets
        if managed and by_sets != b"TypedError":
            stored = fieldmanaging.encode_managed(managed)
            # The next write reads the entries back as the store keeps them, or as a client
            # sends them (decoded afresh).
            fresh = data.draw(st.booleans())
            managed = fieldentries.decode_managed(orjson.loads(orjson.dumps(stored)), keep=fresh)
        live = new


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), kind=st.sampled_from(sorted(KINDS)))
def test_a_create_remembered_or_not_owns_what_the_sets_say(data: st.DataObject, kind: str) -> None:
    group, api_version, schema = KINDS[kind]
    obj = data.draw(mutated(data.draw(objects(kind))))
    if not isinstance(obj.get("metadata"), dict):
        obj["metadata"] = {}
    named = str(obj.get("kind") or "")  # what the object says it is, as track_update reads it
    ignored = fieldmanaging.reset_fields(group=group, kind=named, schema=schema, subresource="")
    writer = fieldmanaging.Identity.of("kubectl", "Update", api_version, "")
    zero = fieldsets.typed_zero(group=group, kind=named, schema=schema)
    for name in ("first", "second"):  # computed, then remembered
        new = copy.deepcopy(obj)
        new["metadata"]["name"] = name
        books: fieldmanaging.Managed = {}
        try:
            fieldmanaging.record_update_by_sets(
                books, zero, copy.deepcopy(new), writer=writer, schema=schema, time=TIMES[0],
                ignored=ignored,
            )  # fmt: skip
            expected = fieldmanaging.encode_managed(books) if books else None
        except fieldsets.TypedError:
            expected = None
        fieldmanaging.track_update(
            old=None, new=new, manager="kubectl", time=TIMES[0], api_version=api_version,
            schema=schema,
        )  # fmt: skip
        assert orjson.dumps(new["metadata"].get("managedFields")) == orjson.dumps(expected)


def test_a_create_records_the_same_entry_either_way() -> None:
    schema = KINDS["Pod"][2]
    body = manifest(pod("p", namespace="default", labels={"app": "web", "tier": "db"}))
    body["spec"]["containers"] = [container("main"), container("side")]
    body["spec"]["containers"][0]["ports"] = [{"containerPort": 80}, {"containerPort": 81}]
    zero = fieldsets.typed_zero(group="", kind="Pod", schema=schema)
    how: dict[str, Any] = {
        "writer": fieldmanaging.Identity.of("kubectl", "Update", "v1", ""),
        "schema": schema,
        "time": TIMES[0],
        "ignored": fieldmanaging.reset_fields(group="", kind="Pod", schema=schema, subresource=""),
    }
    by_trees, by_sets, _ = _both({}, zero, body, **how)
    assert by_trees == by_sets
    fields = orjson.loads(by_trees)[0]["fieldsV1"]
    assert list(fields) == ["f:metadata", "f:spec"]
    ports = fields["f:spec"]["f:containers"]['k:{"name":"main"}']["f:ports"]
    assert list(ports) == [
        ".",
        'k:{"containerPort":80,"protocol":"TCP"}',
        'k:{"containerPort":81,"protocol":"TCP"}',
    ]


def test_a_list_repeating_a_key_on_both_sides_is_left_to_the_set_walk() -> None:
    schema = KINDS["Pod"][2]
    live = manifest(pod("p", namespace="default"))
    live["spec"]["containers"] = [container("main"), container("main")]
    new = copy.deepcopy(live)
    new["spec"]["containers"].pop()
    with pytest.raises(fieldtrees.Duplicates):
        fieldtrees.compare(live, new, schema)
    how: dict[str, Any] = {
        "writer": fieldmanaging.Identity.of("kubectl", "Update", "v1", ""),
        "schema": schema,
        "time": TIMES[0],
        "ignored": frozenset(),
    }
    by_trees, by_sets, _ = _both({}, live, new, **how)
    assert by_trees == by_sets


# --- documents ---------------------------------------------------------------------------------


def _fieldsets() -> st.SearchStrategy[frozenset[FieldPath]]:
    def of(pair: tuple[str, Obj]) -> frozenset[FieldPath]:
        kind, obj = pair
        try:
            return frozenset(fieldsets.compare(fieldsets.ABSENT, obj, KINDS[kind][2]).added)
        except fieldsets.TypedError:
            return frozenset()

    return (
        st.sampled_from(sorted(KINDS))
        .flatmap(lambda kind: st.tuples(st.just(kind), objects(kind)))
        .map(of)
    )


@settings(max_examples=100)
@given(paths=_fieldsets(), seed=st.integers(0, 1000))
def test_trees_encode_like_the_model_and_read_back_canonical(
    paths: frozenset[FieldPath], seed: int
) -> None:
    expected = encode_fieldsv1(paths)
    encoded = fieldtrees.encode(paths)
    assert orjson.dumps(encoded) == orjson.dumps(expected)
    assert fieldtrees.paths(encoded) == paths
    assert fieldtrees.canonical(encoded) is encoded
    shuffled = _shuffled(expected, random.Random(seed))
    again = fieldtrees.canonical(shuffled)
    assert orjson.dumps(again) == orjson.dumps(expected)


def _shuffled(doc: Obj, rng: random.Random) -> Obj:
    items = [(key, _shuffled(child, rng)) for key, child in doc.items()]
    rng.shuffle(items)
    return dict(items)


@pytest.mark.parametrize(
    "doc",
    [
        {"f:a": {".": {}}},
        {"f:a": {"f:b": {}, ".": {}}},
        {'k:{"name": "a"}': {}},
        {"f:b": {}, "f:a": {}},
    ],
    ids=["lone-dot", "dot-not-first", "spaced-key", "unsorted"],
)
def test_a_document_spelt_otherwise_is_written_as_the_api_server_writes_it(doc: Obj) -> None:
    assert orjson.dumps(fieldtrees.canonical(doc)) == orjson.dumps(
        encode_fieldsv1(decode_fieldsv1(doc))
    )


@pytest.mark.parametrize(
    "doc",
    [{".": {}}, {"x:a": {}}, {"f:a": []}, {"f:a": {".": {"f:b": {}}}}, {"k:[1]": {}}, []],
    ids=["root-dot", "prefix", "not-object", "dot-not-empty", "key-not-object", "list"],
)
def test_a_document_that_does_not_decode_fails_as_the_model_fails(doc: Any) -> None:
    with pytest.raises(ManagedFieldsError) as expected:
        decode_fieldsv1(doc)
    with pytest.raises(ManagedFieldsError) as got:
        fieldtrees.canonical(doc)
    assert str(got.value) == str(expected.value)
