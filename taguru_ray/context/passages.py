"""Reading passages: `sources/search` ranking and `citations` (EVALUATE.md §1.2, §1.5, §2.4).

Search runs the BM25 lane over the store's postings and, when the store has an
embedding provider, the vector lane (`vector_rows.passage_lane`); its plan entry
says why it did not run otherwise (``no embedding provider is configured``, …).
When the vector lane ran, both lanes keep their pool (``max(4·limit, 50)``) and
a hit's score is their reciprocal-rank fusion, with each lane's rank and own
score under ``lanes``; when it did not, a hit's score is its raw BM25 score. A
tag/time filter decides once which sources may answer (tags any-of; ``[since,
until)`` on ``date`` else ``stored_at``), never the corpus statistics. Order:
score descending, source, paragraph; cut to ``limit``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from taguru_ray.context.bm25 import wire_f32
from taguru_ray.context.errors import ContextError, invalid_argument
from taguru_ray.context.terms import query_terms
from taguru_ray.context.topk import Eligible, top
from taguru_ray.context.vectors import NO_PROVIDER, LaneHit, LaneOutcome, fuse, idle, lane_pool

NO_TERMS = "the query yields no searchable terms"
ZERO_LIMIT = "the requested limit is 0"
MAX_LIMIT = 1000
MAX_FILTER_TAGS = 32
MAX_TAG_BYTES = 128
__all__ = ["NO_PROVIDER", "NO_TERMS", "ZERO_LIMIT", "citation", "markers", "search"]

# The vector lane of one search: (eligible source ids or None, pool) -> what it did.
VectorLane = Callable[[set[int] | None, int], LaneOutcome]


def search(
    conn: sqlite3.Connection,
    context: tuple[int, str, int, int],
    query: str,
    *,
    limit: int,
    tags: Sequence[str],
    since: int | None,
    until: int | None,
    vector_lane: VectorLane | None = None,
) -> dict[str, Any]:
    """`context` = (id, name, live paragraphs, their summed length)."""
    key, name, live, total_length = context
    if limit < 0:
        raise invalid_argument("limit must not be negative")
    limit = min(limit, MAX_LIMIT)
    _check_filter(tags, since, until)
    plan: dict[str, Any] = {"context": name}
    eligible: set[int] | None = None
    if tags or since is not None or until is not None:
        eligible, total = _eligible(conn, key, tags, since, until)
        plan["filter"] = {"eligible_sources": len(eligible), "total_sources": total}
    terms = query_terms(query)
    skipped = ZERO_LIMIT if limit == 0 else NO_TERMS if not terms else None
    if skipped is not None:
        plan["lanes"] = {"bm25": _idle(skipped), "vector": _idle(skipped)}
        return {"plan": {"contexts": [plan]}, "hits": []}
    pool = lane_pool(limit)
    vector = idle(NO_PROVIDER) if vector_lane is None else vector_lane(eligible, pool)
    plan["lanes"] = {"bm25": {"ran": True}, "vector": vector.plan}
    if vector.ran:
        found = _bm25(conn, key, terms, live, total_length, eligible, pool)
        hits = _fused(conn, key, found, vector.hits, limit)
        return {"plan": {"contexts": [plan]}, "hits": hits}
    found = _bm25(conn, key, terms, live, total_length, eligible, limit)
    hits = [
        {
            "source": source,
            "paragraph": index,
            "score": wire_f32(value),
            "text": text,
            "lanes": {"bm25": {"rank": rank, "score": wire_f32(value)}},
        }
        for rank, (value, source, index, text) in enumerate(found, start=1)
    ]
    return {"plan": {"contexts": [plan]}, "hits": hits}


def _fused(
    conn: sqlite3.Connection,
    context: int,
    bm25: list[tuple[np.float32, str, int, str]],
    vector: list[LaneHit],
    limit: int,
) -> list[dict[str, Any]]:
    """Reciprocal-rank fusion of the two lanes' pools, cut to `limit`."""
    texts = {(source, index): text for _, source, index, text in bm25}
    lexical = [LaneHit(source, index, value) for value, source, index, _ in bm25]
    fused = fuse({"bm25": lexical, "vector": vector})[:limit]
    missing = [(f.source, f.paragraph) for f in fused if (f.source, f.paragraph) not in texts]
    for source, index in missing:
        row = conn.execute(
            "SELECT g.text FROM paragraphs g JOIN sources s ON s.id = g.source"
            " WHERE s.context = ? AND s.name = ? AND g.idx = ?",
            (context, source, index),
        ).fetchone()
        texts[(source, index)] = "" if row is None else row[0]
    return [
        {
            "source": f.source,
            "paragraph": f.paragraph,
            "score": wire_f32(f.score),
            "text": texts[(f.source, f.paragraph)],
            "lanes": {
                lane: {"rank": rank, "score": wire_f32(value)}
                for lane, (rank, value) in f.lanes.items()
            },
        }
        for f in fused
    ]


def _idle(reason: str) -> dict[str, Any]:
    return {"ran": False, "reason": reason}


