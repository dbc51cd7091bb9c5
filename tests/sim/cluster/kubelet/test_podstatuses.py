"""Pod status as the kubelet writes it (pure builders)."""

from __future__ import annotations

from typing import Any

from kubemedic.sim.cluster.kubelet import podstatuses
from kubemedic.testing import bodies as builders

Obj = dict[str, Any]
T0 = "2026-01-01T00:00:00Z"
T1 = "2026-01-01T00:00:05Z"


def app_pod(*containers: str, **extra: Any) -> Obj:
    pod = builders.pod("p", node_name="n1", containers=[builders.container(c) for c in containers])
    pod["status"] = {"phase": "Pending", "qosClass": "BestEffort", **extra}
    return pod


def by_type(conditions: list[Obj]) -> dict[str, Obj]:
    return {c["type"]: c for c in conditions}


def test_an_admitted_pod_waits_in_container_creating_and_is_not_ready() -> None:
    pod = app_pod("web", "sidecar")
    fields = podstatuses.pending(pod["spec"])
    patch = podstatuses.status_patch(pod, stamp=T0, **fields)
    status = patch["status"]
    assert patch["metadata"] == {"uid": pod["metadata"]["uid"]}
    assert status["phase"] == "Pending" and status["startTime"] == T0
    assert [s["state"] for s in status["containerStatuses"]] == [
        {"waiting": {"reason": "ContainerCreating"}},
        {"waiting": {"reason": "ContainerCreating"}},
    ]
    conditions = by_type(status["conditions"])
    assert conditions["PodReadyToStartContainers"]["status"] == "False"
    assert conditions["Ready"] == {
        "type": "Ready",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": T0,
        "reason": "ContainersNotReady",
        "message": "containers with unready status: [web sidecar]",
    }
    assert (
        conditions["ContainersReady"]["message"] == "containers with unready status: [web sidecar]"
    )


