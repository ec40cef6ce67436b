"""Search answers equal, byte for byte, what the store answered before issue 42's index
(`tests/context_golden.py` says which corpora and queries; the golden file was
captured from the scan-every-posting search that preceded it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taguru_ray.context import postings
from tests.context_golden import GOLDEN, answers


@pytest.mark.parametrize("window_bits", [postings.WINDOW_BITS, 3])
def test_every_search_answers_as_it_did_before_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window_bits: int
) -> None:
    # Windows of 8 paragraphs (375 of them here) make the search skip most windows for
    # most queries: what it skipped could not have changed an answer.
    monkeypatch.setattr(postings, "WINDOW_BITS", window_bits)
    monkeypatch.setattr(postings, "WINDOW", 1 << window_bits)
    expected = json.loads(GOLDEN.read_text())
    found = answers(tmp_path)
    assert found.keys() == expected.keys()
    differing = [key for key in expected if found[key] != expected[key]]
    assert not differing, f"{len(differing)} answers differ, first {differing[:3]}"


def test_the_golden_answers_hold_ties_and_filters() -> None:
    # What makes the comparison meaningful: hits at limits 1/10/50, filtered answers,
    # and equal scores ordered by source then paragraph.
    expected = {k: json.loads(v) for k, v in json.loads(GOLDEN.read_text()).items()}
    hits = [h for answer in expected.values() for h in answer["hits"]]
    assert len(hits) > 2000
    assert any("filter" in a["plan"]["contexts"][0] and a["hits"] for a in expected.values())
    assert any(
        a["hits"][i]["score"] == a["hits"][i + 1]["score"]
        for a in expected.values()
        for i in range(len(a["hits"]) - 1)
    )
