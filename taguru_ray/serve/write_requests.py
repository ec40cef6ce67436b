"""The bodies of the write routes, read as the reference reads them.

Shape errors (a missing field, a wrong type) are 422 `malformed_request` as for the
read routes (requests.py); values that parse but cannot be applied are 400
`invalid_argument` (an empty name, a non-finite or out-of-range weight, an orphaned
question); past a per-request cap 400 `over_limit` (10 000 association ops, 1 000
passages, 1 000 names to look up). A refused body applies nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from taguru_ray.context.writes import AssociationOp, ContextMeta, PassageSubmission
from taguru_ray.contract.items import (
    MAX_CONTEXT_NAME_BYTES,
    MAX_DESCRIPTION_BYTES,
    MAX_NAME_BYTES,
    MAX_QUESTION_BYTES,
    MAX_QUESTIONS_PER_PARAGRAPH,
    MAX_SECTION_BYTES,
    MAX_TAG_BYTES,
    MAX_TAGS,
    MAX_WEIGHT,
)
from taguru_ray.serve import requests
from taguru_ray.serve.requests import U32_MAX

MAX_OPS_PER_REQUEST = 10_000  # the reference's MAX_ASSOCIATIONS_PER_REQUEST
MAX_PASSAGES_PER_REQUEST = MAX_OPS_PER_REQUEST // 10
MAX_LOOKUP = 1000
MAX_LOCATOR_KIND_BYTES, MAX_LOCATOR_VALUE_BYTES = 64, 512


def context_name(name: str) -> str:
    if not name:
        raise requests.argument("the context name must not be empty")
    requests.bounded_bytes("the context name", name, MAX_CONTEXT_NAME_BYTES)
    return name


def meta(body: Mapping[str, Any]) -> ContextMeta:
    """A create or PATCH body: every field optional, floors clamped to 0..1."""
    description = body.get("description")
    if description is not None:
        if not isinstance(description, str):
            raise requests.invalid("description", description, "a string")
        requests.bounded_bytes("the description", description, MAX_DESCRIPTION_BYTES)
    pinned = body.get("pinned")
    if pinned is not None and not isinstance(pinned, bool):
        raise requests.invalid("pinned", pinned, "a boolean")
    return ContextMeta(
        description=description,
        pinned=pinned,
        dice_floor=requests.floor(body, "dice_floor"),
        semantic_floor=requests.floor(body, "semantic_floor"),
    )


def rename(body: Mapping[str, Any]) -> str:
    return context_name(requests.string(body, "to"))


def associations(body: Any) -> list[AssociationOp]:
    if not isinstance(body, list):
        raise requests.invalid("$", body, "a sequence of association ops")
    if len(body) > MAX_OPS_PER_REQUEST:
        raise requests.over_limit(
            f"batch of {len(body)} associations exceeds the per-request limit of "
            f"{MAX_OPS_PER_REQUEST}; split the write"
        )
    return [_op(index, op) for index, op in enumerate(body)]


def _op(index: int, op: Any) -> AssociationOp:
    where = f"[{index}]"
    if not isinstance(op, dict):
        raise requests.invalid(where, op, "an association object")
    names = {key: requests.string(op, key) for key in ("subject", "label", "object")}
    for key, value in names.items():
        if not value.strip():
            raise requests.argument(f"{where}.{key} must not be empty")
        requests.bounded_bytes(f"{where}.{key}", value, MAX_NAME_BYTES)
    weight = op.get("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise requests.invalid(f"{where}.weight", weight, "a number")
    if not math.isfinite(weight) or abs(weight) > MAX_WEIGHT:
        raise requests.argument(
            f"{where}.weight {weight} is not a finite number within ±{MAX_WEIGHT:g}"
        )
    source = op.get("source")
    if source is not None:
        if not isinstance(source, str):
            raise requests.invalid(f"{where}.source", source, "a string")
        if not source:
            raise requests.argument(f"{where}.source must not be empty (omit it instead)")
        requests.bounded_bytes(f"{where}.source", source, MAX_NAME_BYTES)
    paragraph = requests.count(op, "paragraph", ceiling=U32_MAX)
    return AssociationOp(**names, weight=float(weight), source=source, paragraph=paragraph)


def passages(body: Mapping[str, Any]) -> dict[str, PassageSubmission]:
    texts = body.get("passages")
    if not isinstance(texts, dict):
        raise requests.invalid("passages", texts, "an object of source id -> text")
    if len(texts) > MAX_PASSAGES_PER_REQUEST:
        raise requests.over_limit(
            f"batch of {len(texts)} passages exceeds the per-request limit of "
            f"{MAX_PASSAGES_PER_REQUEST}; split the store"
        )
    extras = {
        key: _per_source(body, key, texts)
        for key in ("questions", "sections", "locators", "tags", "dates")
    }
    found = {}
    for source, text in texts.items():
        if not source:
            raise requests.argument("a passage's source id must not be empty")
        requests.bounded_bytes(f"passages['{source}']", source, MAX_NAME_BYTES)
        if not isinstance(text, str):
            raise requests.invalid(f"passages['{source}']", text, "a string")
        found[source] = PassageSubmission(
            text=text,
            questions=_marks(extras["questions"].get(source, []), "question", MAX_QUESTION_BYTES),
            sections=_marks(extras["sections"].get(source, []), "section", MAX_SECTION_BYTES),
            locators=_locators(extras["locators"].get(source, [])),
            tags=_source_tags(extras["tags"].get(source, [])),
            date=_date(extras["dates"].get(source)),
        )
        per_paragraph: dict[int, int] = {}
        for paragraph, _ in found[source].questions:
            per_paragraph[paragraph] = per_paragraph.get(paragraph, 0) + 1
            if per_paragraph[paragraph] > MAX_QUESTIONS_PER_PARAGRAPH:
                raise requests.over_limit(
                    f"questions['{source}']: paragraph {paragraph} carries more than "
                    f"{MAX_QUESTIONS_PER_PARAGRAPH} questions"
                )
    return found


def _per_source(body: Mapping[str, Any], key: str, texts: Mapping[str, Any]) -> dict[str, Any]:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise requests.invalid(key, value, "an object keyed by source id")
    for source in value:
        if source not in texts:
            raise requests.argument(
                f"{key}['{source}'] names a source id absent from this request's own `passages`"
            )
    return value


def _marks(items: Any, key: str, cap: int) -> tuple[tuple[int, str], ...]:
    if not isinstance(items, list):
        raise requests.invalid(f"{key}s", items, "a sequence")
    found = []
    for item in items:
        if not isinstance(item, dict):
            raise requests.invalid(key, item, f"an object {{paragraph, {key}}}")
        paragraph = requests.count(item, "paragraph", ceiling=U32_MAX)
        if paragraph is None:
            raise requests.shape(f"{key}: missing field `paragraph`")
        text = requests.string(item, key)
        if not text:
            raise requests.argument(f"a {key} must not be empty")
        requests.bounded_bytes(f"a {key}", text, cap)
        found.append((paragraph, text))
    return tuple(found)


def _locators(items: Any) -> tuple[tuple[int, str, str], ...]:
    if not isinstance(items, list):
        raise requests.invalid("locators", items, "a sequence")
    found = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("locator"), dict):
            raise requests.invalid("locator", item, "an object {paragraph, locator{kind, value}}")
        paragraph = requests.count(item, "paragraph", ceiling=U32_MAX)
        if paragraph is None:
            raise requests.shape("locator: missing field `paragraph`")
        kind = requests.string(item["locator"], "kind")
        value = requests.string(item["locator"], "value")
        if not kind or not value:
            raise requests.argument("a locator's kind and value must not be empty")
        requests.bounded_bytes("a locator kind", kind, MAX_LOCATOR_KIND_BYTES)
        requests.bounded_bytes("a locator value", value, MAX_LOCATOR_VALUE_BYTES)
        found.append((paragraph, kind, value))
    return tuple(found)


def _source_tags(items: Any) -> tuple[str, ...]:
    if not isinstance(items, list) or not all(isinstance(tag, str) for tag in items):
        raise requests.invalid("tags", items, "a sequence of strings")
    if len(set(items)) > MAX_TAGS:
        raise requests.over_limit(
            f"{len(set(items))} tags where a source carries at most {MAX_TAGS}"
        )
    for tag in items:
        if not tag:
            raise requests.argument("a tag must not be empty")
        requests.bounded_bytes("a tag", tag, MAX_TAG_BYTES)
    return tuple(dict.fromkeys(items))


def _date(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise requests.invalid("dates", value, "epoch seconds (a non-negative whole number)")
    return value


def lookup(body: Mapping[str, Any]) -> list[str]:
    sources = body.get("sources")
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise requests.invalid("sources", sources, "a sequence of source ids")
    if len(sources) > MAX_LOOKUP:
        raise requests.over_limit(
            f"sources carries {len(sources)} items, past the per-request limit of {MAX_LOOKUP}"
        )
    for source in sources:
        _source_id(source)
    return sources


def source(body: Mapping[str, Any]) -> str:
    return _source_id(requests.string(body, "source"))


def _source_id(source: str) -> str:
    if not source:
        raise requests.argument("source must not be empty")
    requests.bounded_bytes("source", source, MAX_NAME_BYTES)
    return source
