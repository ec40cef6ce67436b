"""The `validate` step's issue pass and stored form: repaired/ fixtures, each rule at its edge."""

from __future__ import annotations

from typing import Any

import pytest

from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.pipeline.cross_items import cross_item_issues, dangling_aliases
from taguru_ray.pipeline.validate import (
    Rules,
    collect_issues,
    format_corrective_issues,
    item_issues,
    normalise,
)
from tests.anchor import fixture_names, load_fixture, requires_anchor

# repaired/ fixtures whose issue is one answer's own (Stage 1, collect_issues).
PER_ANSWER = [
    "alias_invalid_kind",
    "alias_self_alias",
    "association_empty_subject",
    "association_item_not_object",
    "association_missing_object",
    "association_oversized_name",
    "association_wrong_type_paragraph",
    "association_wrong_type_weight",
    "association_zero_weight",
    "question_empty_text",
    "question_paragraph_out_of_range",
    "questions_not_an_array",
]
# repaired/ fixtures whose issue needs the segment's names (Stage 2, run by `reconcile`).
CROSS_ITEM = ["alias_conflicting_canonical", "alias_shadowing_spelling"]
# Older reference's corrective wording for a dangling canonical; taguru ADR 0013 made it a prune.
DANGLING = "alias_dangling_canonical"

RULES = Rules(paragraph_count=2, questions_cap=1)
ASSOCIATION = {"subject": "青嶺酒造", "label": "杜氏", "object": "高瀬"}
ALIAS = {"alias": "Aomine", "canonical": "青嶺酒造", "kind": "concept"}
QUESTION = {"paragraph": 0, "question": "杜氏は誰?"}


def repaired(name: str) -> tuple[dict[str, Any], Rules]:
    case = load_fixture("repaired", name)
    return case, Rules(**case["rules"])


def issues_of(association: dict[str, Any] | None = None, **value: Any) -> list[str]:
    answer: dict[str, Any] = {"associations": [association] if association else [], "aliases": []}
    return collect_issues({**answer, **value}, RULES)


def assert_corrected_is_clean(case: dict[str, Any], rules: Rules) -> None:
    corrected = case["corrected"]
    assert collect_issues(corrected, rules) == []
    stored = normalise(corrected, rules)
    assert cross_item_issues(stored, dangling_issues=True) == []
    for key in ("associations", "aliases", "questions"):
        assert len(getattr(stored, key)) == len(corrected.get(key) or [])


@requires_anchor
def test_every_repaired_fixture_is_listed_here() -> None:
    assert fixture_names("repaired") == {*PER_ANSWER, *CROSS_ITEM, DANGLING}


@requires_anchor
@pytest.mark.parametrize("name", PER_ANSWER)
def test_repaired_fixture_yields_exactly_its_issues(name: str) -> None:
    case, rules = repaired(name)
    assert collect_issues(case["answer"], rules) == case["issues"]
    assert_corrected_is_clean(case, rules)


@requires_anchor
@pytest.mark.parametrize("name", CROSS_ITEM)
def test_cross_item_fixture_passes_stage_1_and_fails_stage_2(name: str) -> None:
    case, rules = repaired(name)
    assert collect_issues(case["answer"], rules) == []
    assert cross_item_issues(normalise(case["answer"], rules)) == case["issues"]
    assert_corrected_is_clean(case, rules)


@requires_anchor
def test_dangling_canonical_is_pruned_and_optionally_asked_about_first() -> None:
    case, rules = repaired(DANGLING)
    stored = normalise(case["answer"], rules)
    assert collect_issues(case["answer"], rules) == []
    assert cross_item_issues(stored) == []  # taguru ADR 0013: no corrective issue by default
    assert cross_item_issues(stored, dangling_issues=True) == case["issues"]
    assert [d.record for d in dangling_aliases([stored])] == [
        'aliases[0]: canonical "存在しない" names nothing the associations contain'
    ]
    assert_corrected_is_clean(case, rules)


@requires_anchor
def test_removed_dangling_fixture_names_the_prune_exactly() -> None:
    case = load_fixture("removed", "alias_dangling_canonical")
    stored = normalise(case["answer"], Rules(**case["rules"]))
    assert [d.record for d in dangling_aliases([stored])] == case["removed"]


# -- <desc> renderings, through the issue they appear in -------------------------


