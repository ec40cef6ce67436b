"""The bench's history: one line per `make bench` in `results/history.jsonl` (issue 51).

Each feature added cost CPU on the path of every completion, and nothing
showed it until the saturation ratio had slid from 0.97 to 0.74 over two
rounds of work. A bench now appends what it measured of that path — CPU per
completion of each process kind in the steady state, the bare client's beside
it, and the two saturation ratios — with the commit it measured, so the slide
is a line in a file, and `make bench-guard` (`guard.py`) asks of the working
tree and the last recorded commit, run alternately, what changed.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.roles import steady_by_role

HISTORY = "history.jsonl"
# The figures of one entry, in the order they are printed: (run, role) CPU per completion.
RUNS = ("defaults", "tuned")  # default flags; --max-inflight C --segment-window 256


def commit(root: Path) -> tuple[str | None, bool]:
    """The tree's HEAD and whether tracked files differ from it (None: not a git tree)."""
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None, False
    return sha, bool(dirty)


def cpu_by_role(run: Mapping[str, Any]) -> dict[str, float | None]:
    """A run's steady CPU ms per completion by role (driver, gateway, segment_workers,
    ledger, ray) and `total`, the whole process tree; empty when it had no steady window."""
    steady = run.get("cpu_steady")
    if not steady or not steady.get("completions"):
        return {}
    table = {role: entry["cpu_ms_per_completion"] for role, entry in steady_by_role(steady).items()}
    spent = sum(steady["cpu_end_s"].values()) - sum(steady["cpu_start_s"].values())
    table["total"] = 1000.0 * spent / steady["completions"]
    return table


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def entry(
    saturation: Mapping[str, Any], root: Path, source: str, load_1min: float | None
) -> dict[str, Any]:
    """The history line of one saturation step (`run.measure_saturation`'s result)."""
    sha, dirty = commit(root)
    loadgen_rate = saturation.get("loadgen_best_completions_per_s")
    loadgen_cpu = saturation.get("loadgen_cpu_ms_per_completion")
    cpu = {
        "defaults": cpu_by_role(saturation.get("defaults", {})),
        "tuned": cpu_by_role(saturation.get("taguru_ray", {})),
    }
    return {
        "commit": sha,
        "uncommitted_changes": dirty,
        "timestamp": datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"),
        "source": source,
        "segments": saturation.get("segments"),
        "load_1min_at_start": load_1min,
        "cpu_ms_per_completion_steady": cpu,
        "loadgen_cpu_ms_per_completion": loadgen_cpu,
        "defaults_cpu_vs_loadgen": _ratio(cpu["defaults"].get("total"), loadgen_cpu),
        "tuned_vs_loadgen": _ratio(
            saturation.get("taguru_ray", {}).get("completions_per_s"), loadgen_rate
        ),
        "defaults_vs_loadgen": _ratio(
            saturation.get("defaults", {}).get("completions_per_s"), loadgen_rate
        ),
        "loadgen_vs_ideal": _ratio(loadgen_rate, saturation.get("ideal_completions_per_s")),
    }


def load_1min() -> float | None:
    """The 1-minute load average (None where the platform has none): a saturation ratio
    taken above about 2 on this 2-core host says more about the neighbours than the code."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def append(results_dir: Path, line: Mapping[str, Any]) -> Path:
    """Add one entry to the history in `results_dir`."""
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / HISTORY
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True) + "\n")
    return path


def read(results_dir: Path) -> list[dict[str, Any]]:
    """Every entry, oldest first; a line that does not parse is skipped, not fatal."""
    path = results_dir / HISTORY
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            entries.append(value)
    return entries


def last_recorded_commit(results_dir: Path) -> str | None:
    """The commit of the newest entry measured on a clean tree (what `bench-guard` compares
    the working tree with)."""
    for line in reversed(read(results_dir)):
        if line.get("commit") and not line.get("uncommitted_changes"):
            return str(line["commit"])
    return None
