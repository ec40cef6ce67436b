"""``taguru-ray metrics`` over recorded --out folders (tests/fixtures/records/README.md)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from taguru_ray.pricing.table import Prices, PricesError, load_prices
from taguru_ray.store.outdir import OutDir
from taguru_ray.tools.metric_tables import compare, headline, tables
from taguru_ray.tools.metrics import LedgerError, MetricsReport, collect, load_ledger
from taguru_ray.tools.tables import Table, render

RECORDS = Path(__file__).parent / "fixtures" / "records"
REPO = Path(__file__).resolve().parents[1]
PRICES = Prices({"taguru-sim": (0.15, 0.6)})
NO_PRICES = Prices()
TABLES = ["summary", "loss", "coverage", "corrections", "attempts", "moves", "labels", "graph"]


def report_of(out: Path, prices: Prices = NO_PRICES) -> MetricsReport:
    return collect(OutDir(str(out)), prices)


def table(report: MetricsReport, name: str, priced: bool = False) -> Table:
    return next(t for t in tables(report, priced) if t.name == name)


def row(t: Table, name: str, **match: str) -> dict:
    return next(r for r in t.rows if r["name"] == name and all(r[k] == v for k, v in match.items()))


def attempts(out: Path, stem: str) -> list[dict]:
    [path] = (out / ".extract-trace").glob(f"{stem}-*.attempts.jsonl")
    return [r for r in map(json.loads, path.read_text().splitlines()) if r["type"] == "attempt"]


def test_loss_coverage_and_labels_come_from_the_trace() -> None:
    report = report_of(RECORDS / "run-a")
    loss = row(table(report, "loss"), "docs/alpha.md", item="association")
    assert (loss["kept"], loss["lost"], loss["removed"]) == (7, 1, 1)
    assert loss["rate"] == loss["removed_rate"] == 1 / 8 and loss["dropped_rate"] == 0
    coverage = row(table(report, "coverage"), "docs/alpha.md")
    assert (coverage["paragraphs"], coverage["covered"], coverage["rate"]) == (5, 4, 0.8)
    assert coverage["byte_rate"] == coverage["covered_bytes"] / coverage["bytes"]
    assert coverage["bytes"] - coverage["covered_bytes"] == len("# Alpha")
    labels = row(table(report, "labels"), "run")
    assert (labels["associations"], labels["labels"], labels["top_label"]) == (7, 3, "related to")
    assert labels["top_share"] == 4 / 7 and labels["labels_per_association"] == 3 / 7
    graph = row(table(report, "graph"), "run")
    assert (graph["associations"], graph["concepts"]) == (7, 8)


def test_a_stage_1_and_a_stage_2_correction_are_both_adopted() -> None:
    report = report_of(RECORDS / "run-a")
    corrections = row(table(report, "corrections"), "docs/alpha.md")
    assert (corrections["corrective"], corrections["adopted"], corrections["success"]) == (2, 2, 1)
    # beta's correction failed with the segment: adoption needs a trace, so it is not counted.
    assert row(table(report, "corrections"), "run")["corrective"] == 2


def test_a_failed_segment_is_counted_apart_its_cost_in_every_sum() -> None:
    out = RECORDS / "run-a"
    report = report_of(out, PRICES)
    beta = attempts(out, "docs__beta.md")
    summary = table(report, "summary", priced=True)
    failed_row = row(summary, "docs/beta.md (failed)")
    assert (failed_row["written"], failed_row["failed"], failed_row["assoc_loss"]) == (0, 1, None)
    run = row(summary, "run")
    assert (run["written"], run["failed"], run["attempts"]) == (1, 1, 6)
    every = attempts(out, "docs__alpha.md") + beta
    assert run["input_tokens"] == sum(a["input_tokens"] for a in every)
    assert run["cost_usd"] == pytest.approx(
        sum(a["input_tokens"] * 0.15 + a["output_tokens"] * 0.6 for a in every) / 1e6
    )
    [failed] = table(report, "failed", priced=True).rows
    log = f"{out}/.extract-trace/docs__beta.md-a09889c872f599ab.attempts.jsonl"
    assert failed["name"] == "docs/beta.md" and failed["attempts"] == 2
    assert failed["input_tokens"] == sum(a["input_tokens"] for a in beta)
    assert failed["next"] == f"taguru-ray inspect {log} --piece {beta[0]['piece_id'][:12]}"
    assert "docs/beta.md" not in {r["name"] for r in table(report, "loss").rows}
    states = row(table(report, "attempts"), "run")
    assert (states["stop_valid"], states["stop_malformed"], states["stop_valid_share"]) == (
        4,
        2,
        4 / 6,
    )


def test_a_split_piece_counts_its_moves_and_its_cut_off_attempts() -> None:
    report = report_of(RECORDS / "run-b")
    moves = row(table(report, "moves"), "run")
    assert (moves["moves"], moves["escalate"], moves["split"], moves["demote"]) == (4, 3, 1, 0)
    states = row(table(report, "attempts"), "run")
    assert (states["attempts"], states["length_limited"], states["stop_valid"]) == (6, 4, 2)
    assert row(table(report, "summary"), "run")["assoc_loss"] == 0


def test_replayed_completions_and_the_moves_after_them_stay_out_of_every_sum() -> None:
    report = report_of(RECORDS / "replayed", PRICES)
    log = attempts(RECORDS / "replayed", "docs__delta.md")
    live = [a for a in log if "replayed_from" not in a]
    states = row(table(report, "attempts"), "run")
    assert (states["attempts"], states["replayed"]) == (3, 1)
    cost = row(table(report, "cost", priced=True), "run")
    assert cost["seconds"] == sum(a["elapsed_seconds"] for a in live) == 3.5
    assert cost["input_tokens"] == sum(a["input_tokens"] for a in live)
    assert cost["cost_usd"] == pytest.approx((1620 * 0.15 + 180 * 0.6) / 1e6)
    # Only the run the trace was built from adopts: run 1's correction was superseded.
    corrections = row(table(report, "corrections"), "run")
    assert (corrections["corrective"], corrections["adopted"]) == (1, 1)


def test_a_torn_attempts_log_is_read_up_to_the_tear() -> None:
    report = report_of(RECORDS / "torn")
    [segment] = report.segments
    assert segment.status == "failed" and segment.fold.unreadable_lines == 1
    assert row(table(report, "attempts"), "run")["attempts"] == 1


def test_contexts_get_rows_only_when_there_are_several(tmp_path: Path) -> None:
    assert report_of(RECORDS / "run-a").contexts == []
    out = tmp_path / "out"
    shutil.copytree(RECORDS / "run-a", out)
    for path in (RECORDS / "replayed").rglob("*.jsonl"):
        target = out / path.relative_to(RECORDS / "replayed")
        text = path.read_text().replace("5b0d7f0e-6c1a", "00000000-6c1a")
        target.write_text(text)
    report = report_of(out)
    names = [scope.name for scope in report.contexts]
    assert names == [
        "(unknown)",
        "00000000-6c1a-4d8e-9a51-2f3c4b5d6e7f",
        "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f",
    ]
    summary = table(report, "summary")
    assert row(summary, "context (unknown)")["failed"] == 1
    assert row(summary, "context 00000000-6c1a-4d8e-9a51-2f3c4b5d6e7f")["written"] == 1


def test_compare_prints_this_out_minus_the_other() -> None:
    this, other = report_of(RECORDS / "run-a-rerun"), report_of(RECORDS / "run-a")
    result, notes = compare(this, other, priced=False)
    failed = row(result, "run", metric="failed")
    assert (failed["other"], failed["this"], failed["delta"], failed["change"]) == (
        1,
        0,
        -1,
        "better",
    )
    loss = row(result, "docs/alpha.md", metric="assoc_loss")
    assert (loss["delta"], loss["change"]) == (-0.125, "better")
    assert not [r for r in result.rows if r["name"] == "docs/alpha.md" and r["metric"] == "moves"]
    assert notes == []
    assert headline(this.run.fold, False)["written"] == 2
    _, apart = compare(this, report_of(RECORDS / "run-b"), priced=False)
    assert apart == [
        "only in this --out: docs/alpha.md, docs/beta.md",
        "only in the other: ladder/gamma.md",
    ]


def test_prices_are_dollars_per_million_tokens_per_model() -> None:
    assert load_prices('{"m": {"input": 1, "output": 2.5}}', "p").per_model == {"m": (1.0, 2.5)}
    for bad in ("[]", '{"m": {"input": 1}}', '{"m": {"input": -1, "output": 1}}', "nope"):
        with pytest.raises(PricesError):
            load_prices(bad, "p")
    unpriced = report_of(RECORDS / "run-a", Prices({"other-model": (1.0, 1.0)}))
    assert unpriced.run.fold.unpriced_models == {"taguru-sim"}
    assert row(table(unpriced, "cost", priced=True), "run")["cost_usd"] is None


def test_optional_columns_the_run_never_needed_stay_off_the_terminal() -> None:
    text = render(table(report_of(RECORDS / "run-a"), "attempts"))
    header = text.splitlines()[1].split()
    assert header == [
        "name",
        "attempts",
        "stop_valid",
        "stop_valid_share",
        "stop_malformed",
        "stop_malformed_share",
    ]


def metrics_cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "taguru_ray", "metrics", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO, check=False)


def test_the_verb_prints_the_tables_and_writes_one_parquet_file_each(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text('{"taguru-sim": {"input": 0.15, "output": 0.6}}')
    parquet = tmp_path / "tables"
    result = metrics_cli(
        str(RECORDS / "run-a-rerun"),
        "--compare",
        str(RECORDS / "run-a"),
        "--prices",
        str(prices),
        "--parquet",
        str(parquet),
    )
    assert result.returncode == 0, result.stderr
    for title in ("summary — ", "loss — ", "ladder moves", "cost — ", "compare — this --out"):
        assert title in result.stdout
    names = sorted(path.stem for path in parquet.glob("*.parquet"))
    assert names == sorted([*TABLES, "cost", "failed", "compare", "requests"])
    summary = pq.read_table(parquet / "summary.parquet")
    assert summary.schema.field("cost_usd").type == "double"
    assert summary.column("name").to_pylist() == ["docs/alpha.md", "docs/beta.md", "run"]
    torn = metrics_cli(str(RECORDS / "torn"))
    assert torn.returncode == 0 and "1 unreadable line(s) skipped" in torn.stderr
    assert metrics_cli(str(tmp_path / "absent")).returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"m": 1}')
    refused = metrics_cli(str(RECORDS / "run-a"), "--prices", str(bad))
    assert refused.returncode == 2 and "model 'm' needs" in refused.stderr
    (tmp_path / "empty").mkdir()
    assert metrics_cli(str(tmp_path / "empty")).returncode == 1


def test_each_out_is_a_group_and_the_run_folds_them_all() -> None:
    outs = [OutDir(str(RECORDS / "run-a")), OutDir(str(RECORDS / "run-b"))]
    report = collect(outs, NO_PRICES)
    summary = table(report, "summary")
    assert row(summary, f"group {RECORDS / 'run-a'}")["failed"] == 1
    assert row(summary, f"group {RECORDS / 'run-b'}")["failed"] == 0
    run = row(summary, "run")
    a, b = report_of(RECORDS / "run-a"), report_of(RECORDS / "run-b")
    assert run["attempts"] == a.run.fold.attempts + b.run.fold.attempts
    assert run["written"] == a.run.fold.written + b.run.fold.written


def test_a_ledger_names_the_groups_and_the_context_of_each_source() -> None:
    text = json.dumps(
        {
            "sources": {
                "docs/alpha.md": {"context": "ctx-1", "groups": ["nightly", "english"]},
                "docs/beta.md": {"groups": ["nightly"]},
            }
        }
    )
    report = collect(OutDir(str(RECORDS / "run-a")), NO_PRICES, load_ledger(text, "ledger"))
    summary = table(report, "summary")
    nightly, english = row(summary, "group nightly"), row(summary, "group english")
    assert (nightly["written"], nightly["failed"]) == (1, 1)
    assert (english["written"], english["failed"]) == (1, 0)
    # The failed segment wrote no header; it shares the one context the ledger gave alpha.
    assert {scope.context for scope in report.segments} == {"ctx-1"}
    with pytest.raises(LedgerError):
        load_ledger('{"sources": {"a": {"groups": "nightly"}}}', "ledger")


def test_each_run_gets_its_own_row_when_the_records_span_several() -> None:
    report = report_of(RECORDS / "replayed")
    names = [scope.name for scope in report.runs]
    assert names == ["1111aaaa1111aaaa", "2222bbbb2222bbbb"]
    summary = table(report, "summary")
    first, second = row(summary, "run 1111aaaa1111aaaa"), row(summary, "run 2222bbbb2222bbbb")
    # The second run wrote the file; each run's completions are its own.
    assert (first["written"], second["written"]) == (0, 1)
    assert first["attempts"] + second["attempts"] == row(summary, "run")["attempts"]
    assert report_of(RECORDS / "run-a").runs == []  # one run: the run row says it all


def test_gleaning_passes_are_counted_apart_and_never_as_corrections(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shutil.copytree(RECORDS / "run-a", out)
    [log] = (out / ".extract-trace").glob("docs__alpha.md-*.attempts.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    accepted = next(r for r in records if r["type"] == "attempt" and r["state"] == "stop_valid")
    gleaning = {
        **accepted,
        "attempt_seq": 99,
        "stage": "gleaning",
        "attempt": 1,
        # An older build wrote gleaning passes with `corrects`: still no correction.
        "corrects": {"run_id": accepted["run_id"], "attempt_seq": accepted["attempt_seq"]},
        "input_tokens": 1000,
    }
    log.write_text(log.read_text() + json.dumps(gleaning) + "\n")
    before, after = report_of(RECORDS / "run-a"), report_of(out)
    assert row(table(after, "corrections"), "run") == row(table(before, "corrections"), "run")
    states = row(table(after, "attempts"), "run")
    assert states["attempts"] == before.run.fold.attempts
    assert (states["gleaning"], states["gleaned"]) == (1, 1)
    cost = row(table(after, "cost"), "run")
    assert cost["input_tokens"] == before.run.fold.input_tokens + 1000
    assert cost["gleaning"] == 1
