"""The ladder end to end on plain values: restart, reboot, replace, quarantine."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from kubemedic.model import agentcontract
from kubemedic.repair.policy.records import Action, Kind, MachineRef, Power, Step
from kubemedic.repair.policy.settings import RepairSettings

from .builders import MINUTE, T0, acting, acts, execute, node, of_kind, round_

SETTINGS = acting()
DOWN = T0 - 10 * MINUTE  # NotReady since: unhealthy at T0


def test_a_hung_kubelet_the_agent_can_reach_is_restarted_then_verified() -> None:
    sick = node("w1", ready="Unknown", since=DOWN, kubelet_unhealthy=True)
    plan = round_([sick], SETTINGS, now=T0)
    assert [d.kind for d in plan.decisions] == [Kind.START, Kind.ACT]
    (act,) = acts(plan)
    assert act.action is Action.RESTART_KUBELET and act.reason == "KubemedicRepairRestartKubelet"
    assert "restart -> reboot -> replace -> quarantine" in of_kind(plan, Kind.START)[0].message
    repairs = execute(plan, T0)
    assert repairs["w1"].phase == "verify" and repairs["w1"].request == act.args["id"]

    # Ready again a minute later; it must hold five minutes before it counts.
    back = T0 + MINUTE
    well = node("w1", since=back, now=back + MINUTE)
    plan = round_([well], SETTINGS, now=back + MINUTE, repairs=repairs)
    assert not acts(plan) and plan.repairs["w1"].ready_since == back
    assert plan.wake_at == back + 5 * MINUTE
    done = round_(
        [node("w1", since=back, now=back + 5 * MINUTE)],
        SETTINGS,
        now=back + 5 * MINUTE,
        repairs=plan.repairs,
    )
    assert not done.repairs
    (entry,) = done.finished
    assert entry.outcome == "repaired"
    assert [s.action for s in entry.steps] == ["restart-kubelet"]


def test_a_runtime_hang_restarts_the_runtime() -> None:
    sick = node("w2", ready="False", since=DOWN, message="container runtime is down")
    (act,) = acts(round_([sick], SETTINGS, now=T0))
    assert act.action is Action.RESTART_RUNTIME


def test_a_daemon_the_agent_gave_up_on_is_rebooted_not_restarted() -> None:
    """The agent restarted it to its limit (reason ``KubeletRepairFailed`` or
    ``ContainerRuntimeRepairFailed``): another restart will not help, the ladder starts at a
    reboot."""
    for kind, reason in (
        ("KubeletUnhealthy", agentcontract.KUBELET_GAVE_UP),
        ("ContainerRuntimeUnhealthy", agentcontract.RUNTIME_GAVE_UP),
    ):
        sick = node("w1", ready="Unknown", since=DOWN)
        conditions = dict(sick.conditions)
        conditions[kind] = replace(conditions[kind], status="True", reason=reason)
        plan = round_([replace(sick, conditions=conditions)], SETTINGS, now=T0)
        assert acts(plan)[0].action is Action.CORDON, reason
        assert not [a for a in acts(plan) if a.action is Action.RESTART_KUBELET]


def test_an_unreachable_agent_skips_the_restart_and_reboots() -> None:
    sick = node(
        "w1", ready="Unknown", since=DOWN, kubelet_unhealthy=True, agent_beat=T0 - 5 * MINUTE
    )
    plan = round_([sick], SETTINGS, now=T0)
    assert acts(plan)[0].action is Action.CORDON
    assert "cannot be reached" in of_kind(plan, Kind.START)[0].message


def test_a_refused_restart_escalates_to_a_reboot() -> None:
    sick = node("w1", ready="Unknown", since=DOWN, kubelet_unhealthy=True)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)
    request = repairs["w1"].request
    refused = replace(
        sick,
        annotations={
            "kubemedic.io/agent-ack": json.dumps(
                {"id": request, "state": "refused", "message": "rate-limited"}
            )
        },
    )
    plan = round_([refused], SETTINGS, now=T0 + MINUTE, repairs=repairs)
    (escalated,) = of_kind(plan, Kind.ESCALATE)
    assert "refused: rate-limited" in escalated.message and "next: reboot" in escalated.message
    assert acts(plan)[0].action is Action.CORDON


def test_a_restart_that_does_not_bring_ready_back_escalates_after_its_timeout() -> None:
    sick = node("w1", ready="Unknown", since=DOWN, kubelet_unhealthy=True)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)
    waiting = round_([sick], SETTINGS, now=T0 + 4 * MINUTE, repairs=repairs)
    assert not of_kind(waiting, Kind.ESCALATE) and waiting.wake_at == T0 + 5 * MINUTE
    late = round_([sick], SETTINGS, now=T0 + 5 * MINUTE, repairs=repairs)
    assert "not Ready within 5m" in of_kind(late, Kind.ESCALATE)[0].message


def test_a_reboot_cordons_drains_reboots_verifies_the_boot_and_uncordons() -> None:
    sick = node("w3", ready="False", since=DOWN, message="network plugin not ready")
    plan = round_([sick], SETTINGS, now=T0)
    assert [a.action for a in acts(plan)] == [Action.CORDON]
    repairs = execute(plan, T0)
    cordoned = replace(sick, unschedulable=True)
    plan = round_([cordoned], SETTINGS, now=T0, repairs=repairs)
    (drain,) = acts(plan)
    assert drain.action is Action.DRAIN and drain.args["unreachable"] == "false"
    repairs = execute(plan, T0)
    plan = round_([cordoned], SETTINGS, now=T0, repairs=repairs)
    (reboot,) = acts(plan)
    assert reboot.action is Action.REBOOT and reboot.args["boot_id"] == "boot-1"
    repairs = execute(plan, T0)
    assert repairs["w3"].phase == "booting" and repairs["w3"].boot_id == "boot-1"

    # Up again, Ready, but with the old bootID: not proof.
    same_boot = replace(node("w3", since=T0 + 2 * MINUTE, now=T0 + 8 * MINUTE), unschedulable=True)
    plan = round_([same_boot], SETTINGS, now=T0 + 8 * MINUTE, repairs=repairs)
    assert not acts(plan) and not plan.finished
    new_boot = replace(same_boot, boot_id="boot-2")
    plan = round_([new_boot], SETTINGS, now=T0 + 8 * MINUTE, repairs=repairs)
    (uncordon,) = acts(plan)
    assert uncordon.action is Action.UNCORDON
    repairs = execute(plan, T0 + 8 * MINUTE)
    plan = round_(
        [replace(new_boot, unschedulable=False)], SETTINGS, now=T0 + 8 * MINUTE, repairs=repairs
    )
    (entry,) = plan.finished
    assert entry.outcome == "repaired"
    assert [s.action for s in entry.steps] == ["cordon", "drain", "reboot", "uncordon"]


def test_a_node_cordoned_by_someone_else_stays_cordoned() -> None:
    sick = node("w3", ready="False", since=DOWN, unschedulable=True)
    plan = round_([sick], SETTINGS, now=T0)
    assert [a.action for a in acts(plan)] == [Action.DRAIN]
    assert not plan.repairs["w3"].cordoned


def test_a_powered_off_machine_is_fenced_then_powered_on() -> None:
    off = node("w6", ready="Unknown", since=DOWN, agent=False, power=Power.OFF)
    plan = round_([off], SETTINGS, now=T0, power_known=True)
    repairs = execute(plan, T0)  # cordon
    off = replace(off, unschedulable=True)
    plan = round_([off], SETTINGS, now=T0, repairs=repairs, power_known=True)
    (fence,) = acts(plan)
    assert fence.action is Action.FENCE
    repairs = execute(plan, T0)
    plan = round_([off], SETTINGS, now=T0, repairs=repairs, power_known=True)
    (power_on,) = acts(plan)
    assert power_on.action is Action.POWER_ON
    repairs = execute(plan, T0)
    back = replace(
        node("w6", since=T0 + MINUTE, now=T0 + 7 * MINUTE, boot_id="boot-9"), unschedulable=True
    )
    plan = round_([back], SETTINGS, now=T0 + 7 * MINUTE, repairs=repairs, power_known=True)
    assert [a.action for a in acts(plan)] == [Action.UNFENCE]


def test_a_powered_off_machine_is_never_fenced_without_the_providers_word() -> None:
    off = node(
        "w6", ready="Unknown", since=DOWN, agent=False, power=Power.UNKNOWN, unschedulable=True
    )
    plan = round_([off], SETTINGS, now=T0, power_known=True)
    assert [a.action for a in acts(plan)] == [Action.DRAIN]
    assert plan.decisions[1].args["unreachable"] == "true"


def test_a_blocked_drain_is_reported_with_the_blocking_pods_and_waits() -> None:
    sick = node("w7", ready="False", since=DOWN, unschedulable=True)
    plan = round_([sick], SETTINGS, now=T0)
    repairs = execute(plan, T0, ok=False, data={Action.DRAIN: {"blocking": "shop/web-1 (PDB web)"}})
    assert repairs["w7"].phase == "drain" and "shop/web-1" in repairs["w7"].detail
    early = round_([sick], SETTINGS, now=T0 + 5 * MINUTE, repairs=repairs)
    assert not of_kind(early, Kind.HOLD)
    late = round_([sick], SETTINGS, now=T0 + 11 * MINUTE, repairs=repairs)
    (blocked,) = of_kind(late, Kind.HOLD)
    assert (
        blocked.reason == "KubemedicRepairDrainBlocked"
        and "shop/web-1 (PDB web)" in blocked.message
    )
    assert [a.action for a in acts(late)] == [Action.DRAIN]  # still trying, never rebooting
    listed = acting(drain=replace(SETTINGS.drain, delete_after_timeout=("best-effort",)))
    forced = round_([sick], listed, now=T0 + 11 * MINUTE, repairs=repairs)
    assert acts(forced)[0].args["delete_classes"] == "best-effort"
    # Asked again round after round, the drain stays one step of the ledger, open since the first.
    blocked_again = {Action.DRAIN: {"blocking": "shop/web-1 (PDB web)"}}
    again = execute(late, T0 + 11 * MINUTE, ok=False, data=blocked_again)
    drains = [s for s in again["w7"].steps if s.action == "drain"]
    assert len(drains) == 1 and drains[0].started == T0 and drains[0].finished is None


def _machine(
    name: str, *, owner: str = "MachineSet/workers-abc", ready: int = 5, minimum: int | None = 3
) -> MachineRef:
    return MachineRef(
        "capi",
        name,
        owner=owner,
        group="capi/MachineDeployment/workers",
        group_min=minimum,
        group_ready=ready,
    )


def _rebooted_but_still_sick(machine: MachineRef) -> dict[str, object]:
    sick = node("w4", ready="False", since=DOWN, unschedulable=True, machine=machine)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)  # drain
    repairs = execute(round_([sick], SETTINGS, now=T0, repairs=repairs), T0)  # reboot
    later = T0 + 15 * MINUTE
    still = replace(
        node("w4", ready="False", since=T0 + 2 * MINUTE, now=later, boot_id="boot-2"),
        unschedulable=True,
        machine=machine,
    )
    return {"node": still, "repairs": repairs, "at": later}


def test_a_reboot_that_does_not_cure_escalates_to_replacing_the_machine() -> None:
    machine = _machine("workers-abc-x1")
    case = _rebooted_but_still_sick(machine)
    plan = round_([case["node"]], SETTINGS, now=case["at"], repairs=case["repairs"])  # type: ignore[arg-type]
    assert "next: replace" in of_kind(plan, Kind.ESCALATE)[0].message
    (delete,) = acts(plan)
    assert delete.action is Action.REPLACE and delete.args["machine"] == "capi/workers-abc-x1"
    repairs = execute(plan, case["at"])  # type: ignore[arg-type]
    at = case["at"] + 8 * MINUTE  # type: ignore[operator]
    successor = node(
        "w9",
        since=at - MINUTE,
        created=case["at"] + MINUTE,  # type: ignore[operator]
        machine=_machine("workers-abc-y2"),
        now=at,
    )
    plan = round_([successor], SETTINGS, now=at, repairs=repairs)
    (entry,) = plan.finished
    assert entry.outcome == "replaced" and "w9" in of_kind(plan, Kind.FINISH)[0].message


def test_a_machine_nothing_would_recreate_is_quarantined_instead() -> None:
    case = _rebooted_but_still_sick(_machine("lonely", owner=""))
    plan = round_([case["node"]], SETTINGS, now=case["at"], repairs=case["repairs"])  # type: ignore[arg-type]
    first, second = of_kind(plan, Kind.ESCALATE)
    assert "next: replace" in first.message
    assert "no MachineSet owner" in second.message and "next: quarantine" in second.message
    assert {a.action for a in acts(plan)} == {Action.QUARANTINE, Action.ALERT}


def test_the_autoscaler_minimum_stops_a_replacement() -> None:
    case = _rebooted_but_still_sick(_machine("m", ready=3, minimum=4))
    plan = round_([case["node"]], SETTINGS, now=case["at"], repairs=case["repairs"])  # type: ignore[arg-type]
    assert "below its autoscaler minimum of 4" in of_kind(plan, Kind.ESCALATE)[1].message


def test_a_node_that_recovers_before_its_reboot_is_uncordoned_and_recorded_recovered() -> None:
    sick = node("w3", ready="False", since=DOWN)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)  # cordoned by the repair
    well = replace(node("w3", since=T0 + MINUTE, now=T0 + 2 * MINUTE), unschedulable=True)
    plan = round_([well], SETTINGS, now=T0 + 2 * MINUTE, repairs=repairs)
    assert [a.action for a in acts(plan)] == [Action.UNCORDON]
    repairs = execute(plan, T0 + 2 * MINUTE)
    plan = round_(
        [replace(well, unschedulable=False)], SETTINGS, now=T0 + 2 * MINUTE, repairs=repairs
    )
    assert plan.finished[0].outcome == "recovered"


def test_a_dry_run_decides_the_same_first_action_and_changes_nothing_after() -> None:
    sick = node("w3", ready="False", since=DOWN)
    plan = round_([sick], RepairSettings(), now=T0)
    (act,) = acts(plan)
    assert act.action is Action.CORDON and act.dry_run and act.message.startswith("dry run: would")
    repairs = execute(plan, T0)
    assert repairs["w3"].phase == "dry-run"
    waiting = round_([sick], RepairSettings(), now=T0 + 5 * MINUTE, repairs=repairs)
    assert not acts(waiting) and waiting.repairs
    over = round_([sick], RepairSettings(), now=T0 + 16 * MINUTE, repairs=repairs)
    assert over.finished[0].outcome == "dry-run" and over.finished[0].dry_run


def test_a_failed_reboot_request_escalates() -> None:
    sick = node("w3", ready="False", since=DOWN, unschedulable=True)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)  # drain
    repairs = execute(round_([sick], SETTINGS, now=T0, repairs=repairs), T0, ok=False)  # reboot
    plan = round_([sick], SETTINGS, now=T0 + MINUTE, repairs=repairs)
    assert of_kind(plan, Kind.ESCALATE)[0].message.startswith("reboot did not cure")
    assert plan.repairs["w3"].step is Step.QUARANTINE or acts(plan)


def test_the_deletion_of_a_node_under_repair_abandons_it() -> None:
    sick = node("w3", ready="False", since=DOWN)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)
    plan = round_([], SETTINGS, now=T0 + timedelta(seconds=30), repairs=repairs)
    assert plan.finished[0].outcome == "abandoned"


def test_a_dry_run_decides_once_per_unhealthy_spell_and_frees_the_slot() -> None:
    sick = node("w3", ready="False", since=DOWN)
    other = node("w4", ready="False", since=DOWN + MINUTE)
    dry = RepairSettings()
    plan = round_([sick, other], dry, now=T0 + MINUTE)
    assert list(plan.repairs) == ["w3"]  # w4 waits for the slot
    over = round_([sick, other], dry, now=T0 + 17 * MINUTE, repairs=execute(plan, T0 + MINUTE))
    (entry,) = over.finished
    assert entry.outcome == "dry-run"
    after = round_(
        [sick, other], dry, now=T0 + 18 * MINUTE, repairs=over.repairs, ledger={"w3": over.finished}
    )
    assert list(after.repairs) == ["w4"]
    assert {s.name: s.reason for s in after.states}["w3"].startswith("dry run: decided at")
