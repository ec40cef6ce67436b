"""Carryover and gleaning (seed 002, taguru ADR 0029): a chunk is not extracted alone.

Carryover: each chunk's system prompt names the (name, type) pairs validated
from the earlier chunks of the same segment — the most recent `limit` of them,
listed oldest first — with the instruction to reuse those spellings and to
list nothing the chunk does not mention. It sits in the system prompt, never
in the chunk: inside the chunk the names would read as the chunk's own text.
Built from validated outputs, never from raw answers, and never across
segments. A name's type is the one a `schema:type` association asserts for it,
when one does.

Gleaning: a chunk shown its own answer is asked what it missed; the second
answer is combined with the first before validation, so an edge between a
first-pass and a gleaned name resolves. Repeats are allowed (and folded).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from taguru_ray.contract.piece_output import PieceOutput

TYPE_LABEL = "schema:type"


def carried(outputs: Iterable[PieceOutput], limit: int) -> list[tuple[str, str]]:
    """The (name, type) pairs of earlier chunks, the most recent `limit`, oldest first."""
    order: dict[str, None] = {}
    types: dict[str, str] = {}
    for output in outputs:
        for item in output.associations:
            subject, label, obj = item.get("subject"), item.get("label"), item.get("object")
            if not subject or not obj:
                continue
            if label == TYPE_LABEL:
                types.setdefault(subject, obj)
                order.pop(subject, None)
                order[subject] = None
                continue
            for name in (subject, obj):
                order.pop(name, None)  # a name seen again is recent again
                order[name] = None
    names = list(order)[-limit:] if limit else []
    return [(name, types.get(name, "")) for name in names]


def render_carryover(pairs: list[tuple[str, str]]) -> str:
    if not pairs:
        return ""
    lines = [f"- {name} ({kind})" if kind else f"- {name}" for name, kind in pairs]
    return (
        "Names the earlier parts of this segment already settled on, oldest first. When this "
        "part mentions one of them, spell it exactly so; do not list any of them unless this "
        "part's own text mentions it:\n" + "\n".join(lines)
    )


def glean_ask() -> str:
    return (
        "Look at the part once more. List what you missed: associations (and aliases) the "
        "text states that your answer above does not hold. Repeating an item is fine. Reply "
        "with only the JSON object, in the same shape; empty lists if nothing was missed."
    )


def combine(first: Mapping[str, Any], more: Mapping[str, Any]) -> dict[str, Any]:
    """One answer from two: each collection concatenated, exact repeats dropped."""
    combined: dict[str, Any] = {}
    for key in ("associations", "aliases", "questions"):
        items: list[Any] = []
        seen: set[str] = set()
        for source in (first, more):
            values = source.get(key)
            if not isinstance(values, list):
                continue
            for item in values:
                marker = json.dumps(item, sort_keys=True, ensure_ascii=False)
                if marker not in seen:
                    seen.add(marker)
                    items.append(item)
        combined[key] = items
    return combined
