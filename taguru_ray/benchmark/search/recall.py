"""recall@k and MRR of one model's hits against a case's expectations (BENCHMARK.md §3.3).

Two halves, so a case warns once however many models it is searched against:
`expected_items` resolves the case against the results directory's segments (once
per case, with its warnings), `score` reads one model's hits (no warnings).

A source expectation is resolved to a segment path — exactly, else by
`segment_id`, else by a unique path suffix — because a hit's ``source`` is always a
manifest path (the corpus rewrite touches only ``context``). One that resolves to
nothing, or to several, is kept literally: it stays in the denominator (the eval
file decides what counts) and is warned about, so the miss is not silent. A concept
expectation matches a hit whose text contains it, both folded by `normalize_term`;
only the hits already fetched are read — one search per case per model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.benchmark.compare.identity import normalize_term
from taguru_ray.benchmark.compare.manifest import SegmentInfo
from taguru_ray.evalset import Case


@dataclass(frozen=True)
class SourceItem:
    path: str
    paragraphs: tuple[int, ...]  # empty: any paragraph of the source

    def matches(self, hit: dict[str, Any], _folded_text: str) -> bool:
        return hit["source"] == self.path and (
            not self.paragraphs or hit["paragraph"] in self.paragraphs
        )


@dataclass(frozen=True)
class ConceptItem:
    folded: str

    def matches(self, _hit: dict[str, Any], folded_text: str) -> bool:
        return self.folded in folded_text


Item = SourceItem | ConceptItem


@dataclass(frozen=True)
class Recall:
    recall_at_k: float
    mrr: float
    expected_total: int
    matched: int

    def to_json(self) -> dict[str, Any]:
        return {
            "recall_at_k": self.recall_at_k,
            "mrr": self.mrr,
            "expected_total": self.expected_total,
            "matched": self.matched,
        }


def resolve_source(expected: str, segments: Sequence[SegmentInfo]) -> tuple[str, str | None]:
    """(the path to match hits against, a warning or None)."""
    if any(segment.path == expected for segment in segments):
        return expected, None
    by_id = next((segment for segment in segments if segment.segment_id == expected), None)
    if by_id is not None:
        return by_id.path, None
    suffixed = [segment.path for segment in segments if segment.path.endswith(expected)]
    if len(suffixed) == 1:
        return suffixed[0], None
    if not suffixed:
        return expected, (
            f"expected_sources source '{expected}' matches no segment of manifest.json "
            "(by path, segment_id or unique path suffix) — kept as written, it can never "
            "match a hit"
        )
    return expected, (
        f"expected_sources source '{expected}' is ambiguous: it is the path suffix of "
        f"{len(suffixed)} segments — kept as written, it will likely never match a hit"
    )


def expected_items(case: Case, segments: Sequence[SegmentInfo]) -> tuple[list[Item], list[str]]:
    """The case's items (sources of relevance >= 1, then concepts) and its warnings,
    each ``case '<id>': …``."""
    items: list[Item] = []
    warnings: list[str] = []
    for expected in case.expected_sources:
        if expected.relevance == 0:
            continue
        path, warning = resolve_source(expected.source, segments)
        if warning is not None:
            warnings.append(f"case '{case.case_id}': {warning}")
        items.append(SourceItem(path, tuple(expected.paragraphs)))
    items.extend(ConceptItem(normalize_term(concept)) for concept in case.expected_concepts)
    return items, warnings


def score(items: Sequence[Item], hits: Sequence[dict[str, Any]]) -> Recall:
    """Matched items over all items; 1 / position of the first hit matching any item."""
    folded = [normalize_term(hit["text"]) for hit in hits]
    matched = sum(
        1 for item in items if any(item.matches(h, t) for h, t in zip(hits, folded, strict=True))
    )
    mrr = next(
        (
            1.0 / position
            for position, (hit, text) in enumerate(zip(hits, folded, strict=True), start=1)
            if any(item.matches(hit, text) for item in items)
        ),
        0.0,
    )
    total = len(items)
    return Recall(matched / total if total else 0.0, mrr, total, matched)