@pytest.mark.parametrize(
    ("value", "desc"),
    [
        (True, "boolean true"),
        (False, "boolean false"),
        (5, "number 5"),
        (2.5, "number 2.5"),
        ([], "an array"),
        ({}, "an object"),
    ],
)
def test_wrong_typed_name_renders_its_desc(value: object, desc: str) -> None:
    assert issues_of({**ASSOCIATION, "subject": value}) == [
        f"associations[0].subject: expected a string, got {desc}"
    ]


@pytest.mark.parametrize(
    ("value", "desc"),
    [
        ("strong", 'string "strong"'),
        ("x" * 70, 'string "' + "x" * 64 + '"…'),
        ('a"b\\c\n', 'string "a\\"b\\\\c\\n"'),
    ],
)
def test_wrong_typed_string_renders_quoted_and_capped(value: str, desc: str) -> None:
    assert issues_of({**ASSOCIATION, "weight": value}) == [
        f"associations[0].weight: expected finite non-zero number, got {desc}"
    ]


def test_null_desc_appears_where_null_is_not_absence() -> None:
    assert issues_of(aliases=[None]) == ["aliases[0]: expected an object, got null"]


# -- associations ------------------------------------------------------------------


@pytest.mark.parametrize("absent", [{}, {"object": None}])
def test_absent_or_null_required_name_is_missing(absent: dict[str, Any]) -> None:
    item = {key: value for key, value in ASSOCIATION.items() if key != "object"} | absent
    assert issues_of(item) == ["associations[0].object: missing"]


@pytest.mark.parametrize("blank", ["", "  ", "\u3000\n"])
def test_white_space_only_name_is_empty(blank: str) -> None:
    assert issues_of({**ASSOCIATION, "label": blank}) == ["associations[0].label: empty"]


def test_name_cap_is_1024_bytes_after_trimming() -> None:
    assert issues_of({**ASSOCIATION, "subject": " " + "x" * 1024 + " "}) == []
    assert issues_of({**ASSOCIATION, "subject": "あ" * 341}) == []  # 1023 bytes
    assert issues_of({**ASSOCIATION, "subject": "あ" * 342}) == [
        "associations[0].subject: 1026 bytes exceeds the 1024-byte cap"
    ]


@pytest.mark.parametrize("weight", [None, 1, -1.0, 0.5, 1e6, -1e6, 1e-300])
def test_valid_weights_raise_nothing(weight: object) -> None:
    assert issues_of({**ASSOCIATION, "weight": weight}) == []


@pytest.mark.parametrize(
    ("weight", "got"),
    [
        (0, "0"),
        (0.0, "0"),
        (-0.0, "0"),
        (1_000_000.5, "1000000.5 (over the 1000000 cap)"),
        (-2e6, "-2000000 (over the 1000000 cap)"),
        (10**7, "10000000 (over the 1000000 cap)"),
        (float("nan"), "NaN"),
        (float("inf"), "inf"),
        (True, "boolean true"),
        ("1", 'string "1"'),
        ([1], "an array"),
    ],
)
def test_bad_weight_names_what_it_got(weight: object, got: str) -> None:
    assert issues_of({**ASSOCIATION, "weight": weight}) == [
        f"associations[0].weight: expected finite non-zero number, got {got}"
    ]


@pytest.mark.parametrize("paragraph", [None, 0, 1, 99, 2**32 - 1])
def test_association_paragraph_out_of_range_is_no_issue(paragraph: object) -> None:
    assert issues_of({**ASSOCIATION, "paragraph": paragraph}) == []


@pytest.mark.parametrize(
    ("paragraph", "desc"),
    [(1.0, "number 1.0"), (-1, "number -1"), (2**32, "number 4294967296"), (True, "boolean true")],
)
def test_association_paragraph_must_be_a_non_negative_integer(paragraph: object, desc: str) -> None:
    assert issues_of({**ASSOCIATION, "paragraph": paragraph}) == [
        f"associations[0].paragraph: expected an integer paragraph index, got {desc}"
    ]


@pytest.mark.parametrize(
    ("key", "desc"), [("associations", "an object"), ("aliases", 'string "x"')]
)
def test_a_collection_that_is_not_an_array(key: str, desc: str) -> None:
    value = {"associations": [], "aliases": [], key: {} if key == "associations" else "x"}
    assert collect_issues(value, RULES) == [f"{key}: expected an array, got {desc}"]


def test_absent_and_null_collections_read_as_empty() -> None:
    assert collect_issues({}, RULES) == []
    assert collect_issues({"associations": None, "aliases": None, "questions": None}, RULES) == []


