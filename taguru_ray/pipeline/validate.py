"""The `validate` step's issue pass: every contract violation of one answer, by path.

CONTRACT.md section 5, "Issue text format". ``collect_issues`` walks
associations → aliases → questions and returns one ``<path>: <finding>`` line
per violation, in walk order — the lines a corrective turn lists and the
attempt record's ``validation_issues`` carry. It judges each item on its own;
the checks that need the whole segment (shadowing, conflicting and dangling
aliases) are Stage 2's, in ``cross_items.py``, run by `reconcile`.

In strict runs the mechanical pass removes what removal can judge (non-object
elements, missing/empty names, self aliases) before these issues are counted;
the issue pass still names those, because under the SDK parity surface and a
removal-free run they are what the model is asked to fix.

``normalise`` is the lenient read of the same value: the per-piece output a
checkpoint stores and `merge` consumes. Everything here is pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.contract.items import MAX_NAME_BYTES, MAX_QUESTION_BYTES, MAX_WEIGHT
from taguru_ray.contract.piece_output import PieceOutput
from taguru_ray.contract.rust_text import (
    describe,
    display_f64,
    quote_for_issue,
    rust_trim,
    utf8_len,
)
from taguru_ray.text.scripts import is_empty_name

# Corrective turns list at most this many issues, then count the rest.
MAX_LISTED_ISSUES = 20
COLLECTIONS = ("associations", "aliases", "questions")  # the walk order
ALIAS_KINDS = ("concept", "label")
U32_MAX = 2**32 - 1

__all__ = [
    "MAX_LISTED_ISSUES",
    "PieceOutput",
    "Rules",
    "collect_issues",
    "format_corrective_issues",
    "item_issues",
    "normalise",
]


@dataclass(frozen=True)
class Rules:
    """What one piece's items are judged against that no item carries itself."""

    paragraph_count: int  # canonical paragraphs of the segment
    questions_cap: int  # --questions N; 0 = not asked: never judged, merge drops them


def collect_issues(value: Mapping[str, Any], rules: Rules) -> list[str]:
    """Every per-answer issue of ``value`` (a parsed answer object), in walk order.

    Absent and null collections read as empty. Questions are judged only when
    ``rules.questions_cap > 0``; volunteered ones are merge's policy trim.
    """
    judged = COLLECTIONS if rules.questions_cap > 0 else COLLECTIONS[:2]
    issues: list[str] = []
    for collection in judged:
        items = value.get(collection)
        if items is None:
            continue
        if not isinstance(items, list):
            issues.append(f"{collection}: expected an array, got {describe(items)}")
            continue
        for index, item in enumerate(items):
            issues.extend(item_issues(collection, index, item, rules))
    return issues


def item_issues(collection: str, index: int, item: object, rules: Rules) -> list[str]:
    """The issues of one element of ``associations``, ``aliases`` or ``questions``.

    The unit the mechanical pass works in: it removes an element outright or
    keeps it with these issues. Whether questions are judged at all is the
    caller's call (``collect_issues`` skips them when none were asked for).
    """
    path = f"{collection}[{index}]"
    if not isinstance(item, dict):
        return [f"{path}: expected an object, got {describe(item)}"]
    issues: list[str] = []
    if collection == "associations":
        _association_issues(item, path, issues)
    elif collection == "aliases":
        _alias_issues(item, path, issues)
    elif collection == "questions":
        _question_issues(item, path, rules, issues)
    else:
        raise ValueError(f"no such collection: {collection!r}")
    return issues


def format_corrective_issues(issues: list[str]) -> str:
    """The corrective turn's issue list: ``- <issue>`` lines (≤ 20), then a count of the rest."""
    lines = [f"- {issue}" for issue in issues[:MAX_LISTED_ISSUES]]
    rest = len(issues) - MAX_LISTED_ISSUES
    if rest > 0:
        lines.append(f"… and {rest} more issue(s)")
    return "\n".join(lines)


def normalise(value: Mapping[str, Any], rules: Rules) -> PieceOutput:
    """The stored form of an answer: fixed keys, trimmed names, absent values as None.

    Meant for an answer with no issues, where nothing is lost but an
    out-of-range association paragraph tag (→ None; the fact stays). It also
    reads a flawed answer (``--lossy``) without raising, the way the reference's
    lenient read does: non-object elements are skipped, an unusable name or
    tag reads as None, a wrong-typed weight as the default 1.0, while a
    well-typed but invalid weight (0, over the cap) is kept for merge to drop
    and account for. Volunteered questions (``questions_cap == 0``) are kept so
    merge can account for them too.
    """
    return PieceOutput(
        associations=[_stored_association(item, rules) for item in _objects(value, "associations")],
        aliases=[_stored_alias(item) for item in _objects(value, "aliases")],
        questions=[_stored_question(item, rules) for item in _objects(value, "questions")],
    )


# -- field readers; ``item.get`` makes absent and null the same "not here" -----


