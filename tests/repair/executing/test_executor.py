"""The executor turns act decisions into writes and outcomes; a dry run writes only Events."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from kubemedic.kube.api import Api
from kubemedic.repair.executing.executor import Executor, target_of_node
from kubemedic.repair.policy.records import Action, Decision, Kind, MachineRef, Outcome
from kubemedic.repair.providers import agent, contract
from kubemedic.repair.providers.base import ProviderContext, Target
from tests import factories as f
from tests.repair.executing.test_draining import mixed_node
from tests.repair.served import NODE, Served

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
CAPI = "cluster.x-k8s.io/v1beta1"


def act(action: Action, **args: str) -> Decision:
    return Decision(
        Kind.ACT,
        NODE,
        f"KubemedicRepair{action.value.title().replace('-', '')}",
        f"{action.value} {NODE}: Ready has been Unknown for 11m",
        action=action,
        repair="r-1",
        key=f"r-1/{action.value}",
        args=args,
    )


def executor(api: Api, *, dry_run: bool) -> Executor:
    context = ProviderContext(api=api, identity="kubemedic-0_ab12", settings=None, now=lambda: T0)
    return Executor(
        api=api,
        provider=agent.make(context),
        identity="kubemedic-0_ab12",
        dry_run=dry_run,
        now=lambda: T0,
    )


def run_all(served: Served, decisions: list[Decision], *, dry_run: bool) -> list[Outcome]:
    async def scenario(api: Api) -> list[Outcome]:
        hands = executor(api, dry_run=dry_run)
        outcomes = []
        for decision in decisions:
            await hands.announce(decision)
            outcomes.append(await hands.execute(decision))
        return outcomes

    return served.run(scenario)


EVERY_ACTION = [
    act(Action.RESTART_KUBELET),
    act(Action.CORDON),
    act(Action.DRAIN),
    act(Action.REBOOT),
    act(Action.FENCE),
    act(Action.UNFENCE),
    act(Action.UNCORDON),
    act(Action.QUARANTINE, reason="flapping"),
    act(Action.REPLACE),
]


def test_a_dry_run_writes_nothing_but_events(served: Served) -> None:
    mixed_node(served)
    node_before = served.node()
    pods_before = {name: p["metadata"]["resourceVersion"] for name, p in served.pods().items()}

    outcomes = run_all(served, EVERY_ACTION, dry_run=True)

    assert all(o.ok and o.detail == "dry run" for o in outcomes)
    assert served.node() == node_before
    pods_after = {name: p["metadata"]["resourceVersion"] for name, p in served.pods().items()}
    assert pods_after == pods_before
    messages = sorted(e["message"] for e in served.events())
    assert len(messages) == len(EVERY_ACTION)
    assert "dry run: would cordon: cordon worker-1: Ready has been Unknown for 11m" in messages
    assert all(m.startswith("dry run: would ") for m in messages)


def test_acting_cordons_drains_and_asks_the_agent(served: Served) -> None:
    mixed_node(served)

    restart, cordon, drain = run_all(
        served,
        [act(Action.RESTART_KUBELET, id="req-1"), act(Action.CORDON), act(Action.DRAIN)],
        dry_run=False,
    )

    assert restart.ok and restart.data["id"] == "req-1"
    request = json.loads(served.node()["metadata"]["annotations"][contract.REQUEST_ANNOTATION])
    assert request == {
        "id": "req-1",
        "action": "restart-kubelet",
        "requestedAt": "2026-12-02T10:00:00Z",
        "requester": "kubemedic-0_ab12",
    }
    assert cordon.ok and cordon.data == {"cordoned": "true"}
    assert (
        json.loads(served.node()["metadata"]["annotations"][contract.REPAIR_ANNOTATION])["id"]
        == "r-1"
    )
    assert not drain.ok  # evicted, still terminating
    assert drain.data["evicted"] == "2" and drain.data["state"] == "waiting"
    assert len(served.events()) == 3


def test_the_agents_acknowledgement_is_read_back_for_its_request_only(served: Served) -> None:
    run_all(served, [act(Action.RESTART_RUNTIME, id="req-2")], dry_run=False)
    ack = {"id": "req-2", "action": "restart-runtime", "state": "done",
           "at": "2026-12-02T10:00:04Z", "message": "containerd.service restarted"}  # fmt: skip
    status, body, _ = served.emulator.request(
        "PATCH",
        f"/api/v1/nodes/{NODE}?fieldManager=kubemedic-agent",
        {"metadata": {"annotations": {contract.ACK_ANNOTATION: json.dumps(ack)}}},
        content_type=contract.MERGE_PATCH,
    )
    assert status == 200, body

    found = served.run(lambda api: agent.read_ack(api, NODE, "req-2"))
    other = served.run(lambda api: agent.read_ack(api, NODE, "req-1"))

    assert found == agent.Ack(
        "req-2", "restart-runtime", "done", datetime(2026, 12, 2, 10, 0, 4, tzinfo=UTC),
        "containerd.service restarted",
    )  # fmt: skip
    assert other is None
    assert agent.parse_ack("{not json") is None
    assert agent.parse_ack('{"id": "x", "state": "maybe"}') is None


def machine_set() -> tuple[dict[str, Any], dict[str, Any]]:
    owner = {
        "apiVersion": CAPI,
        "kind": "MachineSet",
        "metadata": {"name": "workers-abc12", "namespace": "default", "uid": f.uid_for("ms")},
        "spec": {"clusterName": "prod", "replicas": 1, "selector": {}, "template": {}},
    }
    machine = {
        "apiVersion": CAPI,
        "kind": "Machine",
        "metadata": {
            "name": "workers-abc12-x7k2p",
            "namespace": "default",
            "uid": f.uid_for("machine"),
            "ownerReferences": [
                {
                    "apiVersion": CAPI,
                    "kind": "MachineSet",
                    "name": "workers-abc12",
                    "uid": f.uid_for("ms"),
                    "controller": True,
                }
            ],
        },
        "spec": {"clusterName": "prod", "bootstrap": {}, "infrastructureRef": {}},
    }
    return owner, machine


def test_replace_deletes_the_machine_its_machine_set_will_recreate(served: Served) -> None:
    owner, machine = machine_set()
    served.load(owner, machine)
    served.run(
        lambda api: contract.patch_node(
            api,
            NODE,
            {
                "metadata": {
                    "annotations": {
                        "cluster.x-k8s.io/machine": "workers-abc12-x7k2p",
                        "cluster.x-k8s.io/cluster-namespace": "default",
                        "cluster.x-k8s.io/owner-kind": "MachineSet",
                        "cluster.x-k8s.io/owner-name": "workers-abc12",
                    }
                }
            },
        )
    )
    assert target_of_node(served.node()).machine == MachineRef(
        "default", "workers-abc12-x7k2p", owner="MachineSet/workers-abc12"
    )

    [outcome] = run_all(served, [act(Action.REPLACE)], dry_run=False)

    assert outcome.ok, outcome.detail
    assert outcome.data == {"provider": "clusterapi"}
    status, _, _ = served.emulator.request(
        "GET", f"/apis/{CAPI}/namespaces/default/machines/workers-abc12-x7k2p"
    )
    assert status == 404


def test_replace_refuses_a_machine_nothing_would_recreate(served: Served) -> None:
    _, machine = machine_set()
    del machine["metadata"]["ownerReferences"]
    served.load(machine)
    target = Target(NODE, machine=MachineRef("default", "workers-abc12-x7k2p"))

    async def scenario(api: Api) -> Outcome:
        return await executor(api, dry_run=False).execute(act(Action.REPLACE), target=target)

    outcome = served.run(scenario)

    assert not outcome.ok
    assert "controlled by nothing, not a MachineSet" in outcome.detail
    status, _, _ = served.emulator.request(
        "GET", f"/apis/{CAPI}/namespaces/default/machines/workers-abc12-x7k2p"
    )
    assert status == 200


def test_uncordon_of_a_quarantined_node_fails_without_writing(served: Served) -> None:
    quarantine, uncordon = run_all(
        served, [act(Action.QUARANTINE, reason="flapping"), act(Action.UNCORDON)], dry_run=False
    )

    assert quarantine.ok
    assert not uncordon.ok and "kubemedic nodes release" in uncordon.detail
    assert served.node()["spec"]["unschedulable"] is True
    warning = [e for e in served.events() if e["reason"] == "KubemedicRepairQuarantine"]
    assert warning and warning[0]["type"] == "Warning"


def test_only_act_decisions_are_executed(served: Served) -> None:
    hold = Decision(Kind.HOLD, NODE, "KubemedicRepairHeld", "correlated failure")

    async def scenario(api: Api) -> Outcome:
        return await executor(api, dry_run=False).execute(hold)

    with pytest.raises(ValueError, match="not an act decision"):
        served.run(scenario)


def test_after_the_timeout_listed_classes_are_deleted_and_a_down_node_is_drained(
    served: Served,
) -> None:
    mixed_node(served)
    served.load(f.pod("debug-shell", node_name=NODE))  # standalone

    [drain] = run_all(
        served,
        [
            act(
                Action.DRAIN,
                delete_classes="standalone,app.kubernetes.io/name=web",
                unreachable="true",
            )
        ],
        dry_run=False,
    )

    assert drain.ok, drain.detail  # deleted, and the node cannot finish them: done
    assert drain.data["deleted"] == "3" and drain.data["evicted"] == "0"
    assert not served.pods()["default/logs-x1x2x"]["metadata"].get("deletionTimestamp")
