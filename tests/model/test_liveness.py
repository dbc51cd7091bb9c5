"""model.liveness: when a node was last heard from, by its Lease and its status heartbeat."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kubemedic.model import liveness
from kubemedic.model.liveness import Liveness, judge
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import node, node_lease

NOW = BASE_TIME + timedelta(minutes=30)


def quiet(heartbeat: timedelta, name: str = "w-1") -> dict[str, Any]:
    return node(name, heartbeat=NOW - heartbeat, created=timedelta(days=-1))


def test_the_later_of_lease_and_status_heartbeat_is_last_heard() -> None:
    result = judge(
        quiet(timedelta(minutes=4)), node_lease("w-1", renewed=NOW - timedelta(seconds=7)), NOW
    )
    assert result == Liveness(
        last_heard=NOW - timedelta(seconds=7),
        lease_renewed=NOW - timedelta(seconds=7),
        status_heartbeat=NOW - timedelta(minutes=4),
        stale_for=7.0,
        lease_seen=True,
    )
    assert result.lease_counted and result.alive()
    newer_status = judge(
        quiet(timedelta(seconds=3)), node_lease("w-1", renewed=NOW - timedelta(minutes=2)), NOW
    )
    assert newer_status.last_heard == NOW - timedelta(seconds=3)
    assert newer_status.stale_for == 3.0


def test_without_a_lease_only_the_status_heartbeat_counts() -> None:
    result = judge(quiet(timedelta(minutes=6)), None, NOW)
    assert result.last_heard == NOW - timedelta(minutes=6)
    assert result.stale_for == 360.0
    assert not result.lease_seen and not result.lease_counted and result.lease_ignored == ""
    assert not result.alive()


def test_the_grace_period_is_the_1_32_default_and_can_be_given() -> None:
    assert liveness.NODE_MONITOR_GRACE_SECONDS == 50
    assert liveness.LEASE_RENEW_SECONDS == 10 and liveness.STATUS_REPORT_SECONDS == 300
    lease = node_lease("w-1", renewed=NOW - timedelta(seconds=50))
    result = judge(quiet(timedelta(minutes=3)), lease, NOW)
    assert result.alive()  # exactly the grace: still alive
    assert not result.alive(grace_seconds=40)  # the pre-1.32 default
    late = judge(
        quiet(timedelta(minutes=3)), node_lease("w-1", renewed=NOW - timedelta(seconds=51)), NOW
    )
    assert not late.alive()


def test_a_lease_held_by_another_identity_is_not_counted() -> None:
    result = judge(quiet(timedelta(minutes=6)), node_lease("w-1", renewed=NOW, holder="w-9"), NOW)
    assert result.lease_seen and not result.lease_counted
    assert result.lease_renewed is None
    assert result.lease_ignored == "the Lease is held by 'w-9', not by the node's kubelet"
    assert result.stale_for == 360.0
    # No holder at all: the controller does not look at it, neither does kubemedic.
    unheld = judge(quiet(timedelta(minutes=6)), node_lease("w-1", renewed=NOW, holder=""), NOW)
    assert unheld.lease_counted and unheld.stale_for == 0.0


@pytest.mark.parametrize(
    ("namespace", "name"), [("kube-system", "w-1"), ("kube-node-lease", "w-2")]
)
def test_a_lease_that_is_not_the_nodes_is_not_counted(namespace: str, name: str) -> None:
    result = judge(
        quiet(timedelta(minutes=6)), node_lease(name, renewed=NOW, namespace=namespace), NOW
    )
    assert not result.lease_counted
    assert result.lease_ignored == f"the Lease {namespace}/{name} is not kube-node-lease/w-1"


@pytest.mark.parametrize("garbled", [None, "", "soon", 17, {"at": "now"}, "2023-13-45T99:00:00Z"])
def test_missing_or_garbled_times_are_not_counted(garbled: object) -> None:
    lease = node_lease("w-1")
    lease["spec"]["renewTime"] = garbled
    result = judge(quiet(timedelta(minutes=2)), lease, NOW)
    assert not result.lease_counted
    assert result.lease_ignored == "the Lease has no readable spec.renewTime"
    assert result.stale_for == 120.0
    broken = quiet(timedelta(minutes=2))
    for condition in broken["status"]["conditions"]:
        condition["lastHeartbeatTime"] = garbled
    nothing = judge(broken, lease, NOW)
    assert nothing == Liveness(None, None, None, None, True, result.lease_ignored)
    assert not nothing.alive()


def test_garbled_bodies_do_not_crash() -> None:
    for body in ({}, {"status": None}, {"status": {"conditions": "Ready"}}, {"metadata": []}):
        assert judge(body, None, NOW).last_heard is None
    lease: dict[str, Any] = {"kind": "Lease", "metadata": None, "spec": []}
    assert not judge(quiet(timedelta(0)), lease, NOW).lease_counted


def test_a_time_ahead_of_now_is_heard_now_and_its_skew_kept() -> None:
    lease = node_lease("w-1", renewed=NOW + timedelta(seconds=12, microseconds=500000))
    result = judge(quiet(timedelta(minutes=7)), lease, NOW)
    assert result.last_heard == NOW
    assert result.stale_for == 0.0
    assert result.skew_seconds == 12.5
    assert result.lease_renewed == NOW + timedelta(seconds=12, microseconds=500000)
    assert judge(quiet(timedelta(minutes=7)), None, NOW).skew_seconds == 0.0


def test_the_times_alone_give_the_same_judgement_as_the_bodies() -> None:
    body, lease = quiet(timedelta(minutes=4)), node_lease("w-1", renewed=NOW - timedelta(seconds=7))
    renewed = liveness.lease_renewed(body, lease)
    assert renewed == NOW - timedelta(seconds=7)
    from_times = liveness.judge_times(NOW - timedelta(minutes=4), renewed, NOW)
    assert from_times == judge(body, lease, NOW)
    assert liveness.lease_renewed(body, None) is None
    assert liveness.lease_renewed(body, node_lease("w-1", holder="w-2")) is None
    silent = liveness.judge_times(None, None, NOW)
    assert silent.stale_for is None and not silent.lease_seen and not silent.alive()
