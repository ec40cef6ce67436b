"""`benchmark search` without a server: its arguments, corpus names and markers, the
header rewrite, one case against literal search results, recall, overlap and the
artifact's keys (BENCHMARK.md §3, §5 "search / eval")."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.benchmark.compare.manifest import SegmentInfo
from taguru_ray.benchmark.search.corpora import (
    CorpusBlock,
    HeaderError,
    corpus_name,
    ownership_marker,
    rewrite_header,
)
from taguru_ray.benchmark.search.queries import (
    Target,
    lane_counts,
    pair_key,
    pair_overlap,
    run_case,
)
from taguru_ray.benchmark.search.recall import expected_items, resolve_source, score
from taguru_ray.benchmark.search.report import (
    DEFINITIONS,
    VERSION_KEY,
    Inputs,
    artifact,
    model_metrics,
)
from taguru_ray.benchmark.search.results import ResultsReader, read_results
from taguru_ray.benchmark.search.run import Request, run_search
from taguru_ray.cli.benchmark_search import _Usage, main, parse_args
from taguru_ray.errors import UsageError
from taguru_ray.evalset import Case, ExpectedSource, Options, limit_problem
from taguru_ray.measure import Distribution
from taguru_ray.remote.address import mask_url
from taguru_ray.remote.client import RemoteError

VERDICT_WORDS = ("winner", "best", "recommended", "overall", "delta_vs")
NO_PROVIDER = "no embedding provider is configured"


# ------------------------------------------------------------------ arguments


def test_eval_and_results_dir_are_both_required(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert main(["--eval", "e.jsonl"]) == 2
    assert main(["out"]) == 2
    err = capsys.readouterr().err
    assert "--eval FILE is required" in err and "requires a RESULTS_DIR" in err
    assert err.count("try 'taguru-ray benchmark search --help'") == 3


def test_a_full_argument_set_parses_and_the_url_loses_its_trailing_slash() -> None:
    request = parse_args(
        ["--eval", "e.jsonl", "--url", "http://localhost:8248/", "--config", "c.env",
         "--run", "2", "--context-prefix", "bench", "--skip-import", "out"]
    )  # fmt: skip
    assert request == Request(
        eval_path="e.jsonl",
        results_dir="out",
        url="http://localhost:8248",
        config="c.env",
        run=2,
        context_prefix="bench",
        skip_import=True,
    )


def test_defaults_and_the_equals_form() -> None:
    request = parse_args(["--eval=e.jsonl", "out", "--store=st"])
    assert request == Request("e.jsonl", "out", store="st")
    assert request is not None and request.run == 1 and not request.skip_import


@pytest.mark.parametrize("value", ["0", "nope", "-1", "1.5", "", "２"])
def test_run_must_be_a_positive_integer(value: str) -> None:
    with pytest.raises(_Usage, match="--run needs a positive integer"):
        parse_args(["--eval", "e.jsonl", "--run", value, "out"])


def test_a_repeated_run_is_last_wins() -> None:
    request = parse_args(["--eval", "e.jsonl", "--run", "3", "--run", "2", "out"])
    assert request is not None and request.run == 2


@pytest.mark.parametrize("flag", ["--eval", "--url", "--config", "--context-prefix", "--store"])
def test_a_value_flag_given_twice_is_a_usage_error(flag: str) -> None:
    with pytest.raises(_Usage, match=f"{flag} given twice"):
        parse_args(["--eval", "e.jsonl", "out", flag, "a", flag, "b"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--eval", "e.jsonl", "--bogus", "out"], "unknown flag '--bogus'"),
        (["--eval", "e.jsonl", "out1", "out2"], "exactly one RESULTS_DIR"),
        (["--eval", "e.jsonl", "out", "--url"], "--url needs a value"),
        (["--eval", "e", "--url", "http://h", "--store", "s", "out"], "give one"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    with pytest.raises(_Usage, match=message):
        parse_args(argv)
    assert main(argv) == 2


def test_help_prints_the_usage_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--eval", "e.jsonl", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: taguru-ray benchmark search --eval FILE")
    assert "--store DIR" in out


def test_the_benchmark_verb_lists_search(capsys: pytest.CaptureFixture[str]) -> None:
    from taguru_ray.cli.benchmark import main as benchmark_main

    assert benchmark_main(["--help"]) == 0
    assert "search" in capsys.readouterr().out
    assert benchmark_main(["search", "-h"]) == 0


# ------------------------------------------------------------------ addresses and limits


def test_mask_url_keeps_scheme_host_and_port_only() -> None:
    assert mask_url("https://user:token@host:8443/x?y=1") == "https://host:8443"
    assert mask_url("http://example.com/a") == "http://example.com"
    assert mask_url("not a url") == "<unparseable-url>"


def case(
    limit: int | None = None,
    sources: tuple[ExpectedSource, ...] = (),
    concepts: tuple[str, ...] = (),
    case_id: str = "c1",
    cues: tuple[str, ...] = (),
) -> Case:
    return Case(case_id, "aomine brewery", cues, sources, concepts, options=Options(limit=limit))


def test_limits_zero_and_1001_are_refused_one_and_1000_and_absent_are_not() -> None:
    assert "options.limit must be 1..=1000, got 0" in (limit_problem(case(0)) or "")
    assert limit_problem(case(1001)) is not None
    assert [limit_problem(case(n)) for n in (1, 1000, None)] == [None, None, None]


# ------------------------------------------------------------------ names and markers


def test_a_corpus_is_named_prefix_double_colon_model() -> None:
    assert corpus_name("sake", "gpt-4o") == "sake::gpt-4o"


def test_pair_key_is_symmetric_and_length_prefixed() -> None:
    assert pair_key("b", "a") == pair_key("a", "b") == "1:a__b"
    assert pair_key("a", "b__c") != pair_key("a__b", "c")


def test_the_marker_names_run_model_and_run_index() -> None:
    first = ownership_marker("20260726T091422Z-3f7a1c", "m1", 1)
    assert first == (
        "taguru benchmark search corpus: run 20260726T091422Z-3f7a1c, model m1, run_index 1"
    )
    second = ownership_marker("20260726T091422Z-3f7a1c", "m1", 2)
    assert second != first and "run_index 2" in second


# ------------------------------------------------------------------ header rewrite


def test_the_header_is_rewritten_and_every_other_line_rides_through_byte_for_byte() -> None:
    original = (
        b'{"taguru_batch":1,"context":"sake","source":"docs/a.md"}\n'
        b'{"subject":"s", "label":"l","object":"o","weight":1.0}\n'
        b'{"passage":"\\u9752 x"}\n'
    )
    assert rewrite_header(original, "sake::gpt-4o", "MARK") == (
        b'{"context":"sake::gpt-4o","create":{"description":"MARK"},"source":"docs/a.md",'
        b'"taguru_batch":1}\n'
        b'{"subject":"s", "label":"l","object":"o","weight":1.0}\n'
        b'{"passage":"\\u9752 x"}\n'
    )


def test_the_rewrite_overwrites_create_drops_blank_lines_and_ends_with_a_newline() -> None:
    original = (
        b'{"taguru_batch":1,"context":"c","source":"s","create":{"description":"cell"}}\r\n'
        b"\n  \n"
        b'{"passage":"x"}'
    )
    rewritten = rewrite_header(original, "c2", "m")
    lines = rewritten.split(b"\n")
    assert json.loads(lines[0])["create"] == {"description": "m"}
    assert lines[1:] == [b'{"passage":"x"}', b""]


def test_a_newest_shape_header_loses_its_context_id_for_the_corpus_name() -> None:
    original = (
        b'{"type":"source","version":"2026-09-17","id":"corpus/a.md",'
        b'"context_id":"5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f","create":{"name":"sake"}}\n'
        b'{"passage":"x"}\n'
    )
    assert rewrite_header(original, "sake::m1", "MARK") == (
        b'{"context":"sake::m1","create":{"description":"MARK"},"id":"corpus/a.md",'
        b'"type":"source","version":"2026-09-17"}\n'
        b'{"passage":"x"}\n'
    )


@pytest.mark.parametrize("data", [b"", b"not json\n", b"[1]\n", b"\n{}\n"])
def test_an_empty_or_non_json_header_is_refused(data: bytes) -> None:
    with pytest.raises(HeaderError):
        rewrite_header(data, "ctx", "marker")


# ------------------------------------------------------------------ one case, literal results


def lanes_plan(vector_ran: bool = False) -> dict[str, Any]:
    vector = {"ran": True} if vector_ran else {"ran": False, "reason": NO_PROVIDER}
    return {"contexts": [{"context": "x", "lanes": {"bm25": {"ran": True}, "vector": vector}}]}


def typed_hit(source: str, paragraph: int, text: str = "", lanes: str = "b") -> dict[str, Any]:
    evidence = {"rank": 1, "score": 1.0}
    return {
        "source": source,
        "paragraph": paragraph,
        "score": 1.0,
        "text": text,
        "lanes": {
            **({"bm25": evidence} if "b" in lanes else {}),
            **({"vector": evidence} if "v" in lanes else {}),
        },
    }


def typed(*hits: dict[str, Any]) -> dict[str, Any]:
    return {"plan": lanes_plan(), "hits": list(hits)}


def searcher(answers: Mapping[str, Any]) -> Any:
    def search(context: str, body: Mapping[str, Any]) -> Any:
        answer = answers[context]
        if isinstance(answer, Exception):
            raise answer
        return answer

    return search


SEGMENTS = (
    SegmentInfo("brewery", "corpus/brewery.md", "sha-b", 3, ()),
    SegmentInfo("rice", "corpus/rice.md", "sha-r", 2, ()),
)
TWO = [Target("m2", "p::m2", True), Target("m1", "p::m1", True)]


def test_the_typed_shape_gives_the_plan_lanes_and_the_vector_reason() -> None:
    answers = {"p::m1": typed(typed_hit("corpus/brewery.md", 0, "x")), "p::m2": typed()}
    block, warnings = run_case(case(), TWO, SEGMENTS, searcher(answers))
    m1 = block["models"]["m1"]
    assert list(block["models"]) == ["m1", "m2"]  # id order
    assert m1["plan"] == {"bm25": {"ran": True}, "vector": {"ran": False, "reason": NO_PROVIDER}}
    assert m1["lanes"] == {"bm25_only": 1, "vector_only": 0, "both": 0, "neither": 0, "unknown": 0}
    assert m1["hits"] == [{"rank": 1, "source": "corpus/brewery.md", "paragraph": 0}]
    assert (m1["hit_count"], m1["empty"], m1["distinct_sources"]) == (1, False, 1)
    assert block["models"]["m2"]["empty"] is True
    assert "recall" not in m1 and "cues" not in block and warnings == []
    assert block["pairs"] == {
        "2:m1__m2": {
            "outcome": "compared",
            "jaccard": 0.0,
            "shared_hits": 0,
            "mean_rank_difference": None,
        }
    }


def test_a_bare_array_and_hits_without_the_typed_shape_have_no_plan() -> None:
    answers = {
        "p::m1": [{"source": "corpus/a.md", "paragraph": 0, "score": 0.5, "text": "hello"}],
        "p::m2": {"hits": [{"source": "corpus/a.md", "paragraph": 1, "text": "x"}]},
    }
    block, _ = run_case(case(), TWO, SEGMENTS, searcher(answers))
    for model, paragraph in (("m1", 0), ("m2", 1)):
        searched = block["models"][model]
        assert "plan" not in searched
        assert searched["lanes"]["unknown"] == 1
        assert searched["hits"][0]["paragraph"] == paragraph


def test_an_unrecognisable_answer_or_a_failed_call_fails_that_model_only() -> None:
    answers = {"p::m1": {"foo": 1}, "p::m2": RemoteError("http://h/x answered 500: boom", 500)}
    block, _ = run_case(case(), [*TWO, Target("m3", "p::m3", False)], SEGMENTS, searcher(answers))
    models = block["models"]
    assert models["m1"] == {
        "outcome": "failed",
        "message": "response carries no recognizable hits (plan/hits shape mismatch)",
    }
    assert models["m2"] == {"outcome": "failed", "message": "http://h/x answered 500: boom"}
    assert models["m3"]["outcome"] == "failed" and "corpus block" in models["m3"]["message"]
    assert {pair["outcome"] for pair in block["pairs"].values()} == {"unavailable"}
    assert sorted(block["pairs"]) == ["2:m1__m2", "2:m1__m3", "2:m2__m3"]


def test_hits_are_cut_to_the_limit_and_the_request_carries_it() -> None:
    sent: list[Mapping[str, Any]] = []

    def search(context: str, body: Mapping[str, Any]) -> Any:
        sent.append(body)
        return typed(*(typed_hit("corpus/rice.md", n) for n in range(5)))

    block, _ = run_case(case(limit=2, cues=("cue",)), TWO[:1], SEGMENTS, search)
    assert sent == [{"query": "aomine brewery", "limit": 2}]
    assert block["models"]["m2"]["hit_count"] == 2
    assert (block["limit"], block["cues"]) == (2, ["cue"])
    default, _ = run_case(case(), TWO[:1], SEGMENTS, search)
    assert default["limit"] == 10 and sent[-1]["limit"] == 10


def test_lane_counts_split_by_which_lanes_evidenced_each_hit() -> None:
    hits = [
        typed_hit("a", 0, lanes="bv"),
        typed_hit("b", 0, lanes="b"),
        typed_hit("c", 0, lanes=""),
    ]
    assert lane_counts(hits, True) == {
        "bm25_only": 1, "vector_only": 0, "both": 1, "neither": 1, "unknown": 0,
    }  # fmt: skip
    assert lane_counts(hits[:2], False) == {
        "bm25_only": 0, "vector_only": 0, "both": 0, "neither": 0, "unknown": 2,
    }  # fmt: skip


# ------------------------------------------------------------------ source resolution


def segments(*pairs: tuple[str, str]) -> tuple[SegmentInfo, ...]:
    return tuple(SegmentInfo(segment_id, path, "", 0, ()) for segment_id, path in pairs)


def test_an_exact_path_resolves_to_itself() -> None:
    docs = segments(("d1", "corpus/a.md"), ("d2", "corpus/b.md"))
    assert resolve_source("corpus/a.md", docs) == ("corpus/a.md", None)


def test_a_segment_id_resolves_to_its_path() -> None:
    assert resolve_source("brand-001", segments(("brand-001", "corpus/a.md"))) == (
        "corpus/a.md",
        None,
    )


def test_a_unique_path_suffix_resolves_to_that_path() -> None:
    docs = segments(("d1", "/abs/path/corpus/brewery.md"))
    assert resolve_source("corpus/brewery.md", docs) == ("/abs/path/corpus/brewery.md", None)


def test_no_match_is_kept_literally_with_a_warning() -> None:
    path, warning = resolve_source("corpus/gone.md", segments(("d1", "corpus/a.md")))
    assert path == "corpus/gone.md"
    assert warning is not None and "matches no segment" in warning


def test_an_ambiguous_suffix_is_kept_literally_with_a_warning() -> None:
    docs = segments(("d1", "a/brewery.md"), ("d2", "b/brewery.md"))
    path, warning = resolve_source("brewery.md", docs)
    assert path == "brewery.md"
    assert warning is not None and "ambiguous" in warning and "2 segments" in warning


# ------------------------------------------------------------------ recall and MRR


def recall_of(
    hits: list[dict[str, Any]],
    sources: tuple[ExpectedSource, ...] = (),
    concepts: tuple[str, ...] = (),
) -> dict[str, Any]:
    items, _ = expected_items(case(sources=sources, concepts=concepts), SEGMENTS)
    return score(items, hits).to_json()


def test_a_source_without_paragraphs_matches_any_paragraph() -> None:
    found = recall_of([typed_hit("corpus/brewery.md", 7)], (ExpectedSource("corpus/brewery.md"),))
    assert found == {"recall_at_k": 1.0, "mrr": 1.0, "expected_total": 1, "matched": 1}


def test_a_pinned_paragraph_must_be_the_hit_paragraph() -> None:
    found = recall_of([typed_hit("corpus/brewery.md", 0)], (ExpectedSource("brewery", (2,)),))
    assert (found["matched"], found["recall_at_k"], found["mrr"]) == (0, 0.0, 0.0)


def test_relevance_0_leaves_the_denominator_and_recall_is_not_reported() -> None:
    expected = (ExpectedSource("corpus/brewery.md", relevance=0),)
    found = recall_of([typed_hit("corpus/brewery.md", 0)], expected)
    assert (found["expected_total"], found["recall_at_k"]) == (0, 0.0)
    block, _ = run_case(
        case(sources=expected), TWO[:1], SEGMENTS, lambda c, b: typed(typed_hit("x", 0))
    )
    assert block["has_expectations"] is True and "recall" not in block["models"]["m2"]


def test_a_concept_matches_folded_hit_text() -> None:
    found = recall_of(
        [typed_hit("corpus/a.md", 0, "the brewery is called aomine")], (), ("ＡＯＭＩＮＥ",)
    )
    assert (found["matched"], found["recall_at_k"]) == (1, 1.0)


def test_sources_and_concepts_share_one_denominator() -> None:
    found = recall_of(
        [typed_hit("corpus/brewery.md", 0, "青嶺酒造の話")],
        (ExpectedSource("corpus/brewery.md"),),
        ("青嶺酒造",),
    )
    assert (found["expected_total"], found["matched"]) == (2, 2)


def test_mrr_is_one_over_the_position_of_the_first_matching_hit() -> None:
    hits = [typed_hit("corpus/rice.md", 0), typed_hit("corpus/brewery.md", 1)]
    found = recall_of(hits, (ExpectedSource("corpus/brewery.md"),))
    assert found["mrr"] == 0.5
    assert recall_of([], (ExpectedSource("corpus/brewery.md"),)) == {
        "recall_at_k": 0.0, "mrr": 0.0, "expected_total": 1, "matched": 0,
    }  # fmt: skip


def test_sources_resolve_once_per_case_and_score_per_model() -> None:
    expected = (ExpectedSource("corpus/brewery.md"), ExpectedSource("nowhere.md"))
    answers = {"p::m1": typed(typed_hit("corpus/brewery.md", 0)), "p::m2": typed()}
    block, warnings = run_case(case(sources=expected), TWO, SEGMENTS, searcher(answers))
    assert len(warnings) == 1 and warnings[0].startswith("case 'c1': ")
    assert block["models"]["m1"]["recall"] == {
        "recall_at_k": 0.5, "mrr": 1.0, "expected_total": 2, "matched": 1,
    }  # fmt: skip
    assert block["models"]["m2"]["recall"]["matched"] == 0


def test_a_case_without_expectations_has_no_recall() -> None:
    block, _ = run_case(case(), TWO[:1], SEGMENTS, lambda c, b: typed(typed_hit("x", 0)))
    assert block["has_expectations"] is False and "recall" not in block["models"]["m2"]


# ------------------------------------------------------------------ pairs and metrics


def locators(*keys: str) -> list[dict[str, Any]]:
    return [{"rank": n, "source": key, "paragraph": 0} for n, key in enumerate(keys, start=1)]


def test_pair_overlap() -> None:
    assert pair_overlap([], []) == (None, 0, None)
    assert pair_overlap(locators("s1", "s2", "s3"), locators("s2", "s4")) == (0.25, 1, 1.0)
    assert pair_overlap(locators("s1"), locators("s2")) == (0.0, 0, None)


def test_an_unknown_lane_case_keeps_its_hits_under_unknown() -> None:
    block, _ = run_case(
        case(), TWO[:1], SEGMENTS, lambda c, b: [typed_hit("a", 0), typed_hit("b", 1)]
    )
    unknown = model_metrics([block], "m2")["lanes.unknown"]
    assert isinstance(unknown, Distribution) and (unknown.sum, unknown.n) == (2.0, 1)


def full_artifact() -> dict[str, Any]:
    answers = {
        "p::m1": typed(typed_hit("corpus/brewery.md", 0, "aomine"), typed_hit("corpus/rice.md", 1)),
        "p::m2": typed(typed_hit("corpus/rice.md", 1, lanes="bv")),
    }
    targets = [*TWO, Target("m3", "p::m3", False)]
    blocks = []
    warnings: list[str] = []
    for one in (
        case(sources=(ExpectedSource("brewery"), ExpectedSource("gone")), case_id="a"),
        case(concepts=("Aomine",), case_id="b", cues=("aomine",)),
        case(case_id="c"),
    ):
        block, found = run_case(one, targets, SEGMENTS, searcher(answers))
        blocks.append(block)
        warnings += found
    corpus = {
        "m2": CorpusBlock("p::m2", "built", segments_imported=1),
        "m1": CorpusBlock("p::m1", "built", "x.jsonl: bad", 1, 1, {"model": "e", "rows": 3}),
        "m3": CorpusBlock("p::m3", "rejected", "not ours"),
    }
    inputs = Inputs("results", "eval.jsonl", "cases", 3, "http://127.0.0.1:8248", 1)
    return artifact(
        run_id="r",
        generated_at="2026-01-01T00:00:00Z",
        inputs=inputs,
        warnings=warnings,
        corpus=corpus,
        cases=blocks,
    )


def walk_keys(value: Any, path: str = "$") -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append(f"{path}.{key}")
            found += walk_keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += walk_keys(item, f"{path}[{index}]")
    return found


def test_no_verdict_word_appears_in_any_key_of_a_full_artifact() -> None:
    keys = walk_keys(full_artifact())
    assert len(keys) > 200
    banned = [
        key for key in keys if any(word in key.rsplit(".", 1)[1].lower() for word in VERDICT_WORDS)
    ]
    assert banned == []


def test_the_artifact_layout() -> None:
    document = full_artifact()
    assert list(document) == [
        VERSION_KEY, "run_id", "generated_at", "matching", "inputs", "definitions",
        "warnings", "corpus", "cases", "models", "pairs",
    ]  # fmt: skip
    assert document[VERSION_KEY] == 3
    assert document["inputs"] == {
        "results_dir": "results",
        "eval": {"path": "eval.jsonl", "name": "cases", "cases": 3},
        "url": "http://127.0.0.1:8248",
        "run_index": 1,
        "default_limit": 10,
    }
    assert list(document["corpus"]) == ["m1", "m2", "m3"]
    assert document["corpus"]["m1"] == {
        "context": "p::m1",
        "outcome": "built",
        "reason": "x.jsonl: bad",
        "segments_imported": 1,
        "segments_failed": 1,
        "passage_vectors": {"model": "e", "rows": 3},
    }
    assert document["corpus"]["m3"] == {
        "context": "p::m3", "outcome": "rejected", "reason": "not ours",
        "segments_imported": 0, "segments_failed": 0,
    }  # fmt: skip
    assert len(document["warnings"]) == 1 and "'gone'" in document["warnings"][0]
    m1 = document["models"]["m1"]
    assert m1["recall.recall_at_k"]["n"] == 2 and m1["recall.recall_at_k"]["sum"] == 1.5
    assert m1["cases.error_rate"] == {"value": 0.0, "n": 3, "numerator": 0}
    assert document["models"]["m3"]["cases.error_rate"] == {"value": 1.0, "n": 3, "numerator": 3}
    assert "recall.mrr" not in document["models"]["m3"]
    pair = document["pairs"]["2:m1__m2"]
    assert pair["overlap.jaccard"]["mean"] == 0.5 and pair["overlap.shared_hits"]["sum"] == 3
    assert pair["overlap.mean_rank_difference"]["max"] == 1.0
    assert document["pairs"]["2:m1__m3"]["pairs.unavailable_rate"]["value"] == 1.0


def test_every_emitted_metric_is_defined() -> None:
    document = full_artifact()
    emitted = {name for block in (*document["models"].values(), *document["pairs"].values())
               for name in block}  # fmt: skip
    assert emitted == set(DEFINITIONS) == set(document["definitions"])


# ------------------------------------------------------------------ the results directory


def write_results(root: Path, manifest: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def test_a_ref_2608_manifest_reads_documents_and_defaults_each_cell_dir(tmp_path: Path) -> None:
    root = write_results(
        tmp_path / "r",
        {
            "taguru_benchmark_manifest": 1,
            "run_id": "abc",
            "extraction_settings": {"context": "sake"},
            "documents": [{"document_id": "brewery", "path": "corpus/brewery.md"}],
            "models": [{"model_id": "m1"}, {"model_id": "m1"}],
            "cells": [{"model_id": "m1", "run_index": 2, "outcome": "complete"}],
        },
    )
    results = read_results(str(root))
    assert (results.run_id, results.context, results.model_ids) == ("abc", "sake", ("m1",))
    assert [s.segment_id for s in results.segments] == ["brewery"]
    cell = results.cell("m1", 2)
    assert cell is not None and cell.cell_dir == "cells/m1/run02" and results.run_indexes() == [2]


def test_batch_files_are_the_visible_jsonl_files_but_diagnostics(tmp_path: Path) -> None:
    cell = tmp_path / "cells" / "m1" / "run01"
    (cell / ".extract-trace").mkdir(parents=True)
    for name in ("b.jsonl", "a.jsonl", "diagnostics.jsonl", ".diagnostics.jsonl", "stdout.log"):
        (cell / name).write_bytes(b"{}\n")
    reader = ResultsReader(str(tmp_path))
    assert reader.batch_files("cells/m1/run01") == [
        "cells/m1/run01/a.jsonl",
        "cells/m1/run01/b.jsonl",
    ]
    with pytest.raises(OSError):
        reader.batch_files("cells/m2/run01")


def eval_file(root: Path, *cases: dict[str, Any]) -> str:
    path = root / "eval.jsonl"
    lines = [{"taguru_eval": 1, "name": "n"}, *(cases or [{"case_id": "c", "query": "q"}])]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return str(path)


MANIFEST = {
    "taguru_benchmark_manifest": 1,
    "run_id": "r",
    "extraction_settings": {"context": "sake"},
    "segments": [],
    "models": [{"model_id": "m1"}],
    "cells": [{"model_id": "m1", "run_index": 1, "outcome": "complete"}],
}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"run": 2}, r"no cell recorded for run 2 — available runs: \{1\}"),
        ({"context_prefix": "x" * 62}, "longer than 64 bytes"),
        ({"url": "http://user:pw@127.0.0.1:1"}, "must not carry credentials"),
        ({"url": "http://127.0.0.1:notaport"}, "could not be parsed"),
        ({"config": "/nonexistent/c.env"}, "--config"),
    ],
)
def test_usage_errors_are_found_before_any_request(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    root = write_results(tmp_path / "r", MANIFEST)
    request = Request(eval_file(tmp_path), str(root), **{"url": "http://127.0.0.1:1", **change})
    with pytest.raises(UsageError, match=message):
        run_search(request, {})
    assert not (root / "retrieval.json").exists()


@pytest.mark.parametrize(
    ("manifest", "cases", "message"),
    [
        ({**MANIFEST, "models": []}, (), "lists no models"),
        ({**MANIFEST, "taguru_benchmark_manifest": 2}, (), "taguru_benchmark_manifest"),
        (MANIFEST, ({"case_id": "c", "query": "q", "options": {"limit": 0}},), "1..=1000"),
    ],
)
def test_a_manifest_or_eval_file_that_cannot_be_used_is_exit_2(
    tmp_path: Path, manifest: dict[str, Any], cases: tuple[dict[str, Any], ...], message: str
) -> None:
    root = write_results(tmp_path / "r", manifest)
    with pytest.raises(UsageError, match=message):
        run_search(Request(eval_file(tmp_path, *cases), str(root), url="http://127.0.0.1:1"), {})


def test_a_missing_manifest_is_exit_2(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"manifest\.json"):
        run_search(Request(eval_file(tmp_path), str(tmp_path / "none")), {})
