"""The vector side's arithmetic and wording, over values only (EVALUATE.md §2.2, §2.4).

- Vectors are float32, unit length (`embeddings.normalise`), stored as little-endian
  blobs; a cosine is a dot product, computed in f32.
- The passage lane scores every stored row (a paragraph's text, each of its questions)
  and keeps each paragraph's best row; rows under the floor drop out; the lane ranks
  score descending, then source, then paragraph, and keeps its pool,
  ``max(4·limit, 50)``.
- Fusion, when the vector lane ran: a hit's score is the f32 sum over the lanes that
  ranked it of ``1 / (60 + rank)``; ties by source, then paragraph.
- Resolve's semantic tier (only when the lexical best is under 0.5 or there is none):
  the 5 best glosses at or over the floor; merged after the lexical candidates (already
  cut to `limit`), names already there skipped; trimming to `limit` removes from the
  END OF THE LEXICAL segment first.
- A gloss is a name and its heaviest live facts as minimal sentences
  (``名前。AのBはC。…``, a negative as ``…ではない。``; a subject that is the gloss's own
  concept or the previous sentence's is not restated): a concept's 4 heaviest facts in
  either direction, a label's 3 heaviest example triples; heaviest by |sum|, ties by
  insertion order. The text the semantic tier embeds is the text a reader could check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NO_PROVIDER = "no embedding provider is configured"
RRF_K = 60
LANE_POOL_FLOOR = 50
SEMANTIC_LIMIT = 5
LEXICAL_CONFIDENCE = 0.5
GLOSS_FACTS = 4
GLOSS_EXAMPLES = 3
_ONE = np.float32(1.0)


def encode(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def decode(blobs: Sequence[bytes], width: int) -> np.ndarray:
    """Stored blobs as a (len(blobs), width) float32 matrix."""
    if not blobs:
        return np.zeros((0, width), np.float32)
    return np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), width).astype(np.float32)


def lane_pool(limit: int) -> int:
    return max(4 * limit, LANE_POOL_FLOOR)


def best_per_paragraph(scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each paragraph's best row score; rows are grouped by paragraph, `starts` holds
    each group's first row."""
    if not len(starts):
        return np.zeros(0, np.float32)
    return np.maximum.reduceat(scores.astype(np.float32), starts)


def rank_lane(
    scores: np.ndarray, order_rank: np.ndarray, keep: np.ndarray, pool: int
) -> np.ndarray:
    """Indices of the kept candidates, best first, ties by `order_rank` (the position of
    (source, paragraph) in byte order), cut to `pool`."""
    chosen = np.flatnonzero(keep)
    order = np.lexsort((order_rank[chosen], -scores[chosen]))
    return chosen[order[:pool]]


@dataclass(frozen=True)
class LaneHit:
    source: str
    paragraph: int
    score: np.float32  # the lane's own score: BM25, or the best row's cosine


@dataclass(frozen=True)
class LaneOutcome:
    """What the vector lane did: its plan entry (`{"ran": true, "floor"}` or `{"ran":
    false, "reason"}`) and, when it ran, its ranked pool."""

    plan: dict[str, Any]
    hits: list[LaneHit] = field(default_factory=list)

    @property
    def ran(self) -> bool:
        return bool(self.plan.get("ran"))


def idle(reason: str) -> LaneOutcome:
    return LaneOutcome({"ran": False, "reason": reason})


@dataclass
class Fused:
    source: str
    paragraph: int
    score: np.float32 = field(default_factory=lambda: np.float32(0.0))
    lanes: dict[str, tuple[int, np.float32]] = field(default_factory=dict)  # lane -> rank, score


def rrf(rank: int) -> np.float32:
    return _ONE / np.float32(RRF_K + rank)


def fuse(lanes: Mapping[str, Sequence[LaneHit]]) -> list[Fused]:
    """Reciprocal-rank fusion of ranked lanes (ranks from 1, in the mapping's lane order),
    best first, ties by source then paragraph."""
    found: dict[tuple[str, int], Fused] = {}
    for lane, hits in lanes.items():
        for rank, hit in enumerate(hits, start=1):
            key = (hit.source, hit.paragraph)
            fused = found.get(key)
            if fused is None:
                fused = found[key] = Fused(hit.source, hit.paragraph)
            fused.score = np.float32(fused.score + rrf(rank))
            fused.lanes[lane] = (rank, hit.score)
    return sorted(found.values(), key=lambda f: (-f.score, f.source, f.paragraph))


def top_glosses(
    names: Sequence[str], scores: np.ndarray, floor: float, limit: int = SEMANTIC_LIMIT
) -> list[tuple[str, np.float32]]:
    """The `limit` best names at or over the floor, ties by name."""
    keep = [(np.float32(s), n) for n, s in zip(names, scores.tolist(), strict=True) if s >= floor]
    keep.sort(key=lambda pair: (-pair[0], pair[1]))
    return [(name, score) for score, name in keep[:limit]]


def needs_semantic(lexical: Sequence[Any]) -> bool:
    """The semantic tier runs when the lexical tier found nothing or only fragments."""
    return not lexical or lexical[0]["score"] < LEXICAL_CONFIDENCE


def merge_tiers(
    lexical: Sequence[dict[str, Any]], semantic: Sequence[dict[str, Any]], limit: int
) -> list[dict[str, Any]]:
    """Lexical candidates (cut to `limit`) first, then semantic ones whose name is not
    among them; over `limit`, the lexical segment's tail goes first."""
    lexical = list(lexical[: max(0, limit)])
    seen = {c["name"] for c in lexical}
    extra = [c for c in semantic if c["name"] not in seen]
    over = len(lexical) + len(extra) - max(0, limit)
    if over > 0:
        cut = min(over, len(lexical))
        lexical = lexical[: len(lexical) - cut]
        extra = extra[: max(0, limit)]
    return [*lexical, *extra]


@dataclass(frozen=True)
class Fact:
    """One live edge as a gloss reads it."""

    edge: int  # insertion order
    subject: str
    label: str
    object: str
    sum: float


def heaviest(facts: Sequence[Fact], keep: int) -> list[Fact]:
    return sorted(facts, key=lambda f: (-abs(f.sum), f.edge))[:keep]


def gloss_text(name: str, facts: Sequence[Fact], own: str | None) -> str:
    """``name。`` then one sentence per fact, in the order given."""
    parts = [name, "。"]
    previous: str | None = None
    for fact in facts:
        if fact.subject != own and fact.subject != previous:
            parts += [fact.subject, "の"]
        previous = fact.subject
        parts += [fact.label, "は", fact.object, "ではない" if fact.sum < 0 else "", "。"]
    return "".join(parts)
