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
    plan = _Plan(present, stats, idfs, average)
    kept_ids, kept_scores = empty
    bar = -np.inf
    done, size = 0, _FIRST_CHUNK
    while done < len(plan.order) and plan.total[plan.order[done]] >= bar:
        chunk = [w for w in plan.order[done : done + size] if plan.total[w] >= bar]
        done, size = done + size, size * 2
        ids, scores = _score(conn, context, plan, chunk, bar)
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


class _Plan:
    """The query's terms with their idf, and per window the most each term can add there:
    the larger of the contribution at (largest tf, shortest length at that tf) and at
    (largest tf - 1, shortest length), which no posting of the window exceeds (a
    contribution grows with tf and shrinks with length). f64, widened by `_MARGIN`."""

    def __init__(
        self,
        present: list[str],
        stats: dict[str, np.ndarray],
        idfs: dict[str, np.float32],
        average: np.float32,
    ) -> None:
        self.terms, self.idfs, self.average = present, idfs, average
        windows = np.unique(np.concatenate([stats[t][:, 0] for t in present]))
        self.column = {int(w): i for i, w in enumerate(windows.tolist())}
        self.bound = np.zeros((len(present), len(windows)))
        for row, term in enumerate(present):
            rows = stats[term]
            top_tf = rows[:, 2].astype(np.float32)
            at_top = contributions(idfs[term], top_tf, rows[:, 4].astype(np.float32), average)
            below = contributions(
                idfs[term], top_tf - 1, rows[:, 3].astype(np.float32), average
            )  # zero where the largest tf is 1
            most = np.maximum(at_top, below).astype(np.float64)
            self.bound[row, np.searchsorted(windows, rows[:, 0])] = most
        self.bound *= 1.0 + _MARGIN + len(present) * 1e-6
        sums = self.bound.sum(axis=0) * (1.0 + _MARGIN)
        self.total = dict(zip(windows.tolist(), sums.tolist(), strict=True))
        self.order = [int(w) for w in windows[np.argsort(-sums, kind="stable")]]
        self.most = self.bound.max(axis=1)  # per term, over every window

    def essential(self, bar: float) -> list[bool]:
        """Per term (query order): False for the terms whose bounds summed stay below the
        bar (smallest first) — a paragraph carrying only those cannot reach the top."""
        flags = [True] * len(self.terms)
        spent = 0.0
        for row in np.argsort(self.most, kind="stable").tolist():
            spent += float(self.most[row])
            if spent * (1.0 + _MARGIN) >= bar:
                break
            flags[row] = False
        return flags


def _score(
    conn: sqlite3.Connection, context: int, plan: _Plan, chunk: list[int], bar: float
) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's paragraphs that can reach the bar, scored exactly: f32 zeros plus each
    term's contributions in query-term order (`bm25.score`'s operations). Candidates come
    from the essential terms' postings; one whose partial score plus the other terms'
    window bounds stays below the bar is dropped before their postings are read."""
    chunk = sorted(chunk)  # a term's windows in id order: their postings concatenate sorted
    flags = plan.essential(bar)
    first = [t for t, keep in zip(plan.terms, flags, strict=True) if keep]
    rest = [t for t, keep in zip(plan.terms, flags, strict=True) if not keep]
    found = _joined(postings.load(conn, context, first, chunk), first, chunk)
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    keys = np.unique(np.concatenate([part.paragraphs for part in found.values()]))
    if rest:
        ceiling = np.zeros(len(keys))
        for term, part in found.items():
            ceiling[np.searchsorted(keys, part.paragraphs)] += _added(plan, term, part)
        columns = [plan.column[w] for w in (keys >> postings.WINDOW_BITS).tolist()]
        rows = [plan.terms.index(t) for t in rest]
        ceiling += plan.bound[np.ix_(rows, columns)].sum(axis=0)
        keys = keys[ceiling * (1.0 + _MARGIN) >= bar]
        windows = sorted(set((keys >> postings.WINDOW_BITS).tolist()))
        found.update(_joined(postings.load(conn, context, rest, windows), rest, windows))
    scores = np.zeros(len(keys), np.float32)
    for term in plan.terms:
        part = found.get(term)
        if part is None:
            continue
        where = np.searchsorted(keys, part.paragraphs)
        hit = where < len(keys)
        hit[hit] = keys[where[hit]] == part.paragraphs[hit]
        scores[where[hit]] += _added(plan, term, part)[hit]
    return keys, scores


def _joined(
    found: dict[tuple[str, int], postings.Window], terms: list[str], windows: list[int]
) -> dict[str, postings.Window]:
    """Each term's postings over the (ascending) windows, as one id-ordered run."""
    joined = {}
    for term in terms:
        parts = [found[(term, w)] for w in windows if (term, w) in found]
        if len(parts) == 1:
            joined[term] = parts[0]
        elif parts:
            joined[term] = postings.Window(
                *(np.concatenate(column) for column in zip(*((p.paragraphs, p.tf, p.length)
                                                              for p in parts), strict=True))
            )  # fmt: skip
    return joined


def _added(plan: _Plan, term: str, part: postings.Window) -> np.ndarray:
    return contributions(plan.idfs[term], part.tf, part.length, plan.average)
