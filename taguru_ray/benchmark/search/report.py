"""retrieval.json: the case blocks summed per model and per pair, every metric
defined inside the file (BENCHMARK.md §3.4, §6).

The stamp is the newest the reference shows, ``benchmark_retrieval: 3``, with the
corpus block's ``segments_imported``/``segments_failed``. Nothing here ranks: each
model and each pair gets its own distributions and rates, and no key names a
verdict (winner, best, recommended, overall, delta_vs). ``rank`` in a case block is
a hit's position inside one model's list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taguru_ray.benchmark.compare.identity import DEFAULT_MATCHING
from taguru_ray.benchmark.search.corpora import CorpusBlock
from taguru_ray.evalset import DEFAULT_LIMIT
from taguru_ray.measure import Definition, Distribution, MetricValue, ratio

VERSION_KEY = "benchmark_retrieval"
VERSION = 3
SEARCH = "POST /contexts/{name}/sources/search"
PLAN = SEARCH + " plan and hits[].lanes"
EXPECTED = "eval.jsonl expected_sources and expected_concepts"
VERB = "taguru-ray benchmark search"
LANE_METRICS = ("bm25_only", "vector_only", "both", "neither", "unknown")


@dataclass(frozen=True)
class Inputs:
    """What the run was asked: echoed in ``inputs``."""

    results_dir: str
    eval_path: str
    eval_name: str | None
    case_count: int
    url: str  # masked: scheme://host[:port]
    run_index: int
    store: str | None = None  # --store DIR, when the corpora live in an embedded store

    def to_json(self) -> dict[str, Any]:
        block: dict[str, Any] = {
            "results_dir": self.results_dir,
            "eval": {"path": self.eval_path, "name": self.eval_name, "cases": self.case_count},
            "url": self.url,
        }
        if self.store is not None:
            block["store"] = self.store
        block |= {"run_index": self.run_index, "default_limit": DEFAULT_LIMIT}
        return block


def artifact(
    *,
    run_id: str,
    generated_at: str,
    inputs: Inputs,
    warnings: Sequence[str],
    corpus: Mapping[str, CorpusBlock],
    cases: Sequence[dict[str, Any]],
) -> dict[str, Any]:
    """The whole retrieval.json, keys in the contract's order, maps in key order."""
    return {
        VERSION_KEY: VERSION,
        "run_id": run_id,
        "generated_at": generated_at,
        "matching": DEFAULT_MATCHING.to_json(),
        "inputs": inputs.to_json(),
        "definitions": {name: d.to_json() for name, d in sorted(DEFINITIONS.items())},
        "warnings": list(warnings),
        "corpus": {model: corpus[model].to_json() for model in _sorted(corpus)},
        "cases": list(cases),
        "models": {
            model: _json(model_metrics(cases, model)) for model in _sorted(_keys(cases, "models"))
        },
        "pairs": {key: _json(pair_metrics(cases, key)) for key in sorted(_keys(cases, "pairs"))},
    }


def model_metrics(cases: Sequence[Mapping[str, Any]], model: str) -> dict[str, MetricValue]:
    """One model's metrics over the cases it appears in."""
    outcomes = [case["models"][model] for case in cases if model in case["models"]]
    searched = [block for block in outcomes if block["outcome"] == "searched"]
    recalls = [block["recall"] for block in searched if "recall" in block]
    metrics: dict[str, MetricValue] = {
        "hits.count": Distribution.of(block["hit_count"] for block in searched),
        "hits.empty_rate": ratio(sum(block["empty"] for block in searched), len(searched)),
        "hits.distinct_sources": Distribution.of(block["distinct_sources"] for block in searched),
        "cases.error_rate": ratio(len(outcomes) - len(searched), len(outcomes)),
    }
    for lane in LANE_METRICS:
        metrics[f"lanes.{lane}"] = Distribution.of(block["lanes"][lane] for block in searched)
    if recalls:
        metrics["recall.recall_at_k"] = Distribution.of(r["recall_at_k"] for r in recalls)
        metrics["recall.mrr"] = Distribution.of(r["mrr"] for r in recalls)
    return metrics


