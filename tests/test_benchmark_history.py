"""The bench's history line and bench-guard's comparison (issue 51): pure functions over
literal runs, no process started and nothing timed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks import guard, history
from benchmarks.run import PROJECT_ROOT


def steady(cpu_start: dict[str, float], cpu_end: dict[str, float], done: float) -> dict[str, Any]:
    return {
        "from_s": 1.0,
        "to_s": 2.0,
        "completions": done,
        "cpu_start_s": cpu_start,
        "cpu_end_s": cpu_end,
        "system_start_s": {},
        "system_end_s": {},
    }


RUN = {
    "completions_per_s": 270.0,
    "cpu_steady": steady(
        {"driver": 1.0, "ray::SegmentWorker": 2.0, "raylet": 0.5},
        {"driver": 1.2, "ray::SegmentWorker": 4.0, "raylet": 0.6},
        1000,
    ),
}
SATURATION = {
    "segments": 2000,
    "ideal_completions_per_s": 320.0,
    "taguru_ray": {**RUN, "completions_per_s": 300.0},
    "defaults": RUN,
    "loadgen_best_completions_per_s": 310.0,
    "loadgen_cpu_ms_per_completion": 0.2,
}


def test_a_run_s_cpu_is_split_by_role_with_the_whole_tree_beside_it() -> None:
    cpu = history.cpu_by_role(RUN)
    assert cpu["driver"] == pytest.approx(0.2)
    assert cpu["segment_workers"] == pytest.approx(2.0)
    assert cpu["ray"] == pytest.approx(0.1)
    assert cpu["total"] == pytest.approx(2.3)
    assert history.cpu_by_role({"completions_per_s": 1.0}) == {}


def test_an_entry_holds_the_commit_cpu_by_kind_and_both_saturation_ratios() -> None:
    line = history.entry(SATURATION, PROJECT_ROOT, "bench", 0.7)
    assert line["commit"] and len(line["commit"]) == 40
    assert line["tuned_vs_loadgen"] == pytest.approx(300 / 310)
    assert line["defaults_vs_loadgen"] == pytest.approx(270 / 310)
    assert line["defaults_cpu_vs_loadgen"] == pytest.approx(2.3 / 0.2)
    assert set(line["cpu_ms_per_completion_steady"]) == {"defaults", "tuned"}
    assert line["load_1min_at_start"] == 0.7


def test_the_guard_compares_with_the_newest_entry_of_a_clean_tree(tmp_path: Path) -> None:
    assert history.last_recorded_commit(tmp_path) is None
    history.append(tmp_path, {"commit": "a" * 40, "uncommitted_changes": False})
    history.append(tmp_path, {"commit": "b" * 40, "uncommitted_changes": False})
    history.append(tmp_path, {"commit": "c" * 40, "uncommitted_changes": True})
    with (tmp_path / history.HISTORY).open("a") as handle:
        handle.write("{not json\n")
    assert history.last_recorded_commit(tmp_path) == "b" * 40
    assert len(history.read(tmp_path)) == 3


def test_each_figure_s_change_is_head_over_base_of_the_medians() -> None:
    base = [guard.run_figures(RUN, RUN, {"completions_per_s": 300.0}) for _ in range(2)]
    slower = {**RUN, "completions_per_s": 150.0}
    head = [guard.run_figures(slower, RUN, {"completions_per_s": 300.0}) for _ in range(2)]
    table = guard.compare({"base": base, "head": head})
    assert table["defaults_vs_loadgen"]["base"]["median"] == pytest.approx(0.9)
    assert table["defaults_vs_loadgen"]["change"] == pytest.approx(-4 / 9)
    assert table["cpu_ms/tuned/total"]["change"] == pytest.approx(0.0)


def test_the_guard_without_a_recorded_commit_says_how_to_make_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.guard", "--history-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert done.returncode == 1
    assert "records no commit" in done.stderr and "make bench" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_repository_s_history_parses_and_names_commits() -> None:
    entries = history.read(PROJECT_ROOT / "benchmarks" / "results")
    assert entries, "benchmarks/results/history.jsonl holds the benches of record"
    for line in entries:
        assert json.dumps(line)
        assert "cpu_ms_per_completion_steady" in line and line.get("commit")
