"""``metrics --parquet``'s per-request table over recorded --out folders
(tests/fixtures/records/README.md): one row per completion, numbers and names only."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from taguru_ray.pricing.table import Prices
from taguru_ray.store.outdir import OutDir
from taguru_ray.tools.metrics import collect
from taguru_ray.tools.request_table import COLUMNS, request_table
from taguru_ray.tools.tables import Column, Table, write_parquet

RECORDS = Path(__file__).parent / "fixtures" / "records"
REPO = Path(__file__).resolve().parents[1]
# A paragraph of docs/alpha.md: every item attempt's user turn quotes it.
PARAGRAPH = (
    "The Alpha Service stores records in Postgres. Postgres keeps a write-ahead log, "
    "and the Alpha Service reads replicas for every report it builds."
)


def rows_of(*outs: Path) -> list[dict]:
    report = collect([OutDir(str(out)) for out in outs], Prices())
    return request_table(report).rows


def logged(out: Path) -> list[dict]:
    """Every attempt record of the folder's attempts logs, in stem then log order."""
    found = []
    for path in sorted((out / ".extract-trace").glob("*.attempts.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record["type"] == "attempt":
                found.append(record)
    return found


def write_requests(out: Path, folder: Path) -> pa.Table:
    command = [sys.executable, "-m", "taguru_ray", "metrics", str(out), "--parquet", str(folder)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr
    return pq.read_table(folder / "requests.parquet")


def test_one_row_per_attempt_record_failed_segments_included() -> None:
    out = RECORDS / "run-a"
    rows, records = rows_of(out), logged(out)
    assert len(rows) == len(records) == 6
    for got, record in zip(rows, records, strict=True):
        keys = ("run_id", "attempt_seq", "source", "piece_id", "stage", "state")
        assert {k: got[k] for k in keys} == {k: record[k] for k in keys}
        assert (got["input_tokens"], got["total_tokens"]) == (
            record["input_tokens"],
            record["total_tokens"],
        )
        assert got["elapsed_seconds"] == record["elapsed_seconds"]
        assert got["out"] == str(out) and got["model"] == "taguru-sim"
    assert [r["source"] for r in rows].count("docs/beta.md") == 2  # the failed segment's
    corrective = next(r for r in rows if r["stage"] == "cross_chunk")
    corrected = next(r for r in records if r["stage"] == "cross_chunk")["corrects"]
    assert (corrective["corrects_run_id"], corrective["corrects_attempt_seq"]) == (
        corrected["run_id"],
        corrected["attempt_seq"],
    )


def test_exact_values_of_a_replayed_run() -> None:
    rows = rows_of(RECORDS / "replayed")
    assert [(r["run_id"], r["attempt_seq"], r["replayed"]) for r in rows] == [
        ("1111aaaa1111aaaa", 1, False),
        ("1111aaaa1111aaaa", 2, False),
        ("2222bbbb2222bbbb", 1, True),
        ("2222bbbb2222bbbb", 2, False),
    ]
    first, _, replayed, correction = rows
    assert first == {
        "out": str(RECORDS / "replayed"),
        "run_id": "1111aaaa1111aaaa",
        "model": "taguru-sim",
        "source": "docs/delta.md",
        "piece_id": "d40cc5c0f0ad723e67f4e31417eebcee5f23ae2363db233587b894daa298ef76",
        "chunk_index": 0,
        "stage": "item",
        "attempt": 1,
        "max_attempts": 2,
        "attempt_seq": 1,
        "state": "stop_malformed",
        "rung": None,  # off the ladder
        "finish_reason": "stop",
        "input_tokens": 500,
        "output_tokens": 40,
        "total_tokens": None,  # this log predates the field
        "elapsed_seconds": 1.25,
        "transport_retries": 0,
        "length_limited": False,
        "requested_max_tokens": None,
        "piece_bytes": None,
        "replayed": False,
        "corrects_run_id": None,
        "corrects_attempt_seq": None,
        "gleans_run_id": None,
        "gleans_attempt_seq": None,
    }
    assert (replayed["elapsed_seconds"], replayed["input_tokens"]) == (0.0, 500)
    assert (correction["corrects_run_id"], correction["corrects_attempt_seq"]) == (
        "2222bbbb2222bbbb",
        1,
    )
    assert (correction["elapsed_seconds"], correction["output_tokens"]) == (0.75, 70)


def test_ladder_fields_are_filled_on_the_ladder() -> None:
    rows, records = rows_of(RECORDS / "run-b"), logged(RECORDS / "run-b")
    assert len(rows) == len(records)
    assert [r["length_limited"] for r in rows] == [r["length_limited"] for r in records]
    assert [r["requested_max_tokens"] for r in rows] == [
        r.get("requested_max_tokens") for r in records
    ]
    assert [r["piece_bytes"] for r in rows] == [r.get("piece_bytes") for r in records]
    assert any(r["requested_max_tokens"] for r in rows)


def test_a_gleaning_pass_names_the_answer_it_extends(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(RECORDS / "replayed", out)
    [log] = (out / ".extract-trace").glob("*.attempts.jsonl")
    accepted = logged(out)[-1]
    gleaning = {**accepted, "attempt_seq": 3, "stage": "gleaning", "attempt": 1}
    gleaning["gleans"] = {"run_id": accepted["run_id"], "attempt_seq": 2}
    del gleaning["corrects"]
    log.write_text(log.read_text() + json.dumps(gleaning) + "\n")
    last = rows_of(out)[-1]
    assert (last["stage"], last["gleans_run_id"], last["gleans_attempt_seq"]) == (
        "gleaning",
        "2222bbbb2222bbbb",
        2,
    )
    assert last["corrects_run_id"] is None


def test_a_value_of_the_wrong_type_is_null_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(RECORDS / "replayed", out)
    [log] = (out / ".extract-trace").glob("*.attempts.jsonl")
    edited = {**logged(out)[0], "input_tokens": "many", "elapsed_seconds": True, "stage": 7}
    edited["total_tokens"] = 2**64  # past int64
    del edited["output_tokens"]
    log.write_text(log.read_text() + json.dumps(edited) + "\n" + '{"type": "attempt", "run')
    rows = rows_of(out)
    assert len(rows) == 5  # four recorded, the edited one; the torn tail is skipped
    last = rows[-1]
    assert (last["input_tokens"], last["elapsed_seconds"], last["stage"]) == (None, None, None)
    assert last["output_tokens"] is None and last["total_tokens"] is None
    assert last["attempt_seq"] == 1
    folder = tmp_path / "tables"
    assert write_requests(out, folder).num_rows == 5


def test_the_verb_writes_requests_parquet_typed(tmp_path: Path) -> None:
    written = write_requests(RECORDS / "run-a", tmp_path / "tables")
    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "bool": pa.bool_()}
    assert written.schema == pa.schema([(c.name, types[c.kind]) for c in COLUMNS])
    assert written.schema.field("elapsed_seconds").type == pa.float64()
    assert written.schema.field("replayed").type == pa.bool_()
    assert written.schema.field("input_tokens").type == pa.int64()
    assert written.num_rows == len(logged(RECORDS / "run-a"))
    assert written.column("attempt_seq").to_pylist() == [
        r["attempt_seq"] for r in logged(RECORDS / "run-a")
    ]
    # The existing tables are written beside it, unchanged in number.
    assert (tmp_path / "tables" / "summary.parquet").exists()


def test_no_column_holds_the_messages_or_the_answer(tmp_path: Path) -> None:
    out = RECORDS / "run-a"
    records = logged(out)
    assert any(PARAGRAPH in m.get("content", "") for r in records for m in r["messages"])
    folder = tmp_path / "tables"
    written = write_requests(out, folder)
    names = set(written.column_names)
    for text_field in ("messages", "answer", "parse_error", "validation_issues", "removed_items"):
        assert text_field not in names
    answers = [r["answer"] for r in records if r["answer"]]
    for column in written.columns:
        for value in column.to_pylist():
            if isinstance(value, str):
                assert PARAGRAPH not in value and value not in answers
    needle = PARAGRAPH.encode()
    assert needle not in (folder / "requests.parquet").read_bytes()
    # The grep can see text: the same writer with the user turn as a column shows it.
    control = Table("control", "", [Column("messages", "str")], [{"messages": PARAGRAPH}])
    [path] = write_parquet([control], str(tmp_path / "control"))
    assert needle in Path(path).read_bytes()
