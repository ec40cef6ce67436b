"""Rust renderings the issue texts embed: trim, {:?} quoting, f64 and serde_json numbers."""

from __future__ import annotations

import math

import pytest

from taguru_ray.contract.rust_text import (
    debug_str,
    describe,
    display_f64,
    json_number,
    quote_for_issue,
    rust_trim,
)


@pytest.mark.parametrize(
    ("value", "desc"),
    [
        (None, "null"),
        (True, "boolean true"),
        (False, "boolean false"),
        (7, "number 7"),
        (-3, "number -3"),
        (1.0, "number 1.0"),
        (0.5, "number 0.5"),
        ("strong", 'string "strong"'),
        ([], "an array"),
        ([1, 2], "an array"),
        ({}, "an object"),
        ({"k": 1}, "an object"),
    ],
)
def test_describe_renders_each_json_type(value: object, desc: str) -> None:
    assert describe(value) == desc


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0, "0"),
        (2**64 - 1, "18446744073709551615"),
        (-(2**63), "-9223372036854775808"),
        (2**64, "1.8446744073709552e19"),
        (1.0, "1.0"),
        (-1.0, "-1.0"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (100.0, "100.0"),
        (1e15, "1000000000000000.0"),
        (1e16, "1e16"),
        (1.5e300, "1.5e300"),
        (123.456, "123.456"),
        (0.0001, "0.0001"),
        (1e-5, "0.00001"),
        (1e-6, "1e-6"),
        (1.5e-7, "1.5e-7"),
    ],
)
def test_json_number_prints_like_serde_json(value: int | float, text: str) -> None:
    assert json_number(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (2_000_000.0, "2000000"),
        (1e6, "1000000"),
        (-2e6, "-2000000"),
        (1_000_000.5, "1000000.5"),
        (1e22, "10000000000000000000000"),
        (1.5e-7, "0.00000015"),
        (0.0, "0"),
        (-0.0, "-0"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        (math.nan, "NaN"),
    ],
)
def test_display_f64_prints_like_rust_display(value: float, text: str) -> None:
    assert display_f64(value) == text


def test_display_f64_never_uses_an_exponent() -> None:
    assert display_f64(1e300) == "1" + "0" * 300


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("plain", '"plain"'),
        ('say "hi"', '"say \\"hi\\""'),
        ("back\\slash", '"back\\\\slash"'),
        ("a\nb\tc\rd\0e", '"a\\nb\\tc\\rd\\0e"'),
        ("it's", '"it\'s"'),
        ("\x1b\x7f", '"\\u{1b}\\u{7f}"'),
        ("a\u3000b\u00a0c", '"a\\u{3000}b\\u{a0}c"'),
        ("zero\u200bwidth", '"zero\\u{200b}width"'),
        ("e\u0301", '"e\\u{301}"'),
        ("ｶﾞ", '"ｶ\\u{ff9e}"'),
        ("青嶺酒造 🍶 x", '"青嶺酒造 🍶 x"'),
    ],
)
def test_debug_str_quotes_like_rust_debug(text: str, quoted: str) -> None:
    assert debug_str(text) == quoted


def test_quote_for_issue_keeps_64_bytes_then_an_ellipsis() -> None:
    assert quote_for_issue("a" * 64) == '"' + "a" * 64 + '"'
    assert quote_for_issue("a" * 65) == '"' + "a" * 64 + '"…'


def test_quote_for_issue_cuts_at_a_character_boundary() -> None:
    # 22 × 3 bytes = 66: the 22nd character would cross the 64-byte line.
    assert quote_for_issue("あ" * 22) == '"' + "あ" * 21 + '"…'


def test_quote_for_issue_counts_bytes_before_escaping() -> None:
    assert quote_for_issue("\n" * 64) == '"' + "\\n" * 64 + '"'


def test_rust_trim_strips_white_space_but_not_information_separators() -> None:
    assert rust_trim("\u3000 x \u00a0\n") == "x"
    assert rust_trim("\x1cx\x1f") == "\x1cx\x1f"
