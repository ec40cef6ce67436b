"""The run's metrics: a pure function of its case blocks (EVALUATE.md §3.5).

Per-case values become Distributions over the cases that have them; per-call
latencies and budget use are run-level Distributions; shares (failure rate,
citation outcomes, the lane cross-tab, budget omissions, reranker runs) are
Ratios. Every metric of the catalog is always there, as the reference writes
them: one a run cannot produce (the evidence latency without ``--assembly``,
``rerank.ran`` without ``--rerank``, the budget's without a budget) is empty,
``n`` 0 and its values null.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from taguru_ray.evaluate.definitions import CASE_METRICS, case_values
from taguru_ray.measure import Distribution, MetricValue, ratio

BUDGET_OMISSIONS = ("budget_exceeded", "contradiction_group_exceeds_budget")


def build_metrics(
    cases: Sequence[Mapping[str, Any]], assembly: bool, rerank: bool
) -> dict[str, MetricValue]:
    metrics: dict[str, MetricValue] = {}
    values = [case_values(case) for case in cases]
    for name in CASE_METRICS:
        metrics[name] = Distribution.of(v[name] for v in values)

    structural = [case["structural"] for case in cases if "structural" in case]
    positions = ("subject", "label", "object")
    resolve_ms = [cue["latency_ms"] for block in structural for cue in block["cues"]]
    resolve_ms += [
        probe[p]["latency_ms"]
        for block in structural
        for probe in block["associations"]
        for p in positions
    ]
    query_ms = [
        probe["query"]["latency_ms"]
        for block in structural
        for probe in block["associations"]
        if "query" in probe
    ]
    checks = [check for case in cases for check in case.get("citations", {}).get("checks", ())]
    metrics["latency.resolve_ms"] = Distribution.of(resolve_ms)
    metrics["latency.query_ms"] = Distribution.of(query_ms)
    metrics["latency.citation_ms"] = Distribution.of(c["latency_ms"] for c in checks)

    failed = sum(case["passage"]["outcome"] == "failed" for case in cases)
    metrics["passage.failure_rate"] = ratio(failed, len(cases))
    metrics["structural.case_rate"] = ratio(len(structural), len(cases))
    metrics |= _citation_ratios(checks)
    metrics |= _lane_ratios([case["lane_cross"] for case in cases if "lane_cross" in case])

    evidence = [case["evidence"] for case in cases if "evidence" in case]
    metrics["latency.evidence_ms"] = Distribution.of(e["latency_ms"] for e in evidence)
    metrics["rerank.ran"] = _rerank_ran(evidence if rerank else ())
    budgets = [case for case in cases if "budget" in case]
    for field in ("items_used", "bytes_used", "tokens_used"):
        metrics[f"budget.{field}"] = Distribution.of(c["budget"][field] for c in budgets)
    metrics["budget.omitted_rate"] = _omitted_rate(budgets, assembly)
    return dict(sorted(metrics.items()))


def _citation_ratios(checks: Sequence[Mapping[str, Any]]) -> dict[str, MetricValue]:
    def code(check: Mapping[str, Any]) -> str:
        if check["outcome"] == "resolved":
            return "resolved"
        return check.get("code") if check.get("code") in ("no_source", "no_paragraph") else "other"

    codes = [code(check) for check in checks]
    resolved = [check for check in checks if check["outcome"] == "resolved"]
    sections = [c["section"]["check"] for c in resolved if c["section"]["check"] != "not_checked"]
    quotes = [c["quote"]["matched"] for c in resolved if "quote" in c]
    shares = {
        f"citations.{name}": ratio(codes.count(name), len(codes))
        for name in ("resolved", "no_source", "no_paragraph", "other")
    }
    return shares | {
        "citations.section_match": ratio(sections.count("matched"), len(sections)),
        "citations.quote_match": ratio(sum(quotes), len(quotes)),
    }


def _lane_ratios(crosses: Sequence[Mapping[str, bool]]) -> dict[str, MetricValue]:
    n = len(crosses)
    both = sum(c["structural_hit"] and c["passage_hit"] for c in crosses)
    neither = sum(not c["structural_hit"] and not c["passage_hit"] for c in crosses)
    return {
        "lanes.structural_hit": ratio(sum(c["structural_hit"] for c in crosses), n),
        "lanes.passage_hit": ratio(sum(c["passage_hit"] for c in crosses), n),
        "lanes.both": ratio(both, n),
        "lanes.neither": ratio(neither, n),
    }


def _omitted_rate(budgets: Iterable[Mapping[str, Any]], assembly: bool) -> MetricValue:
    """Budget omissions over what competed for the budget. Under ``--assembly`` only the
    package's budget reasons count: dedup and the like are not the budget's doing."""
    omitted = considered = 0
    for case in budgets:
        budget = case["budget"]
        if assembly:
            reasons = case.get("evidence", {}).get("omitted_by_reason", {})
            omitted += sum(reasons.get(reason, 0) for reason in BUDGET_OMISSIONS)
        else:
            omitted += budget["omitted_total"]
        considered += budget["omitted_total"] + budget["items_used"]
    return ratio(omitted, considered)


def _rerank_ran(evidence: Iterable[Mapping[str, Any]]) -> MetricValue:
    """Reranker runs over attempts; a pool too empty to rerank is not an attempt."""
    attempted = [
        e["reranker"]
        for e in evidence
        if e["outcome"] == "assembled" and e["reranker"].get("reason") != "empty_pool"
    ]
    return ratio(sum(bool(r.get("ran")) for r in attempted), len(attempted))
