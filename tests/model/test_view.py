from datetime import timedelta

from kubemedic.model.objects import ObjectRef
from kubemedic.model.view import ClusterView
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import deployment, event, node, node_lease, pod, priority_class, replicaset


def test_owner_chain_walks_pod_to_replicaset_to_deployment() -> None:
    deploy = deployment("api", namespace="gateway", replicas=2)
    rs = replicaset(deploy)
    member = pod("api-5d8f7c9b4-abcde", namespace="gateway", owner=rs, node_name="n1")
    view = ClusterView.build([deploy, rs, member, node("n1")])
    assert view.owner_chain(member) == [
        ObjectRef("ReplicaSet", "api-5d8f7c9b4", "gateway", "apps/v1"),
        ObjectRef("Deployment", "api", "gateway", "apps/v1"),
    ]
    assert view.top_owner(member).name == "api"
    assert view.pods_on("n1") == [member]
    assert view.pods_by_owner[("ReplicaSet", "gateway", "api-5d8f7c9b4")] == [member]


def test_owner_chain_keeps_an_owner_missing_from_the_snapshot() -> None:
    rs = replicaset(deployment("api"))
    member = pod("api-x", owner=rs)
    view = ClusterView.build([member])
    assert [ref.kind for ref in view.owner_chain(member)] == ["ReplicaSet"]


def test_now_is_the_newest_timestamp_unless_given() -> None:
    n = node("n1", heartbeat=timedelta(minutes=30))
    view = ClusterView.build([n, pod("p", created=timedelta(minutes=5))])
    assert view.now.isoformat() == "2023-02-01T19:30:00+00:00"
    at = view.now - timedelta(hours=1)
    assert ClusterView.build([n], at=at).now == at


def test_priority_comes_from_spec_then_class_then_global_default() -> None:
    classes = [priority_class("high", 1000), priority_class("default", 10, global_default=True)]
    explicit = pod("a", priority=5)
    by_class = pod("b", priority_class="high")
    del by_class["spec"]["priority"]
    plain = pod("c")
    del plain["spec"]["priority"]
    view = ClusterView.build([*classes, explicit, by_class, plain])
    assert [view.priority_of(p) for p in (explicit, by_class, plain)] == [5, 1000, 10]


def test_events_from_both_apis_are_indexed_once_by_object() -> None:
    target = pod("hub-1", namespace="prod")
    core = event(involved=target, reason="Unhealthy", message="Liveness probe failed: timeout")
    modern = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": dict(core["metadata"]),
        "regarding": core["involvedObject"],
        "note": core["message"],
        "reason": "Unhealthy",
        "type": "Warning",
        "eventTime": core["firstTimestamp"],
    }
    view = ClusterView.build([target, core, modern])
    assert len(view.events) == 1
    assert view.events_about(ObjectRef("Pod", "hub-1", "prod"))[0].reason == "Unhealthy"


def test_unknown_kinds_are_counted_not_kept() -> None:
    view = ClusterView.build([{"kind": "ConfigMap"}, {"kind": "ConfigMap"}, {"kind": "Secret"}])
    assert view.unknown_kinds == {"ConfigMap": 2, "Secret": 1}


def test_node_leases_are_indexed_by_node_and_date_the_view() -> None:
    renewed = timedelta(minutes=7, seconds=3)
    bodies = [
        node("w-1", heartbeat=timedelta(minutes=2)),
        node_lease("w-1", renewed=renewed),
        node_lease("kube-controller-manager", renewed=timedelta(hours=1), namespace="kube-system"),
    ]
    view = ClusterView.build(bodies)
    assert view.node_lease("w-1") is bodies[1]
    assert view.node_lease("w-2") is None
    assert list(view.node_leases) == ["w-1"]  # leader-election Leases are not node Leases
    assert not view.unknown_kinds
    assert view.now == BASE_TIME + renewed  # the newest time, not the leader Lease's hour
