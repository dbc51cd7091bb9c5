"""Playing scenarios: pools become nodes, objects are written as their managers, and timeline
actions fire at their times through the engine (on a cluster without components, so each
action's own effect is what is observed)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from kubemedic.model.quantities import parse_quantity
from kubemedic.sim.cluster import assembly as cluster_module
from kubemedic.sim.scenarios import timeline
from kubemedic.sim.scenarios.loading import parse
from kubemedic.sim.scenarios.timeline import ScenarioRun

POOLS = """
pools:
  - name: workers
    count: 4
    capacity: {cpu: "8", memory: 8Gi, pods: 110}
    labels: {team: web}
    taints: [{key: dedicated, value: web, effect: NoSchedule}]
    zones: [zone-a, zone-b]
    region: region-1
    instanceType: e2-standard-8
"""

DEPLOYMENT = """
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: shop, labels: {app: web}}
        spec:
          replicas: 3
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec:
              containers: [{name: web, image: nginx:1.27, resources: {requests: {memory: 800Mi}}}]
"""


def play(text: str) -> ScenarioRun:
    return timeline.start(parse(text), cluster=cluster_module.build(only=()))


def managers(obj: dict) -> list[tuple[str, str]]:
    return [(e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields", [])]


def test_pool_nodes_are_stored_as_registered_with_labels_taints_and_zones() -> None:
    run = play(POOLS)
    nodes = [run.sim.get("nodes", "", f"workers-{i}") for i in range(1, 5)]
    assert all(node is not None for node in nodes)
    first = nodes[0]
    assert first is not None
    labels = first["metadata"]["labels"]
    assert labels["team"] == "web"
    assert labels["node.kubernetes.io/pool"] == "workers"
    assert labels["node.kubernetes.io/instance-type"] == "e2-standard-8"
    assert labels["topology.kubernetes.io/region"] == "region-1"
    assert labels["kubernetes.io/hostname"] == "workers-1"
    zones = [n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes if n]
    assert zones == ["zone-a", "zone-b", "zone-a", "zone-b"]
    assert first["spec"]["taints"] == [{"key": "dedicated", "value": "web", "effect": "NoSchedule"}]
    status = first["status"]
    assert parse_quantity(status["capacity"]["memory"]).value == 8 << 30
    # allocatable: capacity less the kubelet's 100Mi hard eviction threshold
    assert parse_quantity(status["allocatable"]["memory"]).value == (8 << 30) - (100 << 20)
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True"
    assert run.cluster.hosts.find("workers-3") is not None
    assert run.pool_nodes("workers") == [f"workers-{i}" for i in range(1, 5)]


def test_objects_are_written_when_the_story_begins_as_their_field_manager() -> None:
    run = play(POOLS + "objects:\n  - manager: argocd-controller\n    manifests:\n" + DEPLOYMENT)
    deployment = run.sim.get("deployments.apps", "shop", "web")
    assert deployment is not None
    assert managers(deployment) == [("argocd-controller", "Apply")]
    assert run.sim.get("namespaces", "", "shop") is not None
    assert run.origin == run.sim.now()


def test_objects_created_with_update_read_like_a_create() -> None:
    text = (
        POOLS
        + "objects:\n  - {manager: helm, operation: Update, manifests: ["
        + (
            "{apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: shop},"
            " data: {a: b}}]}\n"
        )
    )
    run = play(text)
    config = run.sim.get("configmaps", "shop", "c")
    assert config is not None
    assert managers(config) == [("helm", "Update")]


def test_actions_fire_at_their_times_through_the_engine() -> None:
    run = play(
        POOLS
        + "timeline:\n"
        + "  - {at: 2m, action: mark, note: second}\n"
        + "  - {at: 30s, action: mark, note: first}\n"
    )
    run.sim.run_for(29)
    assert run.progress().done == 0
    run.sim.run_for(2)
    progress = run.progress()
    assert (progress.done, progress.total, progress.last) == (1, 2, "first")
    run.run()
    assert [(step.elapsed, step.text) for step in run.steps] == [
        (timedelta(seconds=30), "first"),
        (timedelta(minutes=2), "second"),
    ]
    assert run.sim.now() == run.end == run.origin + timedelta(minutes=30)


def test_edit_writes_as_kubectl_edit_with_an_update_and_apply_takes_its_fields_back() -> None:
    text = (
        POOLS
        + "objects:\n  - manager: argocd-controller\n    manifests:\n"
        + DEPLOYMENT
        + """timeline:
  - at: 1m
    action: edit
    target: {kind: Deployment, namespace: shop, name: web}
    patch: {spec: {replicas: 1, template: {spec: {nodeName: workers-2}}}}
  - at: 2m
    action: apply
    manager: argocd-controller
    manifests:
