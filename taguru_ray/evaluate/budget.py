"""Equal budgets for both modes: what ``--max-items/--max-bytes/--max-tokens`` mean.

``--assembly`` sends the limits to ``POST …/evidence``, whose package reports
what it used. A baseline run given a budget flag truncates its passage hits to
the same three ceilings with the server's own accounting, so the two modes are
compared at equal cost: each hit is measured as the evidence item envelope it
would be (its compact JSON: bytes, and tokens estimated as one per four ASCII
characters and one per other character), an empty citations array is paid for
as an assembled package pays it, and a hit that does not fit is skipped, not a
stop — a smaller later hit may still fit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_ITEMS, DEFAULT_BYTES, DEFAULT_TOKENS = 40, 65536, 4000
CEILING_ITEMS, CEILING_BYTES = 1000, 1024 * 1024
# The lane names an evidence item gives the passage lanes' ranks.
LANE_NAMES = {"bm25": "passage_bm25", "vector": "passage_vector"}


@dataclass(frozen=True)
class Limits:
    max_items: int
    max_bytes: int
    max_tokens: int

    @classmethod
    def resolve(cls, items: int | None, bytes_: int | None, tokens: int | None) -> Limits:
        """Unnamed ceilings take the server's defaults; named ones its ceilings at most."""
        return cls(
            min(items if items is not None else DEFAULT_ITEMS, CEILING_ITEMS),
            min(bytes_ if bytes_ is not None else DEFAULT_BYTES, CEILING_BYTES),
            tokens if tokens is not None else DEFAULT_TOKENS,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "max_items": self.max_items,
            "max_bytes": self.max_bytes,
            "max_tokens": self.max_tokens,
        }


def array_overhead(length: int) -> int:
    """``[``, ``]`` and the commas of a compact JSON array of `length` elements."""
    return 2 + max(0, length - 1)


def measure(value: Any) -> tuple[int, int]:
    """(bytes, quarter-tokens) of `value`'s compact JSON. Quarters keep the sum exact."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8")), sum(1 if ord(ch) < 128 else 4 for ch in text)


def tokens(quarters: int) -> int:
    return -(-quarters // 4)


def passage_envelope(context: str, hit: Mapping[str, Any], rank: int) -> dict[str, Any]:
    """The evidence item a passage hit (as ``sources/search`` returned it) would be."""
    lanes = hit.get("lanes") or {}
    return {
        "candidate_id": f"passage\0{context}\0{hit['source']}\0{hit['paragraph']}",
        "kind": "passage",
        "fused_rank": rank,
        "lane_ranks": [
            {"lane": LANE_NAMES[name], "rank": lane["rank"]}
            for name, lane in lanes.items()
            if name in LANE_NAMES
        ],
        "citation_refs": [],
        "passage": dict(hit),
    }


@dataclass(frozen=True)
class Truncated:
    hits: list[Mapping[str, Any]]
    usage: dict[str, Any]  # {items_used, bytes_used, tokens_used, limits}
    omitted_total: int


def truncate(context: str, hits: Sequence[Mapping[str, Any]], limits: Limits) -> Truncated:
    """The hits that fit `limits`, in rank order, skipping (never stopping at) one that
    does not."""
    empty_citations = array_overhead(0)
    admitted: list[Mapping[str, Any]] = []
    used_bytes = used_quarters = omitted = 0
    for rank, hit in enumerate(hits, start=1):
        size, quarters = measure(passage_envelope(context, hit, rank))
        count = len(admitted) + 1
        frame = array_overhead(count) + empty_citations
        fits = (
            count <= limits.max_items
            and frame + used_bytes + size <= limits.max_bytes
            and tokens(frame + used_quarters + quarters) <= limits.max_tokens
        )
        if fits:
            admitted.append(hit)
            used_bytes += size
            used_quarters += quarters
        else:
            omitted += 1
    frame = array_overhead(len(admitted)) + empty_citations
    usage = {
        "items_used": len(admitted),
        "bytes_used": frame + used_bytes,
        "tokens_used": tokens(frame + used_quarters),
        "limits": limits.to_json(),
    }
    return Truncated(admitted, usage, omitted)
