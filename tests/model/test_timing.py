"""Timing: creation times, clamped ages and Go-like durations for messages."""

from __future__ import annotations

from datetime import timedelta

from kubemedic.model.timing import created_at, human_duration, seconds_since
from kubemedic.testing.bodies import BASE_TIME
from tests.factories import pod


def test_human_duration() -> None:
    assert human_duration(45) == "45s"
    assert human_duration(750) == "12m30s"
    assert human_duration(600) == "10m"
    assert human_duration(7500) == "2h5m"
    assert human_duration(-3) == "0s"


def test_whole_hours_and_fractions_of_a_second() -> None:
    assert human_duration(7200) == "2h"
    assert human_duration(59.9) == "59s"


def test_seconds_since_is_whole_clamped_and_none_when_unknown() -> None:
    assert seconds_since(BASE_TIME + timedelta(seconds=90.7), BASE_TIME) == 90
    assert seconds_since(BASE_TIME, BASE_TIME + timedelta(seconds=5)) == 0  # clock skew
    assert seconds_since(BASE_TIME, None) is None


def test_created_at_reads_the_creation_timestamp_or_none() -> None:
    assert created_at(pod("a", created=timedelta(minutes=3))) == BASE_TIME + timedelta(minutes=3)
    assert created_at({"kind": "Pod", "metadata": {"creationTimestamp": "yesterday"}}) is None
    assert created_at({"kind": "Pod"}) is None
