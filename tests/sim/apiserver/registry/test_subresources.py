"""Eviction (with PodDisruptionBudgets), binding and scale over HTTP, as drain, the scheduler and
autoscalers use them."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.factories import pod
from tests.sim.conftest import Running
from tests.sim.manifests import pdb, running_pod, web_deployment

Obj = dict[str, Any]

CLOCK = "/kubemedic.io/v1/clock"
PODS = "/api/v1/namespaces/default/pods"
PDBS = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
MERGE = "application/merge-patch+json"
WEB = {"app": "web"}


def eventually(check: Callable[[], bool], *, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.02)


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def get(emulator: Running, path: str) -> Obj:
    status, body, _ = emulator.request("GET", path)
    assert status == 200, body
    return dict(body)


def eviction(name: str, **delete_options: Any) -> Obj:
    body: Obj = {"apiVersion": "policy/v1", "kind": "Eviction",
                 "metadata": {"name": name, "namespace": "default"}}  # fmt: skip
    if delete_options:
        body["deleteOptions"] = delete_options
    return body


def evict(emulator: Running, name: str, **delete_options: Any) -> tuple[int, Obj, dict[str, str]]:
    status, body, headers = emulator.request(
        "POST", f"{PODS}/{name}/eviction", eviction(name, **delete_options)
    )
    return status, dict(body), headers


@pytest.fixture
def guarded(emulator: Running) -> Running:
    """Three ready pods of app=web on node-a under a budget of minAvailable 2."""
    emulator.load(*(running_pod(f"web-{i}", labels=WEB) for i in range(3)))
    status, _, _ = emulator.request("POST", PDBS, pdb("web", min_available=2, labels=WEB))
    assert status == 201
    eventually(lambda: "expectedPods" in get(emulator, f"{PDBS}/web").get("status", {}))
    return emulator


def budget(emulator: Running) -> Obj:
    return dict(get(emulator, f"{PDBS}/web")["status"])


# eviction -----------------------------------------------------------------------------------------


def test_the_budget_status_follows_the_pods(guarded: Running) -> None:
    status = budget(guarded)
    assert {k: status[k] for k in ("disruptionsAllowed", "currentHealthy", "desiredHealthy",
                                   "expectedPods", "observedGeneration")} == {
        "disruptionsAllowed": 1, "currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3,
        "observedGeneration": 1,
    }  # fmt: skip
    [condition] = status["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "DisruptionAllowed", "True", "SufficientPods",
    )  # fmt: skip
    # A pod that stops being ready is no longer healthy.
    sick = running_pod("web-2", labels=WEB)
    sick["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    guarded.load(sick)
    eventually(lambda: budget(guarded)["currentHealthy"] == 2)
    assert budget(guarded)["disruptionsAllowed"] == 0
    assert budget(guarded)["conditions"][0]["reason"] == "InsufficientPods"


def test_an_eviction_within_budget_deletes_gracefully_and_spends_a_disruption(
    guarded: Running,
) -> None:
    _, clock, _ = guarded.request("PUT", CLOCK, {"paused": True})
    guarded.request("PUT", CLOCK, {"advanceSeconds": 86400})
    now = datetime.fromisoformat(clock["now"]) + timedelta(days=1)
    status, body, _ = evict(guarded, "web-0")
    assert status == 201
    assert (body["kind"], body["status"]) == ("Status", "Success")
    evicted = get(guarded, f"{PODS}/web-0")
    assert evicted["metadata"]["deletionGracePeriodSeconds"] == 30
    assert evicted["metadata"]["deletionTimestamp"] == stamp(now + timedelta(seconds=30))
    spent = budget(guarded)
    assert spent["disruptionsAllowed"] == 0
    # Stamped by the virtual clock, as the condition's transition is.
    assert spent["disruptedPods"] == {"web-0": stamp(now)}
    [condition] = spent["conditions"]
    assert (condition["status"], condition["reason"]) == ("False", "InsufficientPods")
    assert condition["lastTransitionTime"] == stamp(now)


def test_an_eviction_beyond_the_budget_is_refused_with_429(guarded: Running) -> None:
    assert evict(guarded, "web-0")[0] == 201
    status, body, headers = evict(guarded, "web-1")
    assert status == 429
    assert headers["Content-Type"] == "application/json"
    assert "Retry-After" not in headers
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Cannot evict pod as it would violate the pod's disruption budget.",
        "reason": "TooManyRequests",
        "details": {
            "causes": [
                {
                    "reason": "DisruptionBudget",
                    "message": "The disruption budget web needs 2 healthy pods and has 2 currently",
                }
            ]
        },
        "code": 429,
    }
    assert "deletionTimestamp" not in get(guarded, f"{PODS}/web-1")["metadata"]


def test_a_pod_that_is_not_ready_is_evicted_regardless(guarded: Running) -> None:
    assert evict(guarded, "web-0")[0] == 201
    sick = running_pod("web-2", labels=WEB)
    sick["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    guarded.load(sick)
    status, _, _ = evict(guarded, "web-2")
    assert status == 201
    assert "deletionTimestamp" in get(guarded, f"{PODS}/web-2")["metadata"]


def test_a_dry_run_eviction_changes_nothing(guarded: Running) -> None:
    status, _, _ = guarded.request("POST", f"{PODS}/web-0/eviction?dryRun=All", eviction("web-0"))
    assert status == 201
    assert "deletionTimestamp" not in get(guarded, f"{PODS}/web-0")["metadata"]
    assert budget(guarded)["disruptionsAllowed"] == 1


def test_a_pod_under_two_budgets_cannot_be_evicted(guarded: Running) -> None:
    status, _, _ = guarded.request("POST", PDBS, pdb("web-too", min_available=1, labels=WEB))
    assert status == 201
    status, body, _ = evict(guarded, "web-0")
    assert status == 500
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "This pod has more than one PodDisruptionBudget, which the eviction "
        "subresource does not support.",
        "code": 500,
    }


def test_a_pod_without_a_budget_is_evicted(emulator: Running) -> None:
    emulator.load(running_pod("lonely", labels={"app": "lonely"}))
    assert evict(emulator, "lonely")[0] == 201
    assert "deletionTimestamp" in get(emulator, f"{PODS}/lonely")["metadata"]


def test_evicting_a_missing_pod_is_not_found(emulator: Running) -> None:
    status, body, _ = evict(emulator, "ghost")
    assert status == 404
    assert body["message"] == 'pods "ghost" not found'


# binding ----------------------------------------------------------------------------------------


def binding(name: str, node: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}  # fmt: skip


def test_binding_assigns_the_node_once(emulator: Running) -> None:
    unbound = pod("p", phase="Pending")
    emulator.load(unbound)
    status, body, _ = emulator.request("POST", f"{PODS}/p/binding", binding("p", "n1"))
    assert status == 201
    assert (body["kind"], body["status"]) == ("Status", "Success")
    bound = get(emulator, f"{PODS}/p")
    assert bound["spec"]["nodeName"] == "n1"
    scheduled = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert [(c["status"]) for c in scheduled] == ["True"]
    status, body, _ = emulator.request("POST", f"{PODS}/p/binding", binding("p", "n2"))
    assert status == 409
    assert body["reason"] == "Conflict"
    assert body["message"] == (
        'Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"'
    )
    assert body["details"] == {"name": "p", "kind": "pods/binding"}
    assert get(emulator, f"{PODS}/p")["spec"]["nodeName"] == "n1"


def test_binding_without_a_target_is_invalid(emulator: Running) -> None:
    emulator.load(pod("p", phase="Pending"))
    body = binding("p", "")
    status, got, _ = emulator.request("POST", f"{PODS}/p/binding", body)
    assert status == 422
    assert got["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"}
    ]


# scale ------------------------------------------------------------------------------------------


def test_deployment_scale_get_put_and_patch(emulator: Running) -> None:
    status, created, _ = emulator.request("POST", DEPLOYMENTS, web_deployment(replicas=2))
    assert status == 201
    scale = get(emulator, f"{DEPLOYMENTS}/web/scale")
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "uid": created["metadata"]["uid"],
            "resourceVersion": created["metadata"]["resourceVersion"],
            "creationTimestamp": created["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 0, "selector": "app.kubernetes.io/name=web"},
    }
    scale["spec"]["replicas"] = 5
    status, put, _ = emulator.request("PUT", f"{DEPLOYMENTS}/web/scale", scale)
    assert status == 200
    assert put["spec"]["replicas"] == 5
    assert int(put["metadata"]["resourceVersion"]) > int(scale["metadata"]["resourceVersion"])
    status, patched, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": 1}}, content_type=MERGE
    )
    assert (status, patched["spec"]["replicas"]) == (200, 1)
    status, patched, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web/scale",
        [{"op": "replace", "path": "/spec/replicas", "value": 3}],
        content_type="application/json-patch+json",
    )  # fmt: skip
    assert (status, patched["spec"]["replicas"]) == (200, 3)
    deployment = get(emulator, f"{DEPLOYMENTS}/web")
    assert deployment["spec"]["replicas"] == 3
    assert deployment["metadata"]["generation"] == 4
    # The stale version of the first read is a conflict.
    status, body, _ = emulator.request("PUT", f"{DEPLOYMENTS}/web/scale", scale)
    assert (status, body["reason"]) == (409, "Conflict")


def test_a_negative_scale_is_invalid(emulator: Running) -> None:
    emulator.request("POST", DEPLOYMENTS, web_deployment())
    status, body, _ = emulator.request(
        "PATCH", f"{DEPLOYMENTS}/web/scale", {"spec": {"replicas": -1}}, content_type=MERGE
    )
    assert status == 422
    assert body["message"] == (
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater '
        "than or equal to 0"
    )


def test_replicaset_scale(emulator: Running) -> None:
    body = web_deployment(replicas=2)
    body["kind"] = "ReplicaSet"
    path = "/apis/apps/v1/namespaces/default/replicasets"
    status, created, _ = emulator.request("POST", path, body)
    assert status == 201, created
    assert get(emulator, f"{path}/web/scale")["spec"] == {"replicas": 2}
    status, _, _ = emulator.request(
        "PATCH", f"{path}/web/scale", {"spec": {"replicas": 0}}, content_type=MERGE
    )
    assert status == 200
    assert get(emulator, f"{path}/web")["spec"]["replicas"] == 0


def machine_deployment(replicas: int) -> Obj:
    labels = {"cluster.x-k8s.io/deployment-name": "md-0"}
    return {
        "apiVersion": "cluster.x-k8s.io/v1beta1",
        "kind": "MachineDeployment",
        "metadata": {"name": "md-0", "namespace": "default", "generation": 1},
        "spec": {
            "clusterName": "prod",
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "clusterName": "prod",
                    "bootstrap": {"dataSecretName": "md-0-bootstrap"},
                    "infrastructureRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta1",
                                          "kind": "DockerMachineTemplate", "name": "md-0"},
                },
            },
        },
        "status": {"replicas": replicas, "selector": "cluster.x-k8s.io/deployment-name=md-0"},
    }  # fmt: skip


def test_machine_deployment_scale_reads_the_crd_paths(emulator: Running) -> None:
    emulator.load(machine_deployment(3))
    path = "/apis/cluster.x-k8s.io/v1beta1/namespaces/default/machinedeployments/md-0"
    scale = get(emulator, f"{path}/scale")
    assert (scale["kind"], scale["apiVersion"]) == ("Scale", "autoscaling/v1")
    assert scale["spec"] == {"replicas": 3}
    assert scale["status"] == {"replicas": 3, "selector": "cluster.x-k8s.io/deployment-name=md-0"}
    scale["spec"]["replicas"] = 5
    status, put, _ = emulator.request("PUT", f"{path}/scale", scale)
    assert (status, put["spec"]["replicas"]) == (200, 5)
    status, patched, _ = emulator.request(
        "PATCH", f"{path}/scale", {"spec": {"replicas": 4}}, content_type=MERGE
    )
    assert (status, patched["spec"]["replicas"]) == (200, 4)
    stored = get(emulator, path)
    assert stored["spec"]["replicas"] == 4
    assert stored["status"]["replicas"] == 3  # the controller's, untouched
    assert stored["metadata"]["generation"] == 3
