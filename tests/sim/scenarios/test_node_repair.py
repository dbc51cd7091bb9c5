"""The ``node-repair`` scenario, played with no repair controller: its faults appear on the nodes
its header names, the node agent reports them, and a pod on the powered-off node stays
``Terminating`` until the node is fenced with the out-of-service taint.

One run of the first 24 minutes (a module fixture) serves the checks that only read; the last
tests change the cluster (a taint, a Machine deleted) and come last in the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import pytest

from kubemedic.model.objects import parse_time
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.scenarios import loading as scenarios
from kubemedic.sim.scenarios.timeline import ScenarioRun

A, B, C = "sim-workers-zone-a-mtpxj-", "sim-workers-zone-b-vgmg7-", "sim-batch-zone-c-vtq89-"
KUBELET_STOPPED = A + "5djxk"
FLAPPING = B + "8qnxk"
POWERED_OFF = A + "5fwn9"
RUNTIME_HUNG = B + "cz4lt"
TRANSIENT = A + "k8g8w"
PERSISTENT = B + "dd47g"
BLOCKED = A + "sddnv"
ZONE_C_DOWN = [C + s for s in ("42bzt", "58zgm", "8wbd6", "9nk6n")]
FAULTY = {KUBELET_STOPPED, POWERED_OFF, RUNTIME_HUNG, TRANSIENT, PERSISTENT, BLOCKED}
OUT_OF_SERVICE = {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown"}


@pytest.fixture(scope="module")
def run() -> ScenarioRun:
    played = ScenarioRun(scenarios.load("node-repair"))
    played.run(until=played.origin + timedelta(minutes=24))
    return played


def node(run: ScenarioRun, name: str) -> Mapping[str, Any]:
    found = run.sim.get("nodes", "", name)
    assert found is not None, name
    return found


def condition(run: ScenarioRun, name: str, type_: str) -> Mapping[str, Any]:
    for cond in node(run, name)["status"]["conditions"]:
        if cond["type"] == type_:
            return dict(cond)
    raise AssertionError(f"{name} has no {type_}")


def db_pods(run: ScenarioRun) -> list[Mapping[str, Any]]:
    return [p for p in run.sim.objects("pods", namespace="shop") if p["metadata"]["name"] == "db-0"]


def test_every_fault_is_on_the_node_the_header_names(run: ScenarioRun) -> None:
    assert not run.failures
    names = set(run.pool_nodes("workers")) | set(run.pool_nodes("batch"))
    assert FAULTY | {FLAPPING, *ZONE_C_DOWN} <= names
    not_ready = {n for n in names if condition(run, n, "Ready")["status"] != "True"}
    assert not_ready == FAULTY  # at 24m: the flapping node has just gone down, zone-c not yet
    unknown = {n for n in not_ready if condition(run, n, "Ready")["status"] == "Unknown"}
    assert unknown == {KUBELET_STOPPED, POWERED_OFF}


def test_pools_are_machine_owned_with_the_annotations_cluster_api_sets(run: ScenarioRun) -> None:
    for name in run.pool_nodes("workers"):
        body = node(run, name)
        notes = body["metadata"]["annotations"]
        assert notes["cluster.x-k8s.io/machine"] == name
        assert notes["cluster.x-k8s.io/owner-kind"] == "MachineSet"
        assert notes["cluster.x-k8s.io/owner-name"].startswith(name.rsplit("-", 1)[0])
        assert notes["cluster.x-k8s.io/cluster-name"] == "sim"
        assert notes["cluster.x-k8s.io/cluster-namespace"] == "default"
        assert body["spec"]["providerID"].startswith("openstack:///")
    md = run.sim.get("machinedeployments.cluster.x-k8s.io", "default", "sim-workers-zone-a")
    assert md is not None
    notes = md["metadata"]["annotations"]
    assert notes["cluster.x-k8s.io/cluster-api-autoscaler-node-group-min-size"] == "4"
    assert notes["cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size"] == "8"


def test_the_agent_reports_the_hangs_while_the_kubelet_is_down(run: ScenarioRun) -> None:
    stopped = condition(run, KUBELET_STOPPED, "KubeletUnhealthy")
    assert (stopped["status"], stopped["reason"]) == ("True", "KubeletStopped")
    hung = condition(run, RUNTIME_HUNG, "ContainerRuntimeUnhealthy")
    assert (hung["status"], hung["reason"]) == ("True", "ContainerRuntimeHung")
    for name in (TRANSIENT, PERSISTENT, BLOCKED):  # misconfigured: both daemons answer
        assert condition(run, name, "KubeletUnhealthy")["status"] == "False"
        assert condition(run, name, "ContainerRuntimeUnhealthy")["status"] == "False"
    now = run.sim.now()
    for name in run.pool_nodes("workers"):
        ready = condition(run, name, "KubemedicAgentReady")
        beat = now - _time(ready["lastHeartbeatTime"])
        if name == POWERED_OFF:
            assert beat > timedelta(minutes=10)  # off: nothing writes, the heartbeat is stale
        else:
            assert ready["status"] == "True" and beat <= timedelta(seconds=40)
    fields = node(run, KUBELET_STOPPED)["metadata"]["managedFields"]
    assert any(
        f["manager"] == "kubemedic-agent" and f.get("subresource") == "status" for f in fields
    )


def test_the_flapping_node_went_unknown_and_back(run: ScenarioRun) -> None:
    ready = condition(run, FLAPPING, "Ready")
    assert ready["status"] == "True"  # down again at 24m, not yet past the grace period
    events = [
        e
        for e in run.sim.objects("events")
        if e.get("involvedObject", {}).get("name") == FLAPPING and e.get("reason") == "NodeNotReady"
    ]
    assert events


def test_the_budget_blocks_the_eviction_of_the_ledger_pods(run: ScenarioRun) -> None:
    pods = list(run.sim.objects("pods", namespace="payments"))
    assert len(pods) == 2
    assert {p["spec"]["nodeName"] for p in pods} == {BLOCKED}
    assert not any(p["metadata"].get("deletionTimestamp") for p in pods)  # tolerated forever
    pdb = run.sim.get("poddisruptionbudgets.policy", "payments", "ledger")
    assert pdb is not None and pdb["status"]["disruptionsAllowed"] == 0


def test_the_statefulset_pod_is_stuck_terminating_on_the_powered_off_node(
    run: ScenarioRun,
) -> None:
    (pod,) = db_pods(run)
    assert pod["spec"]["nodeName"] == POWERED_OFF
    assert pod["metadata"].get("deletionTimestamp")  # taint eviction after 300 s
    sts = run.sim.get("statefulsets.apps", "shop", "db")
    assert sts is not None and sts["status"]["readyReplicas"] == 0


# the tests below change the cluster ----------------------------------------------------------


def test_the_out_of_service_taint_lets_the_pod_start_elsewhere_and_it_stays_gone(
    run: ScenarioRun,
) -> None:
    (old,) = db_pods(run)
    client = Client(run.sim.server, "kubemedic-repair")
    taints = [
        *node(run, POWERED_OFF)["spec"].get("taints", ()),
        {**OUT_OF_SERVICE, "effect": "NoExecute"},
    ]
    client.patch("v1", "Node", POWERED_OFF, {"spec": {"taints": taints}})
    run.run(until=run.sim.now() + timedelta(minutes=2))
    (new,) = db_pods(run)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["spec"]["nodeName"] not in (POWERED_OFF, "")
    assert new["status"]["phase"] == "Running"
    # The machine comes back (powered on): its kubelet must not bring the old pod back.
    host = run.cluster.hosts.get(POWERED_OFF)
    host.power_on(run.sim.seconds())
    run.run(until=run.sim.now() + timedelta(minutes=4))
    assert condition(run, POWERED_OFF, "Ready")["status"] == "True"
    (after,) = db_pods(run)
    assert after["metadata"]["uid"] == new["metadata"]["uid"]
    assert after["spec"]["nodeName"] == new["spec"]["nodeName"]
    assert condition(run, POWERED_OFF, "KubemedicAgentReady")["status"] == "True"


def test_a_deleted_machine_is_replaced_by_a_ready_node(run: ScenarioRun) -> None:
    client = Client(run.sim.server, "kubemedic-repair")
    client.delete("cluster.x-k8s.io/v1beta1", "Machine", PERSISTENT, namespace="default")
    run.run(until=run.sim.now() + timedelta(minutes=8))
    assert run.sim.get("nodes", "", PERSISTENT) is None
    workers = run.pool_nodes("workers")
    assert len(workers) == 12
    (fresh,) = [n for n in workers if n.startswith(B) and _created_after(run, n, minutes=20)]
    assert condition(run, fresh, "Ready")["status"] == "True"
    assert node(run, fresh)["metadata"]["annotations"]["cluster.x-k8s.io/machine"] == fresh


def _created_after(run: ScenarioRun, name: str, *, minutes: int) -> bool:
    created = _time(node(run, name)["metadata"]["creationTimestamp"])
    return created > run.origin + timedelta(minutes=minutes)


def _time(text: str) -> datetime:
    moment = parse_time(text)
    assert moment is not None
    return moment
