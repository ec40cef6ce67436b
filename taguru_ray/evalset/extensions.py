"""The evaluate-only fields, typed and validated (`Mode.INTERPRET` only).

`expected_labels`, `expected_associations`, `expected_citations` and
`options.floor|tags|since|until` are read here and nowhere else: under
`Mode.CARRY` none of this runs, so a value benchmark search cannot use can never
stop it. An explicit null counts as absent, as for every optional field.
"""

from __future__ import annotations

from typing import Any

from taguru_ray.evalset.records import (
    SECTION_UNCHECKED,
    ExpectedAssociation,
    ExpectedCitation,
    Options,
    Unset,
)
from taguru_ray.evalset.values import (
    array,
    check_keys,
    join,
    nonblank,
    number,
    obj,
    required,
    string,
    u32,
    u64_or_null,
)

ASSOCIATION_KEYS = ("subject", "label", "object")
CITATION_KEYS = ("source", "paragraph", "section", "quote")


def labels(value: Any) -> tuple[str, ...]:
    """`expected_labels`: relation labels resolve_label should find; none blank."""
    return () if value is None else array(value, "expected_labels", nonblank)


def associations(value: Any) -> tuple[ExpectedAssociation, ...]:
    """`expected_associations`: `/query` pins all three positions, so all three are required."""
    return () if value is None else array(value, "expected_associations", _association)


def citations(value: Any) -> tuple[ExpectedCitation, ...]:
    """`expected_citations`: one citation-lane check per entry."""
    return () if value is None else array(value, "expected_citations", _citation)


def options(raw: dict[str, Any], limit: int | None) -> Options:
    """`options` with its evaluate-only members typed; keys were checked by the caller."""
    floor = raw.get("floor")
    tags = raw.get("tags")
    return Options(
        limit=limit,
        floor=None if floor is None else number(floor, "options.floor", 0.0, 1.0),
        tags=() if tags is None else array(tags, "options.tags", string),
        since=u64_or_null(raw.get("since"), "options.since"),
        until=u64_or_null(raw.get("until"), "options.until"),
    )


def _association(value: Any, where: str) -> ExpectedAssociation:
    raw = obj(value, where)
    check_keys(raw, ASSOCIATION_KEYS, where)
    subject, label, object_ = (
        nonblank(required(raw, key, where), join(where, key)) for key in ASSOCIATION_KEYS
    )
    return ExpectedAssociation(subject, label, object_)


def _citation(value: Any, where: str) -> ExpectedCitation:
    """One entry; `section` keeps absent, null and a string apart (see ExpectedCitation)."""
    raw = obj(value, where)
    check_keys(raw, CITATION_KEYS, where)
    source = nonblank(required(raw, "source", where), join(where, "source"))
    paragraph = u32(required(raw, "paragraph", where), join(where, "paragraph"))
    section: str | Unset | None
    if "section" not in raw:
        section = SECTION_UNCHECKED
    else:
        section = None if raw["section"] is None else string(raw["section"], join(where, "section"))
    quote = raw.get("quote")
    if quote is not None:
        quote = nonblank(quote, join(where, "quote"))
    return ExpectedCitation(source, paragraph, section, quote)
