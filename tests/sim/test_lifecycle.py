"""Object lifecycles the emulator's built-in control loops drive: garbage collection, finalizers,
graceful pod deletion, namespace termination and event expiry, all on the virtual clock."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.factories import deployed, event, pod
from tests.sim.conftest import Running, start_emulator

Obj = dict[str, Any]

CLOCK = "/kubemedic.io/v1/clock"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
REPLICASETS = "/apis/apps/v1/namespaces/default/replicasets"
PODS = "/api/v1/namespaces/default/pods"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"

RS = "web-5d8f7c9b4"
POD = "web-5d8f7c9b4-x7k2p"


def eventually(check: Callable[[], bool], *, seconds: float = 5) -> None:
    """The control loops tick every 50 ms of wall time; wait for one to have run."""
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.02)


def exists(emulator: Running, path: str) -> bool:
    status, _, _ = emulator.request("GET", path)
    assert status in (200, 404)
    return status == 200


def get(emulator: Running, path: str) -> Obj:
    status, body, _ = emulator.request("GET", path)
    assert status == 200, body
    return dict(body)


def pause_clock(emulator: Running) -> datetime:
    _, body, _ = emulator.request("PUT", CLOCK, {"paused": True})
    return datetime.fromisoformat(body["now"])


def advance(emulator: Running, seconds: float) -> None:
    status, _, _ = emulator.request("PUT", CLOCK, {"advanceSeconds": seconds})
    assert status == 200


def second(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def delete(emulator: Running, path: str, options: Obj | None = None) -> tuple[int, Obj]:
    status, body, _ = emulator.request("DELETE", path, options)
    return status, dict(body)


@pytest.fixture
def web(emulator: Running) -> Running:
    """Deployment web -> ReplicaSet -> one pod bound to node-a, each owning the next."""
    emulator.load(*deployed("web", namespace="default", node_name="node-a",
                            requests={"cpu": "100m"}))  # fmt: skip
    pause_clock(emulator)
    return emulator


# garbage collection -------------------------------------------------------------------------------


def test_background_deletion_collects_dependents(web: Running) -> None:
    status, body = delete(web, f"{DEPLOYMENTS}/web")
    assert status == 200
    assert (body["kind"], body["status"]) == ("Status", "Success")
    assert body["details"]["name"] == "web"
    assert not exists(web, f"{DEPLOYMENTS}/web")
    eventually(lambda: not exists(web, f"{REPLICASETS}/{RS}"))
    # The pod is bound to a node: it terminates gracefully, then goes.
    doomed = get(web, f"{PODS}/{POD}")
    assert doomed["metadata"]["deletionGracePeriodSeconds"] == 30
    advance(web, 30)
    eventually(lambda: not exists(web, f"{PODS}/{POD}"))


def test_foreground_deletion_waits_for_blocking_dependents(web: Running) -> None:
    status, body = delete(web, f"{DEPLOYMENTS}/web", {"propagationPolicy": "Foreground"})
    assert status == 200
    assert body["kind"] == "Deployment"
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert body["metadata"]["deletionTimestamp"]
    # The ReplicaSet is deleted in the foreground as well and waits for its terminating pod.
    eventually(lambda: "deletionTimestamp" in get(web, f"{REPLICASETS}/{RS}")["metadata"])
    replicaset = get(web, f"{REPLICASETS}/{RS}")
    assert replicaset["metadata"]["finalizers"] == ["foregroundDeletion"]
    owner = get(web, f"{DEPLOYMENTS}/web")
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert "deletionTimestamp" in get(web, f"{PODS}/{POD}")["metadata"]
    advance(web, 30)
    eventually(lambda: not exists(web, f"{DEPLOYMENTS}/web"))
    assert not exists(web, f"{REPLICASETS}/{RS}")
    assert not exists(web, f"{PODS}/{POD}")


def test_foreground_deletion_waits_only_for_dependents_that_block(emulator: Running) -> None:
    status, owner, _ = emulator.request("POST", CONFIGMAPS, {"metadata": {"name": "owner"}})
    assert status == 201
    for name, blocks in (("blocking", True), ("free", False)):
        ref = {**owned_by(owner)[0], "blockOwnerDeletion": blocks}
        body = {"metadata": {"name": name, "ownerReferences": [ref],
                             "finalizers": ["example.com/hold"]}}  # fmt: skip
        assert emulator.request("POST", CONFIGMAPS, body)[0] == 201
    status, _ = delete(emulator, f"{CONFIGMAPS}/owner", {"propagationPolicy": "Foreground"})
    assert status == 200
    # Both dependents are being deleted; the finalizers hold them.
    eventually(lambda: "deletionTimestamp" in get(emulator, f"{CONFIGMAPS}/free")["metadata"])
    assert "deletionTimestamp" in get(emulator, f"{CONFIGMAPS}/blocking")["metadata"]
    time.sleep(0.2)
    assert get(emulator, f"{CONFIGMAPS}/owner")["metadata"]["finalizers"] == ["foregroundDeletion"]
    release = {"metadata": {"finalizers": None}}
    status, _, _ = emulator.request("PATCH", f"{CONFIGMAPS}/blocking", release, content_type=MERGE)
    assert status == 200
    # The owner goes once the blocking dependent is gone, the other still held.
    eventually(lambda: not exists(emulator, f"{CONFIGMAPS}/owner"))
    assert exists(emulator, f"{CONFIGMAPS}/free")


def test_orphan_deletion_leaves_dependents_without_the_reference(web: Running) -> None:
    status, _ = delete(web, f"{DEPLOYMENTS}/web", {"propagationPolicy": "Orphan"})
    assert status == 200
    eventually(lambda: not exists(web, f"{DEPLOYMENTS}/web"))
    replicaset = get(web, f"{REPLICASETS}/{RS}")
    assert "ownerReferences" not in replicaset["metadata"]
    assert "deletionTimestamp" not in replicaset["metadata"]
    # Only the direct dependents are orphaned; the pod keeps its ReplicaSet.
    assert get(web, f"{PODS}/{POD}")["metadata"]["ownerReferences"][0]["name"] == RS


def test_orphan_dependents_false_is_accepted_with_202(web: Running) -> None:
    status, body = delete(web, f"{DEPLOYMENTS}/web?orphanDependents=false")
    assert status == 200  # deleted at once: nothing is pending
    assert body["kind"] == "Status"
    status, body = delete(web, f"{PODS}/{POD}", {"orphanDependents": False})
    assert status == 202  # pending (graceful) and the client asked for cascading
    assert body["kind"] == "Pod"


def owned_by(*owners: Obj) -> list[Obj]:
    return [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"],
         "uid": o["metadata"]["uid"]}
        for o in owners
    ]  # fmt: skip


def test_a_dependent_with_two_owners_survives_while_one_remains(emulator: Running) -> None:
    owners = []
    for name in ("left", "right"):
        status, body, _ = emulator.request(
            "POST", CONFIGMAPS, {"metadata": {"name": name}, "data": {}}
        )
        assert status == 201
        owners.append(body)
    status, _, _ = emulator.request(
        "POST", CONFIGMAPS, {"metadata": {"name": "shared", "ownerReferences": owned_by(*owners)}}
    )
    assert status == 201
    assert delete(emulator, f"{CONFIGMAPS}/left")[0] == 200
    # The collector drops the dangling reference and keeps the dependent.
    eventually(
        lambda: len(get(emulator, f"{CONFIGMAPS}/shared")["metadata"]["ownerReferences"]) == 1
    )
    assert get(emulator, f"{CONFIGMAPS}/shared")["metadata"]["ownerReferences"] == owned_by(
        owners[1]
    )
    assert delete(emulator, f"{CONFIGMAPS}/right")[0] == 200
    eventually(lambda: not exists(emulator, f"{CONFIGMAPS}/shared"))


# finalizers and preconditions -------------------------------------------------------------------


def test_finalizers_hold_an_object_until_removed(emulator: Running) -> None:
    stopped = pause_clock(emulator)
    status, _, _ = emulator.request(
        "POST", CONFIGMAPS, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    assert status == 201
    status, body = delete(emulator, f"{CONFIGMAPS}/held")
    assert status == 200
    assert body["metadata"]["deletionTimestamp"] == second(stopped)
    assert body["metadata"]["deletionGracePeriodSeconds"] == 0
    assert body["metadata"]["finalizers"] == ["example.com/hold"]
    advance(emulator, 3600)
    time.sleep(0.2)
    assert exists(emulator, f"{CONFIGMAPS}/held")
    # A second delete changes nothing.
    status, again = delete(emulator, f"{CONFIGMAPS}/held")
    assert status == 200
    assert again["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    status, patched, _ = emulator.request(
        "PATCH", f"{CONFIGMAPS}/held", {"metadata": {"finalizers": None}}, content_type=MERGE
    )
    assert status == 200
    assert patched["metadata"]["name"] == "held"
    assert not exists(emulator, f"{CONFIGMAPS}/held")


def test_a_delete_precondition_on_uid_is_a_conflict(emulator: Running) -> None:
    status, body, _ = emulator.request("POST", CONFIGMAPS, {"metadata": {"name": "c"}})
    uid = body["metadata"]["uid"]
    status, refused = delete(emulator, f"{CONFIGMAPS}/c", {"preconditions": {"uid": "other"}})
    assert status == 409
    assert refused["reason"] == "Conflict"
    assert refused["message"] == (
        f'Operation cannot be fulfilled on configmaps "c": Precondition failed: UID in '
        f"precondition: other, UID in object meta: {uid}"
    )
    assert exists(emulator, f"{CONFIGMAPS}/c")
    assert delete(emulator, f"{CONFIGMAPS}/c", {"preconditions": {"uid": uid}})[0] == 200
    assert not exists(emulator, f"{CONFIGMAPS}/c")


def test_a_delete_precondition_on_resource_version_is_a_conflict(emulator: Running) -> None:
    _, body, _ = emulator.request("POST", CONFIGMAPS, {"metadata": {"name": "c"}})
    rv = body["metadata"]["resourceVersion"]
    status, refused = delete(
        emulator, f"{CONFIGMAPS}/c", {"preconditions": {"resourceVersion": "1"}}
    )
    assert status == 409
    assert refused["message"] == (
        'Operation cannot be fulfilled on configmaps "c": Precondition failed: ResourceVersion '
        f"in precondition: 1, ResourceVersion in object meta: {rv}"
    )


# graceful pod deletion --------------------------------------------------------------------------


def test_a_bound_pod_terminates_for_its_grace_period_on_the_virtual_clock(
    emulator: Running,
) -> None:
    emulator.load(pod("p", node_name="node-a"))
    stopped = pause_clock(emulator)
    status, body = delete(emulator, f"{PODS}/p")
    assert status == 200
    assert body["kind"] == "Pod"
    assert body["metadata"]["deletionTimestamp"] == second(stopped + timedelta(seconds=30))
    assert body["metadata"]["deletionGracePeriodSeconds"] == 30
    advance(emulator, 29)
    time.sleep(0.2)
    assert exists(emulator, f"{PODS}/p")
    advance(emulator, 1)
    eventually(lambda: not exists(emulator, f"{PODS}/p"))


def test_a_shorter_grace_period_moves_the_deletion_earlier(emulator: Running) -> None:
    emulator.load(pod("p", node_name="node-a"))
    stopped = pause_clock(emulator)
    _, body = delete(emulator, f"{PODS}/p", {"gracePeriodSeconds": 60})
    assert body["metadata"]["deletionTimestamp"] == second(stopped + timedelta(seconds=60))
    _, body = delete(emulator, f"{PODS}/p", {"gracePeriodSeconds": 10})
    assert body["metadata"]["deletionTimestamp"] == second(stopped + timedelta(seconds=10))
    assert body["metadata"]["deletionGracePeriodSeconds"] == 10
    # A longer one never postpones it.
    _, body = delete(emulator, f"{PODS}/p", {"gracePeriodSeconds": 120})
    assert body["metadata"]["deletionGracePeriodSeconds"] == 10
    advance(emulator, 10)
    eventually(lambda: not exists(emulator, f"{PODS}/p"))


def test_an_unbound_pod_goes_at_once(emulator: Running) -> None:
    emulator.load(pod("p", phase="Pending"))
    status, body = delete(emulator, f"{PODS}/p")
    assert status == 200
    assert body["kind"] == "Pod"
    assert not exists(emulator, f"{PODS}/p")


def test_grace_period_zero_deletes_a_bound_pod_at_once(emulator: Running) -> None:
    emulator.load(pod("p", node_name="node-a"))
    status, _ = delete(emulator, f"{PODS}/p?gracePeriodSeconds=0")
    assert status == 200
    assert not exists(emulator, f"{PODS}/p")


def test_a_finished_pod_goes_at_once(emulator: Running) -> None:
    emulator.load(pod("p", node_name="node-a", phase="Succeeded"))
    assert delete(emulator, f"{PODS}/p")[0] == 200
    assert not exists(emulator, f"{PODS}/p")


# namespaces ---------------------------------------------------------------------------------------


def test_a_deleted_namespace_is_emptied_then_removed(emulator: Running) -> None:
    stopped = pause_clock(emulator)
    status, _, _ = emulator.request("POST", "/api/v1/namespaces", {"metadata": {"name": "doomed"}})
    assert status == 201
    base = "/api/v1/namespaces/doomed"
    assert emulator.request("POST", f"{base}/configmaps", {"metadata": {"name": "c"}})[0] == 201
    emulator.load(pod("p", namespace="doomed", node_name="node-a"))
    status, body = delete(emulator, "/api/v1/namespaces/doomed")
    assert status == 200
    assert body["kind"] == "Namespace"
    assert body["status"]["phase"] == "Terminating"
    assert body["metadata"]["deletionTimestamp"] == second(stopped)
    assert body["spec"] == {"finalizers": ["kubernetes"]}
    # Nothing new gets in while it terminates.
    status, refused, _ = emulator.request(
        "POST", f"{base}/configmaps", {"metadata": {"name": "late"}}
    )
    assert status == 403
    assert refused == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps "late" is forbidden: unable to create new content in namespace '
        "doomed because it is being terminated",
        "reason": "Forbidden",
        "details": {
            "name": "late",
            "kind": "configmaps",
            "causes": [
                {
                    "reason": "NamespaceTerminating",
                    "field": "metadata.namespace",
                    "message": "namespace doomed is being terminated",
                }
            ],
        },
        "code": 403,
    }
    eventually(lambda: not exists(emulator, f"{base}/configmaps/c"))
    # The bound pod holds the namespace until its grace period is over.
    assert "deletionTimestamp" in get(emulator, f"{base}/pods/p")["metadata"]
    assert exists(emulator, "/api/v1/namespaces/doomed")
    advance(emulator, 30)
    eventually(lambda: not exists(emulator, "/api/v1/namespaces/doomed"))
    assert not exists(emulator, f"{base}/pods/p")


# event TTL ----------------------------------------------------------------------------------------


@pytest.fixture
def short_ttl(tmp_path: Path) -> Iterator[Running]:
    yield from start_emulator(tmp_path, event_ttl=timedelta(minutes=1))


def core_event(name: str) -> Obj:
    body = event(involved=pod("web-1"), reason="BackOff", message="back-off", name_suffix=name)
    for server_set in ("uid", "resourceVersion", "creationTimestamp"):
        body["metadata"].pop(server_set)
    return body


EVENTS = "/api/v1/namespaces/default/events"


def test_events_expire_a_ttl_after_their_last_write(short_ttl: Running) -> None:
    emulator = short_ttl
    pause_clock(emulator)
    status, created, _ = emulator.request("POST", EVENTS, core_event("a"))
    assert status == 201
    emulator.request("POST", EVENTS, core_event("b"))
    advance(emulator, 40)
    status, _, _ = emulator.request("PATCH", f"{EVENTS}/web-1.b", {"count": 2}, content_type=MERGE)
    assert status == 200
    advance(emulator, 21)  # a: 61 s old; b: written 21 s ago
    eventually(lambda: not exists(emulator, f"{EVENTS}/web-1.a"))
    assert exists(emulator, f"{EVENTS}/web-1.b")
    advance(emulator, 40)
    eventually(lambda: not exists(emulator, f"{EVENTS}/web-1.b"))
    # Watchers saw both go, in order.
    start = created["metadata"]["resourceVersion"]
    status, text, _ = emulator.request(
        "GET", f"{EVENTS}?watch=1&resourceVersion={start}&timeoutSeconds=1"
    )
    assert status == 200
    events = [json.loads(line) for line in str(text).splitlines()]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "web-1.b"),
        ("MODIFIED", "web-1.b"),
        ("DELETED", "web-1.a"),
        ("DELETED", "web-1.b"),
    ]


def test_events_live_an_hour_by_default(emulator: Running) -> None:
    pause_clock(emulator)
    assert emulator.request("POST", EVENTS, core_event("a"))[0] == 201
    advance(emulator, 3599)
    time.sleep(0.2)
    assert exists(emulator, f"{EVENTS}/web-1.a")
    advance(emulator, 1)
    eventually(lambda: not exists(emulator, f"{EVENTS}/web-1.a"))
