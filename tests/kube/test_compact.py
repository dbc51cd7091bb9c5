"""Compact caches: pruning keeps what the checks read, packing gives back exactly what was put."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubemedic.checks import run_checks
from kubemedic.kube.compact import (
    CompactCache,
    compact_for,
    compact_node,
    compact_object,
    compact_pod,
    compact_workload,
)
from kubemedic.model.liveness import judge
from kubemedic.model.view import ClusterView
from kubemedic.snapshot.loading import load_snapshot
from tests import paths
from tests.factories import (
    container,
    deployment,
    event,
    managed_entry,
    node,
    node_lease,
    pod,
)

SNAPSHOTS = paths.SNAPSHOTS
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def served_pod() -> dict[str, Any]:
    """A pod as the API server serves it: managedFields, annotations, the kubelet's extras."""
    body = pod(
        "web-7d4b9c-x2x9z",
        node_name="node-1",
        containers=[
            container(
                "web",
                requests={"cpu": "100m", "memory": "128Mi"},
                limits={"memory": "256Mi"},
                liveness={"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 5},
            )
        ],
        init_containers=[container("proxy", restart_policy="Always")],
        labels={"app": "web", "pod-template-hash": "7d4b9c"},
        priority_class="high",
    )
    meta = body["metadata"]
    meta["resourceVersion"] = "4711"
    meta["annotations"] = {
        "kubernetes.io/config.source": "api",
        "prometheus.io/scrape": "true",
        LAST_APPLIED: '{"kind":"Pod"}',
    }
    meta["managedFields"] = [
        managed_entry(manager="kubelet", fields={"f:status": {}}, subresource="status")
    ]
    spec = body["spec"]
    spec["containers"][0]["env"] = [{"name": "LOG_LEVEL", "value": "info"}]
    spec["containers"][0]["readinessProbe"] = {"tcpSocket": {"port": 8080}}
    spec["volumes"] = [{"name": "data", "emptyDir": {}}]
    spec["tolerations"] = [{"key": "node.kubernetes.io/not-ready", "operator": "Exists"}]
    status = body["status"]
    status["podIP"] = "10.0.0.7"
    status["conditions"][0]["lastProbeTime"] = None
    status["containerStatuses"][0]["containerID"] = "containerd://abc"
    status["containerStatuses"][0]["lastState"] = {
        "terminated": {
            "exitCode": 137,
            "reason": "OOMKilled",
            "finishedAt": "2026-01-01T00:00:00Z",
            "containerID": "containerd://old",
        }
    }
    return body


def test_a_pod_keeps_what_checks_read_and_loses_the_rest() -> None:
    full = served_pod()
    small = compact_pod(full)
    meta, spec, status = small["metadata"], small["spec"], small["status"]
    assert "managedFields" not in meta
    assert meta["annotations"] == {"kubernetes.io/config.source": "api"}
    assert meta["resourceVersion"] == "4711" and meta["labels"] == full["metadata"]["labels"]
    web = spec["containers"][0]
    assert set(web) == {"name", "image", "resources", "livenessProbe"}
    assert spec["initContainers"][0]["restartPolicy"] == "Always"
    assert spec["tolerations"] == full["spec"]["tolerations"]
    assert "volumes" not in spec and "schedulerName" not in spec
    assert "podIP" not in status
    assert "lastProbeTime" not in status["conditions"][0]
    last = status["containerStatuses"][0]["lastState"]["terminated"]
    assert last == {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:00:00Z"}
    assert "containerID" not in status["containerStatuses"][0]
    assert full["metadata"]["managedFields"], "the input is left as it was"


def test_a_pod_without_the_kubelet_annotations_has_no_annotations_at_all() -> None:
    full = served_pod()
    full["metadata"]["annotations"] = {"prometheus.io/scrape": "true"}
    assert "annotations" not in compact_pod(full)["metadata"]


def test_workloads_keep_managed_fields_and_lose_the_last_applied_copy() -> None:
    body = deployment("web", node_name="node-1")
    body["metadata"]["managedFields"] = [managed_entry(manager="kubectl-edit", fields={})]
    body["metadata"]["annotations"] = {LAST_APPLIED: "{}", "argocd.argoproj.io/tracking-id": "x"}
    small = compact_for("Deployment")(body)
    assert small["metadata"]["managedFields"] == body["metadata"]["managedFields"]
    assert small["metadata"]["annotations"] == {"argocd.argoproj.io/tracking-id": "x"}
    assert compact_for("Deployment") is compact_workload


def test_nodes_and_other_kinds_lose_managed_fields_and_node_images() -> None:
    body = node("node-1")
    body["metadata"]["managedFields"] = [managed_entry(manager="kubelet", fields={})]
    body["status"]["images"] = [{"names": ["registry.example/big:1"], "sizeBytes": 1}]
    small = compact_node(body)
    assert "managedFields" not in small["metadata"] and "images" not in small["status"]
    assert small["status"]["conditions"] == body["status"]["conditions"]
    warning = event(involved=pod("web-1"), reason="BackOff", message="Back-off restarting")
    warning["metadata"]["managedFields"] = [managed_entry(manager="kubelet", fields={})]
    assert "managedFields" not in compact_for("Event")(warning)["metadata"]
    assert compact_for("Event") is compact_object


def test_a_cached_node_lease_keeps_what_liveness_reads() -> None:
    lease = node_lease("node-1", renewed=timedelta(seconds=7, microseconds=250))
    lease["metadata"]["managedFields"] = [managed_entry(manager="kubelet", fields={})]
    cache = CompactCache()
    cache.put(compact_for("Lease")(lease))
    got = cache["kube-node-lease/node-1"]
    assert got["metadata"]["name"] == "node-1"
    assert got["metadata"]["namespace"] == "kube-node-lease"
    assert got["spec"] == lease["spec"]  # holderIdentity, renewTime (microseconds)
    assert "managedFields" not in got["metadata"]
    view = ClusterView.build([node("node-1", heartbeat=timedelta(minutes=-6)), got])
    assert judge(view.nodes["node-1"], view.node_lease("node-1"), view.now).stale_for == 0.0


def test_the_cache_gives_back_exactly_the_compact_body_as_a_fresh_dict() -> None:
    cache = CompactCache()
    small = compact_pod(served_pod())
    cache.put(small)
    got = cache["default/web-7d4b9c-x2x9z"]
    assert got == small
    got["metadata"]["labels"]["app"] = "changed"
    assert cache["default/web-7d4b9c-x2x9z"] == small, "a caller's change stays its own"
    assert list(cache) == ["default/web-7d4b9c-x2x9z"] and len(cache) == 1
    assert cache.resource_version(("default", "web-7d4b9c-x2x9z")) == "4711"
    assert "default/web-7d4b9c-x2x9z" in cache and "default/other" not in cache


def test_cluster_scoped_objects_are_keyed_by_name() -> None:
    cache = CompactCache()
    cache.put(compact_node(node("node-1")))
    assert list(cache) == ["node-1"]
    assert cache["node-1"]["metadata"]["name"] == "node-1"


def test_pods_of_one_shape_share_a_template_and_unused_templates_go() -> None:
    cache = CompactCache()
    for index in range(50):
        body = served_pod()
        body["metadata"]["name"] = f"web-{index}"
        cache.put(compact_pod(body))
    assert cache.template_count == 1
    cache.put(compact_node(node("node-1")))
    assert cache.template_count == 2
    assert cache.remove("node-1") is not None
    assert cache.template_count == 1
    deleted = cache.missing_from({("default", "web-0")})
    assert len(deleted) == 49
    cache.clear()
    assert cache.template_count == 0 and len(cache) == 0


json_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_trees = st.recursive(
    json_leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_trees, max_size=5), st.text(min_size=1))
def test_packing_round_trips_any_json_body(extra: dict[str, Any], name: str) -> None:
    body = {**extra, "metadata": {"name": name, "namespace": "ns", "labels": extra}}
    twin = {**extra, "metadata": {"name": f"{name}-2", "namespace": "ns", "labels": extra}}
    cache = CompactCache()
    cache.put(body)
    assert cached(cache, name) == body, "a one-of-a-kind shape, walked"
    cache.put(twin)
    assert cached(cache, name) == body, "a shared shape, compiled"
    assert cached(cache, f"{name}-2") == twin


def cached(cache: CompactCache, name: str) -> dict[str, Any] | None:
    """The body the cache rebuilds for ``ns/name``."""
    return next((b for b in cache.bodies() if b["metadata"]["name"] == name), None)


def test_a_very_deep_body_round_trips_too() -> None:
    deep: Any = "leaf"
    for level in range(150):
        deep = {f"k{level}": [deep]}
    body = {"metadata": {"name": "deep"}, "spec": deep}
    cache = CompactCache()
    cache.put(body)
    cache.put({"metadata": {"name": "twin"}, "spec": deep})
    assert cache["deep"] == body
    assert cache["twin"]["spec"] == deep


def _compacted(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every body through its kind's compactor and a cache per collection, as reflectors keep
    them."""
    caches: dict[tuple[str, str], CompactCache] = defaultdict(CompactCache)
    for body in bodies:
        kind = str(body.get("kind"))
        caches[(str(body.get("apiVersion")), kind)].put(compact_for(kind)(body))
    return [body for cache in caches.values() for body in cache.bodies()]


@pytest.mark.parametrize("snapshot", sorted(p.name for p in SNAPSHOTS.iterdir() if p.is_dir()))
def test_a_compacted_snapshot_scans_to_the_same_findings(snapshot: str) -> None:
    bodies = load_snapshot(SNAPSHOTS / snapshot).bodies
    full_view = ClusterView.build(bodies)
    compact_view = ClusterView.build(_compacted(bodies))
    assert compact_view.now == full_view.now
    assert len(compact_view.pods) == len(full_view.pods)
    full = [finding.to_json() for finding in run_checks(full_view)]
    compacted = [finding.to_json() for finding in run_checks(compact_view)]
    assert full or snapshot == "4-healthy-control", "the incidents' snapshots have findings"
    assert compacted == full
