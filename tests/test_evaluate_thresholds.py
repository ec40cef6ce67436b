"""The --thresholds file: strict loading, every problem at once, and the gate check (§3.6)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from taguru_ray.errors import EXIT_USAGE
from taguru_ray.evaluate.thresholds import (
    Bound,
    Thresholds,
    ThresholdsError,
    check,
    parse_thresholds,
)

PATH = "gate.json"
CASES = {"brand-origin-001", "known-miss-003"}


def load(document: Any, case_ids: set[str] = CASES) -> Thresholds:
    return parse_thresholds(json.dumps(document).encode(), PATH, case_ids)


def problems(document: Any) -> list[str]:
    with pytest.raises(ThresholdsError) as caught:
        load(document)
    return caught.value.problems


# ----------------------------------------------------------------------------- loading


def test_the_seed_example_loads() -> None:
    raw = json.dumps(
        {
            "taguru_evaluate_thresholds": 1,
            "aggregate": {"recall.recall_at_k": {"min": 0.8}, "citations.recall": {"min": 0.9}},
            "cases": {
                "default": {},
                "overrides": {"known-miss-003": {"citations.recall": {"min": 0.0}}},
            },
            "allow_unstable_corpus": False,
        }
    ).encode()
    loaded = parse_thresholds(raw, PATH, CASES)
    assert loaded.sha256 == hashlib.sha256(raw).hexdigest()
    assert loaded.aggregate == {
        "recall.recall_at_k": Bound(min=0.8),
        "citations.recall": Bound(min=0.9),
    }
    assert loaded.case_overrides == {"known-miss-003": {"citations.recall": Bound(min=0.0)}}
    assert loaded.allow_unstable_corpus is False


def test_the_stamp_alone_is_a_complete_file() -> None:
    loaded = load({"taguru_evaluate_thresholds": 1})
    assert loaded.aggregate == {} and loaded.case_default == {} and loaded.case_overrides == {}


def test_every_problem_is_reported_together_one_line_each_naming_the_file() -> None:
    document = {
        "taguru_evaluate_thresholds": 2,
        "bogus": True,
        "aggregate": {
            "not.a.metric": {"min": 0.1},
            "recall.mrr": {},
            "recall.ndcg": {"min": 0.9, "max": 0.1},
            "citations.recall": {"min": 0.5, "mni": 0.2},
        },
        "cases": {
            "default": {"latency.resolve_ms": {"max": 1.0}},
            "overrides": {"ghost": {"recall.recall_at_k": {"min": "high"}}},
            "extra": {},
        },
        "allow_unstable_corpus": "yes",
    }
    with pytest.raises(ThresholdsError) as caught:
        load(document)
    assert caught.value.exit_code == EXIT_USAGE
    assert caught.value.problems == [
        "taguru_evaluate_thresholds must be 1, got 2",
        "the top level: unknown key 'bogus' (allowed: taguru_evaluate_thresholds, aggregate, "
        "cases, allow_unstable_corpus)",
        "allow_unstable_corpus must be true or false",
        "aggregate: unknown metric name 'not.a.metric'",
        "aggregate: 'recall.mrr': needs at least one of min/max",
        "aggregate: 'recall.ndcg': min 0.9 must be <= max 0.1",
        "aggregate: 'citations.recall': unknown key 'mni' (allowed: min, max)",
        "cases: unknown key 'extra' (allowed: default, overrides)",
        "cases.default: unknown metric name 'latency.resolve_ms' (cases.* takes only the "
        "per-case metrics: recall.recall_at_k, recall.mrr, recall.ndcg, coverage.concepts, "
        "coverage.labels, coverage.associations, citations.recall, "
        "citations.locator_validity, latency.passage_ms, diversity.sources)",
        "cases.overrides: unknown case_id 'ghost' (not in eval.jsonl)",
        "cases.overrides.ghost: 'recall.recall_at_k': min must be a number, got \"high\"",
    ]
    lines = str(caught.value).splitlines()
    assert len(lines) == 11
    assert all(line.startswith(f"{PATH}: ") for line in lines)


def test_a_missing_stamp_is_a_problem_and_the_rest_is_still_checked() -> None:
    assert problems({"aggregate": {"nope": {"min": 1}}}) == [
        'the stamp is missing: the file must carry "taguru_evaluate_thresholds": 1',
        "aggregate: unknown metric name 'nope'",
    ]


def test_the_unprefixed_stamp_is_an_unknown_key_since_the_seed_names_the_prefixed_one() -> None:
    found = problems({"evaluate_thresholds": 1})
    assert found[0].startswith("the stamp is missing")
    assert found[1].startswith("the top level: unknown key 'evaluate_thresholds'")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b'{"taguru_evaluate_thresholds":1,', "not valid JSON: "),
        (b"[1]", "the file must hold one JSON object"),
        (b"\xff\xfe", "not UTF-8 text"),
        (b'{"taguru_evaluate_thresholds":true}', "taguru_evaluate_thresholds must be 1, got true"),
    ],
)
def test_unreadable_files_are_one_problem(text: bytes, expected: str) -> None:
    with pytest.raises(ThresholdsError) as caught:
        parse_thresholds(text, PATH, CASES)
    assert caught.value.problems[0].startswith(expected)


def test_a_bound_must_be_finite_even_when_json_overflows_or_spells_nan() -> None:
    raw = (
        b'{"taguru_evaluate_thresholds":1,"aggregate":'
        b'{"recall.mrr":{"min":1e400},"recall.ndcg":{"max":NaN}}}'
    )
    with pytest.raises(ThresholdsError) as caught:
        parse_thresholds(raw, PATH, CASES)
    assert caught.value.problems == [
        "aggregate: 'recall.mrr': min inf must be finite",
        "aggregate: 'recall.ndcg': max nan must be finite",
    ]


def test_an_override_for_a_known_case_may_name_only_per_case_metrics() -> None:
    found = problems(
        {
            "taguru_evaluate_thresholds": 1,
            "cases": {"overrides": {"known-miss-003": {"budget.items_used": {"max": 4}}}},
        }
    )
    assert found == [
        "cases.overrides.known-miss-003: unknown metric name 'budget.items_used' (cases.* takes "
        "only the per-case metrics: recall.recall_at_k, recall.mrr, recall.ndcg, "
        "coverage.concepts, coverage.labels, coverage.associations, citations.recall, "
        "citations.locator_validity, latency.passage_ms, diversity.sources)"
    ]


def test_every_catalog_metric_may_be_bounded_in_aggregate() -> None:
    loaded = load({"taguru_evaluate_thresholds": 1, "aggregate": {"rerank.ran": {"min": 0.5}}})
    assert loaded.aggregate == {"rerank.ran": Bound(min=0.5)}


# ----------------------------------------------------------------------------- checking


def case(case_id: str, **blocks: Any) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "query": "q",
        "limit": 10,
        "passage": {"outcome": "searched", "hits": [], "latency_ms": 12},
        **blocks,
        "missed": [],
        "missed_truncated": 0,
    }


def recall(value: float) -> dict[str, Any]:
    return {"recall_at_k": value, "mrr": value, "ndcg": value, "expected_total": 1, "matched": 1}


def artifact(cases: list[dict[str, Any]], *, stable: bool = True) -> dict[str, Any]:
    return {
        "taguru_evaluation": 1,
        "corpus": {"stable": stable},
        "definitions": {
            "recall.recall_at_k": {"statistic": "distribution"},
            "citations.resolved": {"statistic": "ratio"},
            "latency.query_ms": {"statistic": "distribution"},
        },
        "cases": cases,
        "metrics": {
            "recall.recall_at_k": {
                "n": 2,
                "min": 0.5,
                "p50": 0.5,
                "p90": 1.0,
                "p99": 1.0,
                "max": 1.0,
                "mean": 0.75,
                "sum": 1.5,
            },
            "citations.resolved": {"value": 0.75, "n": 4, "numerator": 3},
            "latency.query_ms": {
                "n": 0,
                "min": None,
                "p50": None,
                "p90": None,
                "p99": None,
                "max": None,
                "mean": None,
                "sum": None,
            },
        },
    }


GATE = Thresholds(
    sha256="ab" * 32,
    aggregate={"citations.resolved": Bound(min=0.75), "recall.recall_at_k": Bound(min=0.7)},
    case_default={"recall.recall_at_k": Bound(min=0.6), "latency.passage_ms": Bound(max=100)},
    case_overrides={"known-miss-003": {"recall.recall_at_k": Bound(min=0.0)}},
)


def test_a_passing_run_carries_only_the_verdict_and_the_file_identity() -> None:
    run = artifact(
        [case("brand-origin-001", recall=recall(1.0)), case("known-miss-003", recall=recall(0.5))]
    )
    assert check(GATE, run) == {"sha256": "ab" * 32, "passed": True, "allow_unstable_corpus": False}


def test_a_violating_run_lists_aggregate_then_case_violations_min_before_max() -> None:
    gate = Thresholds(
        sha256="cd" * 32,
        aggregate={"recall.recall_at_k": Bound(min=0.8), "latency.query_ms": Bound(max=50)},
        case_default={
            "recall.recall_at_k": Bound(min=0.6, max=0.4),  # both sides broken: min wins
            "latency.passage_ms": Bound(max=10),
        },
    )
    run = artifact([case("brand-origin-001", recall=recall(0.5))])
    assert check(gate, run) == {
        "sha256": "cd" * 32,
        "passed": False,
        "allow_unstable_corpus": False,
        "violations": [
            {
                "scope": "aggregate",
                "metric": "latency.query_ms",
                "actual": None,
                "reason": "no samples for this metric (n=0)",
            },
            {
                "scope": "aggregate",
                "metric": "recall.recall_at_k",
                "bound": "min",
                "threshold": 0.8,
                "actual": 0.75,
                "reason": "0.750000 < min 0.800000",
            },
            {
                "scope": "case",
                "case_id": "brand-origin-001",
                "metric": "latency.passage_ms",
                "bound": "max",
                "threshold": 10,
                "actual": 12.0,
                "reason": "12.000000 > max 10.000000",
            },
            {
                "scope": "case",
                "case_id": "brand-origin-001",
                "metric": "recall.recall_at_k",
                "bound": "min",
                "threshold": 0.6,
                "actual": 0.5,
                "reason": "0.500000 < min 0.600000",
            },
        ],
    }


def test_an_aggregate_the_run_never_reported_is_a_no_samples_violation() -> None:
    gate = Thresholds(sha256="0" * 64, aggregate={"rerank.ran": Bound(min=0.5)})
    block = check(gate, artifact([]))
    assert block["violations"] == [
        {
            "scope": "aggregate",
            "metric": "rerank.ran",
            "actual": None,
            "reason": "no samples for this metric (n=0)",
        }
    ]


def test_the_override_wins_for_its_case_only() -> None:
    run = artifact(
        [case("brand-origin-001", recall=recall(0.5)), case("known-miss-003", recall=recall(0.1))]
    )
    block = check(
        Thresholds(
            sha256="0" * 64, case_default=GATE.case_default, case_overrides=GATE.case_overrides
        ),
        run,
    )
    assert [(v["case_id"], v["metric"]) for v in block["violations"]] == [
        ("brand-origin-001", "recall.recall_at_k")
    ]


def test_a_metric_the_case_never_computed_is_skipped_not_violated() -> None:
    gate = Thresholds(
        sha256="0" * 64,
        case_default={"citations.recall": Bound(min=1.0), "coverage.labels": Bound(min=0.5)},
    )
    block = check(gate, artifact([case("brand-origin-001")]))
    assert block == {
        "sha256": "0" * 64,
        "passed": True,
        "allow_unstable_corpus": False,
        "skipped": [
            "case 'brand-origin-001': 'citations.recall' not applicable — the case declared "
            "no matching expectation, or its lane did not complete",
            "case 'brand-origin-001': 'coverage.labels' not applicable — the case declared "
            "no matching expectation, or its lane did not complete",
        ],
    }


def test_an_unstable_corpus_fails_the_gate_by_default() -> None:
    block = check(Thresholds(sha256="0" * 64), artifact([], stable=False))
    assert block["passed"] is False
    assert block["violations"] == [
        {
            "scope": "corpus",
            "metric": "corpus.stable",
            "actual": None,
            "reason": "the context's revision changed during the run (corpus.revision_before "
            "!= corpus.revision_after) and allow_unstable_corpus is false",
        }
    ]


def test_allow_unstable_corpus_opts_out_of_the_corpus_gate() -> None:
    gate = Thresholds(sha256="0" * 64, allow_unstable_corpus=True)
    assert check(gate, artifact([], stable=False)) == {
        "sha256": "0" * 64,
        "passed": True,
        "allow_unstable_corpus": True,
    }


def test_a_violation_never_echoes_case_text() -> None:
    run = artifact([case("c1", recall=recall(0.0))])
    run["cases"][0]["query"] = "TOP-SECRET query"
    gate = Thresholds(sha256="0" * 64, case_default={"recall.mrr": Bound(min=1.0)})
    assert "TOP-SECRET" not in json.dumps(check(gate, run))


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"null", "the file must hold one JSON object"),  # valid JSON, no object: said
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply to read"),  # not a RecursionError
    ],
)
def test_a_file_that_is_no_object_is_always_said(raw: bytes, says: str) -> None:
    """Found by tests/test_fuzz_evaluate.py: 'null' was exit 2 with no line at all."""
    with pytest.raises(ThresholdsError) as caught:
        parse_thresholds(raw, PATH, CASES)
    assert caught.value.problems and says in str(caught.value)
