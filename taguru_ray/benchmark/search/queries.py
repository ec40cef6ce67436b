"""The same case against every model's corpus, and what differs (BENCHMARK.md §3.3).

`run_case` sends one ``POST /contexts/<corpus>/sources/search`` per available model
(through `search`, so a test feeds literal results), and builds the case's block:
per model the hit locators, lane counts, the plan's lanes and recall when the case
expects something; per model pair the overlap of their (source, paragraph) hit sets.
A hit's ``rank`` is its 1-based position in one model's list — never a rank across
models. Models are in id order, pairs keyed by `pair_key`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from taguru_ray.benchmark.compare.differences import pair_id
from taguru_ray.benchmark.compare.identity import jaccard
from taguru_ray.benchmark.compare.manifest import SegmentInfo
from taguru_ray.benchmark.search.recall import Item, expected_items, score
from taguru_ray.evalset import DEFAULT_LIMIT, Case
from taguru_ray.remote.client import RemoteError
from taguru_ray.remote.search_page import SearchShapeError, read_search_result

# (corpus context, request body) -> the search route's result
Search = Callable[[str, Mapping[str, Any]], Any]
LANE_KEYS = ("bm25_only", "vector_only", "both", "neither", "unknown")
UNAVAILABLE_CORPUS = "corpus not available for this model — see the corpus block"
UNAVAILABLE_PAIR = "one or both models were not searched for this case"
# (bm25 evidenced the hit, vector evidenced it) -> its lane count
_LANE_OF = {
    (True, True): "both",
    (True, False): "bm25_only",
    (False, True): "vector_only",
    (False, False): "neither",
}


@dataclass(frozen=True)
class Target:
    """A model as the cases see it: its corpus, and whether that can be searched."""

    model_id: str
    context: str
    available: bool


def pair_key(a: str, b: str) -> str:
    """The pair's key, the same whichever way round: the ids in byte order, the first's
    length in front so ``(a, b__c)`` and ``(a__b, c)`` stay apart."""
    first, second = sorted((a, b), key=lambda text: text.encode("utf-8"))
    return pair_id(first, second)


def lane_counts(hits: Sequence[Mapping[str, Any]], plan_known: bool) -> dict[str, int]:
    """How many hits each lane evidenced; all ``unknown`` when no plan could be read."""
    counts = dict.fromkeys(LANE_KEYS, 0)
    if not plan_known:
        counts["unknown"] = len(hits)
        return counts
    for hit in hits:
        lanes = hit.get("lanes") or {}
        counts[_LANE_OF[lanes.get("bm25") is not None, lanes.get("vector") is not None]] += 1
    return counts


def plan_echo(plan: Mapping[str, Any]) -> dict[str, Any]:
    """``{bm25: {ran, reason?, floor?}, vector: {…}}`` from the first plan entry."""
    echo = {}
    for name in ("bm25", "vector"):
        lane = plan["lanes"][name]
        shown: dict[str, Any] = {"ran": lane["ran"]}
        if isinstance(lane.get("reason"), str):
            shown["reason"] = lane["reason"]
        floor = lane.get("floor")
        if isinstance(floor, int | float) and not isinstance(floor, bool):
            shown["floor"] = floor
        echo[name] = shown
    return echo


def pair_overlap(
    a: Sequence[Mapping[str, Any]], b: Sequence[Mapping[str, Any]]
) -> tuple[float | None, int, float | None]:
    """(jaccard of the locator sets, locators both found, mean |rank_a - rank_b| over
    them); jaccard None when both are empty, the mean None when nothing is shared."""
    ranks_a = _first_ranks(a)
    ranks_b = _first_ranks(b)
    shared = ranks_a.keys() & ranks_b.keys()
    differences = [abs(ranks_a[key] - ranks_b[key]) for key in shared]
    mean = fmean(differences) if differences else None
    return jaccard(set(ranks_a), set(ranks_b)), len(shared), mean


def _first_ranks(hits: Sequence[Mapping[str, Any]]) -> dict[tuple[str, int], int]:
    ranks: dict[tuple[str, int], int] = {}
    for hit in hits:
        ranks.setdefault((hit["source"], hit["paragraph"]), hit["rank"])
    return ranks


def run_case(
    case: Case, targets: Sequence[Target], segments: Sequence[SegmentInfo], search: Search
) -> tuple[dict[str, Any], list[str]]:
    """The case's block for retrieval.json, and its resolution warnings (once per case)."""
    limit = case.options.limit or DEFAULT_LIMIT
    items, warnings = expected_items(case, segments) if case.has_expectations else ([], [])
    ordered = sorted(targets, key=lambda t: t.model_id.encode("utf-8"))
    models: dict[str, dict[str, Any]] = {}
    for target in ordered:
        if not target.available:
            models[target.model_id] = {"outcome": "failed", "message": UNAVAILABLE_CORPUS}
            continue
        try:
            page = read_search_result(search(target.context, {"query": case.query, "limit": limit}))
        except RemoteError as error:
            models[target.model_id] = {"outcome": "failed", "message": error.cut()}
            continue
        except SearchShapeError as error:
            models[target.model_id] = {"outcome": "failed", "message": str(error)}
            continue
        models[target.model_id] = _searched(page.hits[:limit], page.plan, items, case)
    block: dict[str, Any] = {"case_id": case.case_id, "query": case.query}
    if case.cues:
        block["cues"] = list(case.cues)
    block |= {
        "limit": limit,
        "has_expectations": case.has_expectations,
        "models": models,
        "pairs": _pairs([target.model_id for target in ordered], models),
    }
    return block, warnings


def _pairs(model_ids: list[str], models: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every pair of the case's models, by key: compared when both were searched."""
    pairs: dict[str, dict[str, Any]] = {}
    for i, first in enumerate(model_ids):
        for second in model_ids[i + 1 :]:
            a, b = models[first], models[second]
            if a["outcome"] == "searched" and b["outcome"] == "searched":
                jac, shared, mean = pair_overlap(a["hits"], b["hits"])
                pairs[pair_key(first, second)] = {
                    "outcome": "compared",
                    "jaccard": jac,
                    "shared_hits": shared,
                    "mean_rank_difference": mean,
                }
            else:
                pairs[pair_key(first, second)] = {
                    "outcome": "unavailable",
                    "message": UNAVAILABLE_PAIR,
                }
    return dict(sorted(pairs.items()))


def _searched(
    hits: list[dict[str, Any]], plan: Mapping[str, Any] | None, items: list[Item], case: Case
) -> dict[str, Any]:
    block: dict[str, Any] = {
        "outcome": "searched",
        "hit_count": len(hits),
        "empty": not hits,
        "distinct_sources": len({hit["source"] for hit in hits}),
        "lanes": lane_counts(hits, plan is not None),
    }
    if plan is not None:
        block["plan"] = plan_echo(plan)
    block["hits"] = [
        {"rank": position, "source": hit["source"], "paragraph": hit["paragraph"]}
        for position, hit in enumerate(hits, start=1)
    ]
    if case.has_expectations:
        recall = score(items, hits)
        if recall.expected_total > 0:
            block["recall"] = recall.to_json()
    return block
