"""The benchmark suite's smallest configuration, end to end: the JSON's shape, never its speed.

`python -m benchmarks.run --smoke` takes the same code path as `make bench`
(corpora, the simulator, `taguru-ray extract` on its own local Ray, the skip
of an already-extracted corpus) at 20 segments and C = 4. Timing thresholds
would only measure how busy the machine is; this checks that every number is
there and has a sane type.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.corpus import segment_name, segment_text, write_corpus
from benchmarks.process_runs import TRASH, BenchFailed, set_aside, work_dir
from taguru_ray.engine.bound import BOUNDS
from tests.support import REPO

pytestmark = [pytest.mark.slow, pytest.mark.ray]

RATIOS = (
    "throughput_vs_ideal",
    "throughput_vs_loadgen",
    "loadgen_vs_ideal",
    "throughput_vs_window_1",
    "auto_vs_best_fixed",
    "auto_throughput_vs_ideal",
    "auto_throughput_vs_loadgen",
    "commit_in_name_order_vs_arrival",
    "commit_in_name_order_vs_ideal",
    "skip_vs_hash",
    "skip_vs_hash_100k",
    "skip_lines_vs_hash",
    "driver_memory_large_vs_small",
    "driver_memory_1m_vs_100k",
    "cpu_ms_per_completion_large_vs_small",
    "defaults_vs_loadgen",
    "defaults_vs_ideal",
    "cpu_per_completion_vs_loadgen",
    "cell_2_slots_vs_capacity",
    "cell_4_slots_vs_capacity",
    "pdf_pages_per_core_vs_docling",
)


def _positive(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def _check_run(run: dict[str, Any]) -> None:
    assert run["exit_code"] == 0
    assert _positive(run["wall_s"])
    assert _positive(run["cpu_s"])
    assert run["cpu_s"] >= run["cpu_reaped_s"] >= 0
    assert all(isinstance(k, str) and v >= 0 for k, v in run["cpu_sampled_s"].items())


def _check_extract(run: dict[str, Any], segments: int) -> None:
    _check_run(run)
    assert run["sim"]["completions"] == segments  # one chunk, one completion each
    assert run["sim"]["by_outcome"] == {"ok": segments}
    assert _positive(run["completions_per_s"])
    assert _positive(run["cpu_ms_per_completion"])
    assert _positive(run["driver_peak_rss_mb"])


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, ray_address: str) -> dict[str, Any]:
    # Joined to the session's Ray: a dozen local Ray starts would be most of the time.
    folder = tmp_path_factory.mktemp("bench")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.run",
            "--smoke",
            "--results-dir",
            str(folder / "results"),
            "--work-dir",
            str(folder / "work"),
            "--address",
            ray_address,
            "--no-multinode",  # tests/test_benchmark_multinode.py runs it
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = folder / "results"
    latest = out / "bench-smoke-latest.json"
    written = [path for path in out.glob("bench-smoke-*.json") if path != latest]
    assert len(written) == 1 and latest.read_bytes() == written[0].read_bytes()
    assert (out / "latest.png").stat().st_size > 0
    return json.loads(written[0].read_text(encoding="utf-8"))


def test_the_json_names_the_machine_and_the_parameters(results: dict[str, Any]) -> None:
    assert isinstance(results["cpu_accounting"], str)
    machine = results["machine"]
    assert _positive(machine["cores"])
    assert isinstance(machine["python"], str) and isinstance(machine["ray"], str)
    params = results["parameters"]
    assert params["segments"] == 20 and params["slots"] == 4
    assert isinstance(results["timestamp"], str)


def test_saturation_has_taguru_ray_the_loadgen_and_the_ideal(results: dict[str, Any]) -> None:
    sat = results["saturation"]
    segments = results["parameters"]["segments"]
    _check_extract(sat["taguru_ray"], segments)
    for side in ("loadgen_before", "loadgen_after"):
        _check_run(sat[side])
        assert sat[side]["own_clock"]["completions"] == segments
        assert _positive(sat[side]["completions_per_s"])
    assert _positive(sat["loadgen_best_completions_per_s"])
    assert sat["ideal_completions_per_s"] == pytest.approx(4 / 0.1)
    # Issue 36: the same corpus with default flags, and the bare client's CPU per request.
    _check_extract(sat["defaults"], segments)
    assert not {"--max-inflight", "--segment-window"} & set(sat["defaults"]["argv"])
    assert _positive(sat["loadgen_cpu_ms_per_completion"])


def test_benchmark_cells_with_default_flags_say_their_capacity_and_bound(
    results: dict[str, Any],
) -> None:
    """Issue 36: `benchmark extract`, no window or in-flight flag, two servers at once."""
    found = results["benchmark_cells"]
    assert [cell["slots"] for cell in found["cells"]] == [2, 4]
    for cell in found["cells"]:
        assert cell["ideal_completions_per_s"] == pytest.approx(cell["slots"] / 0.1)
        assert _positive(cell["completions_per_s"]) and _positive(cell["vs_capacity"])
        assert cell["bound"] in BOUNDS
        assert isinstance(cell["bound_why"], str) and cell["bound_why"]
        key = f"cell_{cell['slots']}_slots_vs_capacity"
        assert results["ratios"][key]["value"] == cell["vs_capacity"]


def test_window_1_and_overhead_are_measured(results: dict[str, Any]) -> None:
    _check_extract(results["window_1"], results["parameters"]["window1_segments"])
    points = results["overhead"]["points"]
    assert [p["segments"] for p in points] == [8, 20]
    assert all(_positive(p["cpu_ms_per_completion"]) for p in points)
    # Issue 23's budget by role, from the same two runs (joined to the session's Ray, only
    # the driver's CPU is the run's own: the actors' are the session Ray's).
    roles = results["cpu_ms_per_completion"]
    assert roles == results["overhead"]["by_role"]
    assert set(roles) == {"driver", "gateway", "segment_workers", "ledger", "ray"}
    assert [roles[r]["target"] for r in ("driver", "gateway", "segment_workers")] == [
        "<= 0.3",
        "<= 0.3",
        "<= 2.0",
    ]
    assert isinstance(roles["driver"]["cpu_ms_per_completion"], float)
    assert roles["gateway"]["cpu_ms_per_completion"] is None and roles["gateway"]["met"] is None
    # The same budget inside the saturation run alone; a run too short for a walk of the
    # process tree on each side of its steady state has none.
    steady = results["cpu_ms_per_completion_steady"]
    assert steady == results["overhead"]["steady_by_role"]
    window = results["saturation"]["taguru_ray"]["cpu_steady"]
    assert (steady is None) == (window is None)
    if window is not None:
        assert set(steady) == set(roles) and window["to_s"] > window["from_s"]


def test_the_sweep_has_every_level_and_auto_or_a_reason(results: dict[str, Any]) -> None:
    sweep = results["inflight_sweep"]
    levels = sweep["levels"]
    assert [entry["max_inflight"] for entry in levels] == [2, 4]
    for entry in levels:
        _check_extract(entry, results["parameters"]["segments"])
    assert sweep["best_fixed_max_inflight"] in (2, 4)
    auto = sweep["auto"]
    if "skipped" in auto:  # a build without --max-inflight auto
        assert isinstance(auto["skipped"], str) and auto["skipped"]
    else:
        _check_extract(auto, results["parameters"]["segments"])
        # auto against the best level, alternated: the ratio is of the pairs' means.
        paired = sweep["paired"]
        assert paired["order"] == ["auto", "best", "best", "auto"]
        for run in paired["runs"]:
            _check_extract(run, results["parameters"]["segments"])
        autos, bests = paired["auto_completions_per_s"], paired["best_fixed_completions_per_s"]
        assert len(autos) == 2 and len(bests) == 2
        ratio = results["ratios"]["auto_vs_best_fixed"]["value"]
        assert ratio == pytest.approx((autos[0] + autos[1]) / (bests[0] + bests[1]))


def test_the_ordered_commit_is_measured_against_judging_on_arrival(
    results: dict[str, Any],
) -> None:
    commit = results["commit_order"]
    assert commit["order"] == ["name", "arrival", "arrival", "name"]
    for run in commit["runs"]:
        _check_extract(run, results["parameters"]["segments"])
    named, arrival = commit["name_completions_per_s"], commit["arrival_completions_per_s"]
    assert len(named) == 2 and len(arrival) == 2
    ratio = results["ratios"]["commit_in_name_order_vs_arrival"]["value"]
    assert ratio == pytest.approx((named[0] + named[1]) / (arrival[0] + arrival[1]))


def test_skip_and_memory_are_measured_without_calling_the_model(
    results: dict[str, Any],
) -> None:
    skip = results["manifest_skip"]
    assert skip["segments"] == 200
    assert _positive(skip["hash_s"]) and _positive(skip["corpus_bytes"])
    assert skip["net_skip_s"] is None or _positive(skip["net_skip_s"])
    for run in skip["runs"]:
        _check_run(run)
        assert run["marked_lines"] == run["segments"]  # every segment reported as skipped
        # Twice each, the quicker kept: the first run, reported as cold, is never quicker.
        assert run["cold_wall_s"] >= run["wall_s"]
    assert [row["segments"] for row in skip["by_size"]] == [20, 50, 200]
    for row in skip["by_size"]:
        assert _positive(row["hash_s"]) and _positive(row["driver_peak_rss_mb"])
        # The floor hashed before the runs and after, the quicker pass counting.
        assert row["hash_s"] == min(row["hash_passes_s"]) and len(row["hash_passes_s"]) == 2
        assert {"cold_net_skip_s", "cold_skip_vs_hash"} <= set(row)
    memory = results["driver_memory"]
    assert memory["segments"] == [20, 50, 200]
    assert all(_positive(mb) for mb in memory["driver_peak_rss_mb"])
    assert len(memory["growth"]) == 2 and all(_positive(g) for g in memory["growth"])
    # Issue 23's ratio: the third size over the second, whatever the preset's sizes.
    peaks = memory["driver_peak_rss_mb"]
    ratio = results["ratios"]["driver_memory_1m_vs_100k"]
    assert ratio["value"] == pytest.approx(peaks[2] / peaks[1]) and ratio["target"] == "<= 1.5"


def test_sessions_import_memory_is_measured_per_input_byte(results: dict[str, Any]) -> None:
    """Issue 49 item 12: `sessions import --mask` of one long line, two sizes, in fresh
    interpreters; the marginal memory per input byte is in the ratios with its target."""
    measured = results["sessions_import_memory"]
    assert [run["line_mib"] for run in measured["runs"]] == [0.25, 1.0]
    for run in measured["runs"]:
        assert run["exit_code"] == 0, run["stderr_tail"]
        assert _positive(run["peak_rss_mb"]) and run["file_bytes"] > run["line_mib"] * 2**20
    ratio = results["ratios"]["sessions_import_bytes_per_input_byte"]
    assert ratio["value"] == measured["bytes_per_input_byte"] and ratio["target"] == "<= 20.0"


def test_text_layer_pdfs_are_converted_and_set_against_docling(results: dict[str, Any]) -> None:
    documents = results["documents"]
    generated = documents["generated"]
    assert (generated["documents"], generated["pages"]) == (2, 6)  # the smoke preset's
    assert generated["paragraphs"] == 6 * 5  # five paragraphs a page, each found
    assert _positive(generated["pages_per_cpu_s"]) and _positive(generated["child_wall_s"])
    assert documents["docling_pages_per_core"] == [0.6, 0.9] and "OCR" in documents["leaves_out"]
    ratio = results["ratios"]["pdf_pages_per_core_vs_docling"]
    assert ratio["value"] == pytest.approx(generated["pages_per_cpu_s"] / 0.9)


def test_every_ratio_has_a_value_a_target_and_a_verdict(results: dict[str, Any]) -> None:
    ratios = results["ratios"]
    assert set(RATIOS) <= set(ratios)
    for name in RATIOS:
        entry = ratios[name]
        assert entry["value"] is None or isinstance(entry["value"], float), name
        assert entry["target"] is None or isinstance(entry["target"], str), name
        assert entry["met"] in (None, True, False), name
    assert isinstance(ratios["throughput_vs_ideal"]["value"], float)
    assert isinstance(ratios["throughput_vs_loadgen"]["value"], float)


def test_the_corpus_is_deterministic_and_prefix_stable(tmp_path: Path) -> None:
    small = write_corpus(tmp_path / "a", 3, 300)
    large = write_corpus(tmp_path / "b", 5, 300)
    assert [p.read_bytes() for p in small] == [p.read_bytes() for p in large[:3]]
    assert small[1].name == segment_name(1)
    assert segment_text(1, 300) != segment_text(2, 300)  # distinct names per segment
    assert len(segment_text(1, 300).encode("utf-8")) >= 300


def test_an_earlier_out_is_set_aside_and_deleted_when_the_bench_ends(tmp_path: Path) -> None:
    """Not deleted between runs (the next run's file creations would pay for it on a
    disk without a journal): moved into the work folder, emptied at the end."""
    keep = tmp_path / "work"
    with work_dir(keep) as work:
        out = work / "out" / "saturation"
        out.mkdir(parents=True)
        (out / "a.jsonl").write_text("{}\n")
        set_aside(work, out)
        set_aside(work, work / "out" / "never-made")
        assert not out.exists()
        [moved] = (work / TRASH).iterdir()
        assert moved.name.startswith("saturation-")
        assert (moved / "a.jsonl").read_text() == "{}\n"
    assert keep.is_dir() and not (keep / TRASH).exists()


def test_an_out_that_cannot_be_set_aside_is_one_line_naming_it(tmp_path: Path) -> None:
    out = tmp_path / "out" / "saturation"
    out.mkdir(parents=True)
    (tmp_path / TRASH).write_text("a file where the folder goes\n")
    with pytest.raises(BenchFailed, match=r"could not set .*saturation aside .* --work-dir"):
        set_aside(tmp_path, out)
    assert out.is_dir()  # left where it was


def test_a_dataset_skip_is_measured_in_rows_per_second_and_driver_memory(
    results: dict[str, Any],
) -> None:
    """Issue 47: a Parquet dataset's skip-only rerun beside the file skip of its size."""
    dataset = results["dataset_skip"]
    assert (dataset["rows"], dataset["shards"]) == (200, 8)
    assert _positive(dataset["driver_peak_rss_mb"]) and _positive(dataset["wall_s"])
    assert dataset["net_skip_s"] is None or _positive(dataset["rows_per_s"])
    versus = dataset["versus_files"]
    assert versus["from"] == "this run" and versus["segments"] == 200
    assert versus["driver_memory_vs_files"] == pytest.approx(
        dataset["driver_peak_rss_mb"] / versus["driver_peak_rss_mb"]
    )
