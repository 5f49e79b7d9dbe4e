"""Quantity parsing, canonical strings and arithmetic, as apimachinery's resource.Quantity behaves."""

from __future__ import annotations

import pytest

from mpioperator.podgroup.quantity import (
    Format,
    Quantity,
    format_quantity,
    parse_quantity,
    parse_resource_list,
)

GI = 2**30


@pytest.mark.parametrize(
    ("text", "value", "fmt"),
    [
        ("2", 2, Format.DECIMAL_SI),
        ("500m", 0.5, Format.DECIMAL_SI),
        ("4Gi", 4 * GI, Format.BINARY_SI),
        ("1.5Gi", 1.5 * GI, Format.BINARY_SI),
        ("1k", 1000, Format.DECIMAL_SI),
        ("1E", 10**18, Format.DECIMAL_SI),
        ("1e3", 1000, Format.DECIMAL_EXPONENT),
        ("1E3", 1000, Format.DECIMAL_EXPONENT),
        ("12e-3", 0.012, Format.DECIMAL_EXPONENT),
        ("+1.", 1, Format.DECIMAL_SI),
        (".5", 0.5, Format.DECIMAL_SI),
        ("-3Ki", -3072, Format.BINARY_SI),
        ("7n", 7e-9, Format.DECIMAL_SI),
        ("7u", 7e-6, Format.DECIMAL_SI),
    ],
)
def test_parse_reads_value_and_remembers_suffix_family(text: str, value: float, fmt: Format) -> None:
    q = parse_quantity(text)
    assert q.nanos == round(value * 10**9)
    assert q.format is fmt


def test_numbers_parse_like_their_decimal_text() -> None:
    assert parse_quantity(2) == parse_quantity("2")
    assert parse_quantity(0.25) == parse_quantity("250m")
    assert Quantity.parse("1Gi") == parse_quantity("1024Mi")


@pytest.mark.parametrize(
    ("text", "nanos"),
    [("0.1n", 1), ("1.5n", 2), ("-1.5n", -2), ("1e-12", 1), ("0.0000000001", 1)],
)
def test_precision_below_nano_rounds_away_from_zero(text: str, nanos: int) -> None:
    assert parse_quantity(text).nanos == nanos


@pytest.mark.parametrize(
    "text",
    ["", "1.5.5", "1K", "1ki", "abc", " 1", "1 ", "1e", "--1", "+-1", "1e3.5", "1Gi1", "1e3k", "ee3", "0x1"],
)
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="quantit"):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["-", "+", ".", "-.", "e3", "Gi"])
def test_an_empty_number_is_zero_as_in_apimachinery(text: str) -> None:
    assert parse_quantity(text).is_zero()
    assert str(parse_quantity(text)) == "0"


@pytest.mark.parametrize(
    ("text", "printed"),
    [("8Ei", "9223372036854775807"), ("-8Ei", "-9223372036854775807"), ("8192Pi", "9223372036854775807")],
)
def test_binary_magnitudes_are_capped_at_int64_max(text: str, printed: str) -> None:
    assert str(parse_quantity(text)) == printed


def test_decimal_magnitudes_are_not_capped() -> None:
    assert str(parse_quantity("-9223372036854775808")) == "-9223372036854775808"


@pytest.mark.parametrize(
    "text",
    [
        "+1",
        "+500m",
        "007",
        "-007",
        "007k",
        "01Ki",
        "010Ki",
        "+1Ki",
        "1E3",
        "1E-3",
        "1e+3",
        "1.500",
        "1.e3",
        "5.e-3",
        "5e21",
        "100E",
    ],
)
def test_short_inputs_already_in_canonical_shape_keep_their_spelling(text: str) -> None:
    assert str(parse_quantity(text)) == text


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("0.500", "500m"),
        (".500", "500m"),
        ("00.5", "500m"),
        ("1.5000", "1500m"),
        ("+1Pi", "1Pi"),
        ("+1Ei", "1Ei"),
        ("00Ki", "0"),
        ("1e17", "100e15"),
        ("1e100", "10e99"),
        ("1e-10", "1e-9"),
        ("10e-10", "1e-9"),
        ("1.5e-6", "1500e-9"),
        ("1.23456789012345678", "1234567891n"),
        ("1.0000000001", "1000000001n"),
        ("12345678901234567890", "12345678901234567890"),
        ("1000000Ki", "1000000Ki"),
        ("4096Pi", "4Ei"),
        ("1.5Ei", "1536Pi"),
        ("0.1Ki", "102400m"),
        ("1000P", "1E"),
    ],
)
def test_other_spellings_print_canonically(text: str, canonical: str) -> None:
    assert str(parse_quantity(text)) == canonical


