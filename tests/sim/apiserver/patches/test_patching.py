"""JSON merge patch and JSON patch as kube-apiserver applies them, and the recorded proof.

The replay applies every successful PATCH that a real kubectl edit session sent (recorded in
``../shared/peer/kubectl-edit``) to the object the server held before and compares the result
with what the real server answered. The unit tests pin the quirks and error wording of
``evanphx/json-patch``, the library the server runs.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.sim.apiserver.patches.patching import (
    PatchError,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from kubemedic.sim.machinery.definitions import definitions
from tests import paths

DEFS = definitions()

# --- replay of recorded kubectl edit sessions -------------------------------------------------

RECORDINGS = paths.PEER / "kubectl-edit"
PATCH_TYPES = {
    "application/strategic-merge-patch+json",
    "application/merge-patch+json",
    "application/json-patch+json",
}
SERVER_OWNED = ("resourceVersion", "generation", "managedFields", "creationTimestamp", "uid")

#: Recorded answers the upstream fixtures edited by hand: the path differs from any possible
#: outcome of the recorded request, so it is checked to still differ and compared no further.
HAND_EDITED = {
    ("testcase-apply-edit-last-applied-list", 4): (
        ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
        "the answer lacks the apiVersion the merge patch puts in the annotation",
    ),
    ("testcase-list-record", 3): (
        ("metadata", "annotations", "kubernetes.io/change-cause"),
        "the harness rewrote the change-cause to its own command line",
    ),
    ("testcase-list-record", 4): (
        ("metadata", "annotations", "kubernetes.io/change-cause"),
        "the harness rewrote the change-cause to its own command line",
    ),
    ("testcase-not-update-annotation", 2): (
        ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"),
        "the answer carries an annotation neither the request nor the GET had",
    ),
    ("testcase-unknown-version-known-group-kind", 2): (
        ("extraField", "addedData"),
        'the request sets "foo", the answer true',
    ),
}


@dataclass(frozen=True)
class Recorded:
    case: str
    step: int
    content_type: str
    before: dict[str, Any]
    patch: Any
    after: dict[str, Any]


def _object_key(path: str) -> tuple[str, str, str]:
    """(namespace, resource, name) of an API path, whatever its group/version or subresource."""
    parts = path.strip("/").split("/")
    parts = parts[2:] if parts[0] == "api" else parts[3:]
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 2:
        namespace, parts = parts[1], parts[2:]
    return namespace, parts[0], parts[1] if len(parts) > 1 else ""


def recorded_patches() -> list[Recorded]:
    """Each PATCH answered 200, with the object as of the last GET or 200 PATCH of it."""
    found = []
    for case in sorted(RECORDINGS.glob("testcase-*")):
        known: dict[tuple[str, str, str], dict[str, Any]] = {}
        steps = yaml.safe_load((case / "test.yaml").read_text())["steps"]
        for index, step in enumerate(steps):
            if step["type"] != "request" or step["resultingStatusCode"] != 200:
                continue
            answer = json.loads((case / step["resultingOutput"]).read_text())
            key = _object_key(step["expectedPath"])
            if step["expectedMethod"] == "GET" and not key[2]:
                known.update({(*key[:2], i["metadata"]["name"]): i for i in answer["items"]})
            elif step["expectedMethod"] == "GET":
                known[key] = answer
            elif step["expectedMethod"] == "PATCH" and step["expectedContentType"] in PATCH_TYPES:
                request = json.loads((case / step["expectedInput"]).read_text())
                found.append(
                    Recorded(
                        case.name, index, step["expectedContentType"], known[key], request, answer
                    )
                )
                known[key] = answer
    return found


def _recorded_params() -> list[Any]:
    if not RECORDINGS.is_dir():
        reason = f"recorded kubectl edit sessions not found at {RECORDINGS}"
        return [pytest.param(None, marks=pytest.mark.skip(reason=reason), id="no-recordings")]
    return [pytest.param(r, id=f"{r.case}-{r.step}") for r in recorded_patches()]


def patch_determined(obj: dict[str, Any]) -> dict[str, Any]:
    """The object without what the server sets itself (identity, versions, timestamps)."""
    out = copy.deepcopy(obj)
    out.pop("apiVersion", None)
    out.pop("kind", None)
    for field in (*SERVER_OWNED, "selfLink"):
        out.get("metadata", {}).pop(field, None)
    return out


def _pop_path(obj: dict[str, Any], path: tuple[str, ...]) -> Any:
    for part in path[:-1]:
        obj = obj[part]
    return obj.pop(path[-1])


def apply_recorded(recorded: Recorded) -> dict[str, Any]:
    after = recorded.after
    group, _, version = after["apiVersion"].rpartition("/")
    schema = DEFS.for_kind(group, version, after["kind"])
    if recorded.content_type == "application/strategic-merge-patch+json":
        return strategic_merge_patch(recorded.before, recorded.patch, schema)
    if recorded.content_type == "application/merge-patch+json":
        result: dict[str, Any] = merge_patch(recorded.before, recorded.patch)
        return result
    result = json_patch(recorded.before, recorded.patch)
    return result


@pytest.mark.parametrize("recorded", _recorded_params())
def test_recorded_patch_gives_what_the_real_server_answered(recorded: Recorded) -> None:
    got, want = patch_determined(apply_recorded(recorded)), patch_determined(recorded.after)
    edited = HAND_EDITED.get((recorded.case, recorded.step))
    if edited is not None:
        path, why = edited
        assert _pop_path(got, path) != _pop_path(want, path), f"no longer hand-edited: {why}"
    assert got == want


@pytest.mark.skipif(not RECORDINGS.is_dir(), reason="recorded kubectl edit sessions not found")
def test_replay_covers_strategic_patches_with_directives() -> None:
    recorded = recorded_patches()
    strategic = [r for r in recorded if "strategic" in r.content_type]
    assert len(strategic) >= 15
    assert any("$setElementOrder/ports" in json.dumps(r.patch) for r in strategic)
    assert any('"$patch": "delete"' in json.dumps(r.patch) for r in strategic)


# --- JSON merge patch --------------------------------------------------------------------------


def test_merge_patch_deletes_merges_and_replaces_lists() -> None:
    target = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"ports": [1, 2]}}
    patch = {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"ports": [3]}}
    assert merge_patch(target, patch) == {
        "metadata": {"labels": {"b": "2", "c": "3"}},
        "spec": {"ports": [3]},
    }


def test_merge_patch_prunes_nulls_only_where_the_library_does() -> None:
    added = merge_patch({}, {"a": {"b": None, "c": [None, {"d": None}]}})
    assert added == {"a": {"c": [None, {}]}}
    # An object replaced by a non-object keeps the patch as sent.
    assert merge_patch({"a": {"b": 1}}, {"a": [{"x": None}]}) == {"a": [{"x": None}]}
    assert merge_patch({"a": 1}, {"a": [{"x": None}]}) == {"a": [{}]}


def test_merge_patch_that_is_not_an_object_or_array_is_invalid() -> None:
    assert merge_patch({"a": 1}, [{"b": None}]) == [{}]
    for patch in (None, "x", 3):
        with pytest.raises(PatchError) as caught:
            merge_patch({"a": 1}, patch)
        assert (caught.value.code, caught.value.message) == (400, "Invalid JSON Patch")


# --- JSON patch --------------------------------------------------------------------------------


def test_json_patch_operations() -> None:
    target = {"metadata": {"labels": {"a": "1"}}, "spec": {"items": [1, 2]}}
    ops = [
        {"op": "add", "path": "/spec/items/-", "value": 3},
        {"op": "add", "path": "/spec/items/0", "value": 0},
        {"op": "add", "path": "/spec/items/-1", "value": 2.5},  # counts from len + 1: appends
        {"op": "remove", "path": "/spec/items/1"},
        {"op": "replace", "path": "/metadata/labels/a", "value": "one"},
        {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/b"},
        {"op": "move", "from": "/metadata/labels/b", "path": "/metadata/labels/c"},
        {"op": "test", "path": "/metadata/labels/c", "value": "one"},
    ]
    assert json_patch(target, ops) == {
        "metadata": {"labels": {"a": "one", "c": "one"}},
        "spec": {"items": [0, 2, 3, 2.5]},
    }


def test_json_patch_unescapes_pointer_tokens() -> None:
    ops = [
        {"op": "add", "path": "/metadata/annotations/example.com~1team", "value": "x"},
        {"op": "add", "path": "/metadata/annotations/a~0b~01", "value": "y"},
    ]
    patched = json_patch({"metadata": {"annotations": {}}}, ops)
    assert patched["metadata"]["annotations"] == {"example.com/team": "x", "a~b~1": "y"}


def test_json_patch_leaves_its_operations_untouched() -> None:
    ops = [
        {"op": "add", "path": "/spec", "value": {"a": {}}},
        {"op": "add", "path": "/spec/a/b", "value": 1},
        {"op": "replace", "path": "/spec/a", "value": {"c": []}},
        {"op": "add", "path": "/spec/a/c/-", "value": 2},
    ]
    before = copy.deepcopy(ops)
    assert json_patch({}, ops) == {"spec": {"a": {"c": [2]}}}
    assert ops == before


def test_json_patch_replace_of_a_missing_object_key_adds_it() -> None:
    patched = json_patch({"spec": {}}, [{"op": "replace", "path": "/spec/replicas", "value": 2}])
    assert patched == {"spec": {"replicas": 2}}


@pytest.mark.parametrize(
    ("op", "message"),
    [
        (
            {"op": "test", "path": "/spec/replicas", "value": 2},
            "testing value /spec/replicas failed: test failed",
        ),
        (
            {"op": "remove", "path": "/metadata/labels/nope"},
            "error in remove for path: '/metadata/labels/nope': "
            "Unable to remove nonexistent key: nope: missing value",
        ),
        (
            {"op": "add", "path": "/spec/nope/x", "value": 1},
            'add operation does not apply: doc is missing path: "/spec/nope/x": missing value',
        ),
        (
            {"op": "add", "path": "/spec/items/5", "value": 1},
            "error in add for path: '/spec/items/5': "
            "Unable to access invalid index: 5: invalid index referenced",
        ),
        (
            {"op": "replace", "path": "/spec/items/9", "value": 1},
            "replace operation does not apply: doc is missing key: /spec/items/9: missing value",
        ),
        (
            {"op": "move", "path": "/a"},
            "move operation failed to decode from: operation, missing from field: missing value",
        ),
        ({"op": "frob", "path": "/a"}, "Unexpected kind: frob"),
    ],
)
def test_json_patch_failures_are_422_with_the_library_message(
    op: dict[str, Any], message: str
) -> None:
    target = {"metadata": {"labels": {}}, "spec": {"replicas": 1, "items": [1]}}
    with pytest.raises(PatchError) as caught:
        json_patch(target, [op])
    assert (caught.value.code, caught.value.message) == (422, message)


def test_json_patch_that_does_not_decode_is_a_bad_request() -> None:
    with pytest.raises(PatchError) as caught:
        json_patch({}, {"op": "add"})
    assert caught.value.code == 400
    assert (
        caught.value.message
        == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    )
    with pytest.raises(PatchError) as caught:
        json_patch({}, [{"op": "test", "path": "/a"}] * 10_001)
    assert caught.value.code == 413


def test_unclassified_errors_are_reasonless_500_statuses_and_422_is_generic() -> None:
    status = PatchError("boom").to_api_error().to_status()
    assert (status["code"], status["message"]) == (500, "boom")
    assert "reason" not in status  # the real server leaves an unclassified error's reason out
    status = PatchError("testing value /a failed: test failed", code=422).to_api_error().to_status()
    assert status["message"] == "the server rejected our request due to an error in our request"
    cause = {
        "reason": "UnexpectedServerResponse",
        "message": "testing value /a failed: test failed",
    }
    assert (status["reason"], status["details"]["causes"]) == ("Invalid", [cause])


# --- properties --------------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c", "$x"])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)


@given(st.dictionaries(KEYS, JSON, max_size=4))
def test_empty_merge_patch_changes_nothing(target: dict[str, Any]) -> None:
    assert merge_patch(target, {}) == target


@given(st.dictionaries(KEYS, JSON, max_size=4), JSON)
def test_json_patch_add_then_test_holds_and_inputs_stay_untouched(
    target: dict[str, Any], value: Any
) -> None:
    before = copy.deepcopy(target)
    ops = [
        {"op": "add", "path": "/new", "value": value},
        {"op": "test", "path": "/new", "value": value},
    ]
    assert json_patch(target, ops)["new"] == value
    assert target == before
