"""differences.jsonl (BENCHMARK.md §2.8 in its ADR 0042 form, §6): a model-pair paired diff
that never judges a side."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from taguru_ray.benchmark.compare import CompareError
from taguru_ray.benchmark.compare.differences import model_pairs, pair_id
from taguru_ray.benchmark.compare.locator import cap_text
from tests.test_benchmark_compare import Results, alias, assoc, attempt, end, smoke, start

CHUNKS = [
    {"chunk_index": 0, "chunk_sha256": "sha-chunk0", "chunk_bytes": 10,
     "paragraph_first": 0, "paragraph_last": 3},
    {"chunk_index": 1, "chunk_sha256": "sha-chunk1", "chunk_bytes": 10,
     "paragraph_first": 4, "paragraph_last": 9},
]  # fmt: skip

CORPUS = "\n\n".join(
    ["para0 opens", "para1 follows", "para2 is this one", "para3", "para4", "para5 town"]
)


def _cell(results: Results, model: str, run: int, batches: dict[str, list[Any]]) -> None:
    lines: list[dict[str, Any]] = []
    for segment, batch in batches.items():
        lines.append(start(segment))
        lines.append(attempt(segment))
        if batch is None:
            lines.append(end(segment, outcome="failed", associations=None))
        else:
            path = results.batch(model, run, segment, batch)
            lines.append(end(segment, associations=len(batch), batch_path=path))
    results.cell(model, run, lines)


def pair_fixture(root: Path) -> Results:
    """alpha (2 runs) and beta (1 run); sake completed by alpha only."""
    results = Results(root).model("beta").model("alpha")
    results.segment("brewery", chunks=CHUNKS).segment("sake")
    control = assoc("brewery", "brews", "ale", 1.0, 2)
    alpha_brewery = [
        control,
        assoc("brewery", "brews", "lager", 1.0, 3),
        assoc("brewery", "founded in", "1890", 1.0, 2),
        assoc("brewery", "near", "town hall", 1.0),
        assoc("brewery", "near", "library", 1.0),
        assoc("Cafe Co", "buys", "ale", 1.0, 3),
        alias("BrewCo Group", "beer co"),
    ]
    _cell(
        results,
        "alpha",
        1,
        {
            "brewery": [*alpha_brewery, assoc("Tea House", "serves", "ale", 1.0, 4)],
            "sake": [assoc("kura", "brews", "sake")],
        },
    )
    _cell(
        results,
        "alpha",
        2,
        {"brewery": [control, assoc("TEA HOUSE", "serves", "ale", 1.0, 4)], "sake": None},
    )
    beta_brewery = [
        control,
        assoc("brewery", "brews", "lager", -1.0, 3),
        assoc("brewery", "founded in", "1890", 1.0, 7),
        assoc("brewery", "near", "town hall", 1.0, 5),
        assoc("brewery", "near", "library", 1.0),
        assoc("cafe co", "buys", "ale", 1.0, 3),
        alias("brewco group", "Brewer"),
    ]
    _cell(results, "beta", 1, {"brewery": beta_brewery, "sake": None})
    return results


def records(results: Results, **kwargs: Any) -> list[dict[str, Any]]:
    text = results.compute(**kwargs).differences
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]


def find(lines: list[dict[str, Any]], type_: str, obj: str | None = None) -> list[dict]:
    return [r for r in lines if r["type"] == type_ and (obj is None or r["key"]["object"] == obj)]


def test_header_and_pairs(tmp_path: Path) -> None:
    header = records(pair_fixture(tmp_path))[0]
    assert list(header) == ["type", "version", "run_id", "pairs", "matching", "text_included"]
    assert header["type"] == "benchmark_differences"
    assert header["version"] == "2026-09-17"
    assert header["pairs"] == [{"pair_id": "5:alpha__beta", "a": "alpha", "b": "beta"}]
    assert header["text_included"] is False


def test_pair_ids_are_length_prefixed_and_in_byte_order() -> None:
    assert pair_id("a", "b__c") != pair_id("a__b", "c")
    assert [p["pair_id"] for p in model_pairs(["z", "ab", "c"])] == [
        "2:ab__z", "1:c__z", "2:ab__c"
    ]  # fmt: skip


def test_coverage_lists_every_completed_segment(tmp_path: Path) -> None:
    coverage = find(records(pair_fixture(tmp_path)), "segment_coverage")
    assert len(coverage) == 2
    sake = coverage[1]
    assert sake["present_in"] == ["alpha"]
    assert sake["sides"] == {"a": {"runs": [1], "n_present": 1}, "b": None}
    assert coverage[0]["sides"]["a"] == {"runs": [1, 2], "n_present": 2}


def test_a_control_key_is_only_shared(tmp_path: Path) -> None:
    lines = records(pair_fixture(tmp_path))
    about_ale = [r for r in lines if r.get("key", {}).get("subject") == "brewery"
                 and r["key"]["object"] == "ale"]  # fmt: skip
    assert [r["type"] for r in about_ale] == ["association_shared"]
    assert about_ale[0]["sides"] == {
        "a": {"runs": [1, 2], "n_present": 2},
        "b": {"runs": [1], "n_present": 1},
    }
    assert about_ale[0]["present_in"] == ["alpha", "beta"]


def test_polarity_difference_needs_disjoint_signs(tmp_path: Path) -> None:
    polarity = find(records(pair_fixture(tmp_path)), "polarity_difference")
    assert [r["key"]["object"] for r in polarity] == ["lager"]
    assert polarity[0]["sides"]["a"]["weight_signs"] == [1]
    assert polarity[0]["sides"]["b"]["weight_signs"] == [-1]


def test_attribution_difference_needs_disjoint_paragraphs(tmp_path: Path) -> None:
    lines = records(pair_fixture(tmp_path))
    attribution = {r["key"]["object"]: r for r in find(lines, "attribution_difference")}
    assert sorted(attribution) == ["1890", "town hall"]
    assert attribution["1890"]["sides"]["a"]["paragraphs"] == [2]
    assert attribution["1890"]["sides"]["b"]["paragraphs"] == [7]
    assert attribution["town hall"]["sides"]["a"]["paragraphs"] == [None]
    assert attribution["town hall"]["sides"]["b"]["paragraphs"] == [5]


def test_surface_form_variation_shared_and_single_side(tmp_path: Path) -> None:
    lines = records(pair_fixture(tmp_path))
    surface = {r["key"]["subject"]: r for r in find(lines, "surface_form_variation")}
    assert sorted(surface) == ["cafe co", "tea house"]
    tea = surface["tea house"]
    assert tea["sides"]["b"] is None
    assert [f["subject"] for f in tea["sides"]["a"]["surface_forms"]] == ["TEA HOUSE", "Tea House"]
    single = [r for r in find(lines, "association_single_side")]
    assert [r["key"]["subject"] for r in single] == ["tea house"]
    assert single[0]["sides"]["b"] is None
    assert single[0]["present_in"] == ["alpha"]


def test_alias_resolution_difference(tmp_path: Path) -> None:
    (record,) = find(records(pair_fixture(tmp_path)), "alias_resolution_difference")
    assert (record["alias_kind"], record["spelling"]) == ("concept", "brewco group")
    assert record["sides"]["a"] == {"runs": [1], "n_present": 1, "canonicals": ["beer co"]}
    assert record["sides"]["b"]["canonicals"] == ["brewer"]
    assert record["locator"]["paragraph"] is None
    assert record["locator"]["chunk_index"] is None


def test_locator_takes_the_smallest_paragraph_and_its_chunk(tmp_path: Path) -> None:
    lines = records(pair_fixture(tmp_path))
    founded = find(lines, "association_shared", "1890")[0]["locator"]
    assert founded == {
        "segment_id": "brewery",
        "source": "corpus/brewery.md",
        "segment_sha256": "sha-brewery",
        "paragraph": 2,
        "chunk_index": 0,
        "chunk_sha256": "sha-chunk0",
        "text": None,
        "text_truncated": False,
    }
    town = find(lines, "association_shared", "town hall")[0]["locator"]
    assert (town["paragraph"], town["chunk_index"], town["chunk_sha256"]) == (5, 1, "sha-chunk1")
    library = find(lines, "association_shared", "library")[0]["locator"]
    assert (library["paragraph"], library["chunk_index"]) == (None, None)


def test_record_order_coverage_then_keys_then_aliases(tmp_path: Path) -> None:
    types = [r["type"] for r in records(pair_fixture(tmp_path))[1:]]
    assert types[:2] == ["segment_coverage", "segment_coverage"]
    assert types[-1] == "alias_resolution_difference"
    keys = [r for r in records(pair_fixture(tmp_path)) if r["type"].startswith("association_")]
    ordered = [(k["key"]["subject"], k["key"]["label"], k["key"]["object"]) for k in keys]
    assert ordered == sorted(ordered)


def test_a_single_model_gives_the_header_only(tmp_path: Path) -> None:
    lines = records(smoke(tmp_path))
    assert len(lines) == 1 and lines[0]["pairs"] == []


def test_differences_are_deterministic(tmp_path: Path) -> None:
    results = pair_fixture(tmp_path)
    assert results.compute().differences == results.compute().differences


STRICT = ("miss", "error", "wrong", "incorrect", "fail", "omit", "expected", "gold", "truth",
          "recall", "precision", "better", "worse", "false_positive", "falsepositive",
          "rank", "score", "winner", "best", "recommended", "overall", "delta_vs")  # fmt: skip


def _keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        return [k for key, item in value.items() for k in [key, *_keys(item)]]
    if isinstance(value, list):
        return [k for item in value for k in _keys(item)]
    return []


def test_no_key_or_type_uses_a_judging_word(tmp_path: Path) -> None:
    lines = records(pair_fixture(tmp_path))
    words = {key.lower() for line in lines for key in _keys(line)}
    words |= {line["type"].lower() for line in lines}
    assert {"a", "b", "n_present", "segment_coverage"} <= words
    assert [(w, bad) for w in words for bad in STRICT if bad in w] == []


def _with_corpus(tmp_path: Path, text: str, pinned: str | None = None) -> Results:
    results = pair_fixture(tmp_path / "results")
    corpus = tmp_path / "brewery.md"
    corpus.write_text(text, encoding="utf-8")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    results.segments[0] |= {"path": str(corpus), "sha256": pinned or digest}
    return results


def test_with_text_carries_the_paragraph(tmp_path: Path) -> None:
    lines = records(_with_corpus(tmp_path, CORPUS), with_text=True)
    assert lines[0]["text_included"] is True
    founded = find(lines, "association_shared", "1890")[0]["locator"]
    assert (founded["text"], founded["text_truncated"]) == ("para2 is this one", False)
    town = find(lines, "association_shared", "town hall")[0]["locator"]
    assert town["text"] == "para5 town"


def test_with_text_a_paragraph_past_the_end_is_null(tmp_path: Path) -> None:
    lines = records(_with_corpus(tmp_path, "only one paragraph"), with_text=True)
    assert find(lines, "association_shared", "1890")[0]["locator"]["text"] is None


def test_with_text_caps_at_4096_bytes_on_a_character_boundary(tmp_path: Path) -> None:
    long = "\n\n".join(["p0", "p1", "あ" * 2000, "p3", "p4", "p5"])
    locator = find(records(_with_corpus(tmp_path, long), with_text=True),
                   "association_shared", "1890")[0]["locator"]  # fmt: skip
    assert locator["text_truncated"] is True
    assert len(locator["text"].encode("utf-8")) <= 4096
    assert locator["text"] == "あ" * 1365
    assert cap_text("abc", 2) == ("ab", True)


def test_with_text_refuses_a_changed_file(tmp_path: Path) -> None:
    results = _with_corpus(tmp_path, CORPUS, pinned="sha-brewery")
    with pytest.raises(CompareError, match=r"brewery\.md.*sha-brewery"):
        results.compute(with_text=True)


def test_with_text_refuses_a_missing_file(tmp_path: Path) -> None:
    results = _with_corpus(tmp_path, CORPUS)
    (tmp_path / "brewery.md").unlink()
    with pytest.raises(CompareError, match=r"brewery\.md"):
        results.compute(with_text=True)
