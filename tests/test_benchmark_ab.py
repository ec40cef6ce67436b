"""`make bench-ab`: two builds' saturation runs interleaved — the order, the figures of a
run and their summary with literals, then one smallest A/B end to end (its shape only)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from benchmarks.ab import checkout, order, parse_args, run_figures, spread, summarize
from tests.support import REPO


def test_the_builds_alternate_base_head_then_head_base() -> None:
    assert order(1) == ["base", "head"]
    assert order(2) == ["base", "head", "head", "base"]
    assert order(3) == ["base", "head", "head", "base", "base", "head"]


def test_a_runs_figures_are_its_rate_its_share_of_c_over_l_and_steady_cpu_by_role() -> None:
    summary = {
        "completions_per_s": 160.0,
        "cpu_steady": {
            "completions": 1000.0,
            "cpu_start_s": {"driver": 1.0, "ray::SegmentWorker": 2.0, "raylet": 0.5},
            "cpu_end_s": {"driver": 1.3, "ray::SegmentWorker": 6.0, "raylet": 0.6},
            "system_start_s": {"driver": 0.2, "ray::SegmentWorker": 0.5, "raylet": 0.1},
            "system_end_s": {"driver": 0.25, "ray::SegmentWorker": 1.5, "raylet": 0.1},
        },
    }
    figures = run_figures(summary, ideal=320.0)
    assert figures["completions_per_s"] == 160.0
    assert figures["throughput_vs_ideal"] == 0.5
    roles = figures["cpu_ms_per_completion_steady"]
    assert roles["driver"] == pytest.approx(0.3)
    assert roles["segment_workers"] == pytest.approx(4.0)
    assert roles["ray"] == pytest.approx(0.1)
    assert roles["gateway"] is None  # no process of it was sampled: no figure, not a zero
    system = figures["system_ms_per_completion_steady"]
    assert system["segment_workers"] == pytest.approx(1.0)  # of the 4.0 above
    assert system["driver"] == pytest.approx(0.05)
    assert system["gateway"] is None


def test_a_run_without_a_steady_window_has_its_rate_and_no_cpu() -> None:
    figures = run_figures({"completions_per_s": None, "cpu_steady": None}, ideal=320.0)
    assert figures == {
        "completions_per_s": None,
        "throughput_vs_ideal": None,
        "cpu_ms_per_completion_steady": {},
        "system_ms_per_completion_steady": {},
    }


def test_spread_is_the_lowest_median_and_highest_of_what_was_measured() -> None:
    assert spread([3.0, None, 1.0, 2.0]) == {"min": 1.0, "median": 2.0, "max": 3.0}
    assert spread([None]) == {"min": None, "median": None, "max": None}


def _run(rate: float, driver_ms: float) -> dict[str, Any]:
    return {
        "figures": {
            "completions_per_s": rate,
            "throughput_vs_ideal": rate / 320.0,
            "cpu_ms_per_completion_steady": {"driver": driver_ms},
        }
    }


def test_the_summary_compares_the_medians_head_over_base() -> None:
    runs = {
        "base": [_run(200.0, 0.4), _run(180.0, 0.5), _run(220.0, 0.6)],
        "head": [_run(250.0, 0.2), _run(240.0, 0.3), _run(100.0, 0.25)],
    }
    summary = summarize(runs)
    assert summary["base"]["completions_per_s"] == {"min": 180.0, "median": 200.0, "max": 220.0}
    assert summary["head"]["cpu_ms_per_completion_steady"]["driver"]["median"] == 0.25
    # Runs of a build from before the kernel's part was sampled have none: no figure.
    assert summary["head"]["system_ms_per_completion_steady"]["driver"]["median"] is None
    assert summary["head_vs_base"]["completions_per_s"] == pytest.approx(1.2)
    assert summary["head_vs_base"]["cpu_ms_per_completion_steady"]["driver"] == pytest.approx(0.5)


def test_flags_override_the_preset_and_rounds_must_be_one_or_more() -> None:
    params, args = parse_args(["--base", "HEAD~2", "--smoke", "--segments", "30"])
    assert (args.base, args.rounds, params.segments, params.slots) == ("HEAD~2", 3, 30, 4)
    with pytest.raises(SystemExit) as refused:
        parse_args(["--base", "HEAD", "--rounds", "0"])
    assert refused.value.code == 2


def _ab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "benchmarks.ab", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )


needs_git = pytest.mark.skipif(
    shutil.which("git") is None or not (REPO / ".git").exists(),
    reason="a git checkout of the repository",
)


@needs_git
def test_an_unknown_base_is_one_line_naming_it(tmp_path: Path) -> None:
    done = _ab("--base", "no-such-revision", "--results-dir", str(tmp_path))
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert lines == [
        "bench-ab: --base no-such-revision: not a commit of this repository — give a "
        "revision `git log` shows (a hash, a tag, HEAD~3)"
    ]
    assert "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())  # nothing written


@needs_git
def test_a_checkout_a_killed_ab_left_behind_is_replaced_then_removed(tmp_path: Path) -> None:
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    stale = tmp_path / f"base-{head[:12]}"
    stale.mkdir()
    (stale / "left.txt").write_text("from a killed run\n", encoding="utf-8")
    with checkout("HEAD", tmp_path) as (tree, sha):
        assert (tree, sha) == (stale, head)
        assert (tree / "pyproject.toml").is_file() and not (tree / "left.txt").exists()
    assert not stale.exists()


def test_no_git_is_one_line_saying_so(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.ab", "--base", "HEAD", "--results-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PATH": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "bench-ab: git: not found — the A/B checks the base out with git"
    ]
    assert not list(tmp_path.iterdir())


@needs_git
@pytest.mark.slow
@pytest.mark.ray
def test_one_round_of_the_smallest_ab_end_to_end(tmp_path: Path) -> None:
    # Each run starts a local Ray of its own: a joined cluster would run one build's actors.
    results = tmp_path / "results"
    done = _ab("--base", "HEAD", "--rounds", "1", "--smoke", "--results-dir", str(results))
    assert done.returncode == 0, done.stderr[-3000:]
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    written = [path for path in results.glob("ab-*.json") if path.name != "ab-latest.json"]
    assert len(written) == 1
    body = json.loads(written[0].read_text(encoding="utf-8"))
    assert body["base"] == {"revision": "HEAD", "commit": head}
    assert body["head"]["commit"] == head
    assert body["parameters"]["order"] == ["base", "head"]
    for build in ("base", "head"):
        (run,) = body["runs"][build]
        assert run["run"]["exit_code"] == 0
        assert run["run"]["sim"]["completions"] == body["parameters"]["segments"]
        assert run["figures"]["completions_per_s"] > 0
    assert body["summary"]["head_vs_base"]["completions_per_s"] > 0
    assert "head/base completions/s" in done.stdout
    worktrees = subprocess.run(
        ["git", "-C", str(REPO), "worktree", "list"], capture_output=True, text=True, check=True
    ).stdout
    assert f"base-{head[:12]}" not in worktrees  # the base's checkout is removed again
