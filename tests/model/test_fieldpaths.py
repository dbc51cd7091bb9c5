"""Field path notation: parsing, formatting, ordering and the round trip."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.model.fieldpaths import (
    ElementKind,
    FieldPath,
    FieldPathError,
    JSONValue,
    PathElement,
    canonical_json,
)

parse = FieldPath.parse
field, key, value, index = PathElement.field, PathElement.key, PathElement.value, PathElement.index


def test_dotted_names_parse_to_field_elements() -> None:
    path = parse("spec.template.spec.nodeName")
    assert path == FieldPath.of("spec", "template", "spec", "nodeName")
    assert [element.field_name for element in path] == ["spec", "template", "spec", "nodeName"]
    assert str(path) == "spec.template.spec.nodeName"


def test_list_items_are_selected_by_merge_key() -> None:
    path = parse("spec.template.spec.containers[name=api].env[name=DEBUG].value")
    expected = FieldPath.of("spec", "template", "spec", "containers").child(
        key({"name": "api"}), "env", key({"name": "DEBUG"}), "value"
    )
    assert path == expected
    assert path[4].kind is ElementKind.KEY
    assert path[4].key_fields == (("name", "api"),)


def test_multi_field_keys_are_sorted_by_name_like_kubernetes() -> None:
    unsorted = parse("ports[protocol=TCP,containerPort=80]")
    assert unsorted == parse("ports[containerPort=80,protocol=TCP]")
    assert str(unsorted) == "ports[containerPort=80,protocol=TCP]"
    assert unsorted[1].key_fields == (("containerPort", 80), ("protocol", "TCP"))


def test_bare_number_is_a_json_number_and_quoted_number_is_a_string() -> None:
    assert parse("ports[containerPort=80]")[1].key_fields == (("containerPort", 80),)
    assert parse('c[name="80"]')[1].key_fields == (("name", "80"),)
    assert parse("c[name=80]") != parse('c[name="80"]')
    assert str(FieldPath.of("c", key({"name": "80"}))) == 'c[name="80"]'


def test_set_items_and_positions_have_their_own_brackets() -> None:
    path = parse("metadata.finalizers[=kubernetes.io/pvc-protection]")
    assert path[2] == value("kubernetes.io/pvc-protection")
    assert parse("spec.containers[name=api].args[3]")[-1] == index(3)
    assert parse("[3]") == FieldPath.of(3)


def test_field_names_with_special_characters_are_json_quoted() -> None:
    path = FieldPath.of("metadata", "labels", "app.kubernetes.io/name")
    assert str(path) == 'metadata.labels["app.kubernetes.io/name"]'
    assert parse('metadata.labels["app.kubernetes.io/name"]') == path
    assert str(FieldPath.of("", "a b", 'q"')) == '[""]["a b"]["q\\""]'
    assert str(FieldPath.of("x=1")) == '["x=1"]'


@pytest.mark.parametrize(
    ("raw", "written"),
    [
        ("80", '"80"'),
        ("true", '"true"'),
        ("null", '"null"'),
        ("-1.5e3", '"-1.5e3"'),
        ("", '""'),
        ("a b", '"a b"'),
        ("a,b", '"a,b"'),
        ("{x}", '"{x}"'),
        ("tab\there", '"tab\\there"'),
        ("01", "01"),
        ("NaN", "NaN"),
        ("kubernetes.io/pvc-protection", "kubernetes.io/pvc-protection"),
    ],
)
def test_string_values_are_bare_unless_they_would_read_back_differently(
    raw: str, written: str
) -> None:
    path = FieldPath.of("s", value(raw))
    assert str(path) == f"s[={written}]"
    assert parse(str(path))[1].set_value == raw


@pytest.mark.parametrize(
    ("json_value", "written"),
    [
        (80, "80"),
        (-0.5, "-0.5"),
        (True, "true"),
        (None, "null"),
        ({"b": 1, "a": [1, "x"]}, '{"a":[1,"x"],"b":1}'),
    ],
)
def test_non_string_values_are_compact_json_with_sorted_keys(
    json_value: JSONValue, written: str
) -> None:
    assert str(FieldPath.of("s", value(json_value))) == f"s[={written}]"


def test_empty_text_is_the_root_path() -> None:
    assert parse("") == FieldPath()
    assert str(FieldPath()) == ""
    assert len(FieldPath()) == 0


@pytest.mark.parametrize(
    ("text", "position", "reason"),
    [
        ("a..b", 2, "expected a field name"),
        (".a", 0, "expected a field name"),
        ("a b", 1, "expected '.'"),
        ("a[", 2, "found end of input"),
        ("a[x]", 2, "field names in brackets must be JSON strings"),
        ("a[name=]", 7, "expected a value"),
        ("a[name=api", 10, "expected ']'"),
        ("a[=1e999]", 3, "out of range"),
        ('a[={"k":NaN}]', 3, "invalid JSON"),
        ("a[name=x,name=y]", 13, "duplicate key field 'name'"),
        ('a["unterminated]', 2, "invalid JSON"),
    ],
)
def test_bad_input_raises_field_path_error_naming_the_position(
    text: str, position: int, reason: str
) -> None:
    with pytest.raises(FieldPathError) as caught:
        parse(text)
    assert caught.value.position == position
    assert reason in str(caught.value)
    assert f"at position {position} in field path {text!r}" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_elements_sort_fields_then_keys_then_values_then_indexes() -> None:
    elements = [index(0), value("a"), key({"name": "a"}), field("z")]
    assert sorted(elements) == [field("z"), key({"name": "a"}), value("a"), index(0)]


def test_values_sort_numbers_strings_bools_arrays_objects_null_like_upstream() -> None:
    values: list[JSONValue] = [None, {"a": 1}, [1], False, "a", 10, 9.5]
    ordered = sorted(value(v) for v in values)
    assert [element.set_value for element in ordered] == [9.5, 10, "a", False, [1], {"a": 1}, None]


def test_numeric_keys_sort_by_number_not_by_text() -> None:
    ports = [key({"containerPort": port}) for port in (80, 10, 9)]
    assert [p.key_fields[0][1] for p in sorted(ports)] == [9, 10, 80]


def test_paths_sort_element_by_element_with_prefix_first() -> None:
    paths = [parse("spec.b"), parse("spec"), parse("metadata.name"), parse("spec.a[0]")]
    assert [str(p) for p in sorted(paths)] == ["metadata.name", "spec", "spec.a[0]", "spec.b"]


def test_one_one_point_zero_and_true_are_distinct_set_items() -> None:
    items = {value(1), value(1.0), value(True)}
    assert len(items) == 3
    assert str(FieldPath.of(value(1.0))) == "[=1.0]"


def test_paths_and_elements_are_hashable_and_immutable() -> None:
    path = parse("spec.containers[name=api]")
    assert {path: 1}[parse("spec.containers[name=api]")] == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        path.elements = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        path[0].data = "status"  # type: ignore[misc]


def test_child_parent_and_prefix_helpers() -> None:
    containers = FieldPath.of("spec", "containers")
    api = containers.child(key({"name": "api"}))
    assert api.child("args", 0) == parse("spec.containers[name=api].args[0]")
    assert api.parent == containers
    assert api.has_prefix(containers) and api.has_prefix(api) and api.has_prefix(FieldPath())
    assert not containers.has_prefix(api)
    with pytest.raises(ValueError, match="root path has no parent"):
        _ = FieldPath().parent


def test_accessors_refuse_elements_of_another_kind() -> None:
    with pytest.raises(TypeError, match="not a key element"):
        _ = field("spec").key_fields
    with pytest.raises(TypeError, match="not a field element"):
        _ = index(0).field_name


@pytest.mark.parametrize(
    "build",
    [
        lambda: key({}),
        lambda: key([("a", 1), ("a", 2)]),
        lambda: value(float("nan")),
        lambda: value(object()),
        lambda: index(-1),
        lambda: index(True),
    ],
)
def test_constructors_reject_values_kubernetes_cannot_express(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


def test_canonical_json_is_compact_sorted_and_keeps_unicode() -> None:
    assert canonical_json({"b": "é", "a": [1, None]}) == '{"a":[1,null],"b":"é"}'


# --- properties ----------------------------------------------------------------------

tricky_text = st.text(alphabet='.[]=,"{}: \t\\-+eE0123456789aflnrstu/é', max_size=8)
any_text = st.one_of(st.text(max_size=12), tricky_text)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    any_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(any_text, inner, max_size=3),
    max_leaves=6,
)
elements = st.one_of(
    any_text.map(field),
    st.dictionaries(any_text, json_values, min_size=1, max_size=3).map(key),
    json_values.map(value),
    st.integers(min_value=0).map(index),
)
paths = st.lists(elements, max_size=6).map(lambda found: FieldPath(tuple(found)))


@given(paths)
def test_parse_of_format_is_the_identity(path: FieldPath) -> None:
    text = path.format()
    assert parse(text) == path
    assert parse(text).format() == text


@given(paths, paths)
def test_ordering_is_total_and_consistent_with_equality(a: FieldPath, b: FieldPath) -> None:
    assert [a < b, a == b, b < a].count(True) == 1
    if a == b:
        assert hash(a) == hash(b)