def _check_filter(tags: Sequence[str], since: int | None, until: int | None) -> None:
    if len(set(tags)) > MAX_FILTER_TAGS:
        raise invalid_argument(f"at most {MAX_FILTER_TAGS} distinct tags may be given")
    for tag in tags:
        if not isinstance(tag, str) or len(tag.encode("utf-8")) > MAX_TAG_BYTES:
            raise invalid_argument(f"a tag is a string of at most {MAX_TAG_BYTES} bytes")
    if since is not None and until is not None and since >= until:
        raise invalid_argument(f"since ({since}) must be before until ({until})")


def _eligible(
    conn: sqlite3.Connection,
    context: int,
    tags: Sequence[str],
    since: int | None,
    until: int | None,
) -> tuple[set[int], int]:
    wanted = set(tags)
    eligible: set[int] = set()
    total = 0
    for key, stamp, raw in conn.execute(
        "SELECT id, coalesce(date, stored_at), tags FROM sources"
        " WHERE context = ? AND has_passage = 1",
        (context,),
    ):
        total += 1
        if wanted and not wanted.intersection(json.loads(raw)):
            continue
        if since is not None or until is not None:
            if stamp is None:
                continue
            if (since is not None and stamp < since) or (until is not None and stamp >= until):
                continue
        eligible.add(key)
    return eligible, total


def _bm25(
    conn: sqlite3.Connection,
    context: int,
    terms: list[str],
    live: int,
    total_length: int,
    eligible: set[int] | None,
    limit: int,
) -> list[tuple[np.float32, str, int, str]]:
    """The top `limit` (score, source, paragraph, text), ties broken by source, paragraph.
    `topk.top` scores only the windows that can reach the top (ADR 0066)."""
    allowed = None if eligible is None else _owned_by(conn, eligible)
    keys, scores = top(conn, context, terms, live, total_length, limit, allowed)
    if not len(keys):
        return []
    chosen = keys.tolist()  # every tie at the cut, ordered below by name
    by_key = dict(zip(chosen, scores.tolist(), strict=True))
    found = []
    for start in range(0, len(chosen), 500):
        batch = chosen[start : start + 500]
        marks = ",".join("?" * len(batch))
        for key, source, index, text in conn.execute(
            "SELECT g.id, s.name, g.idx, g.text FROM paragraphs g JOIN sources s"
            f" ON s.id = g.source WHERE g.id IN ({marks})",
            batch,
        ):
            found.append((np.float32(by_key[key]), source, index, text))
    found.sort(key=lambda hit: (-hit[0], hit[1], hit[2]))
    return found[:limit]


def _owned_by(conn: sqlite3.Connection, sources: set[int]) -> Eligible:
    """Which paragraph ids belong to one of `sources` (looked up only for the paragraphs
    that reach the bar)."""

    def allowed(ids: np.ndarray) -> np.ndarray:
        owner: dict[int, int] = {}
        listed = ids.tolist()
        for start in range(0, len(listed), 500):
            batch = listed[start : start + 500]
            marks = ",".join("?" * len(batch))
            owner.update(conn.execute(
                f"SELECT id, source FROM paragraphs WHERE id IN ({marks})", batch
            ).fetchall())  # fmt: skip
        return np.array([owner.get(key) in sources for key in listed], dtype=bool)

    return allowed


def citation(conn: sqlite3.Connection, context: int, source: str, paragraph: int) -> dict[str, Any]:
    """One paragraph's text with its section (nearest marker at or before) and its locator."""
    if not source:
        raise invalid_argument("source must not be empty")
    if isinstance(paragraph, bool) or not isinstance(paragraph, int) or paragraph < 0:
        raise invalid_argument("paragraph must be an integer from 0")
    row = conn.execute(
        "SELECT id FROM sources WHERE context = ? AND name = ? AND has_passage = 1",
        (context, source),
    ).fetchone()
    if row is None:
        raise ContextError(404, "no_source", f"source '{source}' has no stored passage")
    found = conn.execute(
        "SELECT text FROM paragraphs WHERE source = ? AND idx = ?", (row[0], paragraph)
    ).fetchone()
    if found is None:
        count = conn.execute("SELECT count(*) FROM paragraphs WHERE source = ?", (row[0],))
        message = (
            f"source '{source}' has {count.fetchone()[0]} paragraph(s); {paragraph} is not one"
        )
        raise ContextError(404, "no_paragraph", message)
    return {"text": found[0], "source": source, **markers(conn, row[0], paragraph)}


def markers(conn: sqlite3.Connection, source: int, paragraph: int) -> dict[str, Any]:
    """`section` (nearest section marker at or before the paragraph) and `locator` (exact)."""
    section = conn.execute(
        "SELECT section FROM sections WHERE source = ? AND paragraph <= ?"
        " ORDER BY paragraph DESC LIMIT 1",
        (source, paragraph),
    ).fetchone()
    locator = conn.execute(
        "SELECT kind, value FROM locators WHERE source = ? AND paragraph = ?", (source, paragraph)
    ).fetchone()
    return {
        "section": None if section is None else section[0],
        "locator": None if locator is None else {"kind": locator[0], "value": locator[1]},
    }
