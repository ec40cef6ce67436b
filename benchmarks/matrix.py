"""`benchmark extract` at two endpoints' saturation (issue 18's acceptance).

Two simulators of capacities C/L = 8/0.1 s = 80/s and 32/0.1 s = 320/s serve
one model each; `benchmark extract` runs one cell per endpoint — disjoint, so
at the same time — with `auto` in flight on the same generated corpus. The
JSON reports each cell's completions/s against its endpoint's C/L (target
0.9..1.1), whether the two cells overlapped, and the matrix's wall time
against the sum of the cells'. Reported, never asserted (benchmarks/README.md).

    python -m benchmarks.matrix [--segments N] [--results-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmarks.corpus import write_corpus
from benchmarks.results_file import write_result
from taguru_ray.simulate.harness import SimulatorProcess

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
CONTEXT = "5b0d7f0e-6c1a-4d8e-9a51-2f3c4b5d6e7f"
LATENCY_MS = 100
ENDPOINTS = {"c8": 8, "c32": 32}  # id -> slots; C/L = slots / 0.1 s


def _epoch(stamp: str) -> float:
    return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").timestamp()


def run(segments: int, work: Path, latency_ms: int = LATENCY_MS) -> dict[str, Any]:
    corpus = work / "corpus"
    write_corpus(corpus, segments, 1024)
    out = work / "results"
    with (
        SimulatorProcess("--slots", "8", "--latency-ms", str(latency_ms)) as c8,
        SimulatorProcess("--slots", "32", "--latency-ms", str(latency_ms)) as c32,
    ):
        models = {
            "taguru_benchmark_models": 1,
            "models": [
                {"id": "c8", "model": "taguru-sim", "url": c8.chat_url, "gpu": "sim-c8"},
                {"id": "c32", "model": "taguru-sim", "url": c32.chat_url, "gpu": "sim-c32"},
            ],
        }
        (work / "models.json").write_text(json.dumps(models), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TAGURU_")}
        began = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "taguru_ray", "benchmark", "extract", "--models",
             str(work / "models.json"), "--context", CONTEXT, "--out", str(out),
             "--segment-window", "256", "--workers", "2", str(corpus)],
            env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, cwd=REPO,
        )  # fmt: skip
        wall = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"benchmark extract failed ({done.returncode}): {done.stderr[-2000:]}")
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    cells: dict[str, Any] = {}
    spans = {}
    for cell in manifest["cells"]:
        capacity = ENDPOINTS[cell["model_id"]] / (latency_ms / 1000)
        saturation = cell["saturation"] or {}
        rate = saturation.get("completions_per_second")
        spans[cell["cell_id"]] = (_epoch(cell["started_at"]), _epoch(cell["finished_at"]))
        cells[cell["cell_id"]] = {
            "capacity_per_second": capacity,
            "completions_per_second": rate,
            "of_capacity": round(rate / capacity, 3) if rate else None,
            "inflight_settled": saturation.get("inflight_settled"),
            "latency_seconds": saturation.get("latency_seconds"),
            "steady_seconds": saturation.get("steady_seconds"),
            "cell_seconds": spans[cell["cell_id"]][1] - spans[cell["cell_id"]][0],
        }
    (a0, a1), (b0, b1) = spans.values()
    summed = sum(c["cell_seconds"] for c in cells.values())
    return {
        "segments": segments,
        "latency_ms": latency_ms,
        "cells": cells,
        "cells_overlapped": a0 < b1 and b0 < a1,
        "matrix_wall_seconds": round(wall, 3),
        "sum_of_cell_seconds": summed,
        "wall_vs_sum": round(wall / summed, 3) if summed else None,
        "targets": {
            "each_cell_within_10_percent_of_capacity": all(
                c["of_capacity"] is not None and 0.9 <= c["of_capacity"] <= 1.1
                for c in cells.values()
            ),
            "cells_ran_at_the_same_time": a0 < b1 and b0 < a1,
            "wall_less_than_sum_of_cells": wall < summed,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.matrix", description=__doc__)
    parser.add_argument("--segments", type=int, default=2400, help="one-chunk segments")
    parser.add_argument(
        "--latency-ms", type=int, default=LATENCY_MS, help="L; C/L = 8/L and 32/L per second"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="taguru-ray-matrix-") as work:
        result = run(args.segments, Path(work), args.latency_ms)
    result["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    # The capacities make the kept file; other runs keep their stamp only.
    text = write_result(args.results_dir, "matrix", result, latest=args.latency_ms == LATENCY_MS)
    print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
