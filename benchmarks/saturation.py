"""`make bench`'s saturation step alone (`make bench-saturation`, issue 51).

The bare aiohttp client, taguru-ray opened up (`--max-inflight C --segment-window
256 --workers 2`) and taguru-ray with default flags, on one simulator of C slots
and latency L, in one run, then the bare client again; the same step, corpus and
JSON fields as the full bench's `saturation`, in about two minutes instead of
twenty. Its ratios are wall-clock rates: on this 2-core host they mean something
only when the host is quiet, so the 1-minute load average at the start is
written beside them (and a warning printed above 2). The run is appended to
`results/history.jsonl` like a full bench.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import history
from benchmarks.run import (
    PRESETS,
    PROJECT_ROOT,
    RESULTS_DIR,
    Bench,
    BenchFailed,
    Params,
    SimulatorProcess,
    _become_subreaper,
    machine,
    measure_saturation,
    work_dir,
)

QUIET_LOAD = 2.0  # the 1-minute load average above which a rate is the neighbours'
TARGETS = {"tuned_vs_loadgen": 0.95, "defaults_vs_loadgen": 0.9}


def run(params: Params, results_dir: Path, work: Path) -> Path:
    _become_subreaper()
    load = history.load_1min()
    if load is not None and load > QUIET_LOAD:
        print(
            f"bench-saturation: the 1-minute load average is {load:.1f} (above {QUIET_LOAD:g}): "
            "the rates below are the host's, not the code's",
            file=sys.stderr,
        )
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    sim_args = ("--slots", str(params.slots), "--latency-ms", f"{params.latency_ms:g}")
    with SimulatorProcess(*sim_args) as sim:
        saturation = measure_saturation(Bench(params, work, sim))
    line = history.entry(saturation, PROJECT_ROOT, "bench-saturation", load)
    results: dict[str, Any] = {
        "name": "saturation",
        "timestamp": stamp,
        "machine": machine(),
        "parameters": asdict(params),
        "load_1min_at_start": load,
        "saturation": saturation,
        "summary": line,
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    target = results_dir / f"saturation-{stamp}.json"
    body = json.dumps(results, indent=2, sort_keys=True) + "\n"
    target.write_text(body, encoding="utf-8")
    (results_dir / "saturation-latest.json").write_text(body, encoding="utf-8")
    history.append(results_dir, line)
    return target


def report(path: Path) -> list[str]:
    """The lines printed: each ratio against its target, and the CPU by role."""
    line = json.loads(path.read_text(encoding="utf-8"))["summary"]
    out = []
    for key, target in TARGETS.items():
        value = line.get(key)
        met = "met" if value is not None and value >= target else "not met"
        out.append(f"{key:22s} {_num(value, 3)} (>= {target:g}: {met})")
    out.append(f"{'loadgen_vs_ideal':22s} {_num(line.get('loadgen_vs_ideal'), 3)}")
    out.append(
        f"{'defaults_cpu_vs_loadgen':22s} {_num(line.get('defaults_cpu_vs_loadgen'), 2)} "
        f"(bare client {_num(line.get('loadgen_cpu_ms_per_completion'), 3)} ms a request)"
    )
    for run_name, roles in line["cpu_ms_per_completion_steady"].items():
        shown = ", ".join(f"{role} {_num(ms, 2)}" for role, ms in roles.items())
        out.append(f"cpu ms a completion, {run_name}: {shown}")
    out.append(f"load average at the start {_num(line.get('load_1min_at_start'), 1)}")
    out.append(f"results: {path}")
    return out


def _num(value: float | None, digits: int) -> str:
    return f"{value:.{digits}f}" if value is not None else "n/a"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="the saturation step alone (make bench-saturation)"
    )
    parser.add_argument("--smoke", action="store_true", help="the smallest configuration")
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work-dir", type=Path, help="keep corpora and outputs here")
    parser.add_argument("--segments", type=int)
    args = parser.parse_args(argv)
    params = replace(Params(), **PRESETS["smoke" if args.smoke else "full"])
    if args.segments is not None:
        params = replace(params, segments=args.segments)
    with work_dir(args.work_dir, prefix="taguru-ray-saturation-") as work:
        try:
            path = run(params, args.results_dir, work)
        except BenchFailed as failure:
            print(f"bench-saturation: {failure}", file=sys.stderr)
            return 1
    print("\n".join(report(path)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
