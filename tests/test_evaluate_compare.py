"""evaluate compare: two evaluation.json runs in, changes.jsonl out (EVALUATE.md §3.8)."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.cli.evaluate_compare import main
from taguru_ray.evaluate import compare as compare_module
from taguru_ray.evaluate.compare import EvaluationInputError, compare, load_json, render

NOW = "2026-08-01T00:00:00Z"


def recall(value: float) -> dict[str, Any]:
    return {"recall_at_k": value, "mrr": 0.5, "ndcg": 0.5, "expected_total": 2, "matched": 1}


def citations(recall_value: float, validity: float = 1.0) -> dict[str, Any]:
    return {
        "recall": {"expected_total": 2, "matched": 1, "value": recall_value},
        "validity": {"expected_total": 2, "valid": 2, "value": validity},
        "checks": [],
    }


def case(case_id: str, latency_ms: int = 5, **blocks: Any) -> dict[str, Any]:
    return {
        "case_id": case_id,
        "query": "q",
        "limit": 10,
        "passage": {"outcome": "searched", "hits": [], "latency_ms": latency_ms},
        **blocks,
        "missed": [],
        "missed_truncated": 0,
    }


def distribution(mean: float | None, n: int) -> dict[str, Any]:
    return {"n": n, "min": None, "p50": None, "p90": None, "p99": None, "max": None, "mean": mean}


def run(generated_at: str, cases: list[dict[str, Any]], metrics: dict[str, Any]) -> dict[str, Any]:
    return {
        "taguru_evaluation": 1,
        "generated_at": generated_at,
        "inputs": {"context": "sake", "mode": "baseline"},
        "corpus": {"revision_after": {"graph": 3, "passages": 2, "config": 1}, "stable": True},
        "thresholds": None,
        "definitions": {
            "recall.recall_at_k": {"statistic": "distribution", "unit": "ratio"},
            "citations.resolved": {"statistic": "ratio", "unit": "ratio"},
            "latency.query_ms": {"statistic": "distribution", "unit": "ms"},
        },
        "cases": cases,
        "metrics": metrics,
    }


BASE = run(
    "2026-07-28T10:05:12Z",
    [
        case("a-regressed", recall=recall(0.5), citations=citations(1.0)),
        case("b-improved", coverage={"concepts": {"expected": 2, "matched": 1, "value": 0.5}}),
        case("c-removed", recall=recall(1.0), diversity_sources=1),
        case("e-same", latency_ms=5, recall=recall(0.5)),
    ],
    {
        "recall.recall_at_k": distribution(0.5, 3),
        "citations.resolved": {"value": 1.0, "n": 2, "numerator": 2},
        "latency.query_ms": distribution(None, 0),
    },
)
HEAD = run(
    "2026-07-29T10:05:12Z",
    [
        case("e-same", latency_ms=500, recall=recall(0.5)),  # latency never classifies
        case("d-added", citations=citations(0.5, 0.0)),
        case("b-improved", coverage={"concepts": {"expected": 2, "matched": 2, "value": 1.0}}),
        case("a-regressed", recall=recall(0.75), citations=citations(0.5)),
    ],
    {
        "recall.recall_at_k": distribution(0.75, 3),
        "citations.resolved": {"value": 0.5, "n": 2, "numerator": 1},
        "latency.query_ms": distribution(None, 0),
    },
)

EXPECTED_HEADER = {
    "kind": "header",
    "taguru_evaluation_changes": 1,
    "generated_at": NOW,
    "base": {
        "path": "base.json",
        "context": "sake",
        "taguru_evaluation": 1,
        "generated_at": "2026-07-28T10:05:12Z",
        "corpus_revision_after": {"graph": 3, "passages": 2, "config": 1},
        "corpus_stable": True,
        "thresholds_sha256": None,
    },
    "head": {
        "path": "head.json",
        "context": "sake",
        "taguru_evaluation": 1,
        "generated_at": "2026-07-29T10:05:12Z",
        "corpus_revision_after": {"graph": 3, "passages": 2, "config": 1},
        "corpus_stable": True,
        "thresholds_sha256": None,
    },
    "counts": {
        "improved": 1,
        "regressed": 1,
        "added": 1,
        "removed": 1,
        "unchanged": 1,
        "cases_base": 4,
        "cases_head": 4,
    },
    "metrics": [
        {
            "metric": "citations.resolved",
            "statistic": "ratio",
            "sides": {"base": 1.0, "head": 0.5},
            "delta": -0.5,
        },
        {
            "metric": "recall.recall_at_k",
            "statistic": "distribution",
            "sides": {"base": 0.5, "head": 0.75},
            "delta": 0.25,
        },
    ],
}

EXPECTED_RECORDS = [
    '{"kind":"regressed","case_id":"a-regressed","metrics":['
    '{"metric":"recall.recall_at_k","sides":{"base":0.5,"head":0.75},"delta":0.25,'
    '"direction":"improved"},'
    '{"metric":"citations.recall","sides":{"base":1.0,"head":0.5},"delta":-0.5,'
    '"direction":"regressed"}]}',
    '{"kind":"improved","case_id":"b-improved","metrics":['
    '{"metric":"coverage.concepts","sides":{"base":0.5,"head":1.0},"delta":0.5,'
    '"direction":"improved"}]}',
    '{"kind":"removed","case_id":"c-removed","metrics":['
    '{"metric":"recall.recall_at_k","sides":{"base":1.0,"head":null},"delta":null,'
    '"direction":"not_comparable"},'
    '{"metric":"recall.mrr","sides":{"base":0.5,"head":null},"delta":null,'
    '"direction":"not_comparable"},'
    '{"metric":"recall.ndcg","sides":{"base":0.5,"head":null},"delta":null,'
    '"direction":"not_comparable"},'
    '{"metric":"diversity.sources","sides":{"base":1.0,"head":null},"delta":null,'
    '"direction":"not_comparable"}]}',
    '{"kind":"added","case_id":"d-added","metrics":['
    '{"metric":"citations.recall","sides":{"base":null,"head":0.5},"delta":null,'
    '"direction":"not_comparable"},'
    '{"metric":"citations.locator_validity","sides":{"base":null,"head":0.0},"delta":null,'
    '"direction":"not_comparable"}]}',
]


def changes(base: dict[str, Any], head: dict[str, Any]) -> list[dict[str, Any]]:
    return compare(base, head, "base.json", "head.json", generated_at=NOW)


def warnings_of(base: dict[str, Any], head: dict[str, Any]) -> list[str]:
    return changes(base, head)[0].get("warnings", [])


# ----------------------------------------------------------------------------- the core


def test_one_case_of_each_kind_gives_the_exact_lines_in_case_id_order() -> None:
    lines = render(changes(BASE, HEAD)).decode("utf-8").splitlines()
    assert json.loads(lines[0]) == EXPECTED_HEADER
    assert list(json.loads(lines[0])) == list(EXPECTED_HEADER)  # key order too
    assert lines[1:] == EXPECTED_RECORDS


def test_a_case_with_one_metric_down_and_another_up_is_regressed_listing_both() -> None:
    record = changes(BASE, HEAD)[1]
    assert record["kind"] == "regressed"
    assert [m["direction"] for m in record["metrics"]] == ["improved", "regressed"]


def test_comparing_a_run_with_itself_moves_nothing() -> None:
    lines = changes(BASE, BASE)
    assert len(lines) == 1
    assert lines[0]["counts"]["unchanged"] == 4
    assert "warnings" not in lines[0]
    assert all(entry["delta"] == 0.0 for entry in lines[0]["metrics"])


def test_a_sub_epsilon_delta_is_unchanged() -> None:
    head = copy.deepcopy(BASE)
    head["cases"][0]["recall"]["recall_at_k"] = 0.5 + 1e-12
    assert changes(BASE, head)[0]["counts"]["unchanged"] == 4


def test_the_output_is_a_pure_function_of_the_inputs() -> None:
    assert render(changes(BASE, HEAD)) == render(changes(copy.deepcopy(BASE), HEAD))


def test_non_ascii_case_ids_stay_raw_and_sort_by_code_point() -> None:
    base = run("t", [case("酒-2", recall=recall(0.5)), case("b", recall=recall(0.5))], {})
    head = run("t", [case("酒-2", recall=recall(0.25)), case("b", recall=recall(1.0))], {})
    text = render(changes(base, head)).decode("utf-8")
    assert '"case_id":"酒-2"' in text
    assert [json.loads(line)["case_id"] for line in text.splitlines()[1:]] == ["b", "酒-2"]


# ----------------------------------------------------------------------------- warnings


def test_mismatched_runs_warn_in_a_fixed_order_and_never_refuse() -> None:
    base = copy.deepcopy(BASE)
    head = copy.deepcopy(HEAD)
    head["inputs"]["context"] = "shochu"
    head["corpus"]["revision_after"]["graph"] = 4
    base["corpus"]["stable"] = False
    head["thresholds"] = {"sha256": "0123456789abcdef" * 4, "passed": True}
    head["inputs"]["budget"] = {"max_items": 40, "max_bytes": 65536, "max_tokens": 4000}
    assert warnings_of(base, head) == [
        "context differs: base 'sake', head 'shochu'",
        "corpus.revision_after differs between base and head",
        "base.json: corpus.stable is false — the corpus changed mid-run",
        "thresholds file differs: base none, head 0123456789ab",
        "budget differs: base none (untruncated baseline), head max_items=40 "
        "max_bytes=65536 max_tokens=4000 — not an equal-budget comparison",
    ]


def test_an_equal_budget_on_both_sides_does_not_warn() -> None:
    base, head = copy.deepcopy(BASE), copy.deepcopy(HEAD)
    for side in (base, head):
        side["inputs"]["budget"] = {"max_items": 40, "max_bytes": 65536, "max_tokens": 4000}
    assert warnings_of(base, head) == []


def test_a_stamp_mismatch_within_the_accepted_range_warns(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compare_module, "EVALUATION_STAMPS", range(1, 3))
    head = {**HEAD, "taguru_evaluation": 2}
    assert warnings_of(BASE, head) == ["taguru_evaluation stamp differs: base 1, head 2"]
    assert changes(BASE, head)[0]["head"]["taguru_evaluation"] == 2


def test_a_duplicate_case_id_warns_and_the_last_occurrence_is_compared() -> None:
    base = run("t", [case("dup"), case("dup", recall=recall(0.5))], {})
    head = run("t", [case("dup", recall=recall(1.0))], {})
    lines = changes(base, head)
    assert lines[0]["warnings"] == [
        "base: duplicate case_id 'dup' — the last occurrence is compared"
    ]
    assert lines[0]["counts"]["cases_base"] == 1
    assert lines[1]["kind"] == "improved"


def test_a_value_on_one_side_only_warns_and_does_not_classify() -> None:
    base = run("t", [case("c1")], {})
    head = run("t", [case("c1", recall=recall(0.9))], {})
    lines = changes(base, head)
    assert lines[0]["counts"]["unchanged"] == 1
    assert lines[0]["warnings"] == [
        f"case 'c1': '{metric}' has a value on one side only — left out of the classification"
        for metric in ("recall.recall_at_k", "recall.mrr", "recall.ndcg")
    ]


def test_an_aggregate_without_a_readable_definition_warns_and_is_left_out() -> None:
    base = copy.deepcopy(BASE)
    base["metrics"]["mystery.metric"] = {"value": 1.0, "n": 1, "numerator": 1}
    base["metrics"]["weird"] = {"n": 1}
    base["definitions"]["weird"] = {"statistic": "histogram"}
    lines = changes(base, BASE)
    assert [entry["metric"] for entry in lines[0]["metrics"]] == [
        "citations.resolved",
        "recall.recall_at_k",
    ]
    assert lines[0]["warnings"] == [
        "base: metric 'mystery.metric' has no definitions entry — left out of the aggregate diff",
        "base: metric 'weird': unknown statistic 'histogram'",
    ]


def test_an_aggregate_on_one_side_only_has_no_delta() -> None:
    head = copy.deepcopy(HEAD)
    head["metrics"]["citations.resolved"] = {"value": None, "n": 0, "numerator": None}
    entry = changes(BASE, head)[0]["metrics"][0]
    assert entry == {
        "metric": "citations.resolved",
        "statistic": "ratio",
        "sides": {"base": 1.0, "head": None},
        "delta": None,
    }


# ----------------------------------------------------------------------------- reading


def test_every_field_but_the_stamp_is_optional() -> None:
    lines = changes({"taguru_evaluation": 1}, {"taguru_evaluation": 1})
    assert lines[0]["base"] == {
        "path": "base.json",
        "context": None,
        "taguru_evaluation": 1,
        "generated_at": None,
        "corpus_revision_after": None,
        "corpus_stable": None,
        "thresholds_sha256": None,
    }
    assert lines[0]["counts"]["cases_base"] == 0
    assert lines[0]["metrics"] == []


@pytest.mark.parametrize(
    ("document", "why"),
    [
        ({"taguru_evaluation": 2}, "taguru_evaluation must be within 1..=1, got 2"),
        ({}, "taguru_evaluation must be within 1..=1, got none"),
        ({"taguru_evaluation": "1"}, 'taguru_evaluation must be within 1..=1, got "1"'),
        ([], "not an evaluation report (not a JSON object)"),
        (
            {"taguru_evaluation": 1, "cases": [{"case_id": "c", "recall": {"mrr": "x"}}]},
            "cases[0].recall.mrr must be a number",
        ),
        (
            {"taguru_evaluation": 1, "corpus": {"stable": "yes"}},
            "corpus.stable must be true or false",
        ),
    ],
)
def test_a_report_this_build_cannot_read_is_refused_naming_the_path(
    document: Any, why: str
) -> None:
    with pytest.raises(EvaluationInputError) as caught:
        compare(BASE, document, "base.json", "head.json", generated_at=NOW)
    assert str(caught.value) == f"head.json: {why}"
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("text", [b"{not json", b'{"taguru_evaluation": NaN}', b"[1e400]"])
def test_malformed_json_is_refused(text: bytes) -> None:
    with pytest.raises(EvaluationInputError, match=r"^x\.json: malformed evaluation\.json: "):
        load_json(text, "x.json")


# ----------------------------------------------------------------------------- the CLI


def write(path: Path, document: Any) -> str:
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return str(path)


def leftovers(root: Path) -> list[str]:
    return sorted(str(p) for p in root.rglob("*") if ".tmp" in p.name)


def test_the_cli_writes_changes_jsonl_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = write(tmp_path / "base.json", BASE), write(tmp_path / "head.json", HEAD)
    out = tmp_path / "changes.jsonl"
    assert main([base, head, "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", header["generated_at"])
    assert header["base"]["path"] == base
    assert header["counts"] == EXPECTED_HEADER["counts"]
    assert lines[1:] == EXPECTED_RECORDS
    printed = capsys.readouterr()
    assert (
        "1 regressed" in printed.out
        and "regressed: a-regressed (citations.recall -0.500)" in printed.out
    )
    assert printed.err == ""
    assert leftovers(tmp_path) == []


def test_the_cli_defaults_out_to_changes_jsonl(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, head = write(tmp_path / "base.json", BASE), write(tmp_path / "head.json", BASE)
    monkeypatch.chdir(tmp_path)
    assert main([base, head]) == 0
    assert (tmp_path / "changes.jsonl").is_file()


def test_the_cli_prints_each_warning_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    head_doc = copy.deepcopy(HEAD)
    head_doc["inputs"]["context"] = "shochu"
    base, head = write(tmp_path / "b.json", BASE), write(tmp_path / "h.json", head_doc)
    assert main([base, head, "--out", str(tmp_path / "c.jsonl")]) == 0
    assert capsys.readouterr().err == (
        "taguru-ray: evaluate compare: warning: context differs: base 'sake', head 'shochu'\n"
    )


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"{not json", "malformed evaluation.json: Expecting property name enclosed in double"),
        (b'{"taguru_evaluation": 2}', "taguru_evaluation must be within 1..=1, got 2"),
    ],
)
def test_the_cli_exits_2_on_a_bad_report_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, why: str
) -> None:
    base = write(tmp_path / "base.json", BASE)
    head = tmp_path / "head.json"
    head.write_bytes(content)
    out = tmp_path / "changes.jsonl"
    assert main([base, str(head), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"taguru-ray: evaluate compare: {head}: {why}")
    assert err.count("\n") == 1
    assert not out.exists()


def test_the_cli_exits_2_on_a_missing_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.json"
    assert main([str(missing), str(missing)]) == 2
    assert capsys.readouterr().err == (
        f"taguru-ray: evaluate compare: {missing}: cannot read: No such file or directory\n"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["only-one.json"],
        ["a", "b", "c"],
        ["a", "b", "--out", "x", "--out", "y"],
        ["a", "b", "--bogus"],
    ],
)
def test_the_cli_exits_2_on_a_usage_error(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("taguru-ray: evaluate compare: ")
    assert err.count("\n") == 1


def test_the_cli_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "BASE" in capsys.readouterr().out


def test_the_cli_exits_1_when_out_sits_in_a_directory_that_cannot_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = write(tmp_path / "base.json", BASE), write(tmp_path / "head.json", HEAD)
    (tmp_path / "a-file").write_text("not a directory")
    out = tmp_path / "a-file" / "changes.jsonl"
    assert main([base, head, "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"taguru-ray: evaluate compare: writing {out}: ")
    assert err.count("\n") == 1
    assert leftovers(tmp_path) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_the_cli_exits_1_when_out_sits_in_a_read_only_directory(tmp_path: Path) -> None:
    base, head = write(tmp_path / "base.json", BASE), write(tmp_path / "head.json", HEAD)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        assert main([base, head, "--out", str(locked / "changes.jsonl")]) == 1
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_the_cli_exits_1_when_out_is_a_directory_and_leaves_it_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, head = write(tmp_path / "base.json", BASE), write(tmp_path / "head.json", HEAD)
    folder = tmp_path / "folder"
    folder.mkdir()
    assert main([base, head, "--out", str(folder)]) == 1
    assert capsys.readouterr().err == (
        f"taguru-ray: evaluate compare: writing {folder}: is a directory\n"
    )
    assert list(folder.iterdir()) == []
