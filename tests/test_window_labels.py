"""`python -m benchmarks.window_labels`: the counts of the label hand-off at each segment
window, checked by hand on literal contributions, and the script end to end on a
three-line attempts file (the anchor data itself is not read here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import window_labels
from benchmarks.window_labels import measure
from taguru_ray.pipeline.steer import VOCABULARY_CAP, Contribution, LabelUse


def _uses(*labels: str | tuple[str, int]) -> Contribution:
    uses = [
        LabelUse(*label) if isinstance(label, tuple) else LabelUse(label, 1) for label in labels
    ]
    return Contribution(labels=tuple(uses))


# Segment 0 uses a (twice) and b; segment 1 uses a and c; segment 2 uses b and d.
SEGMENTS = [_uses(("a", 2), "b"), _uses("a", "c"), _uses("b", "d")]


def test_at_w1_each_segment_is_offered_every_earlier_ones_labels() -> None:
    figures = measure(SEGMENTS, 1)
    assert figures.offered == (0, 2, 3)  # nothing; {a, b}; {a, b, c}
    assert figures.used == (2, 2, 2)
    assert figures.reused == (0, 1, 1)  # segment 1 finds a, segment 2 finds b
    assert figures.reuse_share == pytest.approx(2 / 6)
    assert figures.mean_segment_share == pytest.approx((0 + 0.5 + 0.5) / 3)
    assert figures.offered_nothing == pytest.approx(1 / 3)
    assert figures.distinct_labels == 4


def test_at_w2_the_second_segment_is_offered_nothing() -> None:
    figures = measure(SEGMENTS, 2)
    assert figures.offered == (0, 0, 2)  # segment 2 sees segment 0's {a, b} only
    assert figures.reused == (0, 0, 1)
    assert figures.reuse_share == pytest.approx(1 / 6)
    assert figures.offered_nothing == pytest.approx(2 / 3)


def test_a_window_as_wide_as_the_corpus_offers_nothing() -> None:
    for width in (3, 256):
        figures = measure(SEGMENTS, width)
        assert figures.offered == (0, 0, 0)
        assert figures.reuse_share == 0.0
        assert figures.offered_nothing == 1.0
    with pytest.raises(ValueError):
        measure(SEGMENTS, 0)


def test_the_offer_is_capped_as_the_prompt_caps_it() -> None:
    many = _uses(*(f"label {k}" for k in range(VOCABULARY_CAP + 50)))
    figures = measure([many, _uses("label 0", "label 249")], 1)
    assert figures.offered == (0, VOCABULARY_CAP)
    # All counts tie, so the first 200 seen are offered: label 249 is not among them.
    assert figures.reused == (0, 1)
    assert measure([], 1).reuse_share is None


DOC = "青嶺酒造は雲居県霧沢町にある。\n"
LOCATED = {"subject": "青嶺酒造", "label": "located in", "object": "雲居県霧沢町", "paragraph": 0}
CONTAINS = {"subject": "雲居県霧沢町", "label": "contains", "object": "青嶺酒造", "paragraph": 0}


def _attempt(content: str | None, finish_reason: str | None) -> dict[str, object]:
    record: dict[str, object] = {"type": "attempt", "doc": "short", "finish_reason": finish_reason}
    if content is not None:
        record["content_truncated"] = content
        record["syntax_ok"] = finish_reason == "stop"
    return record


def test_the_script_keeps_accepted_answers_and_says_why_it_skipped_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "short.md").write_text(DOC, encoding="utf-8")
    records = [
        _attempt(json.dumps({"associations": [LOCATED]}, ensure_ascii=False), "stop"),
        {"type": "trial", "doc": "short"},
        _attempt(None, None),  # a timeout: no answer
        _attempt('{"associations": [{"subject": "青嶺', "length"),
        _attempt("```json\n" + json.dumps({"associations": [LOCATED, CONTAINS]}) + "\n```", "stop"),
    ]
    attempts = tmp_path / "attempts.jsonl"
    attempts.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    argv = ["--attempts", str(attempts), "--corpus", str(corpus), "--widths", "2"]
    assert window_labels.main([*argv, "--cycled", "4", "--results-dir", str(tmp_path)]) == 0

    result = json.loads((tmp_path / "window-labels-latest.json").read_text(encoding="utf-8"))
    data = result["data"]
    assert (data["used"], data["skipped"], data["other_records"]) == (2, 2, 1)
    assert data["skipped_by_reason"] == {
        "no answer recorded (no content)": 1,
        "cut off at the output limit (finish_reason length)": 1,
    }
    assert result["parameters"]["segment_windows"] == [1, 2]  # the reference is always in
    real = {w["segment_window"]: w for w in result["views"]["real"]["windows"]}
    assert real[1]["per_segment"] == {"offered": [0, 1], "used": [1, 2], "on_offer": [0, 1]}
    assert real[2]["per_segment"] == {"offered": [0, 0], "used": [1, 2], "on_offer": [0, 0]}
    assert real[1]["label_reuse_share"] == 0.3333  # 1 of 3 labels used, rounded
    cycled = {w["segment_window"]: w for w in result["views"]["cycled"]["windows"]}
    assert cycled[2]["segments"] == 4 and "per_segment" not in cycled[2]
    assert cycled[2]["offered_nothing_share"] == 0.5  # segments 0 and 1
    out = capsys.readouterr().out
    assert "2 completions used as segments, 2 skipped" in out
    assert "| real | 1 (reference) | 2 |" in out
