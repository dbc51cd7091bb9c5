from __future__ import annotations

import math
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.errors import InputError
from kubemedic.model.durations import (
    UNITS,
    DurationError,
    go_duration,
    parse_duration,
    parse_seconds,
    short_duration,
)

# -- the units ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanoseconds"),
    [
        ("3ns", 3),
        ("3us", 3_000),
        ("3µs", 3_000),  # U+00B5, as Go writes it
        ("3μs", 3_000),  # U+03BC, which Go also reads
        ("3ms", 3_000_000),
        ("3s", 3 * 10**9),
        ("3m", 180 * 10**9),
        ("3h", 3 * 3600 * 10**9),
        ("3d", 3 * 86400 * 10**9),
        ("3w", 21 * 86400 * 10**9),
    ],
)
def test_each_unit(text: str, nanoseconds: int) -> None:
    assert parse_seconds(text) == nanoseconds / 1e9
    assert parse_duration(text) == timedelta(microseconds=nanoseconds / 1000)


def test_units_table_is_complete() -> None:
    assert set(UNITS) == {"ns", "us", "µs", "μs", "ms", "s", "m", "h", "d", "w"}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        # Go's time.ParseDuration test table (the valid, non-negative rows)
        ("0", 0),
        ("5s", 5),
        ("30s", 30),
        ("1478s", 1478),
        ("+5s", 5),
        ("+0", 0),
        ("5.0s", 5),
        ("5.6s", 5.6),
        ("5.s", 5),
        (".5s", 0.5),
        ("1.0s", 1),
        ("1.00s", 1),
        ("1.004s", 1.004),
        ("1.0040s", 1.004),
        ("100.00100s", 100.001),
        ("1h1m1s", 3661),
        ("3h30m", 12600),
        ("10.5s4m", 250.5),
        ("1h2m3s4ms5us6ns", 3723.004005006),
        ("39h9m14.425s", 140954.425),
        ("52763797000ns", 52.763797),
        ("0.3333333333333333333h", 1200),
        # what metrics-server writes in a sample's window
        ("1m0s", 60),
        ("1h2m3.5s", 3723.5),
        ("250ms", 0.25),
        # what the archive's --since reads
        ("7d", 7 * 86400),
        ("1w", 7 * 86400),
        ("1.5h", 5400),
        ("2d12h", 216000),
        # blanks around the value
        ("  90s\n", 90),
        # components add up, as in Go
        ("1h1h", 7200),
    ],
)
def test_values(text: str, seconds: float) -> None:
    assert parse_seconds(text) == pytest.approx(seconds, rel=1e-15, abs=1e-15)


def test_exact_arithmetic() -> None:
    assert parse_seconds("1.1s") == 1.1
    assert parse_seconds("0.1s0.2s") == 0.3  # exact sum, then one rounding (0.1 + 0.2 is not)
    assert parse_seconds("1.5ns") == 1.5e-9
    assert parse_seconds("-1.5ns", negative=True) == -1.5e-9
    assert parse_duration("1.5us") == timedelta(microseconds=2)  # half to even
    assert parse_duration("2.5us") == timedelta(microseconds=2)
    assert parse_duration("999999999d") == timedelta(days=999_999_999)


def test_negative_values_only_when_asked() -> None:
    assert parse_duration("-1m30s", negative=True) == timedelta(seconds=-90)
    assert parse_seconds("-0") == 0
    with pytest.raises(DurationError) as caught:
        parse_duration("-5m")
    assert str(caught.value) == (
        'expected a duration of zero or more, such as 2m or 1h30m, got "-5m"'
    )


def test_zero_only_when_allowed() -> None:
    assert parse_duration("0s") == timedelta(0)
    for zero in ("0", "0s", "0h0m", "+0", "-0"):
        with pytest.raises(DurationError, match="longer than zero"):
            parse_duration(zero, zero=False)
    assert parse_duration("1ns", zero=False) == timedelta(0)  # rounded, but not zero as written


def test_bare_seconds() -> None:
    assert parse_duration("90", bare_seconds=True) == timedelta(seconds=90)
    assert parse_duration("1.5", bare_seconds=True) == timedelta(seconds=1.5)
    assert parse_duration("1e3", bare_seconds=True) == timedelta(seconds=1000)
    assert parse_seconds(90, bare_seconds=True) == 90.0
    assert parse_seconds(0.25, bare_seconds=True) == 0.25
    assert parse_seconds("10m", bare_seconds=True) == 600
    assert parse_seconds("-3", bare_seconds=True, negative=True) == -3
    for bad in ("nan", "inf", "-inf", "1e", "1_000", math.nan, math.inf, True):
        with pytest.raises(DurationError):
            parse_seconds(bad, bare_seconds=True)
    with pytest.raises(DurationError, match="zero or more"):
        parse_seconds(-3, bare_seconds=True)


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "",  # empty
        " ",
        "s",  # a unit without a number
        ".s",
        "5x",  # an unknown unit
        "5",  # a number without a unit
        "1.5",
        "1H",  # units are case-sensitive, as in Go
        "1 h",  # blanks inside
        "1h 30m",
        "1h,30m",
        "1..5s",
        "--1s",
        "+-1s",
        "+",
        "-",
        "1s-",
        "1e3s",  # no exponents with a unit
        "nan",
        "NaNs",
        "inf",
        "infh",
        "1_000s",
        "١s",  # an Arabic-Indic digit
        "1000000000d",  # more than timedelta holds
        "1" * 300 + "s",  # too long to read
        None,
        True,
        90,  # a number without bare_seconds
        1.5,
        [1, "s"],
        {"s": 1},
        b"5s",
    ],
)
def test_rejected(bad: object) -> None:
    with pytest.raises(DurationError) as caught:
        parse_duration(bad)
    assert str(caught.value).startswith("expected a duration")
    with pytest.raises(DurationError):
        parse_seconds(bad)


