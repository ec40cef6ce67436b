"""One case line, read the same way in both modes except for the evaluate-only fields.

Every key a case may carry is named here, the evaluate-only ones included, so an
unknown key is a typo and an error in both modes: under `Mode.CARRY` naming them
is what lets them ride through instead of being refused. `options.sources` is
retired outright (it never named a server field) with a message that says so.
"""

from __future__ import annotations

from typing import Any

from taguru_ray.evalset import extensions
from taguru_ray.evalset.records import Case, ExpectedSource, Mode, Options
from taguru_ray.evalset.values import (
    Problem,
    array,
    check_keys,
    integer,
    join,
    nonblank,
    obj,
    required,
    short,
    string,
    u32,
)

# The fields only `evaluate` reads; benchmark search carries them through unread.
EXTENSION_FIELDS = ("expected_labels", "expected_associations", "expected_citations")
EXTENSION_OPTIONS = ("floor", "tags", "since", "until")

CASE_KEYS = (
    "case_id",
    "query",
    "cues",
    "expected_sources",
    "expected_concepts",
    *EXTENSION_FIELDS,
    "options",
)
SOURCE_KEYS = ("source", "paragraphs", "relevance")
OPTION_KEYS = ("limit", *EXTENSION_OPTIONS)
RETIRED_OPTIONS = {
    "sources": "options.sources is retired (it never named a server field; "
    "filter passages with options.tags) — remove it",
}


def read_case(value: Any, line: int, mode: Mode) -> tuple[Case, tuple[str, ...]]:
    """The case on `line`, and the evaluate-only fields it carries (JSON paths, for the
    one CARRY warning). A Problem after a readable case_id names the case."""
    raw = obj(value, "a case")
    case_id = raw.get("case_id")
    try:
        return _read(raw, line, mode)
    except Problem as problem:
        if isinstance(case_id, str) and case_id.strip():
            raise Problem(f"case {short(case_id)}: {problem}") from None
        raise


def _read(raw: dict[str, Any], line: int, mode: Mode) -> tuple[Case, tuple[str, ...]]:
    check_keys(raw, CASE_KEYS, "")
    case_id = nonblank(required(raw, "case_id", ""), "case_id")
    query = nonblank(required(raw, "query", ""), "query")
    cues = array(raw.get("cues", []), "cues", string)
    sources = array(raw.get("expected_sources", []), "expected_sources", _source)
    concepts = array(raw.get("expected_concepts", []), "expected_concepts", string)
    options_raw = obj(raw.get("options", {}), "options")
    carried = tuple(key for key in EXTENSION_FIELDS if raw.get(key) is not None) + tuple(
        f"options.{key}" for key in EXTENSION_OPTIONS if options_raw.get(key) is not None
    )
    options = _options(options_raw, mode)
    interpret = mode is Mode.INTERPRET
    case = Case(
        case_id,
        query,
        cues,
        sources,
        concepts,
        expected_labels=extensions.labels(raw.get("expected_labels")) if interpret else (),
        expected_associations=(
            extensions.associations(raw.get("expected_associations")) if interpret else ()
        ),
        expected_citations=(
            extensions.citations(raw.get("expected_citations")) if interpret else ()
        ),
        options=options,
        line=line,
    )
    return case, carried


def _source(value: Any, where: str) -> ExpectedSource:
    raw = obj(value, where)
    check_keys(raw, SOURCE_KEYS, where)
    return ExpectedSource(
        source=nonblank(required(raw, "source", where), join(where, "source")),
        paragraphs=array(raw.get("paragraphs", []), join(where, "paragraphs"), u32),
        relevance=integer(raw.get("relevance", 1), join(where, "relevance"), 0, 3),
    )


def _options(raw: dict[str, Any], mode: Mode) -> Options:
    """`limit` is typed in both modes (its range is the caller's); the rest only under
    INTERPRET."""
    for key, why in RETIRED_OPTIONS.items():
        if key in raw:
            raise Problem(why)
    check_keys(raw, OPTION_KEYS, "options")
    limit = raw.get("limit")
    if limit is not None:
        limit = integer(limit, "options.limit")
    if mode is Mode.CARRY:
        return Options(limit=limit)
    return extensions.options(raw, limit)
