"""Builders for the repair policy's tests: nodes, states and a loop that plays the executor."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from kubemedic.repair.policy import deciding, ladder
from kubemedic.repair.policy.records import (
    Action,
    ClusterState,
    Condition,
    Decision,
    Kind,
    LedgerEntry,
    MachineRef,
    NodeObservation,
    Outcome,
    Plan,
    Power,
    Repair,
)
from kubemedic.repair.policy.settings import RepairSettings

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


def node(
    name: str,
    *,
    ready: str = "True",
    since: datetime = T0 - timedelta(hours=5),
    heartbeat: datetime | None = None,
    pool: str = "workers",
    zone: str = "zone-a",
    created: datetime = T0 - timedelta(days=3),
    boot_id: str = "boot-1",
    agent: bool = True,
    agent_beat: datetime | None = None,
    kubelet_unhealthy: bool = False,
    runtime_unhealthy: bool = False,
    reason: str = "",
    message: str = "",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    machine: MachineRef | None = None,
    unschedulable: bool = False,
    power: Power | None = None,
    now: datetime = T0,
) -> NodeObservation:
    """A node whose Ready has been ``ready`` since ``since`` (heartbeats fresh at ``now``)."""
    beat = heartbeat or now
    conditions = {
        "Ready": Condition(
            "Ready", ready, since, beat if ready == "True" else since, reason, message
        )
    }
    if agent:
        conditions["KubemedicAgentReady"] = Condition(
            "KubemedicAgentReady", "True", created, agent_beat or now
        )
    conditions["KubeletUnhealthy"] = Condition(
        "KubeletUnhealthy", "True" if kubelet_unhealthy else "False", since
    )
    conditions["ContainerRuntimeUnhealthy"] = Condition(
        "ContainerRuntimeUnhealthy", "True" if runtime_unhealthy else "False", since
    )
    return NodeObservation(
        name=name,
        created=created,
        labels={"topology.kubernetes.io/zone": zone, **(labels or {})},
        annotations=dict(annotations or {}),
        unschedulable=unschedulable,
        boot_id=boot_id,
        conditions=conditions,
        lease_renewed=beat if ready == "True" else None,
        zone=zone,
        pool=pool,
        machine=machine,
        power=power,
    )


def healthy_pool(
    count: int,
    *,
    prefix: str = "w",
    pool: str = "workers",
    zone: str = "zone-a",
    now: datetime = T0,
) -> list[NodeObservation]:
    return [node(f"{prefix}{i}", pool=pool, zone=zone, now=now) for i in range(count)]


def state(
    nodes: Iterable[NodeObservation],
    *,
    now: datetime = T0,
    repairs: Mapping[str, Repair] | None = None,
    ledger: Mapping[str, tuple[LedgerEntry, ...]] | None = None,
    not_ready_at: Mapping[str, tuple[datetime, ...]] | None = None,
    alerted: frozenset[str] = frozenset(),
    power_known: bool = False,
) -> ClusterState:
    return ClusterState(
        now=now,
        nodes=tuple(nodes),
        repairs=dict(repairs or {}),
        ledger=dict(ledger or {}),
        not_ready_at=dict(not_ready_at or {}),
        alerted=alerted,
        abilities=frozenset({Action.REBOOT, Action.POWER_ON}),
        power_known=power_known,
    )


def acting(settings: RepairSettings | None = None, **changes: object) -> RepairSettings:
    """Settings that act (not a dry run)."""
    return replace(settings or RepairSettings(), dry_run=False, **changes)  # type: ignore[arg-type]


def acts(plan: Plan, action: Action | None = None) -> list[Decision]:
    return [
        d for d in plan.decisions if d.kind is Kind.ACT and (action is None or d.action is action)
    ]


def of_kind(plan: Plan, kind: Kind) -> list[Decision]:
    return [d for d in plan.decisions if d.kind is kind]


def execute(
    plan: Plan,
    now: datetime,
    *,
    ok: bool = True,
    data: Mapping[Action, Mapping[str, str]] | None = None,
) -> dict[str, Repair]:
    """Play a perfect executor: every ``act`` succeeds (or fails with ``ok=False``)."""
    repairs = dict(plan.repairs)
    for decision in acts(plan):
        if decision.node not in repairs or decision.action is None:
            continue
        outcome = Outcome(
            decision.action,
            ok,
            "done" if ok else "failed",
            dict((data or {}).get(decision.action, {})),
        )
        repairs[decision.node] = ladder.fold(repairs[decision.node], decision, outcome, now)
    return repairs


def round_(
    nodes: Iterable[NodeObservation],
    settings: RepairSettings,
    *,
    now: datetime,
    repairs: Mapping[str, Repair] | None = None,
    **kwargs: object,
) -> Plan:
    return deciding.decide(state(nodes, now=now, repairs=repairs, **kwargs), settings)  # type: ignore[arg-type]
