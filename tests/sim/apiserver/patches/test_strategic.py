"""Strategic merge patch: each directive and merge strategy as apimachinery applies them.

Expected values follow ``k8s.io/apimachinery/pkg/util/strategicpatch`` (Kubernetes 1.32) step
by step, including where its ordering surprises (a new list item goes first without
``$setElementOrder``). The recorded kubectl traffic replay lives in ``test_patching.py``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.sim.apiserver.patches.patching import (
    PatchError,
    merge_patch,
    strategic_merge_patch,
    strategic_supported,
)
from kubemedic.sim.machinery.definitions import definitions
from tests.factories import container, deployment, pod

DEFS = definitions()
POD = DEFS.for_kind("", "v1", "Pod")
DEPLOYMENT = DEFS.for_kind("apps", "v1", "Deployment")
PDB = DEFS.for_kind("policy", "v1", "PodDisruptionBudget")

# --- helpers ----------------------------------------------------------------------------------


def env(name: str, value: str) -> dict[str, str]:
    return {"name": name, "value": value}


def names(items: list[dict[str, Any]], key: str = "name") -> list[Any]:
    return [item[key] for item in items]


def web_pod(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    body = pod("web", containers=list(containers) or [container("app")], labels={"app": "web"})
    body["spec"].update(spec)
    return body


def smp(original: dict[str, Any], patch: dict[str, Any], schema: Any = POD) -> dict[str, Any]:
    return strategic_merge_patch(original, patch, schema)


def smp_error(original: dict[str, Any], patch: dict[str, Any], schema: Any = POD) -> PatchError:
    with pytest.raises(PatchError) as caught:
        strategic_merge_patch(original, patch, schema)
    return caught.value


# --- strategic merge patch: lists merged by key -----------------------------------------------


def test_containers_merge_by_name_and_unpatched_ones_stay() -> None:
    original = web_pod(container("app", image="app:1"), container("sidecar", image="proxy:1"))
    patched = smp(original, {"spec": {"containers": [{"name": "app", "image": "app:2"}]}})
    app, sidecar = patched["spec"]["containers"]
    assert (app["name"], app["image"], app["imagePullPolicy"]) == ("app", "app:2", "IfNotPresent")
    assert sidecar == original["spec"]["containers"][1]


def test_new_container_goes_first_without_set_element_order() -> None:
    original = web_pod(container("app"), container("sidecar"))
    patched = smp(original, {"spec": {"containers": [{"name": "debug", "image": "busybox"}]}})
    assert names(patched["spec"]["containers"]) == ["debug", "app", "sidecar"]


def test_env_merges_by_name_in_set_element_order() -> None:
    app = {**container("app"), "env": [env("A", "1"), env("B", "2")]}
    patch = {
        "$setElementOrder/containers": [{"name": "app"}],
        "containers": [
            {
                "name": "app",
                "$setElementOrder/env": [{"name": "A"}, {"name": "B"}, {"name": "C"}],
                "env": [env("B", "two"), env("C", "3")],
            }
        ],
    }
    patched = smp(web_pod(app), {"spec": patch})
    assert patched["spec"]["containers"][0]["env"] == [
        env("A", "1"),
        env("B", "two"),
        env("C", "3"),
    ]


def test_ports_merge_by_container_port() -> None:
    app = {**container("app"), "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]}
    patch = {
        "spec": {"containers": [{"name": "app", "ports": [{"containerPort": 80, "name": "web"}]}]}
    }
    ports = smp(web_pod(app), patch)["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "protocol": "TCP", "name": "web"}]


def test_volume_switching_source_drops_the_old_one_through_retain_keys() -> None:
    original = web_pod(volumes=[{"name": "data", "emptyDir": {}}])
    volume = {"$retainKeys": ["configMap", "name"], "name": "data", "configMap": {"name": "cfg"}}
    patch = {"spec": {"$setElementOrder/volumes": [{"name": "data"}], "volumes": [volume]}}
    assert smp(original, patch)["spec"]["volumes"] == [
        {"name": "data", "configMap": {"name": "cfg"}}
    ]


def test_tolerations_have_no_patch_strategy_and_are_replaced() -> None:
    tolerate = {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}
    original = web_pod(tolerations=[tolerate, {"operator": "Exists"}])
    patched = smp(original, {"spec": {"tolerations": [{"key": "gpu", "operator": "Exists"}]}})
    assert patched["spec"]["tolerations"] == [{"key": "gpu", "operator": "Exists"}]


def test_status_conditions_merge_by_type() -> None:
    original = web_pod()
    conditions = [
        {"type": "Ready", "status": "False", "reason": "ContainersNotReady"},
        {"type": "PodScheduled", "status": "True"},
    ]
    patched = smp(original, {"status": {"conditions": conditions}})
    ready, scheduled = patched["status"]["conditions"]
    assert ready == {**original["status"]["conditions"][0], **conditions[0]}
    assert scheduled == conditions[1]


def test_delete_directive_removes_a_list_item() -> None:
    original = web_pod(container("app"), container("sidecar"))
    patched = smp(original, {"spec": {"containers": [{"name": "sidecar", "$patch": "delete"}]}})
    assert names(patched["spec"]["containers"]) == ["app"]


def test_replace_directive_in_a_list_replaces_the_whole_list() -> None:
    original = web_pod(container("app"), container("sidecar"))
    patch = {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}}
    assert smp(original, patch)["spec"]["containers"] == [{"name": "only", "image": "x"}]


def test_directive_items_are_dropped_from_a_list_the_object_lacked() -> None:
    patch = {
        "spec": {"initContainers": [{"name": "a", "image": "x"}, {"name": "b", "$patch": "delete"}]}
    }
    assert smp(web_pod(), patch)["spec"]["initContainers"] == [{"name": "a", "image": "x"}]


# --- $setElementOrder --------------------------------------------------------------------------


def test_set_element_order_reorders_without_content_changes() -> None:
    original = web_pod(container("a"), container("b"), container("c"))
    order = [{"name": "c"}, {"name": "a"}, {"name": "b"}]
    patched = smp(original, {"spec": {"$setElementOrder/containers": order}})
    assert names(patched["spec"]["containers"]) == ["c", "a", "b"]


def test_server_only_items_keep_their_place_among_ordered_ones() -> None:
    # ``x`` was added by someone else: the client orders only the items it knows.
    original = web_pod(container("a"), container("x"), container("b"))
    patch = {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
        "containers": [{"name": "b", "image": "b:2"}, {"name": "a", "image": "a:2"}],
    }
    assert names(smp(original, {"spec": patch})["spec"]["containers"]) == ["x", "b", "a"]


def test_server_items_are_ranked_by_the_stored_array_as_deletions_left_it() -> None:
    # Go deletes ``a`` by shifting the stored array to [b, x, x] and appends ``n`` into the
    # freed slot, so the final ordering sees [b, x, n]: ``x`` ranks before ``n``.
    original = web_pod(container("a"), container("b"), container("x"))
    patch = {
        "$setElementOrder/containers": [{"name": "b"}, {"name": "n"}],
        "containers": [{"name": "n", "image": "n:1"}, {"name": "a", "$patch": "delete"}],
    }
    assert names(smp(original, {"spec": patch})["spec"]["containers"]) == ["b", "x", "n"]


def test_set_element_order_must_agree_with_the_patch_list() -> None:
    original = web_pod(container("a"))
    patch = {
        "$setElementOrder/containers": [{"name": "a"}],
        "containers": [{"name": "b", "image": "x"}],
    }
    error = smp_error(original, {"spec": patch})
    assert (error.code, error.message) == (
        500,
        "The order in patch list:\n[map[image:x name:b]]\n doesn't match $setElementOrder list:\n"
        "[map[name:a]]\n",
    )


def test_set_element_order_naming_no_field_is_refused_like_the_server() -> None:
    error = smp_error(web_pod(), {"spec": {"$setElementOrder/nope": []}})
    assert error.message == 'unable to find api field in struct PodSpec for the json field "nope"'
    assert smp_error(web_pod(), {"spec": {"$setElementOrder": []}}).code == 400


# --- primitive merge lists (finalizers) --------------------------------------------------------


def finalized(*names_: str) -> dict[str, Any]:
    body = web_pod()
    body["metadata"]["finalizers"] = list(names_)
    return body


def test_finalizers_are_unioned() -> None:
    patched = smp(finalized("a", "b"), {"metadata": {"finalizers": ["b", "c"]}})
    assert patched["metadata"]["finalizers"] == ["a", "b", "c"]


def test_finalizer_new_to_the_server_goes_first_without_order() -> None:
    patched = smp(finalized("a", "b"), {"metadata": {"finalizers": ["c"]}})
    assert patched["metadata"]["finalizers"] == ["c", "a", "b"]


def test_delete_from_primitive_list_with_element_order_as_kubectl_sends_it() -> None:
    patch = {
        "$setElementOrder/finalizers": ["b", "c"],
        "$deleteFromPrimitiveList/finalizers": ["a"],
        "finalizers": ["c"],
    }
    assert smp(finalized("a", "b"), {"metadata": patch})["metadata"]["finalizers"] == ["b", "c"]
    assert smp_error(finalized("a"), {"metadata": {"$deleteFromPrimitiveList": ["a"]}}).code == 400


# --- maps: directives, retainKeys, strategies --------------------------------------------------


def rolling(name: str = "web") -> dict[str, Any]:
    body = deployment(name)
    body["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"},
    }
    return body


def test_switching_to_recreate_drops_rolling_update_through_retain_keys() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert smp(rolling(), patch, DEPLOYMENT)["spec"]["strategy"] == {"type": "Recreate"}
    # Without the directive the old settings would stay (and validation would refuse them).
    plain = smp(rolling(), {"spec": {"strategy": {"type": "Recreate"}}}, DEPLOYMENT)
    assert "rollingUpdate" in plain["spec"]["strategy"]


def test_retain_keys_must_name_every_key_the_patch_sets() -> None:
    patch = {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {"maxSurge": 1}}
    error = smp_error(rolling(), {"spec": {"strategy": patch}}, DEPLOYMENT)
    assert (error.code, error.message) == (400, "invalid patch format of retainKeys")


def test_replace_and_delete_directives_on_maps() -> None:
    replace = {"metadata": {"labels": {"$patch": "replace", "tier": "web"}}}
    assert smp(web_pod(), replace)["metadata"]["labels"] == {"tier": "web"}
    # Where the object has no such map, the server drops a map carrying a directive.
    unlabelled = web_pod()
    del unlabelled["metadata"]["labels"]
    assert "labels" not in smp(unlabelled, replace)["metadata"]
    emptied = smp(rolling(), {"spec": {"strategy": {"$patch": "delete"}}}, DEPLOYMENT)
    assert emptied["spec"]["strategy"] == {}


def test_pdb_selector_is_replaced_not_merged() -> None:
    pdb = {"spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    patched = smp(pdb, {"spec": {"selector": {"matchLabels": {"tier": "db"}}}}, PDB)
    assert patched["spec"] == {"minAvailable": 1, "selector": {"matchLabels": {"tier": "db"}}}


def test_null_deletes_and_nulls_in_new_values_are_discarded() -> None:
    original = web_pod(nodeName="node-1")
    patch = {"spec": {"nodeName": None, "nodeSelector": {"disk": "ssd", "zone": None}}}
    patched = smp(original, patch)
    assert "nodeName" not in patched["spec"]
    assert patched["spec"]["nodeSelector"] == {"disk": "ssd"}


def test_directive_keys_inside_a_new_value_are_kept_as_the_server_keeps_them() -> None:
    bare = deployment("web")
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    assert smp(bare, patch, DEPLOYMENT)["spec"]["strategy"] == patch["spec"]["strategy"]


# --- errors worded like the server's -----------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "code", "message"),
    [
        (
            {"spec": {"containers": [{"image": "nginx"}]}},
            500,
            "map: map[image:nginx] does not contain declared merge key: name",
        ),
        (
            {"spec": {"containers": [{"image": "x", "cpu": 1000000.0}]}},
            500,
            "map: map[cpu:1e+06 image:x] does not contain declared merge key: name",
        ),
        (
            {"spec": {"containers": [{"name": "app", "$patch": "merge"}]}},
            500,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            {"spec": {"containers": [{"name": "app", "$patch": "frobnicate"}]}},
            500,
            "unknown patch type: frobnicate in map: map[$patch:frobnicate name:app]",
        ),
        (
            {"metadata": {"labels": {"$patch": "merge", "a": "b"}}},
            500,
            "unknown patch type: merge in map: map[$patch:merge a:b]",
        ),
        (
            {"metadata": {"labels": {"$patch": 1}}},
            500,
            "unknown patch type: %!s(int64=1) in map: map[$patch:1]",
        ),
        ({"metadata": {"finalizers": [["a"]]}}, 422, "lists of lists are not supported"),
        ({"metadata": {"finalizers": [1]}}, 500, "list element types are not identical: [[a] [1]]"),
    ],
)
def test_malformed_strategic_patches_fail_like_the_server(
    patch: dict[str, Any], code: int, message: str
) -> None:
    original = finalized() if code == 422 else finalized("a")
    error = smp_error(original, patch)
    assert (error.code, error.message) == (code, message)


def test_a_patch_that_is_not_an_object_is_a_bad_request() -> None:
    error = smp_error(web_pod(), [1])  # type: ignore[arg-type]
    assert (error.code, error.message) == (
        400,
        "json: cannot unmarshal array into Go value of type map[string]interface {}",
    )


# --- schemaless objects ------------------------------------------------------------------------


def test_only_built_in_types_take_strategic_merge_patches() -> None:
    assert strategic_supported(POD)
    assert not strategic_supported(None)
    assert DEFS.for_kind("cluster.x-k8s.io", "v1beta1", "Machine") is None


def test_without_schema_maps_merge_and_lists_are_replaced() -> None:
    original = {"spec": {"items": [1, 2], "keep": {"a": 1}}}
    patched = smp(original, {"spec": {"items": [3], "keep": {"b": 2}}}, None)
    assert patched == {"spec": {"items": [3], "keep": {"a": 1, "b": 2}}}


# --- properties --------------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "c", "$x"])
SCALARS = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3)
MAPS = st.recursive(SCALARS, lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=12)


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    return value


@given(st.dictionaries(KEYS, MAPS, max_size=4), st.dictionaries(KEYS, MAPS, max_size=4))
def test_strategic_patch_without_schema_of_maps_is_a_merge_patch(
    original: dict[str, Any], patch: dict[str, Any]
) -> None:
    original = _no_nulls(original)  # stored objects hold no nulls; "$x" is no directive
    assert strategic_merge_patch(original, patch, None) == merge_patch(original, patch)


def test_strategic_patch_never_mutates_its_inputs() -> None:
    original = finalized("a", "b")
    original["spec"]["containers"] = [container("a"), container("b"), container("x")]
    patch = {
        "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "labels": {"z": None}},
        "spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "n"}],
            "containers": [{"name": "n", "image": "n"}, {"name": "a", "$patch": "delete"}],
        },
    }
    snapshot = copy.deepcopy((original, patch))
    smp(original, patch)
    assert (original, patch) == snapshot
