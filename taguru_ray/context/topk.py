"""The BM25 top k without scoring what cannot reach it: exact block-max over windows (ADR 0066).

Per query term, the rows' (count, largest tf, shortest length) give the df — so
the idf — and, per window, the most any posting there can add: the term's
contribution at (largest tf, shortest length), which no posting of the window
exceeds (the contribution grows with tf and shrinks with length). A window's
bound is the sum over the query terms. Windows are scored whole, best bound
first, in growing chunks, with `bm25.contributions` in query-term order — the
very f32 operations the scan of every posting made, so each score is the same
bits; after each chunk the k-th best score so far is the bar, and the search
stops when the next window's bound is below it: every paragraph not scored
then scores below the bar, so it can neither enter the top k nor tie at its
cut. Bounds are computed in f64 and widened by a margin far above f32 rounding
(`_MARGIN`), so a rounding step never prunes a paragraph that belongs.

A filter (tags, time) keeps only eligible paragraphs when the bar is set, so
the bar is the k-th best *eligible* score; the corpus statistics stay global.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from taguru_ray.context import postings
from taguru_ray.context.bm25 import average_length, contributions, idf

_MARGIN = 1e-4  # relative widening of a bound; f32 rounding is ~1e-7 per operation
_FIRST_CHUNK = 4  # windows scored before the first bar; doubled each round

# Which of these paragraph ids may answer (a tag/time filter), None when all may.
Eligible = Callable[[np.ndarray], np.ndarray]


def top(
    conn: sqlite3.Connection,
    context: int,
    terms: list[str],
    live: int,
    total_length: int,
    limit: int,
    eligible: Eligible | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(paragraph ids, f32 scores) of every paragraph scoring at least the `limit`-th best
    score (ties at the cut included; unordered), `terms` deduplicated in query order."""
    empty = np.zeros(0, np.int64), np.zeros(0, np.float32)
    if live == 0 or limit <= 0:
        return empty
    stats = {term: postings.windows(conn, context, term) for term in terms}
    present = [term for term in terms if len(stats[term])]
    if not present:
        return empty
    average = average_length(live, total_length)
    idfs = {t: idf(np.float32(live), np.float32(stats[t][:, 1].sum())) for t in present}
    order, bounds = _window_bounds(present, stats, idfs, average)
    kept_ids, kept_scores = empty
    bar = -np.inf
    done, size = 0, _FIRST_CHUNK
    while done < len(order) and bounds[done] >= bar:
        reach = bounds[done : done + size] >= bar
        chunk = order[done : done + size][reach].tolist()
        done, size = done + size, size * 2
        ids, scores = _score(conn, context, present, idfs, average, chunk)
        keep = scores >= bar
        ids, scores = ids[keep], scores[keep]
        if eligible is not None and len(ids):
            allowed = eligible(ids)
            ids, scores = ids[allowed], scores[allowed]
        kept_ids = np.concatenate([kept_ids, ids])
        kept_scores = np.concatenate([kept_scores, scores])
        if len(kept_scores) >= limit:
            bar = float(np.partition(kept_scores, len(kept_scores) - limit)[-limit])
            keep = kept_scores >= bar
            kept_ids, kept_scores = kept_ids[keep], kept_scores[keep]
    return kept_ids, kept_scores


def _window_bounds(
    present: list[str],
    stats: dict[str, np.ndarray],
    idfs: dict[str, np.float32],
    average: np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Windows holding any query term, best bound first, and their bounds (f64, widened)."""
    windows, most = [], []
    for term in present:
        rows = stats[term]
        windows.append(rows[:, 0])
        most.append(contributions(
            idfs[term], rows[:, 2].astype(np.float32), rows[:, 3].astype(np.float32), average
        ).astype(np.float64))  # fmt: skip
    keys, where = np.unique(np.concatenate(windows), return_inverse=True)
    bounds = np.bincount(where, weights=np.concatenate(most), minlength=len(keys))
    bounds *= 1.0 + _MARGIN + len(present) * 1e-6
    order = np.argsort(-bounds, kind="stable")
    return keys[order], bounds[order]


def _score(
    conn: sqlite3.Connection,
    context: int,
    present: list[str],
    idfs: dict[str, np.float32],
    average: np.float32,
    chunk: list[int],
) -> tuple[np.ndarray, np.ndarray]:
    """Every paragraph of the chunk's windows that a query term touches, scored exactly:
    f32 zeros plus each term's contributions in query-term order (`bm25.score`)."""
    found = postings.load(conn, context, present, chunk)
    parts = [(t, found[(t, w)]) for t in present for w in chunk if (t, w) in found]
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    keys, where = np.unique(np.concatenate([p.paragraphs for _, p in parts]), return_inverse=True)
    scores = np.zeros(len(keys), np.float32)
    start = 0
    for term, part in parts:
        end = start + len(part.paragraphs)
        scores[where[start:end]] += contributions(idfs[term], part.tf, part.length, average)
        start = end
    return keys, scores
