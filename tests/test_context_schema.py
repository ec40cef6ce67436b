"""The --schema document: what loads, every refusal, the digest, the prompt block."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from taguru_ray.contract.context_schema import (
    SCHEMA_BLOCK_BYTES,
    ContextSchema,
    SchemaError,
    canonical_bytes,
    load_schema,
    render_schema_block,
    schema_digest,
    schema_offer,
    steering_schema,
)


def document(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema": 1,
        "mode": "strict",
        "closed_labels": False,
        "types": {
            "Brewery": {"is_a": ["Organization"]},
            "Organization": {},
            "Person": {"is_a": []},
        },
        "relations": {"杜氏": {"domain": ["Brewery"], "range": ["Person"]}},
    }
    base.update(overrides)
    return base


def load(value: Any) -> ContextSchema:
    return load_schema(json.dumps(value, ensure_ascii=False).encode(), path="sake.schema.json")


def refused(value: Any) -> str:
    with pytest.raises(SchemaError) as caught:
        if isinstance(value, bytes):
            load_schema(value, path="sake.schema.json")
        else:
            load(value)
    assert str(caught.value).startswith("sake.schema.json: ")
    return caught.value.detail


def chain(length: int) -> dict[str, Any]:
    """T1 is_a T2 is_a … T<length>."""
    types: dict[str, Any] = {f"T{i}": {"is_a": [f"T{i + 1}"]} for i in range(1, length)}
    types[f"T{length}"] = {}
    return types


# ------------------------------------------------------------------ loading


@pytest.mark.parametrize("mode", ["off", "warn", "strict"])
def test_a_valid_document_loads_in_every_mode(mode: str) -> None:
    schema = load(document(mode=mode, closed_labels=True))
    assert schema.mode == mode
    assert schema.closed_labels is True
    assert list(schema.types) == ["Brewery", "Organization", "Person"]
    assert schema.types["Brewery"] == ("Organization",)
    assert schema.relations["杜氏"].domain == ("Brewery",)
    assert schema.relations["杜氏"].range == ("Person",)
    assert schema.enforcing is (mode != "off")


def test_the_is_a_closure_holds_every_ancestor_and_subtypes_are_listed() -> None:
    types = {"Brewery": {"is_a": ["Manufacturer"]}, "Manufacturer": {"is_a": ["Organization"]}}
    schema = load(document(types={**types, "Organization": {}}))
    assert schema.closure_of("Brewery") == {"Brewery", "Manufacturer", "Organization"}
    assert schema.closure_of("Organization") == {"Organization"}
    assert schema.subtypes_of("Organization") == {"Brewery", "Manufacturer"}


def test_an_undeclared_type_is_legal_and_closes_over_itself() -> None:
    schema = load(
        document(
            types={"Brewery": {"is_a": ["Company"]}},
            relations={"所属": {"domain": ["Distillery"], "range": []}},
        )
    )
    assert schema.closure_of("Brewery") == {"Brewery", "Company"}
    assert schema.closure_of("Distillery") == {"Distillery"}


def test_relation_sides_default_to_empty_and_lists_are_sets() -> None:
    schema = load(document(relations={"知る": {}, "所属": {"range": ["B", "A", "B"]}}))
    assert schema.relations["知る"].domain == () and not schema.relations["知る"].constrained
    assert schema.relations["所属"].range == ("A", "B")


def test_a_byte_order_mark_is_tolerated() -> None:
    data = b"\xef\xbb\xbf" + json.dumps(document()).encode()
    assert load_schema(data, path="x").mode == "strict"


def test_a_chain_of_eight_types_installs() -> None:
    assert len(load(document(types=chain(8))).closure_of("T1")) == 8


# ------------------------------------------------------------------ refusals


def test_bytes_that_are_not_json_are_refused_with_the_position() -> None:
    assert refused(b'{"schema": 1,,}').startswith("does not parse as JSON: ")
    assert "line 1 column" in refused(b'{"schema": 1,,}')
    assert refused(b"\xff") == "not UTF-8 (byte 0xff at offset 0)"
    assert "NaN is not a JSON number" in refused(b'{"schema": NaN}')


def test_a_document_that_is_not_an_object_is_refused() -> None:
    assert refused([]) == "a schema document is a JSON object, got an array"


def test_unknown_and_missing_top_level_fields_are_refused() -> None:
    assert refused(document(extra=True)).startswith('the document: unknown field "extra"')
    partial = document()
    del partial["closed_labels"]
    assert refused(partial).startswith('missing field "closed_labels" — every top-level field')


@pytest.mark.parametrize(
    ("overrides", "detail"),
    [
        ({"schema": 2}, "schema version 2 is not 1, the only version this build reads"),
        ({"schema": 1.0}, "schema: expected a version number, got number 1.0"),
        ({"mode": "enforce"}, 'mode: expected "off", "warn" or "strict", got string "enforce"'),
        ({"closed_labels": "yes"}, 'closed_labels: expected true or false, got string "yes"'),
        ({"types": []}, "types: expected an object keyed by name, got an array"),
        ({"relations": None}, "relations: expected an object keyed by name, got null"),
    ],
)
def test_a_wrong_top_level_value_is_refused(overrides: dict[str, Any], detail: str) -> None:
    assert refused(document(**overrides)) == detail


@pytest.mark.parametrize(
    ("overrides", "detail"),
    [
        ({"types": {"A": []}}, 'types["A"]: expected an object such as {"is_a": []}, got an array'),
        ({"types": {"A": {"parent": []}}}, 'types["A"]: unknown field "parent" (it takes is_a)'),
        (
            {"types": {"A": {"is_a": "B"}}},
            'types["A"].is_a: expected an array of type names, got string "B"',
        ),
        (
            {"relations": {"r": {"domain": [1]}}},
            'relations["r"].domain: expected an array of type names, holding number 1',
        ),
        (
            {"relations": {"r": {"range": [], "inverse": "s"}}},
            'relations["r"]: unknown field "inverse" (it takes domain, range)',
        ),
    ],
)
def test_a_wrong_type_or_relation_body_is_refused(overrides: dict[str, Any], detail: str) -> None:
    assert refused(document(**overrides)) == detail


def test_a_name_repeated_in_one_object_is_refused() -> None:
    data = b'{"schema":1,"mode":"off","closed_labels":false,"types":{"A":{},"A":{}},"relations":{}}'
    assert refused(data) == 'the key "A" appears twice in one object'


def test_a_lone_surrogate_is_refused() -> None:
    data = b'{"schema":1,"mode":"off","closed_labels":false,"types":{"\\ud800":{}},"relations":{}}'
    assert refused(data) == "types: a lone surrogate escape is not UTF-8"


def test_the_caps_on_types_relations_and_sides() -> None:
    types = {f"T{i}": {} for i in range(501)}
    assert refused(document(types=types)) == "501 types, over the 500-type cap"
    relations = {f"r{i}": {} for i in range(501)}
    assert refused(document(relations=relations)) == "501 relations, over the 500-relation cap"
    wide = {"r": {"domain": [f"T{i}" for i in range(65)]}}
    assert (
        refused(document(relations=wide))
        == "relation 'r' names 65 domain types, over the 64-type cap"
    )


def test_a_relation_named_the_reserved_label_is_refused() -> None:
    detail = refused(document(relations={"schema:type": {}}))
    assert detail == (
        "relation 'schema:type' is reserved for type assertions (ADR 0009 §6.3) "
        "— rename the relation"
    )


def test_a_name_over_the_byte_cap_is_refused_wherever_it_appears() -> None:
    long = "名" * 342  # 1026 bytes
    detail = refused(document(relations={"r": {"range": [long]}}))
    assert detail.endswith(" is 1026 bytes, over the 1024-byte name cap")


def test_an_is_a_cycle_is_refused() -> None:
    detail = refused(document(types={"A": {"is_a": ["B"]}, "B": {"is_a": ["A"]}}))
    assert detail == "type 'A' reaches itself through its is_a chain (a cycle)"
    assert "type 'A' reaches itself" in refused(document(types={"A": {"is_a": ["A"]}}))


def test_an_is_a_chain_over_eight_types_is_refused_naming_its_top() -> None:
    assert (
        refused(document(types=chain(9)))
        == "the is_a chain under type 'T1' stacks more than 8 types"
    )


def test_a_schema_error_is_a_value_error_naming_the_path() -> None:
    with pytest.raises(ValueError, match=r"^conf/s\.json: schema version 3 "):
        load_schema(json.dumps(document(schema=3)).encode(), path="conf/s.json")


# -------------------------------------------------------------------- digest

CANONICAL = """{
  "schema": 1,
  "mode": "warn",
  "closed_labels": false,
  "types": {
    "Brewery": {
      "is_a": [
        "Organization"
      ]
    },
    "Organization": {
      "is_a": []
    }
  },
  "relations": {
    "杜氏": {
      "domain": [
        "Brewery"
      ],
      "range": []
    }
  }
}"""


def test_canonical_bytes_are_the_references_pretty_json() -> None:
    schema = load(
        {
            "relations": {"杜氏": {"domain": ["Brewery"]}},
            "types": {"Organization": {}, "Brewery": {"is_a": ["Organization"]}},
            "closed_labels": False,
            "mode": "warn",
            "schema": 1,
        }
    )
    assert canonical_bytes(schema) == CANONICAL.encode()
    assert schema_digest(schema) == hashlib.sha256(CANONICAL.encode()).hexdigest()


def test_the_digest_ignores_layout_key_order_and_repeats() -> None:
    spaced = json.dumps(document(), indent=4).encode()
    compact = (
        '{"relations":{"杜氏":{"range":["Person","Person"],"domain":["Brewery"]}},'
        '"types":{"Person":{},"Organization":{"is_a":[]},"Brewery":{"is_a":["Organization"]}},'
        '"mode":"strict","closed_labels":false,"schema":1}'
    ).encode()
    assert schema_digest(load_schema(spaced, path="a")) == schema_digest(
        load_schema(compact, path="b")
    )


def test_the_digest_changes_with_the_document() -> None:
    assert schema_digest(load(document())) != schema_digest(load(document(mode="warn")))


# --------------------------------------------------------------- prompt block


def test_the_block_lists_types_relations_and_the_type_assertion_instruction() -> None:
    schema = load(
        document(
            relations={
                "杜氏": {"domain": ["Brewery"], "range": ["Person"]},
                "所属": {"range": ["Organization"]},
                "知る": {},
            }
        )
    )
    block = render_schema_block(schema, [])
    assert "Entity types (use these exact spellings): Brewery, Organization, Person" in block
    assert '"label": "schema:type"' in block
    assert "- 所属: (any type) → Organization\n- 杜氏: Brewery → Person" in block
    assert "知る" not in block  # unconstrained, and the labels are open
    assert block.endswith("A relation label the schema does not list is still allowed.")
    assert "enum" not in block


def test_live_vocabulary_relations_come_first() -> None:
    relations = {
        "a": {"domain": ["Person"]},
        "b": {"domain": ["Person"]},
        "c": {"range": ["Person"]},
    }
    schema = load(document(relations=relations))
    offer = schema_offer(schema, ["c", "unrelated"])
    assert offer is not None and offer.relations == ("c", "a", "b")


def test_closed_labels_lists_every_declared_relation_and_drops_the_open_clause() -> None:
    schema = load(
        document(closed_labels=True, relations={"杜氏": {"domain": ["Brewery"]}, "知る": {}})
    )
    block = render_schema_block(schema)
    assert "accepts only these relation labels" in block
    assert "- 杜氏: Brewery → (any type)\n- 知る" in block
    assert "still allowed" not in block
    assert steering_schema(schema) == {
        "types": ["Brewery", "Organization", "Person"],
        "constrained_relations": ["杜氏", "知る"],
    }


def test_mode_off_prompts_nothing() -> None:
    schema = load(document(mode="off"))
    assert render_schema_block(schema, ["杜氏"]) == ""
    assert steering_schema(schema) is None
    assert steering_schema(None) is None


def test_a_schema_with_nothing_to_say_prompts_nothing() -> None:
    schema = load(document(types={}, relations={"知る": {}}))
    assert render_schema_block(schema) == ""
    assert steering_schema(schema) is None


def test_the_block_keeps_to_its_byte_cap_as_a_prefix_and_the_trace_matches() -> None:
    types = {f"Type{i:03}": {} for i in range(150)}
    relations = {
        f"rel{i:03}": {"domain": [f"Type{i:03}"], "range": ["Type000"]} for i in range(150)
    }
    schema = load(document(types=types, relations=relations))
    full = schema_offer(schema, [], 10**6)
    assert full is not None and len(full.types) == 150 and len(full.relations) == 150
    for cap in (700, 1500, 3000):
        offer = schema_offer(schema, [], cap)
        assert offer is not None
        assert len(offer.text.encode()) <= cap
        assert offer.types == full.types[: len(offer.types)]
        assert offer.relations == full.relations[: len(offer.relations)]
        assert steering_schema(schema, [], cap) == {
            "types": list(offer.types),
            "constrained_relations": list(offer.relations),
        }
    assert schema_offer(schema, [], 100) is None  # not even the instructions fit


def test_types_fill_the_budget_before_relations() -> None:
    schema = load(document())
    types_only = schema_offer(
        schema, [], len(render_schema_block(schema, [], SCHEMA_BLOCK_BYTES)) - 1
    )
    assert types_only is not None
    assert types_only.types == ("Brewery", "Organization", "Person")
    assert types_only.relations == ()


def test_each_prompted_list_is_capped_at_200() -> None:
    types = {f"T{i:03}": {} for i in range(250)}
    relations = {f"r{i:03}": {"domain": ["T000"]} for i in range(250)}
    offer = schema_offer(load(document(types=types, relations=relations)), [], 10**6)
    assert offer is not None
    assert offer.types == tuple(f"T{i:03}" for i in range(200))
    assert offer.relations == tuple(f"r{i:03}" for i in range(200))
