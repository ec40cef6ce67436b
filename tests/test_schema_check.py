"""schema_output_issues: every finding's exact text, per answer and per segment."""

from __future__ import annotations

import json
from typing import Any

from taguru_ray.contract.context_schema import ContextSchema, load_schema
from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.pipeline.schema_check import (
    asserted_types,
    schema_issues,
    schema_issues_by_output,
)

RESERVED = (
    "aliases[0].canonical: 'schema:type' is reserved for type assertions (ADR 0009 §6.3) "
    "— rename the alias"
)


def schema(mode: str = "strict", closed_labels: bool = False, **relations: Any) -> ContextSchema:
    document = {
        "schema": 1,
        "mode": mode,
        "closed_labels": closed_labels,
        "types": {
            "Brewery": {"is_a": ["Organization"]},
            "Organization": {},
            "Person": {},
            "Place": {},
        },
        "relations": relations or {"杜氏": {"domain": ["Brewery"], "range": ["Person"]}},
    }
    return load_schema(json.dumps(document).encode(), path="s.json")


def fact(subject: str, label: str, object_: str) -> dict[str, Any]:
    return {"subject": subject, "label": label, "object": object_, "weight": 1.0, "paragraph": None}


def typed(concept: str, *types: str) -> list[dict[str, Any]]:
    return [fact(concept, "schema:type", name) for name in types]


def output(*associations: dict[str, Any], aliases: Any = ()) -> PieceOutput:
    return PieceOutput(list(associations), list(aliases), [])


def test_a_domain_violation_names_the_subject() -> None:
    answer = output(*typed("青嶺酒造", "Person"), fact("青嶺酒造", "杜氏", "高瀬"))
    assert schema_issues(answer, schema()) == [
        "associations[1].subject: '青嶺酒造' must be typed as one of [Brewery] (or a subtype, "
        "via a schema:type assertion) for relation '杜氏', but is typed as [Person]"
    ]


def test_a_range_violation_names_the_object() -> None:
    answer = output(fact("青嶺酒造", "杜氏", "地蔵"), *typed("地蔵", "Place"))
    assert schema_issues(answer, schema()) == [
        "associations[0].object: '地蔵' must be typed as one of [Person] (or a subtype, "
        "via a schema:type assertion) for relation '杜氏', but is typed as [Place]"
    ]


def test_a_subtype_satisfies_its_parent() -> None:
    rules = schema(所属={"domain": ["Organization"]})
    answer = output(*typed("青嶺酒造", "Brewery"), fact("青嶺酒造", "所属", "組合"))
    assert schema_issues(answer, rules) == []


def test_any_one_asserted_type_in_the_declared_set_is_enough() -> None:
    answer = output(*typed("青嶺酒造", "Place", "Brewery"), fact("青嶺酒造", "杜氏", "高瀬"))
    assert schema_issues(answer, schema()) == []


def test_an_untyped_concept_and_an_unconstrained_side_never_violate() -> None:
    rules = schema(所在地={"range": ["Place"]})
    answer = output(*typed("青嶺酒造", "Person"), fact("青嶺酒造", "所在地", "広島"))
    assert schema_issues(answer, rules) == []


def test_an_undeclared_asserted_type_is_its_own_closure() -> None:
    answer = output(*typed("青嶺酒造", "Distillery"), fact("青嶺酒造", "杜氏", "高瀬"))
    assert schema_issues(answer, schema())[0].endswith("but is typed as [Distillery]")


def test_a_relation_the_schema_does_not_declare_is_fine_while_labels_are_open() -> None:
    assert schema_issues(output(fact("a", "知る", "b")), schema()) == []


def test_closed_labels_refuses_an_undeclared_label_but_never_schema_type() -> None:
    answer = output(*typed("a", "Person"), fact("a", "知る", "b"))
    assert schema_issues(answer, schema(closed_labels=True)) == [
        "associations[1].label: '知る' names no relation declared in this context's schema "
        "(closed_labels)"
    ]


def test_the_reserved_canonical_is_refused_in_every_mode_only_for_label_aliases() -> None:
    aliases = [
        {"alias": "種別", "canonical": "schema:type", "kind": "label"},
        {"alias": "型", "canonical": "schema:type", "kind": "concept"},
    ]
    answer = output(fact("a", "知る", "b"), aliases=aliases)
    for mode in ("off", "warn", "strict"):
        assert schema_issues(answer, schema(mode)) == [RESERVED]


def test_mode_off_judges_no_association() -> None:
    answer = output(*typed("青嶺酒造", "Person"), fact("青嶺酒造", "杜氏", "高瀬"))
    assert schema_issues(answer, schema("off", closed_labels=True)) == []


def test_type_lists_show_eight_names_then_a_count() -> None:
    declared = [f"D{i}" for i in range(10)]
    rules = schema(r={"domain": declared})
    answer = output(*typed("x", *(f"A{i}" for i in range(9))), fact("x", "r", "y"))
    (issue,) = schema_issues(answer, rules)
    assert "one of [D0, D1, D2, D3, D4, D5, D6, D7, … (+2 more)]" in issue
    assert issue.endswith("typed as [A0, A1, A2, A3, A4, A5, A6, A7, … (+1 more)]")


def test_a_type_asserted_in_a_later_output_licenses_an_earlier_fact() -> None:
    outputs = [
        output(fact("青嶺酒造", "杜氏", "高瀬")),
        output(*typed("青嶺酒造", "Brewery"), *typed("高瀬", "Person")),
    ]
    assert schema_issues_by_output(outputs, schema()) == []


def test_findings_are_grouped_by_output_with_each_outputs_own_indices() -> None:
    outputs = [
        output(fact("青嶺酒造", "杜氏", "高瀬")),
        output(fact("x", "y", "z")),
        output(
            *typed("青嶺酒造", "Person"),
            aliases=[{"alias": "t", "canonical": "schema:type", "kind": "label"}],
        ),
    ]
    found = schema_issues_by_output(outputs, schema())
    assert [index for index, _ in found] == [0, 2]
    assert found[0][1][0].startswith("associations[0].subject: '青嶺酒造' must be typed")
    assert found[1][1] == [RESERVED]
    assert schema_issues(outputs, schema()) == found[0][1] + found[1][1]


def test_a_raw_answer_is_judged_with_trimmed_names_and_its_own_indices() -> None:
    answer = {
        "associations": [
            "not an object",
            {"subject": " 青嶺酒造 ", "label": " schema:type", "object": "Person "},
            {"subject": "青嶺酒造", "label": "杜氏 ", "object": 7},
        ],
        "aliases": [{"alias": "種別", "canonical": " schema:type ", "kind": "label"}],
    }
    assert schema_issues(answer, schema()) == [
        RESERVED,
        "associations[2].subject: '青嶺酒造' must be typed as one of [Brewery] (or a subtype, "
        "via a schema:type assertion) for relation '杜氏', but is typed as [Person]",
    ]


def test_a_malformed_answer_is_left_to_the_contract_checks() -> None:
    assert schema_issues({"associations": "none", "aliases": None}, schema()) == []


def test_asserted_types_keep_what_was_asserted_and_its_closure() -> None:
    types = asserted_types([output(*typed("青嶺酒造", "Brewery", "Place"))], schema())
    assert types["青嶺酒造"].asserted == ("Brewery", "Place")
    assert types["青嶺酒造"].expanded == {"Brewery", "Organization", "Place"}
