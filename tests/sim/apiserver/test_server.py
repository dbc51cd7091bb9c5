"""The emulator's HTTP contract for writes: metadata the server owns, errors as ``Status`` bodies,
optimistic concurrency, subresources, field validation, dry runs.

Everything goes over real HTTP; expected texts are kube-apiserver 1.32's.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from tests.factories import node
from tests.sim.conftest import Running
from tests.sim.manifests import manifest, web_deployment

CLOCK = "/kubemedic.io/v1/clock"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
PODS = "/api/v1/namespaces/default/pods"

Obj = dict[str, Any]


def config_map(name: str, **data: str) -> Obj:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def bare_pod(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "registry.example/main:1.0"}]},
    }


def pause_clock(emulator: Running) -> datetime:
    """Stop the virtual clock; returns the instant it stopped at."""
    status, body, _ = emulator.request("PUT", CLOCK, {"paused": True})
    assert status == 200
    assert body["paused"] is True
    return datetime.fromisoformat(body["now"])


def second(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def created(emulator: Running, path: str, body: Obj) -> Obj:
    status, got, _ = emulator.request("POST", path, body)
    assert status == 201, got
    return dict(got)


# resourceVersion, uid, timestamps -----------------------------------------------------------


def test_resource_versions_form_one_strictly_increasing_sequence_across_resources(
    emulator: Running,
) -> None:
    seen = [
        int(created(emulator, CONFIGMAPS, config_map("a"))["metadata"]["resourceVersion"]),
        int(created(emulator, PODS, bare_pod("p"))["metadata"]["resourceVersion"]),
        int(created(emulator, DEPLOYMENTS, web_deployment())["metadata"]["resourceVersion"]),
        int(
            created(emulator, "/api/v1/nodes", manifest(node("n1")))["metadata"]["resourceVersion"]
        ),
    ]
    status, patched, _ = emulator.request(
        "PATCH",
        f"{CONFIGMAPS}/a",
        {"data": {"k": "v"}},
        content_type="application/merge-patch+json",
    )
    assert status == 200
    seen.append(int(patched["metadata"]["resourceVersion"]))
    assert seen == sorted(seen)
    assert len(set(seen)) == len(seen)
    # A list reports the store's version: no older than any write before it.
    _, listing, _ = emulator.request("GET", CONFIGMAPS)
    assert int(listing["metadata"]["resourceVersion"]) == seen[-1]


def test_create_sets_uid_and_creation_timestamp_from_the_virtual_clock(emulator: Running) -> None:
    stopped = pause_clock(emulator)
    first = created(emulator, CONFIGMAPS, config_map("first"))
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                        first["metadata"]["uid"])  # fmt: skip
    assert first["metadata"]["creationTimestamp"] == second(stopped)
    assert first["metadata"]["managedFields"][0]["time"] == second(stopped)

    status, body, _ = emulator.request("PUT", CLOCK, {"advanceSeconds": 7200})
    assert status == 200
    assert datetime.fromisoformat(body["now"]) == stopped + timedelta(hours=2)
    later = created(emulator, CONFIGMAPS, config_map("later"))
    assert later["metadata"]["creationTimestamp"] == second(stopped + timedelta(hours=2))
    assert later["metadata"]["uid"] != first["metadata"]["uid"]


def test_every_timestamp_a_write_stamps_comes_from_the_virtual_clock(emulator: Running) -> None:
    stopped = pause_clock(emulator)
    emulator.request("PUT", CLOCK, {"advanceSeconds": 86400 * 3})
    expected = second(stopped + timedelta(days=3))
    created(emulator, PODS, bare_pod("p"))
    status, _, _ = emulator.request(
        "POST", f"{PODS}/p/binding",
        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"},
         "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}},
    )  # fmt: skip
    assert status == 201
    _, bound, _ = emulator.request("GET", f"{PODS}/p")
    scheduled = next(c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled")
    assert scheduled["lastTransitionTime"] == expected
    status, patched, _ = emulator.request(
        "PATCH", f"{PODS}/p", {"metadata": {"labels": {"a": "b"}}},
        content_type="application/strategic-merge-patch+json",
        headers={"User-Agent": "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07"},
    )  # fmt: skip
    assert status == 200
    assert {m["manager"]: m["time"] for m in patched["metadata"]["managedFields"]}["kubectl"] == (
        expected
    )
    status, deleting, _ = emulator.request("DELETE", f"{PODS}/p")
    assert status == 200
    assert deleting["metadata"]["deletionTimestamp"] == second(
        stopped + timedelta(days=3, seconds=30)
    )


def test_the_date_header_comes_from_the_virtual_clock(emulator: Running) -> None:
    stopped = pause_clock(emulator)
    emulator.request("PUT", CLOCK, {"advanceSeconds": 86400 * 400})
    for path in (CONFIGMAPS, f"{CONFIGMAPS}/missing", "/version", "/api"):
        _, _, headers = emulator.request("GET", path)
        assert headers["Date"] == format_datetime(stopped + timedelta(days=400), usegmt=True)


def test_the_clock_endpoint_refuses_going_backward(emulator: Running) -> None:
    status, body, _ = emulator.request("PUT", CLOCK, {"advanceSeconds": -5})
    assert status == 400
    assert body["message"] == "invalid clock change: the clock never goes backward"


# generation, status ---------------------------------------------------------------------------


def test_generation_moves_on_spec_changes_only(emulator: Running) -> None:
    web = created(emulator, DEPLOYMENTS, web_deployment())
    assert web["metadata"]["generation"] == 1
    merge = "application/merge-patch+json"
    _, labelled, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web", {"metadata": {"labels": {"tier": "front"}}},
        content_type=merge,
    )  # fmt: skip
    assert labelled["metadata"]["labels"] == {"app.kubernetes.io/name": "web", "tier": "front"}
    assert labelled["metadata"]["generation"] == 1
    _, with_status, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web/status", {"status": {"replicas": 2}}, content_type=merge
    )
    assert with_status["status"]["replicas"] == 2
    assert with_status["metadata"]["generation"] == 1
    _, scaled, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web", {"spec": {"replicas": 4}}, content_type=merge
    )
    assert scaled["metadata"]["generation"] == 2
    # Kinds without generation in their strategy never get one.
    assert "generation" not in created(emulator, CONFIGMAPS, config_map("c"))["metadata"]


def test_status_subresource_writes_only_status_and_the_main_resource_never_status(
    emulator: Running,
) -> None:
    web = created(emulator, DEPLOYMENTS, web_deployment(replicas=2))
    web["spec"]["replicas"] = 9
    web["status"] = {"replicas": 2, "readyReplicas": 1}
    status, via_status, _ = emulator.request("PUT", f"{DEPLOYMENTS}/web/status", web)
    assert status == 200
    assert via_status["spec"]["replicas"] == 2
    assert via_status["status"] == {"replicas": 2, "readyReplicas": 1}

    via_status["spec"]["replicas"] = 3
    via_status["status"] = {"replicas": 100}
    status, via_main, _ = emulator.request("PUT", f"{DEPLOYMENTS}/web", via_status)
    assert status == 200
    assert via_main["spec"]["replicas"] == 3
    assert via_main["status"] == {"replicas": 2, "readyReplicas": 1}


def test_create_resets_status(emulator: Running) -> None:
    body = web_deployment()
    body["status"] = {"replicas": 7}
    assert created(emulator, DEPLOYMENTS, body)["status"] == {}


# optimistic concurrency -----------------------------------------------------------------------


def test_put_with_a_stale_resource_version_is_a_conflict(emulator: Running) -> None:
    old = created(emulator, DEPLOYMENTS, web_deployment())
    newer = dict(old, spec={**old["spec"], "replicas": 3})
    status, _, _ = emulator.request("PUT", f"{DEPLOYMENTS}/web", newer)
    assert status == 200
    old["spec"]["replicas"] = 5
    status, body, headers = emulator.request("PUT", f"{DEPLOYMENTS}/web", old)
    assert status == 409
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Operation cannot be fulfilled on deployments.apps "web": the object has been '
        "modified; please apply your changes to the latest version and try again",
        "reason": "Conflict",
        "details": {"name": "web", "group": "apps", "kind": "deployments"},
        "code": 409,
    }
    # A patch carrying the stale version is refused the same way.
    status, body, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web",
        {"metadata": {"resourceVersion": old["metadata"]["resourceVersion"]},
         "spec": {"replicas": 6}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert (status, body["reason"]) == (409, "Conflict")


def test_put_without_resource_version_overwrites_unconditionally(emulator: Running) -> None:
    created(emulator, CONFIGMAPS, config_map("c", a="1"))
    status, body, _ = emulator.request("PUT", f"{CONFIGMAPS}/c", config_map("c", a="2"))
    assert status == 200
    assert body["data"] == {"a": "2"}


# errors -------------------------------------------------------------------------------------


def test_not_found_is_a_status(emulator: Running) -> None:
    status, body, headers = emulator.request("GET", f"{DEPLOYMENTS}/nope")
    assert status == 404
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'deployments.apps "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "group": "apps", "kind": "deployments"},
        "code": 404,
    }


def test_already_exists_is_a_status(emulator: Running) -> None:
    created(emulator, CONFIGMAPS, config_map("c"))
    status, body, headers = emulator.request("POST", CONFIGMAPS, config_map("c"))
    assert status == 409
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "c" already exists',
        "reason": "AlreadyExists",
        "details": {"name": "c", "kind": "configmaps"},
        "code": 409,
    }


def test_invalid_is_a_422_status_with_causes(emulator: Running) -> None:
    status, body, headers = emulator.request(
        "POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    )
    assert status == 422
    assert headers["Content-Type"] == "application/json"
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Pod "p" is invalid: spec.containers: Required value',
        "reason": "Invalid",
        "details": {
            "name": "p",
            "kind": "Pod",
            "causes": [
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": "spec.containers",
                },
            ],
        },
        "code": 422,
    }
    status, body, _ = emulator.request("POST", CONFIGMAPS, config_map("Bad_Name"))
    detail = (
        'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
        "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    assert status == 422
    assert body["message"] == f'ConfigMap "Bad_Name" is invalid: metadata.name: {detail}'
    assert body["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": detail, "field": "metadata.name"}
    ]


def test_a_body_that_is_not_json_is_a_bad_request(emulator: Running) -> None:
    status, body, headers = emulator.request("POST", CONFIGMAPS, "{nope")
    assert status == 400
    assert headers["Content-Type"] == "application/json"
    assert body["kind"] == "Status"
    assert body["reason"] == "BadRequest"
    assert body["code"] == 400
    # The parser's own words follow (Go's encoding/json words them differently).
    assert body["message"].startswith("couldn't get version/kind; json parse error: ")


def test_a_body_for_another_namespace_is_a_bad_request(emulator: Running) -> None:
    body = config_map("c")
    body["metadata"]["namespace"] = "kube-system"
    status, got, _ = emulator.request("POST", CONFIGMAPS, body)
    assert (status, got["reason"]) == (400, "BadRequest")
    assert got["message"] == (
        "the namespace of the provided object does not match the namespace sent on the request"
    )


def test_unknown_paths_are_not_found_statuses(emulator: Running) -> None:
    for path in ("/api/v1/widgets", "/apis/nope.example/v1", "/apis/apps/v1/namespaces/x/pods/y"):
        status, body, headers = emulator.request("GET", path)
        assert status == 404
        assert headers["Content-Type"] == "application/json"
        assert body["message"] == "the server could not find the requested resource"
        assert body["reason"] == "NotFound"


# dry run, generateName, namespaces, scope ---------------------------------------------------------


def test_dry_run_answers_as_a_create_but_stores_nothing(emulator: Running) -> None:
    _, before, _ = emulator.request("GET", CONFIGMAPS)
    status, body, _ = emulator.request("POST", f"{CONFIGMAPS}?dryRun=All", config_map("ghost"))
    assert status == 201
    assert body["metadata"]["name"] == "ghost"
    assert body["metadata"]["uid"]
    assert "resourceVersion" not in body["metadata"]
    assert emulator.request("GET", f"{CONFIGMAPS}/ghost")[0] == 404
    _, after, _ = emulator.request("GET", CONFIGMAPS)
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]

    real = created(emulator, CONFIGMAPS, config_map("real", a="1"))
    status, _, _ = emulator.request(
        "PATCH", f"{CONFIGMAPS}/real?dryRun=All", {"data": {"a": "2"}},
        content_type="application/merge-patch+json",
    )  # fmt: skip
    assert status == 200
    status, _, _ = emulator.request("DELETE", f"{CONFIGMAPS}/real?dryRun=All")
    assert status == 200
    _, stored, _ = emulator.request("GET", f"{CONFIGMAPS}/real")
    assert stored["data"] == {"a": "1"}
    assert stored["metadata"]["resourceVersion"] == real["metadata"]["resourceVersion"]


def test_an_unknown_dry_run_value_is_refused(emulator: Running) -> None:
    status, body, _ = emulator.request("POST", f"{CONFIGMAPS}?dryRun=Some", config_map("c"))
    assert (status, body["reason"]) == (400, "BadRequest")


def test_generate_name_appends_five_random_characters(emulator: Running) -> None:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "job-"}}
    names = {created(emulator, CONFIGMAPS, body)["metadata"]["name"] for _ in range(5)}
    assert len(names) == 5
    for name in names:
        assert re.fullmatch(r"job-[bcdfghjklmnpqrstvwxz2456789]{5}", name)
        assert emulator.request("GET", f"{CONFIGMAPS}/{name}")[0] == 200


def test_creating_in_a_missing_namespace_is_not_found(emulator: Running) -> None:
    status, body, _ = emulator.request("POST", "/api/v1/namespaces/x/configmaps", config_map("c"))
    assert status == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'namespaces "x" not found',
        "reason": "NotFound",
        "details": {"name": "x", "kind": "namespaces"},
        "code": 404,
    }


def test_cluster_scoped_and_namespaced_paths(emulator: Running) -> None:
    body = manifest(node("n1"))
    body["metadata"]["namespace"] = "default"  # ignored for a cluster-scoped kind
    assert "namespace" not in created(emulator, "/api/v1/nodes", body)["metadata"]
    assert emulator.request("GET", "/api/v1/nodes/n1")[0] == 200
    assert emulator.request("GET", "/api/v1/namespaces/default/nodes/n1")[0] == 404
    created(emulator, PODS, bare_pod("p"))
    created(emulator, "/api/v1/namespaces/kube-system/pods", bare_pod("q"))
    assert emulator.request("GET", "/api/v1/pods/p")[0] == 404
    _, everywhere, _ = emulator.request("GET", "/api/v1/pods")
    assert [(i["metadata"]["namespace"], i["metadata"]["name"]) for i in everywhere["items"]] == [
        ("default", "p"),
        ("kube-system", "q"),
    ]
    _, one, _ = emulator.request("GET", PODS)
    assert [i["metadata"]["name"] for i in one["items"]] == ["p"]


# field validation -----------------------------------------------------------------------------


def with_unknown_field() -> Obj:
    body = web_deployment()
    body["spec"]["foo"] = 1
    return body


def test_strict_field_validation_refuses_unknown_fields(emulator: Running) -> None:
    status, body, _ = emulator.request(
        "POST", f"{DEPLOYMENTS}?fieldValidation=Strict", with_unknown_field()
    )
    assert status == 400
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'Deployment in version "v1" cannot be handled as a Deployment: '
        'strict decoding error: unknown field "spec.foo"',
        "reason": "BadRequest",
        "code": 400,
    }
    assert emulator.request("GET", f"{DEPLOYMENTS}/web")[0] == 404


def test_warn_field_validation_drops_unknown_fields_with_a_warning(emulator: Running) -> None:
    status, body, headers = emulator.request(
        "POST", f"{DEPLOYMENTS}?fieldValidation=Warn", with_unknown_field()
    )
    assert status == 201
    assert headers["Warning"] == '299 - "unknown field \\"spec.foo\\""'
    assert "foo" not in body["spec"]
    # Warn is also the default when the parameter is absent.
    second_body = with_unknown_field()
    second_body["metadata"]["name"] = "web2"
    _, _, headers = emulator.request("POST", DEPLOYMENTS, second_body)
    assert headers["Warning"] == '299 - "unknown field \\"spec.foo\\""'


def test_ignore_field_validation_drops_unknown_fields_silently(emulator: Running) -> None:
    status, body, headers = emulator.request(
        "POST", f"{DEPLOYMENTS}?fieldValidation=Ignore", with_unknown_field()
    )
    assert status == 201
    assert "Warning" not in headers
    assert "foo" not in body["spec"]
    _, stored, _ = emulator.request("GET", f"{DEPLOYMENTS}/web")
    assert "foo" not in stored["spec"]


def test_an_unknown_field_validation_mode_is_refused(emulator: Running) -> None:
    status, body, _ = emulator.request(
        "POST", f"{CONFIGMAPS}?fieldValidation=Loud", config_map("c")
    )
    assert status == 400
    assert body["message"] == (
        "fieldValidation parameter unsupported: Loud. Valid values are: Ignore, Warn, Strict"
    )


@pytest.mark.parametrize("mode", ["Strict", "Warn", "Ignore"])
def test_known_fields_pass_every_validation_mode(emulator: Running, mode: str) -> None:
    status, _, headers = emulator.request(
        "POST", f"{DEPLOYMENTS}?fieldValidation={mode}", web_deployment()
    )
    assert status == 201
    assert "Warning" not in headers


def test_a_patch_that_breaks_metadata_is_a_bad_request(emulator: Running) -> None:
    emulator.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}},
    )
    status, body, _ = emulator.request(
        "PATCH",
        "/api/v1/namespaces/default/configmaps/cm",
        {"metadata": ""},
        content_type="application/merge-patch+json",
    )
    assert status == 400, body
    assert body["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal '
        "string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
    )
