"""The metric catalog of evaluation.json and how one case object is read (EVALUATE.md §3.5)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from taguru_ray.evaluate.definitions import (
    CASE_METRICS,
    COMPARED_METRICS,
    DEFINITIONS,
    case_values,
    definitions_for,
    scalar,
)

PACKAGE = Path(__file__).resolve().parents[1] / "taguru_ray" / "evaluate"


def test_the_catalog_holds_the_31_metrics_sorted_by_key() -> None:
    assert len(DEFINITIONS) == 31
    assert list(DEFINITIONS) == sorted(DEFINITIONS)
    assert {"recall.ndcg", "citations.quote_match", "rerank.ran", "budget.omitted_rate"} <= set(
        DEFINITIONS
    )


def test_a_distribution_is_scoped_case_and_a_ratio_run_as_the_reference_writes_them() -> None:
    for definition in DEFINITIONS.values():
        expected = ("case",) if definition.statistic == "distribution" else ("run",)
        assert definition.statistic in ("distribution", "ratio")
        assert definition.scopes == expected
    assert DEFINITIONS["latency.passage_ms"].unit == "ms"
    assert DEFINITIONS["diversity.sources"].unit == "source"
    assert DEFINITIONS["budget.bytes_used"].unit == "byte"
    assert DEFINITIONS["passage.failure_rate"].statistic == "ratio"


def test_a_definition_serialises_with_the_contract_key_order() -> None:
    entry = DEFINITIONS["recall.recall_at_k"].to_json()
    assert list(entry) == ["unit", "statistic", "scopes", "description", "source", "caveat"]
    assert entry["scopes"] == ["case"]
    assert entry["caveat"] is not None
    assert DEFINITIONS["lanes.both"].to_json()["caveat"] is None


def test_the_per_case_metrics_are_the_seed_ten_in_order_and_compare_drops_latency() -> None:
    assert CASE_METRICS == (
        "recall.recall_at_k",
        "recall.mrr",
        "recall.ndcg",
        "coverage.concepts",
        "coverage.labels",
        "coverage.associations",
        "citations.recall",
        "citations.locator_validity",
        "latency.passage_ms",
        "diversity.sources",
    )
    assert set(CASE_METRICS) <= set(DEFINITIONS)
    assert tuple(m for m in CASE_METRICS if m != "latency.passage_ms") == COMPARED_METRICS
    for excluded in ("latency.resolve_ms", "latency.query_ms", "latency.citation_ms"):
        assert excluded not in CASE_METRICS


def test_definitions_always_lists_the_whole_catalog() -> None:
    block = definitions_for(["recall.mrr"])
    assert list(block) == list(DEFINITIONS)
    assert block["rerank.ran"]["statistic"] == "ratio"


def test_a_metric_without_a_definition_is_refused() -> None:
    with pytest.raises(ValueError, match=r"mystery\.metric"):
        definitions_for(["recall.mrr", "mystery.metric"])


def test_case_values_reads_every_per_case_metric_of_a_case_object() -> None:
    case = {
        "case_id": "c1",
        "passage": {"outcome": "searched", "hits": [], "latency_ms": 4},
        "recall": {"recall_at_k": 1.0, "mrr": 0.5, "ndcg": 0.75, "expected_total": 1, "matched": 1},
        "coverage": {"concepts": {"expected": 2, "matched": 1, "value": 0.5}},
        "citations": {
            "recall": {"expected_total": 2, "matched": 2, "value": 1.0},
            "validity": {"expected_total": 2, "valid": 1, "value": 0.5},
            "checks": [],
        },
        "diversity_sources": 3,
    }
    assert case_values(case) == {
        "recall.recall_at_k": 1.0,
        "recall.mrr": 0.5,
        "recall.ndcg": 0.75,
        "coverage.concepts": 0.5,
        "coverage.labels": None,
        "coverage.associations": None,
        "citations.recall": 1.0,
        "citations.locator_validity": 0.5,
        "latency.passage_ms": 4.0,
        "diversity.sources": 3.0,
    }


def test_a_case_with_no_blocks_has_only_its_passage_latency() -> None:
    case = {"case_id": "c2", "passage": {"outcome": "failed", "message": "x", "latency_ms": 9}}
    values = case_values(case)
    assert values["latency.passage_ms"] == 9.0
    assert [m for m, v in values.items() if v is not None] == ["latency.passage_ms"]


def test_scalar_reads_a_distribution_by_mean_and_a_ratio_or_count_by_value() -> None:
    distribution = {"n": 2, "min": 0.5, "p50": 0.5, "p90": 1.0, "p99": 1.0, "max": 1.0}
    assert scalar("distribution", {**distribution, "mean": 0.75, "sum": 1.5}) == 0.75
    assert scalar("ratio", {"value": 0.25, "n": 4, "numerator": 1}) == 0.25
    assert scalar("count", {"value": 7, "n": 3}) == 7.0
    assert scalar("ratio", {"value": None, "n": 0, "numerator": None}) is None


def test_a_ratio_read_as_a_distribution_has_no_mean_which_is_why_the_statistic_decides() -> None:
    ratio = {"value": 0.0968, "n": 31, "numerator": 3}
    assert scalar("distribution", ratio) is None
    assert scalar("ratio", ratio) == 0.0968


def test_scalar_refuses_an_unknown_statistic_or_a_shapeless_value() -> None:
    with pytest.raises(ValueError, match="unknown statistic 'histogram'"):
        scalar("histogram", {"n": 1})
    with pytest.raises(ValueError, match="integer n"):
        scalar("ratio", {"value": 1.0})
    with pytest.raises(ValueError, match="number or null"):
        scalar("ratio", {"value": "high", "n": 1})


def test_the_evaluate_package_imports_nothing_of_extract_the_llm_client_or_embeddings() -> None:
    banned = ("taguru_ray.llm", "taguru_ray.pipeline", "taguru_ray.engine", "taguru_ray.gateway")
    banned_modules = ("taguru_ray.context.embeddings", "taguru_ray.context.vectors")
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for literal in ("TAGURU_" + "EXTRACT_", "TAGURU_" + "EMBED_"):
            if literal in text:
                found.append(f"{path.name}: {literal}")
        for node in ast.walk(ast.parse(text)):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            for name in names:
                if name.startswith(banned) or name in banned_modules:
                    found.append(f"{path.name}: {name}")
    assert found == []
