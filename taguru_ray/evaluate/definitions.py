"""The metric catalog of ``evaluation.json`` (EVALUATE.md §3.5) and how one case is read.

Every metric a run reports has one `Definition` here: its unit, the value
shape its ``metrics`` entry takes (a reader picks the shape from
``definitions[m].statistic``, never by guessing — a Ratio object also parses
as a Distribution), its scope, what it measures, where the numbers come from
and what to keep in mind when reading it.

The reference writes the whole catalog into every run: its ``metrics`` map
always carries all 31 keys (an empty one with n = 0), so ``definitions`` is
always complete too. `definitions_for` keeps that rule and fails loudly on a
metric that has no definition.

The catalog's scopes follow the reference: every Distribution is scoped
``case`` (one sample or more per case), every Ratio ``run`` (one pooled share).
`CASE_METRICS` is narrower — the ten names with exactly one value per case,
the only ones a thresholds file may bound per case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, Literal

from taguru_ray.measure import Definition

Statistic = Literal["distribution", "ratio"]

SEARCH = "POST /contexts/{name}/sources/search"
RESOLVE = "POST /contexts/{name}/resolve"
RESOLVE_LABEL = "POST /contexts/{name}/resolve_label"
QUERY = "POST /contexts/{name}/query"
CITATIONS = "POST /contexts/{name}/citations"
EVIDENCE = "POST /contexts/{name}/evidence"
BUDGET = f"the evidence budget accounting (client-side in baseline, {EVIDENCE} in assembly)"
LANES = "derived from a case's coverage.* and recall.matched (its lane_cross block)"

# Caveats several metrics share.
NO_RECALL = (
    "empty when no case declares an expected_sources entry of relevance >= 1, "
    "or when the passage lane failed"
)
NO_CITATIONS = "empty when no case declares expected_citations"
NO_BUDGET = "empty unless a --max-items, --max-bytes or --max-tokens flag applied"
LANE_DENOMINATOR = (
    "counts only cases declaring both a structural and a relevance >= 1 source "
    "expectation whose passage lane completed"
)


def _per_case(unit: str, description: str, source: str, caveat: str | None = None) -> Definition:
    return Definition(unit, "distribution", ("case",), description, source, caveat)


def _per_run(description: str, source: str, caveat: str | None = None) -> Definition:
    return Definition("ratio", "ratio", ("run",), description, source, caveat)


_CATALOG: dict[str, Definition] = {
    "recall.recall_at_k": _per_case(
        "ratio",
        "Share of a case's expected_sources (relevance >= 1) that some passage hit "
        "satisfies, over the hits the case's limit returned.",
        f"eval.jsonl expected_sources; {SEARCH}",
        NO_RECALL,
    ),
    "recall.mrr": _per_case(
        "ratio",
        "1 / (1 + the 0-based position of the first hit satisfying any expected source); "
        "0 when no hit does.",
        f"eval.jsonl expected_sources; {SEARCH}",
        NO_RECALL,
    ),
    "recall.ndcg": _per_case(
        "ratio",
        "Graded nDCG: each expected source adds its relevance once, discounted at the "
        "position of the first hit satisfying it; the ideal orders all of the case's "
        "relevances descending. Capped at 1.",
        f"eval.jsonl expected_sources.relevance; {SEARCH}",
        NO_RECALL,
    ),
    "coverage.concepts": _per_case(
        "ratio",
        "Share of a case's expected_concepts equal, after trimming and normalize_entry, "
        "to a name some concept cue resolved to (top tier only).",
        f"eval.jsonl expected_concepts; {RESOLVE}",
        "empty when no case declares expected_concepts",
    ),
    "coverage.labels": _per_case(
        "ratio",
        "Share of a case's expected_labels equal, after trimming and normalize_entry, "
        "to a name some label cue resolved to (top tier only).",
        f"eval.jsonl expected_labels; {RESOLVE_LABEL}",
        "empty when no case declares expected_labels",
    ),
    "coverage.associations": _per_case(
        "ratio",
        "Share of a case's expected_associations whose query ran with all three "
        "positions pinned and found the association (total >= 1).",
        f"eval.jsonl expected_associations; {QUERY}",
        "empty when no case declares expected_associations; a position that is not "
        "found or ambiguous means the query never runs, and the entry counts as missed",
    ),
    "citations.recall": _per_case(
        "ratio",
        "Share of a case's expected_citations whose (source, paragraph) was served: "
        "among its passage hits or the paragraphs its association queries attributed. "
        "Kept apart from citations.locator_validity.",
        f"eval.jsonl expected_citations; {SEARCH}; {QUERY}",
        NO_CITATIONS,
    ),
    "citations.locator_validity": _per_case(
        "ratio",
        "Share of a case's expected_citations whose citation call resolved, with the "
        "declared section and quote (when declared) matching; measured even when the "
        "passage lane missed. Kept apart from citations.recall.",
        CITATIONS,
        NO_CITATIONS,
    ),
    "latency.passage_ms": _per_case(
        "ms",
        "Wall-clock time of a case's one passage-lane call, failed calls included.",
        f"{SEARCH} (or {EVIDENCE} with --assembly)",
    ),
    "diversity.sources": _per_case(
        "source",
        "Distinct sources among a case's hits: the (possibly budget-truncated) passage "
        "hits in baseline, the admitted evidence items' locators and citation_refs in "
        "assembly.",
        f"{SEARCH}; {EVIDENCE}",
        "empty for a case whose passage or evidence lane failed",
    ),
    "latency.resolve_ms": _per_case(
        "ms",
        "Wall-clock time of every resolve and resolve_label call the structural lane "
        "made: each cue, and each position of each expected association.",
        f"{RESOLVE}; {RESOLVE_LABEL}",
    ),
    "latency.query_ms": _per_case(
        "ms",
        "Wall-clock time of each association query call.",
        QUERY,
        "empty when no expected association resolved every position to exactly one name",
    ),
    "latency.citation_ms": _per_case(
        "ms",
        "Wall-clock time of each citation call, one per expected_citations entry.",
        CITATIONS,
        NO_CITATIONS,
    ),
    "latency.evidence_ms": _per_case(
        "ms",
        "Wall-clock time of each evidence call of an --assembly run.",
        EVIDENCE,
        "empty in baseline mode",
    ),
    "budget.items_used": _per_case(
        "item",
        "Items a case's evidence used under its budget ceiling, counted the same way in "
        "both modes.",
        BUDGET,
        NO_BUDGET,
    ),
    "budget.bytes_used": _per_case(
        "byte",
        "Bytes a case's evidence used under its budget ceiling: the compact JSON of its "
        "items and citations arrays.",
        BUDGET,
        NO_BUDGET,
    ),
    "budget.tokens_used": _per_case(
        "token",
        "Estimated tokens a case's evidence used under its budget ceiling (a fixed "
        "per-character estimate, not a tokenizer).",
        BUDGET,
        NO_BUDGET,
    ),
    "passage.failure_rate": _per_run(
        "Share of cases whose passage-lane call failed (transport error or a response "
        "that could not be read).",
        SEARCH,
    ),
    "structural.case_rate": _per_run(
        "Share of cases that declared expected_concepts, expected_labels or "
        "expected_associations, and so ran the structural lane.",
        "eval.jsonl case fields",
    ),
    "citations.resolved": _per_run(
        "Share of all citation calls that resolved.",
        CITATIONS,
    ),
    "citations.no_source": _per_run(
        "Share of all citation calls refused with no_source: the context has no passage "
        "for that source.",
        CITATIONS,
    ),
    "citations.no_paragraph": _per_run(
        "Share of all citation calls refused with no_paragraph: the paragraph index is "
        "past the source's last paragraph.",
        CITATIONS,
    ),
    "citations.other": _per_run(
        "Share of all citation calls that failed any other way (transport, an unreadable "
        "response, another error code); the four citations.* call shares sum to 1.",
        CITATIONS,
    ),
    "citations.section_match": _per_run(
        "Of the resolved citation calls whose entry declared a section (null included), "
        "the share whose section matched.",
        f"eval.jsonl expected_citations.section; {CITATIONS}",
        "n is 0 when no expected_citations entry declares a section",
    ),
    "citations.quote_match": _per_run(
        "Of the resolved citation calls whose entry declared a quote, the share whose "
        "normalized quote is a substring of the normalized paragraph; a quote spanning "
        "two paragraphs never matches.",
        f"eval.jsonl expected_citations.quote; {CITATIONS}",
        "n is 0 when no expected_citations entry declares a quote",
    ),
    "lanes.structural_hit": _per_run(
        "Share of cross-tab cases whose structural coverage matched at least one expectation.",
        LANES,
        LANE_DENOMINATOR,
    ),
    "lanes.passage_hit": _per_run(
        "Share of cross-tab cases whose passage hits satisfied at least one expected source.",
        LANES,
        LANE_DENOMINATOR,
    ),
    "lanes.both": _per_run(
        "Share of cross-tab cases where both lanes hit.",
        LANES,
    ),
    "lanes.neither": _per_run(
        "Share of cross-tab cases where neither lane hit, judged by rank and label only, "
        "never by a score.",
        LANES,
    ),
    "budget.omitted_rate": _per_run(
        "Share of the candidates a budgeted case considered (admitted plus omitted) that "
        "a budget ceiling left out.",
        BUDGET,
        NO_BUDGET,
    ),
    "rerank.ran": _per_run(
        "Share of --rerank cases whose reranker actually reordered the pool; the rest "
        "fell back (no provider, another model, an empty pool excluded).",
        f"{EVIDENCE} plan.reranker",
        "empty unless --rerank was given",
    ),
}

DEFINITIONS: Mapping[str, Definition] = MappingProxyType(dict(sorted(_CATALOG.items())))

# The per-case metrics a thresholds file may bound under cases.*, in the seed's order, and
# where each one sits in an evaluation.json case object.
CASE_METRIC_PATHS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "recall.recall_at_k": ("recall", "recall_at_k"),
        "recall.mrr": ("recall", "mrr"),
        "recall.ndcg": ("recall", "ndcg"),
        "coverage.concepts": ("coverage", "concepts", "value"),
        "coverage.labels": ("coverage", "labels", "value"),
        "coverage.associations": ("coverage", "associations", "value"),
        "citations.recall": ("citations", "recall", "value"),
        "citations.locator_validity": ("citations", "validity", "value"),
        "latency.passage_ms": ("passage", "latency_ms"),
        "diversity.sources": ("diversity_sources",),
    }
)
CASE_METRICS: tuple[str, ...] = tuple(CASE_METRIC_PATHS)
# What `evaluate compare` classifies on: latency is too noisy between two runs to call a
# case better or worse.
COMPARED_METRICS: tuple[str, ...] = tuple(m for m in CASE_METRICS if m != "latency.passage_ms")


def definitions_for(metric_names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """evaluation.json's ``definitions`` block: the whole catalog, sorted by key.

    The names a run reports are checked, not used to filter: a metric with no
    definition would leave a reader unable to pick its shape, so it is a
    ValueError here rather than a silent gap in the artifact.
    """
    unknown = sorted(set(metric_names) - DEFINITIONS.keys())
    if unknown:
        raise ValueError(f"metrics without a definition: {', '.join(unknown)}")
    return {name: definition.to_json() for name, definition in DEFINITIONS.items()}


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def case_value(case: Mapping[str, Any], metric: str) -> float | None:
    """One per-case metric of one evaluation.json case; None when the case has none."""
    node: object = case
    for key in CASE_METRIC_PATHS[metric]:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return _number(node)


def case_values(case: Mapping[str, Any]) -> dict[str, float | None]:
    """The ten per-case values of one case object, in `CASE_METRICS` order.

    None means the case never computed that metric: it declared no matching
    expectation, or the lane that measures it did not complete.
    """
    return {metric: case_value(case, metric) for metric in CASE_METRICS}


SCALAR_FIELD = {"distribution": "mean", "ratio": "value", "count": "value"}


def scalar(statistic: str, value_json: object) -> float | None:
    """The one number a threshold or a diff reads from a metric value.

    Distribution → its mean, Ratio and Count → their value; None when the metric
    has no samples. ValueError when the statistic is unknown or the value is not
    an object of that shape (it must carry its integer ``n``).
    """
    field = SCALAR_FIELD.get(statistic)
    if field is None:
        raise ValueError(f"unknown statistic '{statistic}'")
    if not isinstance(value_json, Mapping):
        raise ValueError(f"a {statistic} must be a JSON object")
    n = value_json.get("n")
    if isinstance(n, bool) or not isinstance(n, int):
        raise ValueError(f"a {statistic} needs an integer n")
    value = value_json.get(field)
    if value is None:
        return None
    number = _number(value)
    if number is None:
        raise ValueError(f"a {statistic}'s {field} must be a number or null")
    return number
