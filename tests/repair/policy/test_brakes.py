"""What holds repairs back: correlated failures, budgets, in-flight limits, flapping, the ledger,
the operator's annotation and the pause."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from kubemedic.repair.policy import brakes, deciding
from kubemedic.repair.policy.records import Action, Brake, Kind, LedgerEntry, Step, StepRecord
from kubemedic.repair.policy.settings import Budget, CorrelationSettings, RepairSettings

from .builders import MINUTE, T0, acting, acts, execute, healthy_pool, node, of_kind, round_, state

SETTINGS = acting()
CORRELATED = CorrelationSettings()
DOWN = T0 - 10 * MINUTE


def _zone_c(down: int, *, spread: timedelta = timedelta(seconds=20), now=T0) -> list:  # type: ignore[no-untyped-def]
    nodes = healthy_pool(10, prefix="c", pool="batch", zone="zone-c", now=now)
    for i in range(down):
        nodes[i] = node(
            f"c{i}",
            ready="Unknown",
            since=DOWN + i * spread,
            pool="batch",
            zone="zone-c",
            agent=False,
        )
    return nodes


def test_forty_percent_of_a_zone_at_once_is_held_with_one_alert_and_no_reboot() -> None:
    nodes = _zone_c(4, now=T0 + 3 * MINUTE)
    plan = round_(nodes, SETTINGS, now=T0 + 2 * MINUTE)
    assert not plan.repairs
    (alert,) = acts(plan, Action.ALERT)
    assert "4 of the 10 nodes of zone zone-c" in alert.message
    held = of_kind(plan, Kind.HOLD)
    assert {d.node for d in held} == {"c0", "c1", "c2", "c3"}
    assert all("correlated failure" in d.message for d in held)
    assert {d.brake for d in held} == {Brake.CORRELATED}
    assert {s.brake for s in plan.states if s.state == "held"} == {Brake.CORRELATED}
    again = round_(nodes, SETTINGS, now=T0 + 3 * MINUTE, alerted=plan.alerted)
    assert not acts(again, Action.ALERT)
    assert not acts(again)


def test_a_silent_zone_read_from_heartbeats_then_marked_by_the_controller_is_one_alert() -> None:
    # First round: Ready still says True, but the heartbeats stopped (the policy reads Unknown
    # since the last one plus the grace period). A round later the node lifecycle controller has
    # written Ready=Unknown with a transition time of its own, seconds after that.
    silent = T0 - 5 * MINUTE
    now = T0
    first = healthy_pool(10, prefix="c", pool="batch", zone="zone-c", now=now)
    for i in range(4):
        first[i] = node(
            f"c{i}", heartbeat=silent, pool="batch", zone="zone-c", agent=False, now=now
        )
    plan = round_(first, SETTINGS, now=now)
    assert len(acts(plan, Action.ALERT)) == 1
    marked = healthy_pool(10, prefix="c", pool="batch", zone="zone-c", now=now + MINUTE)
    for i in range(4):
        marked[i] = node(
            f"c{i}",
            ready="Unknown",
            since=silent + timedelta(seconds=40 + 5 + 3 * i),
            pool="batch",
            zone="zone-c",
            agent=False,
            now=now + MINUTE,
        )
    again = round_(marked, SETTINGS, now=now + MINUTE, alerted=plan.alerted)
    assert not acts(again, Action.ALERT), [d.message for d in acts(again, Action.ALERT)]
    assert set(again.correlated) == {"c0", "c1", "c2", "c3"}
    # Ready again, then down again later: a new fault, announced again.
    back = healthy_pool(10, prefix="c", pool="batch", zone="zone-c", now=now + 30 * MINUTE)
    healed = round_(back, SETTINGS, now=now + 30 * MINUTE, alerted=again.alerted)
    assert not [k for k in healed.alerted if k.startswith("correlated-node:")]


def test_the_same_failures_spread_over_time_are_repaired_one_by_one() -> None:
    nodes = _zone_c(4, spread=timedelta(minutes=5), now=T0 + 20 * MINUTE)
    plan = round_(nodes, SETTINGS, now=T0 + 20 * MINUTE)
    assert not acts(plan, Action.ALERT)
    assert list(plan.repairs) == ["c0"]  # the oldest first; maxInFlight 1
    queued = of_kind(plan, Kind.HOLD)
    assert {d.node for d in queued} == {"c1", "c2", "c3"}
    assert all("maxInFlight 1" in d.message for d in queued)
    assert {d.brake for d in queued} == {Brake.MAX_IN_FLIGHT}


def test_a_cluster_wide_burst_holds_every_repair() -> None:
    nodes = [
        node(f"n{i}", ready="Unknown", since=DOWN, zone=f"z{i}", pool=f"p{i}", agent=False)
        for i in range(5)
    ]
    nodes += [node("lonely", ready="False", since=DOWN - 60 * MINUTE, zone="z9", pool="p9")]
    plan = round_(nodes, SETTINGS, now=T0)
    assert not plan.repairs
    assert any(d.node == "lonely" for d in of_kind(plan, Kind.HOLD))


def test_more_unhealthy_than_the_budget_holds_the_pool() -> None:
    nodes = healthy_pool(5)
    for i in range(3):
        nodes[i] = node(f"w{i}", ready="False", since=DOWN - i * 10 * MINUTE)
    plan = round_(nodes, SETTINGS, now=T0)
    assert not plan.repairs
    (held, *_) = of_kind(plan, Kind.HOLD)
    assert "3 of the 5 nodes of pool workers are unhealthy, more than maxUnhealthy (2)" in (
        held.message
    )
    assert held.brake is Brake.MAX_UNHEALTHY
    generous = acting(max_unhealthy=Budget(count=3))
    assert round_(nodes, generous, now=T0).repairs


def test_a_three_node_pool_can_repair_one_node() -> None:
    nodes = healthy_pool(3)
    nodes[0] = node("w0", ready="False", since=DOWN)
    assert list(round_(nodes, SETTINGS, now=T0).repairs) == ["w0"]


def test_a_flapping_node_is_quarantined_even_while_it_is_up() -> None:
    flaps = tuple(T0 - timedelta(minutes=m) for m in (50, 30, 10))
    plan = round_([node("w5")], SETTINGS, now=T0, not_ready_at={"w5": flaps})
    assert plan.repairs["w5"].step is Step.QUARANTINE
    assert {a.action for a in acts(plan)} == {Action.QUARANTINE, Action.ALERT}
    (quarantine,) = acts(plan, Action.QUARANTINE)
    assert "flapping: 3 Ready -> NotReady transitions within 1h" in quarantine.message
    two = round_([node("w5")], SETTINGS, now=T0, not_ready_at={"w5": flaps[1:]})
    assert not two.repairs


def test_the_not_ready_of_kubemedics_own_reboot_is_not_a_flap() -> None:
    # The fault (50m ago), the reboot kubemedic asked for (30m ago), one more blip (10m ago):
    # only two of the three are the node's doing.
    flaps = tuple(T0 - timedelta(minutes=m) for m in (50, 30, 10))
    reboot = StepRecord("reboot", T0 - 32 * MINUTE, T0 - 24 * MINUTE, "done")
    repaired = LedgerEntry(
        "r1",
        "w5",
        "Ready=False for 10m",
        T0 - 40 * MINUTE,
        T0 - 20 * MINUTE,
        "repaired",
        steps=(StepRecord("cordon", T0 - 40 * MINUTE, T0 - 40 * MINUTE, "done"), reboot),
    )
    plan = round_(
        [node("w5")], SETTINGS, now=T0, not_ready_at={"w5": flaps}, ledger={"w5": (repaired,)}
    )
    assert not plan.repairs, plan.decisions
    assert brakes.flapping(flaps, (repaired,), SETTINGS, T0) == 2
    # The same NotReady with the reboot only dry-run (nothing was rebooted) is the node's.
    dry = replace(repaired, dry_run=True)
    assert brakes.flapping(flaps, (dry,), SETTINGS, T0) == 3


def test_one_outage_read_twice_is_one_transition() -> None:
    transitions = brakes.Transitions()
    up = node("w5", since=T0 - 3 * 60 * MINUTE)
    transitions.observe([up], T0, SETTINGS)
    # Silent: read as down from the last heartbeat plus the grace period...
    silent = node("w5", since=T0 - 3 * 60 * MINUTE, heartbeat=T0)
    transitions.observe([silent], T0 + 2 * MINUTE, SETTINGS)
    # ...then the node lifecycle controller's Unknown, with a transition time of its own.
    (first,) = transitions.snapshot()["w5"]
    lifecycle = T0 + 2 * MINUTE + timedelta(seconds=7)
    unknown = node("w5", ready="Unknown", since=lifecycle, now=T0 + 3 * MINUTE)
    transitions.observe([unknown], T0 + 3 * MINUTE, SETTINGS)
    assert transitions.snapshot()["w5"] == (first,)
    assert abs(first - lifecycle) > timedelta(seconds=1)  # two readings, far enough apart
    # Ready again, then down again: a second transition.
    back = node("w5", since=T0 + 5 * MINUTE, now=T0 + 5 * MINUTE)
    transitions.observe([back], T0 + 5 * MINUTE, SETTINGS)
    again = node("w5", ready="False", since=T0 + 6 * MINUTE, now=T0 + 6 * MINUTE)
    transitions.observe([again], T0 + 6 * MINUTE, SETTINGS)
    assert transitions.snapshot()["w5"] == (first, T0 + 6 * MINUTE)


def test_a_restarted_daemon_does_not_count_a_recorded_outage_again() -> None:
    recorded = T0 - 5 * MINUTE
    transitions = brakes.Transitions({"w5": [recorded]})
    # The archive kept the condition's time; the first reading computes a later one.
    down = node("w5", ready="Unknown", since=recorded + timedelta(seconds=40))
    transitions.observe([down], T0, SETTINGS)
    assert transitions.snapshot()["w5"] == (recorded,)
    # A node down in an outage the archive never saw is a new transition.
    fresh = brakes.Transitions({"w5": [T0 - 50 * MINUTE]})
    fresh.observe([down], T0, SETTINGS)
    assert len(fresh.snapshot()["w5"]) == 2


def test_a_quarantined_node_is_never_repaired_again_until_released() -> None:
    flaps = tuple(T0 - timedelta(minutes=m) for m in (50, 30, 10))
    plan = round_([node("w5")], SETTINGS, now=T0, not_ready_at={"w5": flaps})
    repairs = execute(plan, T0)
    labelled = node(
        "w5",
        ready="Unknown",
        since=DOWN,
        labels={"kubemedic.io/quarantined": "true"},
        unschedulable=True,
    )
    plan = round_(
        [labelled], SETTINGS, now=T0 + MINUTE, repairs=repairs, not_ready_at={"w5": flaps}
    )
    assert plan.finished[0].outcome == "quarantined"
    later = round_(
        [labelled],
        SETTINGS,
        now=T0 + 60 * MINUTE,
        not_ready_at={"w5": flaps},
        ledger={"w5": plan.finished},
    )
    assert not later.repairs and not acts(later)
    assert of_kind(later, Kind.SKIP)[0].message.startswith("quarantined")
    assert later.states[0].state == "quarantined"
    released = LedgerEntry("r", "w5", "released", T0 + 61 * MINUTE, T0 + 61 * MINUTE, "released")
    after = round_(
        [node("w5", ready="Unknown", since=DOWN + 70 * MINUTE, agent=False)],
        SETTINGS,
        now=T0 + 80 * MINUTE,
        not_ready_at={"w5": flaps},
        ledger={"w5": (*plan.finished, released)},
    )
    assert after.repairs["w5"].step is Step.REBOOT  # the count starts over after a release


def test_the_ledger_limit_quarantines_the_fourth_repair() -> None:
    entries = tuple(
        LedgerEntry(
            f"r{i}",
            "w1",
            "Ready=False for 10m",
            T0 - timedelta(hours=h),
            T0 - timedelta(hours=h) + 10 * MINUTE,
            "repaired",
        )
        for i, h in enumerate((20, 12, 4))
    )
    sick = node("w1", ready="False", since=DOWN)
    plan = round_([sick], SETTINGS, now=T0, ledger={"w1": entries})
    assert plan.repairs["w1"].step is Step.QUARANTINE
    assert (
        "3 repairs within 1d" in acts(plan, Action.QUARANTINE)[0].message
        or "3 repairs within 24h" in acts(plan, Action.QUARANTINE)[0].message
    )
    old = tuple(replace(e, finished=T0 - timedelta(hours=30)) for e in entries)
    assert round_([sick], SETTINGS, now=T0, ledger={"w1": old}).repairs["w1"].step is Step.REBOOT
    dry = tuple(replace(e, dry_run=True, outcome="dry-run") for e in entries)
    assert round_([sick], SETTINGS, now=T0, ledger={"w1": dry}).repairs["w1"].step is Step.REBOOT


def test_do_not_repair_and_pause_skip_with_the_reason() -> None:
    sick = node("w1", ready="False", since=DOWN, annotations={"kubemedic.io/do-not-repair": "yes"})
    plan = round_([sick], SETTINGS, now=T0)
    assert not plan.repairs and "do-not-repair" in of_kind(plan, Kind.SKIP)[0].message
    opted_in = node(
        "w1", ready="False", since=DOWN, annotations={"kubemedic.io/do-not-repair": "false"}
    )
    assert round_([opted_in], SETTINGS, now=T0).repairs
    paused = acting(paused=True)
    plan = round_([node("w1", ready="False", since=DOWN)], paused, now=T0)
    assert not plan.repairs and "paused" in of_kind(plan, Kind.SKIP)[0].message


def test_a_pause_holds_a_repair_in_flight() -> None:
    sick = node("w3", ready="False", since=DOWN)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)
    cordoned = replace(sick, unschedulable=True)
    plan = round_([cordoned], acting(paused=True), now=T0 + MINUTE, repairs=repairs)
    (held,) = of_kind(plan, Kind.HOLD)
    assert not acts(plan) and "paused" in held.message and held.brake is Brake.PAUSED
    assert [(s.state, s.brake) for s in plan.states] == [("held", Brake.PAUSED)]


def test_the_round_wakes_exactly_when_the_next_threshold_passes() -> None:
    soon = node("w1", ready="Unknown", since=T0 - 7 * MINUTE)
    plan = round_([soon, *healthy_pool(4, prefix="h")], SETTINGS, now=T0)
    assert plan.wake_at == T0 + 3 * MINUTE
    assert {s.name: s.state for s in plan.states}["w1"] == "unhealthy"


def test_a_zone_group_inside_a_cluster_wide_one_is_one_alert() -> None:
    nodes = _zone_c(4, now=T0 + 3 * MINUTE)
    nodes.append(
        node(
            "a1",
            ready="Unknown",
            since=DOWN + 30 * timedelta(seconds=1),
            zone="zone-a",
            agent=False,
        )
    )
    plan = round_(nodes, SETTINGS, now=T0 + 2 * MINUTE)
    (alert,) = acts(plan, Action.ALERT)
    assert alert.message.startswith("correlated failure: 5 nodes")


def test_a_quarantined_node_is_no_evidence_of_a_correlated_failure() -> None:
    nodes = _zone_c(2, now=T0 + 3 * MINUTE)
    nodes[2] = node(
        "c2",
        ready="Unknown",
        since=DOWN,
        pool="batch",
        zone="zone-c",
        labels={"kubemedic.io/quarantined": "true"},
    )
    assert not acts(round_(nodes, SETTINGS, now=T0 + 2 * MINUTE), Action.ALERT)


def test_a_dry_run_decides_a_flapping_nodes_quarantine_once() -> None:
    flaps = tuple(T0 - timedelta(minutes=m) for m in (50, 30, 10))
    dry = RepairSettings()
    plan = round_([node("w5")], dry, now=T0, not_ready_at={"w5": flaps})
    repairs = execute(plan, T0)
    done = round_(
        [node("w5", now=T0 + MINUTE)],
        dry,
        now=T0 + MINUTE,
        repairs=repairs,
        not_ready_at={"w5": flaps},
    )
    assert done.finished and done.finished[0].dry_run
    later = round_(
        [node("w5", now=T0 + 2 * MINUTE)],
        dry,
        now=T0 + 2 * MINUTE,
        not_ready_at={"w5": flaps},
        ledger={"w5": done.finished},
    )
    assert not later.repairs and not later.decisions
    assert later.states[0].reason.startswith("dry run: would be quarantined")


def test_a_node_of_a_correlated_failure_stays_held_until_it_is_ready_again() -> None:
    nodes = _zone_c(4, now=T0 + 3 * MINUTE)
    plan = round_(nodes, SETTINGS, now=T0 + 2 * MINUTE)
    # Three of the four come back: the last one alone is below the threshold, yet held.
    later = T0 + 20 * MINUTE
    healed = healthy_pool(10, prefix="c", pool="batch", zone="zone-c", now=later)
    healed[0] = node("c0", ready="Unknown", since=DOWN, pool="batch", zone="zone-c", agent=False)
    after = deciding.decide(
        replace(state(healed, now=later), correlated=plan.correlated, alerted=plan.alerted),
        SETTINGS,
    )
    assert not after.repairs
    (held,) = of_kind(after, Kind.HOLD)
    assert "held until it is Ready again" in held.message and held.brake is Brake.CORRELATED
    assert set(after.correlated) == {"c0"}


def test_every_window_of_a_zone_holds_its_nodes_not_only_the_largest() -> None:
    # zone-c: three down within 40s (a group), and two more 10 minutes later (a group too).
    nodes = _zone_c(3, now=T0 + 13 * MINUTE)
    for i in (3, 4):
        nodes[i] = node(
            f"c{i}",
            ready="Unknown",
            since=DOWN + 10 * MINUTE + i * timedelta(seconds=10),
            pool="batch",
            zone="zone-c",
            agent=False,
        )
    overlapping = replace(CORRELATED, zone_min_nodes=2, zone_percent=10.0, nodes=9)
    plan = round_(nodes, acting(correlation=overlapping), now=T0 + 13 * MINUTE)
    assert not plan.repairs
    assert {d.node for d in of_kind(plan, Kind.HOLD)} == {"c0", "c1", "c2", "c3", "c4"}
    assert len(acts(plan, Action.ALERT)) == 2


def test_overlapping_windows_are_one_group() -> None:
    times = {"a": T0, "b": T0 + timedelta(seconds=1), "c": T0 + timedelta(seconds=11)}
    nodes = [node(n, ready="Unknown", since=t, zone="zone-a") for n, t in times.items()]
    narrow = replace(CORRELATED, window=timedelta(seconds=10), zone_min_nodes=2, nodes=9)
    (group,) = brakes.correlated(nodes, times, narrow)
    assert group.nodes == {"a", "b", "c"}


def test_an_opt_out_stops_a_repair_in_flight_but_lets_it_undo() -> None:
    sick = node("w3", ready="False", since=DOWN)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)  # cordoned
    opted = replace(sick, unschedulable=True, annotations={"kubemedic.io/do-not-repair": "true"})
    plan = round_([opted], SETTINGS, now=T0 + MINUTE, repairs=repairs)
    assert not acts(plan)
    (held,) = of_kind(plan, Kind.HOLD)
    assert "do-not-repair" in held.message and held.brake is Brake.DO_NOT_REPAIR
    well = replace(node("w3", since=T0 + MINUTE, now=T0 + 2 * MINUTE), unschedulable=True)
    well = replace(well, annotations={"kubemedic.io/do-not-repair": "true"})
    assert [
        a.action for a in acts(round_([well], SETTINGS, now=T0 + 2 * MINUTE, repairs=repairs))
    ] == [Action.UNCORDON]


def test_a_dry_runs_alerts_say_so() -> None:
    plan = round_(_zone_c(4, now=T0 + 3 * MINUTE), RepairSettings(), now=T0 + 2 * MINUTE)
    (alert,) = acts(plan, Action.ALERT)
    assert alert.dry_run and alert.message.startswith("dry run: would alert: correlated failure")


def test_a_correlated_failure_is_announced_once_while_its_first_node_comes_back() -> None:
    nodes = _zone_c(4, now=T0 + 4 * MINUTE)
    plan = round_(nodes, SETTINGS, now=T0 + 2 * MINUTE)
    assert len(acts(plan, Action.ALERT)) == 1
    nodes[0] = node("c0", pool="batch", zone="zone-c", now=T0 + 4 * MINUTE)
    later = round_(nodes, SETTINGS, now=T0 + 4 * MINUTE, alerted=plan.alerted)
    assert of_kind(later, Kind.HOLD) and not acts(later)


def test_a_zone_group_overlapping_a_cluster_wide_one_is_one_alert() -> None:
    nodes = _zone_c(4, now=T0 + 3 * MINUTE)
    late = DOWN + timedelta(seconds=150)  # in zone-c's run, outside the cluster-wide window
    nodes[4] = node("c4", ready="Unknown", since=late, pool="batch", zone="zone-c", agent=False)
    nodes.append(
        node("a1", ready="Unknown", since=DOWN + timedelta(seconds=30), zone="zone-a", agent=False)
    )
    plan = round_(nodes, SETTINGS, now=T0 + 3 * MINUTE)
    (alert,) = acts(plan, Action.ALERT)
    assert alert.message.startswith("correlated failure: 5 nodes")
    assert {d.node for d in of_kind(plan, Kind.HOLD)} >= {"c0", "c1", "c2", "c3", "c4", "a1"}


def test_a_quarantine_by_hand_holds_a_repair_in_flight_by_that_brake() -> None:
    sick = node("w3", ready="False", since=DOWN)
    repairs = execute(round_([sick], SETTINGS, now=T0), T0)  # cordoned
    marked = replace(
        sick, unschedulable=True, labels={**sick.labels, "kubemedic.io/quarantined": "true"}
    )
    plan = round_([marked], SETTINGS, now=T0 + MINUTE, repairs=repairs)
    assert not acts(plan)
    (held,) = of_kind(plan, Kind.HOLD)
    assert held.message.startswith("reboot of w3 held: quarantined")
    assert held.brake is Brake.QUARANTINED
    assert [(s.state, s.brake) for s in plan.states] == [("held", Brake.QUARANTINED)]
