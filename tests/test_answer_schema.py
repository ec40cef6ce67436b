"""The canonical answer schema: accepted/ and rejected/ fixtures, wire forms, error paths."""

from __future__ import annotations

import pytest
from jsonschema import Draft202012Validator

from taguru_ray.contract.answer_schema import (
    ANSWER_SCHEMA,
    response_format_json_object,
    response_format_json_schema,
    schema_errors,
)
from taguru_ray.pipeline.parse import Answer, parse_answer
from tests.anchor import fixture_names, fixture_text, load_fixture, requires_anchor

ACCEPTED = [
    "association_without_optional_fields",
    "full_shape",
    "minimal",
    "multiple_items",
    "no_questions_key",
]

# Each rejected fixture with the exact lines schema_errors names it by.
REJECTED = {
    "alias_invalid_kind": ['aliases[0].kind: expected "concept" or "label", got "synonym"'],
    "alias_missing_canonical": ["aliases[0].canonical: missing"],
    "association_empty_subject": ["associations[0].subject: empty"],
    "association_extra_property": ["associations[0].note: unexpected property"],
    "association_item_not_object": [
        'associations[0]: expected an object, got string "not an association"'
    ],
    "association_missing_subject": ["associations[0].subject: missing"],
    "association_wrong_type_weight": [
        'associations[0].weight: expected a number, got string "high"'
    ],
    "associations_not_array": ["associations: expected an array, got an object"],
    "missing_aliases_key": ["aliases: missing"],
    "missing_associations_key": ["associations: missing"],
    "question_missing_paragraph": ["questions[0].paragraph: missing"],
    "top_level_extra_property": ["notes: unexpected property"],
}


@requires_anchor
def test_every_fixture_is_listed_here() -> None:
    assert fixture_names("accepted") == set(ACCEPTED)
    assert fixture_names("rejected") == set(REJECTED)


@requires_anchor
@pytest.mark.parametrize("name", ACCEPTED)
def test_accepted_fixture_parses_and_meets_the_schema(name: str) -> None:
    parsed = parse_answer(fixture_text("accepted", name))
    assert isinstance(parsed, Answer)
    assert schema_errors(parsed.value) == []


@requires_anchor
@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_fixture_is_named_by_its_json_path(name: str) -> None:
    assert schema_errors(load_fixture("rejected", name)) == REJECTED[name]


def test_schema_is_the_contract_shape() -> None:
    Draft202012Validator.check_schema(ANSWER_SCHEMA)
    assert ANSWER_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert ANSWER_SCHEMA["title"] == "ModelOutput"
    assert ANSWER_SCHEMA["type"] == "object"
    assert ANSWER_SCHEMA["additionalProperties"] is False
    assert ANSWER_SCHEMA["required"] == ["associations", "aliases"]
    props = ANSWER_SCHEMA["properties"]
    association = props["associations"]["items"]
    assert association["required"] == ["subject", "label", "object"]
    assert association["additionalProperties"] is False
    assert association["properties"]["weight"] == {"type": "number"}
    assert association["properties"]["paragraph"] == {"type": "integer", "minimum": 0}
    alias = props["aliases"]["items"]
    assert alias["required"] == ["alias", "canonical", "kind"]
    assert alias["properties"]["kind"] == {"type": "string", "enum": ["concept", "label"]}
    question = props["questions"]["items"]
    assert question["required"] == ["paragraph", "question"]
    assert question["properties"]["question"] == {"type": "string", "minLength": 1}


def test_relation_labels_are_never_an_enum() -> None:
    label = ANSWER_SCHEMA["properties"]["associations"]["items"]["properties"]["label"]
    assert label == {"type": "string", "minLength": 1}


def test_json_schema_response_format_wraps_the_schema() -> None:
    wire = response_format_json_schema()
    assert wire == {
        "type": "json_schema",
        "json_schema": {"name": "ModelOutput", "strict": True, "schema": ANSWER_SCHEMA},
    }
    wire["json_schema"]["schema"]["title"] = "changed"
    assert ANSWER_SCHEMA["title"] == "ModelOutput"


def test_json_object_response_format() -> None:
    assert response_format_json_object() == {"type": "json_object"}


def test_the_answer_itself_is_addressed_as_dollar() -> None:
    assert schema_errors([1]) == ["$: expected an object, got an array"]


def test_errors_come_in_path_order_with_numeric_indices() -> None:
    good = {"subject": "a", "label": "b", "object": "c"}
    items = [good] * 12
    items[10] = {**good, "weight": True}
    items[2] = {**good, "paragraph": -1}
    assert schema_errors({"associations": items, "aliases": []}) == [
        "associations[2].paragraph: must be at least 0, got -1",
        "associations[10].weight: expected a number, got boolean true",
    ]


def test_several_missing_and_extra_keys_each_get_a_line() -> None:
    assert schema_errors({"aliases": [{"kind": "label", "x": 1, "y my": 2}], "z": 0}) == [
        "associations: missing",
        "aliases[0].alias: missing",
        "aliases[0].canonical: missing",
        "aliases[0].x: unexpected property",
        'aliases[0]["y my"]: unexpected property',
        "z: unexpected property",
    ]


def test_question_paragraph_must_be_an_integer() -> None:
    value = {"associations": [], "aliases": [], "questions": [{"paragraph": "1", "question": "q"}]}
    assert schema_errors(value) == ['questions[0].paragraph: expected an integer, got string "1"']
