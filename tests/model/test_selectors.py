"""The one label-selector parser, used directly (the emulator's 400 answers are tested with it
in tests/sim/machinery/test_selecting.py)."""

import re

import pytest

from kubemedic.model.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    LabelSelector,
    Requirement,
    SelectorError,
)


def test_requirement_constructor_rejects_exact_match_without_one_value() -> None:
    with pytest.raises(SelectorError) as caught:
        Requirement.new("a", "=", ["x", "y"])
    assert caught.value.message == (
        'values: Invalid value: []string{"x", "y"}: exact-match compatibility requires one '
        "single value"
    )


def test_a_selector_error_is_a_value_error_with_the_servers_wording() -> None:
    wording = "unable to parse requirement: found '', expected: ',' or ')'"
    with pytest.raises(ValueError, match=re.escape(wording)):
        LabelSelector.parse("app in (a")
    with pytest.raises(SelectorError, match="found ',', expected: identifier after ','"):
        LabelSelector.parse("a=b,,c")


def test_parsed_requirements_are_sorted_by_key_and_match_like_the_server() -> None:
    selector = LabelSelector.parse("tier notin (cache), app in (hub,proxy), !canary, zone")
    assert [r.key for r in selector.requirements] == ["app", "canary", "tier", "zone"]
    assert [r.operator for r in selector.requirements] == [IN, DOES_NOT_EXIST, "notin", EXISTS]
    assert selector.matches({"app": "hub", "zone": "a"})
    assert not selector.matches({"app": "hub", "zone": "a", "canary": "yes"})
    assert not selector.matches({"app": "hub"})
    assert str(selector) == "app in (hub,proxy),!canary,tier notin (cache),zone"


def test_selector_objects_none_selects_nothing_and_empty_selects_everything() -> None:
    assert not LabelSelector.from_object(None).matches({"a": "b"})
    assert LabelSelector.from_object({}).matches({"a": "b"})
    with pytest.raises(SelectorError, match='"Maybe" is not a valid label selector operator'):
        LabelSelector.from_object({"matchExpressions": [{"key": "a", "operator": "Maybe"}]})
