"""kube-scheduler on the emulator: binding, failures, requeueing, events, preemption, speed."""

from __future__ import annotations

from typing import Any

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import Simulation
from kubemedic.sim.cluster.scheduler.scheduling import Scheduler
from kubemedic.sim.machinery.objects import Obj
from kubemedic.testing import bodies as b

PURPOSE = "hub.jupyter.org/node-purpose"
INCIDENT_MESSAGE = (
    "0/126 nodes are available: 14 node(s) didn't match Pod's node affinity/selector, "
    "23 Insufficient cpu, 24 Insufficient memory, 6 node(s) had untolerated taint "
    "{node.kubernetes.io/network-unavailable: }, 9 node(s) had untolerated taint "
    "{hub.jupyter.org_dedicated: user}, 96 node(s) had untolerated taint "
    "{node.kubernetes.io/not-ready: }."
)


def _cluster(*objects: Obj, **options: Any) -> tuple[Simulation, Scheduler, Client]:
    sim = Simulation()
    sim.server.load(list(objects))
    scheduler = sim.add(Scheduler(**options))
    return sim, scheduler, Client(sim.server, "kube-controller-manager")


def _pod(name: str, *, cpu: str = "500m", memory: str = "1Gi", **spec: Any) -> Obj:
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {
            "containers": [{"name": "main", "image": "app:1", "resources": resources}],
            **spec,
        },
    }


def _load_pending(sim: Simulation, body: Obj) -> None:
    """Store a pending pod as-is (for fields only admission could set, such as a priority)."""
    name = body["metadata"]["name"]
    meta = {**body["metadata"], "uid": f"u-{name}", "creationTimestamp": "2026-01-01T00:00:00Z"}
    sim.server.load([{**body, "metadata": meta, "status": {"phase": "Pending"}}])


def _get(sim: Simulation, name: str, namespace: str = "default") -> Obj:
    pod = sim.get("pods", namespace, name)
    assert pod is not None
    return pod


def _scheduled(pod: Obj) -> dict[str, Any]:
    return next(c for c in pod["status"]["conditions"] if c["type"] == "PodScheduled")


def _events(sim: Simulation, reason: str) -> list[Obj]:
    return [e for e in sim.objects("events") if e["reason"] == reason]


def _filled(node: str, *, cpu: str, memory: str, namespace: str = "prod", priority: int = 0) -> Obj:
    body = b.pod(
        f"fill-{node}",
        namespace=namespace,
        node_name=node,
        priority=priority,
        containers=[b.container("main", requests={"cpu": cpu, "memory": memory})],
    )
    body["spec"]["terminationGracePeriodSeconds"] = 30
    return body


# -- binding ----------------------------------------------------------------------------------


def test_pending_pod_is_bound_and_reported_scheduled() -> None:
    sim, scheduler, client = _cluster(b.node("n1"))
    client.create(_pod("web"))
    sim.step()
    pod = _get(sim, "web")
    assert pod["spec"]["nodeName"] == "n1"
    assert _scheduled(pod)["status"] == "True"
    assert all(m["manager"] != "kube-scheduler" for m in pod["metadata"]["managedFields"])
    (event,) = _events(sim, "Scheduled")
    assert event["type"] == "Normal"
    assert event["message"] == "Successfully assigned default/web to n1"
    assert event["action"] == "Binding"
    assert event["reportingComponent"] == "default-scheduler"
    assert scheduler.pending() == 0


def test_pods_of_other_schedulers_and_pinned_pods_are_left_alone() -> None:
    sim, scheduler, client = _cluster(b.node("n1"), b.node("n2"))
    client.create(_pod("custom", schedulerName="user-scheduler"))
    client.create(_pod("pinned", nodeName="n2"))
    sim.step()
    assert "nodeName" not in _get(sim, "custom")["spec"]
    assert _get(sim, "pinned")["spec"]["nodeName"] == "n2"
    assert scheduler.node_info("n2") is not None
    assert scheduler.node_info("n2").cpu == 500  # type: ignore[union-attr]
    assert not _events(sim, "Scheduled")


