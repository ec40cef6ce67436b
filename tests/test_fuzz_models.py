"""Hostile models.json files for `benchmark extract` (issue 37, "fuzz every reader").

A full matrix (defaults, two models, every optional field) broken the ways a hand edit or
a hostile file breaks it, then read by the verb in process. The corpus folder holds no
segment, so a matrix that reads stops at the corpus, before a probe, a write or Ray:
every example is exit 2 with one line naming the models file or the corpus, no
traceback, and nothing written (--out included).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzzing import (
    assert_clean,
    assert_names_one_of,
    broken_value,
    dumps,
    file_bytes,
    run,
    tree,
)

pytestmark = pytest.mark.fuzz

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
MATRIX = {
    "taguru_benchmark_models": 1,
    "defaults": {"timeout_secs": 120, "structured_output": "json-schema"},
    "models": [
        {"id": "small", "label": "Small", "model": "org/small", "url": "http://127.0.0.1:9/v1",
         "api_key_env": "FUZZ_KEY", "note": "n", "gpu": "L4", "gpu_count": 1,
         "price_per_gpu_hour": 0.8, "max_inflight": 8},
        {"id": "big", "model": "org/big", "urls": ["http://127.0.0.1:9/v1", "http://[::1]:9/v1"],
         "structured_output": "off", "timeout_secs": 30, "max_inflight": "auto"},
    ],
}  # fmt: skip


@given(
    document=st.integers(0, 4).flatmap(
        lambda moves: st.just(MATRIX) if not moves else broken_value(MATRIX)
    ),
    more=st.integers(0, 2),
    raw=st.none() | file_bytes(),
    data=st.data(),
)
def test_benchmark_extract_reads_any_models_file_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    document: object, more: int, raw: bytes | None, data: st.DataObject,
) -> None:  # fmt: skip
    monkeypatch.setenv("FUZZ_KEY", "k")
    for _ in range(more):
        document = data.draw(broken_value(document))
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    models = scratch / "models.json"
    models.write_bytes(dumps(document).encode("utf-8", "surrogatepass") if raw is None else raw)
    (scratch / "corpus").mkdir()
    before = tree(scratch)
    ran = run(capsys, ["benchmark", "extract", "--models", str(models), "--context", CONTEXT,
                       "--out", str(scratch / "out"), str(scratch / "corpus")])  # fmt: skip
    event("matrix read" if "holds no .md or .txt" in ran.err else "matrix refused")
    assert_clean(ran, codes=(2,))
    assert_names_one_of(ran, [str(models), str(scratch / "corpus")])
    assert tree(scratch) == before
