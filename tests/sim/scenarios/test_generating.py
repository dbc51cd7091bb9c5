"""The large-cluster generator: exact sizes, pods that fit their nodes, objects the emulator
accepts, and speed."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import UTC, datetime

import pytest

from kubemedic.model.quantities import parse_quantity
from kubemedic.sim.apiserver.registry import defaulting, zeroing
from kubemedic.sim.apiserver.server import ApiServer
from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.machinery.clock import VirtualClock
from kubemedic.sim.machinery.objects import clone
from kubemedic.sim.scenarios import generating
from kubemedic.sim.scenarios.generating import GeneratedPool, Layout, generate

SMALL = Layout(nodes=12, pods=300, namespaces=3)


def by_kind(objects: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = defaultdict(list)
    for obj in objects:
        out[obj["kind"]].append(obj)
    return out


def test_sizes_are_exactly_as_asked() -> None:
    result = generate(SMALL)
    kinds = by_kind(result.objects)
    assert (result.nodes, result.pods) == (12, 300)
    assert len(kinds["Node"]) == 12
    assert len(kinds["Pod"]) == 300
    assert len(kinds["DaemonSet"]) == result.daemonsets == 2
    assert len(kinds["Deployment"]) == len(kinds["ReplicaSet"]) == result.deployments


def test_nodes_are_spread_over_pools_and_zones() -> None:
    layout = Layout(
        nodes=30,
        pods=100,
        pools=(GeneratedPool("a", weight=1), GeneratedPool("b", weight=2)),
        zones=("z1", "z2", "z3"),
    )
    nodes = by_kind(generate(layout).objects)["Node"]
    pools = Counter(n["metadata"]["labels"][generating.POOL_LABEL] for n in nodes)
    zones = Counter(n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes)
    assert pools == {"a": 10, "b": 20}
    assert zones == {"z1": 10, "z2": 10, "z3": 10}


def test_every_pod_runs_on_a_node_it_fits() -> None:
    kinds = by_kind(generate(Layout(nodes=10, pods=800, replicas=(5, 40))).objects)
    nodes = {n["metadata"]["name"]: n["status"]["allocatable"] for n in kinds["Node"]}
    cpu: Counter[str] = Counter()
    memory: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for pod in kinds["Pod"]:
        node = pod["spec"]["nodeName"]
        requests = pod["spec"]["containers"][0]["resources"]["requests"]
        cpu[node] += parse_quantity(requests["cpu"]).milli
        memory[node] += int(parse_quantity(requests["memory"]).value)
        count[node] += 1
        assert pod["status"]["phase"] == "Running"
        assert pod["status"]["podIP"].startswith("10.")
    for name, allocatable in nodes.items():
        assert cpu[name] <= parse_quantity(allocatable["cpu"]).milli
        assert memory[name] <= parse_quantity(allocatable["memory"]).value
        assert count[name] <= int(allocatable["pods"])


def test_daemonsets_run_one_pod_per_node_and_deployments_avoid_tainted_nodes() -> None:
    layout = Layout(
        nodes=8,
        pods=100,
        pools=(
            GeneratedPool("gpu", taints=({"key": "gpu", "value": "true", "effect": "NoSchedule"},)),
            GeneratedPool("general"),
        ),
    )
    kinds = by_kind(generate(layout).objects)
    tainted = {n["metadata"]["name"] for n in kinds["Node"] if n["spec"].get("taints")}
    assert len(tainted) == 4
    per_owner: dict[str, Counter[str]] = defaultdict(Counter)
    for pod in kinds["Pod"]:
        owner = pod["metadata"]["ownerReferences"][0]
        per_owner[owner["kind"]][pod["spec"]["nodeName"]] += 1
        if owner["kind"] == "ReplicaSet":
            assert pod["spec"]["nodeName"] not in tainted
    assert set(per_owner["DaemonSet"].values()) == {2}  # two DaemonSets, one pod each per node
    assert len(per_owner["DaemonSet"]) == 8


def test_pods_and_templates_carry_usage_annotations() -> None:
    kinds = by_kind(generate(SMALL).objects)
    for obj in kinds["Pod"] + [d["spec"]["template"] for d in kinds["Deployment"]]:
        keys = list(obj["metadata"].get("annotations") or {})
        assert any(k.startswith("usage.sim.kubemedic.io/") for k in keys)


def test_the_same_seed_gives_the_same_cluster() -> None:
    assert generate(SMALL).objects == generate(SMALL).objects
    other = generate(Layout(nodes=12, pods=300, namespaces=3, seed=1))
    assert other.objects != generate(SMALL).objects


def test_generated_objects_pass_the_emulators_validation() -> None:
    server = ApiServer()
    client = Client(server, "kube-controller-manager")
    kinds = by_kind(generate(Layout(nodes=3, pods=40, namespaces=2)).objects)
    order = ("Namespace", "Node", "Deployment", "ReplicaSet", "DaemonSet", "Pod")
    for kind in order:
        for obj in kinds[kind][:8]:
            body = {k: v for k, v in obj.items() if k != "status"}
            meta = {k: v for k, v in body["metadata"].items() if k != "managedFields"}
            if kind == "Namespace" and server.store.get("namespaces", ("", meta["name"])):
                continue
            client.create({**body, "metadata": meta})


def test_generated_objects_load_into_the_server() -> None:
    result = generate(SMALL)
    server = ApiServer()
    server.load(result.objects)
    assert server.store.count("pods") == 300
    assert server.store.count("nodes") == 12


def test_more_pods_than_fit_stop_at_what_fits() -> None:
    layout = Layout(
        nodes=2,
        pods=5000,
        pools=(GeneratedPool("tiny", cpu="2", memory="4Gi", pods=50),),
    )
    result = generate(layout)
    assert result.pods < 5000
    assert result.pods == len(by_kind(result.objects)["Pod"])


@pytest.mark.timeout(60)
def test_two_thousand_nodes_and_sixty_thousand_pods_generate_in_seconds() -> None:
    result = generate(Layout(nodes=2000, pods=60_000))  # how fast: bench/cluster.py
    assert (result.nodes, result.pods) == (2000, 60_000)


def test_generated_objects_are_already_what_the_servers_defaulting_makes_of_them() -> None:
    """What lets ``load(..., defaulted=True)`` skip defaulting: it would change nothing (one-
    and two-replica Deployments: every size and request the generator draws appears)."""
    server = ApiServer()
    for obj in generate(Layout(nodes=10, pods=400, namespaces=2, replicas=(1, 2))).objects:
        res = server.registry.for_kind(obj["apiVersion"], obj["kind"])
        assert res is not None
        again = clone(obj)
        defaulting.default_object(again, group=res.group, version=res.version, kind=res.kind)
        zeroing.fill_required_scalars(again, server.defs.for_kind(res.group, res.version, res.kind))
        assert again == obj, obj["kind"]


def test_a_defaulted_load_stores_what_a_full_load_stores() -> None:
    objects = generate(Layout(nodes=10, pods=400, namespaces=2, replicas=(1, 2))).objects
    origin = datetime(2026, 3, 1, tzinfo=UTC)  # both servers stamp the same second
    full = ApiServer(clock=VirtualClock(origin, paused=True))
    fast = ApiServer(clock=VirtualClock(origin, paused=True))
    full.load(objects)
    fast.load(objects, defaulted=True)
    for obj in objects:
        res = full.registry.for_kind(obj["apiVersion"], obj["kind"])
        assert res is not None
        key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
        expected, got = full.store.get(res.store_key, key), fast.store.get(res.store_key, key)
        assert expected is not None and got is not None
        if res.kind == "Namespace":  # uids of namespaces are drawn by each server
            assert _without_uid(got.obj) == _without_uid(expected.obj), key
        else:
            assert got.obj == expected.obj, key


def _without_uid(obj: dict) -> dict:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "uid"}}