def test_messages() -> None:
    def message(value: object) -> str:
        with pytest.raises(DurationError) as caught:
            parse_duration(value)
        return str(caught.value)

    assert message("5x") == 'expected a duration such as 2m or 1h30m, got "5x"'
    assert message("") == 'expected a duration such as 2m or 1h30m, got ""'
    assert message("90") == (
        'expected a duration such as 2m or 1h30m, got "90" (a number needs a unit: 90s)'
    )
    assert message(None) == "expected a duration such as 2m or 1h30m, got None"
    assert message('a "quoted"\nline') == (
        'expected a duration such as 2m or 1h30m, got "a \\"quoted\\"\\nline"'
    )
    assert message("1000000000d") == (
        'expected a duration of at most 999999999 days, got "1000000000d"'
    )
    long = message("y" * 250)
    assert long == f'expected a duration such as 2m or 1h30m, got "{"y" * 200}…"'
    huge = message("y" * 100_000)
    assert len(huge) < 300
    assert huge.endswith('…" (100000 characters)')


def test_duration_error_is_an_input_error_and_a_value_error() -> None:
    with pytest.raises(InputError):
        parse_duration("5x")
    with pytest.raises(ValueError, match="5x"):
        parse_duration("5x")


# -- the formatter -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        # Go's time.Duration.String test table
        (0, "0s"),
        (1e-9, "1ns"),
        (1.1e-6, "1.1µs"),
        (2.2e-3, "2.2ms"),
        (3.3, "3.3s"),
        (4 * 60 + 5, "4m5s"),
        (4 * 60 + 5.001, "4m5.001s"),
        (5 * 3600 + 6 * 60 + 7.001, "5h6m7.001s"),
        (8 * 60 + 1e-9, "8m0.000000001s"),
        (-1e-9, "-1ns"),
        (-3.3, "-3.3s"),
        # what the simulator's messages show
        (10, "10s"),
        (80, "1m20s"),
        (300, "5m0s"),
        (3600, "1h0m0s"),
        (0.52, "520ms"),
        (182.5, "3m2.5s"),
    ],
)
def test_go_duration(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (timedelta(minutes=2), "2m"),
        (timedelta(hours=1), "1h"),
        (timedelta(hours=1, minutes=30), "1h30m"),
        (timedelta(hours=1, seconds=5), "1h0m5s"),
        (timedelta(seconds=90), "1m30s"),
        (timedelta(milliseconds=500), "500ms"),
        (timedelta(0), "0s"),
        (45, "45s"),
    ],
)
def test_short_duration_drops_trailing_zero_units_and_reads_back(
    value: float | timedelta, text: str
) -> None:
    assert short_duration(value) == text
    wanted = value if isinstance(value, timedelta) else timedelta(seconds=value)
    assert parse_duration(text) == wanted


def test_go_duration_of_a_timedelta() -> None:
    assert go_duration(timedelta(hours=1, microseconds=5)) == "1h0m0.000005s"
    assert go_duration(timedelta(days=2)) == "48h0m0s"
    assert go_duration(-timedelta(seconds=90)) == "-1m30s"
    with pytest.raises(ValueError, match="nan"):
        go_duration(math.nan)


_TIMEDELTAS = st.timedeltas(min_value=timedelta.min, max_value=timedelta.max)


@given(_TIMEDELTAS)
def test_round_trip_of_a_timedelta(value: timedelta) -> None:
    assert parse_duration(go_duration(value), negative=True) == value


@given(st.floats(min_value=-1e6, max_value=1e6))
def test_round_trip_of_float_seconds(seconds: float) -> None:
    """To the nanosecond, which is what ``go_duration`` keeps."""
    parsed = parse_seconds(go_duration(seconds), negative=True)
    assert round(parsed * 1e9) == round(seconds * 1e9)


@given(
    st.lists(
        st.tuples(
            st.one_of(
                st.integers(min_value=0, max_value=10**6).map(str),
                st.decimals(min_value=0, max_value=10**4, places=3).map(str),
            ),
            st.sampled_from(sorted(UNITS)),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_compound_values_add_up(parts: list[tuple[str, str]]) -> None:
    text = "".join(number + unit for number, unit in parts)
    expected = sum(float(number) * float(UNITS[unit]) for number, unit in parts)
    assert parse_seconds(text) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@given(st.text(max_size=12))
def test_any_text_parses_or_raises_duration_error(text: str) -> None:
    try:
        parse_duration(text, negative=True, bare_seconds=True)
    except DurationError as error:
        assert str(error).startswith("expected a duration")
