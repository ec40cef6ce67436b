"""How one case scores: pure functions of what its lanes returned.

Scoring reads rank (a hit's position, a cue's resolved names, a query's
``total``) and label (an expectation's relevance) only — never a hit's or a
candidate's own score, since the lanes' raw scores are on scales that do not
compare (seed 003, "three lanes, fixed order, no fusion"). Names are matched
after trimming and `normalize_entry`, sources by exact (source, paragraph).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from taguru_ray.context.normalize import normalize_entry
from taguru_ray.evalset import Case, ExpectedSource

Locator = tuple[str, int]
MISSED_SHOWN = 3


def source_matches(expected: ExpectedSource, hit: Locator) -> bool:
    """Same source, and the paragraph named (an empty list accepts any paragraph)."""
    return hit[0] == expected.source and (not expected.paragraphs or hit[1] in expected.paragraphs)


def recall_block(expected: Sequence[ExpectedSource], hits: Sequence[Locator]) -> dict | None:
    """recall@k, MRR and nDCG over the expectations of relevance ≥ 1; None without any.

    Each expectation is credited once, at the first hit satisfying it, so nDCG
    can exceed 1 when two expectations credit one hit: it is clamped there."""
    items = [item for item in expected if item.relevance >= 1]
    if not items:
        return None
    matched = sum(any(source_matches(item, hit) for hit in hits) for item in items)
    mrr = 0.0
    for rank, hit in enumerate(hits):
        if any(source_matches(item, hit) for item in items):
            mrr = 1.0 / (rank + 1)
            break
    dcg = 0.0
    for item in items:
        first = next((r for r, hit in enumerate(hits) if source_matches(item, hit)), None)
        if first is not None:
            dcg += item.relevance / math.log2(first + 2)
    ideal = sorted((item.relevance for item in items), reverse=True)
    idcg = sum(rel / math.log2(rank + 2) for rank, rel in enumerate(ideal))
    return {
        "recall_at_k": matched / len(items),
        "mrr": mrr,
        "ndcg": min(1.0, dcg / idcg) if idcg > 0 else 0.0,
        "expected_total": len(items),
        "matched": matched,
    }


def top_tier(candidates: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The lexical candidates when there are any, else the semantic ones — never mixed,
    as the two tiers' scores do not compare."""
    lexical = [c for c in candidates if c.get("tier") == "lexical"]
    return lexical or [c for c in candidates if c.get("tier") == "semantic"]


def position_outcome(group: Sequence[Mapping[str, Any]], latency_ms: int) -> dict:
    """One association position: pinned only by exactly one top-tier candidate."""
    if not group:
        return {"outcome": "not_found", "latency_ms": latency_ms}
    if len(group) == 1:
        return {
            "outcome": "resolved",
            "name": group[0]["name"],
            "tier": group[0]["tier"],
            "latency_ms": latency_ms,
        }
    return {
        "outcome": "ambiguous",
        "tier": group[0]["tier"],
        "candidates": [c["name"] for c in group],
        "latency_ms": latency_ms,
    }


def _folded(text: str) -> str:
    return normalize_entry(text.strip())


def resolved_contains(cues: Iterable[Mapping[str, Any]], expected: str) -> bool:
    target = _folded(expected)
    return any(_folded(name) == target for cue in cues for name in cue["resolved_names"])


def coverage_counts(expected: Sequence[str], cues: Sequence[Mapping[str, Any]]) -> dict | None:
    if not expected:
        return None
    matched = sum(resolved_contains(cues, item) for item in expected)
    return {"expected": len(expected), "matched": matched, "value": matched / len(expected)}


def _covered(probe: Mapping[str, Any]) -> bool:
    query = probe.get("query")
    return bool(query) and query["outcome"] == "queried" and query["total"] >= 1


def association_coverage(probes: Sequence[Mapping[str, Any]]) -> dict | None:
    """Covered = the pinned query ran and found the triple; a position that did not pin
    is uncovered, never guessed at."""
    if not probes:
        return None
    matched = sum(_covered(probe) for probe in probes)
    return {"expected": len(probes), "matched": matched, "value": matched / len(probes)}


