"""Stage 2 alias checks across a segment's piece outputs (run by `reconcile`)."""

from __future__ import annotations

from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.pipeline.cross_items import (
    DanglingAlias,
    cross_item_issues,
    cross_output_issues,
    dangling_aliases,
)


def association(subject: str, label: str, obj: str) -> dict[str, object]:
    return {"subject": subject, "label": label, "object": obj, "weight": 1.0, "paragraph": None}


def alias(spelling: str | None, canonical: str | None, kind: str | None) -> dict[str, object]:
    return {"alias": spelling, "canonical": canonical, "kind": kind}


def output(
    associations: list[dict[str, object]] | None = None,
    aliases: list[dict[str, object]] | None = None,
) -> PieceOutput:
    return PieceOutput(associations or [], aliases or [], [])


FACTS = [association("青嶺酒造", "杜氏", "高瀬"), association("蔵元本店", "支店", "青嶺酒造")]


def test_a_canonical_resolved_in_a_later_output_passes() -> None:
    outputs = [output(aliases=[alias("Aomine", "青嶺酒造", "concept")]), output(FACTS)]
    assert cross_output_issues(outputs) == []
    assert dangling_aliases(outputs) == []


def test_a_conflict_is_blamed_on_the_later_output() -> None:
    outputs = [
        output(FACTS, [alias("Aomine", "青嶺酒造", "concept")]),
        output(aliases=[alias("Aomine", "蔵元本店", "concept")]),
    ]
    assert cross_output_issues(outputs) == [
        (1, ['aliases[0]: conflicts with an earlier alias mapping "Aomine" to "青嶺酒造"'])
    ]


def test_an_identical_repeated_mapping_is_no_conflict() -> None:
    outputs = [output(FACTS, [alias("Aomine", "青嶺酒造", "concept")])] * 2
    assert cross_output_issues(outputs) == []


def test_namespaces_are_separate() -> None:
    # "杜氏" is a label, not a concept: a concept alias spelled 杜氏 shadows nothing,
    # and a label alias whose canonical is a concept name dangles.
    stored = output(FACTS, [alias("杜氏", "高瀬", "concept"), alias("醸造長", "高瀬", "label")])
    assert cross_item_issues(stored) == []
    assert dangling_aliases([stored]) == [DanglingAlias(0, 1, "高瀬")]


def test_a_label_alias_shadowing_a_label() -> None:
    stored = output(FACTS, [alias("支店", "杜氏", "label")])
    assert cross_item_issues(stored) == [
        "aliases[0].alias: names something the associations already contain"
    ]


def test_shadowing_is_reported_before_dangling_and_registers_nothing() -> None:
    stored = output(
        FACTS,
        [alias("高瀬", "存在しない", "concept"), alias("Aomine", "青嶺酒造", "concept")],
    )
    assert cross_item_issues(stored, dangling_issues=True) == [
        "aliases[0].alias: names something the associations already contain"
    ]


def test_items_stage_1_judges_are_skipped() -> None:
    stored = output(
        FACTS,
        [
            alias(None, "青嶺酒造", "concept"),
            alias("x", None, "concept"),
            alias("高瀬", "高瀬", "concept"),
        ],
    )
    assert cross_item_issues(stored, dangling_issues=True) == []
    assert dangling_aliases([stored]) == []


def test_an_empty_canonical_dangles() -> None:
    stored = output(FACTS, [alias("Aomine", "", "concept")])
    assert [d.record for d in dangling_aliases([stored])] == [
        'aliases[0]: canonical "" names nothing the associations contain'
    ]
    assert cross_item_issues(stored, dangling_issues=True) == [
        "aliases[0].canonical: names nothing the associations contain"
    ]


def test_dangling_records_carry_output_and_alias_index() -> None:
    outputs = [
        output(FACTS),
        output(aliases=[alias("a", "b", "concept"), alias("c", "d", "label")]),
    ]
    found = dangling_aliases(outputs)
    assert [(d.output_index, d.alias_index, d.path) for d in found] == [
        (1, 0, "aliases[0]"),
        (1, 1, "aliases[1]"),
    ]
    assert found[1].reason == 'canonical "d" names nothing the associations contain'
