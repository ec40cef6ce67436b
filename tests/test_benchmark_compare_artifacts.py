"""benchmark compare's artifacts (BENCHMARK.md §2.3, §2.6, §2.7): measurements.json and its
CSV and Parquet projections, the saturation and GPU scopes, the forbidden-key walk, the
all-or-nothing write, and the CLI's exit codes."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import fsspec
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem

from taguru_ray.benchmark.compare import ARTIFACTS, CompareError, compare
from taguru_ray.benchmark.compare.measurements import Measurements
from taguru_ray.benchmark.compare.serde import dumps_compact, dumps_pretty
from taguru_ray.benchmark.compare.stability import STABILITY_METRICS
from taguru_ray.benchmark.compare.table import HEADER, csv_field, render_csv
from taguru_ray.benchmark.compare.write import write_artifacts
from taguru_ray.cli.benchmark_compare import main
from tests.test_benchmark_compare import Results, smoke, two_runs

SATURATION = {
    "completions": 120,
    "steady_seconds": 40.0,
    "completions_per_second": 3.0,
    "input_tokens_per_second": 1500.0,
    "output_tokens_per_second": 250.5,
    "latency_seconds": {"p50": 0.8, "p90": 1.5, "p99": None},
    "inflight_settled": 12,
    "inflight_adaptive": True,
    "http_429": 4,
    "retries": 6,
    "cost_per_1k_segments": 0.125,
    "cost_per_1m_output_tokens": None,
}


def saturated(root: Path) -> Results:
    """Two models on one GPU label (one with two runs), one without a GPU label."""
    results = two_runs(root)
    results.models[0] |= {"gpu": "L4", "gpu_count": 1, "price_per_gpu_hour": 0.8}
    results.cells[0]["saturation"] = SATURATION
    results.cells[1]["saturation"] = SATURATION | {"completions_per_second": 5.0}
    results.model("cpu-only").model("n", gpu="L4")
    results.cell("cpu-only", 1, [], saturation=SATURATION)
    results.cell("n", 1, [], saturation=None)
    return results


BANNED = ("rank", "score", "winner", "best", "recommended", "overall", "delta_vs")
STRICT = ("miss", "error", "wrong", "incorrect", "fail", "omit", "expected", "gold", "truth",
          "recall", "precision", "better", "worse")  # fmt: skip


def _walk_keys(value: Any, path: str = "$") -> list[tuple[str, str]]:
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            found.append((path, key))
            found += _walk_keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _walk_keys(item, f"{path}[{index}]")
    return found


def _csv_rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))[1:]


def test_no_banned_key_appears_anywhere_in_the_artifact(tmp_path: Path) -> None:
    m = saturated(tmp_path).compute().measurements
    document = json.loads(dumps_pretty(m.to_json()))
    assert "saturation.completions_per_second" in document["models"]["m"]
    assert document["gpus"]
    offending = [(p, k) for p, k in _walk_keys(document) for bad in BANNED if bad in k.lower()]
    assert offending == []
    metrics = {row[4] for row in _csv_rows(render_csv(m))}
    assert [name for name in metrics for bad in BANNED if bad in name.lower()] == []


def test_the_twelve_stability_names_are_exactly_what_a_model_gets(tmp_path: Path) -> None:
    model = two_runs(tmp_path).compute().measurements.models["m"]
    emitted = {name for name in model if name.startswith(("stability.", "run."))}
    assert emitted == set(STABILITY_METRICS)
    assert len(STABILITY_METRICS) == 12


def test_no_stability_name_uses_a_judging_word() -> None:
    assert [(n, w) for n in STABILITY_METRICS for w in STRICT if w in n.lower()] == []


def _all_metric_names(m: Measurements) -> set[str]:
    names = {n for block in m.cells.values() for n in block.metrics}
    names |= {n for metrics in [*m.models.values(), *m.gpus.values()] for n in metrics}
    for segments in m.documents.values():
        for runs in segments.values():
            for metrics in runs.values():
                names |= set(metrics)
    return names


def test_every_metric_has_a_definition_and_the_csv_unit_is_its_unit(tmp_path: Path) -> None:
    m = saturated(tmp_path).compute().measurements
    assert _all_metric_names(m) <= set(m.definitions)
    for row in _csv_rows(render_csv(m)):
        assert row[7] == m.definitions[row[4]].unit
    assert "validation_issues" in (m.definitions["attempt.state_rate.stop_malformed"].caveat or "")
    length = m.definitions["attempt.state_rate.length_limited"].caveat or ""
    assert "length_limited: true" in length
    steady = m.definitions["saturation.completions_per_second"]
    assert steady.source == "manifest cells[].saturation"
    assert "10th and 90th percentile" in (steady.caveat or "")


def _lookup(m: Measurements, row: list[str]) -> Any:
    scope, model, run, segment, metric = row[:5]
    if scope == "cell":
        return m.cells[f"{model}.run{int(run):02d}"].metrics[metric]
    if scope == "model":
        return m.models[model][metric]
    if scope == "gpu":
        return m.gpus[model][metric]
    return m.documents[model][segment][f"run{int(run):02d}"][metric]


@pytest.mark.parametrize("build", [smoke, two_runs, saturated])
def test_the_csv_is_an_exact_projection_of_the_json(tmp_path: Path, build: Any) -> None:
    m = build(tmp_path).compute().measurements
    rows = _csv_rows(render_csv(m))
    assert rows
    for row in rows:
        value = _lookup(m, row)
        assert int(row[8]) == value.sample_size
        field = dict(value.rows())[row[5]]
        if field is None:
            assert row[6] == ""
        else:
            assert float(row[6]) == pytest.approx(field, abs=1e-9)
            assert "e" not in row[6] and not row[6].endswith(".0")
    expected = sum(len(v.rows()) for v in _every_value(m))
    assert len(rows) == expected


def _every_value(m: Measurements) -> list[Any]:
    values = [v for block in m.cells.values() for v in block.metrics.values()]
    values += [v for metrics in [*m.models.values(), *m.gpus.values()] for v in metrics.values()]
    for segments in m.documents.values():
        for runs in segments.values():
            for metrics in runs.values():
                values += list(metrics.values())
    return values


def test_csv_scopes_come_in_contract_order(tmp_path: Path) -> None:
    text = render_csv(saturated(tmp_path).compute().measurements)
    assert text.splitlines()[0] == ",".join(HEADER)
    scopes = [row[0] for row in _csv_rows(text)]
    order = ["cell", "model", "gpu", "document"]
    assert sorted(scopes, key=order.index) == scopes
    gpu_rows = [row for row in _csv_rows(text) if row[0] == "gpu"]
    assert {row[1] for row in gpu_rows} == {"L4"}
    assert all(row[2] == "" and row[3] == "" for row in gpu_rows)


def test_csv_escaping() -> None:
    assert csv_field("plain") == "plain"
    assert csv_field("a,b") == '"a,b"'
    assert csv_field('a"b') == '"a""b"'
    assert csv_field("a\nb") == '"a\nb"'


def test_the_csv_is_byte_identical_across_computations(tmp_path: Path) -> None:
    results = two_runs(tmp_path)
    first = render_csv(results.compute().measurements)
    assert render_csv(results.compute().measurements) == first


def test_saturation_scopes(tmp_path: Path) -> None:
    m = saturated(tmp_path).compute().measurements
    cell = m.cells["m.run01"].metrics
    assert cell["saturation.completions_per_second"].to_json()["sum"] == 3.0
    assert cell["saturation.latency_p99_seconds"].n == 0
    assert cell["cost.per_1k_segments"].to_json()["max"] == 0.125
    model = m.models["m"]["saturation.completions_per_second"]
    assert (model.n, model.min, model.max) == (2, 3.0, 5.0)
    assert m.models["n"]["saturation.http_429"].n == 0
    assert list(m.gpus) == ["L4"]
    gpu = m.gpus["L4"]["saturation.completions_per_second"]
    assert (gpu.n, gpu.sum) == (2, 8.0)  # model n's cell has no block: no sample
    assert m.cells["cpu-only.run01"].metrics["saturation.retries"].to_json()["sum"] == 6.0


def test_measurements_json_layout(tmp_path: Path) -> None:
    m = smoke(tmp_path).compute().measurements
    document = m.to_json()
    assert list(document) == [
        "taguru_benchmark_measurements", "run_id", "generated_at", "percentile_method",
        "matching", "inputs", "definitions", "cells", "models", "gpus", "documents",
    ]  # fmt: skip
    assert document["matching"] == {
        "module": "benchmark::identity",
        "case_fold": True,
        "unicode_normalization": "NFKC",
        "alias_expansion": "batch-local",
        "weight_tolerance": 0.0,
    }
    assert document["inputs"] == {"runs": ["runs/m.run01.jsonl"], "cells": "cells/"}
    cell = document["cells"]["m.run01"]
    assert list(cell)[:3] == ["model_id", "run_index", "bound"]  # the word (ADR 0048)
    assert list(cell)[3:] == sorted(list(cell)[3:])
    definition = document["definitions"]["latency.attempt_seconds"]
    assert list(definition) == ["unit", "statistic", "scopes", "description", "source", "caveat"]


def test_json_numbers_print_as_serde_does() -> None:
    assert dumps_compact({"a": 2.0, "b": 1e-7, "c": 3, "d": None}) == (
        '{"a":2.0,"b":1e-7,"c":3,"d":null}'
    )
    assert (
        dumps_pretty({"a": [], "b": {}, "c": [1]})
        == '{\n  "a": [],\n  "b": {},\n  "c": [\n    1\n  ]\n}'
    )


def test_compare_writes_every_artifact_and_parquet_matches_the_csv(tmp_path: Path) -> None:
    results = saturated(tmp_path)
    results.write()
    assert compare(str(tmp_path)) == list(ARTIFACTS)
    csv_text = (tmp_path / "measurements.csv").read_text()
    table = pq.read_table(tmp_path / "measurements.parquet").to_pylist()
    rows = _csv_rows(csv_text)
    assert len(table) == len(rows)
    for record, row in zip(table, rows, strict=True):
        assert record["metric"] == row[4] and record["stat"] == row[5]
        assert (record["value"] is None) == (row[6] == "")
        assert record["n"] == int(row[8])
        assert (record["run_index"] is None) == (row[2] == "")
    saved = json.loads((tmp_path / "measurements.json").read_text())
    assert saved["taguru_benchmark_measurements"] == 1
    assert not list(tmp_path.glob(".*.tmp"))


def test_compare_reads_and_writes_through_an_fsspec_url(tmp_path: Path) -> None:
    smoke(tmp_path).write()
    fs = fsspec.filesystem("memory")
    fs.put(str(tmp_path), "/bench-results", recursive=True)
    try:
        compare("memory://bench-results")
        assert fs.exists("/bench-results/measurements.json")
        assert fs.exists("/bench-results/differences.jsonl")
    finally:
        fs.rm("/bench-results", recursive=True)


class _FailingRename(LocalFileSystem):
    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.renames = 0

    def mv(self, path1: str, path2: str, **kwargs: Any) -> None:
        self.renames += 1
        if self.renames == self.fail_at:
            raise OSError("injected rename failure")
        super().mv(path1, path2, **kwargs)


@pytest.mark.parametrize("fail_at", [1, 3])
def test_an_injected_commit_failure_leaves_no_artifact_and_no_temp(
    tmp_path: Path, fail_at: int
) -> None:
    artifacts = [(name, b"x") for name in ARTIFACTS]
    with pytest.raises(CompareError, match="injected rename failure"):
        write_artifacts(_FailingRename(fail_at), str(tmp_path), artifacts)
    assert list(tmp_path.iterdir()) == []


def test_cli_writes_and_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    smoke(tmp_path).write()
    assert main([str(tmp_path)]) == 0
    assert capsys.readouterr().err == ""
    assert sorted(p.name for p in tmp_path.glob("*.*")) == sorted([*ARTIFACTS, "manifest.json"])
    # One model: no pair, so no locator needs the corpus text.
    assert main(["--with-text", str(tmp_path)]) == 0


def test_cli_help_goes_to_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: taguru-ray benchmark compare")


@pytest.mark.parametrize(
    "argv", [[], ["a", "b"], ["--bogus", "a"], ["--with-text"]], ids=["none", "two", "flag", "only"]
)
def test_cli_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("taguru-ray: benchmark compare: ")
    assert err.rstrip().endswith("— try 'taguru-ray benchmark compare --help'")


def test_cli_runtime_failure_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    smoke(tmp_path).write()
    (tmp_path / "runs/m.run01.jsonl").unlink()
    assert main([str(tmp_path)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("taguru-ray: benchmark compare: ")
    assert "m.run01" in err[0]
    assert not (tmp_path / "measurements.json").exists()


def test_cli_with_text_refusal_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_benchmark_compare_differences import pair_fixture

    pair_fixture(tmp_path).write()
    assert main([str(tmp_path), "--with-text"]) == 1
    assert "corpus/brewery.md" in capsys.readouterr().err
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("measurements", "differ"))]


def test_each_cell_says_what_bounded_it_and_scopes_tally_the_words(tmp_path: Path) -> None:
    """ADR 0048: a plain word per cell in the JSON, a Tally per scope, a CSV row a word."""
    results = saturated(tmp_path)
    results.cells[0]["saturation"] = SATURATION | {"bound": "endpoint", "client_cpu_share": 0.2}
    results.cells[1]["saturation"] = SATURATION | {"bound": "window", "client_cpu_share": 0.9}
    computed = results.compute()
    m = computed.measurements
    document = m.to_json()
    assert document["cells"]["m.run01"]["bound"] == "endpoint"
    assert document["cells"]["n.run01"]["bound"] is None  # no saturation block: unsaid
    assert document["models"]["m"]["saturation.bound"] == {"endpoint": 1, "window": 1}
    assert document["gpus"]["L4"]["saturation.bound"] == {"endpoint": 1, "window": 1}
    assert m.models["m"]["saturation.client_cpu_share"].to_json()["max"] == 0.9
    assert document["definitions"]["saturation.bound"]["statistic"] == "tally"
    rows = [r for r in _csv_rows(render_csv(m)) if r[4] == "saturation.bound"]
    assert ["model", "m", "", "", "saturation.bound", "window", "1", "cell", "2"] in rows


def test_compare_names_the_cells_the_client_held_in_one_line(tmp_path: Path) -> None:
    results = saturated(tmp_path)
    results.cells[1]["saturation"] = SATURATION | {"bound": "client"}
    warned: list[str] = []
    results.compute(warn=warned.append)
    held = [line for line in warned if "held by the client" in line]
    assert held == [
        "WARNING: 1 cell(s) were held by the client, not the endpoint: m.run02 (client) — "
        "their throughput measures taguru-ray's side, not the GPU (hollow on the figure)"
    ]
