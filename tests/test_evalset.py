"""eval.jsonl, the dataset evaluate (interpret) and benchmark search (carry-through) share:
what each mode accepts, types, refuses and warns about (EVALUATE.md §3.1, BENCHMARK.md §4)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.errors import EXIT_USAGE, UsageError
from taguru_ray.evalset import (
    CARRY_CONSUMER,
    SECTION_UNCHECKED,
    Case,
    EvalSetError,
    ExpectedAssociation,
    ExpectedCitation,
    ExpectedSource,
    Mode,
    Options,
    limit_problem,
    load,
    parse,
)

PATH = "evals/eval.jsonl"
HEADER = {"taguru_eval": 1, "name": "sake retrieval cases"}
CASE = {
    "case_id": "brand-origin-001",
    "query": "青嶺はどこの蔵の酒か",
    "cues": ["青嶺"],
    "expected_sources": [{"source": "corpus/brewery.md", "paragraphs": [0], "relevance": 3}],
    "expected_concepts": ["青嶺酒造"],
    "options": {"limit": 10},
}
BOTH = pytest.mark.parametrize("mode", [Mode.INTERPRET, Mode.CARRY])


def text(*cases: dict[str, Any], header: dict[str, Any] = HEADER) -> str:
    return "\n".join(json.dumps(line, ensure_ascii=False) for line in (header, *cases)) + "\n"


def case(**fields: Any) -> dict[str, Any]:
    return {"case_id": "c1", "query": "q", **fields}


def error(source: str, mode: Mode = Mode.INTERPRET) -> str:
    with pytest.raises(EvalSetError) as raised:
        parse(source, PATH, mode)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{PATH}: ")
    return message


# --------------------------------------------------------------------------- a good file


@BOTH
def test_a_well_formed_file_loads_its_name_and_typed_case(mode: Mode) -> None:
    loaded = parse(text(CASE), PATH, mode)
    assert loaded.name == "sake retrieval cases"
    assert loaded.warnings == ()
    assert loaded.cases == (
        Case(
            case_id="brand-origin-001",
            query="青嶺はどこの蔵の酒か",
            cues=("青嶺",),
            expected_sources=(ExpectedSource("corpus/brewery.md", (0,), 3),),
            expected_concepts=("青嶺酒造",),
            options=Options(limit=10),
            line=2,
        ),
    )


def test_absent_optional_fields_take_their_defaults() -> None:
    source = text(case(expected_sources=[{"source": "s"}]), header={"taguru_eval": 1})
    loaded = parse(source, PATH, Mode.INTERPRET)
    assert loaded.name is None
    only = loaded.cases[0]
    assert only.cues == () and only.expected_concepts == () and only.options == Options()
    assert only.expected_sources == (ExpectedSource("s", paragraphs=(), relevance=1),)


def test_records_are_frozen() -> None:
    loaded = parse(text(CASE), PATH, Mode.INTERPRET)
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.cases[0].query = "other"  # type: ignore[misc]


def test_an_eval_set_error_is_a_usage_error_exit_2() -> None:
    assert issubclass(EvalSetError, UsageError)
    assert EvalSetError.exit_code == EXIT_USAGE


# --------------------------------------------------------------------------- lines


def test_blank_lines_are_skipped_and_lines_keep_their_file_numbers() -> None:
    source = "\n  \n" + json.dumps(HEADER) + "\n\n\t\n" + json.dumps(CASE) + "\n\n"
    loaded = parse(source, PATH, Mode.INTERPRET)
    assert [c.line for c in loaded.cases] == [6]


def test_a_bom_crlf_and_surrounding_spaces_are_tolerated() -> None:
    source = "\ufeff" + json.dumps(HEADER) + "\r\n   " + json.dumps(CASE) + "  \r\n"
    assert len(parse(source, PATH, Mode.INTERPRET).cases) == 1


@BOTH
def test_an_empty_file_is_refused(mode: Mode) -> None:
    assert error("", mode).startswith(f"{PATH}: empty file")
    assert error("\n   \n\n", mode).startswith(f"{PATH}: empty file")


@BOTH
def test_a_header_without_cases_is_refused(mode: Mode) -> None:
    assert error(text(), mode).startswith(f"{PATH}: no cases")


def test_a_line_that_is_not_json_names_its_line_and_column_not_its_text() -> None:
    secret = "DO-NOT-ECHO-" * 20
    message = error(text() + '  {"case_id": "' + secret + '", oops}\n')
    assert message.startswith(f"{PATH}: line 2: not JSON (")
    assert "column" in message and secret not in message


def test_nan_and_infinity_are_not_json() -> None:
    assert "not JSON" in error(text() + '{"case_id":"c1","query":"q","options":{"floor":NaN}}')
    assert "not JSON" in error(text() + '{"case_id":"c1","query":"q","options":{"floor":Infinity}}')


@BOTH
def test_a_case_line_must_be_an_object(mode: Mode) -> None:
    assert (
        error(text() + "[1, 2]\n", mode)
        == f"{PATH}: line 2: a case must be an object, got an array"
    )
    assert "must be an object" in error(text() + '"c1"\n', mode)


def test_a_long_bad_value_is_shortened_not_dumped() -> None:
    long = "x" * 500
    message = error(text(case(query=[long])))
    assert long not in message and "query must be a string, got an array" in message
    assert long not in error(text(case(cues=[long, 3])))


# --------------------------------------------------------------------------- header


@BOTH
def test_version_2_is_refused_by_equality(mode: Mode) -> None:
    assert (
        error('{"taguru_eval":2}\n', mode)
        == f"{PATH}: line 1: header: taguru_eval must be 1, got 2"
    )


@pytest.mark.parametrize("version", ["1", 1.0, True, None, 0])
def test_a_version_that_is_not_the_integer_1_is_refused(version: Any) -> None:
    assert "taguru_eval must be 1" in error(text(CASE, header={"taguru_eval": version}))


def test_a_header_without_taguru_eval_is_refused() -> None:
    # The usual cause: the header line was forgotten and the first case took its place.
    assert "header: taguru_eval is required" in error(text(CASE, header=CASE))


@BOTH
def test_an_unknown_header_key_is_refused(mode: Mode) -> None:
    message = error(text(CASE, header={"taguru_eval": 1, "nmae": "x"}), mode)
    assert message == f"{PATH}: line 1: header: unknown field 'nmae' (did you mean 'name'?)"


def test_default_target_is_accepted_as_any_value_and_ignored() -> None:
    for target in ({"context": "sake"}, "sake", 3, None, [1]):
        header = {"taguru_eval": 1, "default_target": target}
        assert parse(text(CASE, header=header), PATH, Mode.INTERPRET).name is None


def test_the_header_name_must_be_a_string_or_null() -> None:
    assert "header: name must be a string, got 5" in error(
        text(CASE, header={"taguru_eval": 1, "name": 5})
    )
    assert parse(text(CASE, header={"taguru_eval": 1, "name": None}), PATH, Mode.CARRY).name is None


def test_the_header_must_be_an_object() -> None:
    assert "the header line must be an object" in error("[1]\n" + json.dumps(CASE))


# --------------------------------------------------------------------------- case keys


@BOTH
def test_a_typo_field_is_refused_in_both_modes(mode: Mode) -> None:
    message = error(text(case(expcted_sources=[])), mode)
    assert message == (
        f"{PATH}: line 2: case 'c1': unknown field 'expcted_sources' "
        "(did you mean 'expected_sources'?)"
    )


@BOTH
def test_an_unknown_field_inside_an_object_is_refused_by_its_path(mode: Mode) -> None:
    bad_source = case(expected_sources=[{"source": "s"}, {"source": "s", "paragraph": [1]}])
    assert "unknown field 'expected_sources[1].paragraph'" in error(text(bad_source), mode)
    assert "unknown field 'options.limt'" in error(text(case(options={"limt": 5})), mode)


@BOTH
def test_options_sources_is_refused_as_retired(mode: Mode) -> None:
    message = error(text(case(options={"sources": ["corpus/brewery.md"]})), mode)
    assert message.startswith(f"{PATH}: line 2: case 'c1': options.sources is retired")


@BOTH
def test_a_duplicate_case_id_is_refused_naming_the_first_line(mode: Mode) -> None:
    message = error(text(case(), case(query="q2")), mode)
    assert message == f"{PATH}: line 3: duplicate case_id 'c1' (first on line 2)"


@BOTH
@pytest.mark.parametrize("blank", ["", "   ", "\u3000"])
def test_a_blank_case_id_or_query_is_refused(mode: Mode, blank: str) -> None:
    assert error(text(case(case_id=blank)), mode) == f"{PATH}: line 2: case_id must not be empty"
    assert (
        error(text(case(query=blank)), mode)
        == f"{PATH}: line 2: case 'c1': query must not be empty"
    )


@BOTH
def test_case_id_and_query_are_required_strings(mode: Mode) -> None:
    assert "case_id is required" in error(text({"query": "q"}), mode)
    assert "query is required" in error(text({"case_id": "c1"}), mode)
    assert "case_id must be a string, got 7" in error(text(case(case_id=7)), mode)


@BOTH
def test_cues_and_expected_concepts_are_arrays_of_strings(mode: Mode) -> None:
    assert "cues[1] must be a string, got 3" in error(text(case(cues=["a", 3])), mode)
    assert "expected_concepts must be an array" in error(text(case(expected_concepts="a")), mode)
    assert "cues must be an array, got null" in error(text(case(cues=None)), mode)


@BOTH
def test_an_expected_source_needs_a_non_blank_source(mode: Mode) -> None:
    assert "expected_sources[0].source must not be empty" in error(
        text(case(expected_sources=[{"source": " "}])), mode
    )
    assert "expected_sources[0].source is required" in error(
        text(case(expected_sources=[{"paragraphs": [1]}])), mode
    )


@BOTH
@pytest.mark.parametrize("relevance", [4, -1])
def test_relevance_outside_0_to_3_is_refused(mode: Mode, relevance: int) -> None:
    source = case(expected_sources=[{"source": "s", "relevance": relevance}])
    assert f"expected_sources[0].relevance must be 0..=3, got {relevance}" in error(
        text(source), mode
    )


def test_relevance_0_and_3_load_and_0_still_counts_as_an_expectation() -> None:
    sources = [{"source": "a", "relevance": 0}, {"source": "b", "relevance": 3}]
    loaded = parse(text(case(expected_sources=sources)), PATH, Mode.CARRY).cases[0]
    assert [s.relevance for s in loaded.expected_sources] == [0, 3]
    assert loaded.has_expectations


@BOTH
def test_paragraphs_are_u32(mode: Mode) -> None:
    top = 2**32 - 1
    loaded = parse(
        text(case(expected_sources=[{"source": "s", "paragraphs": [0, top]}])), PATH, mode
    )
    assert loaded.cases[0].expected_sources[0].paragraphs == (0, top)
    for bad in (2**32, -1, 1.0, "1"):
        source = case(expected_sources=[{"source": "s", "paragraphs": [bad]}])
        assert "expected_sources[0].paragraphs[0] must be" in error(text(source), mode)


@BOTH
def test_a_bool_is_not_an_integer(mode: Mode) -> None:
    for bad in (
        case(expected_sources=[{"source": "s", "relevance": True}]),
        case(expected_sources=[{"source": "s", "paragraphs": [False]}]),
        case(options={"limit": True}),
    ):
        assert "must be an integer, got " in error(text(bad), mode)


# --------------------------------------------------------------------------- options.limit


@BOTH
def test_limit_is_typed_in_both_modes_but_its_range_is_the_callers(mode: Mode) -> None:
    assert "options.limit must be an integer, got the string '10'" in error(
        text(case(options={"limit": "10"})), mode
    )
    source = text(case(options={"limit": 0}), case(case_id="c2", options={"limit": None}))
    loaded = parse(source, PATH, mode)
    assert [c.options.limit for c in loaded.cases] == [0, None]


LIMITS = [(None, False), (1, False), (1000, False), (0, True), (1001, True), (-5, True)]


@pytest.mark.parametrize(("limit", "problem"), LIMITS)
def test_limit_problem_says_why_a_limit_is_out_of_1_to_1000(
    limit: int | None, problem: bool
) -> None:
    found = limit_problem(Case("c1", "q", options=Options(limit=limit), line=4))
    if problem:
        assert found == f"line 4: case 'c1': options.limit must be 1..=1000, got {limit}"
    else:
        assert found is None


# --------------------------------------------------------------------------- carry-through

EXTENSIONS = case(
    expected_labels=["好き"],
    expected_associations=[{"subject": "青嶺", "label": "好き", "object": "日本酒"}],
    expected_citations=[{"source": "corpus/brewery.md", "paragraph": 3}],
    options={"limit": 5, "floor": 0.4, "tags": ["brand"], "since": 100, "until": 200},
)


def test_carry_through_accepts_evaluate_fields_leaves_them_empty_and_warns_once() -> None:
    second = case(case_id="c2", expected_labels=["x"], options={"floor": 0.5})
    loaded = parse(text(EXTENSIONS, second), PATH, Mode.CARRY)
    assert len(loaded.warnings) == 1
    assert CARRY_CONSUMER == "taguru-ray benchmark search"
    assert CARRY_CONSUMER in loaded.warnings[0] and loaded.warnings[0].startswith(f"{PATH}: ")
    first = loaded.cases[0]
    assert first.expected_labels == () and first.expected_associations == ()
    assert first.expected_citations == ()
    assert first.options == Options(limit=5)


@pytest.mark.parametrize(
    "carried",
    [
        case(expected_labels=["x"]),
        case(expected_associations=[]),
        case(expected_citations=42),
        case(options={"floor": 0.5}),
        case(options={"tags": []}),
        case(options={"since": 1}),
        case(options={"until": 2}),
    ],
)
def test_any_one_evaluate_field_earns_the_warning(carried: dict[str, Any]) -> None:
    warnings = parse(text(carried), PATH, Mode.CARRY).warnings
    (field,) = (key for key in carried if key not in ("case_id", "query"))
    name = field if field != "options" else "options." + next(iter(carried["options"]))
    assert len(warnings) == 1 and name in warnings[0]


def test_no_evaluate_field_means_no_warning_and_null_counts_as_absent() -> None:
    nulls = case(expected_labels=None, expected_citations=None, options={"floor": None})
    assert parse(text(CASE, nulls), PATH, Mode.CARRY).warnings == ()


MALFORMED = [
    case(expected_citations=42),
    case(expected_labels=[""]),
    case(expected_labels="好き"),
    case(expected_associations=[{"subject": "a", "label": "b"}]),
    case(expected_associations=[{"subject": "a", "label": " ", "object": "c"}]),
    case(expected_associations=[{"subject": "a", "label": "b", "object": "c", "weight": 1}]),
    case(expected_citations=[{"source": "s"}]),
    case(expected_citations=[{"source": "", "paragraph": 0}]),
    case(expected_citations=[{"source": "s", "paragraph": 2**32}]),
    case(expected_citations=[{"source": "s", "paragraph": 0, "section": 5}]),
    case(expected_citations=[{"source": "s", "paragraph": 0, "quote": "  "}]),
    case(expected_citations=[{"source": "s", "paragraph": 0, "page": 1}]),
    case(options={"floor": 1.5}),
    case(options={"floor": -0.1}),
    case(options={"floor": "0.5"}),
    case(options={"floor": True}),
    case(options={"tags": "not-an-array"}),
    case(options={"tags": [1]}),
    case(options={"since": -1}),
    case(options={"since": "yesterday"}),
    case(options={"until": 1.5}),
    case(options={"until": 2**64}),
]


@pytest.mark.parametrize("malformed", MALFORMED)
def test_a_malformed_evaluate_field_rides_through_carry_but_is_refused_by_interpret(
    malformed: dict[str, Any],
) -> None:
    carried = parse(text(malformed), PATH, Mode.CARRY)
    assert len(carried.cases) == 1 and len(carried.warnings) == 1
    message = error(text(malformed), Mode.INTERPRET)
    field = next(key for key in malformed if key not in ("case_id", "query"))
    assert message.startswith(f"{PATH}: line 2: case 'c1': ") and field in message


def test_interpret_messages_name_the_field_path() -> None:
    assert error(text(case(expected_citations=42))).endswith(
        "expected_citations must be an array, got 42"
    )
    assert "expected_associations[0].object is required" in error(text(MALFORMED[3]))
    assert "expected_labels[0] must not be empty" in error(text(MALFORMED[1]))
    assert "options.floor must be 0.0..=1.0, got 1.5" in error(text(MALFORMED[12]))
    assert "expected_citations[0].section must be a string, got 5" in error(text(MALFORMED[9]))


# --------------------------------------------------------------------------- interpret


def test_interpret_types_every_evaluate_field_and_never_warns() -> None:
    loaded = parse(text(EXTENSIONS), PATH, Mode.INTERPRET)
    assert loaded.warnings == ()
    only = loaded.cases[0]
    assert only.expected_labels == ("好き",)
    assert only.expected_associations == (ExpectedAssociation("青嶺", "好き", "日本酒"),)
    assert only.expected_citations == (ExpectedCitation("corpus/brewery.md", 3),)
    assert only.options == Options(limit=5, floor=0.4, tags=("brand",), since=100, until=200)


def test_interpret_keeps_a_citation_section_three_valued() -> None:
    citations = [
        {"source": "s", "paragraph": 0},
        {"source": "s", "paragraph": 1, "section": None},
        {"source": "s", "paragraph": 2, "section": "沿革", "quote": "1897年に創業"},
    ]
    loaded = parse(text(case(expected_citations=citations)), PATH, Mode.INTERPRET)
    absent, null, named = loaded.cases[0].expected_citations
    assert absent.section is SECTION_UNCHECKED
    assert null.section is None
    assert named.section == "沿革" and named.quote == "1897年に創業"
    assert absent.quote is None


def test_interpret_accepts_the_bounds_and_nulls_of_options() -> None:
    top = 2**64 - 1
    options = {"floor": 1, "since": None, "until": top, "tags": None}
    source = text(case(options=options), case(case_id="c2", options={"floor": 0.0}))
    loaded = parse(source, PATH, Mode.INTERPRET)
    assert loaded.cases[0].options == Options(floor=1.0, until=top)
    assert loaded.cases[1].options.floor == 0.0


def test_interpret_treats_null_evaluate_lists_as_absent() -> None:
    nulls = case(expected_labels=None, expected_associations=None, expected_citations=None)
    only = parse(text(nulls), PATH, Mode.INTERPRET).cases[0]
    assert only.expected_labels == () and only.expected_citations == ()


# --------------------------------------------------------------------------- case properties


def test_has_expectations_and_structural_expected() -> None:
    bare = Case("c1", "q")
    assert not bare.has_expectations and not bare.structural_expected
    assert Case("c1", "q", expected_sources=(ExpectedSource("s"),)).has_expectations
    concept = Case("c1", "q", expected_concepts=("x",))
    assert concept.has_expectations and concept.structural_expected
    labelled = Case("c1", "q", expected_labels=("x",))
    assert labelled.structural_expected and not labelled.has_expectations
    associated = Case("c1", "q", expected_associations=(ExpectedAssociation("a", "b", "c"),))
    assert associated.structural_expected
    cited = Case("c1", "q", expected_citations=(ExpectedCitation("s", 0),))
    assert not cited.structural_expected and not cited.has_expectations


# --------------------------------------------------------------------------- load


def test_load_reads_a_local_file(tmp_path: Path) -> None:
    path = tmp_path / "eval.jsonl"
    path.write_text(text(EXTENSIONS), encoding="utf-8")
    loaded = load(str(path), Mode.CARRY)
    assert loaded.cases[0].case_id == "c1" and loaded.warnings[0].startswith(f"{path}: ")


def test_load_reads_an_fsspec_url() -> None:
    import fsspec

    with fsspec.open("memory://evalset-test/eval.jsonl", "w", encoding="utf-8") as handle:
        handle.write(text(CASE))
    assert len(load("memory://evalset-test/eval.jsonl", Mode.INTERPRET).cases) == 1


def test_load_refuses_a_missing_or_non_utf8_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(EvalSetError, match=r"nope\.jsonl: cannot read"):
        load(str(missing), Mode.INTERPRET)
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(b'{"taguru_eval":1,"name":"caf\xe9"}\n')
    with pytest.raises(EvalSetError, match="not UTF-8"):
        load(str(latin), Mode.INTERPRET)
