"""The canonical JSON Schema of a model answer, and the wire forms that carry it.

CONTRACT.md section 5, "Canonical JSON Schema": draft 2020-12, title
``ModelOutput``. It is deliberately stricter than the lenient parse
(``pipeline/parse.py`` + ``pipeline/validate.py``): no extra properties, and
both ``associations`` and ``aliases`` required. What it leaves out on purpose —
byte caps (``maxLength`` counts UTF-16 units, not UTF-8 bytes), weight rules,
the paragraph upper bound, cross-item rules, relation enums — is the issue
pass's to judge, the same way however the answer was produced. Relation labels
are never an enum, so a constrained model can still propose a new relation.

``title`` is content, not decoration: structured-output clients name the
schema after it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from taguru_ray.contract.rust_text import debug_str, describe, json_number, quote_for_issue

SCHEMA_NAME = "ModelOutput"


def _string() -> dict[str, Any]:
    return {"type": "string", "minLength": 1}


def _index() -> dict[str, Any]:
    return {"type": "integer", "minimum": 0}


def _items(required: list[str], properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "array",
        "items": {
            "type": "object",
            "additionalProperties": False,
            "required": required,
            "properties": properties,
        },
    }


ANSWER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": SCHEMA_NAME,
    "type": "object",
    "additionalProperties": False,
    "required": ["associations", "aliases"],
    "properties": {
        "associations": _items(
            ["subject", "label", "object"],
            {
                "subject": _string(),
                "label": _string(),
                "object": _string(),
                "weight": {"type": "number"},
                "paragraph": _index(),
            },
        ),
        "aliases": _items(
            ["alias", "canonical", "kind"],
            {
                "alias": _string(),
                "canonical": _string(),
                "kind": {"type": "string", "enum": ["concept", "label"]},
            },
        ),
        "questions": _items(
            ["paragraph", "question"], {"paragraph": _index(), "question": _string()}
        ),
    },
}

_VALIDATOR = Draft202012Validator(ANSWER_SCHEMA)

_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "number": "a number",
    "integer": "an integer",
}

# Where a key sorts: the issue walk's order (associations → aliases → questions,
# each item's fields as the schema lists them).
_WALK_KEYS = (
    *("associations", "aliases", "questions"),
    *("subject", "label", "object", "weight", "paragraph"),
    *("alias", "canonical", "kind", "question"),
)
_KEY_ORDER = {key: rank for rank, key in enumerate(_WALK_KEYS)}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def response_format_json_schema() -> dict[str, Any]:
    """``response_format`` under ``--structured-output json-schema`` (a fresh copy per call)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": SCHEMA_NAME,
            "strict": True,
            "schema": copy.deepcopy(ANSWER_SCHEMA),
        },
    }


def response_format_json_object() -> dict[str, Any]:
    """``response_format`` under ``--structured-output json-object``."""
    return {"type": "json_object"}


def schema_errors(value: object) -> list[str]:
    """Every way ``value`` departs from ANSWER_SCHEMA as ``"<json path>: <message>"``; [] if none.

    Paths use the issue format's style (``associations[1].weight``). A
    top-level property is its bare key (``notes: unexpected property``,
    ``aliases: missing``); the answer itself is ``$`` (``$: expected an
    object, got an array``). A missing or unexpected property is named by the
    path it would have (``associations[0].subject: missing``). One line per
    finding, in the issue walk's order: associations → aliases → questions,
    indices ascending, fields in schema order, unknown properties last.
    """
    findings = {
        (tuple(path), message)
        for error in _VALIDATOR.iter_errors(value)
        for path, message in _findings(error)
    }
    ordered = sorted(findings, key=lambda finding: (_sort_key(finding[0]), finding[1]))
    return [f"{_json_path(path)}: {message}" for path, message in ordered]


def _findings(error: ValidationError) -> Iterator[tuple[list[str | int], str]]:
    """(path, message) pairs; a missing or extra property is addressed by its own path."""
    path = list(error.absolute_path)
    keyword = error.validator
    instance = error.instance
    if keyword == "required":
        for key in error.validator_value:
            if isinstance(instance, dict) and key not in instance:
                yield [*path, key], "missing"
    elif keyword == "additionalProperties":
        known = error.schema.get("properties", {})
        for key in instance:
            if key not in known:
                yield [*path, key], "unexpected property"
    elif keyword == "type":
        yield path, f"expected {_TYPE_WORDS[error.validator_value]}, got {describe(instance)}"
    elif keyword == "minLength":
        yield path, "empty"
    elif keyword == "enum":
        allowed = " or ".join(debug_str(option) for option in error.validator_value)
        got = quote_for_issue(instance) if isinstance(instance, str) else describe(instance)
        yield path, f"expected {allowed}, got {got}"
    elif keyword == "minimum":
        yield path, f"must be at least {error.validator_value}, got {json_number(instance)}"
    else:
        yield path, error.message


def _json_path(parts: Sequence[str | int]) -> str:
    """``associations[1].weight`` style; ``$`` for the answer itself."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _IDENTIFIER.fullmatch(part):
            text += f".{part}" if text else part
        else:
            text += f"[{debug_str(part)}]"
    return text or "$"


def _sort_key(parts: Sequence[str | int]) -> tuple[tuple[int, str], ...]:
    """Walk order: indices numerically, known keys in schema order, unknown keys last."""
    return tuple(
        (part, "") if isinstance(part, int) else (_KEY_ORDER.get(part, len(_KEY_ORDER)), part)
        for part in parts
    )
