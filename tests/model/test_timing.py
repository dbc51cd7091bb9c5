"""Timing: creation times, clamped ages and Go-like durations for messages."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kubemedic.model import timing
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


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-02-01T20:00:00Z", datetime(2023, 2, 1, 20, tzinfo=UTC)),
        ("2023-02-01T21:00:00+01:00", datetime(2023, 2, 1, 20, tzinfo=UTC)),
        ("2023-02-01t20:00:00.123456789z", datetime(2023, 2, 1, 20, 0, 0, 123456, tzinfo=UTC)),
    ],
)
def test_a_time_flag_reads_rfc3339_with_a_zone(text: str, expected: datetime) -> None:
    assert timing.parse_time_flag("--at", text) == expected


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("2023-02-01T20:00:00", "expected an RFC 3339 time with a zone"),
        ("2023-02-01", "expected an RFC 3339 time with a zone"),
        ("yesterday", "expected an RFC 3339 time with a zone"),
        ("2023-02-30T20:00:00Z", "expected an RFC 3339 time with a zone"),
        ("0001-01-01T00:00:00Z", "expected a time from 1970-01-01T00:00:00Z to 2999-12-31"),
        ("9999-12-31T23:59:59-23:59", "expected a time from 1970-01-01T00:00:00Z"),
        ("x" * 10_000, "expected an RFC 3339"),
    ],
)
def test_a_bad_time_flag_names_the_flag(text: str, words: str) -> None:
    with pytest.raises(timing.TimeError) as raised:
        timing.parse_time_flag("--since", text)
    message = str(raised.value)
    assert message.startswith("--since '") and words in message
    assert len(message) < 400