def test_pods_bound_in_one_pass_count_before_the_informer_shows_them() -> None:
    sim, _, client = _cluster(b.node("n1", cpu="1"))
    for name in ("a", "b", "c"):
        client.create(_pod(name, cpu="500m", memory="100Mi"))
    sim.step()
    bound = [p for p in sim.objects("pods") if p["spec"].get("nodeName")]
    assert len(bound) == 2
    (waiting,) = [p for p in sim.objects("pods") if not p["spec"].get("nodeName")]
    assert _scheduled(waiting)["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")


def test_finished_pods_release_their_requests_and_wake_waiting_pods() -> None:
    sim, _, client = _cluster(b.node("n1", cpu="1"), _filled("n1", cpu="1", memory="1Gi"))
    client.create(_pod("next", cpu="600m"))
    sim.step()
    assert "nodeName" not in _get(sim, "next")["spec"]
    kubelet = Client(sim.server, "kubelet")
    kubelet.patch("v1", "Pod", "fill-n1", {"status": {"phase": "Succeeded"}},
                  namespace="prod", subresource="status")  # fmt: skip
    sim.run_for(3)
    assert _get(sim, "next")["spec"]["nodeName"] == "n1"


# -- failures ---------------------------------------------------------------------------------


def test_unschedulable_pod_gets_the_condition_written_by_kube_scheduler() -> None:
    taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    sim, _, client = _cluster(b.node("n1", taints=[taint]), b.node("n2", cpu="1"))
    client.create(_pod("big", cpu="2"))
    sim.step()
    pod = _get(sim, "big")
    condition = _scheduled(pod)
    message = (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{node.kubernetes.io/not-ready: }. preemption: 0/2 nodes are available: "
        "1 No preemption victims found for incoming pod, 1 Preemption is not helpful for "
        "scheduling."
    )
    assert condition == {
        "type": "PodScheduled",
        "status": "False",
        "lastProbeTime": None,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Unschedulable",
        "message": message,
    }
    entry = next(m for m in pod["metadata"]["managedFields"] if m["manager"] == "kube-scheduler")
    assert (entry["operation"], entry["subresource"]) == ("Update", "status")
    assert 'k:{"type":"PodScheduled"}' in entry["fieldsV1"]["f:status"]["f:conditions"]
    (event,) = _events(sim, "FailedScheduling")
    assert (event["type"], event["message"], event["action"]) == ("Warning", message, "Scheduling")


def test_cluster_without_nodes_says_no_nodes_are_available() -> None:
    deleting = b.node("gone")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    sim, _, client = _cluster(deleting)
    client.create(_pod("lonely"))
    sim.step()
    assert _scheduled(_get(sim, "lonely"))["message"] == "no nodes available to schedule pods"


def test_pod_waits_until_a_node_is_added() -> None:
    sim, scheduler, client = _cluster(b.node("small", cpu="1"))
    client.create(_pod("big", cpu="2"))
    sim.step()
    assert scheduler.unschedulable() == [("default", "big")]
    sim.run_for(60)
    assert "nodeName" not in _get(sim, "big")["spec"]  # nothing changed: it stays parked
    client.create(b.node("large", cpu="8"))
    sim.run_for(2)
    assert "nodeName" not in _get(sim, "big")["spec"]  # admission tainted it not-ready
    lifecycle = Client(sim.server, "kube-controller-manager")
    lifecycle.patch("v1", "Node", "large", {"spec": {"taints": None}})
    sim.run_for(2)
    assert _get(sim, "big")["spec"]["nodeName"] == "large"


def test_parked_pod_is_scheduled_once_the_not_ready_taint_is_lifted() -> None:
    taint = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
    sim, _, _ = _cluster(b.node("fresh", taints=[taint]))
    Client(sim.server, "kube-controller-manager").create(_pod("web"))
    sim.step()
    assert "nodeName" not in _get(sim, "web")["spec"]
    lifecycle = Client(sim.server, "kube-controller-manager")
    lifecycle.patch("v1", "Node", "fresh", {"spec": {"taints": None}}, patch_type="merge")
    sim.run_for(2)
    assert _get(sim, "web")["spec"]["nodeName"] == "fresh"