def test_app_containers_wait_in_pod_initializing_behind_init_containers() -> None:
    pod = builders.pod(
        "p",
        containers=[builders.container("app")],
        init_containers=[builders.container("migrate")],
    )
    fields = podstatuses.pending(pod["spec"])
    assert fields["statuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert fields["init_statuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    conditions = by_type(podstatuses.conditions(pod["spec"], stamp=T0, **_only(fields)))
    assert conditions["Initialized"]["reason"] == "ContainersNotInitialized"
    assert conditions["Initialized"]["message"] == "containers with incomplete status: [migrate]"


def _only(fields: Obj) -> Obj:
    return {
        "phase": fields["phase"],
        "statuses": fields["statuses"],
        "init_statuses": fields["init_statuses"],
        "sandbox_ready": fields["sandbox_ready"],
    }


def test_kubelet_conditions_follow_conditions_owned_by_others_in_the_kubelets_order() -> None:
    disruption = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    pod = app_pod("web", conditions=[{"type": "PodScheduled", "status": "True"}, disruption])
    fields, _ = podstatuses.started(
        pod["spec"], previous=[], new_id=lambda: "containerd://1", stamp=T1
    )
    status = podstatuses.status_patch(pod, stamp=T1, **fields)["status"]
    assert status["$setElementOrder/conditions"] == [
        {"type": "DisruptionTarget"},
        {"type": "PodReadyToStartContainers"},
        {"type": "Initialized"},
        {"type": "Ready"},
        {"type": "ContainersReady"},
        {"type": "PodScheduled"},
    ]
    assert all(c["status"] == "True" for c in status["conditions"])


def test_a_transition_time_moves_only_when_the_status_does() -> None:
    previous = [
        {"type": "Initialized", "status": "True", "lastTransitionTime": T0},
        {
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": T0,
            "reason": "X",
            "message": "y",
        },
    ]
    pod = app_pod("web")
    statuses = [
        podstatuses.running(
            pod["spec"]["containers"][0], container_id="c", started_at=T1, ready=True
        )
    ]
    conditions = by_type(
        podstatuses.conditions(
            pod["spec"], phase="Running", statuses=statuses, sandbox_ready=True, stamp=T1,
            previous=previous,
        )
    )  # fmt: skip
    assert conditions["Initialized"]["lastTransitionTime"] == T0
    assert "lastProbeTime" not in conditions["Initialized"]  # stays null on the server
    assert conditions["Ready"]["lastTransitionTime"] == T1
    # A reason and message no longer there are sent as null, as a two-way merge patch does.
    assert conditions["Ready"]["reason"] is None and conditions["Ready"]["message"] is None


def test_a_running_container_reports_the_normalised_image_and_keeps_restarts() -> None:
    container = builders.container("web", image="nginx")
    previous = {
        "name": "web",
        "restartCount": 3,
        "lastState": {"terminated": {"reason": "OOMKilled"}},
    }
    status = podstatuses.running(
        container, container_id="containerd://abc", started_at=T1, ready=True, previous=previous
    )
    assert status["image"] == "docker.io/library/nginx:latest"
    assert status["imageID"].startswith("docker.io/library/nginx@sha256:")
    assert status["restartCount"] == 3
    assert status["lastState"] == {"terminated": {"reason": "OOMKilled"}}
    assert status["state"] == {"running": {"startedAt": T1}} and status["started"] is True


def test_images_are_named_as_containerd_reports_them() -> None:
    assert podstatuses.normalized_image("busybox:1.36") == "docker.io/library/busybox:1.36"
    assert (
        podstatuses.normalized_image("jupyterhub/k8s-hub:3.0") == "docker.io/jupyterhub/k8s-hub:3.0"
    )
    assert podstatuses.normalized_image("quay.io/prometheus/prometheus") == (
        "quay.io/prometheus/prometheus:latest"
    )
    assert podstatuses.normalized_image("registry:5000/app") == "registry:5000/app:latest"


def test_a_reboot_restart_counts_one_more_restart_with_an_unknown_last_state() -> None:
    pod = app_pod("web")
    before = {
        "name": "web", "restartCount": 2, "containerID": "containerd://old",
        "state": {"running": {"startedAt": T0}},
    }  # fmt: skip
    ids = iter(["containerd://new"])
    fields, delay = podstatuses.started(
        pod["spec"], previous=[before], new_id=lambda: next(ids), stamp=T1,
        restarted=True, down_at="2026-01-01T00:00:03Z",
    )  # fmt: skip
    (status,) = fields["statuses"]
    assert delay == 0.0
    assert status["restartCount"] == 3
    assert status["containerID"] == "containerd://new"
    assert status["lastState"] == {
        "terminated": {
            "exitCode": 255,
            "reason": "Unknown",
            "startedAt": T0,
            "finishedAt": "2026-01-01T00:00:03Z",
            "containerID": "containerd://old",
        }
    }


def test_a_readiness_delay_keeps_the_container_unready() -> None:
    container = builders.container("web")
    container["readinessProbe"] = {"httpGet": {"port": 80}, "initialDelaySeconds": 15}
    pod = builders.pod("p", containers=[container])
    fields, delay = podstatuses.started(pod["spec"], previous=[], new_id=lambda: "c", stamp=T1)
    assert delay == 15.0 and fields["statuses"][0]["ready"] is False
    ready = podstatuses.readied({"phase": "Running", "containerStatuses": fields["statuses"]})
    assert ready["statuses"][0]["ready"] is True


def test_a_deleted_pod_ends_succeeded_when_its_containers_exit_cleanly() -> None:
    running = {
        "name": "web",
        "containerID": "containerd://c",
        "state": {"running": {"startedAt": T0}},
    }
    fields = podstatuses.stopped({"containerStatuses": [running]}, stamp=T1)
    assert fields["phase"] == "Succeeded"
    assert fields["statuses"][0]["state"] == {
        "terminated": {
            "exitCode": 0,
            "reason": "Completed",
            "startedAt": T0,
            "finishedAt": T1,
            "containerID": "containerd://c",
        }
    }
    pod = app_pod("web")
    conditions = by_type(podstatuses.conditions(pod["spec"], stamp=T1, **_only(fields)))
    assert conditions["Ready"]["reason"] == "PodCompleted"
    assert conditions["PodReadyToStartContainers"]["status"] == "False"


def test_a_deleted_pod_whose_container_was_not_running_fails_with_status_unknown() -> None:
    backoff = {"name": "web", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}
    fields = podstatuses.stopped({"containerStatuses": [backoff]}, stamp=T1)
    assert fields["phase"] == "Failed"
    assert fields["statuses"][0]["state"]["terminated"] == {
        "exitCode": 137,
        "reason": "ContainerStatusUnknown",
        "message": "The container could not be located when the pod was terminated",
        "finishedAt": T1,
    }


def test_a_rejection_fails_the_pod_with_the_prefixed_message() -> None:
    pod = app_pod("web")
    patch = podstatuses.rejection_patch(pod, "OutOfcpu", "Node didn't...", stamp=T0)
    assert patch["status"] == {
        "phase": "Failed",
        "reason": "OutOfcpu",
        "message": "Pod was rejected: Node didn't...",
        "startTime": T0,
    }


def test_container_events_read_as_the_kubelets() -> None:
    container = builders.container("web", image="nginx")
    assert podstatuses.container_events(container, pulled=1.5, pulling=True) == [
        ("Pulling", 'Pulling image "nginx:latest"'),
        (
            "Pulled",
            'Successfully pulled image "nginx:latest" in 1.5s (1.5s including waiting). '
            f"Image size: {podstatuses.image_size('nginx')} bytes.",
        ),
        ("Created", "Created container web"),
        ("Started", "Started container web"),
    ]
    present = podstatuses.container_events(container, pulled=None)
    assert present[0] == ("Pulled", 'Container image "nginx" already present on machine')
