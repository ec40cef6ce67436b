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
_FIRST_CHUNK = 4  # windows scored before the first bar
_GROWTH = 4  # each later chunk is this many times the one before
# A read of some of the other terms before the rest is worth it when it may spare about
# this many rows (a row costs a few µs; a read's own numpy work, tens of µs).
_ROWS_PER_READ = 16

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
        done, size = done + size, size * _GROWTH
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
        self.windows = windows  # ascending: a window's column in `bound`
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
    from the essential terms' postings; the other terms are read only where a candidate
    is left (`_narrowed`)."""
    chunk = sorted(chunk)  # a term's windows in id order: their postings concatenate sorted
    flags = plan.essential(bar)
    first = [t for t, keep in zip(plan.terms, flags, strict=True) if keep]
    rest = [t for t, keep in zip(plan.terms, flags, strict=True) if not keep]
    found = postings.load(conn, context, first, chunk)
    if not found:
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    keys = _union([part.paragraphs for part in found.values()])
    if rest:
        keys = _narrowed(conn, context, plan, found, keys, rest, bar)
    scores = np.zeros(len(keys), np.float32)
    for term in plan.terms:
        part = found.get(term)
        if part is not None and len(keys):
            at, pick = _pairs(keys, part.paragraphs)
            scores[at] += _added(plan, term, part, pick)
    return keys, scores


def _narrowed(
    conn: sqlite3.Connection,
    context: int,
    plan: _Plan,
    found: dict[str, postings.Window],
    keys: np.ndarray,
    rest: list[str],
    bar: float,
) -> np.ndarray:
    """The candidate `keys` that can still reach the bar once the `rest` terms are read
    (into `found`), largest bound first, in the windows of the candidates left: one whose
    contributions read so far plus the unread terms' window bounds stay below the bar is
    dropped. Terms are read together while reading fewer of them first could spare few
    rows (`_ROWS_PER_READ`): a read's own work costs more than a few rows."""
    ceiling = np.zeros(len(keys))  # f64: each candidate's contributions read so far
    for term, part in found.items():
        ceiling[np.searchsorted(keys, part.paragraphs)] += _added(plan, term, part)
    columns = np.searchsorted(plan.windows, keys >> postings.WINDOW_BITS)
    rows = sorted((plan.terms.index(t) for t in rest), key=lambda row: -plan.most[row])
    # pending[i]: per candidate, the window bounds of rows[i:] summed (0 past the last)
    pending = np.zeros((len(rows) + 1, len(keys)))
    pending[:-1] = np.cumsum(plan.bound[np.ix_(rows[::-1], columns)], axis=0)[::-1]
    floor = bar / (1.0 + _MARGIN)  # a candidate whose ceiling stays below this is dropped
    alive = np.flatnonzero(ceiling + pending[0] >= floor)
    start = 0
    while start < len(rows) and len(alive):
        windows = np.unique(columns[alive])
        end = start + 1
        while (
            end < len(rows)
            and _spared(columns, alive[ceiling[alive] + pending[end, alive] >= floor], len(windows))
            * (len(rows) - end)
            < _ROWS_PER_READ
        ):
            end += 1  # reading rows[start:end] first could spare too few rows: read on
        ids = keys[alive]
        terms = [plan.terms[row] for row in rows[start:end]]
        chosen = plan.windows[windows].tolist()
        for term, part in postings.load(conn, context, terms, chosen).items():
            found[term] = part
            at, pick = _pairs(ids, part.paragraphs)
            ceiling[alive[at]] += _added(plan, term, part, pick)
        alive = alive[ceiling[alive] + pending[end, alive] >= floor]
        start = end
    return keys[alive]


def _spared(columns: np.ndarray, left: np.ndarray, windows: int) -> int:
    """How many of the `windows` hold none of the candidates `left`."""
    return windows - len(np.unique(columns[left]))


def _pairs(keys: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ids both sorted distinct arrays hold: (their places in `keys`, in `ids`),
    searching the longer array for the shorter one's ids."""
    if len(keys) <= len(ids):
        place = np.searchsorted(ids, keys)
        hit = place < len(ids)
        hit[hit] = ids[place[hit]] == keys[hit]
        return np.flatnonzero(hit), place[hit]
    place = np.searchsorted(keys, ids)
    hit = place < len(keys)
    hit[hit] = keys[place[hit]] == ids[hit]
    return place[hit], np.flatnonzero(hit)


def _union(runs: list[np.ndarray]) -> np.ndarray:
    """The sorted distinct ids of id-ordered runs."""
    if len(runs) == 1:
        return runs[0]
    ids = np.concatenate(runs)
    ids.sort()
    return ids[np.concatenate(([True], ids[1:] != ids[:-1]))]


def _added(
    plan: _Plan, term: str, part: postings.Window, pick: np.ndarray | None = None
) -> np.ndarray:
    """The term's contributions to its postings (those at `pick`): elementwise f32
    operations, so a subset gives the same bits as the whole."""
    tf, length = (part.tf, part.length) if pick is None else (part.tf[pick], part.length[pick])
    return contributions(
        plan.idfs[term], tf.astype(np.float32), length.astype(np.float32), plan.average
    )