def pair_metrics(cases: Sequence[Mapping[str, Any]], key: str) -> dict[str, MetricValue]:
    """One pair's metrics over the cases it appears in; a null jaccard or mean is no
    sample (both sides empty, nothing shared)."""
    outcomes = [case["pairs"][key] for case in cases if key in case["pairs"]]
    compared = [block for block in outcomes if block["outcome"] == "compared"]
    return {
        "overlap.jaccard": Distribution.of(block["jaccard"] for block in compared),
        "overlap.shared_hits": Distribution.of(block["shared_hits"] for block in compared),
        "overlap.mean_rank_difference": Distribution.of(
            block["mean_rank_difference"] for block in compared
        ),
        "pairs.unavailable_rate": ratio(len(outcomes) - len(compared), len(outcomes)),
    }


def _json(metrics: Mapping[str, MetricValue]) -> dict[str, Any]:
    return {name: value.to_json() for name, value in sorted(metrics.items())}


def _keys(cases: Sequence[Mapping[str, Any]], block: str) -> set[str]:
    return {key for case in cases for key in case[block]}


def _sorted(keys: Any) -> list[str]:
    return sorted(keys, key=lambda text: text.encode("utf-8"))


def _lane(what: str, caveat: str | None = None) -> Definition:
    return Definition("count", "distribution", ("model",), what, PLAN, caveat)


DEFINITIONS: dict[str, Definition] = {
    "hits.count": Definition(
        "count",
        "distribution",
        ("model",),
        "Hits one case's search returned, after cutting to the case's limit.",
        SEARCH,
    ),
    "hits.empty_rate": Definition(
        "ratio",
        "ratio",
        ("model",),
        "Of the cases searched, the share that returned no hit at all.",
        SEARCH,
    ),
    "hits.distinct_sources": Definition(
        "count",
        "distribution",
        ("model",),
        "Different sources (segments) among one case's hits: how spread out they are.",
        SEARCH,
    ),
    "lanes.bm25_only": _lane("Hits of one case that only the lexical (BM25) lane evidenced."),
    "lanes.vector_only": _lane(
        "Hits of one case that only the vector lane evidenced.",
        "0 in every case when the vector lane did not run: each case's "
        "models.<id>.plan.vector.reason says why.",
    ),
    "lanes.both": _lane("Hits of one case that both lanes evidenced."),
    "lanes.neither": _lane(
        "Hits whose lane evidence was readable and named no lane. Expected to stay 0; "
        "counted apart so that one is seen rather than folded into another lane."
    ),
    "lanes.unknown": Definition(
        "count",
        "distribution",
        ("model",),
        "Hits whose lane evidence could not be read: the server answered without the "
        "typed plan (an older or non-conforming one). Never counted as any lane.",
        f"{VERB}: the untyped response fallback",
    ),
    "cases.error_rate": Definition(
        "ratio",
        "ratio",
        ("model",),
        "Of all cases, the share whose search failed or could not be sent because the "
        "model's corpus was not available.",
        VERB,
    ),
    "recall.recall_at_k": Definition(
        "ratio",
        "distribution",
        ("model",),
        "Per case, the share of its expected items — expected_sources of relevance 1 or "
        "more and expected_concepts, together — that some hit within the limit satisfies. "
        "Only cases with at least one such item give a sample.",
        EXPECTED,
        "A source matches a hit with its path (resolved against manifest.json's segments) "
        "and, when paragraphs are listed, one of them; a concept matches a hit whose text "
        "contains it, both folded by benchmark::identity::normalize_term.",
    ),
    "recall.mrr": Definition(
        "ratio",
        "distribution",
        ("model",),
        "Per case, 1 / the position of the first hit satisfying any expected item; 0 when "
        "no hit does.",
        EXPECTED,
    ),
    "overlap.jaccard": Definition(
        "ratio",
        "distribution",
        ("pair",),
        "Per case, |A ∩ B| / |A ∪ B| of the two models' (source, paragraph) hit sets. A "
        "case where both returned nothing gives no sample.",
        "benchmark::identity::jaccard over the hits",
    ),
    "overlap.shared_hits": Definition(
        "count",
        "distribution",
        ("pair",),
        "Per case, the (source, paragraph) locators both models' hits hold.",
        SEARCH,
    ),
    "overlap.mean_rank_difference": Definition(
        "count",
        "distribution",
        ("pair",),
        "Per case, the mean of |position in A - position in B| over the shared locators "
        "(positions 1-based, each inside its own model's list). No sample when none is shared.",
        SEARCH,
    ),
    "pairs.unavailable_rate": Definition(
        "ratio",
        "ratio",
        ("pair",),
        "Of all cases, the share where at least one of the two models was not searched.",
        VERB,
    ),
}
