"""Evidence selection: fuse the lanes' candidates, then admit them under a budget.

Pure values in, the package's `items`/`citations`/`budget`/`omitted` out (ADR 0006
§7-§10 of the reference, ADR 0063 here):

- **fuse**: candidates sharing a `candidate_id` merge (their origins pooled, the best
  rank per lane kept); score = Σ 1/(60 + rank) over lanes; order score desc, kind,
  canonical key. Only ranks cross lanes, never raw scores.
- **near-duplicate passages** (character-bigram Dice ≥ 0.9 of the normalized text)
  are omitted `duplicate_passage`, naming the kept one.
- **contradiction groups**: associations sharing (subject, label) are one admission
  unit — all in or all out — and each names the others in `contradicts`.
- **diversity**: within each tier of max(1, max_items / 4) units, units whose source
  is new come before repeats.
- **budget**: units are admitted in that order while items ≤ max_items, bytes ≤
  max_bytes and tokens ≤ max_tokens hold; a unit that does not fit is skipped, not a
  stop. Bytes are the compact JSON of the `items` and `citations` arrays; tokens are
  one per ASCII character and four per other character, over four, rounded up.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from taguru_ray.context.normalize import normalize_entry

RRF_K = 60.0
NEAR_DUPLICATE_DICE = 0.9
MAX_LISTED_OMITTED = 20  # the reference's MAX_LISTED_ISSUES; omitted_total counts all
BUDGET_EXCEEDED = "budget_exceeded"
GROUP_EXCEEDS_BUDGET = "contradiction_group_exceeds_budget"
DUPLICATE_PASSAGE = "duplicate_passage"

Origin = tuple[str, int]


@dataclass
class Candidate:
    """One piece of evidence from one lane, with its provenance."""

    kind: str  # association | passage
    canonical_key: str
    source: str | None  # a passage's own source; an association's heaviest attribution's
    lane: str
    lane_rank: int  # 1-based within the lane
    payload: dict[str, Any]  # the wire AssociationOut or PassageHit
    origins: set[Origin] = field(default_factory=set)

    @property
    def candidate_id(self) -> str:
        return f"{self.kind}\0{self.canonical_key}"


@dataclass
class Fused:
    candidate: Candidate
    lane_ranks: list[dict[str, Any]]
    fused_rank: int


@dataclass(frozen=True)
class Limits:
    max_items: int
    max_bytes: int
    max_tokens: int


def measure(value: Any) -> tuple[int, int]:
    """(bytes, quarter-tokens) of `value`'s compact JSON, non-ASCII raw as serde writes it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return len(text.encode("utf-8")), sum(1 if ord(ch) < 128 else 4 for ch in text)


