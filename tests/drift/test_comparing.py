"""The two-way walk under the official schema."""

from __future__ import annotations

from typing import Any

from kubemedic.drift.comparing import field_path_of, walk
from kubemedic.model import schemas
from kubemedic.model.fieldpaths import FieldPath


def pod_spec() -> schemas.SchemaNode:
    node = schemas.definitions().for_kind("", "v1", "Pod")
    assert node is not None
    found = node.field("spec")
    assert found is not None
    return found


def differences(desired: Any, live: Any) -> list[tuple[str, str, tuple[object, ...]]]:
    return [
        (d.kind, str(d.path), d.location) for d in walk(desired, live, pod_spec(), FieldPath(), ())
    ]


def test_empty_is_absent() -> None:
    assert differences({"volumes": [], "nodeSelector": {}}, {"volumes": None}) == []


def test_keyed_items_match_by_key_whatever_their_order() -> None:
    desired = {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}
    live = {"containers": [{"name": "b", "image": "y"}, {"name": "a", "image": "z"}]}
    assert differences(desired, live) == [
        ("changed", "containers[name=a].image", ("containers", 1, "image"))
    ]


def test_atomic_lists_of_one_length_are_walked_by_position() -> None:
    desired = {"containers": [{"name": "a", "args": ["--x", "1"]}]}
    live = {"containers": [{"name": "a", "args": ["--x", "2"]}]}
    assert differences(desired, live) == [
        ("changed", "containers[name=a].args[1]", ("containers", 0, "args", 1))
    ]
    live["containers"][0]["args"].append("3")
    assert differences(desired, live) == [
        ("changed", "containers[name=a].args", ("containers", 0, "args"))
    ]


def test_booleans_are_not_numbers() -> None:
    assert differences({"hostNetwork": True}, {"hostNetwork": 1}) == [
        ("changed", "hostNetwork", ("hostNetwork",))
    ]


def test_a_map_only_live_is_reported_key_by_key_and_an_item_whole() -> None:
    live = {
        "nodeSelector": {"a": "1", "b": "2"},
        "containers": [{"name": "a"}, {"name": "idle", "image": "i"}],
    }
    assert differences({"containers": [{"name": "a"}]}, live) == [
        ("live-only", "containers[name=idle]", ("containers", 1)),
        ("live-only", "nodeSelector.a", ("nodeSelector", "a")),
        ("live-only", "nodeSelector.b", ("nodeSelector", "b")),
    ]


def test_locations_become_field_paths_by_key() -> None:
    obj = {"containers": [{"name": "a"}, {"name": "b", "ports": [{"containerPort": 80}]}]}
    found = field_path_of(obj, pod_spec(), ("containers", 1, "ports", 0))
    assert str(found) == "containers[name=b].ports[containerPort=80,protocol=TCP]"
    assert field_path_of(obj, pod_spec(), ("containers", 5)) is None
