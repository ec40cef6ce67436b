"""Request parsing and validation: JSON bodies and query strings into typed requests.

The reference reads bodies with serde, so this module keeps its verdicts
(EVALUATE.md §1, §2.3): a missing or wrong `Content-Type` is 415, JSON that
does not parse is 400, well-formed JSON of the wrong shape (a missing field,
a string where a count goes, a negative count, a duplicate key) is 422 — all
`malformed_request`. Keys a route does not read are ignored, as serde ignores
them. Counts past a ceiling are clamped, never refused (search limit default 5,
resolve 1000, query 100, ceiling 1000; sources page 1..1000); floors are
clamped to 0..1. Argument errors that parse fine are 400 `invalid_argument`
(a window with `since >= until`, too many filter tags, a query pinning no
position) or 400 `over_limit` (a field past its byte or item ceiling).

Bodies are read as standard JSON only (`contract.strict_json`), for every route:
a NaN/Infinity constant or a number past the f64 range anywhere in a body is 400
`invalid_argument` (finite floors are clamped, never refused), and a body
nested deeper than the decoder follows is 400 `malformed_request`, never a 500.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taguru_ray.context.errors import ContextError, Position
from taguru_ray.contract import strict_json

MATCH_LIMIT_MAX = 1000
SEARCH_LIMIT_DEFAULT = 5
RESOLVE_LIMIT_DEFAULT = 1000
QUERY_LIMIT_DEFAULT = 100
PAGE_LIMIT_DEFAULT = 1000
MAX_TAGS = 32
MAX_TAG_BYTES = 128
MAX_NAME_BYTES = 1024  # a source id
MAX_POSITION_ITEMS = 1000
U64_MAX = 2**64 - 1
U32_MAX = 2**32 - 1

_SHAPE = "Failed to deserialize the JSON body into the target type: "


@dataclass(frozen=True)
class SearchRequest:
    query: str
    limit: int
    semantic_floor: float | None
    tags: tuple[str, ...]
    since: int | None
    until: int | None


@dataclass(frozen=True)
class ResolveRequest:
    cue: str
    limit: int
    dice_floor: float | None
    semantic_floor: float | None


@dataclass(frozen=True)
class QueryRequest:
    subject: Position
    label: Position
    object: Position
    limit: int
    since: int | None
    until: int | None


@dataclass(frozen=True)
class CitationRequest:
    source: str
    paragraph: int


@dataclass(frozen=True)
class Page:
    limit: int
    after: str | None
    prefix: str | None


def json_object(raw: bytes, content_type: str) -> dict[str, Any]:
    """The body as a JSON object, or the refusal axum's Json extractor would give."""
    body = json_value(raw, content_type)
    if not isinstance(body, dict):
        raise _shape(f"invalid type: {_kind(body)}, expected a JSON object")
    return body


