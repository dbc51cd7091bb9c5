"""The ReplicaSet controller: pods from the template, the failed-pod storm, scale-down ranking,
adoption, status and events, driven through the simulation engine."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from kubemedic.model.quantities import parse_quantity
from kubemedic.sim.cluster import assembly as cluster
from kubemedic.sim.cluster.controllers import podtemplates
from kubemedic.sim.cluster.controllers.replicasets import ReplicaSetController, pods_to_delete
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.objects import Change, Obj
from kubemedic.testing import bodies as builders

# -- factories -------------------------------------------------------------------------------


def replicaset(
    name: str,
    replicas: int,
    *,
    node_name: str = "",
    memory: str = "64Mi",
    min_ready: int = 0,
    priority_class: str = "",
) -> Obj:
    spec: Obj = {"containers": [builders.container("app", requests={"memory": memory})]}
    if node_name:
        spec["nodeName"] = node_name
    if priority_class:
        spec["priorityClassName"] = priority_class
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec},
        },
    }
    if min_ready:
        body["spec"]["minReadySeconds"] = min_ready
    return body


class StandInKubelet:
    """A stand-in for the scheduler and kubelets: an unbound pod is bound to ``place(pod)``
    (when given); a bound pod is admitted when the memory requests of the pods already admitted
    on its node leave room, and then runs (Ready unless ``ready`` is false); otherwise it is
    rejected as the kubelet's admission rejects it (``Failed``, ``OutOfmemory``)."""

    name = "stand-in-kubelet"

    def __init__(
        self, *, ready: bool = True, place: Callable[[Obj], str | None] | None = None
    ) -> None:
        self.ready = ready
        self.place = place
        self._queue: dict[tuple[str, str], None] = {}
        self._admitted: dict[str, dict[str, int]] = {}

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, "kubelet")
        sim.watch("pods", self._on_pod)

    def _on_pod(self, change: Change) -> None:
        pod = change.obj
        uid, node = pod["metadata"]["uid"], pod["spec"].get("nodeName")
        terminal = pod["status"].get("phase") in ("Failed", "Succeeded")
        if change.type == "DELETED" or terminal:
            self._admitted.get(node or "", {}).pop(uid, None)
        elif pod["status"].get("phase") == "Pending" and (node or self.place is not None):
            self._queue[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = None

    def sync(self) -> bool:
        queue, self._queue = self._queue, {}
        for key in queue:
            pod = self.sim.get("pods", *key)
            if pod is None or pod["status"].get("phase") != "Pending":
                continue
            if pod["metadata"].get("deletionTimestamp"):
                continue
            if pod["spec"].get("nodeName"):
                self._admit(pod)
            elif self.place is not None and (node := self.place(pod)):
                self.client.bind(key[0], key[1], node)
        return bool(queue)

    def _admit(self, pod: Obj) -> None:
        node_name = pod["spec"]["nodeName"]
        node = self.sim.get("nodes", "", node_name)
        assert node is not None
        capacity = int(parse_quantity(node["status"]["allocatable"]["memory"]).value)
        request = sum(
            int(parse_quantity(c["resources"]["requests"]["memory"]).value)
            for c in pod["spec"]["containers"]
        )
        on_node = self._admitted.setdefault(node_name, {})
        used = sum(on_node.values())
        key = pod["metadata"]["name"]
        if used + request > capacity:
            message = (
                "Pod was rejected: Node didn't have enough resource: memory, requested: "
                f"{request}, used: {used}, capacity: {capacity}"
            )
            status = {"phase": "Failed", "reason": "OutOfmemory", "message": message}
        else:
            on_node[pod["metadata"]["uid"]] = request
            status = {"phase": "Running"}
            if self.ready:
                now = self.sim.server.writer.now()
                status["conditions"] = [
                    {"type": "Ready", "status": "True", "lastTransitionTime": now}
                ]
        namespace = pod["metadata"]["namespace"]
        self.client.patch(
            "v1", "Pod", key, {"status": status}, namespace=namespace, subresource="status"
        )


def simulation(*components: Any, nodes: tuple[Obj, ...] = ()) -> tuple[Simulation, Client]:
    sim = Simulation()
    sim.server.load(nodes)
    for component in components:
        sim.add(component)
    return sim, Client(sim.server, "kubectl-create")


def pods(sim: Simulation, *, phase: str | None = None) -> list[Obj]:
    found = list(sim.objects("pods"))
    return [p for p in found if phase is None or p["status"].get("phase") == phase]


def events(sim: Simulation, reason: str) -> list[Obj]:
    return [e for e in sim.objects("events") if e["reason"] == reason]


# -- creation --------------------------------------------------------------------------------


def test_missing_pods_are_created_from_the_template_with_a_controller_reference() -> None:
    sim, client = simulation(ReplicaSetController())
    rs = client.create(replicaset("web", 3))
    sim.run_for(2)
    created = pods(sim)
    assert len(created) == 3
    for pod in created:
        meta = pod["metadata"]
        assert meta["name"].startswith("web-") and len(meta["name"]) == len("web-") + 5
        assert meta["labels"] == {"app": "web"}
        assert meta["ownerReferences"] == [
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": "web",
                "uid": rs["metadata"]["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert {m["manager"] for m in meta["managedFields"]} == {"kube-controller-manager"}
    messages = sorted(e["message"] for e in events(sim, "SuccessfulCreate"))
    assert messages == sorted(f"Created pod: {p['metadata']['name']}" for p in created)
    assert {e["source"]["component"] for e in events(sim, "SuccessfulCreate")} == {
        "replicaset-controller"
    }
    status = sim.get("replicasets.apps", "default", "web")["status"]  # type: ignore[index]
    assert status == {"replicas": 3, "fullyLabeledReplicas": 3, "observedGeneration": 1}


def test_one_sync_creates_at_most_burst_replicas_pods() -> None:
    sim, client = simulation(ReplicaSetController(burst_replicas=500))
    client.create(replicaset("big", 700))
    sim.settle(rounds=1)
    assert len(pods(sim)) == 500
    sim.settle(rounds=1)
    assert len(pods(sim)) == 700


def test_slow_start_batches_double_and_stop_at_the_first_failing_batch() -> None:
    calls: list[int] = []

    def create() -> None:
        calls.append(1)
        if len(calls) > 5:
            raise errors.forbidden("pods", "web-", "exceeded quota: compute")

    successes, failure = podtemplates.slow_start_batch(100, create)
    # batches of 1, 2, 4: the third batch fails from its third call on, and nothing follows
    assert (successes, len(calls)) == (5, 7)
    assert failure is not None and failure.code == 403


def test_a_refused_creation_records_failed_create_and_a_replica_failure_condition() -> None:
    sim, client = simulation(ReplicaSetController())
    client.create(replicaset("web", 3, priority_class="missing"))
    sim.run_for(1)
    assert pods(sim) == []
    failed = events(sim, "FailedCreate")
    assert failed and failed[0]["type"] == "Warning"
    assert failed[0]["message"].startswith('Error creating: pods "web-')
    assert failed[0]["message"].endswith(
        "is forbidden: no PriorityClass with name missing was found"
    )
    status = sim.get("replicasets.apps", "default", "web")["status"]  # type: ignore[index]
    (condition,) = status["conditions"]
    assert condition["type"] == "ReplicaFailure"
    assert (condition["status"], condition["reason"]) == ("True", "FailedCreate")


# -- the storm -------------------------------------------------------------------------------


def test_failed_pods_are_replaced_at_once_without_backoff() -> None:
    node = builders.node("node-1", memory="8Gi")
    sim, client = simulation(ReplicaSetController(), StandInKubelet(), nodes=(node,))
    client.create(replicaset("gateway", 12, node_name="node-1", memory="800Mi"))
    failed_counts = []
    for _ in range(30):
        sim.run_for(1)
        failed_counts.append(len(pods(sim, phase="Failed")))
    # 10 pods of 800Mi fit 8Gi; the other 2 are rejected and replaced on every sync
    assert len(pods(sim, phase="Running")) == 10
    assert all(b > a for a, b in itertools.pairwise(failed_counts))
    rs = sim.get("replicasets.apps", "default", "gateway")
    assert rs is not None and rs["status"]["replicas"] <= 12


def test_a_pinned_template_on_a_full_node_makes_thousands_of_failed_pods_in_minutes() -> None:
    node = builders.node("node-1", memory="8Gi")
    sim, client = simulation(ReplicaSetController(), StandInKubelet(), nodes=(node,))
    rs = client.create(replicaset("gateway", 12, node_name="node-1", memory="800Mi"))
    sim.run_for(timedelta(minutes=4))
    failed = pods(sim, phase="Failed")
    assert len(failed) >= 1800
    assert {p["status"]["reason"] for p in failed} == {"OutOfmemory"}
    owners = {p["metadata"]["ownerReferences"][0]["uid"] for p in failed}
    assert owners == {rs["metadata"]["uid"]}
    # the recorder's spam filter keeps the controller's events for the ReplicaSet in check
    assert len(events(sim, "SuccessfulCreate")) < 30


def test_the_storm_runs_with_the_real_kubelets() -> None:
    built = cluster.build(only=("replicasets", "kubelets"))
    built.sim.server.load([builders.node("node-1", memory="8Gi")])
    client = Client(built.server, "kubectl-create")
    client.create(replicaset("gateway", 12, node_name="node-1", memory="800Mi"))
    built.sim.run_for(timedelta(minutes=1))
    failed = pods(built.sim, phase="Failed")
    assert len(failed) >= 400
    assert {p["status"].get("reason") for p in failed} == {"OutOfmemory"}


# -- scaling down and claiming ---------------------------------------------------------------


def _pod(
    name: str,
    *,
    node: str = "",
    phase: str = "Running",
    ready: bool = True,
    created: int = 0,
    restarts: int = 0,
) -> Obj:
    pod = builders.pod(
        name, node_name=node or None, phase=phase, created=timedelta(minutes=created)
    )
    if not ready:
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    if restarts:
        pod["status"]["containerStatuses"] = [{"name": "main", "restartCount": restarts}]
    return pod


def test_scale_down_ranks_unassigned_pending_and_unready_pods_first() -> None:
    now = builders.BASE_TIME + timedelta(hours=1)
    candidates = [
        _pod("ready-old", node="n1", created=0),
        _pod("not-ready", node="n1", ready=False, created=0),
        _pod("pending", node="n1", phase="Pending", ready=False, created=0),
        _pod("unassigned", phase="Pending", ready=False, created=0),
        _pod("restarted", node="n1", created=0, restarts=3),
    ]
    chosen = pods_to_delete(candidates, candidates, 4, now=now)
    assert [p["metadata"]["name"] for p in chosen] == [
        "unassigned",
        "pending",
        "not-ready",
        "restarted",
    ]


def test_scale_down_prefers_doubled_up_nodes_and_newer_pods() -> None:
    now = builders.BASE_TIME + timedelta(days=30)
    candidates = [
        _pod("alone", node="n1", created=0),
        _pod("crowded-a", node="n2", created=0),
        _pod("crowded-b", node="n2", created=0),
    ]
    victim = pods_to_delete(candidates, candidates, 1, now=now)[0]
    assert victim["metadata"]["name"].startswith("crowded")
    young = _pod("young", node="n3", created=60 * 24 * 29)
    old = _pod("old", node="n4", created=0)
    assert pods_to_delete([old, young], [old, young], 1, now=now)[0]["metadata"]["name"] == "young"


def test_scaling_down_deletes_pods_with_events() -> None:
    node = builders.node("node-1", memory="8Gi")
    sim, client = simulation(ReplicaSetController(), nodes=(node,))
    client.create(replicaset("web", 4))
    sim.run_for(1)
    client.patch("apps/v1", "ReplicaSet", "web", {"spec": {"replicas": 1}}, namespace="default")
    sim.run_for(1)
    assert len(pods(sim)) == 1
    assert len(events(sim, "SuccessfulDelete")) == 3
    assert all(
        e["message"].startswith("Deleted pod: web-") for e in events(sim, "SuccessfulDelete")
    )


def test_orphans_are_adopted_and_pods_that_stop_matching_are_released() -> None:
    sim, client = simulation(ReplicaSetController())
    client.create(replicaset("web", 2))
    sim.run_for(1)
    first = pods(sim)[0]["metadata"]["name"]
    client.patch(
        "v1", "Pod", first, {"metadata": {"labels": {"app": "debug"}}}, namespace="default"
    )
    sim.run_for(1)
    released = sim.get("pods", "default", first)
    assert released is not None and "ownerReferences" not in released["metadata"]
    assert len([p for p in pods(sim) if p["metadata"].get("ownerReferences")]) == 2
    client.patch("v1", "Pod", first, {"metadata": {"labels": {"app": "web"}}}, namespace="default")
    sim.run_for(1)
    adopted = sim.get("pods", "default", first)
    assert adopted is None or adopted["metadata"]["ownerReferences"][0]["name"] == "web"
    assert len([p for p in pods(sim) if p["metadata"].get("ownerReferences")]) == 2


def test_failed_orphans_are_neither_adopted_nor_counted() -> None:
    sim, client = simulation(ReplicaSetController())
    orphan = builders.pod("leftover", labels={"app": "web"}, phase="Failed", reason="OutOfmemory")
    sim.server.load([orphan])
    client.create(replicaset("web", 2))
    sim.run_for(1)
    leftover = sim.get("pods", "default", "leftover")
    assert leftover is not None and "ownerReferences" not in leftover["metadata"]
    assert len(pods(sim, phase="Pending")) == 2


# -- status ----------------------------------------------------------------------------------


def test_available_replicas_wait_for_min_ready_seconds() -> None:
    node = builders.node("node-1", memory="8Gi")
    sim, client = simulation(ReplicaSetController(), StandInKubelet(), nodes=(node,))
    client.create(replicaset("web", 2, node_name="node-1", min_ready=10))
    sim.run_for(3)
    status = sim.get("replicasets.apps", "default", "web")["status"]  # type: ignore[index]
    assert (status["readyReplicas"], status.get("availableReplicas", 0)) == (2, 0)
    sim.run_for(12)
    status = sim.get("replicasets.apps", "default", "web")["status"]  # type: ignore[index]
    assert status["availableReplicas"] == 2


def test_an_idle_cluster_costs_no_writes() -> None:
    sim, client = simulation(ReplicaSetController())
    for i in range(50):
        client.create(replicaset(f"app-{i}", 2))
    sim.run_for(5)
    version = sim.server.store.resource_version
    passes = sim.stats.passes
    sim.run_for(timedelta(minutes=50))  # events of the creations expire after an hour
    assert sim.server.store.resource_version == version
    assert sim.stats.passes - passes < 50


@pytest.mark.parametrize("phase", ["Failed", "Succeeded"])
def test_terminal_pods_are_not_active(phase: str) -> None:
    assert not podtemplates.is_pod_active(builders.pod("p", phase=phase))
    deleting = builders.pod("q")
    deleting["metadata"]["deletionTimestamp"] = builders.stamp()
    assert not podtemplates.is_pod_active(deleting)
    assert podtemplates.is_pod_active(builders.pod("r", phase="Pending"))
