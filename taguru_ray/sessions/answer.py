"""The model's output contract, v4 (closed): what one batch's answer may hold.

    [{"seq": 12, "quote": "…verbatim…", "facts": [{"subject", "predicate", "value"}]},
     {"seq": 13, "quote": "", "facts": []}]

One object per turn of the batch, in order. No id, timestamp, pointer, code,
confidence or ``ok``: everything else is supplied by code, so the model has
nothing to invent, and an extra key is a broken contract. Reading an answer
gives its items and, separately, each problem with the JSON path it is at:
*removable* ones (an item or a fact that can be dropped with a loss record) and
*corrective* ones (a wrong type the model is told about once, by path).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

ITEM_KEYS = ("seq", "quote", "facts")
FACT_KEYS = ("subject", "predicate", "value")
MAX_FIELD_BYTES = 1024  # a Taguru name's cap

SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "required": list(ITEM_KEYS),
        "properties": {
            "seq": {"type": "integer", "minimum": 0},
            "quote": {"type": "string"},
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": list(FACT_KEYS),
                    "properties": {key: {"type": "string"} for key in FACT_KEYS},
                },
            },
        },
    },
}


@dataclass(frozen=True)
class Fact:
    subject: str
    predicate: str
    value: str


@dataclass(frozen=True)
class Item:
    seq: int
    quote: str
    facts: tuple[Fact, ...]
    path: str  # where it was in the answer: $[3]
    # Each kept fact's path as the model gave it ($[3].facts[1]), so a loss names the
    # fact's own position even when an earlier fact of the item was dropped.
    fact_paths: tuple[str, ...] = ()
    given: int = 0  # the facts the model wrote, kept or not: a quote stands for them


@dataclass(frozen=True)
class Problem:
    path: str  # $[3].facts[0].confidence
    why: str
    raw: Any = None  # what was dropped, for the loss record


@dataclass
class Reading:
    items: list[Item] = field(default_factory=list)
    removed: list[Problem] = field(default_factory=list)  # dropped, with a loss record
    corrective: list[Problem] = field(default_factory=list)  # told to the model once

    @property
    def unreadable(self) -> bool:
        return bool(self.corrective)


def read(text: str) -> Reading:
    """The answer's items under the closed v4 schema, and what is wrong with the rest."""
    reading = Reading()
    try:
        value = json.loads(text)
    except ValueError as error:
        reading.corrective.append(Problem("$", f"not JSON ({error.msg})"))
        return reading
    if isinstance(value, dict) and set(value) == {"items"}:  # a json_schema wrapper object
        value = value["items"]
    if not isinstance(value, list):
        reading.corrective.append(Problem("$", "expected a JSON array of turn objects"))
        return reading
    for index, raw in enumerate(value):
        item = _item(raw, f"$[{index}]", reading)
        if item is not None:
            reading.items.append(item)
    return reading


def _item(raw: Any, path: str, reading: Reading) -> Item | None:
    if not isinstance(raw, dict):
        reading.corrective.append(Problem(path, "expected an object {seq, quote, facts}"))
        return None
    extra = sorted(set(raw) - set(ITEM_KEYS))
    if extra:  # a closed contract: the item carries something only code may say
        reading.removed.append(Problem(f"{path}.{extra[0]}", "a key outside the v4 contract", raw))
        return None
    seq, quote, facts = raw.get("seq"), raw.get("quote"), raw.get("facts")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        reading.corrective.append(Problem(f"{path}.seq", "expected the turn's seq number"))
        return None
    if not isinstance(quote, str):
        reading.corrective.append(Problem(f"{path}.quote", "expected a string"))
        return None
    if not isinstance(facts, list):
        reading.corrective.append(Problem(f"{path}.facts", "expected an array"))
        return None
    kept, paths = [], []
    for index, fact in enumerate(facts):
        where = f"{path}.facts[{index}]"
        if not isinstance(fact, dict):
            reading.corrective.append(Problem(where, "expected {subject, predicate, value}"))
            continue
        extra = sorted(set(fact) - set(FACT_KEYS))
        if extra:
            reading.removed.append(
                Problem(f"{where}.{extra[0]}", "a key outside the v4 contract", fact)
            )
            continue
        fields = [fact.get(key) for key in FACT_KEYS]
        wrong = [key for key, v in zip(FACT_KEYS, fields, strict=True) if not isinstance(v, str)]
        if wrong:
            reading.corrective.append(Problem(f"{where}.{wrong[0]}", "expected a string"))
            continue
        kept.append(Fact(*fields))
        paths.append(where)
    return Item(seq, quote, tuple(kept), path, tuple(paths), len(facts))