# -- aliases -------------------------------------------------------------------------


def alias_issues(**fields: Any) -> list[str]:
    item = {key: value for key, value in {**ALIAS, **fields}.items() if value is not ...}
    return collect_issues({"associations": [], "aliases": [item]}, RULES)


@pytest.mark.parametrize(
    ("kind", "got"), [("person", '"person"'), ("Concept", '"Concept"'), (3, "number 3")]
)
def test_alias_kind_must_be_concept_or_label(kind: object, got: str) -> None:
    assert alias_issues(kind=kind) == [f'aliases[0].kind: expected "concept" or "label", got {got}']


@pytest.mark.parametrize("kind", [..., None])
def test_alias_kind_absent_or_null_is_missing(kind: object) -> None:
    assert alias_issues(kind=kind) == ["aliases[0].kind: missing"]


@pytest.mark.parametrize("canonical", ["", "   "])
def test_canonical_never_reports_empty(canonical: str) -> None:
    assert alias_issues(canonical=canonical) == []


def test_canonical_missing_wrong_typed_or_oversized() -> None:
    assert alias_issues(canonical=...) == ["aliases[0].canonical: missing"]
    assert alias_issues(canonical=5) == ["aliases[0].canonical: expected a string, got number 5"]
    assert alias_issues(canonical="x" * 1025) == [
        "aliases[0].canonical: 1025 bytes exceeds the 1024-byte cap"
    ]


def test_alias_equal_to_its_canonical_after_trimming() -> None:
    assert alias_issues(alias=" 青嶺酒造", canonical="青嶺酒造 ") == [
        "aliases[0].alias: equals its canonical"
    ]


def test_an_empty_alias_is_not_also_equal_to_an_empty_canonical() -> None:
    assert alias_issues(alias="", canonical="") == ["aliases[0].alias: empty"]


# -- questions -----------------------------------------------------------------------


def question_issues(item: object, questions_cap: int = 1) -> list[str]:
    value = {"associations": [], "aliases": [], "questions": [item]}
    return collect_issues(value, Rules(paragraph_count=2, questions_cap=questions_cap))


def test_questions_are_never_judged_when_not_asked() -> None:
    assert question_issues("nonsense", questions_cap=0) == []
    assert question_issues({"paragraph": 9}, questions_cap=0) == []
    value = {"associations": [], "aliases": [], "questions": "none"}
    assert collect_issues(value, Rules(paragraph_count=1, questions_cap=0)) == []


def test_question_paragraph_must_be_below_the_paragraph_count() -> None:
    assert question_issues({**QUESTION, "paragraph": 1}) == []
    assert question_issues({**QUESTION, "paragraph": 2}) == [
        "questions[0].paragraph: must cite a paragraph below 2, got 2"
    ]


def test_question_paragraph_missing_or_wrong_typed() -> None:
    assert question_issues({"question": "q"}) == ["questions[0].paragraph: missing"]
    assert question_issues({**QUESTION, "paragraph": "0"}) == [
        'questions[0].paragraph: expected an integer paragraph index, got string "0"'
    ]


def test_question_text_cap_is_512_bytes() -> None:
    assert question_issues({**QUESTION, "question": "q" * 512}) == []
    assert question_issues({**QUESTION, "question": "q" * 513}) == [
        "questions[0].question: 513 bytes exceeds the 512-byte cap"
    ]


def test_a_question_that_is_not_an_object() -> None:
    assert question_issues(3) == ["questions[0]: expected an object, got number 3"]


# -- walk order ------------------------------------------------------------------------


def test_issues_come_in_walk_order() -> None:
    value = {
        "questions": [{"paragraph": 5, "question": ""}],
        "aliases": [{"alias": "a", "canonical": "a", "kind": "x"}],
        "associations": [{"weight": 0, "paragraph": -1, "object": 1, "label": "", "subject": None}],
    }
    assert collect_issues(value, RULES) == [
        "associations[0].subject: missing",
        "associations[0].label: empty",
        "associations[0].object: expected a string, got number 1",
        "associations[0].weight: expected finite non-zero number, got 0",
        "associations[0].paragraph: expected an integer paragraph index, got number -1",
        'aliases[0].kind: expected "concept" or "label", got "x"',
        "aliases[0].alias: equals its canonical",
        "questions[0].paragraph: must cite a paragraph below 2, got 5",
        "questions[0].question: empty",
    ]