def tokens(quarters: int) -> int:
    return -(-quarters // 4)


def array_overhead(length: int) -> int:
    return 2 + max(0, length - 1)


def fuse(pool: list[Candidate]) -> tuple[list[Fused], int]:
    """Merge candidates by id; return them in fused order and how many merged away."""
    groups: dict[str, tuple[Candidate, dict[str, int]]] = {}
    for candidate in pool:
        found = groups.get(candidate.candidate_id)
        if found is None:
            groups[candidate.candidate_id] = (candidate, {candidate.lane: candidate.lane_rank})
            continue
        representative, ranks = found
        ranks[candidate.lane] = min(
            ranks.get(candidate.lane, candidate.lane_rank), candidate.lane_rank
        )
        merged = representative.origins | candidate.origins
        if (candidate.lane_rank, candidate.lane) < (representative.lane_rank, representative.lane):
            representative = candidate
        representative.origins = merged
        groups[candidate.candidate_id] = (representative, ranks)
    scored = [
        (sum(1.0 / (RRF_K + rank) for rank in ranks.values()), candidate, ranks)
        for candidate, ranks in groups.values()
    ]
    scored.sort(key=lambda s: (-s[0], s[1].kind, s[1].canonical_key))
    fused = [
        Fused(candidate, [{"lane": lane, "rank": ranks[lane]} for lane in sorted(ranks)], index)
        for index, (_, candidate, ranks) in enumerate(scored, start=1)
    ]
    return fused, len(pool) - len(groups)


def _bigrams(text: str) -> set[tuple[str, str]]:
    chars = normalize_entry(text)
    if len(chars) < 2:
        return {(c, c) for c in chars}
    return set(itertools.pairwise(chars))


def _near_duplicate(a: set[tuple[str, str]], b: set[tuple[str, str]]) -> bool:
    if not a and not b:
        return True
    return 2 * len(a & b) / (len(a) + len(b)) >= NEAR_DUPLICATE_DICE


def _omit(candidate: Candidate, reason: str, duplicate_of: str | None = None) -> dict[str, Any]:
    entry = {"candidate_id": candidate.candidate_id, "kind": candidate.kind, "reason": reason}
    if duplicate_of is not None:
        entry["duplicate_of"] = duplicate_of
    return entry


def _units(survivors: list[Fused]) -> tuple[list[list[int]], dict[int, list[str]]]:
    """Admission units in fused order (a contradiction group is one unit, placed at its
    first member) and each group member's `contradicts` ids."""
    groups: dict[tuple[str, str], list[int]] = {}
    for index, fused in enumerate(survivors):
        payload = fused.candidate.payload
        if fused.candidate.kind == "association":
            groups.setdefault((payload["subject"], payload["label"]), []).append(index)
    contradicts: dict[int, list[str]] = {}
    units: list[list[int]] = []
    consumed: set[int] = set()
    for index, fused in enumerate(survivors):
        if index in consumed:
            continue
        payload = fused.candidate.payload
        members = [index]
        if fused.candidate.kind == "association":
            members = groups[(payload["subject"], payload["label"])]
        if len(members) > 1:
            ids = [survivors[i].candidate.candidate_id for i in members]
            for i in members:
                contradicts[i] = sorted(x for x in ids if x != survivors[i].candidate.candidate_id)
        consumed.update(members)
        units.append(members)
    return units, contradicts


def _diversify(units: list[list[int]], survivors: list[Fused], width: int) -> list[list[int]]:
    seen: set[str] = set()
    ordered: list[list[int]] = []
    for start in range(0, len(units), width):
        novel, repeat, fresh = [], [], set()
        for unit in units[start : start + width]:
            source = survivors[unit[0]].candidate.source
            if source is None:
                novel.append(unit)
            elif source in seen or source in fresh:
                repeat.append(unit)
            else:
                fresh.add(source)
                novel.append(unit)
        seen |= fresh
        ordered += novel + repeat
    return ordered


def _item(
    fused: Fused, contradicts: list[str], citations: Mapping[Origin, dict[str, Any]]
) -> dict[str, Any]:
    candidate = fused.candidate
    refs: list[Origin] = []
    if candidate.kind == "association":
        refs = sorted(origin for origin in candidate.origins if origin in citations)
    citation_refs = [{"source": s, "paragraph": p} for s, p in refs]
    item: dict[str, Any] = {
        "candidate_id": candidate.candidate_id,
        "kind": candidate.kind,
        "fused_rank": fused.fused_rank,
        "lane_ranks": fused.lane_ranks,
        "citation_refs": citation_refs,
    }
    if candidate.kind == "association":
        sources = sorted({a["source"] for a in candidate.payload["attributions"]})
        if sources:
            item["corroboration"] = {"sources": sources, "attributions": citation_refs}
    if contradicts:
        item["contradicts"] = contradicts
    item[candidate.kind] = candidate.payload
    return item


def select(
    fused: list[Fused],
    dedup_dropped: int,
    limits: Limits,
    citations: Mapping[Origin, dict[str, Any]],
) -> dict[str, Any]:
    """The package's items, citations, budget, omitted and selection plan."""
    survivors: list[Fused] = []
    omitted: list[dict[str, Any]] = []
    kept: list[tuple[str, set[tuple[str, str]]]] = []
    for entry in fused:
        if entry.candidate.kind != "passage":
            survivors.append(entry)
            continue
        grams = _bigrams(entry.candidate.payload["text"])
        twin = next((cid for cid, other in kept if _near_duplicate(other, grams)), None)
        if twin is None:
            kept.append((entry.candidate.candidate_id, grams))
            survivors.append(entry)
        else:
            omitted.append(_omit(entry.candidate, DUPLICATE_PASSAGE, twin))
    units, contradicts = _units(survivors)
    width = max(1, limits.max_items // 4)
    items: list[dict[str, Any]] = []
    chosen: dict[Origin, dict[str, Any]] = {}
    used = {"items": 0, "bytes": 0, "quarters": 0, "citations": 0}
    for unit in _diversify(units, survivors, width):
        prepared = [_item(survivors[i], contradicts.get(i, []), citations) for i in unit]
        sizes = [measure(item) for item in prepared]
        new: dict[Origin, dict[str, Any]] = {}
        for item in prepared:
            for ref in item["citation_refs"]:
                origin = (ref["source"], ref["paragraph"])
                if origin not in chosen and origin not in new:
                    new[origin] = {
                        "source": origin[0],
                        "paragraph": origin[1],
                        "citation": citations[origin],
                    }
        cite_sizes = [measure(entry) for entry in new.values()]
        count = used["items"] + len(prepared)
        frame = array_overhead(count) + array_overhead(used["citations"] + len(new))
        size = used["bytes"] + sum(b for b, _ in sizes) + sum(b for b, _ in cite_sizes)
        quarters = used["quarters"] + sum(q for _, q in sizes) + sum(q for _, q in cite_sizes)
        if not (
            count <= limits.max_items
            and frame + size <= limits.max_bytes
            and tokens(frame + quarters) <= limits.max_tokens
        ):
            reason = GROUP_EXCEEDS_BUDGET if len(unit) > 1 else BUDGET_EXCEEDED
            omitted += [_omit(survivors[i].candidate, reason) for i in unit]
            continue
        used = {
            "items": count,
            "bytes": size,
            "quarters": quarters,
            "citations": used["citations"] + len(new),
        }
        chosen.update(new)
        for item, (item_bytes, item_quarters) in zip(prepared, sizes, strict=True):
            item["bytes"] = item_bytes
            item["estimated_tokens"] = tokens(item_quarters)
            items.append(item)
    frame = array_overhead(used["items"]) + array_overhead(used["citations"])
    by_reason: dict[str, int] = {}
    for left_out in omitted:
        by_reason[left_out["reason"]] = by_reason.get(left_out["reason"], 0) + 1
    return {
        "items": items,
        "citations": [chosen[origin] for origin in sorted(chosen)],
        "budget": {
            "items_used": used["items"],
            "bytes_used": frame + used["bytes"],
            "tokens_used": tokens(frame + used["quarters"]),
            "limits": {
                "max_items": limits.max_items,
                "max_bytes": limits.max_bytes,
                "max_tokens": limits.max_tokens,
            },
        },
        "omitted": omitted[:MAX_LISTED_OMITTED],
        "omitted_total": len(omitted),
        "omitted_by_reason": dict(sorted(by_reason.items())),
        "selection": {
            "contradiction_groups": sum(1 for unit in units if len(unit) > 1),
            "dedup_dropped": dedup_dropped,
            "diversity_tier_width": width,
        },
    }