"""
        + DEPLOYMENT.replace("      - ", "      - ", 1)
    )
    run = play(text)
    run.run(until=run.origin + timedelta(seconds=90))
    edited = run.sim.get("deployments.apps", "shop", "web")
    assert edited is not None
    assert edited["spec"]["replicas"] == 1
    assert ("kubectl-edit", "Update") in managers(edited)
    run.run()
    synced = run.sim.get("deployments.apps", "shop", "web")
    assert synced is not None
    assert synced["spec"]["replicas"] == 3  # the applier's field, restored
    assert synced["spec"]["template"]["spec"]["nodeName"] == "workers-2"  # never in its manifest
    edit = next(e for e in synced["metadata"]["managedFields"] if e["manager"] == "kubectl-edit")
    assert edit["fieldsV1"] == {"f:spec": {"f:template": {"f:spec": {"f:nodeName": {}}}}}


def test_a_fault_for_a_while_repeats_like_a_flapping_node() -> None:
    run = play(
        POOLS
        + "timeline:\n"
        + "  - {at: 1m, action: fault, fault: kubelet-stopped, for: 2m,"
        + " repeat: {every: 5m, times: 2}, nodes: {names: [workers-1]}}\n"
    )
    host = run.cluster.hosts.get("workers-1")
    states = []
    for minute in (0.5, 1.5, 3.5, 6.5, 8.5, 12):
        run.run(until=run.origin + timedelta(minutes=minute))
        states.append(host.kubelet)
    assert states == ["running", "stopped", "running", "stopped", "running", "running"]
    assert run.progress().done == run.progress().total == 2


@pytest.mark.parametrize(
    ("fault", "attribute", "value"),
    [
        ("kubelet-hung", "kubelet", "hung"),
        ("runtime-hung", "runtime", "hung"),
        ("misconfig-transient", "misconfig", "transient"),
        ("misconfig-persistent", "misconfig", "persistent"),
        ("unreachable", "reachable", False),
        ("power-off", "powered", False),
    ],
)
def test_faults_set_the_hosts_state(fault: str, attribute: str, value: object) -> None:
    run = play(
        POOLS + f"timeline:\n  - {{at: 1m, action: fault, fault: {fault}, nodes: {{all: true}}}}\n"
    )
    run.run()
    assert {getattr(host, attribute) for host in run.cluster.hosts} == {value}


def test_a_reboot_clears_a_transient_misconfiguration_but_not_a_persistent_one() -> None:
    run = play(
        POOLS
        + """timeline:
  - {at: 1m, action: fault, fault: misconfig-transient, nodes: {names: [workers-1]}}
  - {at: 1m, action: fault, fault: misconfig-persistent, nodes: {names: [workers-2]}}
  - {at: 5m, action: reboot, nodes: {names: [workers-1, workers-2]}}
