"""Field errors render as apimachinery's field.Error / ErrorList.ToAggregate() text."""

from __future__ import annotations

import pytest

from mpioperator.api.field_errors import (
    FieldError,
    JSONString,
    aggregate_message,
    duplicate,
    forbidden,
    go_quote,
    invalid,
    json_quote,
    not_found,
    not_supported,
    required,
    too_long,
)


def test_required_omits_the_bad_value() -> None:
    assert str(required("spec.x", "must have x")) == "spec.x: Required value: must have x"


def test_forbidden_and_too_long_omit_the_bad_value() -> None:
    assert str(forbidden("spec.x", "may not be set")) == "spec.x: Forbidden: may not be set"
    assert str(too_long("metadata.annotations", 262144)) == (
        "metadata.annotations: Too long: may not be more than 262144 bytes"
    )


def test_invalid_renders_integers_bare_and_strings_go_quoted() -> None:
    assert str(invalid("spec.n", -1, "must be greater than or equal to 0")) == (
        "spec.n: Invalid value: -1: must be greater than or equal to 0"
    )
    assert str(invalid("metadata.name", "a\tb", "bad")) == 'metadata.name: Invalid value: "a\\tb": bad'


@pytest.mark.parametrize(("value", "rendered"), [(True, "true"), (False, "false"), (None, "null")])
def test_booleans_and_null_render_as_go_does(value: object, rendered: str) -> None:
    assert str(invalid("f", value, "d")) == f"f: Invalid value: {rendered}: d"


def test_duplicate_and_not_found_show_the_value_without_detail() -> None:
    assert str(duplicate("spec.list[1]", "a")) == 'spec.list[1]: Duplicate value: "a"'
    assert str(not_found("spec.ref", "x")) == 'spec.ref: Not found: "x"'


def test_an_error_without_detail_ends_after_the_value() -> None:
    assert str(FieldError("Invalid value", "f", 3)) == "f: Invalid value: 3"


def test_not_supported_lists_values_go_quoted_in_the_given_order() -> None:
    error = not_supported("spec.p", "x", ["b", "a"])
    assert str(error) == 'spec.p: Unsupported value: "x": supported values: "b", "a"'


def test_not_supported_without_values_has_no_detail() -> None:
    assert str(not_supported("spec.p", "x", [])) == 'spec.p: Unsupported value: "x"'


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"\\', '"say \\"hi\\"\\\\"'),
        ("\a\b\f\n\r\t\v", '"\\a\\b\\f\\n\\r\\t\\v"'),
        ("\x01\x7f", '"\\x01\\x7f"'),
        ("caf\u00e9 \u65e5\u672c", '"caf\u00e9 \u65e5\u672c"'),
        ("nb\u00a0sp", '"nb\\u00a0sp"'),
        ("tag\U000e0001", '"tag\\U000e0001"'),
        ("lone\ud800", '"lone\ufffd"'),
    ],
    ids=[
        "ascii",
        "quotes",
        "short escapes",
        "hex escapes",
        "printable unicode",
        "bmp",
        "astral",
        "surrogate",
    ],
)
def test_go_quote_matches_strconv_quote(text: str, quoted: str) -> None:
    assert go_quote(text) == quoted


@pytest.mark.parametrize(
    ("text", "encoded"),
    [
        ("Always", '"Always"'),
        ("<a&b>", '"\\u003ca\\u0026b\\u003e"'),
        ("line\nnext\x01", '"line\\nnext\\u0001"'),
        ("caf\u00e9\u2028", '"caf\u00e9\\u2028"'),
    ],
)
def test_json_quote_matches_go_encoding_json(text: str, encoded: str) -> None:
    assert json_quote(text) == encoded


def test_named_string_values_are_json_encoded_not_go_quoted() -> None:
    error = not_supported("spec.p", JSONString("a<b\x01"), ["x"])
    assert str(error) == 'spec.p: Unsupported value: "a\\u003cb\\u0001": supported values: "x"'


def test_aggregate_of_nothing_is_empty() -> None:
    assert aggregate_message([]) == ""


def test_aggregate_of_one_error_is_its_text() -> None:
    assert aggregate_message([required("a", "x")]) == "a: Required value: x"


def test_aggregate_of_several_errors_is_bracketed_and_comma_separated() -> None:
    errors = [required("a", "x"), invalid("b", 1, "y")]
    assert aggregate_message(errors) == "[a: Required value: x, b: Invalid value: 1: y]"


def test_aggregate_drops_repeated_messages_keeping_first_order() -> None:
    errors = [required("a", "x"), invalid("b", 1, "y"), required("a", "x")]
    assert aggregate_message(errors) == "[a: Required value: x, b: Invalid value: 1: y]"


def test_aggregate_of_identical_errors_is_one_unbracketed_message() -> None:
    assert aggregate_message([required("a", "x"), required("a", "x")]) == "a: Required value: x"
