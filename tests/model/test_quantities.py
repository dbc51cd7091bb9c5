from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubemedic.model.quantities import Format, Quantity, QuantityError, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("1", 1),
        ("100m", Fraction(1, 10)),
        ("1500m", Fraction(3, 2)),
        ("2k", 2000),
        ("3M", 3 * 10**6),
        ("4G", 4 * 10**9),
        ("5T", 5 * 10**12),
        ("6P", 6 * 10**15),
        ("7E", 7 * 10**18),
        ("1Ki", 1024),
        ("128Mi", 128 * 2**20),
        ("20Gi", 20 * 2**30),
        ("1Ti", 2**40),
        ("1Pi", 2**50),
        ("1Ei", 2**60),
        ("1e3", 1000),
        ("1E3", 1000),
        ("12e-3", Fraction(12, 1000)),
        ("1.5Gi", 3 * 2**29),
        (".5", Fraction(1, 2)),
        ("+1", 1),
        ("-2", -2),
        ("1n", Fraction(1, 10**9)),
        ("5u", Fraction(5, 10**6)),
    ],
)
def test_every_suffix_parses_to_its_exact_value(text: str, value: int | Fraction) -> None:
    assert parse_quantity(text).value == Fraction(value)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1000m", "1"),
        ("1500m", "1500m"),
        ("100m", "100m"),
        ("0.1", "100m"),
        ("1500000", "1500k"),
        ("1536Mi", "1536Mi"),
        ("1.5Gi", "1536Mi"),
        ("1024Mi", "1Gi"),
        ("512", "512"),
        ("0.5Ki", "512"),
        ("1e3", "1e3"),
        ("1000e0", "1e3"),
        ("12e-3", "12e-3"),
        ("0.1n", "1n"),
        ("0Gi", "0"),
        ("-1000m", "-1"),
        ("1000E", "1e21"),
    ],
)
def test_canonical_printing_matches_the_api_server(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize(
    "text", ["", "Gi", "1Gb", "1 Gi", "1.2.3", "one", "1KiB", "1K", "--1", "1e", "e3", "0x10"]
)
def test_invalid_quantities_are_rejected_with_the_value_and_place_named(text: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text, where="Pod default/web spec.containers[name=app].resources")
    assert repr(text) in str(caught.value)
    assert "Pod default/web spec.containers[name=app].resources" in str(caught.value)


def test_json_numbers_are_quantities_but_booleans_and_nan_are_not() -> None:
    assert parse_quantity(2).value == 2
    assert parse_quantity(0.25).value == Fraction(1, 4)
    for bad in (True, float("nan"), None, [], "9" * 200):
        with pytest.raises(QuantityError):
            parse_quantity(bad)


def test_arithmetic_is_exact_over_many_small_requests() -> None:
    total = sum((parse_quantity("100m") for _ in range(150)), Quantity.from_number(0))
    assert total.value == 15
    assert str(total) == "15"


def test_sum_keeps_the_binary_format_of_the_first_operand() -> None:
    total = parse_quantity("20Gi") + parse_quantity("128Mi")
    assert total.format is Format.BINARY_SI
    assert str(total) == "20608Mi"


def test_comparison_ignores_format() -> None:
    assert parse_quantity("1Ki") == parse_quantity("1024")
    assert parse_quantity("1G") < parse_quantity("1Gi")


def test_human_rendering_is_short() -> None:
    assert parse_quantity("20Gi").human() == "20Gi"
    assert parse_quantity("1.5Gi").human() == "1.5Gi"
    assert parse_quantity("10m").human() == "10m"
    assert parse_quantity("2").human() == "2"


_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@given(
    number=st.integers(min_value=-(10**12), max_value=10**12),
    suffix=st.sampled_from(_SUFFIXES),
)
def test_canonical_form_parses_back_to_the_same_value_and_format(number: int, suffix: str) -> None:
    quantity = parse_quantity(f"{number}{suffix}")
    again = parse_quantity(str(quantity))
    assert again.value == quantity.value
    assert str(again) == str(quantity)


@given(
    whole=st.integers(min_value=0, max_value=10**9),
    fraction=st.integers(min_value=0, max_value=999),
    exponent=st.integers(min_value=-9, max_value=18),
)
def test_decimal_exponent_round_trips(whole: int, fraction: int, exponent: int) -> None:
    quantity = parse_quantity(f"{whole}.{fraction:03d}e{exponent}")
    assert parse_quantity(str(quantity)).value == quantity.value


@given(st.text(max_size=30))
def test_arbitrary_text_never_crashes_the_parser(text: str) -> None:
    try:
        quantity = parse_quantity(text)
    except QuantityError:
        return
    assert parse_quantity(str(quantity)).value == quantity.value
