"""The right-sizing rule: KRR's simple strategy (CPU p95 per pod, the highest pod's; no CPU
limit; memory request = limit = peak + 15 %), never below a peak that ended in an OOM kill or
an eviction, and no number below the minimum history."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest

from kubemedic.recommend.policy import (
    Recommendation,
    Resources,
    Settings,
    SettingsError,
    percentile,
    recommend,
)
from tests.recommend.builders import HUB, MI, eviction, oom_kill, series, steady


def rules(found: Recommendation, resource: str) -> list[str]:
    return [r.rule for r in found.reasons if r.resource == resource]


def texts(found: Recommendation) -> str:
    return "\n".join(r.text for r in found.reasons)


# -- percentiles --------------------------------------------------------------------------------


def test_percentile_interpolates_between_the_nearest_ranks_as_prometheus_does() -> None:
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)
    assert percentile([7.0], 95) == 7.0
    assert percentile([3, 1, 2], 100) == 3
    with pytest.raises(ValueError, match="no values"):
        percentile([], 95)


def test_cpu_request_is_the_95th_percentile_of_the_busiest_pod_and_there_is_no_cpu_limit() -> None:
    busy = series(((float(cpu), 500.0) for cpu in range(1, 101)), pod="hub-5d8f7c9b4-aaaaa")
    quiet = steady(100, cpu=50.0, memory_mi=500, pod="hub-5d8f7c9b4-bbbbb")
    found = recommend(HUB, busy + quiet)
    assert found.cpu_request == 96  # p95 of 1..100 is 95.05m, rounded up to a whole millicore
    assert found.cpu_limit is None
    assert rules(found, "cpu") == ["cpu-percentile", "no-cpu-limit"]
    assert "highest in pod hub-5d8f7c9b4-aaaaa" in texts(found)
    assert found.pods == 2 and found.samples == 200


def test_an_idle_container_still_gets_a_millicore() -> None:
    found = recommend(HUB, steady(40, cpu=0.0))
    assert found.cpu_request == 1


# -- memory: peak plus buffer -------------------------------------------------------------------


def test_memory_request_and_limit_are_the_peak_plus_15_percent_rounded_up_to_a_mib() -> None:
    samples = series([(40.0, 1000.0)] * 39 + [(40.0, 1200.0)])
    found = recommend(HUB, samples)
    assert found.memory_request == found.memory_limit == 1380 * MI  # 1200Mi * 1.15
    assert rules(found, "memory") == ["memory-peak"]
    odd = recommend(HUB, series([(40.0, 1001.0)] * 40))
    assert odd.memory_request == 1152 * MI  # 1151.15Mi, rounded up


def test_the_memory_buffer_is_a_setting() -> None:
    found = recommend(HUB, steady(40, memory_mi=1000), settings=Settings(memory_buffer=0.5))
    assert found.memory_request == 1500 * MI


# -- kubemedic's floor: the peak that ended in a kill -------------------------------------------


def test_an_eviction_the_kubelet_measured_above_every_sample_sets_the_memory_floor() -> None:
    samples = steady(40, memory_mi=1000)
    found = recommend(HUB, samples, kills=[eviction(20, usage_mi=2200)])
    assert found.memory_request == found.memory_limit == 2530 * MI  # 2200Mi * 1.15
    assert found.memory_request > 2200 * MI
    assert rules(found, "memory")[0] == "eviction-floor"
    assert (
        "2200Mi named by the kubelet's message at the eviction of pod hub-5d8f7c9b4-x7k2p"
        in texts(found)
    )


def test_the_last_sample_before_an_eviction_is_the_peak_it_names() -> None:
    samples = steady(20, memory_mi=1000) + steady(20, memory_mi=2200, start=20)
    found = recommend(HUB, samples, kills=[eviction(30.5)])
    assert found.memory_request == 2530 * MI
    first = found.reasons[len(rules(found, "cpu"))]
    assert first.rule == "eviction-floor"
    assert "2200Mi at the last sample before the eviction" in first.text
    assert "2023-02-01T19:30:00Z" in first.text  # the sample at minute 30, not a later one


def test_a_sample_older_than_the_floor_age_does_not_stand_for_the_usage_at_a_kill() -> None:
    samples = steady(40, memory_mi=500)
    found = recommend(HUB, samples, kills=[eviction(60)])  # 21 minutes after the last sample
    assert rules(found, "memory") == ["memory-peak"]


def test_an_oom_kill_at_the_limit_recommends_more_than_that_limit() -> None:
    samples = steady(40, memory_mi=200)
    found = recommend(HUB, samples, kills=[oom_kill(20, limit_mi=256)])
    assert found.memory_limit is not None and found.memory_limit > 256 * MI
    assert found.memory_request == 295 * MI  # 256Mi * 1.15 = 294.4Mi, rounded up
    assert rules(found, "memory")[0] == "oom-kill-floor"
    assert "more than the 256Mi limit, exceeded at the OOM kill" in texts(found)


def test_a_kill_below_the_sampled_peak_changes_nothing() -> None:
    samples = steady(20, memory_mi=3000) + steady(20, memory_mi=800, start=20)
    found = recommend(HUB, samples, kills=[oom_kill(30, limit_mi=1024)])
    assert found.memory_request == 3450 * MI
    assert rules(found, "memory")[0] == "memory-peak"
    assert "also considered: more than the 1024Mi limit" in texts(found)


def test_many_kills_are_summed_up_in_one_reason() -> None:
    kills = [eviction(5 + i, usage_mi=2000 + i) for i in range(10)]
    found = recommend(HUB, steady(40, memory_mi=2200), kills=kills)
    memory = [r.text for r in found.reasons if r.resource == "memory"]
    assert len(memory) == 3  # 20 kill peaks: the one chosen, the samples', the next and a count
    assert memory[0].startswith("memory request = limit = 2530Mi: 2200Mi at the last sample")
    assert memory[1].startswith("also considered: 2200Mi in pod hub-5d8f7c9b4-x7k2p")
    assert memory[2].endswith("and 18 more, none higher")


# -- not enough data ----------------------------------------------------------------------------


def test_too_few_samples_give_no_number_and_say_what_is_missing() -> None:
    found = recommend(HUB, steady(10), kills=[eviction(5, usage_mi=2200)])
    assert (found.cpu_request, found.memory_request, found.memory_limit) == (None, None, None)
    assert not found.enough
    assert rules(found, "cpu") == ["not-enough-data"]
    assert "not enough data: 10 memory sample(s) over 9m; at least 30 over 30m" in texts(found)
    # The kill is still told: what the number will be at least.
    assert "at least 2200Mi plus 15% once there is enough data" in texts(found)
    assert [change.action for change in found.changes] == ["no-data"] * 4


def test_many_samples_over_too_short_a_span_are_not_enough_either() -> None:
    found = recommend(HUB, steady(100, every=0.25))  # 100 samples over 24m45s
    assert found.memory_request is None
    assert "over 24m45s" in texts(found)
    enough = recommend(HUB, steady(100, every=0.25), settings=Settings(min_span=timedelta(0)))
    assert enough.memory_request == 2530 * MI


def test_cpu_and_memory_are_judged_on_their_own_samples() -> None:
    without_cpu = [replace(sample, cpu_millicores=None) for sample in steady(40)]
    found = recommend(HUB, without_cpu)
    assert found.cpu_request is None and not found.cpu_enough
    assert found.memory_enough and found.memory_request == 2530 * MI


# -- the change ----------------------------------------------------------------------------------


def test_each_value_is_compared_with_the_current_spec() -> None:
    current = Resources(cpu_request=10, cpu_limit=500, memory_request=128 * MI, source="snapshot")
    found = recommend(HUB, steady(40), current=current)
    by = {(c.resource, c.field): c for c in found.changes}
    assert by["cpu", "request"].action == "raise" and by["cpu", "request"].delta == 30
    assert by["cpu", "limit"].action == "unset"
    assert by["memory", "request"].action == "raise"
    assert by["memory", "request"].delta == 2530 * MI - 128 * MI
    assert by["memory", "limit"].action == "set" and by["memory", "limit"].delta is None
    assert found.current == current
    unknown = recommend(HUB, steady(40))
    assert [c.action for c in unknown.changes] == ["set", "none", "set", "set"]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"cpu_percentile": 0}, "CPU percentile 0: expected more than 0, at most 100"),
        ({"cpu_percentile": 101}, "CPU percentile 101"),
        ({"memory_buffer": 0}, "memory buffer 0%: expected more than 0%"),
        ({"memory_buffer": -0.1}, "memory buffer -10%"),
        ({"min_samples": 0}, "minimum samples 0: expected 1 or more"),
        ({"min_span": timedelta(seconds=-1)}, "minimum history span"),
    ],
)
def test_settings_out_of_range_are_input_errors(settings: dict[str, object], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        Settings(**settings)  # type: ignore[arg-type]