def json_value(raw: bytes, content_type: str) -> Any:
    """The body as any JSON value (an association write is an array)."""
    media = content_type.split(";", 1)[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise ContextError(
            415, "malformed_request", "Expected request with `Content-Type: application/json`"
        )
    try:
        body = strict_json.loads(raw.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except _DuplicateKey as exc:
        raise _shape(f"duplicate field `{exc.args[0]}`") from None
    except strict_json.NonFiniteNumber as exc:
        raise _argument(f"the request body holds {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:  # NestedTooDeeply included
        raise ContextError(
            400, "malformed_request", f"Failed to parse the request body as JSON: {exc}"
        ) from None
    return body


def search(body: Mapping[str, Any]) -> SearchRequest:
    limit = _count(body, "limit")
    since, until = _window(body)
    return SearchRequest(
        query=_string(body, "query"),
        limit=SEARCH_LIMIT_DEFAULT if limit is None else min(limit, MATCH_LIMIT_MAX),
        semantic_floor=_floor(body, "semantic_floor"),
        tags=_tags(body),
        since=since,
        until=until,
    )


def resolve(body: Mapping[str, Any]) -> ResolveRequest:
    limit = _count(body, "limit")
    return ResolveRequest(
        cue=_string(body, "cue"),
        limit=RESOLVE_LIMIT_DEFAULT if limit is None else min(limit, MATCH_LIMIT_MAX),
        dice_floor=_floor(body, "dice_floor"),
        semantic_floor=_floor(body, "semantic_floor"),
    )


def query(body: Mapping[str, Any]) -> QueryRequest:
    positions = {key: _position(body, key) for key in ("subject", "label", "object")}
    if all(value is None for value in positions.values()):
        raise _argument("pin at least one of subject, label or object (a string or a list)")
    for key in ("subject_types", "object_types", "after"):
        if body.get(key) not in (None, [], ""):
            raise _argument(f"{key} is not supported by this embedded context store")
    limit = _count(body, "limit")
    since, until = _window(body)
    return QueryRequest(
        subject=positions["subject"],
        label=positions["label"],
        object=positions["object"],
        limit=QUERY_LIMIT_DEFAULT if limit is None else min(limit, MATCH_LIMIT_MAX),
        since=since,
        until=until,
    )


def citation(body: Mapping[str, Any]) -> CitationRequest:
    source = _string(body, "source")
    key = "paragraph" if "paragraph" in body or "index" not in body else "index"
    paragraph = _count(body, key, ceiling=U32_MAX)
    if paragraph is None:
        raise _shape("missing field `paragraph`")
    if not source:
        raise _argument("source must not be empty")
    _bounded_bytes("source", source, MAX_NAME_BYTES)
    return CitationRequest(source=source, paragraph=paragraph)


def page(params: Mapping[str, str]) -> Page:
    """`?limit&after&prefix` of a listing: limit 1..1000 (clamped), default 1000."""
    text = params.get("limit")
    limit = PAGE_LIMIT_DEFAULT
    if text is not None:
        if not text.isascii() or not text.isdigit():
            raise ContextError(
                400,
                "malformed_request",
                f"Failed to deserialize query string: limit: invalid digit found in {text!r}",
            )
        limit = max(1, min(int(text), MATCH_LIMIT_MAX))
    return Page(limit=limit, after=params.get("after"), prefix=params.get("prefix"))


def dry_run(params: Mapping[str, str]) -> bool:
    text = params.get("dry_run", "false")
    if text not in ("true", "false"):
        raise ContextError(
            400,
            "malformed_request",
            f"Failed to deserialize query string: dry_run: expected `true` or `false`, "
            f"got {text!r}",
        )
    return text == "true"


class _DuplicateKey(Exception):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _shape(detail: str) -> ContextError:
    return ContextError(422, "malformed_request", _SHAPE + detail)


def _argument(message: str) -> ContextError:
    return ContextError(400, "invalid_argument", message)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{json.dumps(value)}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f"string {json.dumps(value, ensure_ascii=False)}"
    return "sequence" if isinstance(value, list) else "map"


def _invalid(key: str, value: Any, expected: str) -> ContextError:
    return _shape(f"{key}: invalid type: {_kind(value)}, expected {expected}")


def _string(body: Mapping[str, Any], key: str) -> str:
    if key not in body:
        raise _shape(f"missing field `{key}`")
    value = body[key]
    if not isinstance(value, str):
        raise _invalid(key, value, "a string")
    return value


def _count(body: Mapping[str, Any], key: str, ceiling: int = U64_MAX) -> int | None:
    """A non-negative whole number (null or absent → None), as serde reads a usize."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _invalid(key, value, "a non-negative whole number")
    if value < 0 or value > ceiling:
        raise _shape(f"{key}: invalid value: integer `{value}`, expected 0..={ceiling}")
    return value


def _floor(body: Mapping[str, Any], key: str) -> float | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _invalid(key, value, "a number")
    return min(1.0, max(0.0, float(value)))


def _window(body: Mapping[str, Any]) -> tuple[int | None, int | None]:
    since, until = _count(body, "since"), _count(body, "until")
    if since is not None and until is not None and since >= until:
        raise _argument(
            f"since {since} is not before until {until} — the window is half-open "
            "[since, until) and this one selects nothing"
        )
    return since, until


def _tags(body: Mapping[str, Any]) -> tuple[str, ...]:
    value = body.get("tags", [])
    if not isinstance(value, list):
        raise _invalid("tags", value, "a sequence of strings")
    for tag in value:
        if not isinstance(tag, str):
            raise _invalid("tags", tag, "a string")
    if len(value) > MAX_TAGS:
        raise _argument(f"{len(value)} filter tags where at most {MAX_TAGS} may be named")
    for tag in value:
        if not tag:
            raise _argument("a filter tag must not be empty")
        _bounded_bytes("a filter tag", tag, MAX_TAG_BYTES)
    return tuple(value)


def _position(body: Mapping[str, Any], key: str) -> Position:
    value = body.get(key)
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise _invalid(key, value, "a string or a sequence of strings")
    for item in value:
        if not isinstance(item, str):
            raise _invalid(key, item, "a string")
    if len(value) > MAX_POSITION_ITEMS:
        raise ContextError(
            400,
            "over_limit",
            f"{key} carries {len(value)} items, past the per-request limit of "
            f"{MAX_POSITION_ITEMS}; split the request",
        )
    return tuple(value) if value else None


def _bounded_bytes(what: str, text: str, ceiling: int) -> None:
    size = len(text.encode("utf-8"))
    if size > ceiling:
        raise ContextError(
            400, "over_limit", f"{what} is {size} bytes, past the limit of {ceiling} bytes"
        )


def over_limit(message: str) -> ContextError:
    return ContextError(400, "over_limit", message)


# The readers the other body modules (evidence_request, write_requests) share, so every
# route words a refusal the same way.
shape, invalid, argument, string, count, floor, bounded_bytes = (
    _shape, _invalid, _argument, _string, _count, _floor, _bounded_bytes,
)  # fmt: skip
