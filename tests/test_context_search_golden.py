"""Search answers equal, byte for byte, what the store answered before issue 42's index
(`tests/context_golden.py` says which corpora and queries; the golden file was
captured from the scan-every-posting search that preceded it)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.context_golden import GOLDEN, answers


def test_every_search_answers_as_it_did_before_the_index(tmp_path: Path) -> None:
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
