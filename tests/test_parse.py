"""The `parse` step: fences, the widest-slice rescue, empty answers, non-objects, syntax."""

from __future__ import annotations

import pytest

from taguru_ray.pipeline.parse import (
    EMPTY_ANSWER_DIAGNOSIS,
    Answer,
    SyntaxFault,
    is_empty_answer,
    parse_answer,
    strip_fences,
)

OBJECT = '{"associations": [], "aliases": []}'


def value_of(text: str | None) -> dict[str, object]:
    parsed = parse_answer(text)
    assert isinstance(parsed, Answer), parsed
    return parsed.value


def fault_of(text: str | None) -> SyntaxFault:
    parsed = parse_answer(text)
    assert isinstance(parsed, SyntaxFault), parsed
    return parsed


def test_a_bare_object_parses() -> None:
    assert value_of(OBJECT) == {"associations": [], "aliases": []}


def test_surrounding_white_space_is_trimmed_including_ideographic_space() -> None:
    assert value_of(f"\u3000\n {OBJECT}\n\t") == {"associations": [], "aliases": []}


@pytest.mark.parametrize(
    "text",
    [
        f"```json\n{OBJECT}\n```",
        f"```\n{OBJECT}\n```",
        f"```JSON  \n{OBJECT}\n```\n",
        f"```json\n{OBJECT}```",
        f"```json\n{OBJECT}",  # closing fence cut off
        f"```{OBJECT}```",  # one line, no info string
    ],
)
def test_a_leading_fence_is_stripped(text: str) -> None:
    assert value_of(text) == {"associations": [], "aliases": []}


def test_strip_fences_drops_the_info_line_and_the_last_closing_fence() -> None:
    assert strip_fences('```json\n{"a": "```"}\n```') == '{"a": "```"}'
    assert strip_fences("no fence") == "no fence"


@pytest.mark.parametrize(
    "text",
    [
        f"Here is the extraction:\n{OBJECT}\nHope this helps.",
        f"Sure!\n```json\n{OBJECT}\n```",  # fence not leading: the slice rescues it
        f"{OBJECT} trailing words",
    ],
)
def test_prose_around_the_object_is_tolerated_by_the_widest_slice(text: str) -> None:
    assert value_of(text) == {"associations": [], "aliases": []}


def test_the_widest_slice_rescues_an_object_wrapped_in_an_array() -> None:
    assert value_of(f"[{OBJECT}]") == {"associations": [], "aliases": []}


@pytest.mark.parametrize("text", [None, "", "   \n\t", "```json\n```", "```", "```\n\n```\n"])
def test_a_blank_answer_is_the_empty_answer_diagnosis(text: str | None) -> None:
    fault = fault_of(text)
    assert fault == SyntaxFault(EMPTY_ANSWER_DIAGNOSIS, empty=True)
    assert is_empty_answer(text)


def test_a_non_blank_answer_is_not_empty() -> None:
    assert not is_empty_answer("{}")
    assert not fault_of("nothing to extract").empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2]", "not a JSON object: the top-level value is an array"),
        ('"done"', 'not a JSON object: the top-level value is string "done"'),
        ("42", "not a JSON object: the top-level value is number 42"),
        ("null", "not a JSON object: the top-level value is null"),
    ],
)
def test_a_non_object_top_level_is_a_syntax_fault(text: str, message: str) -> None:
    assert fault_of(text) == SyntaxFault(message)


def test_a_json_error_names_line_and_column() -> None:
    fault = fault_of('{"associations": [\n  {"subject": "a",}\n], "aliases": []}')
    assert fault.message.startswith("not a JSON object: ")
    assert "line 2 column 19" in fault.message


def test_when_the_slice_fails_too_the_whole_texts_error_is_reported() -> None:
    fault = fault_of('I found: {"associations": [}')
    assert fault.message == "not a JSON object: Expecting value: line 1 column 1 (char 0)"


def test_a_truncated_answer_reports_where_it_stopped() -> None:
    fault = fault_of('{"associations": [{"subject": "青嶺酒造", "label": "杜')
    assert fault.message.startswith("not a JSON object: Unterminated string")


def test_the_raw_object_is_kept_unnormalised() -> None:
    text = '{"associations": null, "questions": "none", "extra": {"k": 1}}'
    assert value_of(text) == {"associations": None, "questions": "none", "extra": {"k": 1}}


@pytest.mark.parametrize(
    ("token", "text"),
    [
        ("NaN", '{"w": NaN}'),
        ("Infinity", '{"w": Infinity}'),
        ("-Infinity", '{"w": -Infinity}'),
        ("1e400", '{"w": 1e400}'),
        ("-1e400", '{"w": -1e400}'),
    ],
)
def test_non_finite_numbers_are_a_syntax_fault_at_their_position(token: str, text: str) -> None:
    fault = fault_of(text)
    assert fault.message.startswith(f"not a JSON object: Number {token} is not finite")
    assert "line 1 column 7" in fault.message


def test_an_integer_too_large_for_a_double_is_not_finite() -> None:
    fault = fault_of('{"w": ' + "9" * 400 + "}")
    assert "is not finite" in fault.message


def test_large_finite_numbers_and_nan_inside_strings_are_fine() -> None:
    value = value_of('{"w": 100000000000000000000, "s": "NaN Infinity", "f": 1.5e300}')
    assert value == {"w": 10**20, "s": "NaN Infinity", "f": 1.5e300}


def test_an_unpaired_surrogate_escape_is_a_syntax_fault() -> None:
    fault = fault_of('{"s": "ok",\n "t": "x\\ud800y"}')
    assert fault.message.startswith("not a JSON object: Unpaired surrogate")
    assert "line 2 column 9" in fault.message
    assert "Unpaired" in fault_of('{"s": "\\udc00"}').message


def test_paired_surrogates_and_escaped_backslashes_are_fine() -> None:
    assert value_of('{"s": "\\ud83c\\udf76"}') == {"s": "🍶"}
    assert value_of('{"s": "\\\\ud800"}') == {"s": "\\ud800"}


def test_nesting_too_deep_for_the_parser_is_a_syntax_fault() -> None:
    fault = fault_of("[" * 100_000)
    assert fault.message.startswith("not a JSON object: Nesting too deep")
