"""`taguru_ray.inspect` and `taguru_ray.metrics` hold what ``taguru-ray inspect --json`` and
``taguru-ray metrics --parquet`` report for the same --out, typed as Arrow."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import taguru_ray
from taguru_ray.errors import UsageError
from taguru_ray.simulate.harness import SimulatorProcess
from taguru_ray.tools.metrics_read import NoRecords
from tests.support import CONTEXT, REPO, Cli

CORPUS = REPO / "examples" / "corpus"
PRICES = {"taguru-sim": {"input": 0.15, "output": 0.6}}
TABLES = (
    "summary",
    "loss",
    "coverage",
    "corrections",
    "attempts",
    "moves",
    "labels",
    "graph",
    "cost",
    "failed",
    "requests",
)


def taguru_ray_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "taguru_ray", *args],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )


@pytest.fixture(scope="module")
def out(
    ray_address: str, simulator_process: SimulatorProcess, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """One run of the CLI over three segments: one corrected once, one failed (the model
    refuses it every time), one plain."""
    folder = tmp_path_factory.mktemp("readers")
    docs = folder / "docs"
    docs.mkdir()
    for name in ("01-ray-overview.md", "02-object-storage-operations.md", "03-sake-brewing.md"):
        shutil.copy(CORPUS / name, docs / name)
    simulator_process.set_script(
        [
            {"match": "Global Control Store", "fault": "malformed", "times": 1},
            {"match": "日本酒", "fault": "refusal"},
        ]
    )
    simulator_process.reset()
    try:
        done = Cli(ray_address, simulator_process).extract(
            "--context", CONTEXT, "--out", str(folder / "out"), str(docs)
        )
    finally:
        simulator_process.set_script([])
    assert done.returncode == 1, done.stderr  # the refused segment failed
    return folder / "out"


def test_inspect_holds_every_attempt_the_inspect_cli_lists(out: Path) -> None:
    table = taguru_ray.inspect(str(out))
    logs = sorted((out / ".extract-trace").glob("*.attempts.jsonl"))
    assert len(logs) == 3
    listed: dict[Path, list[dict]] = {}
    for log in logs:
        shown = taguru_ray_cli("inspect", str(log), "--json")
        assert shown.returncode == 0, shown.stderr
        report = json.loads(shown.stdout)
        mine = [row for row in table.to_pylist() if row["log"] == str(log)]
        assert [{k: v for k, v in row.items() if k not in ("source", "log")} for row in mine] == (
            report["attempts"]
        )
        assert {row["source"] for row in mine} == {report["segment"]["source"]}
        listed[log] = report["attempts"]
    assert table.num_rows == sum(map(len, listed.values()))
    assert table.column_names == ["source", "log", *listed[logs[0]][0]]
    assert table.schema.field("input_tokens").type == pa.int64()
    assert table.schema.field("elapsed_seconds").type == pa.float64()
    assert table.schema.field("corrects").type == pa.struct(
        [("run_id", pa.string()), ("attempt_seq", pa.int64())]
    )
    assert table.schema.field("validation_issues").type == pa.list_(pa.string())
    states = set(table.column("state").to_pylist())
    assert {"stop_valid", "stop_malformed", "refusal"} <= states
    assert any(row["corrects"] for row in table.to_pylist())
    one = taguru_ray.inspect(str(logs[0]), texts=True)  # one log, its texts too
    assert one.num_rows == len(listed[logs[0]])
    assert one.column_names[-3:] == ["piece_text", "corrective_ask", "answer"]
    assert all(one.column("piece_text").to_pylist())


def test_metrics_tables_are_the_tables_metrics_parquet_writes(out: Path, tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps(PRICES))
    shown = taguru_ray_cli(
        "metrics", str(out), "--prices", str(prices), "--parquet", str(tmp_path / "pq")
    )
    assert shown.returncode == 0, shown.stderr
    tables = taguru_ray.metrics(str(out), PRICES)
    assert tables == taguru_ray.metrics(str(out), str(prices))  # a file or its content
    for name in TABLES:
        written = pq.read_table(tmp_path / "pq" / f"{name}.parquet")
        mine = getattr(tables, name)
        assert mine.column_names == written.column_names, name
        assert mine.num_rows == written.num_rows and mine.equals(written), name
    assert sorted(p.stem for p in (tmp_path / "pq").glob("*.parquet")) == sorted(TABLES)
    assert tables.summary.num_rows == 4  # three segments and the run
    [failed] = tables.failed.column("name").to_pylist()
    assert failed.endswith("03-sake-brewing.md")
    assert tables.requests.num_rows == taguru_ray.inspect(str(out)).num_rows
    assert tables.cost.schema.field("cost_usd").type == pa.float64()
    assert tables.notes == ()
    unpriced = taguru_ray.metrics(str(out), {"other-model": {"input": 1, "output": 1}})
    assert unpriced.summary.column("cost_usd").null_count == unpriced.summary.num_rows
    assert any("no price for model 'taguru-sim'" in note for note in unpriced.notes)


def test_a_missing_or_empty_out_and_bad_prices_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="nowhere"):
        taguru_ray.inspect(str(tmp_path / "nowhere"))
    with pytest.raises(UsageError, match="nowhere: no such folder"):
        taguru_ray.metrics(str(tmp_path / "nowhere"))
    with pytest.raises(NoRecords):
        taguru_ray.inspect(str(tmp_path))
    with pytest.raises(NoRecords, match="no records"):
        taguru_ray.metrics(str(tmp_path))
    with pytest.raises(UsageError, match="'m' needs"):
        taguru_ray.metrics(str(tmp_path), {"m": {"input": -1}})
    assert {"inspect", "metrics", "MetricsTables"} <= set(taguru_ray.__all__)