def test_parked_pod_is_retried_when_it_gains_a_toleration() -> None:
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    sim, _, client = _cluster(b.node("gpu", taints=[taint]))
    client.create(_pod("train"))
    sim.step()
    tolerations = [*_get(sim, "train")["spec"]["tolerations"], {**taint, "operator": "Equal"}]
    client.patch("v1", "Pod", "train", {"spec": {"tolerations": tolerations}},
                 namespace="default", patch_type="merge")  # fmt: skip
    sim.run_for(2)
    assert _get(sim, "train")["spec"]["nodeName"] == "gpu"


def test_repeated_failures_become_an_event_series() -> None:
    sim, _, client = _cluster(b.node("n1", cpu="1"))
    _load_pending(sim, _pod("big", cpu="2", priority=100, preemptionPolicy="Never"))
    sim.step()
    tainted = b.node("n2", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    client.create(tainted)
    sim.run_for(3)
    (event,) = _events(sim, "FailedScheduling")
    assert event["series"]["count"] == 2
    assert _scheduled(_get(sim, "big"))["message"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint "
        "{dedicated: gpu}. preemption: not eligible due to preemptionPolicy=Never."
    )


def test_parked_pod_is_retried_after_five_minutes_without_any_event() -> None:
    sim, _, client = _cluster(b.node("n1", cpu="1"))
    client.create(_pod("big", cpu="2"))
    sim.run_for(290)
    assert len(_events(sim, "FailedScheduling")) == 1
    assert "series" not in _events(sim, "FailedScheduling")[0]
    sim.run_for(45)
    assert _events(sim, "FailedScheduling")[0]["series"]["count"] == 2


# -- the incident -----------------------------------------------------------------------------


def _incident_cluster() -> list[Obj]:
    """126 nodes as at 2i2c's leap cluster: 14 full core nodes, 9 full tainted user nodes, one
    full untainted user node, and 102 new nodes not ready yet (6 without network)."""
    objects: list[Obj] = []
    size: dict[str, Any] = {
        "cpu": "4",
        "memory": "32Gi",
        "allocatable_cpu": "3920m",
        "allocatable_memory": "26Gi",
    }
    for i in range(14):
        objects.append(b.node(f"core-{i:02d}", labels={PURPOSE: "core"}, **size))
        objects.append(_filled(f"core-{i:02d}", cpu="3500m", memory="25Gi"))
    dedicated = {"key": "hub.jupyter.org_dedicated", "value": "user", "effect": "NoSchedule"}
    for i in range(9):
        objects.append(
            b.node(f"user-{i:02d}", labels={PURPOSE: "user"}, taints=[dedicated], **size)
        )
        objects.append(_filled(f"user-{i:02d}", cpu="3500m" if i else "1", memory="25Gi"))
    objects.append(b.node("user-dask", labels={PURPOSE: "user"}, **size))
    objects.append(_filled("user-dask", cpu="3500m", memory="25Gi"))
    for i in range(6):
        taint = {"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}
        objects.append(
            b.node(f"new-net-{i}", labels={PURPOSE: "user"}, ready="False", taints=[taint])
        )
    for i in range(96):
        taints = [{"key": "node.kubernetes.io/not-ready", "effect": effect}
                  for effect in ("NoExecute", "NoSchedule")]  # fmt: skip
        objects.append(
            b.node(f"new-{i:02d}", labels={PURPOSE: "user"}, ready="False", taints=taints)
        )
    return objects


def _dask_worker_message(**options: Any) -> str:
    sim, _, _ = _cluster(*_incident_cluster(), **options)
    worker = _pod("dask-worker-0", cpu="1", memory="4Gi", nodeSelector={PURPOSE: "user"})
    worker["metadata"]["namespace"] = "prod"
    Client(sim.server, "dask-gateway").create(worker)
    sim.step()
    message: str = _scheduled(_get(sim, "dask-worker-0", "prod"))["message"]
    return message


def test_incident_message_is_reproduced_when_all_filters_run_without_preemption() -> None:
    # 172 reasons over 126 nodes: only a framework running every filter of a node reports a
    # full node both for its taint or affinity and for its resources.
    assert _dask_worker_message(run_all_filters=True, preemption=False) == INCIDENT_MESSAGE


def test_incident_cluster_under_1_32_reports_each_node_once() -> None:
    assert _dask_worker_message() == (
        "0/126 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, "
        "14 node(s) didn't match Pod's node affinity/selector, 6 node(s) had untolerated taint "
        "{node.kubernetes.io/network-unavailable: }, 9 node(s) had untolerated taint "
        "{hub.jupyter.org_dedicated: user}, 96 node(s) had untolerated taint "
        "{node.kubernetes.io/not-ready: }. preemption: 0/126 nodes are available: "
        "1 No preemption victims found for incoming pod, 125 Preemption is not helpful for "
        "scheduling."
    )


# -- preemption -------------------------------------------------------------------------------


def test_higher_priority_pod_preempts_and_is_nominated_then_bound() -> None:
    sim, scheduler, _ = _cluster(
        b.node("n1", cpu="2"), _filled("n1", cpu="1500m", memory="1Gi", namespace="default")
    )
    _load_pending(sim, _pod("critical", cpu="1", priority=1000))
    sim.step()
    pod = _get(sim, "critical")
    assert pod["status"]["nominatedNodeName"] == "n1"
    assert _scheduled(pod)["message"] == "0/1 nodes are available: 1 Insufficient cpu."
    victim = _get(sim, "fill-n1")
    assert victim["metadata"]["deletionTimestamp"]
    disruption = next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget")
    assert disruption["reason"] == "PreemptionByScheduler"
    assert disruption["message"] == (
        "default-scheduler: preempting to accommodate a higher priority pod"
    )
    (event,) = _events(sim, "Preempted")
    assert event["message"] == "Preempted by pod u-critical on node n1"
    sim.run_for(40)  # the victim's 30 s grace period
    assert sim.get("pods", "default", "fill-n1") is None
    assert _get(sim, "critical")["spec"]["nodeName"] == "n1"
    assert scheduler.preemptions == 1


def test_equal_priority_pod_finds_no_victims() -> None:
    sim, _, client = _cluster(b.node("n1", cpu="2"), _filled("n1", cpu="1500m", memory="1Gi"))
    client.create(_pod("peer", cpu="1"))
    sim.step()
    assert _scheduled(_get(sim, "peer"))["message"].endswith(
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    )
    assert sim.get("pods", "prod", "fill-n1") is not None


# -- throughput -------------------------------------------------------------------------------


def test_api_writes_are_paced_by_the_client_rate_limit() -> None:
    sim, scheduler, _ = _cluster(
        b.node("n1", pods="500", cpu="100", memory="500Gi"),
        *(b.pod(f"w-{i}", phase="Pending") for i in range(160)),
    )
    sim.step()
    assert scheduler.scheduled == 100  # the burst
    sim.run_for(2)
    assert scheduler.scheduled == 160


def _copies(template: Obj, prefix: str, count: int, **labels: str) -> list[Obj]:
    """``count`` copies of ``template`` named ``<prefix>-<i>`` (cheaper than a builder each)."""
    copies = []
    for i in range(count):
        meta = {**template["metadata"], "name": f"{prefix}-{i:04d}", "uid": f"{prefix}-{i}"}
        meta["labels"] = {**template["metadata"].get("labels", {}), **labels}
        copies.append({**template, "metadata": meta})
    return copies


def test_thousand_pods_fit_onto_two_thousand_nodes_in_well_under_a_few_seconds() -> None:
    node = b.node("template", cpu="8", memory="32Gi")
    nodes = [
        *_copies(node, "a", 667, **{"topology.kubernetes.io/zone": "a"}),
        *_copies(node, "b", 667, **{"topology.kubernetes.io/zone": "b"}),
        *_copies(node, "c", 666, **{"topology.kubernetes.io/zone": "c"}),
    ]
    requests = {"cpu": "500m", "memory": "1Gi"}
    pod = b.pod("template", phase="Pending", containers=[b.container("main", requests=requests)])
    sim, scheduler, _ = _cluster(*nodes, *_copies(pod, "w", 1000))
    sim.run_for(30)  # how fast: bench/cluster.py
    assert scheduler.scheduled == 1000
    used = {p["spec"]["nodeName"] for p in sim.objects("pods")}
    assert len(used) > 500  # LeastAllocated spreads them
