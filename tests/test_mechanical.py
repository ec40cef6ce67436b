"""The mechanical pass and the Stage 2 prunes, against the reference's fixtures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taguru_ray.pipeline.mechanical import Offered, Removal, judge, lossy_pass
from taguru_ray.pipeline.plan import Block, Piece
from taguru_ray.pipeline.reconcile import PieceState, prune_dangling
from taguru_ray.pipeline.validate import Rules
from taguru_ray.text.occurrence import Haystack
from tests.anchor import fixture_names, load_fixture, requires_anchor

pytestmark = requires_anchor

PIECE = Piece(0, 1, (Block(0, "[0] x"),))


def names_of(answer: dict[str, Any]) -> str:
    """A haystack holding every name an answer uses, so occurrence never decides."""
    parts = []
    for item in answer.get("associations") or []:
        if isinstance(item, dict):
            parts += [str(item.get(key)) for key in ("subject", "label", "object")]
    return " ".join(parts)


def strict(answer: dict[str, Any], rules: Rules, haystack: str) -> tuple[list[str], list[str]]:
    judgement = judge(answer, rules, Haystack(haystack), Offered())
    piece = PieceState(
        PIECE, judgement.output(rules), None, json.dumps(answer), "", list(judgement.removals)
    )
    if not judgement.issues:
        prune_dangling([piece])
    return [r.text for r in piece.removed], judgement.issues


@pytest.mark.parametrize("name", sorted(fixture_names("removed")))
def test_removed_fixture_removes_exactly_its_paths(name: str) -> None:
    fixture = load_fixture("removed", name)
    rules = Rules(**fixture["rules"])
    text = fixture.get("segment", fixture.get("document"))
    judgement = judge(fixture["answer"], rules, Haystack(text), Offered())
    assert judgement.issues == []
    piece = PieceState(PIECE, judgement.output(rules), None, "", "", list(judgement.removals))
    prune_dangling([piece])
    # Older fixtures say "document"; since taguru ADR 0040 the wording is "segment".
    expected = [line.replace("document", "segment") for line in fixture["removed"]]
    assert [r.text for r in piece.removed] == expected
    assert len(piece.output.associations) == fixture["surviving_associations"]
    assert len(piece.output.aliases) == fixture["surviving_aliases"]


# Strict runs remove what the repaired corpus still phrases as issues (its note:
# "several repaired cases are removals in strict runs"); the seed decides.
STRICT_OUTCOME = {
    "alias_conflicting_canonical": "stage 2",
    "alias_dangling_canonical": "stage 2",
    "alias_shadowing_spelling": "stage 2",
    "alias_invalid_kind": "issue",
    "alias_self_alias": "removed",
    "association_empty_subject": "removed",
    "association_item_not_object": "removed",
    "association_missing_object": "removed",
    "association_oversized_name": "issue",
    "association_wrong_type_paragraph": "issue",
    "association_wrong_type_weight": "issue",
    "association_zero_weight": "issue",
    "question_empty_text": "issue",
    "question_paragraph_out_of_range": "issue",
    "questions_not_an_array": "issue",
}


# The seed removes single-character labels (taguru ADR 0013): this corrected answer
# validates, and its one-character label is then removed, not asked about.
CORRECTED_REMOVALS = {
    "association_zero_weight": [
        'associations[0]: label "無" is a single character — too generic to be a relation'
    ],
}


def test_every_repaired_fixture_has_a_strict_outcome() -> None:
    assert fixture_names("repaired") == set(STRICT_OUTCOME)


@pytest.mark.parametrize("name", sorted(STRICT_OUTCOME))
def test_repaired_fixture_in_a_strict_run(name: str) -> None:
    fixture = load_fixture("repaired", name)
    rules = Rules(**fixture["rules"])
    haystack = names_of(fixture["corrected"])
    removed, issues = strict(fixture["answer"], rules, haystack)
    paths = [issue.split(": ")[0] for issue in fixture["issues"]]
    outcome = STRICT_OUTCOME[name]
    if outcome == "issue":
        assert issues == fixture["issues"]
        assert removed == []
    elif outcome == "removed":
        assert issues == []
        item_paths = {path.split(".")[0] for path in paths}
        assert {r.split(": ")[0] for r in removed} == item_paths
    else:  # Stage 2 judges it, after every chunk answered
        assert issues == []
    corrected_removed, corrected_issues = strict(fixture["corrected"], rules, haystack)
    assert corrected_issues == []
    assert corrected_removed == CORRECTED_REMOVALS.get(name, [])


def test_an_item_with_a_corrective_issue_is_kept_and_its_removals_are_not_judged() -> None:
    answer = {
        "associations": [{"subject": "Ray", "label": "u", "object": "GCS", "weight": "x"}],
        "aliases": [],
    }
    judgement = judge(answer, Rules(1, 0), Haystack("Ray GCS"), Offered())
    assert judgement.removals == []
    assert judgement.issues == [
        'associations[0].weight: expected finite non-zero number, got string "x"'
    ]


def test_single_character_label_is_removed() -> None:
    answer = {
        "associations": [{"subject": "酵母", "label": "の", "object": "アルコール"}],
        "aliases": [],
    }
    judgement = judge(answer, Rules(1, 0), Haystack("酵母のアルコール"), Offered())
    assert [r.text for r in judgement.removals] == [
        'associations[0]: label "の" is a single character — too generic to be a relation'
    ]


def test_an_offered_spelling_never_fails_the_occurrence_check() -> None:
    answer = {
        "associations": [{"subject": "cargo-nextest", "label": "runs", "object": "tests"}],
        "aliases": [],
    }
    text = Haystack("nextest runs the tests")
    assert judge(answer, Rules(1, 0), text, Offered()).removals
    offered = Offered(frozenset({"cargo-nextest"}))
    assert not judge(answer, Rules(1, 0), text, offered).removals


def test_removal_reads_the_older_string_form() -> None:
    removal = Removal.from_json("aliases[0]: alias equals its canonical")
    assert (removal.path, removal.reason, removal.kind) == (
        "aliases[0]",
        "alias equals its canonical",
        "alias",
    )


def test_lossy_drops_every_item_with_an_issue_and_corrects_nothing() -> None:
    answer = {
        "associations": [
            {"subject": "a", "label": "uses", "object": "b", "weight": "x"},
            "junk",
            {"subject": "c", "label": "uses", "object": "d"},
        ],
        "aliases": [{"alias": "e", "canonical": "c", "kind": "person"}],
    }
    output, dropped = lossy_pass(answer, Rules(1, 0))
    assert [a["subject"] for a in output.associations] == ["c"]
    assert output.aliases == []
    assert [d.text for d in dropped] == [
        'associations[0]: weight: expected finite non-zero number, got string "x"',
        'associations[1]: expected an object, got string "junk"',
        'aliases[0]: kind: expected "concept" or "label", got "person"',
    ]


def test_a_name_holding_a_control_or_bidi_character_is_removed() -> None:
    answer = {
        "associations": [
            {"subject": "Ray", "label": "\x1b[31mowns", "object": "Serve"},
            {"subject": "Ray\u202eevreS", "label": "runs", "object": "Serve"},
            {"subject": "Ray", "label": "runs", "object": "Serve"},
        ],
        "aliases": [{"alias": "R\x00", "canonical": "Ray", "kind": "concept"}],
    }
    judgement = judge(answer, Rules(1, 0), Haystack("Ray runs Serve Ray\u202eevreS"), Offered())
    assert [r.text for r in judgement.removals] == [
        'associations[0]: label "\\u{1b}[31mowns" holds a control character (U+001B) — '
        "never part of a name",
        'associations[1]: subject "Ray\\u{202e}evreS" holds a control character (U+202E) — '
        "never part of a name",
        'aliases[0]: alias "R\\0" holds a control character (U+0000) — never part of a name',
    ]
    output, dropped = lossy_pass(answer, Rules(1, 0))
    assert [a["label"] for a in output.associations] == ["runs"]
    assert len(dropped) == 3 and output.aliases == []
