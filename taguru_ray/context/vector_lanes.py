"""The lanes that score against the store's vectors (ADR 0033): a search's vector lane
(EVALUATE.md §2.4) and resolve's semantic tier (§2.2), each gated as the reference gates
it, with the reference's reason when it does not run. Both score a float32 matrix held
in memory per context, rebuilt when the passages or the vectors changed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from taguru_ray.context.bm25 import wire_f32
from taguru_ray.context.embeddings import Embedder, EmbeddingsError
from taguru_ray.context.vector_rows import GLOSSES, PASSAGES, model_of
from taguru_ray.context.vectors import (
    NO_PROVIDER,
    LaneHit,
    LaneOutcome,
    best_per_paragraph,
    decode,
    idle,
    rank_lane,
    top_glosses,
)

PASSAGES_OFF = "passage embedding is off (TAGURU_EMBED_PASSAGES)"
NO_VECTORS = "no paragraph vectors exist yet — the embedding refresh has not covered this context"


def query_failed(error: str) -> str:
    return f"the query embedding failed: {error}"


def model_changed(stored: str, current: str) -> str:
    return (
        f"stored vectors belong to model '{stored}' but the provider is '{current}' — they "
        "are never served, and the next refresh re-embeds"
    )


def width_changed(stored: int, current: int) -> str:
    return (
        f"stored vectors are {stored}-dimensional but the model now answers {current} (a "
        "dimensions setting changed behind its name) — they are never served, and the next "
        "refresh re-embeds"
    )


@dataclass(frozen=True)
class PassageMatrix:
    """A context's paragraph rows, grouped by paragraph."""

    matrix: np.ndarray  # (rows, width) float32
    starts: np.ndarray  # each paragraph's first row
    sources: np.ndarray  # source ids, per paragraph
    names: list[str]  # source names, per paragraph
    indices: list[int]  # paragraph indices
    order_rank: np.ndarray  # position of (source name, paragraph) in byte order


@dataclass(frozen=True)
class GlossMatrix:
    names: list[str]
    matrix: np.ndarray


class MatrixCache:
    """The latest matrix per (context, kind), keyed by the revisions that invalidate it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[tuple[int, str], tuple[tuple[int, ...], Any]] = {}

    def get(self, context: int, kind: str, version: tuple[int, ...],
            load: Callable[[], Any]) -> Any:  # fmt: skip
        with self._lock:
            held = self._held.get((context, kind))
        if held is not None and held[0] == version:
            return held[1]
        value = load()
        with self._lock:
            self._held[(context, kind)] = (version, value)
        return value


def load_passages(conn: sqlite3.Connection, context: int, width: int) -> PassageMatrix:
    rows = conn.execute(
        "SELECT v.paragraph, v.vector, g.idx, s.id, s.name FROM passage_vectors v"
        " JOIN paragraphs g ON g.id = v.paragraph JOIN sources s ON s.id = g.source"
        " WHERE v.context = ? ORDER BY v.paragraph, v.row",
        (context,),
    ).fetchall()
    rows = [r for r in rows if len(r[1]) == 4 * width]
    keys = np.array([r[0] for r in rows], dtype=np.int64)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if len(keys) else keys
    firsts = [rows[i] for i in starts.tolist()]
    names, indices = [r[4] for r in firsts], [r[2] for r in firsts]
    by_name = sorted(range(len(firsts)), key=lambda i: (names[i], indices[i]))
    order_rank = np.empty(len(firsts), np.int64)
    order_rank[by_name] = np.arange(len(firsts))
    return PassageMatrix(
        decode([r[1] for r in rows], width),
        starts,
        np.array([r[3] for r in firsts], dtype=np.int64),
        names,
        indices,
        order_rank,
    )


def load_glosses(conn: sqlite3.Connection, context: int, kind: str, width: int) -> GlossMatrix:
    rows = conn.execute(
        "SELECT n.name, v.vector FROM gloss_vectors v JOIN names n ON n.id = v.name"
        " WHERE v.context = ? AND n.kind = ? ORDER BY n.name",
        (context, kind),
    ).fetchall()
    rows = [r for r in rows if len(r[1]) == 4 * width]
    return GlossMatrix([r[0] for r in rows], decode([r[1] for r in rows], width))


@dataclass(frozen=True)
class Lane:
    """What the vector lane of one search needs besides the connection."""

    embedder: Embedder | None
    cache: MatrixCache
    context: int
    passages_revision: int
    floor: float


def passage_lane(
    conn: sqlite3.Connection, lane: Lane, query: str, eligible: set[int] | None, pool: int
) -> LaneOutcome:
    """The vector lane of `sources/search` (EVALUATE.md §2.4), gated as the reference
    gates it, each refusal with its reason."""
    embedder = lane.embedder
    if embedder is None:
        return idle(NO_PROVIDER)
    if not embedder.config.passages:
        return idle(PASSAGES_OFF)
    record = model_of(conn, lane.context, PASSAGES)
    has_rows = conn.execute(
        "SELECT 1 FROM passage_vectors WHERE context = ? LIMIT 1", (lane.context,)
    ).fetchone()
    if record is None or not record.width or has_rows is None:
        return idle(NO_VECTORS)
    if record.model != embedder.model:
        return idle(model_changed(record.model, embedder.model))
    try:
        cue = embedder.embed([query])[0]
    except EmbeddingsError as error:
        return idle(query_failed(str(error)))
    if len(cue) != record.width:
        return idle(width_changed(record.width, len(cue)))
    found = lane.cache.get(
        lane.context, PASSAGES, (lane.passages_revision, record.revision),
        lambda: load_passages(conn, lane.context, record.width),
    )  # fmt: skip
    best = best_per_paragraph(found.matrix @ cue, found.starts)
    keep = best >= np.float32(lane.floor)
    if eligible is not None:
        keep &= np.isin(found.sources, np.fromiter(eligible, np.int64, len(eligible)))
    chosen = rank_lane(best, found.order_rank, keep, pool)
    hits = [LaneHit(found.names[i], found.indices[i], np.float32(best[i])) for i in chosen]
    return LaneOutcome({"ran": True, "floor": wire_f32(lane.floor)}, hits)


def semantic_candidates(
    conn: sqlite3.Connection, lane: Lane, kind: str, cue: str
) -> list[dict[str, Any]]:
    """Resolve's semantic tier: the 5 nearest glosses of the namespace at or over the
    floor, `[{name, score, tier: "semantic"}]`. Empty without a provider, without gloss
    vectors of the provider's model or of the cue's width. Raises `EmbeddingsError`."""
    embedder = lane.embedder
    if embedder is None or not cue.strip():
        return []
    record = model_of(conn, lane.context, GLOSSES)
    if record is None or not record.width or record.model != embedder.model:
        return []
    found = lane.cache.get(
        lane.context, kind, (record.revision,),
        lambda: load_glosses(conn, lane.context, kind, record.width),
    )  # fmt: skip
    if not found.names:
        return []
    vector = embedder.embed([cue])[0]
    if len(vector) != record.width:
        return []
    return [
        {"name": name, "score": wire_f32(score), "tier": "semantic"}
        for name, score in top_glosses(found.names, found.matrix @ vector, lane.floor)
    ]
