"""The Deployment controller: ReplicaSets named by the template hash, scaling events, rolling
and recreate rollouts, revisions, conditions, and the incident-1 edit sequence."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from kubemedic.sim.cluster.controllers import rollouts
from kubemedic.sim.cluster.controllers.deployments import DeploymentController
from kubemedic.sim.cluster.controllers.podtemplates import compute_hash
from kubemedic.sim.cluster.controllers.replicasets import ReplicaSetController
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.machinery.objects import Obj
from kubemedic.testing import bodies as builders
from tests.sim.cluster.controllers.test_replicasets import StandInKubelet

HASH = re.compile(r"^[4-9bcdf]{1,10}$")


def deployment(
    name: str, replicas: int, *, strategy: str = "", memory: str = "64Mi", **spec: Any
) -> Obj:
    body = builders.deployment(
        name, replicas=replicas, containers=[builders.container("app", requests={"memory": memory})]
    )
    for key in ("uid", "resourceVersion", "creationTimestamp"):
        body["metadata"].pop(key)
    body.pop("status")
    if strategy:
        body["spec"]["strategy"] = {"type": strategy}
    body["spec"].update(spec)
    return body


def cluster(*, ready: bool = True, place: str = "node-1") -> tuple[Simulation, Client]:
    """Two nodes (8Gi and 32Gi); unpinned pods go to ``place``."""
    sim = Simulation()
    sim.server.load([builders.node("node-1", memory="8Gi"), builders.node("node-2", memory="32Gi")])
    sim.add(DeploymentController())
    sim.add(ReplicaSetController())
    sim.add(StandInKubelet(ready=ready, place=lambda pod: place))
    return sim, Client(sim.server, "kubectl-client-side-apply")


def replicasets(sim: Simulation) -> list[Obj]:
    return sorted(sim.objects("replicasets.apps"), key=rollouts.creation_key)


def scaling_events(sim: Simulation) -> list[str]:
    found = [e for e in sim.objects("events") if e["reason"] == "ScalingReplicaSet"]
    found.sort(key=lambda e: (e["firstTimestamp"], int(e["metadata"]["resourceVersion"])))
    return [e["message"] for e in found]


def edit(client: Client, name: str, patch: Obj) -> None:
    kubectl = Client(client.server, "kubectl-edit")
    kubectl.patch("apps/v1", "Deployment", name, patch, namespace="default")


def conditions(sim: Simulation, name: str) -> dict[str, tuple[str, str, str]]:
    d = sim.get("deployments.apps", "default", name)
    assert d is not None
    found = d["status"].get("conditions") or []
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in found}


def test_a_deployment_owns_a_replicaset_named_after_its_template_hash() -> None:
    sim, client = cluster()
    d = client.create(deployment("gateway", 12))
    sim.run_for(5)
    (rs,) = replicasets(sim)
    name = rs["metadata"]["name"]
    digest = name.removeprefix("gateway-")
    assert HASH.match(digest)
    assert rs["metadata"]["labels"]["pod-template-hash"] == digest
    assert rs["spec"]["selector"]["matchLabels"]["pod-template-hash"] == digest
    assert rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == digest
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    assert rs["metadata"]["annotations"] == {
        "deployment.kubernetes.io/revision": "1",
        "deployment.kubernetes.io/desired-replicas": "12",
        "deployment.kubernetes.io/max-replicas": "15",
    }
    assert scaling_events(sim) == [f"Scaled up replica set {name} from 0 to 12"]
    stored = sim.get("deployments.apps", "default", "gateway")
    assert stored is not None
    assert stored["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    status = stored["status"]
    assert (status["replicas"], status["updatedReplicas"], status["availableReplicas"]) == (
        12,
        12,
        12,
    )
    found = conditions(sim, "gateway")
    assert found["Available"] == (
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    assert found["Progressing"][:2] == ("True", "NewReplicaSetAvailable")


def test_a_complete_rollout_reports_the_new_replicaset_available() -> None:
    sim, client = cluster()
    client.create(deployment("web", 3))
    sim.run_for(5)
    (rs,) = replicasets(sim)
    assert conditions(sim, "web")["Progressing"] == (
        "True",
        "NewReplicaSetAvailable",
        f'ReplicaSet "{rs["metadata"]["name"]}" has successfully progressed.',
    )
    status = sim.get("deployments.apps", "default", "web")["status"]  # type: ignore[index]
    assert status["observedGeneration"] == 1 and "unavailableReplicas" not in status


def test_editing_replicas_scales_the_replicaset_with_the_scaling_event() -> None:
    sim, client = cluster()
    client.create(deployment("gateway", 12))
    sim.run_for(5)
    edit(client, "gateway", {"spec": {"replicas": 1}})
    sim.run_for(5)
    (rs,) = replicasets(sim)
    name = rs["metadata"]["name"]
    assert rs["spec"]["replicas"] == 1
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "1"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "2"
    assert scaling_events(sim)[-1] == f"Scaled down replica set {name} from 12 to 1"
    alive = [p for p in sim.objects("pods") if not p["metadata"].get("deletionTimestamp")]
    assert len(alive) == 1


def test_a_template_edit_creates_a_new_replicaset_and_rolls_over() -> None:
    sim, client = cluster()
    client.create(deployment("web", 4))
    sim.run_for(5)
    (old,) = replicasets(sim)
    sizes: list[tuple[int, int]] = []
    edit(client, "web", {"spec": {"template": {"spec": {"nodeName": "node-1"}}}})
    for _ in range(20):
        sim.run_for(1)
        rss = replicasets(sim)
        total = sum(rs["spec"]["replicas"] for rs in rss)
        available = sum(rs["status"].get("availableReplicas", 0) for rs in rss)
        sizes.append((total, available))
    old_rs, new_rs = replicasets(sim)
    assert old_rs["metadata"]["uid"] == old["metadata"]["uid"]
    assert old_rs["spec"]["replicas"] == 0 and new_rs["spec"]["replicas"] == 4
    assert new_rs["spec"]["template"]["spec"]["nodeName"] == "node-1"
    assert new_rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    # maxSurge 25% of 4 is 1, maxUnavailable 25% of 4 is 1
    assert all(total <= 5 for total, _ in sizes)
    assert all(available >= 3 for _, available in sizes)
    new_name, old_name = new_rs["metadata"]["name"], old_rs["metadata"]["name"]
    messages = scaling_events(sim)
    assert f"Scaled up replica set {new_name} from 0 to 1" in messages
    assert messages[-1] in (
        f"Scaled down replica set {old_name} from 1 to 0",
        f"Scaled up replica set {new_name} from 3 to 4",
    )
    d = sim.get("deployments.apps", "default", "web")
    assert d is not None
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert d["status"]["updatedReplicas"] == 4


def test_the_live_edit_sequence_of_incident_one_starts_a_failed_pod_storm() -> None:
    sim, client = cluster(place="node-2")
    client.create(deployment("gateway", 12, memory="800Mi"))
    sim.run_for(10)
    edit(client, "gateway", {"spec": {"replicas": 1}})
    sim.run_for(40)  # the scaled-down pods terminate within their grace period
    edit(client, "gateway", {"spec": {"template": {"spec": {"nodeName": "node-1"}}}})
    sim.run_for(40)
    assert [rs["spec"]["replicas"] for rs in replicasets(sim)] == [0, 1]
    assert not [p for p in sim.objects("pods") if p["status"]["phase"] == "Failed"]
    applier = Client(client.server, "argocd-controller")
    applier.patch(
        "apps/v1", "Deployment", "gateway", {"spec": {"replicas": 12}}, namespace="default"
    )
    sim.run_for(timedelta(minutes=2))
    old_rs, new_rs = replicasets(sim)
    assert (old_rs["spec"]["replicas"], new_rs["spec"]["replicas"]) == (0, 12)
    assert scaling_events(sim)[-1] == (
        f"Scaled up replica set {new_rs['metadata']['name']} from 1 to 12"
    )
    failed = [p for p in sim.objects("pods") if p["status"]["phase"] == "Failed"]
    assert len(failed) > 500
    assert {p["metadata"]["ownerReferences"][0]["name"] for p in failed} == {
        new_rs["metadata"]["name"]
    }


def test_recreate_scales_old_pods_away_before_the_new_replicaset_exists() -> None:
    sim, client = cluster()
    client.create(deployment("batch", 3, strategy="Recreate"))
    sim.run_for(5)
    edit(client, "batch", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    sim.settle(rounds=1)
    assert len(replicasets(sim)) == 1  # old scaled to zero first
    sim.run_for(40)
    old_rs, new_rs = replicasets(sim)
    assert (old_rs["spec"]["replicas"], new_rs["spec"]["replicas"]) == (0, 3)
    messages = scaling_events(sim)
    assert messages[1:] == [
        f"Scaled down replica set {old_rs['metadata']['name']} from 3 to 0",
        f"Scaled up replica set {new_rs['metadata']['name']} from 0 to 3",
    ]


def test_a_rollout_without_progress_exceeds_its_deadline() -> None:
    sim, client = cluster(ready=False)
    client.create(deployment("stuck", 2, progressDeadlineSeconds=60))
    sim.settle(rounds=1)
    assert conditions(sim, "stuck")["Progressing"][1] == "NewReplicaSetCreated"
    sim.run_for(30)
    # the new pods were counted: progress, but none ever becomes available
    assert conditions(sim, "stuck")["Progressing"][1] == "ReplicaSetUpdated"
    assert conditions(sim, "stuck")["Available"][1] == "MinimumReplicasUnavailable"
    sim.run_for(60)
    (rs,) = replicasets(sim)
    assert conditions(sim, "stuck")["Progressing"] == (
        "False",
        "ProgressDeadlineExceeded",
        f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.',
    )


def test_rolling_back_reuses_the_old_replicaset_and_keeps_its_revision_history() -> None:
    sim, client = cluster()
    client.create(deployment("web", 2))
    sim.run_for(5)
    edit(client, "web", {"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}})
    sim.run_for(30)
    edit(client, "web", {"spec": {"template": {"metadata": {"labels": {"v": None}}}}})
    sim.run_for(30)
    first, second = replicasets(sim)
    annotations = first["metadata"]["annotations"]
    assert annotations["deployment.kubernetes.io/revision"] == "3"
    assert annotations["deployment.kubernetes.io/revision-history"] == "1"
    assert (first["spec"]["replicas"], second["spec"]["replicas"]) == (2, 0)


def test_old_replicasets_beyond_the_history_limit_are_deleted() -> None:
    sim, client = cluster()
    client.create(deployment("web", 1, revisionHistoryLimit=1))
    sim.run_for(5)
    for version in ("2", "3", "4"):
        edit(client, "web", {"spec": {"template": {"metadata": {"labels": {"v": version}}}}})
        sim.run_for(30)
    revisions = sorted(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        for rs in replicasets(sim)
    )
    assert revisions == ["3", "4"]


def test_fenceposts_round_surge_up_and_unavailability_down() -> None:
    assert rollouts.resolve_fenceposts("25%", "25%", 1) == (1, 0)
    assert rollouts.resolve_fenceposts("25%", "25%", 12) == (3, 3)
    assert rollouts.resolve_fenceposts("10%", "10%", 5) == (1, 0)
    assert rollouts.resolve_fenceposts(0, "10%", 5) == (0, 1)
    assert rollouts.resolve_fenceposts(2, 0, 5) == (2, 0)


def test_proportional_scaling_spreads_replicas_by_size() -> None:
    d = deployment("web", 15)
    d["spec"]["strategy"] = {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2},
    }
    d["status"] = {"replicas": 13}
    d["metadata"]["uid"] = "0d5e-uid"

    def rs(name: str, size: int, created: int) -> Obj:
        body = builders.replicaset(
            d, pod_hash=name, replicas=size, created=timedelta(minutes=created)
        )
        body["metadata"]["annotations"] = {"deployment.kubernetes.io/max-replicas": "13"}
        return body

    sizes = rollouts.proportional_sizes(d, [rs("old", 8, 0), rs("new", 5, 1)])
    assert sizes.operation == "up"
    assert {r["metadata"]["name"]: n for r, n in sizes.targets} == {"web-old": 11, "web-new": 7}


def test_the_template_hash_changes_with_the_template_and_the_collision_count() -> None:
    template = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}}
    first = compute_hash(template)
    assert HASH.match(first)
    assert compute_hash(template) == first
    assert compute_hash(template, 1) != first
    changed = {**template, "spec": {"containers": [], "nodeName": "node-1"}}
    assert compute_hash(changed) != first


def test_a_replicaset_that_cannot_create_pods_fails_the_deployment_too() -> None:
    sim, client = cluster()
    body = deployment("web", 2)
    body["spec"]["template"]["spec"]["priorityClassName"] = "missing"
    client.create(body)
    sim.settle(rounds=1)
    (rs,) = replicasets(sim)
    assert conditions(sim, "web")["Progressing"] == (
        "True",
        "NewReplicaSetCreated",
        f'Created new replica set "{rs["metadata"]["name"]}"',
    )
    sim.run_for(3)
    status, reason, message = conditions(sim, "web")["ReplicaFailure"]
    assert (status, reason) == ("True", "FailedCreate")
    assert message.endswith("is forbidden: no PriorityClass with name missing was found")
