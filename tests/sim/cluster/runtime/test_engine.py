"""The simulation engine: timers on the virtual clock, change listeners, sync passes."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from kubemedic.sim.cluster.runtime.client import Client
from kubemedic.sim.cluster.runtime.engine import DelayedAdds, Simulation
from kubemedic.sim.machinery import errors
from kubemedic.sim.machinery.objects import Change

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def _pod(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


class Echo:
    """A component that labels every pod it sees, one write per pod."""

    name = "echo"

    def __init__(self) -> None:
        self.dirty: set[str] = set()
        self.syncs = 0

    def attach(self, sim: Simulation) -> None:
        self.sim = sim
        self.client = Client(sim.server, "echo-controller")
        sim.watch("pods", self._seen)

    def _seen(self, change: Change) -> None:
        if change.type != "DELETED" and "seen" not in change.obj["metadata"].get("labels", {}):
            self.dirty.add(change.obj["metadata"]["name"])

    def sync(self) -> bool:
        self.syncs += 1
        if not self.dirty:
            return False
        for name in sorted(self.dirty):
            self.client.patch(
                "v1", "Pod", name, {"metadata": {"labels": {"seen": "yes"}}}, namespace="default"
            )
        self.dirty.clear()
        return True


class Chain:
    """A component that feeds itself: each sync creates one pod (like a controller replacing
    what another keeps failing)."""

    name = "chain"

    def __init__(self) -> None:
        self.created = 0

    def attach(self, sim: Simulation) -> None:
        self.client = Client(sim.server, "chain")

    def sync(self) -> bool:
        self.created += 1
        self.client.create(_pod(f"chain-{self.created}"))
        return True


def test_periodic_timers_fire_on_cluster_time_not_wall_time() -> None:
    sim = Simulation(start=START)
    beats: list[datetime] = []
    sim.every(10, lambda: beats.append(sim.now()), offset=0)
    sim.run_for(timedelta(hours=1))
    assert len(beats) == 361
    assert beats[1] - beats[0] == timedelta(seconds=10)
    assert sim.now() == START + timedelta(hours=1)
    assert sim.stats.wall < 5  # an hour of cluster time is not an hour of wall time


def test_one_shot_timers_and_cancel() -> None:
    sim = Simulation(start=START)
    fired: list[str] = []
    sim.after(30, lambda: fired.append("after"))
    sim.at(START + timedelta(minutes=2), lambda: fired.append("at"))
    sim.after(60, lambda: fired.append("cancelled")).cancel()
    sim.run_for(300)
    assert fired == ["after", "at"]


def test_random_phases_spread_a_thousand_heartbeats() -> None:
    sim = Simulation(start=START, seed=7)
    seconds: set[int] = set()
    for _ in range(1000):
        sim.every(10, lambda: seconds.add(int(sim.seconds()) % 10))
    sim.run_for(10)
    assert seconds == set(range(10))


def test_components_react_to_writes_within_the_step() -> None:
    sim = Simulation(start=START)
    echo = sim.add(Echo())
    client = Client(sim.server, "kubectl-create")
    client.create(_pod("web"))
    sim.run_for(1)
    pod = sim.get("pods", "default", "web")
    assert pod is not None
    assert pod["metadata"]["labels"] == {"seen": "yes"}
    managers = {e["manager"] for e in pod["metadata"]["managedFields"]}
    assert managers == {"kubectl-create", "echo-controller"}
    assert sim.find(Echo) is echo


def test_self_feeding_loops_go_round_rounds_times_per_step() -> None:
    sim = Simulation(start=START, rounds=4)
    chain = sim.add(Chain())
    sim.run_for(10)
    # 10 steps of 1 s, 4 passes each: a loop with a ~250 ms round trip, not an infinite one.
    assert chain.created == 40
    assert sim.count("pods") == 40


def test_idle_clusters_jump_to_the_next_timer() -> None:
    sim = Simulation(start=START)
    sim.every(600, lambda: None, offset=600)
    sim.run_for(timedelta(hours=10))
    assert sim.stats.steps < 100


def test_api_errors_in_components_are_counted_and_retried() -> None:
    sim = Simulation(start=START)
    attempts: list[int] = []

    def conflict() -> None:
        attempts.append(1)
        raise errors.conflict("pods", "x", "the object has been modified")

    sim.every(5, conflict, offset=0)
    sim.run_for(20)
    assert len(attempts) == 5
    assert sim.stats.errors == 5


def test_bad_timer_period_is_refused() -> None:
    sim = Simulation(start=START)
    with pytest.raises(ValueError, match="period must be positive"):
        sim.every(0, lambda: None)


def test_paced_run_keeps_cluster_time_near_speed_times_wall() -> None:
    sim = Simulation(start=START)
    beats: list[datetime] = []
    sim.every(1, lambda: beats.append(sim.now()), offset=0)

    async def main() -> None:
        await sim.run_paced(speed=100, until=START + timedelta(seconds=30))

    asyncio.run(main())
    assert sim.now() == START + timedelta(seconds=30)
    assert 29 <= len(beats) <= 31


def test_paced_run_stops_when_asked() -> None:
    sim = Simulation(start=START)

    async def main() -> None:
        stop = asyncio.Event()
        task = asyncio.create_task(sim.run_paced(speed=10, stop=stop))
        await asyncio.sleep(0.2)
        stop.set()
        await asyncio.wait_for(task, 5)

    asyncio.run(main())
    assert START < sim.now() < START + timedelta(seconds=30)


def test_a_key_waiting_in_the_delayed_queue_waits_once_and_only_moves_earlier() -> None:
    sim = Simulation(start=START)
    added: list[tuple[str, float]] = []
    later = DelayedAdds(sim, lambda key: added.append((key, sim.seconds() - START.timestamp())))
    for _ in range(50):  # a controller asking on every sync for the same recheck
        later.add_after("web", 30)
    later.add_after("web", 60)  # later than the wait: ignored
    later.add_after("web", 10)  # earlier: moves it
    later.add_after("api", 20)
    sim.run_for(120)
    assert added == [("web", 10), ("api", 20)]


def test_rate_limited_adds_share_ten_per_second_after_a_burst_of_a_hundred() -> None:
    sim = Simulation(start=START)
    added: list[int] = []
    later = DelayedAdds(sim, added.append)
    for key in range(300):  # 300 objects requeued "now" at once
        later.add_rate_limited(key)
    sim.run_for(1)
    assert 100 <= len(added) <= 111  # the burst, and what a second accrues
    sim.run_for(19)
    assert len(added) == 300
    later.add_rate_limited(0)
    later.add_rate_limited(0)  # waiting already: one add, not two
    sim.run_for(5)
    assert added.count(0) == 2