def test_arithmetic_forgets_a_kept_spelling() -> None:
    assert str(parse_quantity("+1") * 1) == "1"
    assert str(parse_quantity("1E3") + Quantity(0)) == "1e3"


def test_resource_lists_are_trimmed_like_quantity_json_decoding() -> None:
    assert str(parse_resource_list({"cpu": " 1 "})["cpu"]) == "1"


def test_non_numeric_types_are_rejected() -> None:
    with pytest.raises(ValueError, match="string or a number"):
        parse_quantity(True)


def test_absurd_exponents_are_rejected_instead_of_building_huge_integers() -> None:
    with pytest.raises(ValueError, match="exponent out of range"):
        parse_quantity("1e100000")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("2", "2"),
        ("500m", "500m"),
        ("4Gi", "4Gi"),
        ("1500Mi", "1500Mi"),
        ("1.5", "1500m"),
        ("1.5Gi", "1536Mi"),
        ("0.5Gi", "512Mi"),
        ("1024Mi", "1Gi"),
        ("1023Ki", "1023Ki"),
        ("0.5Ki", "512"),
        ("1.5Ki", "1536"),
        ("1000", "1k"),
        ("1000m", "1"),
        ("1024", "1024"),
        ("100", "100"),
        ("1.5k", "1500"),
        ("1.5M", "1500k"),
        ("0.1m", "100u"),
        ("0.1n", "1n"),
        ("1e3", "1e3"),
        ("10e3", "10e3"),
        ("1.5e3", "1500"),
        ("12e-3", "12e-3"),
        ("0", "0"),
        ("0Gi", "0"),
        ("0m", "0"),
        ("-1Gi", "-1Gi"),
        ("-500m", "-500m"),
        ("-0", "0"),
    ],
)
def test_canonical_string_keeps_precision_with_the_largest_suffix(text: str, canonical: str) -> None:
    assert format_quantity(parse_quantity(text)) == canonical
    assert str(parse_quantity(canonical)) == canonical


def test_decimal_beyond_exa_widens_the_mantissa_and_still_round_trips() -> None:
    big = parse_quantity("1000E")
    assert str(big) == "1000E"
    assert parse_quantity(str(big)) == big


def test_sums_keep_the_left_format_unless_it_is_zero() -> None:
    assert str(parse_quantity("20Gi") + parse_quantity("10Gi")) == "30Gi"
    assert (parse_quantity("1Gi") + parse_quantity("1")).format is Format.BINARY_SI
    assert str(Quantity(0) + parse_quantity("1Gi")) == "1Gi"
    assert str(parse_quantity("1Gi") - parse_quantity("512Mi")) == "512Mi"


def test_binary_non_integers_print_as_decimal() -> None:
    assert str(parse_quantity("1Ki") + parse_quantity("500m")) == "1024500m"


def test_multiplying_by_replicas_scales_exactly() -> None:
    assert str(parse_quantity("32Gi") * 2) == "64Gi"
    assert str(3 * parse_quantity("100m")) == "300m"
    assert str(parse_quantity("1Gi") * -2) == "-2Gi"
    assert str(-parse_quantity("2")) == "-2"


def test_equality_hash_and_order_look_at_the_value_only() -> None:
    assert parse_quantity("1Gi") == parse_quantity("1073741824")
    assert hash(parse_quantity("1Gi")) == hash(parse_quantity("1024Mi"))
    assert parse_quantity("999m") < parse_quantity("1") <= parse_quantity("1000m")
    assert parse_quantity("2") > parse_quantity("1") >= parse_quantity("1e0")


def test_resource_lists_parse_every_entry_and_missing_lists_are_empty() -> None:
    assert parse_resource_list({"cpu": "1", "memory": "2Gi"}) == {
        "cpu": parse_quantity("1"),
        "memory": parse_quantity("2Gi"),
    }
    assert parse_resource_list(None) == {}