def _objects(value: Mapping[str, Any], collection: str) -> list[dict[str, Any]]:
    items = value.get(collection)
    return [item for item in items if isinstance(item, dict)] if isinstance(items, list) else []


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_index(value: Any) -> bool:
    """A paragraph index: a JSON integer in u32 range (``1.0`` and negatives are not)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U32_MAX


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# -- per-item issues -----------------------------------------------------------


def _association_issues(item: Mapping[str, Any], path: str, issues: list[str]) -> None:
    for key in ("subject", "label", "object"):
        _required_string(item, key, path, MAX_NAME_BYTES, issues)
    weight = item.get("weight")
    if weight is not None:
        finding = _weight_finding(weight)
        if finding is not None:
            issues.append(f"{path}.weight: expected finite non-zero number, got {finding}")
    paragraph = item.get("paragraph")
    # An out-of-range tag is no issue: only the tag is lost (normalise drops it).
    if paragraph is not None and not _is_index(paragraph):
        issues.append(_not_an_index(path, paragraph))


def _weight_finding(weight: Any) -> str | None:
    """What is wrong with a present weight, as the text after "got "; None when fine."""
    if not _is_number(weight):
        return describe(weight)
    number = _as_float(weight)
    if not math.isfinite(number):
        return display_f64(number)
    if number == 0:
        return "0"
    if abs(number) > MAX_WEIGHT:
        return f"{display_f64(number)} (over the {display_f64(MAX_WEIGHT)} cap)"
    return None


def _alias_issues(item: Mapping[str, Any], path: str, issues: list[str]) -> None:
    alias = _required_string(item, "alias", path, MAX_NAME_BYTES, issues)
    canonical = _canonical(item, path, issues)
    kind = item.get("kind")
    if kind is None:
        issues.append(f"{path}.kind: missing")
    elif kind not in ALIAS_KINDS:
        got = quote_for_issue(kind) if isinstance(kind, str) else describe(kind)
        issues.append(f'{path}.kind: expected "concept" or "label", got {got}')
    if alias is not None and alias == canonical:
        issues.append(f"{path}.alias: equals its canonical")


def _canonical(item: Mapping[str, Any], path: str, issues: list[str]) -> str | None:
    """Like a required name, except empty is never reported: an empty canonical is a
    dangling one, which only the whole segment's names can judge (Stage 2)."""
    value = item.get("canonical")
    if value is None:
        issues.append(f"{path}.canonical: missing")
        return None
    if not isinstance(value, str):
        issues.append(f"{path}.canonical: expected a string, got {describe(value)}")
        return None
    trimmed = rust_trim(value)
    size = utf8_len(trimmed)
    if size > MAX_NAME_BYTES:
        issues.append(f"{path}.canonical: {size} bytes exceeds the {MAX_NAME_BYTES}-byte cap")
        return None
    return "" if is_empty_name(trimmed) else trimmed


def _question_issues(item: Mapping[str, Any], path: str, rules: Rules, issues: list[str]) -> None:
    paragraph = item.get("paragraph")
    if paragraph is None:
        issues.append(f"{path}.paragraph: missing")
    elif not _is_index(paragraph):
        issues.append(_not_an_index(path, paragraph))
    elif paragraph >= (below := rules.paragraph_count):
        issues.append(f"{path}.paragraph: must cite a paragraph below {below}, got {paragraph}")
    _required_string(item, "question", path, MAX_QUESTION_BYTES, issues)


def _not_an_index(path: str, value: Any) -> str:
    return f"{path}.paragraph: expected an integer paragraph index, got {describe(value)}"


def _required_string(
    item: Mapping[str, Any], key: str, path: str, cap: int, issues: list[str]
) -> str | None:
    """The trimmed value, or None after naming which of missing/type/empty/oversize it hit."""
    value = item.get(key)
    if value is None:
        issues.append(f"{path}.{key}: missing")
        return None
    if not isinstance(value, str):
        issues.append(f"{path}.{key}: expected a string, got {describe(value)}")
        return None
    trimmed = rust_trim(value)
    size = utf8_len(trimmed)
    if is_empty_name(trimmed):  # invisible characters only are as empty (issue 37)
        issues.append(f"{path}.{key}: empty")
        return None
    if size > cap:
        issues.append(f"{path}.{key}: {size} bytes exceeds the {cap}-byte cap")
        return None
    return trimmed


# -- the stored form -------------------------------------------------------------


def _name(value: Any, cap: int = MAX_NAME_BYTES, *, allow_empty: bool = False) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = rust_trim(value)
    if is_empty_name(trimmed):
        trimmed = ""
    if (not trimmed and not allow_empty) or utf8_len(trimmed) > cap:
        return None
    return trimmed


def _tag(value: Any, rules: Rules) -> int | None:
    return value if _is_index(value) and value < rules.paragraph_count else None


def _stored_association(item: Mapping[str, Any], rules: Rules) -> dict[str, Any]:
    weight = item.get("weight")
    return {
        "subject": _name(item.get("subject")),
        "label": _name(item.get("label")),
        "object": _name(item.get("object")),
        "weight": _as_float(weight) if _is_number(weight) else 1.0,
        "paragraph": _tag(item.get("paragraph"), rules),
    }


def _stored_alias(item: Mapping[str, Any]) -> dict[str, Any]:
    kind = item.get("kind")
    return {
        "alias": _name(item.get("alias")),
        "canonical": _name(item.get("canonical"), allow_empty=True),
        "kind": kind if kind in ALIAS_KINDS else None,
    }


def _stored_question(item: Mapping[str, Any], rules: Rules) -> dict[str, Any]:
    return {
        "paragraph": _tag(item.get("paragraph"), rules),
        "question": _name(item.get("question"), MAX_QUESTION_BYTES),
    }