def test_item_issues_judges_one_element_for_the_mechanical_pass() -> None:
    assert item_issues("associations", 3, {**ASSOCIATION, "weight": 0}, RULES) == [
        "associations[3].weight: expected finite non-zero number, got 0"
    ]
    assert item_issues("aliases", 1, "x", RULES) == [
        'aliases[1]: expected an object, got string "x"'
    ]
    assert item_issues("questions", 0, QUESTION, RULES) == []
    with pytest.raises(ValueError, match="nope"):
        item_issues("nope", 0, {}, RULES)


# -- the stored form ---------------------------------------------------------------------


def test_normalise_fixes_keys_trims_names_and_defaults() -> None:
    value = {
        "associations": [
            {"object": " 高瀬 ", "label": "杜氏", "subject": "青嶺酒造", "paragraph": 7, "x": 1},
            {**ASSOCIATION, "weight": -2, "paragraph": 1},
        ],
        "aliases": [{"kind": "label", "canonical": "杜氏", "alias": " 醸造責任者"}],
        "questions": [{"question": " 杜氏は誰? ", "paragraph": 0}],
    }
    stored = normalise(value, RULES)
    assert stored.to_json() == {
        "associations": [
            {
                "subject": "青嶺酒造",
                "label": "杜氏",
                "object": "高瀬",
                "weight": 1.0,
                "paragraph": None,
            },
            {
                "subject": "青嶺酒造",
                "label": "杜氏",
                "object": "高瀬",
                "weight": -2.0,
                "paragraph": 1,
            },
        ],
        "aliases": [{"alias": "醸造責任者", "canonical": "杜氏", "kind": "label"}],
        "questions": [{"paragraph": 0, "question": "杜氏は誰?"}],
    }
    assert list(stored.associations[0]) == ["subject", "label", "object", "weight", "paragraph"]
    assert isinstance(stored.associations[1]["weight"], float)


def test_normalise_keeps_volunteered_questions_for_merge_to_account() -> None:
    value = {"associations": [], "aliases": [], "questions": [QUESTION]}
    assert normalise(value, Rules(paragraph_count=1, questions_cap=0)).questions == [QUESTION]


def test_normalise_reads_a_flawed_answer_leniently() -> None:
    value = {
        "associations": [
            "junk",
            {**ASSOCIATION, "subject": "", "weight": "strong", "paragraph": 1.0},
            {**ASSOCIATION, "weight": 0},
        ],
        "aliases": {"not": "a list"},
        "questions": [{"paragraph": -1, "question": 5}],
    }
    stored = normalise(value, RULES)
    assert stored.associations == [
        {"subject": None, "label": "杜氏", "object": "高瀬", "weight": 1.0, "paragraph": None},
        {
            "subject": "青嶺酒造",
            "label": "杜氏",
            "object": "高瀬",
            "weight": 0.0,
            "paragraph": None,
        },
    ]
    assert stored.aliases == []
    assert stored.questions == [{"paragraph": None, "question": None}]


def test_piece_output_round_trips_through_json() -> None:
    stored = normalise(
        {"associations": [ASSOCIATION], "aliases": [ALIAS], "questions": [QUESTION]}, RULES
    )
    assert PieceOutput.from_json(stored.to_json()) == stored


def test_piece_output_from_json_fills_absent_keys_and_refuses_bad_shapes() -> None:
    read = PieceOutput.from_json({"associations": [{"subject": "a"}]})
    assert read.associations == [
        {"subject": "a", "label": None, "object": None, "weight": None, "paragraph": None}
    ]
    assert read.aliases == [] and read.questions == []
    with pytest.raises(ValueError, match="aliases"):
        PieceOutput.from_json({"aliases": {}})
    with pytest.raises(ValueError, match="questions"):
        PieceOutput.from_json({"questions": ["x"]})


# -- the corrective list ----------------------------------------------------------------


def test_corrective_list_shows_every_issue_up_to_twenty() -> None:
    issues = [f"associations[{i}].subject: empty" for i in range(20)]
    text = format_corrective_issues(issues)
    assert text.splitlines() == [f"- {issue}" for issue in issues]


def test_corrective_list_counts_what_it_does_not_show() -> None:
    issues = [f"associations[{i}].subject: empty" for i in range(25)]
    lines = format_corrective_issues(issues).splitlines()
    assert len(lines) == 21
    assert lines[19] == "- associations[19].subject: empty"
    assert lines[20] == "… and 5 more issue(s)"


def test_corrective_list_of_nothing_is_empty() -> None:
    assert format_corrective_issues([]) == ""
