"""`python -m benchmarks.vocabulary_wire`: the JSON's shape and a full vocabulary, never
its speed."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import vocabulary_wire


def test_the_json_has_each_batch_size_at_a_full_vocabulary(tmp_path: Path) -> None:
    assert vocabulary_wire.main(["--results-dir", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "vocabulary-wire-latest.json").read_text(encoding="utf-8"))
    assert result["name"] == "vocabulary-wire"
    batches = result["batches"]
    assert [b["segments_per_call"] for b in batches] == list(vocabulary_wire.BATCHES)
    for batch in batches:
        assert batch["vocabulary_labels"] == result["parameters"]["vocabulary_cap"] == 200
        assert batch["pickle_us_per_segment"] > 0 and batch["unpickle_us_per_segment"] > 0
    # A call's jobs share their labels: more segments a call, fewer bytes a segment.
    assert batches[1]["bytes_per_segment"] < batches[0]["bytes_per_segment"] / 2
