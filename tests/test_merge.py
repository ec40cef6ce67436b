from dataclasses import dataclass, field
from typing import Any

from taguru_ray.contract.items import Alias, Association, Question
from taguru_ray.pipeline.merge import MergeInput, MergeRules, merge

RULES = MergeRules(paragraph_count=3, questions_cap=0, passage=True)


@dataclass
class Items:
    associations: list[dict[str, Any]] = field(default_factory=list)
    aliases: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)


def assoc(s: str, label: str, o: str, paragraph: int | None = None, weight: float = 1.0) -> dict:
    return {"subject": s, "label": label, "object": o, "weight": weight, "paragraph": paragraph}


def alias(a: str, c: str, kind: str = "concept") -> dict:
    return {"alias": a, "canonical": c, "kind": kind}


def test_duplicate_triples_fold_into_the_first_in_chunk_order() -> None:
    result = merge(
        [
            MergeInput("p1", Items([assoc("a", "uses", "b", 0)])),
            MergeInput("p2", Items([assoc("a", "uses", "b", 2), assoc("b", "uses", "c", 1)])),
        ],
        RULES,
    )
    assert [a for a, _ in result.associations] == [
        Association("a", "uses", "b", 1.0, 0),
        Association("b", "uses", "c", 1.0, 1),
    ]
    [loss] = result.losses
    assert (loss.reason, loss.piece_id, loss.kept_piece_id) == ("duplicate", "p2", "p1")


def test_an_alias_lands_when_its_canonical_appears_in_a_later_chunk() -> None:
    result = merge(
        [
            MergeInput("p1", Items([], [alias("GCS", "Global Control Store")])),
            MergeInput("p2", Items([assoc("Global Control Store", "part of", "Ray")])),
        ],
        RULES,
    )
    assert [a for a, _ in result.aliases] == [Alias("GCS", "Global Control Store", "concept")]


def test_dangling_shadowing_and_conflicting_aliases_are_dropped_with_a_reason() -> None:
    result = merge(
        [
            MergeInput(
                "p",
                Items(
                    [assoc("a", "uses", "b")],
                    [
                        alias("x", "nothing"),
                        alias("b", "a"),
                        alias("y", "a"),
                        alias("y", "b"),
                        alias("y", "a"),
                        alias("employs", "uses", "label"),
                    ],
                ),
            )
        ],
        RULES,
    )
    assert [a for a, _ in result.aliases] == [
        Alias("y", "a", "concept"),
        Alias("employs", "uses", "label"),
    ]
    rules = [(loss.reason, loss.rule) for loss in result.losses]
    assert ("dropped", 'canonical "nothing" names nothing the associations contain') in rules
    assert ("dropped", 'alias "b" names something the associations already contain') in rules
    assert ("dropped", 'conflicts with an earlier alias mapping "y" to "a"') in rules
    assert ("duplicate", "duplicate alias folded") in rules


def test_volunteered_questions_are_dropped_when_questions_are_off() -> None:
    result = merge(
        [MergeInput("p", Items(questions=[{"paragraph": 0, "question": "why?"}]))], RULES
    )
    assert result.questions == []
    assert result.losses[0].rule == "question volunteered (--questions is off)"


def test_questions_are_capped_per_paragraph_and_folded() -> None:
    rules = MergeRules(paragraph_count=2, questions_cap=1, passage=True)
    result = merge(
        [
            MergeInput(
                "p",
                Items(
                    questions=[
                        {"paragraph": 0, "question": "a?"},
                        {"paragraph": 0, "question": "a?"},
                        {"paragraph": 0, "question": "b?"},
                        {"paragraph": 1, "question": "c?"},
                    ]
                ),
            )
        ],
        rules,
    )
    assert [q for q, _ in result.questions] == [Question(0, "a?"), Question(1, "c?")]
    assert [loss.reason for loss in result.losses] == ["duplicate", "dropped"]


def test_out_of_range_tag_loses_only_the_tag_and_no_passage_drops_tags() -> None:
    result = merge([MergeInput("p", Items([assoc("a", "uses", "b", 7)]))], RULES)
    assert result.associations[0][0].paragraph is None and not result.losses
    no_passage = MergeRules(paragraph_count=3, questions_cap=0, passage=False)
    result = merge([MergeInput("p", Items([assoc("a", "uses", "b", 1)]))], no_passage)
    assert result.associations[0][0].paragraph is None


def test_names_are_trimmed_and_a_zero_weight_is_dropped() -> None:
    result = merge(
        [MergeInput("p", Items([assoc(" a ", "uses", "b"), assoc("c", "uses", "d", weight=0)]))],
        RULES,
    )
    assert [a.subject for a, _ in result.associations] == ["a"]
    assert result.count("dropped") == 1