def served_locators(
    hits: Sequence[Locator] | None, probes: Sequence[Mapping[str, Any]]
) -> set[Locator]:
    """What the case's first two lanes served: passage hits and the pinned queries'
    attributions that name a paragraph."""
    served = set(hits or ())
    for probe in probes:
        query = probe.get("query") or {}
        for attribution in query.get("attributions", ()):
            if attribution.get("paragraph") is not None:
                served.add((attribution["source"], attribution["paragraph"]))
    return served


def section_check(declared: bool, expected: str | None, actual: str | None) -> dict:
    """An absent key checks nothing; null asserts no section; a string must be equal."""
    if not declared:
        return {"check": "not_checked"}
    return {"check": "matched" if expected == actual else "mismatched", "expected": expected}


def quote_matches(quote: str, paragraph: str) -> bool:
    return _folded(quote) in _folded(paragraph)


def citation_valid(check: Mapping[str, Any]) -> bool:
    """Resolved, its section not mismatched and its quote (if declared) found."""
    if check["outcome"] != "resolved":
        return False
    quote = check.get("quote")
    return check["section"]["check"] != "mismatched" and (quote is None or quote["matched"])


def citations_block(checks: Sequence[Mapping[str, Any]]) -> dict:
    served = sum(bool(check["served"]) for check in checks)
    valid = sum(citation_valid(check) for check in checks)
    total = len(checks)
    return {
        "recall": {"expected_total": total, "matched": served, "value": served / total},
        "validity": {"expected_total": total, "valid": valid, "value": valid / total},
        "checks": list(checks),
    }


def lane_cross(coverage: Mapping[str, Any] | None, recall: Mapping[str, Any] | None) -> dict | None:
    """Which lane answered, over cases with both kinds of expectation and a completed
    passage lane (there is no recall block otherwise)."""
    if not coverage or recall is None:
        return None
    structural = any(block["matched"] > 0 for block in coverage.values())
    return {"structural_hit": structural, "passage_hit": recall["matched"] > 0}


def missed(
    case: Case,
    hits: Sequence[Locator] | None,
    cues: Sequence[Mapping[str, Any]],
    probes: Sequence[Mapping[str, Any]],
    checks: Sequence[Mapping[str, Any]],
) -> tuple[list[str], int]:
    """The first three misses (sources, concepts, labels, associations, citations) and
    how many more were dropped. Sources are silent when the passage lane failed: its
    own outcome already says so."""
    found: list[str] = []
    if hits is not None:
        for expected in case.expected_sources:
            if expected.relevance >= 1 and not any(source_matches(expected, h) for h in hits):
                found.append(f"expected_sources: '{expected.source}' not found among passage hits")
    concept_cues = [cue for cue in cues if cue["kind"] == "concept"]
    label_cues = [cue for cue in cues if cue["kind"] == "label"]
    found += [
        f"expected_concepts: '{name}' not resolved"
        for name in case.expected_concepts
        if not resolved_contains(concept_cues, name)
    ]
    found += [
        f"expected_labels: '{name}' not resolved"
        for name in case.expected_labels
        if not resolved_contains(label_cues, name)
    ]
    for probe in probes:
        why = _association_miss(probe)
        if why:
            found.append(
                f"expected_associations: ({probe['subject_cue']}, {probe['label_cue']}, "
                f"{probe['object_cue']}) {why}"
            )
    for check in checks:
        where = f"({check['source']}, {check['paragraph']})"
        if not check["served"]:
            found.append(f"expected_citations: {where} not found among served results")
        if not citation_valid(check):
            found.append(f"expected_citations: {where} failed locator validity")
    return found[:MISSED_SHOWN], max(0, len(found) - MISSED_SHOWN)


def _association_miss(probe: Mapping[str, Any]) -> str | None:
    query = probe.get("query")
    if query is not None:
        if query["outcome"] == "errored":
            return "query errored"
        return None if query["total"] >= 1 else "query returned no association"
    errored = [
        f"{position}: {probe[position]['message']}"
        for position in ("subject", "label", "object")
        if probe[position]["outcome"] == "errored"
    ]
    if errored:
        return "a position could not be resolved due to a transport error: " + "; ".join(errored)
    return "query never ran (a position did not pin)"