"""
    )
    hosts = run.cluster.hosts
    boot_ids = {name: hosts.get(name).boot_id for name in ("workers-1", "workers-2")}
    run.run()
    assert hosts.get("workers-1").misconfig == ""
    assert hosts.get("workers-2").misconfig == "persistent"
    assert all(hosts.get(name).boot_id != old for name, old in boot_ids.items())


def test_a_fraction_of_a_zone_is_sampled_from_the_scenario_seed() -> None:
    text = (
        "pools:\n  - {name: edge, count: 20, capacity: {cpu: 2, memory: 4Gi}, zones: [a, b]}\n"
        "timeline:\n  - {at: 1m, action: fault, fault: unreachable,"
        " nodes: {zone: b, fraction: 0.4}}\n"
    )

    def unreachable() -> list[str]:
        run = play(text)
        run.run()
        return sorted(host.name for host in run.cluster.hosts if not host.reachable)

    first = unreachable()
    assert len(first) == 4  # 40% of zone b's 10 nodes
    assert all(int(name.split("-")[1]) % 2 == 0 for name in first)  # zone b: even nodes
    assert unreachable() == first


def test_scale_pool_adds_machines_over_the_window_with_their_startup_taints() -> None:
    run = play(
        """
pools:
  - name: dask
    count: 1
    capacity: {cpu: "4", memory: 16Gi}
    bootTime: 30s
    startupTaints:
      - {key: example.com/agent-not-ready, effect: NoSchedule, clearAfter: 2m, manager: agent}
timeline:
  - {at: 1m, action: scale-pool, pool: dask, add: 10, over: 1m}
"""
    )
    run.run(until=run.origin + timedelta(seconds=91))
    assert len(run.pool_nodes("dask")) == 2  # the first new machine has booted
    run.run(until=run.origin + timedelta(seconds=151))
    names = run.pool_nodes("dask")
    assert len(names) == 11
    newest = run.sim.get("nodes", "", names[-1])
    assert newest is not None
    keys = [t["key"] for t in newest["spec"]["taints"]]
    assert keys == ["example.com/agent-not-ready", "node.kubernetes.io/not-ready"]
    assert managers(newest) == [("kubelet", "Update")]
    run.run(until=run.origin + timedelta(minutes=5))
    # The startup taints are cleared; only admission's not-ready taint is left, for the node
    # lifecycle controller (not part of this cluster) to lift.
    keys = {t["key"] for n in run.sim.objects("nodes") for t in n["spec"].get("taints") or ()}
    assert keys == {"node.kubernetes.io/not-ready"}


def test_scale_pool_down_removes_the_newest_machines() -> None:
    run = play(
        POOLS
        + """timeline:
  - {at: 1m, action: scale-pool, pool: workers, add: 2}
  - {at: 5m, action: scale-pool, pool: workers, replicas: 3}
"""
    )
    run.run(until=run.origin + timedelta(minutes=4))
    assert len(run.pool_nodes("workers")) == 6
    run.run()
    assert run.pool_nodes("workers") == ["workers-1", "workers-2", "workers-3"]
    assert run.cluster.hosts.find("workers-6") is None


def test_a_failed_action_is_recorded_and_the_story_goes_on() -> None:
    run = play(
        POOLS
        + """timeline:
  - {at: 1m, action: patch, target: {kind: Deployment, namespace: shop, name: nope}, patch: {}}
  - {at: 2m, action: reboot, nodes: {pool: workers, selector: "team=db"}}
  - {at: 3m, action: mark, note: still here}
