"""Hostile dataset shards for `extract --dry-run` (issue 47: every new reader fuzzed, ADR 0050).

A Parquet, JSONL, gzipped JSONL or CSV shard made of random rows, then cut short,
spliced with random bytes, replaced by random bytes, or given a line nested ten
thousand deep — read as extract reads it, before any model or Ray: one line per
problem naming the shard, exit 0 or 1, never a traceback or a hang, nothing written.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import signal
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from tests.fuzzing import JSON, TEXT, assert_clean, assert_names_one_of, run, tree

pytestmark = pytest.mark.fuzz

CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
FORMATS = st.sampled_from([".parquet", ".jsonl", ".jsonl.gz", ".csv"])
IDS = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=8), JSON)
ROWS = st.lists(st.tuples(IDS, st.one_of(TEXT, TEXT, st.none(), JSON)), max_size=6)


def shard_bytes(suffix: str, rows: list[tuple[object, object]]) -> bytes:
    """Rows ``{id, text}`` as the format writes them (values it cannot hold as text)."""
    if suffix == ".parquet":
        texts = [text if isinstance(text, str) else None for _, text in rows]
        ids = [str(row_id) if row_id is not None else None for row_id, _ in rows]
        sink = io.BytesIO()
        pq.write_table(pa.table({"id": pa.array(ids, pa.string()), "text": texts}), sink)
        return sink.getvalue()
    if suffix == ".csv":
        text = io.StringIO()
        writer = csv.writer(text)
        writer.writerow(["id", "text"])
        writer.writerows([[str(row_id), str(value)] for row_id, value in rows])
        return text.getvalue().encode("utf-8", "surrogatepass")
    lines = "".join(json.dumps({"id": row_id, "text": value}) + "\n" for row_id, value in rows)
    data = lines.encode("utf-8", "surrogatepass")
    return gzip.compress(data) if suffix == ".jsonl.gz" else data


@st.composite
def hostile(draw: st.DrawFn, data: bytes, suffix: str) -> bytes:
    """`data` as it came, cut short, spliced, replaced, or with a deeply nested line."""
    move = draw(st.sampled_from(["deep", "whole", "cut", "cut", "splice", "random"]))
    event(f"{suffix} {move}")
    if move == "cut":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    if move == "splice":
        at = draw(st.integers(0, len(data)))
        return data[:at] + draw(st.binary(min_size=1, max_size=32)) + data[at + 1 :]
    if move == "random":
        return draw(st.binary(max_size=400))
    if move == "deep":
        line = b'{"id": "d", "text": ' + b"[" * 10_000 + b"]" * 10_000 + b"}\n"
        deep = data + line
        return gzip.compress(deep) if suffix == ".jsonl.gz" else deep
    return data


@contextmanager
def no_hang(seconds: int) -> Iterator[None]:
    """A read that never ends fails the example instead of the suite."""

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"no answer within {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@given(suffix=FORMATS, rows=ROWS, data=st.data(), by_id=st.booleans())
def test_extract_reads_any_shard_in_one_line_per_problem(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    suffix: str, rows: list[tuple[object, object]], data: st.DataObject, by_id: bool,
) -> None:  # fmt: skip
    monkeypatch.setenv("TAGURU_EXTRACT_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("TAGURU_EXTRACT_MODEL", "m")
    scratch = Path(tempfile.mkdtemp(dir=tmp_path))
    shard = scratch / f"rows{suffix}"
    shard.write_bytes(data.draw(hostile(shard_bytes(suffix, rows), suffix)))
    before = tree(scratch)
    argv = ["extract", "--dry-run", "--context", CONTEXT, "--out", str(scratch / "out")]
    argv += ["--id-column", "id"] if by_id else []
    with no_hang(60):
        ran = run(capsys, [*argv, str(shard)])
    event(f"exit {ran.code}")
    assert_clean(ran, codes=(0, 1))
    assert_names_one_of(ran, [str(shard)])
    for line in ran.err.splitlines():
        assert line.startswith("taguru: extract: "), line
    assert tree(scratch) == before  # a dry run writes nothing