"""
    )
    run.run()
    assert len(run.failures) == 2
    assert str(run.failures[0]).startswith(
        "timeline[0]: patch Deployment shop/nope as kubectl-patch: 404"
    )
    assert str(run.failures[1]) == "timeline[1]: reboot: no node matches"
    assert [f.elapsed for f in run.failures] == [timedelta(minutes=1), timedelta(minutes=2)]
    assert run.progress().last == "still here"


def test_untaint_removes_one_taint_as_its_manager() -> None:
    text = (
        POOLS.replace("taints: [", "taints: [{key: gpu, value: a100, effect: NoSchedule}, ")
        + "timeline:\n  - {at: 1m, action: untaint, key: dedicated,"
        + " nodes: {selector: {team: web}}}\n"
    )
    run = play(text)
    run.run()
    node = run.sim.get("nodes", "", "workers-1")
    assert node is not None
    assert node["spec"]["taints"] == [{"key": "gpu", "value": "a100", "effect": "NoSchedule"}]
    assert ("kubectl-taint", "Update") in managers(node)


def test_run_paced_keeps_to_the_speed_and_stops_at_the_end() -> None:
    run = play(POOLS + "duration: 20s\ntimeline:\n  - {at: 10s, action: mark, note: half}\n")
    stepped = []
    asyncio.run(run.run_paced(200.0, on_step=lambda: stepped.append(run.progress().elapsed)))
    assert run.sim.now() == run.end
    assert run.progress().last == "half"
    assert stepped and stepped[-1] == timedelta(seconds=20)


def test_progress_fraction_follows_the_scenario_clock() -> None:
    run = play(POOLS + "duration: 10m\n")
    run.run(until=run.origin + timedelta(minutes=5))
    assert run.progress().fraction == pytest.approx(0.5)


def test_clusterapi_pool_is_provisioned_before_the_story_begins() -> None:
    scenario = parse(
        """
pools:
  - name: md
    count: 3
    provider: clusterapi
    capacity: {cpu: "4", memory: 16Gi, pods: 110}
    zones: [az1, az2]
    autoscaling: {min: 1, max: 10}
timeline:
  - {at: 1m, action: scale-pool, pool: md, add: 1}
"""
    )
    built = cluster_module.build(only=("kubelets", "nodelifecycle", "clusterapi"))
    run = timeline.start(scenario, cluster=built)
    assert run.origin > built.sim.clock.now() - timedelta(seconds=1)
    nodes = [run.sim.get("nodes", "", name) for name in run.pool_nodes("md")]
    assert len(nodes) == 3
    assert all(n is not None and ready_status(n) == "True" for n in nodes)
    mds = {md["metadata"]["name"]: md for md in run.sim.objects(timeline.MD_STORE)}
    assert {name: md["spec"]["replicas"] for name, md in mds.items()} == {
        "sim-md-az1": 2,
        "sim-md-az2": 1,
    }
    annotations = mds["sim-md-az1"]["metadata"]["annotations"]
    prefix = "cluster.x-k8s.io/cluster-api-autoscaler-node-group"
    assert (annotations[f"{prefix}-min-size"], annotations[f"{prefix}-max-size"]) == ("1", "10")
    run.run(until=run.origin + timedelta(seconds=61))
    scaled = run.sim.get(timeline.MD_STORE, "default", "sim-md-az2")
    assert scaled is not None and scaled["spec"]["replicas"] == 2
    assert ("cluster-autoscaler", "Update") in managers(scaled)


def ready_status(node: dict) -> str:
    return next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")


def test_new_nodes_stay_tainted_until_their_network_is_set_up() -> None:
    scenario = parse(
        """
pools:
  - name: dask
    count: 1
    capacity: {cpu: "4", memory: 16Gi}
    bootTime: 30s
    startupTaints:
      - {key: node.kubernetes.io/not-ready, effect: NoSchedule}
      - {key: node.kubernetes.io/network-unavailable, effect: NoSchedule, clearAfter: 2m}
timeline:
  - {at: 1m, action: scale-pool, pool: dask, add: 1}
"""
    )
    built = cluster_module.build(only=("kubelets", "nodelifecycle"))
    run = timeline.start(scenario, cluster=built)
    seen: list[set[str]] = []

    def note() -> None:
        body = run.sim.get("nodes", "", "dask-2")
        if body is not None:
            keys = {t["key"].rsplit("/", 1)[-1] for t in body["spec"].get("taints") or ()}
            if not seen or seen[-1] != keys:
                seen.append(keys)

    run.run(note)
    # Ready after its CNI starts; routed two minutes after registration.
    assert seen == [{"not-ready", "network-unavailable"}, {"network-unavailable"}, set()]
    body = run.sim.get("nodes", "", "dask-2")
    assert body is not None
    network = next(c for c in body["status"]["conditions"] if c["type"] == "NetworkUnavailable")
    assert (network["status"], network["reason"]) == ("False", "RouteCreated")
